//! The store: an HDF5 snapshot plus a write-ahead log, loaded into memory with its keyword and vector indexes.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clawhdf5_embed::Embedder;

use crate::bm25::{Bm25Index, Bm25Params, UNKNOWN_TERM};
use crate::checkpoint::{self, Increment};
use crate::config::{StoreConfig, VectorPrecision};
use crate::dictionary::Dictionaries;
use crate::error::{io_err, MemoryError, Result};
use crate::filter::Filter;
use crate::integrity::record_hash;
use crate::keyword_table::KeywordTable;
use crate::pending::{FileState, Pending};
use crate::record::{now_ms, NewMemory, Record, Source, Tier};
use crate::save_ahead::{PreparedSave, SaveKit};
use crate::schema::{self, Snapshot, StoreMeta, StoreView, SCHEMA_VERSION};
use crate::search::{fuse, Candidates, SearchHit, SearchMode, SearchQuery};
use crate::tokenize::{Terms, Tokenizer};
use crate::vector_index::VectorIndex;
use crate::vectors::{normalize, VectorTable};
use crate::wal::{
    sync_dir, Durability, DurableTicket, RecordChange, Recovery, Wal, WalEntry, WalOp,
};

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
    /// Checkpoint automatically once the log grows past this many bytes.
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
}

/// A validated new memory, or the id of the stored record it duplicates.
enum Prepared {
    New(Box<Record>),
    Duplicate(u64),
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

fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

pub(crate) fn record_dedup_key(r: &Record) -> u64 {
    dedup_key(&r.agent, &r.session, r.source.as_str(), &r.text)
}

/// A batch whose tokens include at least this many the keyword index does not know yet gives its new terms
/// their ids in one pass on every core ([`Bm25Index::add_new_terms`]) instead of one lookup per token while
/// indexing.
const NEW_TERMS_IN_PARALLEL: usize = 4096;

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
    /// Open (or create) the store at `path` with default options.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_with(path, StoreOptions::default())
    }

    /// Open an existing store read-only (no lock, no writes; changes in its log are still visible).
    pub fn open_read_only(path: &Path) -> Result<Store> {
        Store::open_with(
            path,
            StoreOptions {
                create: false,
                read_only: true,
                ..StoreOptions::default()
            },
        )
    }

    /// Open with explicit options.
    pub fn open_with(path: &Path, opts: StoreOptions) -> Result<Store> {
        let exists = path.exists();
        if !exists && (!opts.create || opts.read_only) {
            return Err(MemoryError::NotFound(path.to_path_buf()));
        }
        if exists && path.is_dir() {
            return Err(MemoryError::NotAStore {
                path: path.to_path_buf(),
                reason: "it is a directory".into(),
            });
        }
        let lock = if opts.read_only {
            None
        } else {
            Some(take_lock(path)?)
        };
        if !exists {
            let meta = StoreMeta {
                schema_version: SCHEMA_VERSION,
                created_at: now_ms(),
                generation: 0,
                checkpoint_lsn: 0,
                next_id: 1,
                vector_epoch: 0,
                config: opts.config.clone(),
            };
            let vectors = VectorTable::with_precision(
                opts.config.embedding_dim.unwrap_or(0) as usize,
                opts.config.vector_precision,
            );
            let view = StoreView {
                meta: &meta,
                records: &[],
                vectors: &vectors,
                extensions: &BTreeMap::new(),
                manifest: None,
                hnsw: None,
                keywords: &KeywordTable::default(),
            };
            // A log left by an earlier store of the same name would replay into the new one.
            let wal = wal_path(path);
            if wal.exists() {
                std::fs::remove_file(&wal).map_err(io_err(&wal))?;
            }
            write_atomically(path, &view)?;
        }
        let snap = schema::read_snapshot(path)?;
        let mut store = Store::from_snapshot(path, opts, snap, lock);
        store.replay_log()?;
        if store.wal.is_some() {
            // A missing graph or a long unindexed tail is built in the background; searches scan it meanwhile.
            store.maintain_index();
        }
        store.warm_up();
        if let (Some(e), Some(m)) = (&store.opts.embedder, &store.meta.config.embedding_model) {
            if e.model_id() != m {
                return Err(MemoryError::Embedding(format!(
                    "{} holds embeddings from {m}, but the configured embedder is {}; open it with the same model",
                    store.path.display(),
                    e.model_id()
                )));
            }
        }
        Ok(store)
    }

    fn from_snapshot(path: &Path, opts: StoreOptions, snap: Snapshot, lock: Option<File>) -> Store {
        let tokenizer = Tokenizer::new(snap.meta.config.tokenizer.clone());
        let n = snap.records.len();
        let (index, covered) = snap.vector_index;
        let (bm25, terms, term_ids) = match snap.keyword_index {
            Some((ix, terms, ids)) => (Some(ix), terms, ids),
            None => (None, 0, 0),
        };
        let file = FileState {
            rows: n,
            terms,
            term_ids,
            graph_slots: covered,
            graph_epoch: if covered > 0 {
                snap.meta.vector_epoch
            } else {
                0
            },
            has_embedding: snap.meta.config.embedding_dim.is_some(),
            signer: snap.manifest.as_ref().map(|m| m.public_key),
            chunk_rows: snap.chunk_rows,
            keywords_stale: bm25.is_none() || !snap.keyword_gaps,
            dead_bytes: snap.dead_bytes,
        };
        let mut store = Store {
            path: path.to_path_buf(),
            last_lsn: snap.meta.checkpoint_lsn,
            meta: snap.meta,
            records: Vec::new(),
            row_flags: Vec::new(),
            by_id: crate::FastMap::default(),
            dedup: crate::FastMap::default(),
            vectors: snap.vectors,
            tokenizer,
            bm25: Bm25Index::new(Bm25Params::default()),
            wal: None,
            _lock: lock,
            pending_access: Mutex::new(Vec::new()),
            recovery: Recovery::default(),
            extensions: snap.extensions,
            index,
            file,
            pending: Pending::default(),
            dicts: snap.dictionaries,
            row_hashes: None,
            checkpoints: (0, 0),
            keywords_from_file: false,
            opts,
        };
        store.by_id = snap.row_maps.by_id;
        store.dedup = snap.row_maps.dedup;
        store.meta.next_id = store.meta.next_id.max(snap.row_maps.next_id);
        // Records read from the file carry no embedding (those live in the vector table).
        store.records = snap.records;
        store.row_flags = store.records.iter().map(row_flags).collect();
        // Texts are tokenised only when the persisted keyword index is missing or stale.
        match bm25 {
            Some(ix) => {
                store.bm25 = ix;
                store.keywords_from_file = true;
            }
            None => {
                for row in 0..store.records.len() {
                    if !store.records[row].tombstone {
                        let toks = store.tokenizer.tokens(&store.records[row].text);
                        store.bm25.add(row as u32, &toks);
                    }
                }
            }
        }
        // Rows forgotten after the graph was stored leave it now (rows it has never seen are its tail).
        for row in 0..covered.min(store.records.len()) {
            if store.records[row].tombstone {
                store.index.deleted(row as u32);
            }
        }
        store
    }

    /// One tiny search through each index, so that the first caller's query does not pay one-time set-up
    /// (per-thread scratch space, allocator growth, first touches of the index pages it walks).
    fn warm_up(&self) {
        // A store whose indexes fit in a CPU's last-level cache gets them read once, end to end: the rows a
        // first query walks are then as warm as at steady state (a 10K store's take ~15 MB and under 2 ms).
        // Larger stores would only evict what they read first; their searches below warm what they can.
        const TOUCH_BUDGET: usize = 32 << 20;
        let graph = self.index.graph();
        let index_bytes = self.vectors.memory_bytes()
            + self.bm25.memory_bytes()
            + graph.map_or(0, |h| h.memory_bytes());
        let fits = index_bytes <= TOUCH_BUDGET
            && self
                .records
                .iter()
                .map(|r| std::mem::size_of::<Record>() + r.heap_bytes())
                .sum::<usize>()
                <= TOUCH_BUDGET - index_bytes;
        if fits {
            // The records too: a first query filters, re-ranks and returns its candidates' records, which
            // are spread over the heap (a 10K store's are ~4 MB).
            let records = self
                .records
                .iter()
                .fold(0u64, |acc, r| acc.wrapping_add(r.touch()));
            let sum = self
                .vectors
                .touch()
                .wrapping_add(self.bm25.touch())
                .wrapping_add(graph.map_or(0, |h| h.touch()))
                .wrapping_add(records);
            std::hint::black_box(sum);
        }
        // A search's access log entry: the wall clock's first read (2-10 us on this VM) and an append's
        // encoding, run here without logging anything.
        std::hint::black_box(now_ms());
        if let Some(w) = &self.wal {
            w.warm_up();
        }
        let n = self.records.len();
        // Whole searches (tokenising, both indexes, fusion, building hits) from records spread over the store,
        // each record's first words standing in for a question; nothing is logged. A store that fits the cache
        // gets more of them (~5 ms at 10K): they leave the graph's upper layers and the common terms' postings
        // in the nearer caches, which took the first query at 10K from ~1.4x to ~1.2x the same query at steady
        // state. Larger stores keep a few, so opening them stays quick.
        let searches = if fits { 48 } else { 12 };
        for at in (0..searches).map(|i| i * n / searches) {
            let Some(row) = (at..n).find(|&r| !self.records[r].tombstone) else {
                continue;
            };
            let words: Vec<&str> = self.records[row].text.split_whitespace().take(12).collect();
            let mut q = SearchQuery::new(words.join(" "), 10);
            if self.vectors.has(row) {
                q.embedding = Some(self.vectors.row_f32(row));
            } else {
                // Never run the embedder here: opening must not pay for a model call.
                q.mode = SearchMode::Keyword;
            }
            let _ = self.search_candidates(&q);
        }
    }

    /// Room for `n` more records in the per-row tables, so a large batch grows each of them once.
    fn reserve(&mut self, n: usize) {
        self.records.reserve(n);
        self.row_flags.reserve(n);
        self.by_id.reserve(n);
        self.dedup.reserve(n);
    }

    /// Add a record read from the file to the row tables (not to the keyword index).
    fn push_record(&mut self, mut r: Record, key: Option<u64>) {
        let row = self.records.len() as u32;
        if let Some(key) = key {
            self.dedup.insert(key, r.id);
        }
        self.by_id.insert(r.id, row);
        self.meta.next_id = self.meta.next_id.max(r.id + 1);
        r.embedding = None;
        self.row_flags.push(row_flags(&r));
        self.records.push(r);
    }

    /// Bring the vector graph fully up to date now (waits for a background job).
    fn refresh_index(&mut self) -> Result<()> {
        let records = &self.records;
        let live = |row: u32| records.get(row as usize).is_some_and(|r| !r.tombstone);
        self.index.ensure(&self.vectors, &self.meta.config, &live)
    }

    /// Take in a finished background index job (never waits).
    fn poll_index(&mut self) {
        let records = &self.records;
        let live = |row: u32| records.get(row as usize).is_some_and(|r| !r.tombstone);
        self.index.poll(&self.vectors, &live);
    }

    /// Take in a finished background job, and start one when the graph is missing or enough rows wait for it.
    fn maintain_index(&mut self) {
        self.poll_index();
        self.index
            .start_background(&self.vectors, &self.meta.config);
    }

    /// Build the vector graph now, or fold into it every row saved since it was built (batch saves leave
    /// that for later; until then those rows are searched exactly).
    pub fn build_index(&mut self) -> Result<()> {
        self.refresh_index()
    }

    /// Add a new record (a save, live or replayed from the log) to every in-memory structure; `tokens` are its
    /// text's terms when already known, with the term ids [`Bm25Index::known_ids`] found for them (or none).
    fn index_record(&mut self, r: Record, tokens: Option<(Terms, Vec<u32>)>) {
        let row = self.records.len() as u32;
        self.vectors.push(r.embedding.as_deref());
        if !r.tombstone {
            let (toks, known) =
                tokens.unwrap_or_else(|| (self.tokenizer.terms(&r.text), Vec::new()));
            let ids = self.bm25.add_known(row, toks.iter(), known);
            self.pending.row_terms.insert(row, ids);
        }
        let key = (!r.tombstone).then(|| record_dedup_key(&r));
        self.push_record(r, key);
    }

    fn replay_log(&mut self) -> Result<()> {
        let wal_file = wal_path(&self.path);
        let recovery = if self.opts.read_only {
            if wal_file.exists() {
                crate::wal::read_log(&wal_file)?
            } else {
                Recovery::default()
            }
        } else {
            let (wal, rec) = Wal::open(&wal_file, self.meta.checkpoint_lsn, self.opts.durability)?;
            self.wal = Some(wal);
            rec
        };
        for entry in &recovery.entries {
            if entry.lsn <= self.meta.checkpoint_lsn {
                continue;
            }
            self.apply(entry.clone())?;
        }
        self.recovery = Recovery {
            entries: Vec::new(),
            ..recovery
        };
        Ok(())
    }

    fn apply(&mut self, entry: WalEntry) -> Result<()> {
        self.apply_terms(entry, None)
    }

    /// [`Self::apply`], with the terms of a saved record's text when they are known already.
    fn apply_terms(&mut self, entry: WalEntry, terms: Option<Terms>) -> Result<()> {
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

    fn ensure_dim(&mut self, dim: usize) -> Result<()> {
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

    fn drain_pending_access(&mut self) {
        let pending = std::mem::take(
            &mut *self
                .pending_access
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for (ids, at) in pending {
            self.apply_access(&ids, at);
        }
    }

    fn writer(&self) -> Result<&Wal> {
        self.wal
            .as_ref()
            .ok_or_else(|| MemoryError::ReadOnly(self.path.clone()))
    }

    /// Log `op`, apply it, and return the ticket that makes it durable.
    /// Whether saves log their embeddings as f16: the store keeps f16, so the log's copy loses nothing.
    fn half_log(&self) -> bool {
        self.meta.config.vector_precision == VectorPrecision::F16
    }

    fn log_and_apply(&mut self, op: WalOp) -> Result<DurableTicket> {
        self.log_and_apply_terms(op, None)
    }

    /// [`Self::log_and_apply`] for a save whose text's terms are known already.
    fn log_and_apply_terms(&mut self, op: WalOp, terms: Option<Terms>) -> Result<DurableTicket> {
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

    /// Save a memory and wait until it is durable (per the store's durability mode).
    pub fn save(&mut self, m: NewMemory) -> Result<SaveOutcome> {
        let (outcome, ticket) = self.save_deferred(m)?;
        if let Some(t) = ticket {
            t.wait()?;
        }
        self.maybe_checkpoint()?;
        Ok(outcome)
    }

    /// Save without waiting: returns the ticket to wait on (outside any lock, so concurrent saves share an
    /// fsync). `None` when the memory was a duplicate and nothing was written.
    pub fn save_deferred(
        &mut self,
        mut m: NewMemory,
    ) -> Result<(SaveOutcome, Option<DurableTicket>)> {
        let mut embedding = m.embedding.take();
        let mut embedded_by = None;
        if embedding.is_none() && !m.text.trim().is_empty() {
            if let Some(embedder) = self.opts.embedder.clone() {
                // Refused before the model runs on it (otherwise `prepare` checks it, once).
                crate::validate::new_memory(&m)?;
                if self.dedup.contains_key(&self.dedup_key_of(&m)) {
                    embedding = None;
                } else {
                    self.check_model(embedder.as_ref())?;
                    embedding = Some(
                        embedder
                            .embed_one(m.text.trim())
                            .map_err(|e| MemoryError::Embedding(e.to_string()))?,
                    );
                    embedded_by = Some(embedder.model_id().to_string());
                }
            }
        }
        self.save_new(m, embedding, None, embedded_by.as_deref())
    }

    /// The common end of a single save: validate `m` (with `embedding`) into a record or find its duplicate,
    /// note the model that embedded it, log and apply it (with its text's `terms` when known already).
    fn save_new(
        &mut self,
        m: NewMemory,
        embedding: Option<Vec<f32>>,
        terms: Option<Terms>,
        embedded_by: Option<&str>,
    ) -> Result<(SaveOutcome, Option<DurableTicket>)> {
        let record = match self.prepare(m, embedding, self.meta.next_id)? {
            Prepared::Duplicate(id) => {
                return Ok((
                    SaveOutcome {
                        id,
                        deduplicated: true,
                    },
                    None,
                ))
            }
            Prepared::New(r) => r,
        };
        if let Some(model) = embedded_by {
            self.note_model_id(model)?;
        }
        let id = record.id;
        let ticket = self.log_and_apply_terms(WalOp::save(record, self.half_log()), terms)?;
        // New rows join the graph in the background (searched exactly until then).
        self.maintain_index();
        Ok((
            SaveOutcome {
                id,
                deduplicated: false,
            },
            Some(ticket),
        ))
    }

    /// What preparing a save ahead of this store's lock needs (its tokenizer settings and embedder), detached
    /// from it: see [`SaveKit::prepare`] and [`Self::save_prepared`].
    pub fn save_kit(&self) -> SaveKit {
        SaveKit::new(
            self.meta.config.tokenizer.clone(),
            self.opts.embedder.clone(),
        )
    }

    /// [`Self::save_deferred`] for a memory whose text was tokenized (and embedded, when this store embeds)
    /// ahead by a [`SaveKit`]: what is left is validation, the log append and the in-memory update. Terms made
    /// under other tokenizer settings are ignored and the text tokenized again.
    pub fn save_prepared(
        &mut self,
        p: PreparedSave,
    ) -> Result<(SaveOutcome, Option<DurableTicket>)> {
        let PreparedSave {
            mut memory,
            terms,
            tokenizer,
            embedded_by,
        } = p;
        if let Some(model) = &embedded_by {
            self.check_model_id(model)?;
        }
        let embedding = memory.embedding.take();
        let terms = terms.filter(|_| tokenizer == self.meta.config.tokenizer);
        self.save_new(memory, embedding, terms, embedded_by.as_deref())
    }

    /// Save many memories at once: one log write and one wait for durability, texts embedded in one batch
    /// when the store has an embedder. Duplicates (of stored records or within the batch) are reported, not
    /// stored twice. The vector graph is not updated here: new rows are searched exactly until the next
    /// single save, [`Self::build_index`] or close folds them in. Nothing is saved if any memory is invalid.
    pub fn save_batch(&mut self, items: Vec<NewMemory>) -> Result<Vec<SaveOutcome>> {
        self.save_many(items, true)?.into_iter().collect()
    }

    /// Save several independent memories (say, concurrent requests a server collected) with one log write and
    /// one wait for durability (group commit): each gets its own outcome, and an invalid one fails alone,
    /// unlike [`Self::save_batch`]. The outer error means nothing was saved (the log write or fsync failed,
    /// or the batch could not be embedded). New rows join the vector graph in the background, as single
    /// saves do.
    pub fn save_each(&mut self, items: Vec<NewMemory>) -> Result<Vec<Result<SaveOutcome>>> {
        self.save_many(items, false)
    }

    /// [`Self::save_batch`] (`all_or_nothing`) and [`Self::save_each`].
    fn save_many(
        &mut self,
        mut items: Vec<NewMemory>,
        all_or_nothing: bool,
    ) -> Result<Vec<Result<SaveOutcome>>> {
        self.writer()?;
        // Moved, not copied: a batch's vectors are most of its bytes.
        let mut embeddings: Vec<Option<Vec<f32>>> =
            items.iter_mut().map(|m| m.embedding.take()).collect();
        if let Some(embedder) = self.opts.embedder.clone() {
            let missing: Vec<usize> = (0..items.len())
                .filter(|&i| embeddings[i].is_none() && !items[i].text.trim().is_empty())
                .collect();
            if !missing.is_empty() {
                self.check_model(embedder.as_ref())?;
                let texts: Vec<&str> = missing.iter().map(|&i| items[i].text.trim()).collect();
                let vs = embedder
                    .embed_batch(&texts)
                    .map_err(|e| MemoryError::Embedding(e.to_string()))?;
                for (i, v) in missing.into_iter().zip(vs) {
                    embeddings[i] = Some(v);
                }
                self.note_model(embedder.as_ref())?;
            }
        }
        // Validate everything first, so a bad item leaves the store untouched.
        let mut outcomes: Vec<Result<SaveOutcome>> = Vec::with_capacity(items.len());
        let mut records = Vec::new();
        let mut in_batch: crate::FastMap<u64, usize> = crate::FastMap::default();
        let mut next_id = self.meta.next_id;
        let mut batch_dim = self.meta.config.embedding_dim.map(|d| d as usize);
        for (m, e) in items.into_iter().zip(embeddings) {
            if let Some(v) = &e {
                match batch_dim {
                    Some(d) if d != v.len() => {
                        let err = MemoryError::Embedding(format!(
                            "embedding has {} dimensions, expected {d}",
                            v.len()
                        ));
                        if all_or_nothing {
                            return Err(err);
                        }
                        outcomes.push(Err(err));
                        continue;
                    }
                    _ => batch_dim = Some(v.len()),
                }
            }
            let prepared = match self.prepare(m, e, next_id) {
                Ok(p) => p,
                Err(err) if all_or_nothing => return Err(err),
                Err(err) => {
                    outcomes.push(Err(err));
                    continue;
                }
            };
            match prepared {
                Prepared::Duplicate(id) => outcomes.push(Ok(SaveOutcome {
                    id,
                    deduplicated: true,
                })),
                Prepared::New(r) => {
                    let key = record_dedup_key(&r);
                    // Same hash and the same memory (the hash alone could collide).
                    let earlier = in_batch
                        .get(&key)
                        .map(|&i| &records[i])
                        .filter(|e: &&Record| {
                            e.text == r.text
                                && e.session == r.session
                                && e.agent == r.agent
                                && e.source == r.source
                        });
                    if let Some(e) = earlier {
                        outcomes.push(Ok(SaveOutcome {
                            id: e.id,
                            deduplicated: true,
                        }));
                        continue;
                    }
                    in_batch.insert(key, records.len());
                    outcomes.push(Ok(SaveOutcome {
                        id: r.id,
                        deduplicated: false,
                    }));
                    next_id += 1;
                    records.push(*r);
                }
            }
        }
        if records.is_empty() {
            return Ok(outcomes);
        }
        self.poll_index();
        self.drain_pending_access();
        let bulk = all_or_nothing
            && records.len() >= BULK_ROWS
            && self.opts.durability == Durability::EverySave;
        // A bulk batch is not logged, so it keeps its f32 embeddings until they reach the table.
        let half = !bulk && self.half_log();
        let ops: Vec<WalOp> = records
            .into_iter()
            .map(|r| WalOp::save(Box::new(r), half))
            .collect();
        // Tokenising, and looking up the terms the keyword index knows, is most of a save's CPU: do the
        // batch's texts on every core first.
        let mut tokens: Vec<(Terms, Vec<u32>)> = {
            use rayon::prelude::*;
            let (tokenizer, bm25) = (&self.tokenizer, &self.bm25);
            ops.par_iter()
                .map(|op| {
                    let terms = op
                        .saved()
                        .map_or_else(Terms::default, |r| tokenizer.terms(&r.text));
                    let known = bm25.known_ids(terms.iter());
                    (terms, known)
                })
                .collect()
        };
        let unknown: usize = tokens
            .iter()
            .map(|(_, ids)| ids.iter().filter(|&&id| id == UNKNOWN_TERM).count())
            .sum();
        if unknown >= NEW_TERMS_IN_PARALLEL {
            self.bm25.add_new_terms(&mut tokens);
        }
        if bulk {
            return self.save_in_file(ops, tokens, outcomes);
        }
        let (first, ticket) = self.writer()?.append_many(&ops)?;
        for (i, (op, toks)) in ops.into_iter().zip(tokens).enumerate() {
            let lsn = first + i as u64;
            self.last_lsn = self.last_lsn.max(lsn);
            match op.into_saved() {
                Ok(r) => {
                    if let Some(e) = &r.embedding {
                        self.ensure_dim(e.len())?;
                    }
                    self.index_record(*r, Some(toks));
                }
                Err(op) => self.apply(WalEntry { lsn, op })?,
            }
        }
        ticket.wait()?;
        if !all_or_nothing {
            self.maintain_index();
        }
        self.maybe_checkpoint()?;
        Ok(outcomes)
    }

    /// A large batch goes straight into the HDF5 file: one incremental checkpoint makes it durable, and the
    /// log, which would hold a second copy of every record and vector, is skipped. Should the checkpoint fail,
    /// the error is returned and the batch is not acknowledged, but the records stay in memory and a later
    /// checkpoint may still write them.
    fn save_in_file(
        &mut self,
        ops: Vec<WalOp>,
        tokens: Vec<(Terms, Vec<u32>)>,
        outcomes: Vec<Result<SaveOutcome>>,
    ) -> Result<Vec<Result<SaveOutcome>>> {
        self.reserve(ops.len());
        for (op, toks) in ops.into_iter().zip(tokens) {
            if let Ok(r) = op.into_saved() {
                if let Some(e) = &r.embedding {
                    self.ensure_dim(e.len())?;
                }
                self.index_record(*r, Some(toks));
            }
        }
        // The checkpoint records an LSN past everything logged so far (none of the batch is in the log).
        let next = self.writer()?.next_lsn();
        self.last_lsn = self.last_lsn.max(next);
        self.checkpoint()?;
        Ok(outcomes)
    }

    fn dedup_key_of(&self, m: &NewMemory) -> u64 {
        let agent = m.agent.as_deref().unwrap_or(&self.opts.default_agent);
        let source = Source::parse(m.source.as_deref().unwrap_or(""));
        dedup_key(
            agent,
            m.session.as_deref().unwrap_or(""),
            source.as_str(),
            m.text.trim(),
        )
    }

    /// Record the embedding model in the store (and its log) the first time it embeds.
    fn note_model(&mut self, embedder: &dyn Embedder) -> Result<()> {
        self.note_model_id(embedder.model_id())
    }

    fn note_model_id(&mut self, model: &str) -> Result<()> {
        if self.meta.config.embedding_model.is_none() {
            self.writer()?.append(&WalOp::EmbeddingModel {
                model: model.to_string(),
            })?;
            self.meta.config.embedding_model = Some(model.to_string());
        }
        Ok(())
    }

    /// Validate a new memory and turn it into the record it would become (id `id`), or find its duplicate.
    /// The memory's fields are moved into the record, not copied.
    fn prepare(&mut self, m: NewMemory, embedding: Option<Vec<f32>>, id: u64) -> Result<Prepared> {
        crate::validate::new_memory(&m)?;
        let text = m.text.trim();
        if let Some(&id) = self.dedup.get(&self.dedup_key_of(&m)) {
            // The key is a hash: confirm the stored record really is the same memory.
            let same = self.by_id.get(&id).is_some_and(|&row| {
                let r = &self.records[row as usize];
                r.text == text
                    && r.session == m.session.as_deref().unwrap_or("")
                    && r.agent == m.agent.as_deref().unwrap_or(&self.opts.default_agent)
                    && r.source == Source::parse(m.source.as_deref().unwrap_or(""))
            });
            if same {
                return Ok(Prepared::Duplicate(id));
            }
        }
        let source = Source::parse(m.source.as_deref().unwrap_or(""));
        let text = if text.len() == m.text.len() {
            m.text
        } else {
            text.to_string()
        };
        let agent = m.agent.unwrap_or_else(|| self.opts.default_agent.clone());
        let mut embedding = embedding;
        if let Some(e) = embedding.as_mut() {
            if !crate::vectors::all_finite(e) {
                return Err(MemoryError::InvalidInput(
                    "embedding contains NaN or infinity".into(),
                ));
            }
            match self.meta.config.embedding_dim {
                Some(d) if d as usize != e.len() => {
                    return Err(MemoryError::Embedding(format!(
                        "embedding has {} dimensions, the store holds {d}-dimensional vectors",
                        e.len()
                    )))
                }
                _ if e.is_empty() => return Err(MemoryError::Embedding("empty embedding".into())),
                _ => {}
            }
            normalize(e);
        }
        Ok(Prepared::New(Box::new(Record {
            id,
            text,
            source,
            agent,
            session: m.session.unwrap_or_default(),
            origin: m.origin,
            tags: m.tags,
            event_time: m.event_time,
            created_at: now_ms(),
            importance: m.importance.unwrap_or(0.5),
            access_count: 0,
            last_access: 0,
            tier: Tier::Working,
            supersedes: None,
            superseded_by: None,
            tombstone: false,
            embedding,
        })))
    }

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
        let (first, ticket) = self.writer()?.append_many(&ops)?;
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

    /// Rank records for a query. Never writes the HDF5 file; in a writable store the returned records' access
    /// statistics are logged.
    pub fn search(&self, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        let hits = self.search_candidates(q)?;
        let ids: Vec<u64> = hits.iter().map(|h| h.record.id).collect();
        self.record_access(&ids)?;
        Ok(hits)
    }

    /// Log that these records were returned to a caller (access count and last access, through the log). A
    /// no-op on a read-only store or an empty list.
    pub fn record_access(&self, ids: &[u64]) -> Result<()> {
        if let (Some(wal), false) = (&self.wal, ids.is_empty()) {
            let at = now_ms();
            wal.append(&WalOp::Access {
                ids: ids.to_vec(),
                at,
            })?;
            self.pending_access
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((ids.to_vec(), at));
        }
        Ok(())
    }

    /// Like [`search`](Self::search) without logging access: for layers that pick their own results from a
    /// larger candidate pool and log only what they return.
    pub fn search_candidates(&self, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        if q.k == 0 {
            return Ok(Vec::new());
        }
        // Forgotten and superseded rows are excluded from the flags alone; the records are read only when the
        // filter asks about their fields (most searches have no such filter).
        let hidden = ROW_FORGOTTEN
            | if q.filter.include_superseded {
                0
            } else {
                ROW_SUPERSEDED
            };
        let fields = !q.filter.is_empty();
        debug_assert_eq!(self.row_flags.len(), self.records.len());
        let allow = |row: u32| match self.row_flags.get(row as usize) {
            Some(&f) if f & hidden == 0 => !fields || q.filter.matches(&self.records[row as usize]),
            _ => false,
        };
        let pool = (q.k * 4).max(50);
        let mut cand = Candidates::default();
        if q.mode != SearchMode::Vector {
            let toks = self.tokenizer.tokens(&q.text);
            cand.keyword = self.bm25.search(&toks, pool, &allow);
        }
        if q.mode != SearchMode::Keyword && self.vectors.dim() > 0 {
            let embedded;
            let query_vec = match (&q.embedding, &self.opts.embedder) {
                (Some(e), _) => Some(e.as_slice()),
                (None, Some(embedder)) => {
                    self.check_model(embedder.as_ref())?;
                    embedded = embedder
                        .embed_one(&q.text)
                        .map_err(|e| MemoryError::Embedding(e.to_string()))?;
                    Some(embedded.as_slice())
                }
                (None, None) => None,
            };
            match query_vec {
                Some(e) => cand.vector = self.vector_candidates(e, pool, &allow)?,
                None if q.mode == SearchMode::Vector => return Err(MemoryError::Embedding(
                    "vector search needs a query embedding or an embedder, and there is neither"
                        .into(),
                )),
                None => {}
            }
        } else if q.mode == SearchMode::Vector
            && q.embedding.is_none()
            && self.opts.embedder.is_none()
        {
            return Err(MemoryError::Embedding(
                "vector search needs a query embedding or an embedder, and there is neither".into(),
            ));
        }
        let c = &self.meta.config;
        let fused = fuse(
            &cand,
            q.mode,
            c.fusion_vector_weight,
            c.fusion_keyword_weight,
            c.rrf_k,
        );
        let hits: Vec<SearchHit> = fused
            .into_iter()
            .filter(|f| q.min_score.is_none_or(|m| f.1 >= m))
            .take(q.k)
            .map(|(row, score, ks, vs)| SearchHit {
                score,
                keyword_score: ks,
                vector_score: vs,
                record: self.records[row as usize].clone(),
            })
            .collect();
        Ok(hits)
    }

    fn vector_candidates(
        &self,
        query: &[f32],
        pool: usize,
        allow: &(dyn Fn(u32) -> bool + Sync),
    ) -> Result<Vec<(u32, f32)>> {
        if self.vectors.dim() == 0 {
            return Ok(Vec::new());
        }
        if query.len() != self.vectors.dim() {
            return Err(MemoryError::Embedding(format!(
                "query embedding has {} dimensions, the store holds {}-dimensional vectors",
                query.len(),
                self.vectors.dim()
            )));
        }
        let mut q = query.to_vec();
        normalize(&mut q);
        let ef = (self.meta.config.hnsw_ef_search as usize).max(pool);
        self.index.search(&self.vectors, &q, pool, ef, allow)
    }

    /// Query vectors for `texts` from one forward pass of the store's embedder, when a search in `mode` would
    /// embed its query itself (the store holds vectors, has an embedder, and the mode is not keyword-only);
    /// `None` otherwise.
    pub fn embed_queries(&self, texts: &[&str], mode: SearchMode) -> Result<Option<Vec<Vec<f32>>>> {
        let Some(embedder) = &self.opts.embedder else {
            return Ok(None);
        };
        if mode == SearchMode::Keyword || self.vectors.dim() == 0 {
            return Ok(None);
        }
        self.check_model(embedder.as_ref())?;
        embedder
            .embed_batch(texts)
            .map(Some)
            .map_err(|e| MemoryError::Embedding(e.to_string()))
    }

    /// Refuse an embedder whose model differs from the one the store's vectors came from.
    fn check_model(&self, embedder: &dyn Embedder) -> Result<()> {
        self.check_model_id(embedder.model_id())
    }

    fn check_model_id(&self, model: &str) -> Result<()> {
        match &self.meta.config.embedding_model {
            Some(m) if m != model => Err(MemoryError::Embedding(format!(
                "this store's vectors come from {m}; a query embedded by {model} cannot be compared with them"
            ))),
            _ => Ok(()),
        }
    }

    /// The persisted state of a store extension (workspace sync, graph, ...), if it has any.
    pub fn extension(&self, name: &str) -> Option<&[u8]> {
        self.extensions.get(name).map(Vec::as_slice)
    }

    /// Replace an extension's persisted state (logged like any change, stored under `/extensions/NAME`).
    pub fn put_extension(&mut self, name: &str, payload: Vec<u8>) -> Result<()> {
        self.put_extension_deferred(name, payload)?.wait()?;
        self.maybe_checkpoint()
    }

    /// [`Self::put_extension`] without waiting for durability or checkpointing: returns the ticket to wait on.
    pub fn put_extension_deferred(
        &mut self,
        name: &str,
        payload: Vec<u8>,
    ) -> Result<DurableTicket> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(MemoryError::InvalidInput(format!(
                "bad extension name {name:?}"
            )));
        }
        self.log_and_apply(WalOp::Extension {
            name: name.to_string(),
            payload,
        })
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
        }
    }

    /// True when the log holds changes the HDF5 file does not.
    pub fn is_dirty(&self) -> bool {
        self.last_lsn > self.meta.checkpoint_lsn
    }

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

    fn maybe_checkpoint(&mut self) -> Result<()> {
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

    fn checkpoint_with(&mut self, closing: bool) -> Result<()> {
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
            if let Ok(state) =
                checkpoint::append(&self.path, &inc, &self.file, &self.pending, &mut self.dicts)
            {
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
        self.dicts = write_atomically(&self.path, &view)?;
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
    fn needs_full_rewrite(&self) -> bool {
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
        let elem = match self.meta.config.vector_precision {
            crate::config::VectorPrecision::F16 => 2,
            crate::config::VectorPrecision::F32 => 4,
        };
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

/// Write the store beside `path`, fsync it, rename it over `path` and fsync the directory.
fn write_atomically(path: &Path, view: &StoreView<'_>) -> Result<Dictionaries> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let dicts = schema::write_snapshot(&tmp, view)?;
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    sync_dir(path)?;
    Ok(dicts)
}

fn take_lock(path: &Path) -> Result<File> {
    let lp = lock_path(path);
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lp)
        .map_err(io_err(&lp))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(MemoryError::Locked(path.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err(&lp)(e)),
    }
}

/// Convenience for callers: a filter restricted to one agent.
pub fn agent_filter(agent: &str) -> Filter {
    Filter {
        agent: Some(agent.to_string()),
        ..Filter::default()
    }
}
