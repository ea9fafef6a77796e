//! The store: an HDF5 snapshot plus a write-ahead log, loaded into memory with its keyword and vector indexes.

mod checkpointing;
mod extensions;
mod indexing;
mod lock;
mod logging;
mod model;
mod open;
mod query;
mod replay;
mod rewrite;
mod save;
mod screen;
mod update;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clawhdf5_embed::Embedder;

use crate::bm25::Bm25Index;
use crate::config::StoreConfig;
use crate::dictionary::Dictionaries;
use crate::error::{MemoryError, Result};
use crate::filter::Filter;
use crate::pending::{FileState, Pending};
use crate::record::Record;
use crate::schema::{self, StoreMeta};
use crate::tokenize::Tokenizer;
use crate::vector_index::{IndexStats, VectorIndex};
use crate::vectors::VectorTable;
use crate::wal::{Durability, LogStats, Recovery, Wal};

/// How to open a store.
#[derive(Clone)]
pub struct StoreOptions {
    /// Create the file when it does not exist.
    pub create: bool,
    /// Open without the writer lock; every change is refused.
    pub read_only: bool,
    /// When saves reach the disk.
    pub durability: Durability,
    /// Agent id given to records saved without one.
    pub default_agent: String,
    /// Configuration for a newly created store (ignored when the file exists: its own config wins).
    pub config: StoreConfig,
    /// Checkpoint automatically once the log grows past this many bytes: after a save or update, and at a
    /// writable open (searches log access statistics too but cannot checkpoint, as they borrow the store).
    pub auto_checkpoint_bytes: u64,
    /// Sign every checkpoint with this Ed25519 key (see `integrity`).
    pub signing_key: Option<ed25519_dalek::SigningKey>,
    /// Embeds saved texts and queries; without one the store is keyword-only (plus caller-given vectors).
    pub embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("create", &self.create)
            .field("read_only", &self.read_only)
            .field("durability", &self.durability)
            .field("default_agent", &self.default_agent)
            .field("signed", &self.signing_key.is_some())
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.model_id().to_string()),
            )
            .finish()
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            create: true,
            read_only: false,
            durability: Durability::EverySave,
            default_agent: "main".into(),
            config: StoreConfig::default(),
            auto_checkpoint_bytes: 16 << 20,
            signing_key: None,
            embedder: None,
        }
    }
}

/// Result of a save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaveOutcome {
    /// Id of the saved (or already present) record.
    pub id: u64,
    /// True when an identical memory was already stored and nothing new was written.
    pub deduplicated: bool,
}

/// Numbers describing a store.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StoreStats {
    /// Path of the HDF5 file.
    pub path: PathBuf,
    /// Live (not forgotten) records.
    pub records: usize,
    /// Forgotten records still held as tombstones.
    pub tombstones: usize,
    /// Bytes of the HDF5 file.
    pub file_bytes: u64,
    /// Bytes of the write-ahead log.
    pub wal_bytes: u64,
    /// Schema version of the file.
    pub schema_version: u32,
    /// Checkpoint generation.
    pub generation: u64,
    /// Records with an embedding.
    pub embedded: usize,
    /// Embedding model id, if any.
    pub embedding_model: Option<String>,
    /// Embedding dimension, if any.
    pub embedding_dim: Option<u32>,
    /// Distinct keyword terms.
    pub vocabulary: usize,
    /// Checkpoints since open that appended to the file in place.
    pub incremental_checkpoints: u64,
    /// Checkpoints since open that rewrote the whole file.
    pub full_checkpoints: u64,
    /// The keyword index was restored from the file at open (not rebuilt by tokenising every text).
    pub keywords_from_file: bool,
    /// Rows the vector graph holds (0 while the store searches vectors exactly).
    pub graph_rows: usize,
    /// Rows the graph does not place yet (saved or re-embedded since it was built, or all of them while the
    /// first graph is being built): searched exactly until folded in.
    pub unindexed_rows: usize,
    /// Whether a background job is building or folding the vector graph.
    pub indexing: bool,
    /// What this session's whole-file rewrites carried over from other programs (h5py annotations and the
    /// like), and what they could not carry (kept in a copy of the old file beside the store).
    pub foreign: crate::foreign::Carried,
}

/// Row flag: the record was forgotten (a tombstone).
const ROW_FORGOTTEN: u8 = 1;
/// Row flag: another record superseded this one.
const ROW_SUPERSEDED: u8 = 2;

/// The row flags `r` calls for.
fn row_flags(r: &Record) -> u8 {
    (if r.tombstone { ROW_FORGOTTEN } else { 0 })
        | if r.superseded_by.is_some() {
            ROW_SUPERSEDED
        } else {
            0
        }
}

/// An open memory store.
pub struct Store {
    path: PathBuf,
    opts: StoreOptions,
    meta: StoreMeta,
    records: Vec<Record>,
    /// Per row, [`ROW_FORGOTTEN`] and [`ROW_SUPERSEDED`] as the record says: what every search's filter reads
    /// first, without touching the records themselves.
    row_flags: Vec<u8>,
    by_id: crate::FastMap<u64, u32>,
    dedup: crate::FastMap<u64, u64>,
    vectors: VectorTable,
    tokenizer: Tokenizer,
    bm25: Bm25Index,
    wal: Option<Wal>,
    _lock: Option<File>,
    /// A shared lock on the HDF5 file that keeps libhdf5 writers off it while the store is open (`lock.rs`);
    /// moved to the new file by a whole-file rewrite.
    data_lock: Option<File>,
    /// Access statistics logged by searches, applied at the next change or checkpoint.
    pending_access: Mutex<Vec<(Vec<u64>, i64)>>,
    last_lsn: u64,
    /// What the last open's log recovery reported.
    recovery: Recovery,
    extensions: BTreeMap<String, Vec<u8>>,
    index: VectorIndex,
    /// What the HDF5 file holds.
    file: FileState,
    /// What changed since it was written.
    pending: Pending,
    /// Dictionaries of the dictionary-encoded columns, as far as the file holds them and beyond.
    dicts: Dictionaries,
    /// Per-row record hashes for signing, computed at the first signed checkpoint and kept current after.
    row_hashes: Option<Vec<[u8; 32]>>,
    /// Checkpoints done (incremental, full rewrites) since open.
    checkpoints: (u64, u64),
    /// When a checkpoint was last tried to make a failed log usable again (`logging.rs`).
    log_heal_tried: Option<std::time::Instant>,
    /// What this session's whole-file rewrites carried over from other programs, or left in a kept copy.
    foreign: crate::foreign::Carried,
    /// Whether open restored the keyword index from the file.
    keywords_from_file: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("records", &self.records.len())
            .finish()
    }
}

/// Batches of at least this many memories are written straight into the HDF5 file, not through the log.
pub const BULK_ROWS: usize = 1024;

/// The log that belongs to a store file.
pub fn wal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".wal");
    PathBuf::from(s)
}

pub(crate) fn record_dedup_key(r: &Record) -> u64 {
    dedup_key(&r.agent, &r.session, r.source.as_str(), &r.text)
}

/// A 64-bit hash of what makes two saves the same memory (kept in memory only, never in the file; a hit is
/// confirmed against the stored record). aHash with fixed seeds: several times faster than SipHash over a
/// memory's text, which every save and every record at open hashes.
fn dedup_key(agent: &str, session: &str, source: &str, text: &str) -> u64 {
    static SEEDS: ahash::RandomState = ahash::RandomState::with_seeds(
        0x6a09_e667_f3bc_c908,
        0xbb67_ae85_84ca_a73b,
        0x3c6e_f372_fe94_f82b,
        0xa54f_f53a_5f1d_36f1,
    );
    SEEDS.hash_one((agent, session, source, text))
}

impl Store {
    /// Path of the HDF5 file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Store configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.meta.config
    }

    /// Store metadata (schema version, generation, ...).
    pub fn meta(&self) -> &StoreMeta {
        &self.meta
    }

    /// What log recovery found at open (dropped tail bytes and why).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// Number of live records.
    pub fn len(&self) -> usize {
        self.records.iter().filter(|r| !r.tombstone).count()
    }

    /// True when no live record exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every record in row order, tombstones included.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The embedding table.
    pub fn vectors(&self) -> &VectorTable {
        &self.vectors
    }

    /// The record with this id (tombstones included), embedding attached.
    pub fn get(&self, id: u64) -> Option<Record> {
        let row = *self.by_id.get(&id)? as usize;
        let mut r = self.records[row].clone();
        if self.vectors.has(row) {
            r.embedding = Some(self.vectors.row_f32(row));
        }
        Some(r)
    }

    /// How the write-ahead log's durable writes have gone since the store was opened (all zeros for a
    /// read-only store, which has no log open).
    pub fn log_stats(&self) -> LogStats {
        self.wal.as_ref().map(Wal::stats).unwrap_or_default()
    }

    /// Background work on the vector graph (folds of new rows, builds) taken in since the store was opened.
    pub fn index_stats(&self) -> IndexStats {
        self.index.stats()
    }

    /// Numbers describing the store.
    pub fn stats(&self) -> StoreStats {
        let file_bytes = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        // The log's bytes, not its file's length (a durable log's file holds preallocated zeros too).
        let wal_bytes = match &self.wal {
            Some(w) => w.len_bytes(),
            None => crate::wal::read_log(&wal_path(&self.path)).map_or(0, |r| r.good_len),
        };
        let live = self.len();
        StoreStats {
            path: self.path.clone(),
            records: live,
            tombstones: self.records.len() - live,
            file_bytes,
            wal_bytes,
            schema_version: self.meta.schema_version,
            generation: self.meta.generation,
            embedded: (0..self.vectors.rows())
                .filter(|&i| self.vectors.has(i) && !self.records[i].tombstone)
                .count(),
            embedding_model: self.meta.config.embedding_model.clone(),
            embedding_dim: self.meta.config.embedding_dim,
            vocabulary: self.bm25.vocabulary_size(),
            incremental_checkpoints: self.checkpoints.0,
            full_checkpoints: self.checkpoints.1,
            keywords_from_file: self.keywords_from_file,
            graph_rows: self.index.graph().map_or(0, |h| h.slots()),
            unindexed_rows: self.index.unplaced(&self.vectors),
            indexing: self.index.busy(),
            foreign: self.foreign.clone(),
        }
    }

    /// True when the log holds changes the HDF5 file does not.
    pub fn is_dirty(&self) -> bool {
        self.last_lsn > self.meta.checkpoint_lsn
    }

    /// Checkpoint (when writable) and close; the vector graph is brought up to date in the file, so the next
    /// open does not rebuild any of it. A file with more than 1/32 superseded data is rewritten compactly.
    pub fn close(mut self) -> Result<()> {
        if self.wal.is_some() {
            self.refresh_index()?;
            self.checkpoint_with(true)?;
        }
        Ok(())
    }
}

/// Verify the signature of the store file at `path` (the HDF5 file as last checkpointed, not its log).
/// `Ok(None)` when the file is not signed.
pub fn verify_store(
    path: &Path,
    expected_key: Option<&[u8; 32]>,
) -> Result<Option<crate::integrity::VerifyReport>> {
    if !path.exists() {
        return Err(MemoryError::NotFound(path.to_path_buf()));
    }
    let snap = schema::read_snapshot(path)?;
    Ok(snap
        .manifest
        .as_ref()
        .map(|m| crate::integrity::verify(&snap.records, m, expected_key)))
}

/// Convenience for callers: a filter restricted to one agent.
pub fn agent_filter(agent: &str) -> Filter {
    Filter {
        agent: Some(agent.to_string()),
        ..Filter::default()
    }
}
