//! Appending a change to the write-ahead log and applying it in memory.

use std::time::{Duration, Instant};

use crate::config::VectorPrecision;
use crate::error::{MemoryError, Result};
use crate::tokenize::Terms;
use crate::wal::{DurableTicket, Wal, WalEntry, WalOp};

use super::Store;

/// Least time between two checkpoints tried to make a failed log usable again, so that changes refused while
/// the disk stays full do not each try to rewrite the store.
const LOG_HEAL_INTERVAL: Duration = Duration::from_secs(1);

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
        let ticket = self.append_healing(|w| w.append(&op))?;
        self.apply_terms(
            WalEntry {
                lsn: ticket.lsn(),
                op,
            },
            terms,
        )?;
        Ok(ticket)
    }

    /// Run `append` against the log. When the log refuses it because an earlier write of its entries failed
    /// (a full disk), first fold everything applied in memory into the HDF5 file, by a checkpoint that starts
    /// a fresh log, then append once more. While the checkpoint keeps failing it is tried at most once per
    /// [`LOG_HEAL_INTERVAL`], and the change is refused with the log's error.
    pub(super) fn append_healing<T>(&mut self, append: impl Fn(&Wal) -> Result<T>) -> Result<T> {
        let refused = match append(self.writer()?) {
            Ok(done) => return Ok(done),
            Err(e) => e,
        };
        let failed = self.wal.as_ref().is_some_and(|w| w.failure().is_some());
        let waiting = self
            .log_heal_tried
            .is_some_and(|t| t.elapsed() < LOG_HEAL_INTERVAL);
        if !failed || waiting {
            return Err(refused);
        }
        self.log_heal_tried = Some(Instant::now());
        if let Err(e) = self.checkpoint() {
            return Err(match refused {
                MemoryError::Wal { path, reason } => MemoryError::Wal {
                    path,
                    reason: format!(
                        "{reason} (the checkpoint that would recover from it failed too: {e})"
                    ),
                },
                other => other,
            });
        }
        append(self.writer()?)
    }
}
