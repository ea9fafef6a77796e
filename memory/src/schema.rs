//! The on-disk schema: how a store maps onto HDF5 groups, datasets and attributes (see `memory/SCHEMA.md`).
//! Reading validates everything; writing produces a complete snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use clawhdf5_format::{Array, Data, DatasetOptions, FileAppender, FileWriter, FormatError, H5File};

use crate::bm25::{Bm25Index, Bm25Params};
use crate::columns::{self, ColumnGroup, NONE_TIME};
use crate::config::{StoreConfig, VectorPrecision};
use crate::dictionary::Dictionaries;
use crate::error::{MemoryError, Result};
use crate::integrity::{from_hex, hex, SignedManifest};
use crate::keyword_table::KeywordTable;
use crate::record::{Origin, Record, Source, Tier};
use crate::tokenize::TokenizerConfig;
use crate::vector_index::VectorIndex;
use crate::vectors::VectorTable;
use rayon::prelude::*;

/// Schema version this build writes.
pub const SCHEMA_VERSION: u32 = 1;
/// Value of the root `clawhdf5_format` attribute that marks a store.
pub const FORMAT_MARK: &str = "clawhdf5 agent memory store";
/// Most rows per chunk of the record columns (small stores use smaller chunks, see [`chunk_rows`]).
pub const CHUNK_ROWS: u64 = 1024;
/// Largest chunk of a 2-D column in bytes (so appending a row rewrites at most this much, and each
/// checkpoint's append leaves at most this much of a superseded partial chunk behind).
pub const MAX_CHUNK_BYTES: u64 = 64 << 10;
/// Term ids per chunk of `/index/bm25/doc_terms`.
pub const TERM_CHUNK: u64 = 8192;
pub use crate::dictionary::DICTIONARY_COLUMNS;

/// Rows per chunk for a column of `n` rows: a power of two between 64 and [`CHUNK_ROWS`] (small chunks keep
/// the copy-on-write of an append or an in-place change small).
pub fn chunk_rows(n: u64) -> u64 {
    n.max(1).next_power_of_two().clamp(64, CHUNK_ROWS)
}

/// Store-wide metadata kept in root attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreMeta {
    /// Schema version of the file.
    pub schema_version: u32,
    /// Creation time (ms).
    pub created_at: i64,
    /// Incremented by every checkpoint.
    pub generation: u64,
    /// Highest WAL LSN folded into the file.
    pub checkpoint_lsn: u64,
    /// The id the next record gets.
    pub next_id: u64,
    /// Incremented whenever a stored vector changes in place; a persisted graph from another epoch is stale.
    pub vector_epoch: u64,
    /// Persisted configuration.
    pub config: StoreConfig,
}

/// A persisted HNSW graph with what it was built against.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredGraph {
    /// `clawhdf5_ann::Hnsw::to_bytes` output.
    pub bytes: Vec<u8>,
    /// Generation stamped into the bytes.
    pub generation: u64,
    /// [`StoreMeta::vector_epoch`] when it was written.
    pub vector_epoch: u64,
}

/// The store's lookup maps over its records, built while the file is read.
#[derive(Debug, Default)]
pub struct RowMaps {
    /// Row of each record id.
    pub by_id: crate::FastMap<u64, u32>,
    /// Id of the live record each dedup hash belongs to.
    pub dedup: crate::FastMap<u64, u64>,
    /// One past the largest record id.
    pub next_id: u64,
}

impl RowMaps {
    /// The maps over `records` (row order).
    pub fn build(records: &[Record]) -> RowMaps {
        let keys: Vec<Option<u64>> = records
            .par_iter()
            .map(|r| (!r.tombstone).then(|| crate::store::record_dedup_key(r)))
            .collect();
        let mut maps = RowMaps {
            by_id: crate::FastMap::with_capacity_and_hasher(records.len(), Default::default()),
            dedup: crate::FastMap::with_capacity_and_hasher(records.len(), Default::default()),
            next_id: 0,
        };
        for (row, (r, key)) in records.iter().zip(keys).enumerate() {
            maps.by_id.insert(r.id, row as u32);
            if let Some(key) = key {
                maps.dedup.insert(key, r.id);
            }
            maps.next_id = maps.next_id.max(r.id + 1);
        }
        maps
    }
}

/// Everything read from a store file.
#[derive(Debug)]
pub struct Snapshot {
    /// Store metadata.
    pub meta: StoreMeta,
    /// Every record, tombstones included, in row order (embeddings live in `vectors`).
    pub records: Vec<Record>,
    /// Embeddings by row (empty, dimension 0, for a keyword-only store).
    pub vectors: VectorTable,
    /// State of store extensions (workspace sync, graph, tiers, ...), by name; stored under `/extensions`.
    pub extensions: BTreeMap<String, Vec<u8>>,
    /// Signature over the records, when the store is signed; stored under `/integrity`.
    pub manifest: Option<SignedManifest>,
    /// The vector index restored from the persisted graph (`/index/hnsw`; empty when it is absent, stale or
    /// unreadable), with the number of rows that graph covers in the file.
    pub vector_index: (VectorIndex, usize),
    /// The keyword index rebuilt from the persisted term ids (`/index/bm25`), with that table's vocabulary
    /// size and term-id count; `None` when the table is absent, damaged or from another tokenizer.
    pub keyword_index: Option<(Bm25Index, usize, u64)>,
    /// Records by id, and live records by the hash the store deduplicates identical saves by.
    pub row_maps: RowMaps,
    /// The dictionaries of the dictionary-encoded columns.
    pub dictionaries: Dictionaries,
    /// Rows per chunk of the record columns in this file.
    pub chunk_rows: u64,
    /// The file's `doc_terms` hold gaps (older files hold absolute ids and get rewritten at the next
    /// checkpoint, so that appended rows never mix the two).
    pub keyword_gaps: bool,
    /// Bytes of superseded data incremental checkpoints left in the file (root attribute `dead_bytes`).
    pub dead_bytes: u64,
}

/// What a full write needs, borrowed from the open store.
pub struct StoreView<'a> {
    /// Store metadata (generation and LSN already advanced).
    pub meta: &'a StoreMeta,
    /// Every record in row order.
    pub records: &'a [Record],
    /// Embeddings by row.
    pub vectors: &'a VectorTable,
    /// Extension states.
    pub extensions: &'a BTreeMap<String, Vec<u8>>,
    /// Signature to store, if the store is signed.
    pub manifest: Option<&'a SignedManifest>,
    /// Graph bytes stamped with `meta.generation`, if a graph is to be stored.
    pub hnsw: Option<&'a [u8]>,
    /// The keyword index over all rows (`None`: written afterwards, through an appender).
    pub keywords: Option<&'a KeywordTable>,
}

/// Chunked, resizable along rows (so checkpoints can append); 2-D columns keep their width fixed.
pub fn chunked(shape: &[u64], elem_bytes: u64, deflate: bool) -> DatasetOptions {
    let n = shape.first().copied().unwrap_or(0);
    let (chunk, max_shape) = match shape {
        [_, cols] => {
            let row = ((*cols).max(1) * elem_bytes).max(1);
            // The largest power of two of rows that fits MAX_CHUNK_BYTES (at least 16 rows).
            let fit = (MAX_CHUNK_BYTES / row).max(16);
            let cap = 1u64 << (63 - fit.leading_zeros());
            (
                vec![chunk_rows(n).min(cap), (*cols).max(1)],
                vec![None, Some(*cols)],
            )
        }
        _ => (vec![chunk_rows(n)], vec![None]),
    };
    DatasetOptions {
        chunk: Some(chunk),
        deflate: if deflate { Some(4) } else { None },
        shuffle: deflate,
        max_shape: Some(max_shape),
        ..Default::default()
    }
}

/// Options of a growable byte blob (extensions, graph), deflated at `level` when given.
pub fn blob_options(len: usize, level: Option<u32>) -> DatasetOptions {
    // Chunks of at most 1 MiB and of equal size, so the last (stored whole) wastes at most a few bytes.
    let len = (len as u64).max(1);
    let chunk = len.div_ceil(len.div_ceil(1 << 20));
    DatasetOptions {
        chunk: Some(vec![chunk]),
        deflate: level,
        max_shape: Some(vec![None]),
        ..Default::default()
    }
}

/// Options of the flat term-id list.
pub fn term_options() -> DatasetOptions {
    DatasetOptions {
        chunk: Some(vec![TERM_CHUNK]),
        deflate: Some(4),
        shuffle: true,
        max_shape: Some(vec![None]),
        ..Default::default()
    }
}

/// Size in bytes of one element of `a` (8 for strings: the size does not matter for them).
pub fn elem_bytes(a: &Array) -> u64 {
    match &a.data {
        Data::U8(_) | Data::I8(_) => 1,
        Data::F16(_) | Data::U16(_) | Data::I16(_) => 2,
        Data::U32(_) | Data::I32(_) | Data::F32(_) => 4,
        _ => 8,
    }
}

pub(crate) fn str_attr(s: &str) -> Array {
    Array::scalar(Data::VarStr(vec![s.to_string()]))
}

/// The root attributes (all but the format mark), rewritten at every checkpoint.
pub(crate) fn root_attrs(m: &StoreMeta) -> Vec<(&'static str, Array)> {
    vec![
        (
            "schema_version",
            Array::scalar(Data::U32(vec![m.schema_version])),
        ),
        ("created_at", Array::scalar(Data::I64(vec![m.created_at]))),
        ("generation", Array::scalar(Data::U64(vec![m.generation]))),
        (
            "checkpoint_lsn",
            Array::scalar(Data::U64(vec![m.checkpoint_lsn])),
        ),
        ("next_id", Array::scalar(Data::U64(vec![m.next_id]))),
        (
            "vector_epoch",
            Array::scalar(Data::U64(vec![m.vector_epoch])),
        ),
    ]
}

/// Attributes of `/index/hnsw`.
pub(crate) fn graph_attrs(m: &StoreMeta) -> Vec<(&'static str, Array)> {
    vec![
        ("generation", Array::scalar(Data::U64(vec![m.generation]))),
        (
            "vector_epoch",
            Array::scalar(Data::U64(vec![m.vector_epoch])),
        ),
    ]
}

/// Description of the tokenizer output stored on `/index/bm25`.
pub(crate) fn keyword_tokenizer_mark(c: &StoreConfig) -> String {
    format!(
        "{}; output v{}",
        c.tokenizer.describe(),
        crate::keyword_table::TOKENIZER_OUTPUT_VERSION
    )
}

/// Write the whole store as a new HDF5 file at `path` (written and fsynced; the caller renames it into
/// place). Returns the dictionaries the file now holds.
pub fn write_snapshot(path: &Path, snap: &StoreView<'_>) -> Result<Dictionaries> {
    let (w, dicts) = snapshot_writer(path, snap, None)?;
    w.write_file(path).map_err(|source| MemoryError::Format {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(dicts)
}

/// The snapshot [`write_snapshot`] writes, built in memory (`path` names the file in errors). `prebuilt`
/// columns are used when they hold every row, and built here otherwise.
pub fn snapshot_writer(
    path: &Path,
    snap: &StoreView<'_>,
    prebuilt: Option<columns::Prebuilt>,
) -> Result<(FileWriter, Dictionaries)> {
    let fmt = |source: FormatError| MemoryError::Format {
        path: path.to_path_buf(),
        source,
    };
    let mut w = FileWriter::new();
    let m = snap.meta;
    w.set_attr("/", "clawhdf5_format", str_attr(FORMAT_MARK))
        .map_err(fmt)?;
    for (name, value) in root_attrs(m) {
        w.set_attr("/", name, value).map_err(fmt)?;
    }
    w.set_attr("/", "dead_bytes", Array::scalar(Data::U64(vec![0])))
        .map_err(fmt)?;
    w.create_group("/config").map_err(fmt)?;
    for (name, value) in config_attrs(&m.config) {
        w.set_attr("/config", name, value).map_err(fmt)?;
    }

    w.create_group("/records").map_err(fmt)?;
    w.create_group("/dictionaries").map_err(fmt)?;
    let n = snap.records.len();
    let (mut cols, mut dicts, groups) = match prebuilt.filter(|p| p.rows == n) {
        Some(p) => (p.columns, p.dicts, &[ColumnGroup::Access][..]),
        None => (
            Vec::new(),
            Dictionaries::default(),
            &columns::ALL_GROUPS[..],
        ),
    };
    cols.extend(columns::build(
        snap.records,
        snap.vectors,
        &m.config,
        0..n,
        groups,
        &mut dicts,
    )?);
    cols.sort_by_key(|c| columns::position(c.name));
    for col in cols {
        let opts = chunked(&col.array.shape, elem_bytes(&col.array), col.deflate);
        w.write_dataset(&format!("/records/{}", col.name), col.array, opts)
            .map_err(fmt)?;
    }
    for (i, name) in DICTIONARY_COLUMNS.iter().enumerate() {
        let values = Array::vector(Data::VarStr(dicts.values(i).to_vec()));
        let opts = chunked(&values.shape, 8, false);
        w.write_dataset(&format!("/dictionaries/{name}"), values, opts)
            .map_err(fmt)?;
    }
    dicts.mark_persisted();
    w.set_attr(
        "/records",
        "count",
        Array::scalar(Data::U64(vec![n as u64])),
    )
    .map_err(fmt)?;
    w.create_group("/extensions").map_err(fmt)?;
    for (name, bytes) in snap.extensions {
        w.write_dataset(
            &format!("/extensions/{name}"),
            Array::vector(Data::U8(bytes.clone())),
            blob_options(bytes.len(), Some(4)),
        )
        .map_err(fmt)?;
    }
    if let Some(m) = snap.manifest {
        write_manifest(&mut w, m).map_err(fmt)?;
    }
    if let Some(g) = snap.hnsw {
        w.write_dataset(
            "/index/hnsw",
            Array::vector(Data::U8(g.to_vec())),
            blob_options(g.len(), None),
        )
        .map_err(fmt)?;
        for (name, value) in graph_attrs(m) {
            w.set_attr("/index/hnsw", name, value).map_err(fmt)?;
        }
    }
    if let Some(k) = snap.keywords {
        write_keywords(&mut w, k, &m.config).map_err(fmt)?;
    }
    Ok((w, dicts))
}

/// Writing new objects into a file: a whole new one ([`FileWriter`]) or one being appended to
/// ([`FileAppender`]).
pub trait ObjectWriter {
    /// Create a group (and missing parents).
    fn create_group(&mut self, path: &str) -> std::result::Result<(), FormatError>;
    /// Add a dataset.
    fn write_dataset(
        &mut self,
        path: &str,
        array: Array,
        opts: DatasetOptions,
    ) -> std::result::Result<(), FormatError>;
    /// Set an attribute of an object.
    fn set_attr(
        &mut self,
        path: &str,
        name: &str,
        value: Array,
    ) -> std::result::Result<(), FormatError>;
}

/// [`ObjectWriter`] for a type with inherent methods of the same names and signatures.
macro_rules! object_writer {
    ($t:ty) => {
        impl ObjectWriter for $t {
            fn create_group(&mut self, path: &str) -> std::result::Result<(), FormatError> {
                <$t>::create_group(self, path)
            }
            fn write_dataset(
                &mut self,
                path: &str,
                array: Array,
                opts: DatasetOptions,
            ) -> std::result::Result<(), FormatError> {
                <$t>::write_dataset(self, path, array, opts)
            }
            fn set_attr(
                &mut self,
                path: &str,
                name: &str,
                value: Array,
            ) -> std::result::Result<(), FormatError> {
                <$t>::set_attr(self, path, name, value)
            }
        }
    };
}

object_writer!(FileWriter);
object_writer!(FileAppender);

/// Write the keyword index `k` (group `/index/bm25`) into a file.
pub fn write_keywords(
    w: &mut impl ObjectWriter,
    k: &KeywordTable,
    config: &StoreConfig,
) -> std::result::Result<(), FormatError> {
    w.create_group("/index/bm25")?;
    // The stored form: spans laid out row by row, each holding gaps.
    let stored = k.to_gaps();
    let n = stored.doc_start.len() as u64;
    let terms = Array::vector(Data::VarStr(stored.terms));
    // The 16-byte string references compress like the text column's.
    let opts = chunked(&terms.shape, 8, true);
    w.write_dataset("/index/bm25/terms", terms, opts)?;
    w.write_dataset(
        "/index/bm25/doc_terms",
        Array::vector(Data::U32(stored.doc_terms)),
        term_options(),
    )?;
    w.set_attr(
        "/index/bm25",
        "doc_terms_encoding",
        str_attr(crate::keyword_table::GAPS_ENCODING),
    )?;
    w.write_dataset(
        "/index/bm25/doc_start",
        Array::vector(Data::U64(stored.doc_start)),
        chunked(&[n], 8, true),
    )?;
    w.write_dataset(
        "/index/bm25/doc_len",
        Array::vector(Data::U32(stored.doc_len)),
        chunked(&[n], 4, true),
    )?;
    w.set_attr(
        "/index/bm25",
        "tokenizer",
        str_attr(&keyword_tokenizer_mark(config)),
    )
}

/// Name of the signature scheme recorded in `/integrity`.
pub const INTEGRITY_ALGORITHM: &str = "ed25519(sha256-merkle(sha256-per-record))/v1";

fn write_manifest(w: &mut FileWriter, m: &SignedManifest) -> std::result::Result<(), FormatError> {
    w.create_group("/integrity")?;
    let (ids, hashes) = manifest_rows(&m.records)?;
    let opts = chunked(&ids.shape, 8, true);
    w.write_dataset("/integrity/ids", ids, opts)?;
    let opts = chunked(&hashes.shape, 1, false);
    w.write_dataset("/integrity/record_sha256", hashes, opts)?;
    for (name, value) in manifest_attrs(m) {
        w.set_attr("/integrity", name, value)?;
    }
    Ok(())
}

/// The `/integrity/ids` and `/integrity/record_sha256` rows of some manifest entries.
pub(crate) fn manifest_rows(
    entries: &[(u64, [u8; 32])],
) -> std::result::Result<(Array, Array), FormatError> {
    let n = entries.len() as u64;
    let ids = Array::vector(Data::U64(entries.iter().map(|x| x.0).collect()));
    let flat: Vec<u8> = entries.iter().flat_map(|x| x.1).collect();
    Ok((ids, Array::matrix(n, 32, Data::U8(flat))?))
}

/// The attributes of `/integrity`.
pub(crate) fn manifest_attrs(m: &SignedManifest) -> Vec<(&'static str, Array)> {
    vec![
        ("algorithm", str_attr(INTEGRITY_ALGORITHM)),
        ("merkle_root", str_attr(&hex(&m.root))),
        ("signature", str_attr(&hex(&m.signature))),
        ("public_key", str_attr(&hex(&m.public_key))),
        ("generation", Array::scalar(Data::U64(vec![m.generation]))),
    ]
}

pub(crate) fn config_attrs(c: &StoreConfig) -> Vec<(&'static str, Array)> {
    vec![
        (
            "embedding_dim",
            Array::scalar(Data::U32(vec![c.embedding_dim.unwrap_or(0)])),
        ),
        (
            "embedding_model",
            str_attr(c.embedding_model.as_deref().unwrap_or("")),
        ),
        ("vector_precision", str_attr(c.vector_precision.as_str())),
        (
            "fusion_vector_weight",
            Array::scalar(Data::F32(vec![c.fusion_vector_weight])),
        ),
        (
            "fusion_keyword_weight",
            Array::scalar(Data::F32(vec![c.fusion_keyword_weight])),
        ),
        ("rrf_k", Array::scalar(Data::F32(vec![c.rrf_k]))),
        ("tokenizer", str_attr(&c.tokenizer.describe())),
        ("hnsw_m", Array::scalar(Data::U32(vec![c.hnsw_m]))),
        (
            "hnsw_ef_construction",
            Array::scalar(Data::U32(vec![c.hnsw_ef_construction])),
        ),
        (
            "hnsw_ef_search",
            Array::scalar(Data::U32(vec![c.hnsw_ef_search])),
        ),
        (
            "exact_search_threshold",
            Array::scalar(Data::U32(vec![c.exact_search_threshold])),
        ),
    ]
}

/// Read and validate a snapshot.
pub fn read_snapshot(path: &Path) -> Result<Snapshot> {
    let file = H5File::open(path).map_err(|source| match source {
        FormatError::NotHdf5 => MemoryError::NotAStore {
            path: path.to_path_buf(),
            reason: "not an HDF5 file".into(),
        },
        source => MemoryError::Format {
            path: path.to_path_buf(),
            source,
        },
    })?;
    SnapshotReader { file: &file, path }.read()
}

struct SnapshotReader<'a> {
    file: &'a H5File,
    path: &'a Path,
}

impl SnapshotReader<'_> {
    fn corrupt(&self, reason: impl Into<String>) -> MemoryError {
        MemoryError::Corrupt {
            path: self.path.to_path_buf(),
            reason: reason.into(),
        }
    }

    fn attr(&self, obj: &str, name: &str) -> Result<Array> {
        self.file.attr(obj, name).map_err(|source| match source {
            FormatError::NotFound(_) => self.corrupt(format!("attribute {obj}:{name} is missing")),
            source => MemoryError::Format {
                path: self.path.to_path_buf(),
                source,
            },
        })
    }

    fn attr_str(&self, obj: &str, name: &str) -> Result<String> {
        let a = self.attr(obj, name)?;
        a.as_strings()
            .and_then(|s| s.first().cloned())
            .ok_or_else(|| self.corrupt(format!("attribute {obj}:{name} is not a string")))
    }

    fn attr_u64(&self, obj: &str, name: &str) -> Result<u64> {
        let a = self.attr(obj, name)?;
        let v = match &a.data {
            Data::U64(v) => v.first().copied(),
            Data::U32(v) => v.first().map(|&x| u64::from(x)),
            Data::I64(v) => v.first().and_then(|&x| u64::try_from(x).ok()),
            Data::I32(v) => v.first().and_then(|&x| u64::try_from(x).ok()),
            _ => None,
        };
        v.ok_or_else(|| self.corrupt(format!("attribute {obj}:{name} is not an unsigned integer")))
    }

    fn attr_f32(&self, obj: &str, name: &str) -> Result<f32> {
        let a = self.attr(obj, name)?;
        match &a.data {
            Data::F32(v) => v.first().copied(),
            Data::F64(v) => v.first().map(|&x| x as f32),
            _ => None,
        }
        .ok_or_else(|| self.corrupt(format!("attribute {obj}:{name} is not a float")))
    }

    /// A dataset the schema requires, read whole; a missing one means the file is corrupt.
    fn required(&self, p: &str) -> Result<Array> {
        self.file
            .dataset(p)
            .and_then(|d| d.read())
            .map_err(|source| match source {
                FormatError::NotFound(_) => self.corrupt(format!("dataset {p} is missing")),
                source => MemoryError::Format {
                    path: self.path.to_path_buf(),
                    source,
                },
            })
    }

    fn column(&self, name: &str, n: usize) -> Result<Array> {
        let p = format!("/records/{name}");
        let a = self.required(&p)?;
        if a.shape.first().copied() != Some(n as u64) {
            return Err(self.corrupt(format!(
                "dataset {p} has {:?} rows, expected {n}",
                a.shape.first()
            )));
        }
        Ok(a)
    }

    fn read(&self) -> Result<Snapshot> {
        let mark = self.file.attr("/", "clawhdf5_format").ok();
        let is_store = mark
            .as_ref()
            .and_then(|a| a.as_strings())
            .and_then(|s| s.first().cloned())
            .is_some_and(|s| s == FORMAT_MARK);
        if !is_store {
            return Err(MemoryError::NotAStore {
                path: self.path.to_path_buf(),
                reason: "HDF5 file without the clawhdf5_format attribute".into(),
            });
        }
        let version = self.attr_u64("/", "schema_version")?;
        let version =
            u32::try_from(version).map_err(|_| self.corrupt("schema_version out of range"))?;
        if version > SCHEMA_VERSION {
            return Err(MemoryError::SchemaTooNew {
                path: self.path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        let config = self.read_config()?;
        let meta = StoreMeta {
            schema_version: version,
            created_at: self
                .attr_u64("/", "created_at")
                .map(|x| x as i64)
                .or_else(|_| {
                    let a = self.attr("/", "created_at")?;
                    a.as_i64()
                        .and_then(|v| v.first().copied())
                        .ok_or_else(|| self.corrupt("created_at is not an integer"))
                })?,
            generation: self.attr_u64("/", "generation")?,
            checkpoint_lsn: self.attr_u64("/", "checkpoint_lsn")?,
            next_id: self.attr_u64("/", "next_id")?,
            // Files written before graphs were kept across checkpoints have no epoch: 0.
            vector_epoch: self.attr_u64("/", "vector_epoch").unwrap_or(0),
            config,
        };
        let n = usize::try_from(self.attr_u64("/records", "count")?)
            .map_err(|_| self.corrupt("count out of range"))?;
        // Three independent parts, read and turned into indexes in parallel: the embeddings (the bulk of
        // the file, converted on the way) and then the vector graph over them; the records and their dedup
        // keys; the keyword index (rebuilt from its persisted term ids) with the small remaining parts.
        let (vectors, rest) = rayon::join(
            || -> Result<_> {
                // The graph is decoded while the embeddings are read, then checked against them.
                let (vectors, graph) = rayon::join(
                    || -> Result<_> {
                        Ok(match meta.config.embedding_dim {
                            Some(dim) => {
                                self.read_embeddings(n, dim as usize, meta.config.vector_precision)?
                            }
                            None => VectorTable::with_precision(0, meta.config.vector_precision),
                        })
                    },
                    || match self.read_graph(&meta) {
                        Some(g) if g.vector_epoch == meta.vector_epoch => {
                            VectorIndex::decode(&g.bytes, g.generation)
                        }
                        _ => None,
                    },
                );
                let vectors = vectors?;
                let index = VectorIndex::attach(graph, &vectors);
                let covered = index.graph().map_or(0, |h| h.slots());
                let extensions = self.read_extensions()?;
                let manifest = self.read_manifest()?;
                Ok((vectors, (index, covered), extensions, manifest))
            },
            || -> Result<_> {
                // The keyword index needs only the tombstones of the records, so it is rebuilt while they
                // are read.
                let (records, keyword_index) = rayon::join(
                    || -> Result<_> {
                        let dictionaries = self.read_dictionaries()?;
                        let records = self.read_records(n, &dictionaries)?;
                        let maps = RowMaps::build(&records);
                        Ok((dictionaries, records, maps))
                    },
                    || {
                        let k = self.read_keywords(&meta.config, n)?;
                        // A tombstone column that cannot be read fails the records' side, and the open.
                        let dead = self.column("tombstone", n).ok()?;
                        let dead = dead.as_u8()?;
                        let live = |row: usize| dead.get(row).is_some_and(|&t| t == 0);
                        let ix = k.to_index(Bm25Params::default(), &live)?;
                        Some((ix, k.terms.len(), k.doc_terms.len() as u64))
                    },
                );
                let (dictionaries, records, maps) = records?;
                Ok((dictionaries, records, maps, keyword_index))
            },
        );
        let (vectors, vector_index, extensions, manifest) = vectors?;
        let (dictionaries, records, row_maps, keyword_index) = rest?;
        let chunk_rows = self
            .file
            .dataset("/records/id")
            .ok()
            .and_then(|d| d.chunk().and_then(|c| c.first().copied()))
            .unwrap_or(0);
        let dead_bytes = self.attr_u64("/", "dead_bytes").unwrap_or(0);
        let keyword_gaps = self.keyword_gaps();
        Ok(Snapshot {
            keyword_gaps,
            dead_bytes,
            vector_index,
            keyword_index,
            row_maps,
            meta,
            records,
            vectors,
            extensions,
            manifest,
            dictionaries: Dictionaries::from_stored(dictionaries),
            chunk_rows,
        })
    }

    /// The persisted graph; one that cannot be read is rebuilt, never fatal.
    fn read_graph(&self, meta: &StoreMeta) -> Option<StoredGraph> {
        let bytes = self
            .file
            .dataset("/index/hnsw")
            .and_then(|d| d.read())
            .ok()?
            .as_u8()?
            .to_vec();
        Some(StoredGraph {
            bytes,
            // Older files stamped the graph with the file's generation and had no epoch.
            generation: self
                .attr_u64("/index/hnsw", "generation")
                .unwrap_or(meta.generation),
            vector_epoch: self.attr_u64("/index/hnsw", "vector_epoch").unwrap_or(0),
        })
    }

    /// Whether `/index/bm25/doc_terms` stores each row's ids as gaps.
    fn keyword_gaps(&self) -> bool {
        self.attr_str("/index/bm25", "doc_terms_encoding")
            .is_ok_and(|e| e == crate::keyword_table::GAPS_ENCODING)
    }

    /// The persisted keyword index; absent, damaged or from another tokenizer means `None` (the texts are
    /// tokenised again), never an error.
    fn read_keywords(&self, config: &StoreConfig, rows: usize) -> Option<KeywordTable> {
        let mark = self.attr_str("/index/bm25", "tokenizer").ok()?;
        if mark != keyword_tokenizer_mark(config) {
            return None;
        }
        let read = |name: &str| {
            self.file
                .dataset(&format!("/index/bm25/{name}"))
                .and_then(|d| d.read())
                .ok()
                .map(|a| a.data)
        };
        let t = KeywordTable {
            terms: match read("terms")? {
                Data::VarStr(v) => v,
                Data::FixedStr { values, .. } => values,
                _ => return None,
            },
            doc_terms: match read("doc_terms")? {
                Data::U32(v) => v,
                _ => return None,
            },
            doc_start: match read("doc_start")? {
                Data::U64(v) => v,
                _ => return None,
            },
            doc_len: match read("doc_len")? {
                Data::U32(v) => v,
                _ => return None,
            },
            gaps: self.keyword_gaps(),
        };
        (t.doc_start.len() == rows && t.doc_len.len() == rows).then_some(t)
    }

    /// The five dictionaries, in [`DICTIONARY_COLUMNS`] order.
    fn read_dictionaries(&self) -> Result<[Vec<String>; 5]> {
        let mut out: [Vec<String>; 5] = Default::default();
        for (slot, name) in out.iter_mut().zip(DICTIONARY_COLUMNS) {
            let p = format!("/dictionaries/{name}");
            let values = self.required(&p)?;
            *slot = values
                .as_strings()
                .ok_or_else(|| self.corrupt(format!("{p} is not strings")))?
                .to_vec();
        }
        Ok(out)
    }

    fn read_manifest(&self) -> Result<Option<SignedManifest>> {
        if !self.file.exists("/integrity") {
            return Ok(None);
        }
        let fmt = |source| MemoryError::Format {
            path: self.path.to_path_buf(),
            source,
        };
        let ids = self
            .file
            .dataset("/integrity/ids")
            .and_then(|d| d.read())
            .map_err(fmt)?;
        let ids = ids
            .as_u64()
            .ok_or_else(|| self.corrupt("/integrity/ids is not u64"))?
            .to_vec();
        let hashes = self
            .file
            .dataset("/integrity/record_sha256")
            .and_then(|d| d.read())
            .map_err(fmt)?;
        let hashes = hashes
            .as_u8()
            .ok_or_else(|| self.corrupt("/integrity/record_sha256 is not u8"))?;
        if hashes.len() != ids.len() * 32 {
            return Err(self.corrupt("/integrity/record_sha256 does not match /integrity/ids"));
        }
        let records = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                let mut h = [0u8; 32];
                h.copy_from_slice(&hashes[i * 32..(i + 1) * 32]);
                (id, h)
            })
            .collect();
        let hex_attr = |name: &str| self.attr_str("/integrity", name);
        Ok(Some(SignedManifest {
            records,
            root: from_hex::<32>(&hex_attr("merkle_root")?)
                .ok_or_else(|| self.corrupt("bad merkle_root"))?,
            signature: from_hex::<64>(&hex_attr("signature")?)
                .ok_or_else(|| self.corrupt("bad signature"))?,
            public_key: from_hex::<32>(&hex_attr("public_key")?)
                .ok_or_else(|| self.corrupt("bad public_key"))?,
            generation: self.attr_u64("/integrity", "generation")?,
        }))
    }

    fn read_extensions(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        let mut out = BTreeMap::new();
        if !self.file.exists("/extensions") {
            return Ok(out);
        }
        let entries = self
            .file
            .list("/extensions")
            .map_err(|source| MemoryError::Format {
                path: self.path.to_path_buf(),
                source,
            })?;
        for e in entries {
            let p = format!("/extensions/{}", e.name);
            let a = self
                .file
                .dataset(&p)
                .and_then(|d| d.read())
                .map_err(|source| MemoryError::Format {
                    path: self.path.to_path_buf(),
                    source,
                })?;
            let bytes = a
                .as_u8()
                .ok_or_else(|| self.corrupt(format!("{p} is not a byte array")))?;
            out.insert(e.name, bytes.to_vec());
        }
        Ok(out)
    }

    fn read_config(&self) -> Result<StoreConfig> {
        let c = "/config";
        let dim = self.attr_u64(c, "embedding_dim")?;
        let model = self.attr_str(c, "embedding_model")?;
        let precision = self.attr_str(c, "vector_precision")?;
        let tokenizer = self.attr_str(c, "tokenizer")?;
        let u32_attr = |name: &str| -> Result<u32> {
            u32::try_from(self.attr_u64(c, name)?)
                .map_err(|_| self.corrupt(format!("{name} out of range")))
        };
        Ok(StoreConfig {
            embedding_dim: if dim == 0 {
                None
            } else {
                Some(u32::try_from(dim).map_err(|_| self.corrupt("embedding_dim out of range"))?)
            },
            embedding_model: if model.is_empty() { None } else { Some(model) },
            vector_precision: VectorPrecision::parse(&precision)
                .ok_or_else(|| self.corrupt(format!("unknown vector_precision {precision:?}")))?,
            fusion_vector_weight: self.attr_f32(c, "fusion_vector_weight")?,
            fusion_keyword_weight: self.attr_f32(c, "fusion_keyword_weight")?,
            rrf_k: self.attr_f32(c, "rrf_k")?,
            tokenizer: TokenizerConfig::from_description(&tokenizer)
                .ok_or_else(|| self.corrupt(format!("unknown tokenizer {tokenizer:?}")))?,
            hnsw_m: u32_attr("hnsw_m")?,
            hnsw_ef_construction: u32_attr("hnsw_ef_construction")?,
            hnsw_ef_search: u32_attr("hnsw_ef_search")?,
            exact_search_threshold: u32_attr("exact_search_threshold")?,
        })
    }

    fn read_records(&self, n: usize, dicts: &[Vec<String>; 5]) -> Result<Vec<Record>> {
        let bad = |name: &str| self.corrupt(format!("dataset /records/{name} has the wrong type"));
        macro_rules! col {
            ($name:literal, $acc:ident) => {{
                let a = self.column($name, n)?;
                a.$acc().map(|s| s.to_vec()).ok_or_else(|| bad($name))?
            }};
        }
        let ids: Vec<u64> = col!("id", as_u64);
        // The texts are moved out of the decoded column, not copied (they are most of the records' memory).
        let texts: Vec<String> = match self.column("text", n)?.data {
            Data::VarStr(v) => v,
            _ => return Err(bad("text")),
        };
        let sources = self.dictionary_column("source", n, &dicts[0])?;
        let agents = self.dictionary_column("agent", n, &dicts[1])?;
        let sessions = self.dictionary_column("session", n, &dicts[2])?;
        let opaths = self.dictionary_column("origin_path", n, &dicts[3])?;
        let ostart: Vec<u32> = col!("origin_start_line", as_u32);
        let oend: Vec<u32> = col!("origin_end_line", as_u32);
        let tags = self.dictionary_column("tags", n, &dicts[4])?;
        let event: Vec<i64> = col!("event_time", as_i64);
        let created: Vec<i64> = col!("created_at", as_i64);
        let importance: Vec<f32> = col!("importance", as_f32);
        let access: Vec<u32> = col!("access_count", as_u32);
        let last_access: Vec<i64> = col!("last_access", as_i64);
        let tier: Vec<u8> = col!("tier", as_u8);
        let supersedes: Vec<u64> = col!("supersedes", as_u64);
        let superseded_by: Vec<u64> = col!("superseded_by", as_u64);
        let tomb: Vec<u8> = col!("tombstone", as_u8);
        // Each distinct source and tag list is parsed once.
        let source_values: Vec<Source> = dicts[0].iter().map(|v| Source::parse(v)).collect();
        let tag_values: Vec<Vec<String>> = dicts[4]
            .iter()
            .enumerate()
            .map(|(i, v)| {
                serde_json::from_str(v)
                    .map_err(|e| self.corrupt(format!("/dictionaries/tags row {i}: {e}")))
            })
            .collect::<Result<_>>()?;
        let mut out = Vec::with_capacity(n);
        for (i, text) in texts.into_iter().enumerate() {
            let path = &dicts[3][opaths[i]];
            out.push(Record {
                id: ids[i],
                text,
                source: source_values[sources[i]].clone(),
                agent: dicts[1][agents[i]].clone(),
                session: dicts[2][sessions[i]].clone(),
                origin: if path.is_empty() {
                    None
                } else {
                    Some(Origin {
                        path: path.clone(),
                        start_line: ostart[i],
                        end_line: oend[i],
                    })
                },
                tags: tag_values[tags[i]].clone(),
                event_time: (event[i] != NONE_TIME).then_some(event[i]),
                created_at: created[i],
                importance: importance[i],
                access_count: access[i],
                last_access: last_access[i],
                tier: Tier::from_code(tier[i])
                    .ok_or_else(|| self.corrupt(format!("tier of row {i}")))?,
                supersedes: (supersedes[i] != 0).then_some(supersedes[i]),
                superseded_by: (superseded_by[i] != 0).then_some(superseded_by[i]),
                tombstone: tomb[i] != 0,
                embedding: None,
            });
        }
        Ok(out)
    }

    /// The codes of a dictionary-encoded column, each checked against its dictionary.
    fn dictionary_column(&self, name: &str, n: usize, values: &[String]) -> Result<Vec<usize>> {
        let codes = self.column(name, n)?;
        let codes = codes
            .as_u32()
            .ok_or_else(|| self.corrupt(format!("/records/{name} is not u32 codes")))?;
        codes
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let c = c as usize;
                if c < values.len() {
                    Ok(c)
                } else {
                    Err(self.corrupt(format!(
                        "row {i} of /records/{name} points past /dictionaries/{name}"
                    )))
                }
            })
            .collect()
    }

    fn read_embeddings(
        &self,
        n: usize,
        dim: usize,
        precision: VectorPrecision,
    ) -> Result<VectorTable> {
        let p = "/records/embedding";
        let fmt = |source| MemoryError::Format {
            path: self.path.to_path_buf(),
            source,
        };
        let d = self.file.dataset(p).map_err(|source| match source {
            FormatError::NotFound(_) => self.corrupt(format!("dataset {p} is missing")),
            source => fmt(source),
        })?;
        if d.shape() != [n as u64, dim as u64] {
            return Err(self.corrupt(format!(
                "embedding has shape {:?}, expected [{n}, {dim}]",
                d.shape()
            )));
        }
        n.checked_mul(dim)
            .ok_or_else(|| self.corrupt("embedding is too large"))?;
        // Straight into the table's chunks: read in place when the file holds the store's precision,
        // converted on the way otherwise (no full-size intermediate copy).
        let size = match d.dtype().ieee_layout() {
            Some((size, _)) => size,
            None => 0,
        };
        if size != 2 && size != 4 {
            return Err(self.corrupt("embedding is neither f16 nor f32"));
        }
        let has = self.column("has_embedding", n)?;
        let has = has
            .as_u8()
            .ok_or_else(|| self.corrupt("has_embedding is not u8"))?;
        let present: Vec<bool> = has.iter().map(|&h| h != 0).collect();
        let rows_per = crate::vectors::CHUNK_ROWS;
        let spans = (0..n).step_by(rows_per).map(|start| {
            let rows = rows_per.min(n - start);
            ([start as u64, 0], [rows as u64, dim as u64], rows * dim)
        });
        use half::slice::HalfFloatSliceExt;
        let table = match (precision, size) {
            (VectorPrecision::F16, 2) => {
                let mut chunks = Vec::with_capacity(n.div_ceil(rows_per));
                for (offset, count, len) in spans {
                    // Zeroed by the allocator (untouched pages for a large chunk), so the read is the
                    // only pass over it; `vec![f16::ZERO; len]` would write it all first.
                    let mut chunk: Vec<half::f16> = bytemuck::zeroed_vec(len);
                    d.read_slice_into(&offset, &count, &mut chunk)
                        .map_err(fmt)?;
                    chunks.push(chunk);
                }
                VectorTable::from_half_chunks(dim, chunks, present)
            }
            (VectorPrecision::F16, _) => {
                let (mut chunks, mut buf) = (Vec::with_capacity(n.div_ceil(rows_per)), Vec::new());
                for (offset, count, len) in spans {
                    buf.resize(len, 0f32);
                    d.read_slice_into(&offset, &count, &mut buf).map_err(fmt)?;
                    let mut chunk = vec![half::f16::ZERO; len];
                    chunk.convert_from_f32_slice(&buf);
                    chunks.push(chunk);
                }
                VectorTable::from_half_chunks(dim, chunks, present)
            }
            (VectorPrecision::F32, _) => {
                let (mut chunks, mut buf) = (Vec::with_capacity(n.div_ceil(rows_per)), Vec::new());
                for (offset, count, len) in spans {
                    let mut chunk = vec![0f32; len];
                    if size == 4 {
                        d.read_slice_into(&offset, &count, &mut chunk)
                            .map_err(fmt)?;
                    } else {
                        buf.resize(len, half::f16::ZERO);
                        d.read_slice_into(&offset, &count, &mut buf).map_err(fmt)?;
                        clawhdf5_ann::kernels::f16_to_f32(&buf, &mut chunk);
                    }
                    chunks.push(chunk);
                }
                VectorTable::from_chunks(dim, chunks, present)
            }
        };
        table.map_err(|e| self.corrupt(e))
    }
}
