//! The embedding model a store's vectors come from: recording it, and refusing any other.

use clawhdf5_embed::Embedder;

use crate::error::{MemoryError, Result};
use crate::wal::WalOp;

use super::Store;

impl Store {
    /// Record the embedding model in the store (and its log) the first time it embeds.
    pub(super) fn note_model(&mut self, embedder: &dyn Embedder) -> Result<()> {
        self.note_model_id(embedder.model_id())
    }

    pub(super) fn note_model_id(&mut self, model: &str) -> Result<()> {
        if self.meta.config.embedding_model.is_none() {
            let op = WalOp::EmbeddingModel {
                model: model.to_string(),
            };
            self.append_healing(|w| w.append(&op))?;
            self.meta.config.embedding_model = Some(model.to_string());
        }
        Ok(())
    }

    /// Refuse an embedder whose model differs from the one the store's vectors came from.
    pub(super) fn check_model(&self, embedder: &dyn Embedder) -> Result<()> {
        self.check_model_id(embedder.model_id())
    }

    pub(super) fn check_model_id(&self, model: &str) -> Result<()> {
        match &self.meta.config.embedding_model {
            Some(m) if m != model => Err(MemoryError::Embedding(format!(
                "this store's vectors come from {m}; a query embedded by {model} cannot be compared with them"
            ))),
            _ => Ok(()),
        }
    }
}
