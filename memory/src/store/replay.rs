//! Applying log entries to the in-memory store: the log's replay at open, and each change just appended.

use std::fs::File;
use std::path::Path;

use crate::error::{io_err, MemoryError, Result};
use crate::record::Tier;
use crate::tokenize::Terms;
use crate::wal::{RecordChange, Recovery, Wal, WalEntry, WalOp};

use super::{dedup_key, wal_path, Store, ROW_FORGOTTEN, ROW_SUPERSEDED};

/// Opens a read-only store's log before its HDF5 file is read. A writer's checkpoint folds the log into the
/// file and then replaces the log with an empty one; read in the other order, a checkpoint between the two
/// reads would hide every change it folded. Read in this order, the old log still holds them (the open file
/// outlives the rename) or the file does. `None` when the store has no log.
pub(super) fn open_log_early(store: &Path) -> Result<Option<File>> {
    let wal_file = wal_path(store);
    match File::open(&wal_file) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(&wal_file)(e)),
    }
}

impl Store {
    /// Apply the log's entries past the snapshot's checkpoint. A read-only store reads `early_log`, the log
    /// as it was opened before the snapshot was read (see [`open_log_early`]).
    pub(super) fn replay_log(&mut self, early_log: Option<File>) -> Result<()> {
        let wal_file = wal_path(&self.path);
        let mut recovery = if self.opts.read_only {
            match early_log {
                Some(f) => crate::wal::read_open_log(&wal_file, f)?,
                None => Recovery::default(),
            }
        } else {
            let (wal, rec) = Wal::open(&wal_file, self.meta.checkpoint_lsn, self.opts.durability)?;
            self.wal = Some(wal);
            rec
        };
        // The entries are applied by value (a save's text and embedding move into the store) and not kept.
        for entry in std::mem::take(&mut recovery.entries) {
            if entry.lsn <= self.meta.checkpoint_lsn {
                continue;
            }
            self.apply(entry)?;
        }
        self.recovery = recovery;
        Ok(())
    }

    pub(super) fn apply(&mut self, entry: WalEntry) -> Result<()> {
        self.apply_terms(entry, None)
    }

    /// [`Self::apply`], with the terms of a saved record's text when they are known already.
    pub(super) fn apply_terms(&mut self, entry: WalEntry, terms: Option<Terms>) -> Result<()> {
        self.last_lsn = self.last_lsn.max(entry.lsn);
        let op = match entry.op.into_saved() {
            Ok(r) => {
                if self.by_id.contains_key(&r.id) {
                    return Ok(());
                }
                if let Some(e) = &r.embedding {
                    self.ensure_dim(e.len())?;
                }
                self.index_record(*r, terms.map(|t| (t, Vec::new())));
                return Ok(());
            }
            Err(op) => op,
        };
        match op {
            WalOp::Save(_) | WalOp::SaveHalf { .. } => {}
            WalOp::Update { id, change } => self.apply_change(id, change)?,
            WalOp::Delete { id } => self.apply_delete(id),
            WalOp::Access { ids, at } => self.apply_access(&ids, at),
            WalOp::Extension { name, payload } => {
                self.pending.extensions.insert(name.clone());
                self.extensions.insert(name, payload);
            }
            WalOp::EmbeddingModel { model } => self.meta.config.embedding_model = Some(model),
        }
        Ok(())
    }

    pub(super) fn ensure_dim(&mut self, dim: usize) -> Result<()> {
        match self.meta.config.embedding_dim {
            Some(d) if d as usize == dim => Ok(()),
            Some(d) => Err(MemoryError::Embedding(format!(
                "embedding has {dim} dimensions, the store holds {d}-dimensional vectors"
            ))),
            None => {
                let d = u32::try_from(dim)
                    .map_err(|_| MemoryError::Embedding("dimension too large".into()))?;
                if d == 0 {
                    return Err(MemoryError::Embedding("empty embedding".into()));
                }
                self.meta.config.embedding_dim = Some(d);
                self.vectors.set_dim(dim);
                Ok(())
            }
        }
    }

    fn apply_change(&mut self, id: u64, change: RecordChange) -> Result<()> {
        let Some(&row) = self.by_id.get(&id) else {
            return Ok(());
        };
        let row_us = row as usize;
        if matches!(change, RecordChange::Text { .. }) {
            self.pending.text_rows.insert(row);
        } else {
            self.pending.meta_rows.insert(row);
        }
        match change {
            RecordChange::Text { text, embedding } => {
                let old = std::mem::take(&mut self.records[row_us].text);
                if !self.records[row_us].tombstone {
                    let old_toks = self.tokenizer.tokens(&old);
                    self.bm25.remove(row, &old_toks);
                    let new_toks = self.tokenizer.tokens(&text);
                    let ids = self.bm25.add(row, &new_toks);
                    self.pending.row_terms.insert(row, ids);
                }
                self.records[row_us].text = text;
                if let Some(e) = &embedding {
                    self.ensure_dim(e.len())?;
                }
                if self.vectors.dim() > 0 {
                    self.vectors.set(row_us, embedding.as_deref());
                    self.index.changed(row);
                    self.meta.vector_epoch += 1;
                }
            }
            RecordChange::Tags(tags) => self.records[row_us].tags = tags,
            RecordChange::Importance(x) => self.records[row_us].importance = x,
            RecordChange::Tier(t) => {
                if let Some(t) = Tier::from_code(t) {
                    self.records[row_us].tier = t;
                }
            }
            RecordChange::SupersededBy(other) => {
                self.records[row_us].superseded_by = Some(other);
                self.row_flags[row_us] |= ROW_SUPERSEDED;
            }
        }
        Ok(())
    }

    fn apply_delete(&mut self, id: u64) {
        let Some(&row) = self.by_id.get(&id) else {
            return;
        };
        let r = &mut self.records[row as usize];
        if r.tombstone {
            return;
        }
        r.tombstone = true;
        self.row_flags[row as usize] |= ROW_FORGOTTEN;
        self.pending.meta_rows.insert(row);
        let toks = self.tokenizer.tokens(&r.text);
        let key = dedup_key(&r.agent, &r.session, r.source.as_str(), &r.text);
        self.bm25.remove(row, &toks);
        self.dedup.remove(&key);
        self.index.deleted(row);
    }

    fn apply_access(&mut self, ids: &[u64], at: i64) {
        for id in ids {
            if let Some(&row) = self.by_id.get(id) {
                self.pending.access_rows.insert(row);
                let r = &mut self.records[row as usize];
                r.access_count = r.access_count.saturating_add(1);
                r.last_access = r.last_access.max(at);
            }
        }
    }

    /// Apply the access updates searches queued (they are in the log already); whether there were any.
    pub(super) fn drain_pending_access(&mut self) -> bool {
        let pending = std::mem::take(
            &mut *self
                .pending_access
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        let any = !pending.is_empty();
        for (ids, at) in pending {
            self.apply_access(&ids, at);
        }
        any
    }
}
