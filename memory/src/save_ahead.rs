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
    pub fn prepare(&self, mut m: NewMemory) -> Result<PreparedSave> {
        let text = m.text.trim();
        // A memory the store will refuse is not worth the work (the save reports why).
        let usable = crate::validate::new_memory(&m).is_ok();
        let mut embedded_by = None;
        if usable && m.embedding.is_none() {
            if let Some(e) = &self.embedder {
                let v = e
                    .embed_one(text)
                    .map_err(|err| MemoryError::Embedding(err.to_string()))?;
                embedded_by = Some(e.model_id().to_string());
                m.embedding = Some(v);
            }
        }
        let terms = usable.then(|| self.tokenizer.terms(m.text.trim()));
        Ok(PreparedSave {
            memory: m,
            terms,
            tokenizer: self.tokenizer.config().clone(),
            embedded_by,
        })
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
