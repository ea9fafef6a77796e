//! The same BERT encoder as [`crate::bert`], written over candle tensors (the `candle-core` and
//! `candle-nn` crates) so that it can also run on a CUDA device (cargo feature `cuda`).
//!
//! Sequences are evaluated as a padded batch `[batch, len]` with an additive attention mask, so
//! pad keys get no attention weight; pooling then averages only real tokens, as
//! sentence-transformers does.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor, D};

use crate::bert::BertConfig;
use crate::EmbedError;

/// Wraps a candle error with what we were doing.
fn ce(context: &str) -> impl Fn(candle_core::Error) -> EmbedError + '_ {
    move |e| EmbedError::Candle(format!("{context}: {e}"))
}

/// One encoder layer: linear weights pre-transposed to `[in, out]` (contiguous), Q/K/V fused.
struct Layer {
    w_qkv: Tensor,
    b_qkv: Tensor,
    w_attn_out: Tensor,
    b_attn_out: Tensor,
    ln1: (Tensor, Tensor),
    w_inter: Tensor,
    b_inter: Tensor,
    w_out: Tensor,
    b_out: Tensor,
    ln2: (Tensor, Tensor),
}

/// BERT weights on a candle device plus the batched forward pass.
pub(crate) struct CandleBert {
    cfg: BertConfig,
    device: Device,
    word_emb: Tensor,
    pos_emb: Tensor,
    type0_emb: Tensor,
    emb_ln: (Tensor, Tensor),
    layers: Vec<Layer>,
}

struct Weights<'a> {
    path: &'a Path,
    map: HashMap<String, Tensor>,
    prefix: &'static str,
}

impl Weights<'_> {
    fn err(&self, reason: String) -> EmbedError {
        EmbedError::BadModelFile {
            path: self.path.to_path_buf(),
            reason,
        }
    }

    /// Tensor `name` (f32, of exactly `shape`).
    fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .map
            .get(&full)
            .ok_or_else(|| self.err(format!("tensor {full} is missing")))?;
        if t.dtype() != DType::F32 {
            return Err(self.err(format!(
                "tensor {full} has dtype {:?}, expected F32",
                t.dtype()
            )));
        }
        if t.dims() != shape {
            return Err(self.err(format!(
                "tensor {full} has shape {:?}, expected {shape:?}",
                t.dims()
            )));
        }
        Ok(t.clone())
    }

    /// A PyTorch `Linear` weight `[out, in]`, returned transposed and contiguous: `[in, out]`.
    fn linear_t(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Tensor, EmbedError> {
        self.get(name, &[out_dim, in_dim])?
            .t()
            .and_then(|t| t.contiguous())
            .map_err(ce("transposing a weight"))
    }
}

impl CandleBert {
    /// Loads `model.safetensors` (with or without the `bert.` name prefix) onto `device`,
    /// checking every shape against `cfg`.
    pub(crate) fn load(
        cfg: BertConfig,
        weights: &Path,
        device: Device,
    ) -> Result<Self, EmbedError> {
        let bytes = std::fs::read(weights)
            .map_err(|e| EmbedError::io(format!("reading {}", weights.display()), e))?;
        let map = candle_core::safetensors::load_buffer(&bytes, &device).map_err(|e| {
            EmbedError::BadModelFile {
                path: weights.to_path_buf(),
                reason: format!("not a safetensors file candle can read: {e}"),
            }
        })?;
        let prefix = if map.contains_key("embeddings.word_embeddings.weight") {
            ""
        } else {
            "bert."
        };
        let w = Weights {
            path: weights,
            map,
            prefix,
        };
        let h = cfg.hidden_size;
        let inter = cfg.intermediate_size;
        let type_emb = w.get(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}.");
            let qkv: Vec<Tensor> = ["query", "key", "value"]
                .iter()
                .map(|n| w.get(&format!("{p}attention.self.{n}.weight"), &[h, h]))
                .collect::<Result<_, _>>()?;
            let b_qkv: Vec<Tensor> = ["query", "key", "value"]
                .iter()
                .map(|n| w.get(&format!("{p}attention.self.{n}.bias"), &[h]))
                .collect::<Result<_, _>>()?;
            layers.push(Layer {
                w_qkv: Tensor::cat(&qkv, 0)
                    .and_then(|t| t.t())
                    .and_then(|t| t.contiguous())
                    .map_err(ce("fusing Q/K/V weights"))?,
                b_qkv: Tensor::cat(&b_qkv, 0).map_err(ce("fusing Q/K/V biases"))?,
                w_attn_out: w.linear_t(&format!("{p}attention.output.dense.weight"), h, h)?,
                b_attn_out: w.get(&format!("{p}attention.output.dense.bias"), &[h])?,
                ln1: (
                    w.get(&format!("{p}attention.output.LayerNorm.weight"), &[h])?,
                    w.get(&format!("{p}attention.output.LayerNorm.bias"), &[h])?,
                ),
                w_inter: w.linear_t(&format!("{p}intermediate.dense.weight"), inter, h)?,
                b_inter: w.get(&format!("{p}intermediate.dense.bias"), &[inter])?,
                w_out: w.linear_t(&format!("{p}output.dense.weight"), h, inter)?,
                b_out: w.get(&format!("{p}output.dense.bias"), &[h])?,
                ln2: (
                    w.get(&format!("{p}output.LayerNorm.weight"), &[h])?,
                    w.get(&format!("{p}output.LayerNorm.bias"), &[h])?,
                ),
            });
        }
        Ok(CandleBert {
            word_emb: w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?,
            pos_emb: w.get(
                "embeddings.position_embeddings.weight",
                &[cfg.max_position_embeddings, h],
            )?,
            type0_emb: type_emb.narrow(0, 0, 1).map_err(ce("token type 0"))?,
            emb_ln: (
                w.get("embeddings.LayerNorm.weight", &[h])?,
                w.get("embeddings.LayerNorm.bias", &[h])?,
            ),
            layers,
            cfg,
            device,
        })
    }

    /// Runs the encoder over `seqs` (token ids with their special tokens) as one padded batch and
    /// returns each sequence's mean-pooled (over real tokens only), L2-normalised final hidden state.
    pub(crate) fn embed_padded(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let b = seqs.len();
        let len = seqs.iter().map(Vec::len).max().unwrap_or(0);
        if b == 0 || len == 0 {
            return Ok(vec![vec![0.0; self.cfg.hidden_size]; b]);
        }
        if len > self.cfg.max_position_embeddings {
            return Err(EmbedError::InvalidInput(format!(
                "sequence of {len} tokens exceeds the model's {} positions",
                self.cfg.max_position_embeddings
            )));
        }
        let mut ids = vec![0u32; b * len];
        let mut mask = vec![0.0f32; b * len];
        for (i, s) in seqs.iter().enumerate() {
            if let Some(bad) = s.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
                return Err(EmbedError::InvalidInput(format!(
                    "token id {bad} outside the vocabulary of {}",
                    self.cfg.vocab_size
                )));
            }
            ids[i * len..i * len + s.len()].copy_from_slice(s);
            mask[i * len..i * len + s.len()].fill(1.0);
        }
        let pooled = self
            .forward(&ids, &mask, b, len)
            .map_err(ce("forward pass"))?;
        pooled.to_vec2::<f32>().map_err(ce("reading the vectors"))
    }

    fn forward(
        &self,
        ids: &[u32],
        mask: &[f32],
        b: usize,
        len: usize,
    ) -> candle_core::Result<Tensor> {
        let h = self.cfg.hidden_size;
        let heads = self.cfg.num_attention_heads;
        let d = h / heads;
        let eps = self.cfg.layer_norm_eps as f32;
        let dev = &self.device;
        let ids = Tensor::from_slice(ids, b * len, dev)?;
        let mask = Tensor::from_slice(mask, (b, len), dev)?;
        // 0 for real keys, a huge negative number for pad keys: [b, 1, 1, len].
        let key_bias = mask
            .affine(f32::MAX as f64, f32::MIN as f64)?
            .reshape((b, 1, 1, len))?;

        // Embeddings: word + position + token type 0, then layer norm. Rows: [b·len, h].
        let pos = self.pos_emb.narrow(0, 0, len)?.repeat((b, 1))?;
        let mut x = self
            .word_emb
            .index_select(&ids, 0)?
            .add(&pos)?
            .broadcast_add(&self.type0_emb)?;
        x = candle_nn::ops::layer_norm(&x, &self.emb_ln.0, &self.emb_ln.1, eps)?;

        let scale = 1.0 / (d as f64).sqrt();
        for l in &self.layers {
            let qkv = x.matmul(&l.w_qkv)?.broadcast_add(&l.b_qkv)?;
            // [b·len, h] -> [b, heads, len, d]
            let split = |i: usize| -> candle_core::Result<Tensor> {
                qkv.narrow(1, i * h, h)?
                    .reshape((b, len, heads, d))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = (split(0)? * scale)?;
            let k = split(1)?;
            let v = split(2)?;
            let scores = q.matmul(&k.t()?.contiguous()?)?.broadcast_add(&key_bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let ctx = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((b * len, h))?;
            let attn = ctx
                .matmul(&l.w_attn_out)?
                .broadcast_add(&l.b_attn_out)?
                .add(&x)?;
            x = candle_nn::ops::layer_norm(&attn, &l.ln1.0, &l.ln1.1, eps)?;
            let ff = x
                .matmul(&l.w_inter)?
                .broadcast_add(&l.b_inter)?
                .gelu_erf()?;
            let out = ff.matmul(&l.w_out)?.broadcast_add(&l.b_out)?.add(&x)?;
            x = candle_nn::ops::layer_norm(&out, &l.ln2.0, &l.ln2.1, eps)?;
        }

        // Mean over real tokens, then L2 normalisation (norm clamped at 1e-12 like torch).
        let x = x.reshape((b, len, h))?;
        let m = mask.unsqueeze(2)?;
        let summed = x.broadcast_mul(&m)?.sum(1)?;
        let counts = mask.sum_keepdim(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(D::Minus1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        mean.broadcast_div(&norm)
    }
}

/// Opens CUDA device 0 (cargo feature `cuda`), with an error that says what is missing.
#[cfg(feature = "cuda")]
pub(crate) fn cuda_device() -> Result<Device, EmbedError> {
    Device::new_cuda(0).map_err(|e| {
        EmbedError::Device(format!(
            "cannot open CUDA device 0 (no NVIDIA GPU, driver or CUDA runtime?): {e}"
        ))
    })
}

/// Without the `cuda` feature there is no CUDA device to open.
#[cfg(not(feature = "cuda"))]
pub(crate) fn cuda_device() -> Result<Device, EmbedError> {
    Err(EmbedError::Device(
        "the candle-cuda backend needs clawhdf5-embed built with the `cuda` cargo feature".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny random BERT (2 layers, hidden 8, 2 heads) written as safetensors.
    fn tiny_model(dir: &Path) -> (BertConfig, std::path::PathBuf) {
        let cfg: BertConfig = serde_json::from_value(serde_json::json!({
            "vocab_size": 20, "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
            "intermediate_size": 16, "max_position_embeddings": 12, "type_vocab_size": 2,
            "layer_norm_eps": 1e-12, "hidden_act": "gelu"
        }))
        .unwrap();
        let mut tensors: Vec<(String, Vec<usize>)> = vec![
            ("embeddings.word_embeddings.weight".into(), vec![20, 8]),
            ("embeddings.position_embeddings.weight".into(), vec![12, 8]),
            ("embeddings.token_type_embeddings.weight".into(), vec![2, 8]),
            ("embeddings.LayerNorm.weight".into(), vec![8]),
            ("embeddings.LayerNorm.bias".into(), vec![8]),
        ];
        for l in 0..2 {
            let p = format!("encoder.layer.{l}.");
            for (n, s) in [
                ("attention.self.query.weight", vec![8, 8]),
                ("attention.self.query.bias", vec![8]),
                ("attention.self.key.weight", vec![8, 8]),
                ("attention.self.key.bias", vec![8]),
                ("attention.self.value.weight", vec![8, 8]),
                ("attention.self.value.bias", vec![8]),
                ("attention.output.dense.weight", vec![8, 8]),
                ("attention.output.dense.bias", vec![8]),
                ("attention.output.LayerNorm.weight", vec![8]),
                ("attention.output.LayerNorm.bias", vec![8]),
                ("intermediate.dense.weight", vec![16, 8]),
                ("intermediate.dense.bias", vec![16]),
                ("output.dense.weight", vec![8, 16]),
                ("output.dense.bias", vec![8]),
                ("output.LayerNorm.weight", vec![8]),
                ("output.LayerNorm.bias", vec![8]),
            ] {
                tensors.push((format!("{p}{n}"), s));
            }
        }
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let data: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
            .into_iter()
            .map(|(n, s)| {
                let bytes = (0..s.iter().product::<usize>())
                    .flat_map(|_| next().to_le_bytes())
                    .collect();
                (n, s, bytes)
            })
            .collect();
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = data
            .iter()
            .map(|(n, s, b)| {
                (
                    n.clone(),
                    safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b)
                        .unwrap(),
                )
            })
            .collect();
        let path = dir.join("model.safetensors");
        safetensors::serialize_to_file(views, None, &path).unwrap();
        (cfg, path)
    }

    #[test]
    fn padded_batch_matches_the_packed_native_pass() {
        let tmp = tempfile::tempdir().unwrap();
        let (cfg, path) = tiny_model(tmp.path());
        let native = crate::bert::BertModel::load(cfg.clone(), &path).unwrap();
        let candle = CandleBert::load(cfg, &path, Device::Cpu).unwrap();
        let seqs = vec![vec![1, 5, 2], vec![1, 7, 9, 11, 13, 2], vec![1, 2]];
        let a = native.embed_packed(&seqs, 1).unwrap();
        let b = candle.embed_padded(&seqs).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert!(crate::cosine(x, y) > 0.99999, "{x:?} vs {y:?}");
        }
        // Each sequence alone gives the same vector as inside the padded batch.
        for (s, y) in seqs.iter().zip(&b) {
            let alone = candle.embed_padded(std::slice::from_ref(s)).unwrap();
            assert!(crate::cosine(&alone[0], y) > 0.99999);
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let (cfg, path) = tiny_model(tmp.path());
        let m = CandleBert::load(cfg.clone(), &path, Device::Cpu).unwrap();
        assert!(matches!(
            m.embed_padded(&[vec![1, 99]]),
            Err(EmbedError::InvalidInput(_))
        ));
        assert!(matches!(
            m.embed_padded(&[vec![1; 13]]),
            Err(EmbedError::InvalidInput(_))
        ));
        assert!(m.embed_padded(&[]).unwrap().is_empty());
        let mut wrong = cfg;
        wrong.intermediate_size = 32;
        assert!(matches!(
            CandleBert::load(wrong, &path, Device::Cpu),
            Err(EmbedError::BadModelFile { .. })
        ));
        std::fs::write(&path, b"garbage").unwrap();
        let cfg2 = crate::bert::BertConfig { ..m.cfg.clone() };
        assert!(matches!(
            CandleBert::load(cfg2, &path, Device::Cpu),
            Err(EmbedError::BadModelFile { .. })
        ));
    }

    #[test]
    fn cuda_without_the_feature_or_a_gpu_is_a_clear_error() {
        // Without the feature this is always an error; with it, only on a machine with no GPU.
        if let Err(e) = cuda_device() {
            assert!(e.to_string().contains("CUDA") || e.to_string().contains("cuda"));
        }
    }
}
