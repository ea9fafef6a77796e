//! Helpers shared by the integration tests: finding python3 + h5py, running the dump script.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// True when running under CI (`CI=true`): missing requirements must fail there.
pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false)
}

/// Whether `python3 -c "import <module>"` works; under CI a missing module panics.
pub fn have_python_module(module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        if in_ci() {
            panic!("python3 module {module} is required under CI (run scripts/setup/format.sh)");
        }
        eprintln!("SKIP: python3 module {module} not available");
    }
    ok
}

/// Runs `python3` with `args`; its standard output, or a panic naming `what` with its stderr.
fn python(args: &[&std::ffi::OsStr], what: &str) -> Vec<u8> {
    let out = Command::new("python3")
        .args(args)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `python3 -c code` with `args`, panicking with its stderr unless it succeeds.
pub fn run_python(code: &str, args: &[&Path]) {
    let mut all: Vec<&std::ffi::OsStr> = vec!["-c".as_ref(), code.as_ref()];
    all.extend(args.iter().map(|a| a.as_os_str()));
    python(&all, "python3");
}

/// Runs `python3 -c code` with `args` and parses what it prints as JSON, panicking with its stderr unless it
/// succeeds.
pub fn python_json(code: &str, args: &[&Path]) -> serde_json::Value {
    let mut all: Vec<&std::ffi::OsStr> = vec!["-c".as_ref(), code.as_ref()];
    all.extend(args.iter().map(|a| a.as_os_str()));
    serde_json::from_slice(&python(&all, "python3")).expect("JSON from python3")
}

/// Path of a helper script under tests/py.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
}

/// Runs `python3 tests/py/dump_h5.py FILE` and parses its JSON.
pub fn h5py_dump(file: &Path) -> serde_json::Value {
    let dump = script("dump_h5.py");
    let out = python(
        &[dump.as_os_str(), file.as_os_str()],
        &format!("h5py on {}", file.display()),
    );
    serde_json::from_slice(&out).expect("dump JSON")
}

/// Path of the shared read-only material.
pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// Normalises JSON for comparison: h5py shows complex numbers as [re, im] where we show the
/// compound {r, i}; NaN/inf are strings on both sides (Rust writes NaN as "NaN", Python as "nan").
fn norm(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) if m.len() == 1 && m.contains_key("ref") => Value::String("ref".into()),
        Value::Object(m) if m.len() == 2 && m.contains_key("r") && m.contains_key("i") => {
            Value::Array(vec![norm(&m["r"]), norm(&m["i"])])
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), norm(x))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::String(s) if s == "NaN" => Value::String("nan".into()),
        other => other.clone(),
    }
}

fn trunc(v: &serde_json::Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Compares everything in `path` with h5py's view. Returns (mismatches and non-Unsupported
/// errors, Unsupported errors). Objects h5py itself cannot read are only required not to panic.
pub fn compare_file(path: &Path) -> (Vec<String>, Vec<String>) {
    compare_with_dump(path, &h5py_dump(path))
}

/// Asserts that everything h5py reads in `path` reads equal, with nothing unsupported; datasets h5py cannot
/// read (files h5py wrote with types it cannot read back) are only required not to panic.
pub fn assert_equal_where_h5py_reads(path: &Path) {
    let (bad, unsupported) = compare_file(path);
    assert!(
        bad.is_empty() && unsupported.is_empty(),
        "{}: {bad:?} {unsupported:?}",
        path.display()
    );
}

/// Asserts that everything in `path` reads equal to h5py's view, with nothing unsupported, and that h5py
/// reads every dataset (a file we wrote that h5py cannot read is a failure, not a skip).
pub fn assert_equal_to_h5py(path: &Path) {
    let dump = h5py_dump(path);
    let h5py_failed: Vec<&String> = dump
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, m)| m["value"].get("h5py_error").is_some())
        .map(|(p, _)| p)
        .collect();
    assert!(
        h5py_failed.is_empty(),
        "{}: h5py cannot read {h5py_failed:?}",
        path.display()
    );
    let (bad, unsupported) = compare_with_dump(path, &dump);
    assert!(
        bad.is_empty() && unsupported.is_empty(),
        "{}: {bad:?} {unsupported:?}",
        path.display()
    );
}

/// Runs the python3 `script` with the path of a new file `name` in a temporary folder (kept alive by the
/// returned guard), when every one of `modules` imports; `None` (a skip, which CI refuses) otherwise.
pub fn python_written(
    script: &str,
    name: &str,
    modules: &[&str],
) -> Option<(tempfile::TempDir, PathBuf)> {
    if !modules.iter().all(|m| have_python_module(m)) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    run_python(script, &[&path]);
    Some((dir, path))
}

/// Dumps several files with one python3 start: file path → dump.
pub fn h5py_dump_many(files: &[PathBuf]) -> serde_json::Value {
    let dump = script("dump_h5.py");
    let mut args = vec![dump.as_os_str()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    serde_json::from_slice(&python(&args, "h5py")).expect("dump JSON")
}

/// Like [`compare_file`] with a dump already made.
pub fn compare_with_dump(path: &Path, dump: &serde_json::Value) -> (Vec<String>, Vec<String>) {
    use clawhdf5_format::inspect::array_to_json;
    use clawhdf5_format::{FormatError, H5File};
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut bad = Vec::new();
    let mut unsup = Vec::new();
    let err = |what: String, e: FormatError, bad: &mut Vec<String>, unsup: &mut Vec<String>| match e
    {
        FormatError::Unsupported(_) => unsup.push(format!("{what}: {e}")),
        _ => bad.push(format!("{what}: {e}")),
    };
    let f = match H5File::open(path) {
        Ok(f) => f,
        Err(e) => {
            err(format!("{name}: open"), e, &mut bad, &mut unsup);
            return (bad, unsup);
        }
    };
    for (p, meta) in dump.as_object().unwrap() {
        let kind = meta["kind"].as_str().unwrap();
        if kind == "dataset" {
            let theirs = &meta["value"];
            let h5py_failed = theirs.get("h5py_error").is_some();
            match f.dataset(p).and_then(|d| d.read()) {
                Ok(a) => {
                    let ours = norm(&array_to_json(&a));
                    // h5py (HDF5 2.0) does not byte-swap this big-endian vlen sequence of u32;
                    // we decode it per its declared type ("paraŀlel"), h5py shows raw LE words.
                    let known_h5py_bug = name == "vlunicode_endian.h5" && p == "/vlunicode_big";
                    if !h5py_failed && !known_h5py_bug && ours != norm(theirs) {
                        bad.push(format!(
                            "{name}{p}: value differs\n  ours:   {}\n  theirs: {}",
                            trunc(&ours),
                            trunc(theirs)
                        ));
                    }
                }
                Err(e) if h5py_failed => unsup.push(format!("{name}{p}: (h5py fails too) {e}")),
                Err(e) => err(format!("{name}{p}: read"), e, &mut bad, &mut unsup),
            }
        } else {
            match f.list(p) {
                Ok(entries) => {
                    let mut names: Vec<String> = entries.into_iter().map(|e| e.name).collect();
                    names.sort();
                    let theirs: Vec<String> = meta["links"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_string())
                        .collect();
                    if names != theirs {
                        bad.push(format!("{name}{p}: links {names:?} vs {theirs:?}"));
                    }
                }
                Err(e) => err(format!("{name}{p}: list"), e, &mut bad, &mut unsup),
            }
        }
        for (an, av) in meta["attrs"].as_object().unwrap() {
            if av.get("error").is_some() {
                continue;
            }
            match f.attr(p, an) {
                Ok(a) => {
                    let ours = norm(&array_to_json(&a));
                    if ours != norm(av) {
                        bad.push(format!(
                            "{name}{p}@{an}: differs\n  ours:   {}\n  theirs: {}",
                            trunc(&ours),
                            trunc(av)
                        ));
                    }
                }
                Err(e) => err(format!("{name}{p}@{an}"), e, &mut bad, &mut unsup),
            }
        }
    }
    (bad, unsup)
}

/// Parses the JSON file at `path` (expected values a test's Python side wrote).
pub fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts `got` equals the JSON numbers `want` bit for bit ("nan", "inf", "-inf" strings allowed; NaN equals
/// any NaN), skipping the indices in `skip`.
pub fn assert_f64s_equal(what: &str, got: &[f64], want: &serde_json::Value, skip: &[usize]) {
    let want = want.as_array().unwrap_or_else(|| panic!("{what}: no list"));
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if skip.contains(&i) {
            continue;
        }
        let w = match w {
            serde_json::Value::String(s) => s.parse::<f64>().unwrap(),
            n => n.as_f64().unwrap(),
        };
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{what}[{i}]: {g:e} against {w:e}"
        );
    }
}

/// Every group and dataset reachable from "/" by hard links (with whether it is a dataset), about `max` of
/// them at most, plus the groups that could not be listed (with why).
pub fn objects(f: &clawhdf5_format::H5File, max: usize) -> (Vec<(String, bool)>, Vec<String>) {
    use clawhdf5_format::EntryKind;
    let mut out = vec![("/".to_string(), false)];
    let mut failed = Vec::new();
    let mut i = 0;
    while i < out.len() && out.len() < max {
        let (p, is_dataset) = out[i].clone();
        i += 1;
        if is_dataset {
            continue;
        }
        let entries = match f.list(&p) {
            Ok(e) => e,
            Err(e) => {
                failed.push(format!("list {p}: {e}"));
                continue;
            }
        };
        for e in entries.into_iter().take(max) {
            let child = format!("{}/{}", p.trim_end_matches('/'), e.name);
            match e.kind {
                EntryKind::Group => out.push((child, false)),
                EntryKind::Dataset => out.push((child, true)),
                _ => {}
            }
        }
    }
    (out, failed)
}

/// xorshift64: the seeded sequence of the mutation tests.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform enough in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A small file of ours, the mutation tests' seed: a growable chunked dataset under deflate, shuffle and
/// fletcher32, vlen strings, a compact dataset, and a group of ten links and ten attributes (dense storage).
pub fn small_file() -> clawhdf5_format::FileWriter {
    use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter};
    let mut w = FileWriter::new();
    let chunked = DatasetOptions {
        chunk: Some(vec![8, 2]),
        deflate: Some(3),
        shuffle: true,
        fletcher32: true,
        max_shape: Some(vec![None, Some(4)]),
        ..Default::default()
    };
    w.write_dataset(
        "/d/f",
        Array::matrix(20, 4, Data::F32((0..80).map(|x| x as f32).collect())).unwrap(),
        chunked,
    )
    .unwrap();
    w.write_dataset(
        "/d/s",
        Array::vector(Data::VarStr((0..10).map(|i| format!("s{i}")).collect())),
        DatasetOptions::default(),
    )
    .unwrap();
    w.write_dataset(
        "/d/c",
        Array::vector(Data::I16(vec![1, 2, 3])),
        DatasetOptions {
            compact: true,
            ..Default::default()
        },
    )
    .unwrap();
    for i in 0..10 {
        w.create_group(&format!("/g/x{i}")).unwrap();
        w.set_attr("/g", &format!("a{i}"), Array::scalar(Data::U8(vec![i])))
            .unwrap();
    }
    w
}

/// Rewrites every dataset at the root of `path` whole through `FileAppender::write_rows`, so through our
/// encoders, after copying the file to `*.original.h5` beside it; returns each dataset's name and its values
/// as they read before.
pub fn rewrite_root_datasets(path: &Path) -> Vec<(String, clawhdf5_format::Array)> {
    std::fs::copy(path, path.with_extension("original.h5")).unwrap();
    let f = clawhdf5_format::H5File::open(path).unwrap();
    let before: Vec<_> = f
        .list("/")
        .unwrap()
        .into_iter()
        .map(|e| {
            let values = f.dataset(&format!("/{}", e.name)).unwrap().read().unwrap();
            (e.name, values)
        })
        .collect();
    drop(f);
    let mut a = clawhdf5_format::FileAppender::open(path).unwrap();
    for (n, values) in &before {
        a.write_rows(&format!("/{n}"), 0, values.clone())
            .unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    a.commit().unwrap();
    before
}

/// HDF5 1.12's references (`H5T_STD_REF`, written through h5py's libhdf5 by ctypes: h5py cannot): objects
/// inline, a region and an attribute in the global heap, a null one; in a dataset and in an attribute.
pub const MAKE_STD_REF: &str = r#"
import ctypes, glob, os, sys, h5py, numpy as np
libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
lib = ctypes.CDLL(libs[0] if libs else h5py.h5.__file__)
lib.H5open()
hid = ctypes.c_int64
lib.H5Dcreate2.restype = hid
lib.H5Acreate2.restype = hid
REF = ctypes.c_uint8 * 64
path = sys.argv[1]
with h5py.File(path, "w", libver="latest") as f:
    f["d"] = np.arange(60).reshape(6, 10)
    f["d"].attrs["note"] = "an attribute"
    f.create_group("g")
fid = h5py.h5f.open(path.encode(), h5py.h5f.ACC_RDWR)
refs = (REF * 5)()
assert lib.H5Rcreate_object(hid(fid.id), b"/d", hid(0), ctypes.byref(refs[0])) >= 0
assert lib.H5Rcreate_object(hid(fid.id), b"/g", hid(0), ctypes.byref(refs[1])) >= 0
space = h5py.h5s.create_simple((6, 10))
space.select_hyperslab((1, 2), (2, 3))
assert lib.H5Rcreate_region(hid(fid.id), b"/d", hid(space.id), hid(0), ctypes.byref(refs[2])) >= 0
assert lib.H5Rcreate_attr(hid(fid.id), b"/d", b"note", hid(0), ctypes.byref(refs[3])) >= 0
std_ref = hid.in_dll(lib, "H5T_STD_REF_g").value
five = h5py.h5s.create_simple((5,))
two = h5py.h5s.create_simple((2,))
did = lib.H5Dcreate2(hid(fid.id), b"refs", hid(std_ref), hid(five.id), hid(0), hid(0), hid(0))
assert did >= 0 and lib.H5Dwrite(hid(did), hid(std_ref), hid(0), hid(0), hid(0), refs) >= 0
lib.H5Dclose(hid(did))
aid = lib.H5Acreate2(hid(fid.id), b"refs", hid(std_ref), hid(two.id), hid(0), hid(0))
assert aid >= 0 and lib.H5Awrite(hid(aid), hid(std_ref), ctypes.byref(refs[2])) >= 0
lib.H5Aclose(hid(aid))
for i in range(4):
    lib.H5Rdestroy(ctypes.byref(refs[i]))
fid.close()
"#;
