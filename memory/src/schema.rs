//! The on-disk schema: how a store maps onto HDF5 groups, datasets and attributes (see `memory/SCHEMA.md`).
//! Reading validates everything; writing produces a complete snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, FormatError, H5File};
use half::f16;

use crate::config::{StoreConfig, VectorPrecision};
use crate::error::{MemoryError, Result};
use crate::integrity::{from_hex, hex, SignedManifest};
use crate::record::{Origin, Record, Source, Tier};
use crate::tokenize::TokenizerConfig;
use crate::vectors::VectorTable;

/// Schema version this build writes.
pub const SCHEMA_VERSION: u32 = 1;
/// Value of the root `clawhdf5_format` attribute that marks a store.
pub const FORMAT_MARK: &str = "clawhdf5 agent memory store";
/// Most rows per chunk of the record columns (small stores use smaller chunks, see [`chunk_rows`]).
pub const CHUNK_ROWS: u64 = 4096;
/// Record columns stored dictionary-encoded: a u32 index per row into `/dictionaries/NAME`.
pub const DICTIONARY_COLUMNS: [&str; 5] = ["source", "agent", "session", "origin_path", "tags"];

/// Rows per chunk for a column of `n` rows: a power of two between 64 and [`CHUNK_ROWS`].
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
    /// Incremented by every checkpoint; persisted indexes carry it to detect staleness.
    pub generation: u64,
    /// Highest WAL LSN folded into the file.
    pub checkpoint_lsn: u64,
    /// The id the next record gets.
    pub next_id: u64,
    /// Persisted configuration.
    pub config: StoreConfig,
}

/// One complete snapshot of a store.
#[derive(Clone, Debug, PartialEq)]
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
    /// Serialised HNSW graph (see `clawhdf5_ann::Hnsw::to_bytes`), stamped with the generation; `/index/hnsw`.
    pub hnsw: Option<Vec<u8>>,
}

const NONE_TIME: i64 = i64::MIN;

/// Chunked, resizable along rows (so checkpoints can append); 2-D columns keep their width fixed.
fn chunked(shape: &[u64], deflate: bool) -> DatasetOptions {
    let rows = chunk_rows(shape.first().copied().unwrap_or(0));
    let (chunk, max_shape) = match shape {
        [_, cols] => (vec![rows, (*cols).max(1)], vec![None, Some(*cols)]),
        _ => (vec![rows], vec![None]),
    };
    DatasetOptions {
        chunk: Some(chunk),
        deflate: if deflate { Some(4) } else { None },
        shuffle: deflate,
        max_shape: Some(max_shape),
        ..Default::default()
    }
}

fn str_attr(s: &str) -> Array {
    Array::scalar(Data::VarStr(vec![s.to_string()]))
}

/// Write `snap` as a new HDF5 file at `path` (written and fsynced; the caller renames it into place).
pub fn write_snapshot(path: &Path, snap: &Snapshot) -> Result<()> {
    let fmt = |source: FormatError| MemoryError::Format {
        path: path.to_path_buf(),
        source,
    };
    let mut w = FileWriter::new();
    let m = &snap.meta;
    w.set_attr("/", "clawhdf5_format", str_attr(FORMAT_MARK))
        .map_err(fmt)?;
    w.set_attr(
        "/",
        "schema_version",
        Array::scalar(Data::U32(vec![m.schema_version])),
    )
    .map_err(fmt)?;
    w.set_attr(
        "/",
        "created_at",
        Array::scalar(Data::I64(vec![m.created_at])),
    )
    .map_err(fmt)?;
    w.set_attr(
        "/",
        "generation",
        Array::scalar(Data::U64(vec![m.generation])),
    )
    .map_err(fmt)?;
    w.set_attr(
        "/",
        "checkpoint_lsn",
        Array::scalar(Data::U64(vec![m.checkpoint_lsn])),
    )
    .map_err(fmt)?;
    w.set_attr("/", "next_id", Array::scalar(Data::U64(vec![m.next_id])))
        .map_err(fmt)?;

    w.create_group("/config").map_err(fmt)?;
    for (name, value) in config_attrs(&m.config) {
        w.set_attr("/config", name, value).map_err(fmt)?;
    }

    w.create_group("/records").map_err(fmt)?;
    w.create_group("/dictionaries").map_err(fmt)?;
    for (name, array, deflate) in record_columns(&snap.records, &snap.vectors, &m.config)? {
        let (array, deflate) = if DICTIONARY_COLUMNS.contains(&name) {
            let (values, codes) = dictionary_encode(array);
            let opts = chunked(&values.shape, false);
            w.write_dataset(&format!("/dictionaries/{name}"), values, opts)
                .map_err(fmt)?;
            (codes, true)
        } else {
            (array, deflate)
        };
        let opts = chunked(&array.shape, deflate);
        w.write_dataset(&format!("/records/{name}"), array, opts)
            .map_err(fmt)?;
    }
    w.set_attr(
        "/records",
        "count",
        Array::scalar(Data::U64(vec![snap.records.len() as u64])),
    )
    .map_err(fmt)?;
    w.create_group("/extensions").map_err(fmt)?;
    for (name, bytes) in &snap.extensions {
        let opts = DatasetOptions {
            chunk: Some(vec![(bytes.len() as u64).clamp(1, 1 << 20)]),
            deflate: Some(4),
            max_shape: Some(vec![None]),
            ..Default::default()
        };
        w.write_dataset(
            &format!("/extensions/{name}"),
            Array::vector(Data::U8(bytes.clone())),
            opts,
        )
        .map_err(fmt)?;
    }
    if let Some(m) = &snap.manifest {
        write_manifest(&mut w, m).map_err(fmt)?;
    }
    if let Some(g) = &snap.hnsw {
        let opts = DatasetOptions {
            chunk: Some(vec![(g.len() as u64).clamp(1, 1 << 20)]),
            deflate: Some(1),
            max_shape: Some(vec![None]),
            ..Default::default()
        };
        w.write_dataset("/index/hnsw", Array::vector(Data::U8(g.clone())), opts)
            .map_err(fmt)?;
        w.set_attr(
            "/index/hnsw",
            "generation",
            Array::scalar(Data::U64(vec![m.generation])),
        )
        .map_err(fmt)?;
    }
    w.write_file(path).map_err(fmt)
}

/// Split a string column into distinct values (in order of first appearance) and a u32 code per row.
fn dictionary_encode(column: Array) -> (Array, Array) {
    let strings = match column.data {
        Data::VarStr(v) => v,
        _ => Vec::new(),
    };
    let mut index: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut values: Vec<String> = Vec::new();
    let codes: Vec<u32> = strings
        .iter()
        .map(|s| {
            *index.entry(s.as_str()).or_insert_with(|| {
                values.push(s.clone());
                (values.len() - 1) as u32
            })
        })
        .collect();
    (
        Array::vector(Data::VarStr(values)),
        Array::vector(Data::U32(codes)),
    )
}

/// Name of the signature scheme recorded in `/integrity`.
pub const INTEGRITY_ALGORITHM: &str = "ed25519(sha256-merkle(sha256-per-record))/v1";

fn write_manifest(w: &mut FileWriter, m: &SignedManifest) -> std::result::Result<(), FormatError> {
    w.create_group("/integrity")?;
    let n = m.records.len() as u64;
    w.write_dataset(
        "/integrity/ids",
        Array::vector(Data::U64(m.records.iter().map(|x| x.0).collect())),
        chunked(&[n], true),
    )?;
    let flat: Vec<u8> = m.records.iter().flat_map(|x| x.1).collect();
    w.write_dataset(
        "/integrity/record_sha256",
        Array::matrix(n, 32, Data::U8(flat))?,
        chunked(&[n, 32], false),
    )?;
    w.set_attr("/integrity", "algorithm", str_attr(INTEGRITY_ALGORITHM))?;
    w.set_attr("/integrity", "merkle_root", str_attr(&hex(&m.root)))?;
    w.set_attr("/integrity", "signature", str_attr(&hex(&m.signature)))?;
    w.set_attr("/integrity", "public_key", str_attr(&hex(&m.public_key)))?;
    w.set_attr(
        "/integrity",
        "generation",
        Array::scalar(Data::U64(vec![m.generation])),
    )?;
    Ok(())
}

fn config_attrs(c: &StoreConfig) -> Vec<(&'static str, Array)> {
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

/// The record columns: (name, data, compress?).
fn record_columns(
    records: &[Record],
    vectors: &VectorTable,
    config: &StoreConfig,
) -> Result<Vec<(&'static str, Array, bool)>> {
    let strs = |f: &dyn Fn(&Record) -> String| {
        Array::vector(Data::VarStr(records.iter().map(f).collect()))
    };
    let mut cols = vec![
        (
            "id",
            Array::vector(Data::U64(records.iter().map(|r| r.id).collect())),
            true,
        ),
        ("text", strs(&|r| r.text.clone()), false),
        ("source", strs(&|r| r.source.as_str().to_string()), false),
        ("agent", strs(&|r| r.agent.clone()), false),
        ("session", strs(&|r| r.session.clone()), false),
        (
            "origin_path",
            strs(&|r| {
                r.origin
                    .as_ref()
                    .map(|o| o.path.clone())
                    .unwrap_or_default()
            }),
            false,
        ),
        (
            "origin_start_line",
            Array::vector(Data::U32(
                records
                    .iter()
                    .map(|r| r.origin.as_ref().map_or(0, |o| o.start_line))
                    .collect(),
            )),
            true,
        ),
        (
            "origin_end_line",
            Array::vector(Data::U32(
                records
                    .iter()
                    .map(|r| r.origin.as_ref().map_or(0, |o| o.end_line))
                    .collect(),
            )),
            true,
        ),
        (
            "tags",
            strs(&|r| serde_json::to_string(&r.tags).unwrap_or_else(|_| "[]".into())),
            false,
        ),
        (
            "event_time",
            Array::vector(Data::I64(
                records
                    .iter()
                    .map(|r| r.event_time.unwrap_or(NONE_TIME))
                    .collect(),
            )),
            true,
        ),
        (
            "created_at",
            Array::vector(Data::I64(records.iter().map(|r| r.created_at).collect())),
            true,
        ),
        (
            "importance",
            Array::vector(Data::F32(records.iter().map(|r| r.importance).collect())),
            true,
        ),
        (
            "access_count",
            Array::vector(Data::U32(records.iter().map(|r| r.access_count).collect())),
            true,
        ),
        (
            "last_access",
            Array::vector(Data::I64(records.iter().map(|r| r.last_access).collect())),
            true,
        ),
        (
            "tier",
            Array::vector(Data::U8(records.iter().map(|r| r.tier.code()).collect())),
            true,
        ),
        (
            "supersedes",
            Array::vector(Data::U64(
                records.iter().map(|r| r.supersedes.unwrap_or(0)).collect(),
            )),
            true,
        ),
        (
            "superseded_by",
            Array::vector(Data::U64(
                records
                    .iter()
                    .map(|r| r.superseded_by.unwrap_or(0))
                    .collect(),
            )),
            true,
        ),
        (
            "tombstone",
            Array::vector(Data::U8(
                records.iter().map(|r| u8::from(r.tombstone)).collect(),
            )),
            true,
        ),
    ];
    if let Some(dim) = config.embedding_dim {
        let n = records.len() as u64;
        if vectors.dim() != dim as usize || vectors.rows() != records.len() {
            return Err(MemoryError::InvalidInput(format!(
                "vector table is {}x{}, store has {} rows of dimension {dim}",
                vectors.rows(),
                vectors.dim(),
                records.len()
            )));
        }
        let data = match config.vector_precision {
            VectorPrecision::F16 => {
                Data::F16(vectors.data().iter().map(|&x| f16::from_f32(x)).collect())
            }
            VectorPrecision::F32 => Data::F32(vectors.data().to_vec()),
        };
        let matrix = Array::matrix(n, u64::from(dim), data)
            .map_err(|e| MemoryError::InvalidInput(e.to_string()))?;
        cols.push(("embedding", matrix, false));
        let has = (0..records.len())
            .map(|i| u8::from(vectors.has(i)))
            .collect();
        cols.push(("has_embedding", Array::vector(Data::U8(has)), true));
    }
    Ok(cols)
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

    fn column(&self, name: &str, n: usize) -> Result<Array> {
        let p = format!("/records/{name}");
        let a = self
            .file
            .dataset(&p)
            .and_then(|d| d.read())
            .map_err(|source| match source {
                FormatError::NotFound(_) => self.corrupt(format!("dataset {p} is missing")),
                source => MemoryError::Format {
                    path: self.path.to_path_buf(),
                    source,
                },
            })?;
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
            config,
        };
        let (records, vectors) = self.read_records(&meta.config)?;
        let extensions = self.read_extensions()?;
        let manifest = self.read_manifest()?;
        // A graph that cannot be read is rebuilt, never fatal.
        let hnsw = self
            .file
            .dataset("/index/hnsw")
            .and_then(|d| d.read())
            .ok()
            .and_then(|a| a.as_u8().map(<[u8]>::to_vec));
        Ok(Snapshot {
            meta,
            records,
            vectors,
            extensions,
            manifest,
            hnsw,
        })
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

    fn read_records(&self, config: &StoreConfig) -> Result<(Vec<Record>, VectorTable)> {
        let n = usize::try_from(self.attr_u64("/records", "count")?)
            .map_err(|_| self.corrupt("count out of range"))?;
        let bad = |name: &str| self.corrupt(format!("dataset /records/{name} has the wrong type"));
        macro_rules! col {
            ($name:literal, $acc:ident) => {{
                let a = self.column($name, n)?;
                a.$acc().map(|s| s.to_vec()).ok_or_else(|| bad($name))?
            }};
        }
        let ids: Vec<u64> = col!("id", as_u64);
        let texts: Vec<String> = col!("text", as_strings);
        let sources = self.dictionary_column("source", n)?;
        let agents = self.dictionary_column("agent", n)?;
        let sessions = self.dictionary_column("session", n)?;
        let opaths = self.dictionary_column("origin_path", n)?;
        let ostart: Vec<u32> = col!("origin_start_line", as_u32);
        let oend: Vec<u32> = col!("origin_end_line", as_u32);
        let tags = self.dictionary_column("tags", n)?;
        let event: Vec<i64> = col!("event_time", as_i64);
        let created: Vec<i64> = col!("created_at", as_i64);
        let importance: Vec<f32> = col!("importance", as_f32);
        let access: Vec<u32> = col!("access_count", as_u32);
        let last_access: Vec<i64> = col!("last_access", as_i64);
        let tier: Vec<u8> = col!("tier", as_u8);
        let supersedes: Vec<u64> = col!("supersedes", as_u64);
        let superseded_by: Vec<u64> = col!("superseded_by", as_u64);
        let tomb: Vec<u8> = col!("tombstone", as_u8);
        let vectors = match config.embedding_dim {
            Some(dim) => self.read_embeddings(n, dim as usize)?,
            None => VectorTable::new(0),
        };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let tag_list: Vec<String> = serde_json::from_str(&tags[i])
                .map_err(|e| self.corrupt(format!("tags of row {i}: {e}")))?;
            out.push(Record {
                id: ids[i],
                text: texts[i].clone(),
                source: Source::parse(&sources[i]),
                agent: agents[i].clone(),
                session: sessions[i].clone(),
                origin: if opaths[i].is_empty() {
                    None
                } else {
                    Some(Origin {
                        path: opaths[i].clone(),
                        start_line: ostart[i],
                        end_line: oend[i],
                    })
                },
                tags: tag_list,
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
        Ok((out, vectors))
    }

    /// A dictionary-encoded string column, decoded; every code is bounds-checked.
    fn dictionary_column(&self, name: &str, n: usize) -> Result<Vec<String>> {
        let codes = self.column(name, n)?;
        let codes = codes
            .as_u32()
            .ok_or_else(|| self.corrupt(format!("/records/{name} is not u32 codes")))?;
        let p = format!("/dictionaries/{name}");
        let values =
            self.file
                .dataset(&p)
                .and_then(|d| d.read())
                .map_err(|source| match source {
                    FormatError::NotFound(_) => self.corrupt(format!("dataset {p} is missing")),
                    source => MemoryError::Format {
                        path: self.path.to_path_buf(),
                        source,
                    },
                })?;
        let values = values
            .as_strings()
            .ok_or_else(|| self.corrupt(format!("{p} is not strings")))?;
        codes
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                values.get(c as usize).cloned().ok_or_else(|| {
                    self.corrupt(format!("row {i} of /records/{name} points past {p}"))
                })
            })
            .collect()
    }

    fn read_embeddings(&self, n: usize, dim: usize) -> Result<VectorTable> {
        let a = self.column("embedding", n)?;
        if a.shape.get(1).copied() != Some(dim as u64) {
            return Err(self.corrupt(format!(
                "embedding has shape {:?}, expected [{n}, {dim}]",
                a.shape
            )));
        }
        let flat: Vec<f32> = match a.data {
            Data::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            Data::F32(v) => v,
            _ => return Err(self.corrupt("embedding is neither f16 nor f32")),
        };
        let has = self.column("has_embedding", n)?;
        let has = has
            .as_u8()
            .ok_or_else(|| self.corrupt("has_embedding is not u8"))?;
        let present: Vec<bool> = has.iter().map(|&h| h != 0).collect();
        VectorTable::from_parts(dim, flat, present).map_err(|e| self.corrupt(e))
    }
}
