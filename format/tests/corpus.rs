//! ../shared/hdf5-corpus: every file reads with values equal to h5py's, or fails with a clear
//! Unsupported error naming the feature — never a panic.

mod common;

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
