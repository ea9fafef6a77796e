//! A BERT encoder (the architecture of all-MiniLM-L6-v2) evaluated over *packed* sequences:
//! the tokens of every sequence in a group are stacked into one matrix with no padding, so the
//! dense layers run as one large matrix multiply each and no work is spent on pad tokens.
//! Attention is computed per sequence and head, which makes masking unnecessary and gives the
//! same result as padded evaluation with an attention mask.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::bf16_gemm::{self, matmul_acc_bf16, PackedBf16};
use rayon::prelude::*;

use crate::kernels::{
    add_rows, attention, attention_by_heads, fill_rows, gelu_inplace, layer_norm_rows, matmul_acc,
};
use crate::small_gemm::{matmul_acc_packed, PackedF16};
use crate::EmbedError;

/// The fields of a Hugging Face `config.json` that a BERT forward pass needs.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    /// Token vocabulary size.
    pub vocab_size: usize,
    /// Width of the hidden states.
    pub hidden_size: usize,
    /// Number of encoder layers.
    pub num_hidden_layers: usize,
    /// Number of attention heads per layer.
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Longest sequence the position table covers.
    pub max_position_embeddings: usize,
    /// Number of token types (segments).
    pub type_vocab_size: usize,
    /// Epsilon of every layer norm.
    pub layer_norm_eps: f64,
    /// Activation of the feed-forward layer; only `"gelu"` (the exact, erf-based one) is supported.
    pub hidden_act: String,
}

impl BertConfig {
    /// Reads and checks `config.json`.
    pub fn from_file(path: &Path) -> Result<Self, EmbedError> {
        let bad = |reason: String| EmbedError::BadModelFile {
            path: path.to_path_buf(),
            reason,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| EmbedError::io(format!("reading {}", path.display()), e))?;
        let cfg: BertConfig =
            serde_json::from_str(&text).map_err(|e| bad(format!("not a BERT config: {e}")))?;
        if cfg.hidden_act != "gelu" {
            return Err(bad(format!(
                "hidden_act {:?} is not supported (only \"gelu\")",
                cfg.hidden_act
            )));
        }
        if cfg.hidden_size == 0 || cfg.hidden_size.checked_rem(cfg.num_attention_heads) != Some(0) {
            return Err(bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                cfg.hidden_size, cfg.num_attention_heads
            )));
        }
        if cfg.type_vocab_size == 0 || cfg.vocab_size == 0 || cfg.max_position_embeddings == 0 {
            return Err(bad("empty vocabulary, type or position table".into()));
        }
        Ok(cfg)
    }
}

/// One encoder layer, with linear weights stored transposed (`[in, out]`, row-major) and the
/// query/key/value projections fused into one `[hidden, 3·hidden]` matrix.
struct Layer {
    w_qkv: Vec<f32>,
    b_qkv: Vec<f32>,
    w_attn_out: Vec<f32>,
    b_attn_out: Vec<f32>,
    ln1_gamma: Vec<f32>,
    ln1_beta: Vec<f32>,
    w_inter: Vec<f32>,
    b_inter: Vec<f32>,
    w_out: Vec<f32>,
    b_out: Vec<f32>,
    ln2_gamma: Vec<f32>,
    ln2_beta: Vec<f32>,
    /// The four weight matrices again, packed for calls with few rows (a query).
    small: SmallWeights,
}

/// A layer's weights packed for calls with few rows.
struct SmallWeights {
    qkv: Packed,
    attn_out: Packed,
    inter: Packed,
    out: Packed,
}

/// One weight matrix packed for few rows: as bf16 pairs where the CPU has AVX-512 BF16 (one
/// instruction per two multiply-adds), as f16 elsewhere.
enum Packed {
    F16(PackedF16),
    Bf16(PackedBf16),
}

impl Packed {
    /// Packs `w` (`k × n`, row-major) the way this CPU multiplies fastest.
    fn pack(w: &[f32], k: usize, n: usize) -> Packed {
        if bf16_gemm::available() {
            Packed::Bf16(PackedBf16::pack(w, k, n))
        } else {
            Packed::F16(PackedF16::pack(w, k, n))
        }
    }

    fn k(&self) -> usize {
        match self {
            Packed::F16(p) => p.k(),
            Packed::Bf16(p) => p.k(),
        }
    }

    fn n(&self) -> usize {
        match self {
            Packed::F16(p) => p.n(),
            Packed::Bf16(p) => p.n(),
        }
    }

    /// `out[rows × n] += a[rows × k] · w`.
    fn matmul_acc(&self, a: &[f32], out: &mut [f32], rows: usize, parallel: usize) {
        match self {
            Packed::F16(p) => matmul_acc_packed(a, p, out, rows, parallel),
            Packed::Bf16(p) => matmul_acc_bf16(a, p, out, rows, parallel),
        }
    }
}

/// Calls with at most this many token rows in all (one or a few short texts) use the f16-packed weights;
/// larger ones the f32 GEMM, which amortises its packing over many rows.
pub(crate) const SMALL_ROWS: usize = 64;

/// `out += a · w` through whichever path suits `rows`. Many rows on several threads are split between them
/// by rows, each thread multiplying its share against the whole of `w`: every thread then runs whole
/// multiplies of its own, with no hand-over inside one.
fn linear(a: &[f32], w: &[f32], packed: &Packed, out: &mut [f32], rows: usize, parallel: usize) {
    let (k, n) = (packed.k(), packed.n());
    if rows <= SMALL_ROWS {
        packed.matmul_acc(a, out, rows, parallel);
    } else if parallel > 1 {
        let per = rows.div_ceil(parallel);
        a[..rows * k]
            .par_chunks(per * k)
            .zip(out[..rows * n].par_chunks_mut(per * n))
            .for_each(|(a, out)| matmul_acc(a, w, out, a.len() / k, k, n, 1));
    } else {
        matmul_acc(a, w, out, rows, k, n, 1);
    }
}

/// Rows of `x` (each `width` wide) in shares of one per thread, for the element-wise steps of a pass whose
/// matrix multiplies are split by rows.
fn row_shares(x: &mut [f32], width: usize, parallel: usize) -> rayon::slice::ChunksMut<'_, f32> {
    let rows = x.len() / width.max(1);
    x.par_chunks_mut(rows.div_ceil(parallel.max(1)).max(1) * width.max(1))
}

/// BERT weights in memory plus the forward pass.
pub struct BertModel {
    cfg: BertConfig,
    word_emb: Vec<f32>,
    pos_emb: Vec<f32>,
    type0_emb: Vec<f32>,
    emb_ln_gamma: Vec<f32>,
    emb_ln_beta: Vec<f32>,
    layers: Vec<Layer>,
}

struct Loader<'a> {
    path: &'a Path,
    st: SafeTensors<'a>,
    prefix: String,
}

impl Loader<'_> {
    fn err(&self, reason: String) -> EmbedError {
        EmbedError::BadModelFile {
            path: self.path.to_path_buf(),
            reason,
        }
    }

    /// Reads tensor `name` as f32, checking its shape.
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let full = format!("{}{}", self.prefix, name);
        let view = self
            .st
            .tensor(&full)
            .map_err(|e| self.err(format!("tensor {full}: {e}")))?;
        if view.dtype() != Dtype::F32 {
            return Err(self.err(format!(
                "tensor {full} has dtype {:?}, expected F32",
                view.dtype()
            )));
        }
        if view.shape() != shape {
            return Err(self.err(format!(
                "tensor {full} has shape {:?}, expected {:?}",
                view.shape(),
                shape
            )));
        }
        let data = view.data();
        if data.len() != shape.iter().product::<usize>() * 4 {
            return Err(self.err(format!("tensor {full} has {} bytes", data.len())));
        }
        Ok(data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// Reads a PyTorch `Linear` weight (`[out, in]`) and returns it transposed to `[in, out]`.
    fn linear_t(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Vec<f32>, EmbedError> {
        let w = self.tensor(name, &[out_dim, in_dim])?;
        let mut t = vec![0.0f32; w.len()];
        for o in 0..out_dim {
            for i in 0..in_dim {
                t[i * out_dim + o] = w[o * in_dim + i];
            }
        }
        Ok(t)
    }
}

impl BertModel {
    /// Loads the weights from a `model.safetensors` written by transformers (with or without
    /// the `bert.` name prefix) and checks every shape against `cfg`.
    pub fn load(cfg: BertConfig, weights: &Path) -> Result<Self, EmbedError> {
        let bytes = std::fs::read(weights)
            .map_err(|e| EmbedError::io(format!("reading {}", weights.display()), e))?;
        let st = SafeTensors::deserialize(&bytes).map_err(|e| EmbedError::BadModelFile {
            path: weights.to_path_buf(),
            reason: format!("not a safetensors file: {e}"),
        })?;
        let prefix = if st.tensor("embeddings.word_embeddings.weight").is_ok() {
            String::new()
        } else {
            "bert.".to_string()
        };
        let ld = Loader {
            path: weights,
            st,
            prefix,
        };
        let h = cfg.hidden_size;
        let word_emb = ld.tensor("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let pos_emb = ld.tensor(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let type_emb = ld.tensor(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let emb_ln_gamma = ld.tensor("embeddings.LayerNorm.weight", &[h])?;
        let emb_ln_beta = ld.tensor("embeddings.LayerNorm.bias", &[h])?;
        let inter = cfg.intermediate_size;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}.");
            let q = ld.linear_t(&format!("{p}attention.self.query.weight"), h, h)?;
            let k = ld.linear_t(&format!("{p}attention.self.key.weight"), h, h)?;
            let v = ld.linear_t(&format!("{p}attention.self.value.weight"), h, h)?;
            let mut w_qkv = vec![0.0f32; h * 3 * h];
            for i in 0..h {
                let row = &mut w_qkv[i * 3 * h..(i + 1) * 3 * h];
                row[..h].copy_from_slice(&q[i * h..(i + 1) * h]);
                row[h..2 * h].copy_from_slice(&k[i * h..(i + 1) * h]);
                row[2 * h..].copy_from_slice(&v[i * h..(i + 1) * h]);
            }
            let mut b_qkv = ld.tensor(&format!("{p}attention.self.query.bias"), &[h])?;
            b_qkv.extend(ld.tensor(&format!("{p}attention.self.key.bias"), &[h])?);
            b_qkv.extend(ld.tensor(&format!("{p}attention.self.value.bias"), &[h])?);
            let w_attn_out = ld.linear_t(&format!("{p}attention.output.dense.weight"), h, h)?;
            let w_inter = ld.linear_t(&format!("{p}intermediate.dense.weight"), inter, h)?;
            let w_out = ld.linear_t(&format!("{p}output.dense.weight"), h, inter)?;
            let small = SmallWeights {
                qkv: Packed::pack(&w_qkv, h, 3 * h),
                attn_out: Packed::pack(&w_attn_out, h, h),
                inter: Packed::pack(&w_inter, h, inter),
                out: Packed::pack(&w_out, inter, h),
            };
            layers.push(Layer {
                w_qkv,
                b_qkv,
                w_attn_out,
                b_attn_out: ld.tensor(&format!("{p}attention.output.dense.bias"), &[h])?,
                ln1_gamma: ld.tensor(&format!("{p}attention.output.LayerNorm.weight"), &[h])?,
                ln1_beta: ld.tensor(&format!("{p}attention.output.LayerNorm.bias"), &[h])?,
                w_inter,
                b_inter: ld.tensor(&format!("{p}intermediate.dense.bias"), &[inter])?,
                w_out,
                b_out: ld.tensor(&format!("{p}output.dense.bias"), &[h])?,
                ln2_gamma: ld.tensor(&format!("{p}output.LayerNorm.weight"), &[h])?,
                ln2_beta: ld.tensor(&format!("{p}output.LayerNorm.bias"), &[h])?,
                small,
            });
        }
        Ok(BertModel {
            type0_emb: type_emb[..h].to_vec(),
            cfg,
            word_emb,
            pos_emb,
            emb_ln_gamma,
            emb_ln_beta,
            layers,
        })
    }

    /// Runs the encoder over `seqs` (token ids, each with its special tokens) and returns, per
    /// sequence, the mean of its final hidden states over all of its tokens, L2-normalised
    /// (sentence-transformers' mean pooling + `Normalize`). An empty sequence gives a zero vector.
    ///
    /// `parallel` > 1 splits the work over that many threads of the current rayon pool.
    pub fn embed_packed(
        &self,
        seqs: &[Vec<u32>],
        parallel: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let h = self.cfg.hidden_size;
        let eps = self.cfg.layer_norm_eps as f32;
        for s in seqs {
            if s.len() > self.cfg.max_position_embeddings {
                return Err(EmbedError::InvalidInput(format!(
                    "sequence of {} tokens exceeds the model's {} positions",
                    s.len(),
                    self.cfg.max_position_embeddings
                )));
            }
            if let Some(bad) = s.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
                return Err(EmbedError::InvalidInput(format!(
                    "token id {bad} outside the vocabulary of {}",
                    self.cfg.vocab_size
                )));
            }
        }
        let total: usize = seqs.iter().map(Vec::len).sum();
        let mut hidden = vec![0.0f32; total * h];
        // Embeddings: word + position + token type 0, then layer norm.
        let mut row = 0;
        for s in seqs {
            for (pos, &tok) in s.iter().enumerate() {
                let dst = &mut hidden[row * h..(row + 1) * h];
                let w = &self.word_emb[tok as usize * h..(tok as usize + 1) * h];
                let p = &self.pos_emb[pos * h..(pos + 1) * h];
                for i in 0..h {
                    dst[i] = w[i] + p[i] + self.type0_emb[i];
                }
                row += 1;
            }
        }
        layer_norm_rows(&mut hidden, &self.emb_ln_gamma, &self.emb_ln_beta, eps);

        let inter = self.cfg.intermediate_size;
        let mut qkv = vec![0.0f32; total * 3 * h];
        let mut ctx = vec![0.0f32; total * h];
        let mut ff = vec![0.0f32; total * inter];
        let mut scores = Vec::new();
        let seq_lens: Vec<usize> = seqs.iter().map(Vec::len).collect();
        let heads = self.cfg.num_attention_heads;
        // Many rows on several threads: every step split between them (matrix multiplies and element-wise
        // steps by rows, attention by heads); otherwise only the small path's multiplies are.
        let split = parallel > 1 && total > SMALL_ROWS;
        let ln = |x: &mut [f32], g: &[f32], b: &[f32]| {
            if split {
                row_shares(x, h, parallel).for_each(|rows| layer_norm_rows(rows, g, b, eps));
            } else {
                layer_norm_rows(x, g, b, eps);
            }
        };
        for layer in &self.layers {
            fill_rows(&mut qkv, &layer.b_qkv);
            let sw = &layer.small;
            linear(&hidden, &layer.w_qkv, &sw.qkv, &mut qkv, total, parallel);
            if split {
                attention_by_heads(&qkv, &mut ctx, &seq_lens, h, heads);
            } else {
                attention(&qkv, &mut ctx, &seq_lens, h, heads, &mut scores);
            }
            // hidden = LN(hidden + ctx·Wo + bo)
            add_rows(&mut hidden, &layer.b_attn_out);
            linear(
                &ctx,
                &layer.w_attn_out,
                &sw.attn_out,
                &mut hidden,
                total,
                parallel,
            );
            ln(&mut hidden, &layer.ln1_gamma, &layer.ln1_beta);
            // hidden = LN(hidden + gelu(hidden·Wi + bi)·Wo2 + bo2)
            fill_rows(&mut ff, &layer.b_inter);
            linear(&hidden, &layer.w_inter, &sw.inter, &mut ff, total, parallel);
            if split {
                row_shares(&mut ff, inter, parallel).for_each(gelu_inplace);
            } else {
                gelu_inplace(&mut ff);
            }
            add_rows(&mut hidden, &layer.b_out);
            linear(&ff, &layer.w_out, &sw.out, &mut hidden, total, parallel);
            ln(&mut hidden, &layer.ln2_gamma, &layer.ln2_beta);
        }
        Ok(pool_and_normalise(seqs, &hidden, h))
    }
}

/// Mean over each sequence's rows, then division by the L2 norm (clamped at 1e-12 like
/// `torch.nn.functional.normalize`).
fn pool_and_normalise(seqs: &[Vec<u32>], hidden: &[f32], h: usize) -> Vec<Vec<f32>> {
    let mut out = Vec::with_capacity(seqs.len());
    let mut start = 0;
    for s in seqs {
        let n = s.len();
        let mut v = vec![0.0f32; h];
        for r in start..start + n {
            for (a, b) in v.iter_mut().zip(&hidden[r * h..(r + 1) * h]) {
                *a += b;
            }
        }
        let denom = (n as f32).max(1e-9);
        for a in v.iter_mut() {
            *a /= denom;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        for a in v.iter_mut() {
            *a /= norm;
        }
        out.push(v);
        start += n;
    }
    out
}
