//! The local all-MiniLM-L6-v2 embedder: tokenizer + BERT forward pass + mean pooling, with a
//! choice of forward pass ([`LocalBackend`]).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::bert::{BertConfig, BertModel};
use crate::candle_bert::{cuda_device, CandleBert};
use crate::model_dir::resolve_model_dir;
use crate::{EmbedError, Embedder};

/// Model id stored next to vectors made by [`LocalMiniLm`].
pub const MINILM_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Longest token sequence fed to the model (sentence-transformers' `max_seq_length`), special tokens included.
pub const MAX_SEQ_LEN: usize = 256;
/// Environment variable that picks the [`LocalBackend`] when the caller does not
/// (`native`, `candle` or `candle-cuda`).
pub const BACKEND_ENV: &str = "CLAWHDF5_EMBED_BACKEND";
/// Upper bound on the tokens one worker evaluates at once (bounds memory for huge batches).
const MAX_GROUP_TOKENS: usize = 4096;

/// Which forward pass [`LocalMiniLm`] runs. All give the same vectors (same tokenizer, truncation,
/// mean pooling and normalisation) and the same model id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalBackend {
    /// Our own packed forward pass over the `gemm` crate, on the CPU (the default: fastest on CPU).
    #[default]
    Native,
    /// The forward pass over candle tensors, on the CPU.
    Candle,
    /// The candle forward pass on CUDA device 0; needs the `cuda` cargo feature and a GPU.
    CandleCuda,
}

impl LocalBackend {
    /// The name used by [`BACKEND_ENV`] and command-line flags.
    pub fn name(self) -> &'static str {
        match self {
            LocalBackend::Native => "native",
            LocalBackend::Candle => "candle",
            LocalBackend::CandleCuda => "candle-cuda",
        }
    }

    /// The backend named by [`BACKEND_ENV`], [`LocalBackend::Native`] when it is unset or empty;
    /// an unknown name is an error.
    pub fn from_env() -> Result<Self, EmbedError> {
        match std::env::var(BACKEND_ENV) {
            Ok(v) if !v.trim().is_empty() => parse_backend(&v)
                .map_err(|e| EmbedError::InvalidInput(format!("{BACKEND_ENV}: {e}"))),
            _ => Ok(LocalBackend::Native),
        }
    }
}

fn parse_backend(s: &str) -> Result<LocalBackend, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "native" => Ok(LocalBackend::Native),
        "candle" => Ok(LocalBackend::Candle),
        "candle-cuda" | "cuda" => Ok(LocalBackend::CandleCuda),
        other => Err(format!(
            "unknown embedding backend {other:?} (expected native, candle or candle-cuda)"
        )),
    }
}

impl std::fmt::Display for LocalBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LocalBackend {
    type Err = EmbedError;

    fn from_str(s: &str) -> Result<Self, EmbedError> {
        parse_backend(s).map_err(EmbedError::InvalidInput)
    }
}

/// How to load [`LocalMiniLm`].
#[derive(Debug, Clone, Default)]
pub struct LocalConfig {
    /// Model folder; `None`: `CLAWHDF5_MODEL_DIR`, then the per-user cache.
    pub model_dir: Option<PathBuf>,
    /// Worker threads; `None`: one per available core. The candle backends use them for
    /// tokenising only: candle sizes its own thread pool once per process from
    /// `CANDLE_NUM_THREADS` (else `RAYON_NUM_THREADS`, else every core).
    pub threads: Option<usize>,
    /// Forward pass to run.
    pub backend: LocalBackend,
}

/// The loaded forward pass.
enum Engine {
    Native(BertModel),
    Candle(CandleBert),
}

/// all-MiniLM-L6-v2 run locally: 384-dimensional, L2-normalised sentence embeddings that match
/// sentence-transformers.
pub struct LocalMiniLm {
    tokenizer: Tokenizer,
    engine: Engine,
    cfg: BertConfig,
    backend: LocalBackend,
    pool: rayon::ThreadPool,
    threads: usize,
    dir: PathBuf,
}

impl LocalMiniLm {
    /// Loads the model from [`resolve_model_dir`]`(explicit_dir)` and sets up `threads` workers
    /// (`None`: one per available core), with the backend named by [`BACKEND_ENV`] (default native).
    pub fn load(explicit_dir: Option<&Path>, threads: Option<usize>) -> Result<Self, EmbedError> {
        Self::load_with(&LocalConfig {
            model_dir: explicit_dir.map(Path::to_path_buf),
            threads,
            backend: LocalBackend::from_env()?,
        })
    }

    /// Loads the model as `config` says.
    pub fn load_with(config: &LocalConfig) -> Result<Self, EmbedError> {
        let dir = resolve_model_dir(config.model_dir.as_deref())?;
        let threads = match config.threads {
            Some(0) => {
                return Err(EmbedError::InvalidInput(
                    "thread count must be at least 1".into(),
                ))
            }
            Some(n) => n,
            None => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        };
        let cfg_path = dir.join("config.json");
        let cfg = BertConfig::from_file(&cfg_path)?;
        let expected = (30522, 384, 6, 12, 1536);
        let got = (
            cfg.vocab_size,
            cfg.hidden_size,
            cfg.num_hidden_layers,
            cfg.num_attention_heads,
            cfg.intermediate_size,
        );
        if got != expected {
            return Err(EmbedError::BadModelFile {
                path: cfg_path,
                reason: format!(
                    "not all-MiniLM-L6-v2: (vocab, hidden, layers, heads, intermediate) = {got:?}, expected {expected:?}"
                ),
            });
        }
        if cfg.max_position_embeddings < MAX_SEQ_LEN {
            return Err(EmbedError::BadModelFile {
                path: cfg_path,
                reason: format!(
                    "only {} positions, need {MAX_SEQ_LEN}",
                    cfg.max_position_embeddings
                ),
            });
        }
        let weights = dir.join("model.safetensors");
        let engine = match config.backend {
            LocalBackend::Native => Engine::Native(BertModel::load(cfg.clone(), &weights)?),
            LocalBackend::Candle => Engine::Candle(CandleBert::load(
                cfg.clone(),
                &weights,
                candle_core::Device::Cpu,
            )?),
            LocalBackend::CandleCuda => {
                Engine::Candle(CandleBert::load(cfg.clone(), &weights, cuda_device()?)?)
            }
        };
        let tokenizer = load_tokenizer(&dir.join("tokenizer.json"))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("clawhdf5-embed-{i}"))
            .build()
            .map_err(|e| EmbedError::ThreadPool(e.to_string()))?;
        Ok(LocalMiniLm {
            tokenizer,
            engine,
            cfg,
            backend: config.backend,
            pool,
            threads,
            dir,
        })
    }

    /// The folder the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.dir
    }

    /// The forward pass in use.
    pub fn backend(&self) -> LocalBackend {
        self.backend
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Token ids of each text after truncation to [`MAX_SEQ_LEN`], `[CLS]` and `[SEP]` included.
    pub fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, EmbedError> {
        // Only the start of a long text reaches the model: it is all the tokenizer is given.
        let texts: Vec<&str> = texts
            .iter()
            .map(|t| crate::prefix::visible_prefix(t, MAX_SEQ_LEN))
            .collect();
        let encodings = if texts.len() == 1 {
            // One text (a search query): encoding it on the calling thread spares two thread hand-offs, which
            // cost more than the encoding itself.
            texts
                .iter()
                .map(|t| self.tokenizer.encode(*t, true))
                .collect::<Result<Vec<_>, _>>()
        } else {
            self.pool.install(|| {
                texts
                    .par_iter()
                    .map(|t| self.tokenizer.encode(*t, true))
                    .collect::<Result<Vec<_>, _>>()
            })
        };
        let encodings = encodings.map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        Ok(encodings
            .into_iter()
            .map(|e| e.get_ids().to_vec())
            .collect())
    }

    /// Token count of each text as the model sees it (after truncation, special tokens included).
    pub fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>, EmbedError> {
        Ok(self.tokenize(texts)?.iter().map(Vec::len).collect())
    }
}

fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    let bad = |reason: String| EmbedError::BadModelFile {
        path: path.to_path_buf(),
        reason,
    };
    let mut tok = Tokenizer::from_file(path).map_err(|e| bad(e.to_string()))?;
    tok.with_padding(None);
    tok.with_truncation(Some(TruncationParams {
        max_length: MAX_SEQ_LEN,
        strategy: TruncationStrategy::LongestFirst,
        stride: 0,
        direction: TruncationDirection::Right,
    }))
    .map_err(|e| bad(e.to_string()))?;
    Ok(tok)
}

impl LocalMiniLm {
    /// The candle path: consecutive runs of the length-sorted sequences, each evaluated as one
    /// padded batch (see [`plan_padded_batches`]), one after the other. candle's CPU kernels spread
    /// each operation over candle's own process-wide threads (`CANDLE_NUM_THREADS`, else
    /// `RAYON_NUM_THREADS`, else every core), which [`LocalConfig::threads`] does not change.
    fn embed_candle(
        &self,
        model: &CandleBert,
        ids: &[Vec<u32>],
        order: &[usize],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = vec![Vec::new(); ids.len()];
        self.pool.install(|| {
            for batch in plan_padded_batches(order, ids) {
                let seqs: Vec<Vec<u32>> = batch.iter().map(|&i| ids[i].clone()).collect();
                for (&i, v) in batch.iter().zip(model.embed_padded(&seqs)?) {
                    out[i] = v;
                }
            }
            Ok::<_, EmbedError>(())
        })?;
        Ok(out)
    }
}

/// Splits sequence indices sorted by length (ascending) into consecutive batches whose padded size
/// (count × longest) stays within [`MAX_GROUP_TOKENS`] and whose longest sequence is at most about
/// 1.25 × its shortest, so little work goes to padding (a batch always takes at least one sequence).
fn plan_padded_batches(order: &[usize], ids: &[Vec<u32>]) -> Vec<Vec<usize>> {
    let mut batches = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for &i in order {
        let longest = ids[i]
            .len()
            .max(current.last().map_or(0, |&j| ids[j].len()));
        let shortest = current.first().map_or(longest, |&j| ids[j].len());
        let too_big = (current.len() + 1) * longest > MAX_GROUP_TOKENS;
        // Ascending lengths: keep padding to about a quarter of the batch.
        let too_ragged = longest > shortest + shortest / 4 + 4;
        if !current.is_empty() && (too_big || too_ragged) {
            batches.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// Splits sequence indices (already sorted by length) into consecutive groups of about
/// `total / workers` tokens each, never more than [`MAX_GROUP_TOKENS`] (unless one sequence is).
fn plan_groups(order: &[usize], lens: &[usize], workers: usize) -> Vec<Vec<usize>> {
    let total: usize = order.iter().map(|&i| lens[i]).sum();
    let target = total.div_ceil(workers.max(1)).clamp(1, MAX_GROUP_TOKENS);
    let mut groups = Vec::new();
    let mut current = Vec::new();
    let mut tokens = 0;
    for &i in order {
        current.push(i);
        tokens += lens[i];
        if tokens >= target {
            groups.push(std::mem::take(&mut current));
            tokens = 0;
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

impl Embedder for LocalMiniLm {
    fn model_id(&self) -> &str {
        MINILM_MODEL_ID
    }

    fn dim(&self) -> usize {
        self.cfg.hidden_size
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let ids = self.tokenize(texts)?;
        let lens: Vec<usize> = ids.iter().map(Vec::len).collect();
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| lens[i]);
        let model = match &self.engine {
            Engine::Native(m) => m,
            Engine::Candle(m) => return self.embed_candle(m, &ids, &order),
        };
        // A few short texts (a query and its expansion) go through as one group on all threads,
        // each thread taking part of every weight matrix: one pass over the weights instead of one
        // per text.
        let total: usize = lens.iter().sum();
        let groups = if total <= crate::bert::SMALL_ROWS {
            vec![order.clone()]
        } else {
            plan_groups(&order, &lens, self.threads)
        };
        let inner = if groups.len() == 1 { self.threads } else { 1 };
        let results = self.pool.install(|| {
            groups
                .par_iter()
                .map(|g| {
                    let seqs: Vec<Vec<u32>> = g.iter().map(|&i| ids[i].clone()).collect();
                    model.embed_packed(&seqs, inner)
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        let mut out = vec![Vec::new(); texts.len()];
        for (group, vecs) in groups.iter().zip(results) {
            for (&i, v) in group.iter().zip(vecs) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for b in [
            LocalBackend::Native,
            LocalBackend::Candle,
            LocalBackend::CandleCuda,
        ] {
            assert_eq!(b.name().parse::<LocalBackend>().unwrap(), b);
            assert_eq!(b.to_string(), b.name());
        }
        assert_eq!(
            " Candle ".parse::<LocalBackend>().unwrap(),
            LocalBackend::Candle
        );
        let e = "tensorflow"
            .parse::<LocalBackend>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("tensorflow") && e.contains("native"), "{e}");
        assert_eq!(LocalBackend::default(), LocalBackend::Native);
    }

    #[test]
    fn one_text_is_tokenized_as_it_is_in_a_batch() {
        if let Err(e) = resolve_model_dir(None) {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and the embedding model is missing: {e}"
            );
            eprintln!("SKIPPED: {e}");
            return;
        }
        let m = LocalMiniLm::load(None, Some(2)).unwrap();
        let texts = [
            "When did Caroline go to the LGBTQ support group?",
            "Zürich 2023年5月",
            "",
        ];
        let batch = m.tokenize(&texts).unwrap();
        for (t, ids) in texts.iter().zip(&batch) {
            assert_eq!(&m.tokenize(&[t]).unwrap()[0], ids, "{t:?}");
        }
        // Long texts are cut before the tokenizer sees them; the ids are those of the whole text, truncated.
        let mixed =
            "Zürich's café, 2023年5月: naïve ... résumé -- \u{301}\u{301} \t日本語テキスト x ";
        for long in [
            mixed.repeat(300),
            "word ".repeat(100_000),
            format!("{}{}", "東京".repeat(200), " tail".repeat(400)),
            format!("{} {}", "... --- !!! ".repeat(200), "end ".repeat(300)),
        ] {
            let whole = m.tokenizer.encode(long.as_str(), true).unwrap();
            assert_eq!(whole.get_ids().len(), MAX_SEQ_LEN);
            assert_eq!(m.tokenize(&[long.as_str()]).unwrap()[0], whole.get_ids());
            assert_eq!(
                m.tokenize(&[long.as_str(), "x"]).unwrap()[0],
                whole.get_ids()
            );
        }
        let one = m.embed_one(texts[0]).unwrap();
        let in_batch = m.embed_batch(&texts).unwrap();
        assert_eq!(one.len(), 384);
        let cos: f32 = one.iter().zip(&in_batch[0]).map(|(a, b)| a * b).sum();
        assert!(cos > 0.99999, "cosine {cos}");
    }

    #[test]
    fn groups_cover_every_index_once_and_balance_tokens() {
        let lens = vec![5, 3, 9, 2, 7, 7, 1, 4];
        let mut order: Vec<usize> = (0..lens.len()).collect();
        order.sort_by_key(|&i| lens[i]);
        for workers in 1..6 {
            let groups = plan_groups(&order, &lens, workers);
            let mut seen: Vec<usize> = groups.concat();
            seen.sort();
            assert_eq!(seen, (0..lens.len()).collect::<Vec<_>>());
            assert!(groups.len() <= workers + 1, "{workers}: {groups:?}");
        }
        let ids: Vec<Vec<u32>> = [3usize, 300, 5, 256, 1]
            .iter()
            .map(|&n| vec![0; n])
            .collect();
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let batches = plan_padded_batches(&order, &ids);
        assert_eq!(batches.concat(), order);
        for b in &batches {
            let longest = b.iter().map(|&i| ids[i].len()).max().unwrap();
            let shortest = b.iter().map(|&i| ids[i].len()).min().unwrap();
            assert!(b.len() == 1 || b.len() * longest <= MAX_GROUP_TOKENS);
            assert!(longest <= shortest + shortest / 4 + 4);
        }
        let big = vec![300; 40];
        let order: Vec<usize> = (0..40).collect();
        for g in plan_groups(&order, &big, 1) {
            assert!(g.iter().map(|&i| big[i]).sum::<usize>() <= MAX_GROUP_TOKENS + 300);
        }
    }
}
