//! Folding the log into the HDF5 file: when to checkpoint, appending incrementally or rewriting whole.

use crate::checkpoint::{self, Increment, StagedRows};
use crate::columns::Prebuilt;
use crate::error::Result;
use crate::integrity::record_hash;
use crate::pending::Pending;
use crate::schema::{self, StoreMeta};

use super::rewrite::WrittenAhead;
use super::Store;

/// What a bulk save prepares for its checkpoint while it tokenizes its texts: the new rows staged in an
/// appender when the checkpoint appends; when it rewrites the file whole, the new file written but for its
/// keyword index, or (when that cannot be: a signed store, one with a vector graph) every row's columns.
pub(super) enum Staged {
    /// New rows' columns, for an incremental checkpoint.
    Rows(Box<StagedRows>),
    /// The new file but its keyword index, for a full rewrite.
    File(Box<WrittenAhead>),
    /// Every row's columns, for a full rewrite.
    Columns(Box<Prebuilt>),
}

impl Store {
    /// Checkpoint when the log has outgrown the store's `auto_checkpoint_bytes` (what [`Self::save`] does
    /// after each save; for callers of [`Self::save_deferred`]).
    pub fn checkpoint_if_due(&mut self) -> Result<()> {
        self.maybe_checkpoint()
    }

    /// Whether [`Self::checkpoint_if_due`] would checkpoint now: callers sharing the store behind a lock ask
    /// under a read lock and take the write lock only then.
    pub fn checkpoint_due(&self) -> bool {
        self.wal
            .as_ref()
            .is_some_and(|w| w.len_bytes() > self.opts.auto_checkpoint_bytes)
    }

    pub(super) fn maybe_checkpoint(&mut self) -> Result<()> {
        if self.checkpoint_due() {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Fold the log into the HDF5 file (crash-safe) and start a fresh log. Usually incremental: new rows
    /// are appended and changed rows rewritten in place through copy-on-write; the file is rewritten whole
    /// only when that is cheaper in the long run (see [`Self::needs_full_rewrite`]).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.checkpoint_with(false)
    }

    pub(super) fn checkpoint_with(&mut self, closing: bool) -> Result<()> {
        self.checkpoint_staged(closing, None)
    }

    /// [`Self::checkpoint_with`], the new rows' columns perhaps already appended to an uncommitted appender
    /// ([`checkpoint::stage_rows`]); it is used when the checkpoint appends exactly those rows, and dropped
    /// (leaving the file as it was) otherwise.
    pub(super) fn checkpoint_staged(
        &mut self,
        closing: bool,
        staged: Option<Staged>,
    ) -> Result<()> {
        let (staged, mut ahead, prebuilt) = match staged {
            Some(Staged::Rows(r)) => (Some(*r), None, None),
            Some(Staged::File(f)) => (None, Some(f), None),
            Some(Staged::Columns(c)) => (None, None, Some(*c)),
            None => (None, None, None),
        };
        self.writer()?;
        self.poll_index();
        if self.drain_pending_access() {
            // The file written ahead holds the access statistics from before.
            ahead = None;
        }
        let lsn = self.checkpoint_lsn();
        let key = self
            .opts
            .signing_key
            .as_ref()
            .map(|k| k.verifying_key().to_bytes());
        let must_sign = key.is_some() && self.file.signer != key;
        let graph_due = self.graph_due(closing);
        let compact = closing && self.worth_compacting();
        let work = lsn > self.meta.checkpoint_lsn || must_sign || compact || (closing && graph_due);
        if !work {
            return Ok(());
        }
        let meta = self.next_meta(lsn);
        let mut all_hash_rows = false;
        let manifest = match self.opts.signing_key.clone() {
            Some(k) => {
                all_hash_rows = self.update_row_hashes();
                let hashes = self.row_hashes.as_deref().unwrap_or(&[]);
                let list = self
                    .records
                    .iter()
                    .zip(hashes)
                    .map(|(r, h)| (r.id, *h))
                    .collect();
                Some(crate::integrity::sign_hashes(list, meta.generation, &k))
            }
            None => None,
        };
        let mut done = false;
        if !compact && !self.needs_full_rewrite() {
            let graph = if graph_due {
                self.index.persist(meta.generation)
            } else {
                None
            };
            let slots = self.index.graph().map_or(0, |h| h.slots());
            let inc = Increment {
                meta: &meta,
                records: &self.records,
                vectors: &self.vectors,
                extensions: &self.extensions,
                terms: self.bm25.terms(),
                manifest: manifest.as_ref().map(|m| (m, all_hash_rows)),
                graph: graph.as_deref().map(|g| (g, slots)),
            };
            // The file is untouched unless the append committed, so a failure falls back to a full rewrite.
            if let Ok(state) = checkpoint::append(
                &self.path,
                &inc,
                &self.file,
                &self.pending,
                &mut self.dicts,
                staged,
            ) {
                self.file = state;
                self.checkpoints.0 += 1;
                done = true;
            }
        }
        if !done {
            match ahead.filter(|a| {
                a.fits(&meta, self.records.len())
                    && manifest.is_none()
                    && self.index.graph().is_none()
            }) {
                Some(a) => self.finish_ahead(*a, &meta)?,
                None => self.rewrite(&meta, manifest.as_ref(), prebuilt)?,
            }
            self.checkpoints.1 += 1;
        }
        self.meta = meta;
        self.last_lsn = lsn;
        self.pending = Pending::default();
        if let Some(w) = &self.wal {
            w.reset(lsn)?;
        }
        Ok(())
    }

    /// The LSN a checkpoint now would record: past every save, and every access entry searches logged.
    pub(super) fn checkpoint_lsn(&self) -> u64 {
        let logged = self
            .wal
            .as_ref()
            .map_or(0, |w| w.next_lsn().saturating_sub(1));
        self.last_lsn.max(logged)
    }

    /// The metadata of the next checkpoint, to `lsn`.
    pub(super) fn next_meta(&self, lsn: u64) -> StoreMeta {
        let mut meta = self.meta.clone();
        meta.generation += 1;
        meta.checkpoint_lsn = lsn;
        meta
    }

    /// Bring the per-row signing hashes up to date; true when they were computed from scratch.
    fn update_row_hashes(&mut self) -> bool {
        let fresh = self.row_hashes.is_none();
        let hashes = self.row_hashes.get_or_insert_with(Vec::new);
        if !fresh {
            for &row in self.pending.text_rows.iter().chain(&self.pending.meta_rows) {
                let row = row as usize;
                if row < hashes.len() {
                    hashes[row] = record_hash(&self.records[row]);
                }
            }
        }
        for r in &self.records[hashes.len()..] {
            hashes.push(record_hash(r));
        }
        fresh
    }

    /// Whether the graph should be written at this checkpoint: the file has none or a stale one, it has grown
    /// by a sixteenth (at least 1,024 rows) since, or the store is closing and the file's copy is behind.
    fn graph_due(&self, closing: bool) -> bool {
        let Some(h) = self.index.graph() else {
            return false;
        };
        if !self.index.is_current() || (self.index.busy() && !closing) {
            return false;
        }
        let slots = h.slots();
        let f = &self.file;
        f.graph_slots == 0
            || f.graph_epoch != self.meta.vector_epoch
            || slots >= f.graph_slots + (f.graph_slots / 16).max(1024)
            || (closing && slots != f.graph_slots)
    }

    /// A full rewrite instead of an append when the file cannot take the change incrementally (no keyword
    /// index or embedding columns yet, another signer), when the store has outgrown the file's chunk size
    /// sixteen-fold, or when superseded copies make up more than half of the file.
    pub(super) fn needs_full_rewrite(&self) -> bool {
        let f = &self.file;
        let key = self
            .opts
            .signing_key
            .as_ref()
            .map(|k| k.verifying_key().to_bytes());
        let n = self.records.len() as u64;
        if f.keywords_stale
            || (!f.has_embedding && self.meta.config.embedding_dim.is_some())
            || f.signer != key
            || (f.chunk_rows < schema::CHUNK_ROWS && f.chunk_rows.saturating_mul(16) < n)
        {
            return true;
        }
        let file_len = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        if f.dead_bytes > file_len / 2 {
            return true;
        }
        let elem = self.meta.config.vector_precision.bytes() as u64;
        let dim = u64::from(self.meta.config.embedding_dim.unwrap_or(0));
        let text: u64 = self.records.iter().map(|r| r.text.len() as u64).sum();
        let ext: u64 = self.extensions.values().map(|e| e.len() as u64).sum();
        let graph = f.graph_slots as u64 * (u64::from(self.meta.config.hnsw_m) * 8 + 16);
        let live = n * (dim * elem + 64) + text + ext + f.term_ids * 4 + graph;
        file_len > 2 * live + (256 << 10)
    }

    /// Whether closing should rewrite the file compactly: data superseded by incremental checkpoints
    /// (partial chunks rewritten on append, replaced graphs and rows) exceeds 1/32 of a file of 1 MiB or
    /// more. Each such rewrite follows checkpoints that wrote at least that much, so its cost is amortised
    /// over what changed.
    fn worth_compacting(&self) -> bool {
        let file_len = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        file_len >= 1 << 20 && self.file.dead_bytes > file_len / 32
    }
}
