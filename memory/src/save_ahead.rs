//! A save's text work done ahead of the store's lock: splitting the text into index terms and, when the store
//! embeds texts itself, running the model. A server holding a store behind a lock does this first, so the lock
//! is held only for validation, the log append and the in-memory update, and concurrent saves and searches do
//! not queue behind a tokenizer or a model.

use std::sync::Arc;

use crate::embed::Embedder;
use crate::error::{MemoryError, Result};
use crate::record::NewMemory;
use crate::tokenize::{Terms, Tokenizer, TokenizerConfig};

/// What preparing a save needs from a store, detached from it: its tokenizer settings and its embedder.
/// Cheap to clone; made by [`crate::Store::save_kit`].
#[derive(Clone)]
pub struct SaveKit {
    tokenizer: Arc<Tokenizer>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for SaveKit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaveKit")
            .field("tokenizer", &self.tokenizer.config())
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id()))
            .finish()
    }
}

/// A memory with its text work done, ready for [`crate::Store::save_prepared`].
#[derive(Debug)]
pub struct PreparedSave {
    pub(crate) memory: NewMemory,
    /// Terms of the trimmed text, under `tokenizer`; `None` when the text is empty or too long to be saved.
    pub(crate) terms: Option<Terms>,
    pub(crate) tokenizer: TokenizerConfig,
    /// The model that embedded the text here, if one did.
    pub(crate) embedded_by: Option<String>,
}

impl SaveKit {
    pub(crate) fn new(tokenizer: TokenizerConfig, embedder: Option<Arc<dyn Embedder>>) -> Self {
        SaveKit {
            tokenizer: Arc::new(Tokenizer::new(tokenizer)),
            embedder,
        }
    }

    /// Whether [`Self::prepare`] runs a model (for memories that bring no embedding).
    pub fn embeds(&self) -> bool {
        self.embedder.is_some()
    }

    /// Tokenize `m`'s text and, when the store embeds texts and `m` brings no embedding, embed it. Needs no
    /// access to the store; a model failure is an error here, anything else wrong with `m` is reported by the
    /// save.
    pub fn prepare(&self, m: NewMemory) -> Result<PreparedSave> {
        let mut out = self.prepare_many(vec![m])?;
        out.pop()
            .ok_or_else(|| MemoryError::Embedding("no memory was prepared".into()))
    }

    /// [`Self::prepare`] for several memories, in order, with the texts that need embedding run through the
    /// model in one call: the model keeps every core on whole texts, where one long text at a time shares
    /// each step between the cores, which gets less done.
    pub fn prepare_many(&self, mut ms: Vec<NewMemory>) -> Result<Vec<PreparedSave>> {
        // A memory the store will refuse is not worth the work (the save reports why).
        let usable: Vec<bool> = ms
            .iter()
            .map(|m| crate::validate::new_memory(m).is_ok())
            .collect();
        let mut embedded_by = vec![None; ms.len()];
        if let Some(e) = &self.embedder {
            let need: Vec<usize> = (0..ms.len())
                .filter(|&i| usable[i] && ms[i].embedding.is_none())
                .collect();
            if !need.is_empty() {
                let texts: Vec<&str> = need.iter().map(|&i| ms[i].text.trim()).collect();
                let vs = e
                    .embed_batch(&texts)
                    .map_err(|err| MemoryError::Embedding(err.to_string()))?;
                if vs.len() != need.len() {
                    return Err(MemoryError::Embedding(format!(
                        "the model returned {} vectors for {} texts",
                        vs.len(),
                        need.len()
                    )));
                }
                for (i, v) in need.into_iter().zip(vs) {
                    ms[i].embedding = Some(v);
                    embedded_by[i] = Some(e.model_id().to_string());
                }
            }
        }
        Ok(ms
            .into_iter()
            .zip(usable)
            .zip(embedded_by)
            .map(|((m, usable), embedded_by)| PreparedSave {
                terms: usable.then(|| self.tokenizer.terms(m.text.trim())),
                memory: m,
                tokenizer: self.tokenizer.config().clone(),
                embedded_by,
            })
            .collect())
    }
}

impl PreparedSave {
    /// The memory as it will be saved (with the embedding computed here, if any).
    pub fn memory(&self) -> &NewMemory {
        &self.memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SearchMode, SearchQuery, Store};

    /// A model that counts its calls and embeds a text as (its length, 1).
    struct Counting(std::sync::atomic::AtomicUsize);

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting-v1"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed_batch(
            &self,
            texts: &[&str],
        ) -> std::result::Result<Vec<Vec<f32>>, crate::embed::EmbedError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    #[test]
    fn several_memories_are_embedded_in_one_call_in_order() {
        let model = Arc::new(Counting(std::sync::atomic::AtomicUsize::new(0)));
        let kit = SaveKit::new(TokenizerConfig::default(), Some(model.clone()));
        let mut given = NewMemory::text("brings its own vector");
        given.embedding = Some(vec![0.5, 0.5]);
        let out = kit
            .prepare_many(vec![
                NewMemory::text("a"),
                NewMemory::text("   "),
                given,
                NewMemory::text(" three "),
            ])
            .unwrap();
        assert_eq!(model.0.load(std::sync::atomic::Ordering::Relaxed), 1);
        let vectors: Vec<Option<Vec<f32>>> =
            out.iter().map(|p| p.memory().embedding.clone()).collect();
        assert_eq!(
            vectors,
            [
                Some(vec![1.0, 1.0]),
                None,
                Some(vec![0.5, 0.5]),
                Some(vec![5.0, 1.0])
            ]
        );
        let by: Vec<Option<&str>> = out.iter().map(|p| p.embedded_by.as_deref()).collect();
        assert_eq!(by, [Some("counting-v1"), None, None, Some("counting-v1")]);
        // The empty text is left for the save to refuse, with no terms made for it.
        assert!(out[1].terms.is_none() && out[3].terms.is_some());
        // Nothing to embed: no call.
        kit.prepare_many(vec![NewMemory::default()]).unwrap();
        assert!(kit.prepare_many(Vec::new()).unwrap().is_empty());
        assert_eq!(model.0.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    #[test]
    fn terms_made_under_other_tokenizer_settings_are_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.h5")).unwrap();
        assert!(store.config().tokenizer.stemming);
        let unstemmed = SaveKit::new(
            TokenizerConfig {
                stemming: false,
                stop_words: false,
            },
            None,
        );
        let p = unstemmed.prepare(NewMemory::text("running shoes")).unwrap();
        assert!(p.memory().embedding.is_none());
        store.save_prepared(p).unwrap();
        let p = store
            .save_kit()
            .prepare(NewMemory::text("jumping ropes"))
            .unwrap();
        store.save_prepared(p).unwrap();
        for (q, want) in [("run", "running shoes"), ("jump", "jumping ropes")] {
            let mut query = SearchQuery::new(q, 5);
            query.mode = SearchMode::Keyword;
            let hits = store.search(&query).unwrap();
            assert_eq!(hits.len(), 1, "{q}");
            assert_eq!(hits[0].record.text, want);
        }
    }
}
