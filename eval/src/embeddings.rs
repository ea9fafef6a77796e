//! Embeddings for the vector and hybrid modes: all-MiniLM-L6-v2 behind an on-disk cache that survives runs.

use std::path::{Path, PathBuf};

use clawhdf5_embed::{Embedder, EmbeddingCache, LocalMiniLm};
use indicatif::{ProgressBar, ProgressStyle};

use crate::error::Result;

/// Texts per call to the model (and per cache flush).
const CHUNK: usize = 256;

/// The default cache file: next to the model cache, `~/.cache/clawhdf5/eval-embeddings.bin`.
pub fn default_cache_path() -> Option<PathBuf> {
    let models = clawhdf5_embed::default_cache_dir()?;
    Some(
        models
            .parent()
            .unwrap_or(&models)
            .join("eval-embeddings.bin"),
    )
}

/// An embedder and the cache in front of it.
pub struct EmbeddingService {
    embedder: Box<dyn Embedder>,
    cache: EmbeddingCache,
    progress: bool,
    computed: usize,
}

impl EmbeddingService {
    /// Load the local MiniLM model (from `model_dir`, `CLAWHDF5_MODEL_DIR` or the user cache) and open the
    /// embedding cache at `cache_path`.
    pub fn open_minilm(
        model_dir: Option<&Path>,
        threads: Option<usize>,
        cache_path: &Path,
    ) -> Result<Self> {
        let model = LocalMiniLm::load(model_dir, threads)?;
        Self::new(Box::new(model), cache_path)
    }

    /// Wrap any embedder.
    pub fn new(embedder: Box<dyn Embedder>, cache_path: &Path) -> Result<Self> {
        Ok(EmbeddingService {
            embedder,
            cache: EmbeddingCache::open(cache_path)?,
            progress: false,
            computed: 0,
        })
    }

    /// Show a progress bar on standard error while embedding.
    pub fn with_progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Id of the model behind the vectors.
    pub fn model_id(&self) -> &str {
        self.embedder.model_id()
    }

    /// How many texts were actually run through the model (cache misses) so far.
    pub fn computed(&self) -> usize {
        self.computed
    }

    /// Embed `texts` (cached ones are read back, the rest computed and cached).
    pub fn embed(&mut self, texts: &[String], label: &str) -> Result<Vec<Vec<f32>>> {
        let model = self.embedder.model_id().to_string();
        let missing = texts
            .iter()
            .filter(|t| self.cache.get(&model, t).is_none())
            .count();
        let bar = if self.progress && missing > 0 {
            let b = ProgressBar::new(missing as u64);
            if let Ok(style) =
                ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} texts, eta {eta}")
            {
                b.set_style(style);
            }
            b.set_message(format!("embedding {label}"));
            b
        } else {
            ProgressBar::hidden()
        };
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(CHUNK) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            let before = self.cache.len();
            let vecs = self.cache.embed_with_cache(self.embedder.as_ref(), &refs)?;
            let new = self.cache.len() - before;
            self.computed += new;
            bar.inc(new as u64);
            out.extend(vecs);
        }
        bar.finish_and_clear();
        if missing > 0 {
            self.cache.sync()?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawhdf5_embed::EmbedError;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Letter-count vectors; counts how many texts it was asked for.
    struct Letters(Arc<AtomicUsize>);

    impl Embedder for Letters {
        fn model_id(&self) -> &str {
            "letters-26"
        }
        fn dim(&self) -> usize {
            26
        }
        fn embed_batch(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0.0; 26];
                    for c in t.bytes().filter(u8::is_ascii_lowercase) {
                        v[(c - b'a') as usize] += 1.0;
                    }
                    v
                })
                .collect())
        }
    }

    #[test]
    fn second_run_reads_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.bin");
        let calls = Arc::new(AtomicUsize::new(0));
        let texts: Vec<String> = vec!["abc".into(), "zz".into(), "abc".into()];
        let mut s = EmbeddingService::new(Box::new(Letters(calls.clone())), &path).unwrap();
        let a = s.embed(&texts, "t").unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a[0], a[2]);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        drop(s);
        let mut s = EmbeddingService::new(Box::new(Letters(calls.clone())), &path).unwrap();
        let b = s.embed(&texts, "t").unwrap();
        assert_eq!(a, b);
        assert_eq!(calls.load(Ordering::SeqCst), 2, "nothing recomputed");
        assert_eq!(s.computed(), 0);
    }
}
