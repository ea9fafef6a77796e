//! `read-harness`: partial reads of a 2-D f64 dataset (4096 × 2048 by default) with the format crate, stored
//! three ways (chunked + deflate, chunked, contiguous): the full dataset, a 64 × 64 and a 512 × 512 window, one
//! row and one column — to show that a read costs in proportion to what it selects (or, chunked, to the
//! chunks it touches). When h5py is importable, the same reads of the same file are timed with h5py in the
//! same run (`scripts/bench/harness_read_h5py.py`) and shown as ratios.

use std::path::{Path, PathBuf};
use std::process::Command;

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, H5File};
use serde_json::json;

use super::error::{HarnessError, Result};
use super::measure::{fig, median, thousands};
use super::report::{HarnessReport, Table};

/// Settings of a `read-harness` run.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Rows of the dataset.
    pub rows: u64,
    /// Columns of the dataset.
    pub cols: u64,
    /// Chunk shape of the chunked layouts.
    pub chunk: [u64; 2],
    /// Keep timing a read until this many seconds have passed (after `min_reps`).
    pub min_seconds: f64,
    /// Fewest timed repetitions per read.
    pub min_reps: usize,
    /// Most timed repetitions per read.
    pub max_reps: usize,
    /// Smoke size.
    pub smoke: bool,
    /// Folder for the file (a temporary folder when absent).
    pub work_dir: Option<PathBuf>,
    /// The h5py script.
    pub h5py_script: PathBuf,
    /// Python interpreter.
    pub python: String,
}

/// The h5py script in this repository.
pub fn default_h5py_script() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/bench/harness_read_h5py.py"
    ))
}

/// The three layouts: (dataset path, label, options).
fn layouts(chunk: [u64; 2]) -> Vec<(&'static str, &'static str, DatasetOptions)> {
    vec![
        (
            "/chunked_deflate",
            "chunked + deflate",
            DatasetOptions {
                chunk: Some(chunk.to_vec()),
                deflate: Some(4),
                shuffle: true,
                ..DatasetOptions::default()
            },
        ),
        (
            "/chunked",
            "chunked",
            DatasetOptions {
                chunk: Some(chunk.to_vec()),
                ..DatasetOptions::default()
            },
        ),
        ("/contiguous", "contiguous", DatasetOptions::default()),
    ]
}

/// A selection: name, start, count.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Selection {
    /// Label.
    pub name: String,
    /// First element.
    pub start: [u64; 2],
    /// Extent.
    pub count: [u64; 2],
}

fn selections(rows: u64, cols: u64) -> Vec<Selection> {
    let win = |n: u64, r: u64, c: u64| Selection {
        name: format!("{n}×{n} window"),
        start: [r.min(rows - n.min(rows)), c.min(cols - n.min(cols))],
        count: [n.min(rows), n.min(cols)],
    };
    vec![
        Selection {
            name: "full dataset".into(),
            start: [0, 0],
            count: [rows, cols],
        },
        win(512, rows / 4, cols * 3 / 8),
        win(64, rows / 4 + 7, cols / 4 + 5),
        Selection {
            name: "one row".into(),
            start: [rows / 2, 0],
            count: [1, cols],
        },
        Selection {
            name: "one column".into(),
            start: [0, cols / 2],
            count: [rows, 1],
        },
    ]
}

/// Deterministic, moderately compressible values: a smooth field plus a little noise.
fn values(rows: u64, cols: u64) -> Vec<f64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::with_capacity((rows * cols) as usize);
    for r in 0..rows {
        for c in 0..cols {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let noise = (state >> 40) as f64 / (1u64 << 24) as f64 * 1e-3;
            out.push((r as f64 * 0.01).sin() * (c as f64 * 0.013).cos() + noise);
        }
    }
    out
}

/// One timed read.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReadRow {
    /// Layout label.
    pub layout: String,
    /// Dataset path.
    pub dataset: String,
    /// Selection label.
    pub selection: String,
    /// Selected bytes.
    pub selected_bytes: u64,
    /// Stored bytes of the chunks the selection touches (chunked) or selected bytes (contiguous).
    pub touched_bytes: u64,
    /// Chunks touched (0 for contiguous).
    pub chunks: usize,
    /// Median ms, format crate.
    pub ms: f64,
    /// Median ms, h5py, when measured.
    pub h5py_ms: Option<f64>,
}

fn time_read(file: &H5File, path: &str, s: &Selection, o: &ReadOptions) -> Result<f64> {
    let mut times = Vec::new();
    let began = std::time::Instant::now();
    loop {
        let t = std::time::Instant::now();
        let ds = file.dataset(path)?;
        let a = ds.read_slice(&s.start, &s.count)?;
        times.push(t.elapsed().as_secs_f64());
        if a.shape != s.count {
            return Err(HarnessError::Input(format!(
                "{path} {}: read shape {:?}",
                s.name, a.shape
            )));
        }
        std::hint::black_box(a);
        let n = times.len();
        if n >= o.max_reps || (n >= o.min_reps && began.elapsed().as_secs_f64() >= o.min_seconds) {
            break;
        }
    }
    Ok(median(&times) * 1e3)
}

fn touched(file: &H5File, path: &str, s: &Selection) -> Result<(u64, usize)> {
    let ds = file.dataset(path)?;
    let Some(chunk) = ds.chunk().map(|c| c.to_vec()) else {
        return Ok((s.count[0] * s.count[1] * 8, 0));
    };
    let mut bytes = 0;
    let mut n = 0;
    for e in ds.chunk_entries()? {
        let overlaps = (0..2).all(|d| {
            let (lo, hi) = (e.offset[d], e.offset[d] + chunk[d]);
            lo < s.start[d] + s.count[d] && s.start[d] < hi
        });
        if overlaps {
            bytes += e.size;
            n += 1;
        }
    }
    Ok((bytes, n))
}

/// h5py timings `{dataset: {selection: ms}}`, or why there are none.
fn h5py_times(
    o: &ReadOptions,
    file: &Path,
    sels: &[Selection],
    datasets: &[&str],
) -> std::result::Result<(serde_json::Value, String), String> {
    if !o.h5py_script.exists() {
        return Err(format!("{} not found", o.h5py_script.display()));
    }
    let probe = Command::new(&o.python)
        .args(["-c", "import h5py"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", o.python))?;
    if !probe.status.success() {
        return Err(format!("{} cannot import h5py", o.python));
    }
    let spec = json!({
        "datasets": datasets,
        "selections": sels,
        "min_seconds": o.min_seconds,
        "min_reps": o.min_reps,
        "max_reps": o.max_reps,
    });
    let out = Command::new(&o.python)
        .arg(&o.h5py_script)
        .arg(file)
        .arg(spec.to_string())
        .output()
        .map_err(|e| format!("cannot run the h5py script: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the h5py script failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("unreadable h5py script output: {e}"))?;
    let versions = format!(
        "h5py {}, HDF5 {}",
        v["h5py"].as_str().unwrap_or("?"),
        v["hdf5"].as_str().unwrap_or("?")
    );
    Ok((v["ms"].clone(), versions))
}

/// Run the harness and write `OUT/read-harness.{md,json}`.
pub fn run(o: &ReadOptions, out: &Path) -> Result<()> {
    if o.rows == 0 || o.cols == 0 || o.chunk.contains(&0) {
        return Err(HarnessError::Option(
            "dataset and chunk dimensions must be above 0".into(),
        ));
    }
    let (dir, _tmp) = super::measure::work_dir(&o.work_dir)?;
    let path = dir.join("read-harness.h5");
    eprintln!("read-harness: writing {}×{} f64 three ways", o.rows, o.cols);
    let data = values(o.rows, o.cols);
    let mut w = FileWriter::new();
    let lay = layouts(o.chunk);
    for (p, _, opts) in &lay {
        w.write_dataset(
            p,
            Array::matrix(o.rows, o.cols, Data::F64(data.clone()))?,
            opts.clone(),
        )?;
    }
    drop(data);
    w.write_file(&path)?;
    drop(w);
    let file = H5File::open(&path)?;
    let sels = selections(o.rows, o.cols);
    let datasets: Vec<&str> = lay.iter().map(|l| l.0).collect();
    eprintln!("read-harness: timing h5py (when importable)");
    let h5py = h5py_times(o, &path, &sels, &datasets);
    eprintln!("read-harness: timing the format crate");
    let mut rows = Vec::new();
    for (p, label, _) in &lay {
        for s in &sels {
            let (touched_bytes, chunks) = touched(&file, p, s)?;
            let ms = time_read(&file, p, s, o)?;
            let h5py_ms = h5py
                .as_ref()
                .ok()
                .and_then(|(v, _)| v[*p][&s.name].as_f64());
            rows.push(ReadRow {
                layout: label.to_string(),
                dataset: p.to_string(),
                selection: s.name.clone(),
                selected_bytes: s.count[0] * s.count[1] * 8,
                touched_bytes,
                chunks,
                ms,
                h5py_ms,
            });
        }
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    let mut t = Table::new(
        format!(
            "Partial reads of a {} × {} f64 dataset (chunks {} × {})",
            thousands(o.rows),
            thousands(o.cols),
            o.chunk[0],
            o.chunk[1]
        ),
        &[
            "layout",
            "selection",
            "selected KiB",
            "stored KiB touched (chunks)",
            "format crate (ms)",
            "MB/s selected",
            "time / full read",
            "selection / full",
            "h5py (ms)",
            "h5py / ours",
        ],
    );
    for r in &rows {
        let full = rows
            .iter()
            .find(|x| x.dataset == r.dataset && x.selection == "full dataset");
        let (full_ms, full_bytes) = full.map_or((1.0, 1), |f| (f.ms, f.selected_bytes));
        t.row(vec![
            r.layout.clone(),
            r.selection.clone(),
            fig(r.selected_bytes as f64 / 1024.0),
            if r.chunks > 0 {
                format!("{} ({})", fig(r.touched_bytes as f64 / 1024.0), r.chunks)
            } else {
                fig(r.touched_bytes as f64 / 1024.0)
            },
            fig(r.ms),
            fig(r.selected_bytes as f64 / 1e6 / (r.ms / 1e3).max(1e-12)),
            format!("{:.4}", r.ms / full_ms.max(1e-12)),
            format!("{:.4}", r.selected_bytes as f64 / full_bytes.max(1) as f64),
            r.h5py_ms.map_or("absent".into(), fig),
            r.h5py_ms
                .map_or("absent".into(), |h| format!("{:.2}×", h / r.ms.max(1e-12))),
        ]);
    }
    t.notes.push(format!(
        "Median of {}–{} timed reads each (at least {} s per read); every read opens the dataset anew, so no \
         decoded chunk is reused between reads; the operating system's page cache is warm. `time / full read` \
         against `selection / full` shows the cost following the selection (chunked: the chunks it touches). \
         Chunked + deflate uses shuffle and deflate level 4.",
        o.min_reps, o.max_reps, o.min_seconds
    ));
    match &h5py {
        Ok((_, versions)) => t.notes.push(format!(
            "h5py: the same reads of the same file in the same run ({versions}; `{}`); `h5py / ours` above 1 \
             means the format crate is faster.",
            "scripts/bench/harness_read_h5py.py"
        )),
        Err(why) => t
            .notes
            .push(format!("h5py column absent: {why}.")),
    }
    let mut rep = HarnessReport::new("read-harness", o.smoke);
    rep.tables.push(t);
    rep.data = json!({
        "rows": serde_json::to_value(&rows).map_err(|e| HarnessError::Input(e.to_string()))?,
        "h5py": match &h5py { Ok((_, v)) => json!(v), Err(e) => json!({"absent": e}) },
    });
    rep.finish(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_fit_small_datasets() {
        for s in selections(100, 40) {
            assert!(s.start[0] + s.count[0] <= 100, "{s:?}");
            assert!(s.start[1] + s.count[1] <= 40, "{s:?}");
        }
    }
}
