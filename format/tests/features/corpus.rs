//! ../shared/hdf5-corpus: every file reads with values equal to h5py's, or fails with a clear
//! Unsupported error naming the feature — never a panic.

use crate::common;

use clawhdf5_format::{EntryKind, H5File};
use std::path::PathBuf;

fn corpus_files() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for sub in ["h5py", "pytables"] {
        let dir = common::shared().join("hdf5-corpus").join(sub);
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                v.push(e.path());
            }
        }
    }
    v.sort();
    v
}

/// Visits every object reachable from "/" (depth-limited), reading datasets and attributes.
fn walk(f: &H5File, path: &str, depth: usize, errors: &mut Vec<String>) {
    if depth > 32 {
        return;
    }
    if let Ok(names) = f.attr_names(path) {
        for n in names {
            if let Err(e) = f.attr(path, &n) {
                errors.push(format!("{path}@{n}: {e}"));
            }
        }
    }
    let entries = match f.list(path) {
        Ok(e) => e,
        Err(e) => {
            errors.push(format!("{path}: {e}"));
            return;
        }
    };
    for e in entries {
        let child = format!("{}/{}", path.trim_end_matches('/'), e.name);
        match e.kind {
            EntryKind::Group => walk(f, &child, depth + 1, errors),
            EntryKind::Dataset => {
                if let Err(err) = f.dataset(&child).and_then(|d| d.read()) {
                    errors.push(format!("{child}: {err}"));
                }
                if let Ok(names) = f.attr_names(&child) {
                    for n in names {
                        if let Err(err) = f.attr(&child, &n) {
                            errors.push(format!("{child}@{n}: {err}"));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn corpus_never_panics_and_errors_are_clear() {
    let files = corpus_files();
    if files.is_empty() {
        assert!(!common::in_ci(), "corpus missing under CI");
        eprintln!("SKIP: corpus not found");
        return;
    }
    let mut report = Vec::new();
    for p in &files {
        let r = std::panic::catch_unwind(|| {
            let mut errors = Vec::new();
            match H5File::open(p) {
                Ok(f) => walk(&f, "/", 0, &mut errors),
                Err(e) => errors.push(format!("open: {e}")),
            }
            errors
        });
        match r {
            Ok(errors) => {
                for e in errors {
                    report.push(format!("{}: {e}", p.display()));
                }
            }
            Err(_) => panic!("panic while reading {}", p.display()),
        }
    }
    eprintln!(
        "{} corpus files, {} errors:\n{}",
        files.len(),
        report.len(),
        report.join("\n")
    );
}

#[test]
fn corpus_values_equal_h5py() {
    if !common::have_python_module("h5py") {
        return;
    }
    let mut bad = Vec::new();
    let mut unsup = Vec::new();
    let files = corpus_files();
    let dumps = common::h5py_dump_many(&files);
    for p in files {
        let (b, u) = common::compare_with_dump(&p, &dumps[p.to_string_lossy().as_ref()]);
        bad.extend(b);
        unsup.extend(u);
    }
    eprintln!("unsupported ({}):\n{}", unsup.len(), unsup.join("\n"));
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// PyTables' LZO-compressed tables (plain and shuffled, LZO1 and LZO2 era files): every variant decodes, to
/// the rows PyTables' test suite wrote (var2 = i, var3 = 100 - i), in each of the tables of the file.
#[test]
fn pytables_lzo_tables_decode_to_their_rows() {
    let dir = common::shared().join("hdf5-corpus").join("pytables");
    if !dir.exists() {
        return;
    }
    for name in [
        "Tables_lzo1.h5",
        "Tables_lzo2.h5",
        "Tables_lzo1_shuffle.h5",
        "Tables_lzo2_shuffle.h5",
        "Table2_1_lzo_nrv2e_shuffle.h5",
    ] {
        let f = H5File::open(&dir.join(name)).unwrap();
        for table in ["/tuple0", "/group0/tuple1", "/group0/group1/tuple2"] {
            let v = clawhdf5_format::inspect::dump_json(&f, table)
                .unwrap_or_else(|e| panic!("{name}{table}: {e}"));
            assert_eq!(
                v["filters"].as_array().unwrap().last().unwrap()["name"],
                "lzo"
            );
            let rows = v["value"].as_array().unwrap();
            assert_eq!(rows.len(), 100, "{name}{table}");
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(
                    r["var3"],
                    serde_json::json!(100.0 - i as f64),
                    "{name}{table} row {i}"
                );
                if !name.starts_with("Table2_1") {
                    assert_eq!(r["var2"], serde_json::json!(i), "{name}{table} row {i}");
                }
            }
        }
    }
}

/// PyTables' 128-bit big-endian unsigned attribute (which h5py cannot read; h5dump prints 0) reads as a
/// `U128` beside the object's other attributes.
#[test]
fn a_128_bit_attribute_reads_beside_the_others() {
    let path = common::shared()
        .join("hdf5-corpus")
        .join("pytables")
        .join("attr-u16.h5");
    if !path.exists() {
        return;
    }
    let f = H5File::open(&path).unwrap();
    let obj = "/wfm_group0/axes/axis0";
    let names = f.attr_names(obj).unwrap();
    assert_eq!(names.len(), 5, "{names:?}");
    assert_eq!(
        f.attr(obj, "numDigits").unwrap().as_u16(),
        Some(&[57u16][..])
    );
    assert_eq!(
        f.attr(obj, "ref_time").unwrap().as_u128(),
        Some(&[0u128][..])
    );
}

/// PyTables' time columns (the time class, which h5py cannot read): 4-byte times read as signed seconds and
/// 8-byte times as float seconds, equal to what PyTables reads, in big-endian arrays and a nested table.
#[test]
fn time_class_reads_as_pytables_reads_it() {
    let path = common::shared()
        .join("hdf5-corpus")
        .join("pytables")
        .join("times-nested-be.h5");
    if !path.exists() || !common::have_python_module("tables") {
        return;
    }
    const DUMP: &str = r#"
import json, sys, warnings
import tables
warnings.simplefilter("ignore")

def row(v, names):
    return {n: (row(v[n], v.dtype[n].names) if v.dtype[n].names else v[n].item()) for n in names}

with tables.open_file(sys.argv[1]) as f:
    out = {}
    for node in ["/earr32", "/earr64", "/tbl"]:
        x = f.get_node(node).read()
        out[node] = [row(r, x.dtype.names) for r in x] if x.dtype.names else x.tolist()
    with open(sys.argv[2], "w") as o:
        o.write(json.dumps(out))
"#;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("times.json");
    common::run_python(DUMP, &[&path, &out]);
    let theirs: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let f = H5File::open(&path).unwrap();
    for node in ["/earr32", "/earr64", "/tbl"] {
        let ours = clawhdf5_format::inspect::dump_json(&f, node).unwrap();
        assert_eq!(ours["value"], theirs[node], "{node}");
        assert_eq!(ours["value"].as_array().unwrap().len(), 10, "{node}");
    }
    let d = f.dataset("/earr64").unwrap();
    assert_eq!(d.dtype().describe(), "time64");
    // A table of time columns with no rows yet, in an older PyTables file.
    let old = path.with_file_name("time-table-vlarray-1_x.h5");
    let f = H5File::open(&old).unwrap();
    assert!(f.dataset("/table").unwrap().read().unwrap().is_empty());
}
