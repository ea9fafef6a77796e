//! The local all-MiniLM-L6-v2 embedder: tokenizer + packed BERT forward pass + mean pooling.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::bert::{BertConfig, BertModel};
use crate::model_dir::resolve_model_dir;
use crate::{EmbedError, Embedder};

/// Model id stored next to vectors made by [`LocalMiniLm`].
pub const MINILM_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Longest token sequence fed to the model (sentence-transformers' `max_seq_length`), special tokens included.
pub const MAX_SEQ_LEN: usize = 256;
/// Upper bound on the tokens one worker evaluates at once (bounds memory for huge batches).
const MAX_GROUP_TOKENS: usize = 4096;

/// all-MiniLM-L6-v2 run locally on the CPU: 384-dimensional, L2-normalised sentence embeddings
/// that match sentence-transformers.
pub struct LocalMiniLm {
    tokenizer: Tokenizer,
    model: BertModel,
    pool: rayon::ThreadPool,
    threads: usize,
    dir: PathBuf,
}

impl LocalMiniLm {
    /// Loads the model from [`resolve_model_dir`]`(explicit_dir)` and sets up `threads` workers
    /// (`None`: one per available core).
    pub fn load(explicit_dir: Option<&Path>, threads: Option<usize>) -> Result<Self, EmbedError> {
        let dir = resolve_model_dir(explicit_dir)?;
        let threads = match threads {
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
        let model = BertModel::load(cfg, &dir.join("model.safetensors"))?;
        let tokenizer = load_tokenizer(&dir.join("tokenizer.json"))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("clawhdf5-embed-{i}"))
            .build()
            .map_err(|e| EmbedError::ThreadPool(e.to_string()))?;
        Ok(LocalMiniLm {
            tokenizer,
            model,
            pool,
            threads,
            dir,
        })
    }

    /// The folder the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.dir
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Token ids of each text after truncation to [`MAX_SEQ_LEN`], `[CLS]` and `[SEP]` included.
    pub fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, EmbedError> {
        let encodings = self.pool.install(|| {
            texts
                .par_iter()
                .map(|t| self.tokenizer.encode(*t, true))
                .collect::<Result<Vec<_>, _>>()
        });
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
        self.model.config().hidden_size
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let ids = self.tokenize(texts)?;
        let lens: Vec<usize> = ids.iter().map(Vec::len).collect();
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| lens[i]);
        let groups = plan_groups(&order, &lens, self.threads);
        let inner = if groups.len() == 1 { self.threads } else { 1 };
        let results = self.pool.install(|| {
            groups
                .par_iter()
                .map(|g| {
                    let seqs: Vec<Vec<u32>> = g.iter().map(|&i| ids[i].clone()).collect();
                    self.model.embed_packed(&seqs, inner)
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
        let big = vec![300; 40];
        let order: Vec<usize> = (0..40).collect();
        for g in plan_groups(&order, &big, 1) {
            assert!(g.iter().map(|&i| big[i]).sum::<usize>() <= MAX_GROUP_TOKENS + 300);
        }
    }
}
