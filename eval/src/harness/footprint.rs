//! `footprint`: what a store costs on disk and in memory. File bytes per record with realistic text against
//! the payload (f16 vectors + text bytes), the file broken down per HDF5 dataset (walked with the format
//! crate), and the resident memory a reopened store adds (VmRSS around reopen + first query, in a fresh
//! process) against its raw f32 vectors.

use std::path::{Path, PathBuf};

use clawhdf5_ann::rng::SplitMix64;
use clawhdf5_format::messages::Layout;
use clawhdf5_format::{Datatype, EntryKind, H5File};
use serde_json::json;

use super::corpus::Corpus;
use super::error::{io_at, HarnessError, Result};
use super::ingest::{self, Ingested};
use super::measure::{fig, met, size_label, thousands};
use super::probe::{run_probe, write_queries, Probe, ProbeQuery, ProbeResult};
use super::report::{HarnessReport, Table};
use super::vectors;

/// Settings of a `footprint` run.
#[derive(Clone, Debug)]
pub struct FootprintOptions {
    /// Store sizes.
    pub sizes: Vec<usize>,
    /// Smoke size.
    pub smoke: bool,
    /// LoCoMo folder.
    pub locomo: PathBuf,
    /// Folder for the stores (a temporary folder when absent).
    pub work_dir: Option<PathBuf>,
    /// Leave the stores in `work_dir` instead of removing them.
    pub keep_stores: bool,
}

/// Storage of one dataset.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DatasetBytes {
    /// Path in the file.
    pub path: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element type, briefly.
    pub dtype: String,
    /// `compact`, `contiguous` or `chunked`.
    pub layout: String,
    /// Filters (deflate, shuffle...), by id.
    pub filters: Vec<u16>,
    /// Bytes of raw data as stored (after filters).
    pub stored: u64,
    /// For variable-length strings: bytes of their global-heap objects (16-byte header + data padded to 8).
    pub heap: u64,
}

fn dtype_name(d: &Datatype) -> String {
    match d {
        Datatype::Int { size, signed, .. } => {
            format!("{}{}", if *signed { "i" } else { "u" }, size * 8)
        }
        Datatype::Float { size, .. } => format!("f{}", size * 8),
        Datatype::VarStr { .. } => "vlen string".into(),
        Datatype::FixedStr { size, .. } => format!("string[{size}]"),
        other => format!("{other:?}").chars().take(24).collect(),
    }
}

/// Every dataset under `group` (recursively), with the bytes its data occupies.
pub fn dataset_bytes(file: &H5File, group: &str) -> Result<Vec<DatasetBytes>> {
    let mut out = Vec::new();
    for e in file.list(group)? {
        let path = if group == "/" {
            format!("/{}", e.name)
        } else {
            format!("{group}/{}", e.name)
        };
        match e.kind {
            EntryKind::Group => out.extend(dataset_bytes(file, &path)?),
            EntryKind::Dataset => {
                let ds = file.dataset(&path)?;
                let (layout, stored) = match ds.layout() {
                    Layout::Compact(b) => ("compact", b.len() as u64),
                    Layout::Contiguous { size, .. } => ("contiguous", *size),
                    Layout::Chunked { .. } => (
                        "chunked",
                        ds.chunk_entries()?.iter().map(|c| c.size).sum::<u64>(),
                    ),
                    // Its elements are stored in its source datasets.
                    Layout::Virtual { .. } => ("virtual", 0),
                };
                let heap = if matches!(ds.dtype(), Datatype::VarStr { .. }) {
                    let a = ds.read()?;
                    a.as_strings().map_or(0, |v| {
                        v.iter()
                            .map(|s| 16 + (s.len() as u64).div_ceil(8) * 8)
                            .sum::<u64>()
                    })
                } else {
                    0
                };
                out.push(DatasetBytes {
                    path,
                    shape: ds.shape().to_vec(),
                    dtype: dtype_name(ds.dtype()),
                    layout: layout.into(),
                    filters: ds.filters().iter().map(|f| f.id).collect(),
                    stored,
                    heap,
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Everything measured at one size.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FootprintResult {
    /// Records asked for.
    pub size: usize,
    /// The ingest.
    pub ingest: Ingested,
    /// Bytes of the HDF5 file after checkpoint and close.
    pub file_bytes: u64,
    /// Superseded data incremental checkpoints left in the file (the store's `dead_bytes` attribute).
    pub dead_bytes: u64,
    /// f16 vectors + UTF-8 text bytes.
    pub payload_bytes: u64,
    /// Raw f32 vectors (records × dim × 4).
    pub raw_f32_bytes: u64,
    /// Per-dataset storage.
    pub datasets: Vec<DatasetBytes>,
    /// The reopen in a fresh process.
    pub probe: ProbeResult,
}

impl FootprintResult {
    /// File bytes / payload bytes.
    pub fn file_ratio(&self) -> f64 {
        self.file_bytes as f64 / self.payload_bytes.max(1) as f64
    }

    /// Resident bytes added by reopen + first query.
    pub fn rss_delta(&self) -> u64 {
        self.probe
            .rss_after_first
            .saturating_sub(self.probe.rss_before)
    }

    /// Resident delta / raw f32 vectors.
    pub fn rss_ratio(&self) -> f64 {
        self.rss_delta() as f64 / self.raw_f32_bytes.max(1) as f64
    }
}

/// Measure one size in `dir`.
pub fn measure_size(
    corpus: &Corpus,
    size: usize,
    dir: &Path,
    keep: bool,
) -> Result<FootprintResult> {
    let recs = corpus.records(size)?;
    let vecs = vectors::base(size);
    let path = dir.join(format!("footprint-{size}.h5"));
    eprintln!("footprint: {size} records: ingest");
    let mut store = ingest::fresh_store(&path)?;
    let ing = ingest::batch(&mut store, &recs, &vecs)?;
    store.close()?;
    let file_bytes = std::fs::metadata(&path).map_err(io_at(&path))?.len();
    let dim = vectors::DIM as u64;
    let n = ing.records as u64;
    let payload_bytes = n * dim * 2 + ing.text_bytes;
    let raw_f32_bytes = n * dim * 4;
    eprintln!("footprint: {size} records: per-dataset breakdown");
    let (datasets, dead_bytes) = {
        let f = H5File::open(&path)?;
        let dead = f
            .attr("/", "dead_bytes")
            .ok()
            .and_then(|a| a.as_u64().and_then(|v| v.first().copied()))
            .unwrap_or(0);
        (dataset_bytes(&f, "/")?, dead)
    };
    let mut rng = SplitMix64::new(11);
    let qs: Vec<ProbeQuery> = (0..20)
        .map(|i| ProbeQuery {
            text: corpus.question(i).to_string(),
            embedding: vectors::near(vecs.vector(rng.below(size as u64) as u32), 0.3, &mut rng),
        })
        .collect();
    let qpath = dir.join(format!("footprint-queries-{size}.json"));
    write_queries(&qpath, &qs)?;
    eprintln!("footprint: {size} records: reopen in a fresh process");
    let probe = run_probe(&Probe {
        store: &path,
        queries: &qpath,
        count: 10,
        k: 10,
        late: false,
    })?;
    if !keep {
        ingest::remove_store(&path);
        let _ = std::fs::remove_file(qpath);
    }
    Ok(FootprintResult {
        size,
        ingest: ing,
        file_bytes,
        dead_bytes,
        payload_bytes,
        raw_f32_bytes,
        datasets,
        probe,
    })
}

fn mib(b: u64) -> String {
    fig(b as f64 / 1048576.0)
}

fn summary_table(rs: &[FootprintResult]) -> Table {
    let mut t = Table::new(
        "Store footprint — file and resident memory",
        &[
            "records",
            "text bytes/record",
            "file bytes/record",
            "payload bytes/record (f16 + text)",
            "file / payload (goal ≤ 1.1×)",
            "",
            "resident delta, reopen + first query (MiB)",
            "raw f32 vectors (MiB)",
            "resident / raw f32 (goal ≤ 1.8×)",
            "",
        ],
    );
    for r in rs {
        let n = r.ingest.records.max(1) as f64;
        t.row(vec![
            thousands(r.ingest.records as u64),
            fig(r.ingest.text_bytes as f64 / n),
            fig(r.file_bytes as f64 / n),
            fig(r.payload_bytes as f64 / n),
            format!("{:.3}×", r.file_ratio()),
            met(r.file_ratio() <= 1.1),
            mib(r.rss_delta()),
            mib(r.raw_f32_bytes),
            format!("{:.2}×", r.rss_ratio()),
            met(r.rss_ratio() <= 1.8),
        ]);
    }
    t.notes.push(format!(
        "Records: two LoCoMo turns each (distinct), session id and date; vectors: {}, stored as f16 (the \
         default precision). The file is measured after a checkpoint and close. Resident memory: VmRSS of a \
         fresh process (`harness-probe`) before `Store::open` and after the first hybrid query; the store keeps \
         its vectors in memory in the store's precision (f16 here), plus an int8 copy and the HNSW graph above \
         its exact-search threshold.",
        vectors::describe()
    ));
    t
}

fn breakdown_table(r: &FootprintResult) -> Table {
    let mut t = Table::new(
        format!(
            "File bytes per dataset — {} records, file {} MiB",
            thousands(r.ingest.records as u64),
            mib(r.file_bytes)
        ),
        &[
            "dataset",
            "type",
            "shape",
            "layout, filters",
            "stored bytes",
            "vlen heap bytes",
            "bytes/record",
            "share of file",
        ],
    );
    let n = r.ingest.records.max(1) as f64;
    let mut ds = r.datasets.clone();
    ds.sort_by_key(|d| std::cmp::Reverse(d.stored + d.heap));
    let mut accounted = 0u64;
    for d in &ds {
        let total = d.stored + d.heap;
        accounted += total;
        let filters = if d.filters.is_empty() {
            String::new()
        } else {
            format!(
                ", filters {}",
                d.filters
                    .iter()
                    .map(|f| match f {
                        1 => "deflate".to_string(),
                        2 => "shuffle".to_string(),
                        3 => "fletcher32".to_string(),
                        x => x.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("+")
            )
        };
        t.row(vec![
            format!("`{}`", d.path),
            d.dtype.clone(),
            format!("{:?}", d.shape),
            format!("{}{filters}", d.layout),
            thousands(d.stored),
            if d.heap > 0 {
                thousands(d.heap)
            } else {
                "".into()
            },
            fig(total as f64 / n),
            format!("{:.1}%", 100.0 * total as f64 / r.file_bytes.max(1) as f64),
        ]);
    }
    t.row(vec![
        "superseded data".into(),
        "".into(),
        "".into(),
        "partial chunks rewritten by later appends (root attribute `dead_bytes`)".into(),
        thousands(r.dead_bytes),
        "".into(),
        fig(r.dead_bytes as f64 / n),
        format!(
            "{:.1}%",
            100.0 * r.dead_bytes as f64 / r.file_bytes.max(1) as f64
        ),
    ]);
    let rest = r.file_bytes.saturating_sub(accounted + r.dead_bytes);
    t.row(vec![
        "everything else".into(),
        "".into(),
        "".into(),
        "object headers, chunk indexes, heap collection headers and slack, rewritten headers"
            .into(),
        thousands(rest),
        "".into(),
        fig(rest as f64 / n),
        format!("{:.1}%", 100.0 * rest as f64 / r.file_bytes.max(1) as f64),
    ]);
    t.notes.push(
        "Stored bytes: the dataset's raw data as written (sum of its chunks after filters). Variable-length \
         strings keep only 16-byte references in the dataset; their text lives in global-heap objects, \
         counted here from the decoded strings as the format lays them out (16-byte object header + data \
         padded to 8 bytes)."
            .into(),
    );
    t
}

/// Run the harness and write `OUT/footprint.{md,json}`.
pub fn run(o: &FootprintOptions, out: &Path) -> Result<()> {
    if o.sizes.is_empty() || o.sizes.contains(&0) {
        return Err(HarnessError::Option(
            "--sizes needs at least one size above 0".into(),
        ));
    }
    let corpus = Corpus::load(&o.locomo)?;
    let (dir, _tmp) = super::measure::work_dir(&o.work_dir)?;
    let mut results = Vec::new();
    for &n in &o.sizes {
        results.push(measure_size(&corpus, n, &dir, o.keep_stores)?);
    }
    let mut rep = HarnessReport::new("footprint", o.smoke);
    rep.notes.push(format!(
        "Sizes: {}.",
        o.sizes
            .iter()
            .map(|&n| size_label(n))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    rep.tables.push(summary_table(&results));
    for r in &results {
        rep.tables.push(breakdown_table(r));
    }
    rep.data = json!({ "sizes": serde_json::to_value(&results)
        .map_err(|e| HarnessError::Input(format!("cannot encode results: {e}")))? });
    rep.finish(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter};

    #[test]
    fn walks_datasets_and_counts_heap_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.h5");
        let mut w = FileWriter::new();
        w.create_group("/g").unwrap();
        w.write_dataset(
            "/g/x",
            Array::vector(Data::F64(vec![1.0; 100])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.write_dataset(
            "/s",
            Array::vector(Data::VarStr(vec!["abc".into(), "0123456789".into()])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.write_file(&p).unwrap();
        let f = H5File::open(&p).unwrap();
        let ds = dataset_bytes(&f, "/").unwrap();
        let x = ds.iter().find(|d| d.path == "/g/x").unwrap();
        assert_eq!(x.stored, 800);
        assert_eq!(x.dtype, "f64");
        let s = ds.iter().find(|d| d.path == "/s").unwrap();
        assert_eq!(s.heap, (16 + 8) + (16 + 16));
    }
}
