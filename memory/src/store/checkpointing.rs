//! Folding the log into the HDF5 file: when to checkpoint, appending incrementally or rewriting whole.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::checkpoint::{self, Increment};
use crate::dictionary::Dictionaries;
use crate::error::{io_err, MemoryError, Result};
use crate::foreign::{self, Carried};
use crate::format::H5File;
use crate::integrity::record_hash;
use crate::keyword_table::KeywordTable;
use crate::pending::{FileState, Pending};
use crate::schema::{self, StoreMeta, StoreView};
use crate::wal::sync_dir;

use super::lock::share_data_file;
use super::Store;

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
        staged: Option<checkpoint::StagedRows>,
    ) -> Result<()> {
        self.writer()?;
        self.poll_index();
        self.drain_pending_access();
        // Access entries logged by searches count too.
        let logged = self
            .wal
            .as_ref()
            .map_or(0, |w| w.next_lsn().saturating_sub(1));
        let lsn = self.last_lsn.max(logged);
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
        let mut meta = self.meta.clone();
        meta.generation += 1;
        meta.checkpoint_lsn = lsn;
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
            self.rewrite(&meta, manifest.as_ref())?;
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

    /// Write the whole store to a new file and rename it into place.
    fn rewrite(
        &mut self,
        meta: &StoreMeta,
        manifest: Option<&crate::integrity::SignedManifest>,
    ) -> Result<()> {
        let n = self.records.len();
        let keywords = KeywordTable::from_index(&self.bm25, n);
        let hnsw = self.index.persist(meta.generation);
        let view = StoreView {
            meta,
            records: &self.records,
            vectors: &self.vectors,
            extensions: &self.extensions,
            manifest,
            hnsw: hnsw.as_deref(),
            keywords: &keywords,
        };
        let (dicts, carried, data_lock) = write_atomically(&self.path, &view)?;
        self.dicts = dicts;
        self.foreign.add(carried);
        self.data_lock = data_lock;
        self.file = FileState {
            rows: n,
            terms: keywords.terms.len(),
            term_ids: keywords.doc_terms.len() as u64,
            graph_slots: match hnsw {
                Some(_) => self.index.graph().map_or(0, |h| h.slots()),
                None => 0,
            },
            graph_epoch: meta.vector_epoch,
            has_embedding: meta.config.embedding_dim.is_some(),
            signer: manifest.map(|m| m.public_key),
            chunk_rows: schema::chunk_rows(n as u64),
            keywords_stale: false,
            dead_bytes: 0,
        };
        Ok(())
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

/// Write the store beside `path`, fsync it, rename it over `path` and fsync the directory. What other programs
/// added to the file being replaced is carried into the new one ([`foreign::carry`]); when some of it cannot
/// be, the old file is kept beside the store as `<path>.before-<generation>` (the report names it). The new file
/// is renamed into place already holding the shared lock that keeps libhdf5 writers off it (returned).
pub(super) fn write_atomically(
    path: &Path,
    view: &StoreView<'_>,
) -> Result<(Dictionaries, Carried, Option<File>)> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    // A write that fails (a full disk, say) leaves no partial file behind to hold the space it took.
    let mut unfinished = Unfinished(Some(tmp.clone()));
    let (mut w, dicts) = schema::snapshot_writer(&tmp, view)?;
    let mut carried = Carried::default();
    if path.exists() {
        match H5File::open(path) {
            Ok(old) => carried = foreign::carry(&old, &mut w),
            Err(e) => carried.left.push(format!(
                "{}: unreadable, nothing carried: {e}",
                path.display()
            )),
        }
    }
    w.write_file(&tmp).map_err(|source| MemoryError::Format {
        path: tmp.clone(),
        source,
    })?;
    let data_lock = share_data_file(&tmp)?;
    if !carried.left.is_empty() {
        let mut kept = path.as_os_str().to_owned();
        kept.push(format!(".before-{}", view.meta.generation));
        let kept = PathBuf::from(kept);
        if kept.exists() {
            std::fs::remove_file(&kept).map_err(io_err(&kept))?;
        }
        if std::fs::hard_link(path, &kept).is_err() {
            std::fs::copy(path, &kept).map_err(io_err(&kept))?;
        }
        carried.kept = Some(kept);
    }
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    unfinished.0 = None;
    sync_dir(path)?;
    Ok((dicts, carried, data_lock))
}

/// A file that is removed when this is dropped still holding it (best effort).
struct Unfinished(Option<PathBuf>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}
