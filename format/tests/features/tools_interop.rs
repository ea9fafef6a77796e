//! Files we write are read by PyTables (bundling HDF5 1.14) with equal values, and by Debian's
//! `h5dump` (HDF5 1.10) where it is installed.

use crate::common;

use clawhdf5_format::{Array, Data, DatasetOptions, FileAppender, FileWriter};
use std::process::Command;

fn write_sample(path: &std::path::Path) {
    let mut w = FileWriter::new();
    w.write_dataset(
        "/mem/vectors",
        Array::matrix(
            100,
            8,
            Data::F32((0..800).map(|x| x as f32 * 0.5).collect()),
        )
        .unwrap(),
        DatasetOptions {
            chunk: Some(vec![16, 8]),
            deflate: Some(6),
            shuffle: true,
            fletcher32: true,
            max_shape: Some(vec![None, Some(8)]),
            ..Default::default()
        },
    )
    .unwrap();
    w.write_dataset(
        "/mem/ids",
        Array::vector(Data::I64((0..100).collect())),
        DatasetOptions::default(),
    )
    .unwrap();
    w.write_dataset(
        "/mem/flags",
        Array::vector(Data::U8(vec![1, 0, 1])),
        DatasetOptions {
            compact: true,
            ..Default::default()
        },
    )
    .unwrap();
    w.write_dataset(
        "/mem/texts",
        Array::vector(Data::VarStr((0..30).map(|i| format!("t{i}")).collect())),
        DatasetOptions::default(),
    )
    .unwrap();
    for i in 0..12 {
        w.create_group(&format!("/groups/g{i:02}")).unwrap();
        w.set_attr(
            "/groups",
            &format!("a{i:02}"),
            Array::scalar(Data::I32(vec![i])),
        )
        .unwrap();
    }
    w.set_attr(
        "/",
        "title",
        Array::scalar(Data::FixedStr {
            len: 6,
            values: vec!["memory".into()],
        }),
    )
    .unwrap();
    w.write_file(path).unwrap();
    // And an append on top, so the appender's output is covered too.
    let mut a = FileAppender::open(path).unwrap();
    a.append_rows(
        "/mem/vectors",
        Array::matrix(
            5,
            8,
            Data::F32((800..840).map(|x| x as f32 * 0.5).collect()),
        )
        .unwrap(),
    )
    .unwrap();
    a.commit().unwrap();
}

#[test]
fn pytables_reads_our_files() {
    if !common::have_python_module("tables") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.h5");
    write_sample(&path);
    let script = r#"
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np, tables
f = tables.open_file(sys.argv[1])
v = f.root.mem.vectors[:]
assert v.shape == (105, 8), v.shape
assert np.array_equal(v.ravel(), np.arange(840, dtype="f4") * 0.5)
assert f.root.mem.vectors.filters.complevel == 6 and f.root.mem.vectors.filters.shuffle and f.root.mem.vectors.filters.fletcher32
assert list(f.root.mem.ids[:]) == list(range(100))
assert list(f.root.mem.flags[:]) == [1, 0, 1]
assert len(f.root.groups._v_children) == 12
assert f.root.groups._v_attrs.a11 == 11
t = f.root._v_attrs.title
assert (t.decode() if isinstance(t, bytes) else str(t)) == "memory", t
print("ok", tables.hdf5_version)
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "PyTables: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn h5dump_reads_our_files() {
    let Ok(v) = Command::new("h5dump").arg("--version").output() else {
        eprintln!("SKIP: h5dump not installed");
        return;
    };
    if !v.status.success() {
        eprintln!("SKIP: h5dump not usable");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.h5");
    write_sample(&path);
    let out = Command::new("h5dump").arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "h5dump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("DATASPACE  SIMPLE { ( 105, 8 ) / ( H5S_UNLIMITED, 8 ) }"),
        "{}",
        &text[..text.len().min(3000)]
    );
    assert!(text.contains("\"t29\""));
    assert!(text.contains("ATTRIBUTE \"a11\""));
    assert!(text.contains("419.5"));
}
