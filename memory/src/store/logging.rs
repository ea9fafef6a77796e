//! Appending a change to the write-ahead log and applying it in memory.

use crate::config::VectorPrecision;
use crate::error::{MemoryError, Result};
use crate::tokenize::Terms;
use crate::wal::{DurableTicket, Wal, WalEntry, WalOp};

use super::Store;

impl Store {
    pub(super) fn writer(&self) -> Result<&Wal> {
        self.wal
            .as_ref()
            .ok_or_else(|| MemoryError::ReadOnly(self.path.clone()))
    }

    /// Log `op`, apply it, and return the ticket that makes it durable.
    /// Whether saves log their embeddings as f16: the store keeps f16, so the log's copy loses nothing.
    pub(super) fn half_log(&self) -> bool {
        self.meta.config.vector_precision == VectorPrecision::F16
    }

    pub(super) fn log_and_apply(&mut self, op: WalOp) -> Result<DurableTicket> {
        self.log_and_apply_terms(op, None)
    }

    /// [`Self::log_and_apply`] for a save whose text's terms are known already.
    pub(super) fn log_and_apply_terms(
        &mut self,
        op: WalOp,
        terms: Option<Terms>,
    ) -> Result<DurableTicket> {
        self.drain_pending_access();
        let ticket = self.writer()?.append(&op)?;
        self.apply_terms(
            WalEntry {
                lsn: ticket.lsn(),
                op,
            },
            terms,
        )?;
        Ok(ticket)
    }
}
