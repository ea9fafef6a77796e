//! Changing stored records: forgetting them and updating their metadata or text.

use crate::error::{MemoryError, Result};
use crate::vectors::normalize;
use crate::wal::{DurableTicket, RecordChange, WalEntry, WalOp};

use super::Store;

impl Store {
    /// Forget (tombstone) a record. Returns false when no live record has this id.
    pub fn forget(&mut self, id: u64) -> Result<bool> {
        match self.by_id.get(&id) {
            Some(&row) if !self.records[row as usize].tombstone => {}
            _ => return Ok(false),
        }
        self.poll_index();
        self.log_and_apply(WalOp::Delete { id })?.wait()?;
        self.maybe_checkpoint()?;
        Ok(true)
    }

    /// Apply many metadata changes (tags, importance, tier, supersession) with one log write and one wait for
    /// durability. Changes to forgotten or unknown records are skipped; returns how many were applied. Text
    /// changes go through [`Self::update`] (they need re-embedding).
    pub fn update_many(&mut self, changes: Vec<(u64, RecordChange)>) -> Result<usize> {
        self.writer()?;
        if changes
            .iter()
            .any(|(_, c)| matches!(c, RecordChange::Text { .. }))
        {
            return Err(MemoryError::InvalidInput(
                "update_many takes metadata changes only; change a text with update".into(),
            ));
        }
        for (_, c) in &changes {
            crate::validate::change(c)?;
        }
        let ops: Vec<WalOp> = changes
            .into_iter()
            .filter(|(id, _)| {
                self.by_id
                    .get(id)
                    .is_some_and(|&row| !self.records[row as usize].tombstone)
            })
            .map(|(id, change)| WalOp::Update { id, change })
            .collect();
        if ops.is_empty() {
            return Ok(0);
        }
        let n = ops.len();
        self.poll_index();
        self.drain_pending_access();
        let (first, ticket) = self.append_healing(|w| w.append_many(&ops))?;
        for (i, op) in ops.into_iter().enumerate() {
            self.apply(WalEntry {
                lsn: first + i as u64,
                op,
            })?;
        }
        ticket.wait()?;
        self.maybe_checkpoint()?;
        Ok(n)
    }

    /// Change a record's metadata (not its text) without waiting for durability or checkpointing: returns
    /// the ticket to wait on.
    pub fn update_deferred(&mut self, id: u64, change: RecordChange) -> Result<DurableTicket> {
        if matches!(change, RecordChange::Text { .. }) {
            return Err(MemoryError::InvalidInput(
                "update_deferred takes metadata changes only; change a text with update".into(),
            ));
        }
        crate::validate::change(&change)?;
        match self.by_id.get(&id) {
            Some(&row) if !self.records[row as usize].tombstone => {}
            _ => return Err(MemoryError::NoSuchRecord(id)),
        }
        let ticket = self.log_and_apply(WalOp::Update { id, change })?;
        self.maintain_index();
        Ok(ticket)
    }

    /// Change a record.
    pub fn update(&mut self, id: u64, change: RecordChange) -> Result<()> {
        match self.by_id.get(&id) {
            Some(&row) if !self.records[row as usize].tombstone => {}
            _ => return Err(MemoryError::NoSuchRecord(id)),
        }
        crate::validate::change(&change)?;
        let change = match change {
            RecordChange::Text {
                text,
                embedding: None,
            } if self.opts.embedder.is_some() => {
                let embedder = self.opts.embedder.clone();
                let mut v = match embedder {
                    Some(e) => {
                        self.check_model(e.as_ref())?;
                        e.embed_one(&text)
                            .map_err(|e| MemoryError::Embedding(e.to_string()))?
                    }
                    None => Vec::new(),
                };
                normalize(&mut v);
                RecordChange::Text {
                    text,
                    embedding: Some(v),
                }
            }
            other => other,
        };
        self.log_and_apply(WalOp::Update { id, change })?.wait()?;
        self.maintain_index();
        self.maybe_checkpoint()
    }
}
