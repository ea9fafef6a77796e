//! Opening a store: creating its file when asked, reading the snapshot, replaying the log and warming up.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::Mutex;

use crate::bm25::{Bm25Index, Bm25Params};
use crate::error::{io_err, MemoryError, Result};
use crate::foreign::Carried;
use crate::keyword_table::KeywordTable;
use crate::pending::{FileState, Pending};
use crate::record::{now_ms, Record};
use crate::schema::{self, Snapshot, StoreMeta, StoreView, SCHEMA_VERSION};
use crate::search::{SearchMode, SearchQuery};
use crate::tokenize::Tokenizer;
use crate::vectors::VectorTable;
use crate::wal::Recovery;

use super::lock::{share_data_file, take_lock, writer_holds};
use super::rewrite::write_atomically;
use super::{row_flags, wal_path, Store, StoreOptions};

/// Times a read-only open reads the file again after a format error while a writer holds the store.
const READ_AGAIN: u32 = 6;

/// A read-only open may read the superblock just as the writer switches it to a new checkpoint, and a torn
/// read fails its checksum: while a writer holds the store, a format error is read again a few times (1 to
/// 32 ms apart) before it is reported. A damaged file nobody writes is reported at once.
fn read_again_while_written(path: &Path, first: MemoryError) -> Result<Snapshot> {
    let mut err = first;
    for i in 0..READ_AGAIN {
        if !writer_holds(path) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1 << i));
        match schema::read_snapshot(path) {
            Err(e @ MemoryError::Format { .. }) => err = e,
            r => return r,
        }
    }
    Err(err)
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
        let mut data_lock = None;
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
                keywords: Some(&KeywordTable::default()),
            };
            // A log left by an earlier store of the same name would replay into the new one.
            let wal = wal_path(path);
            if wal.exists() {
                std::fs::remove_file(&wal).map_err(io_err(&wal))?;
            }
            data_lock = write_atomically(path, &view, None)?.2;
        }
        if data_lock.is_none() {
            data_lock = share_data_file(path)?;
        }
        let early_log = if opts.read_only {
            super::replay::open_log_early(path)?
        } else {
            None
        };
        let snap = match schema::read_snapshot(path) {
            Err(e @ MemoryError::Format { .. }) if opts.read_only => {
                read_again_while_written(path, e)?
            }
            r => r?,
        };
        let mut store = Store::from_snapshot(path, opts, snap, lock);
        store.data_lock = data_lock;
        store.replay_log(early_log)?;
        if let (Some(e), Some(m)) = (&store.opts.embedder, &store.meta.config.embedding_model) {
            if e.model_id() != m {
                return Err(MemoryError::Embedding(format!(
                    "{} holds embeddings from {m}, but the configured embedder is {}; open it with the same model",
                    store.path.display(),
                    e.model_id()
                )));
            }
        }
        if store.wal.is_some() {
            // A log past the checkpoint threshold is folded now, so that the next open does not replay it again:
            // searches log access statistics, and a process that only searched never checkpointed. Best effort:
            // the log holds every change whether or not this succeeds, and the next save checkpoints again.
            if store.checkpoint_due() {
                let _ = store.checkpoint();
            }
            // A missing graph or a long unindexed tail is built in the background; searches scan it meanwhile.
            store.maintain_index();
        }
        store.warm_up();
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
            data_lock: None,
            pending_access: Mutex::new(Vec::new()),
            recovery: Recovery::default(),
            extensions: snap.extensions,
            index,
            file,
            pending: Pending::default(),
            dicts: snap.dictionaries,
            row_hashes: None,
            checkpoints: (0, 0),
            log_heal_tried: None,
            foreign: Carried::default(),
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
}
