//! FileAppender: appends, overwrites, new objects and attributes land in place; h5py reads the
//! result; a commit cut short leaves the previous state intact for us and for h5py.

use crate::common;

use clawhdf5_format::inspect::array_to_json;
use clawhdf5_format::{Array, Data, DatasetOptions, FileAppender, FileWriter, FormatError, H5File};
use serde_json::json;
use std::path::Path;

fn growable(chunk: Vec<u64>, inner: Vec<Option<u64>>) -> DatasetOptions {
    let mut max = vec![None];
    max.extend(inner);
    DatasetOptions {
        chunk: Some(chunk),
        deflate: Some(4),
        shuffle: true,
        max_shape: Some(max),
        ..Default::default()
    }
}

fn vec_rows(from: u64, n: u64) -> Array {
    Array::matrix(
        n,
        4,
        Data::F32(
            (from * 4..(from + n) * 4)
                .map(|x| x as f32 * 0.25)
                .collect(),
        ),
    )
    .unwrap()
}

fn texts(from: u64, n: u64) -> Array {
    Array::vector(Data::VarStr(
        (from..from + n).map(|i| format!("memory {i} ✓")).collect(),
    ))
}

fn initial(path: &Path) {
    let mut w = FileWriter::new();
    w.write_dataset(
        "/mem/vectors",
        vec_rows(0, 5),
        growable(vec![16, 4], vec![Some(4)]),
    )
    .unwrap();
    w.write_dataset("/mem/texts", texts(0, 5), growable(vec![32], vec![]))
        .unwrap();
    w.write_dataset(
        "/mem/ids",
        Array::vector(Data::U64((0..5).collect())),
        growable(vec![10], vec![]),
    )
    .unwrap();
    w.write_dataset(
        "/big",
        Array::vector(Data::F64((0..200_000).map(|x| x as f64).collect())),
        DatasetOptions::default(),
    )
    .unwrap();
    w.set_attr("/", "generation", Array::scalar(Data::U64(vec![1])))
        .unwrap();
    w.write_file(path).unwrap();
}

fn check_rows(f: &H5File, n: u64) {
    assert_eq!(
        f.dataset("/mem/vectors").unwrap().read().unwrap(),
        vec_rows(0, n)
    );
    assert_eq!(
        f.dataset("/mem/texts").unwrap().read().unwrap(),
        texts(0, n)
    );
    assert_eq!(
        f.dataset("/mem/ids")
            .unwrap()
            .read()
            .unwrap()
            .as_u64()
            .unwrap(),
        &(0..n).collect::<Vec<_>>()[..]
    );
}

#[test]
fn append_commit_reopen_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.h5");
    initial(&path);
    let size0 = std::fs::metadata(&path).unwrap().len();
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/mem/vectors", vec_rows(5, 10)).unwrap();
    a.append_rows("/mem/texts", texts(5, 10)).unwrap();
    a.append_rows("/mem/ids", Array::vector(Data::U64((5..15).collect())))
        .unwrap();
    a.set_attr("/", "generation", Array::scalar(Data::U64(vec![2])))
        .unwrap();
    a.commit().unwrap();
    let size1 = std::fs::metadata(&path).unwrap().len();
    // The 1.6 MB dataset is not rewritten: growth is metadata + a few chunks + one heap.
    assert!(size1 - size0 < 64 * 1024, "grew by {}", size1 - size0);
    let f = H5File::open(&path).unwrap();
    check_rows(&f, 15);
    assert_eq!(
        f.attr("/", "generation").unwrap().as_u64(),
        Some(&[2u64][..])
    );
    drop(f);

    // Several appends in one session, crossing chunk boundaries, then more in the next.
    let mut a = FileAppender::open(&path).unwrap();
    for k in 0..4 {
        a.append_rows("/mem/vectors", vec_rows(15 + k * 7, 7))
            .unwrap();
        a.append_rows("/mem/texts", texts(15 + k * 7, 7)).unwrap();
        a.append_rows(
            "/mem/ids",
            Array::vector(Data::U64((15 + k * 7..22 + k * 7).collect())),
        )
        .unwrap();
    }
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    check_rows(&f, 43);
    let d = f.dataset("/mem/vectors").unwrap();
    assert_eq!(d.read_rows(40, 3).unwrap(), vec_rows(40, 3));
}

#[test]
fn overwrite_create_replace_and_h5py_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.h5");
    initial(&path);
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/mem/vectors", vec_rows(5, 30)).unwrap();
    a.commit().unwrap();
    let mut a = FileAppender::open(&path).unwrap();
    a.write_rows(
        "/mem/vectors",
        14,
        Array::matrix(3, 4, Data::F32(vec![-1.0; 12])).unwrap(),
    )
    .unwrap();
    a.write_rows("/mem/texts", 1, texts(100, 2)).unwrap();
    a.create_group("/sessions/s1").unwrap();
    a.write_dataset("/sessions/s1/turns", texts(0, 3), DatasetOptions::default())
        .unwrap();
    a.set_attr(
        "/sessions/s1/turns",
        "speaker",
        Array::scalar(Data::VarStr(vec!["ann".into()])),
    )
    .unwrap();
    a.replace_dataset(
        "/mem/ids",
        Array::vector(Data::I32(vec![7, 8, 9])),
        DatasetOptions::default(),
    )
    .unwrap();
    for i in 0..10 {
        a.create_group(&format!("/sessions/s{}", i + 2)).unwrap();
        a.set_attr(
            "/mem/vectors",
            &format!("a{i}"),
            Array::scalar(Data::I64(vec![i])),
        )
        .unwrap();
    }
    a.commit().unwrap();

    let mut expect = vec_rows(0, 35);
    if let Data::F32(v) = &mut expect.data {
        for x in &mut v[14 * 4..17 * 4] {
            *x = -1.0;
        }
    }
    let mut tx = texts(0, 5);
    if let Data::VarStr(v) = &mut tx.data {
        v[1] = "memory 100 ✓".into();
        v[2] = "memory 101 ✓".into();
    }
    let f = H5File::open(&path).unwrap();
    assert_eq!(f.dataset("/mem/vectors").unwrap().read().unwrap(), expect);
    assert_eq!(f.dataset("/mem/texts").unwrap().read().unwrap(), tx);
    assert_eq!(
        f.dataset("/mem/ids").unwrap().read().unwrap().as_i32(),
        Some(&[7, 8, 9][..])
    );
    assert_eq!(
        f.dataset("/sessions/s1/turns").unwrap().read().unwrap(),
        texts(0, 3)
    );
    assert_eq!(f.list("/sessions").unwrap().len(), 11);
    assert_eq!(f.attr_names("/mem/vectors").unwrap().len(), 10);

    if !common::have_python_module("h5py") {
        return;
    }
    let dump = common::h5py_dump(&path);
    assert_eq!(dump["/mem/vectors"]["value"], array_to_json(&expect));
    assert_eq!(dump["/mem/vectors"]["shape"], json!([35, 4]));
    assert_eq!(dump["/mem/texts"]["value"], array_to_json(&tx));
    assert_eq!(dump["/mem/ids"]["value"], json!([7, 8, 9]));
    assert_eq!(dump["/sessions/s1/turns"]["attrs"]["speaker"], json!("ann"));
    assert_eq!(dump["/sessions"]["links"].as_array().unwrap().len(), 11);
    assert_eq!(dump["/mem/vectors"]["attrs"]["a9"], json!(9));
}

#[test]
fn commit_cut_short_keeps_previous_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.h5");
    initial(&path);
    let old = std::fs::read(&path).unwrap();
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/mem/vectors", vec_rows(5, 40)).unwrap();
    a.append_rows("/mem/texts", texts(5, 40)).unwrap();
    a.append_rows("/mem/ids", Array::vector(Data::U64((5..45).collect())))
        .unwrap();
    a.set_attr("/", "generation", Array::scalar(Data::U64(vec![2])))
        .unwrap();
    a.create_group("/new").unwrap();
    a.commit().unwrap();
    let new = std::fs::read(&path).unwrap();
    assert!(new.len() > old.len());
    // Everything written except the superblock switch, cut at several points of the tail.
    let tail = new.len() - old.len();
    let mut cuts: Vec<usize> = (0..8).map(|i| old.len() + tail * i / 8).collect();
    cuts.push(new.len());
    let mut last = None;
    for cut in cuts {
        let mut crashed = new[..cut].to_vec();
        crashed[..48].copy_from_slice(&old[..48]);
        assert_eq!(
            &crashed[48..old.len()],
            &old[48..],
            "committed bytes were overwritten"
        );
        let f = H5File::from_bytes(crashed.clone()).unwrap();
        check_rows(&f, 5);
        assert_eq!(
            f.attr("/", "generation").unwrap().as_u64(),
            Some(&[1u64][..])
        );
        assert!(!f.exists("/new"));
        last = Some(crashed);
    }
    // The switched file has the new state.
    let f = H5File::from_bytes(new).unwrap();
    check_rows(&f, 45);
    assert!(f.exists("/new"));

    if !common::have_python_module("h5py") {
        return;
    }
    let crashed_path = dir.path().join("crashed.h5");
    std::fs::write(&crashed_path, last.unwrap()).unwrap();
    let dump = common::h5py_dump(&crashed_path);
    assert_eq!(
        dump["/mem/vectors"]["value"],
        array_to_json(&vec_rows(0, 5))
    );
    assert_eq!(dump["/mem/texts"]["value"], array_to_json(&texts(0, 5)));
    assert_eq!(dump["/"]["attrs"]["generation"], json!(1));
    // And the file can be appended to again after the crash (new data goes past the garbage).
    let mut a = FileAppender::open(&crashed_path).unwrap();
    a.append_rows("/mem/vectors", vec_rows(5, 3)).unwrap();
    a.commit().unwrap();
    let f = H5File::open(&crashed_path).unwrap();
    assert_eq!(
        f.dataset("/mem/vectors").unwrap().read().unwrap(),
        vec_rows(0, 8)
    );
    assert_eq!(
        f.attr("/", "generation").unwrap().as_u64(),
        Some(&[1u64][..])
    );
    let dump = common::h5py_dump(&crashed_path);
    assert_eq!(
        dump["/mem/vectors"]["value"],
        array_to_json(&vec_rows(0, 8))
    );
}

#[test]
fn append_cost_is_proportional_to_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.h5");
    let mut w = FileWriter::new();
    let opts = DatasetOptions {
        chunk: Some(vec![4]),
        max_shape: Some(vec![None]),
        ..Default::default()
    };
    w.write_dataset(
        "/log",
        Array::vector(Data::U32((0..20_000).collect())),
        opts,
    )
    .unwrap();
    w.write_file(&path).unwrap();
    let mut total = 20_000u32;
    for _ in 0..3 {
        let size0 = std::fs::metadata(&path).unwrap().len();
        let mut a = FileAppender::open(&path).unwrap();
        a.append_rows(
            "/log",
            Array::vector(Data::U32((total..total + 3).collect())),
        )
        .unwrap();
        a.commit().unwrap();
        total += 3;
        let grew = std::fs::metadata(&path).unwrap().len() - size0;
        // 5,000 chunks in 79 B-tree leaves: one leaf, the internal nodes, one chunk and two
        // object headers are written — not the whole index.
        assert!(
            grew < 16 * 1024,
            "append of 3 rows grew the file by {grew} bytes"
        );
    }
    let f = H5File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/log").unwrap().read().unwrap().as_u32().unwrap(),
        &(0..total).collect::<Vec<_>>()[..]
    );
    if common::have_python_module("h5py") {
        let dump = common::h5py_dump(&path);
        assert_eq!(dump["/log"]["value"], json!((0..total).collect::<Vec<_>>()));
    }
}

/// A file we wrote, then edited by h5py (libhdf5 2.0 rewrites headers, may add continuation
/// chunks, free-space info and new-style indexes), then appended to by us again: all readable.
#[test]
fn append_after_h5py_edits_the_file() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.h5");
    initial(&path);
    let script = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs["edited_by"] = "h5py"
    d = f["mem/vectors"]
    d.resize((8, 4))
    d[5:8] = np.arange(20, 32, dtype="f4").reshape(3, 4) * 0.25
    f.create_dataset("mem/extra", data=np.arange(10), maxshape=(None,), chunks=(4,))
    for i in range(12):
        f["mem/texts"].attrs["a%d" % i] = i
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/mem/vectors", vec_rows(8, 4)).unwrap();
    a.append_rows("/mem/texts", texts(5, 2)).unwrap();
    a.append_rows("/mem/extra", Array::vector(Data::I64(vec![10, 11, 12])))
        .unwrap();
    a.set_attr("/mem/texts", "a12", Array::scalar(Data::I64(vec![12])))
        .unwrap();
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/mem/vectors").unwrap().read().unwrap(),
        vec_rows(0, 12)
    );
    assert_eq!(
        f.dataset("/mem/texts").unwrap().read().unwrap(),
        texts(0, 7)
    );
    assert_eq!(
        f.dataset("/mem/extra")
            .unwrap()
            .read()
            .unwrap()
            .as_i64()
            .unwrap(),
        &(0..13).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        f.attr("/", "edited_by").unwrap().as_strings().unwrap(),
        &["h5py".to_string()]
    );
    let dump = common::h5py_dump(&path);
    assert_eq!(
        dump["/mem/vectors"]["value"],
        array_to_json(&vec_rows(0, 12))
    );
    assert_eq!(dump["/mem/texts"]["value"], array_to_json(&texts(0, 7)));
    assert_eq!(
        dump["/mem/extra"]["value"],
        json!((0..13).collect::<Vec<_>>())
    );
    assert_eq!(dump["/mem/texts"]["attrs"]["a12"], json!(12));
    assert_eq!(dump["/mem/texts"]["attrs"]["a3"], json!(3));
}

/// Appending to a file h5py wrote with libver="latest" (superblock v3, extensible-array chunk
/// index, layout v4/v5): the dataset moves to a v1 B-tree index and h5py still reads it.
#[test]
fn append_to_h5py_latest_file() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("theirs.h5");
    let script = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    f.create_dataset("v", data=np.arange(20, dtype="f4").reshape(5, 4) * 0.25, maxshape=(None, 4), chunks=(16, 4), compression="gzip", shuffle=True)
    f.create_dataset("t", data=np.array(["memory %d \u2713" % i for i in range(5)], dtype=h5py.string_dtype()), maxshape=(None,), chunks=(32,))
    for i in range(10):
        f.create_group("g%d" % i)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/v", vec_rows(5, 30)).unwrap();
    a.append_rows("/t", texts(5, 30)).unwrap();
    a.create_group("/g10").unwrap();
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    assert_eq!(f.dataset("/v").unwrap().read().unwrap(), vec_rows(0, 35));
    assert_eq!(f.dataset("/t").unwrap().read().unwrap(), texts(0, 35));
    let dump = common::h5py_dump(&path);
    assert_eq!(dump["/v"]["value"], array_to_json(&vec_rows(0, 35)));
    assert_eq!(dump["/t"]["value"], array_to_json(&texts(0, 35)));
    assert_eq!(dump["/"]["links"].as_array().unwrap().len(), 13);
}

#[test]
fn superseded_bytes_count_the_data_a_session_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.h5");
    initial(&path);
    let (first_chunk, big) = {
        let f = H5File::open(&path).unwrap();
        let v = f.dataset("/mem/vectors").unwrap().chunk_entries().unwrap();
        let b = f.dataset("/big").unwrap();
        let big: u64 = match b.layout() {
            clawhdf5_format::messages::Layout::Contiguous { size, .. } => *size,
            _ => b.chunk_entries().unwrap().iter().map(|c| c.size).sum(),
        };
        (v[0].size, big)
    };
    let mut a = FileAppender::open(&path).unwrap();
    assert_eq!(a.superseded_bytes(), 0);
    // Appending to a partial chunk rewrites it: the old copy is dead.
    a.append_rows("/mem/vectors", vec_rows(5, 3)).unwrap();
    assert_eq!(a.superseded_bytes(), first_chunk);
    a.replace_dataset(
        "/big",
        Array::vector(Data::U8(vec![1, 2, 3])),
        DatasetOptions::default(),
    )
    .unwrap();
    assert_eq!(a.superseded_bytes(), first_chunk + big);
    // A dataset created in this session and replaced again was never committed.
    a.write_dataset(
        "/fresh",
        Array::vector(Data::U8(vec![0; 64])),
        DatasetOptions::default(),
    )
    .unwrap();
    a.replace_dataset(
        "/fresh",
        Array::vector(Data::U8(vec![1; 8])),
        DatasetOptions::default(),
    )
    .unwrap();
    assert_eq!(a.superseded_bytes(), first_chunk + big);
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/mem/vectors").unwrap().read().unwrap(),
        vec_rows(0, 8)
    );
}

/// Rows appended to and written over datasets whose element types h5py chose — big-endian and narrow
/// integers, enums with their own values, compounds with another member order and gaps, complex numbers,
/// arrays, fixed strings, variable-length sequences — take those types: h5py reads back exactly the values
/// we put, and values a type cannot hold are refused without changing the file.
#[test]
fn rows_take_the_element_types_h5py_chose() {
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, numpy as np
grow = dict(maxshape=(None,), chunks=(4,))
with h5py.File(sys.argv[1], "w", libver=("v110", "v114")) as f:
    f.create_dataset("be_i16", data=np.array([1, -2, 3], ">i2"), **grow)
    f.create_dataset("be_f32", data=np.array([0.5, 1.5], ">f4"), **grow)
    f.create_dataset("half", data=np.array([0.25], "<f2"), **grow)
    f.create_dataset("enum", data=np.array([10, 20], "u1"), dtype=h5py.enum_dtype({"a": 10, "b": 20}, basetype="u1"), **grow)
    rec = np.dtype({"names": ["y", "x", "tag"], "formats": [">f4", "<u2", "S4"], "offsets": [0, 8, 12], "itemsize": 20})
    f.create_dataset("rec", data=np.array([(1.0, 2, b"ab")], rec), **grow)
    f.create_dataset("cplx", data=np.array([1 + 2j], "<c8"), **grow)
    arr = np.dtype((">i4", (3,)))
    d = f.create_dataset("arr", shape=(2,), dtype=arr, **grow)
    d[0] = [0, 1, 2]
    d[1] = [3, 4, 5]
    f.create_dataset("fixed", data=np.array([b"abc"], "S5"), **grow)
    # Little-endian: h5py 3.16 (HDF5 2.0) does not byte-swap big-endian sequences it reads.
    seq = h5py.vlen_dtype(np.dtype("<u2"))
    d = f.create_dataset("seq", shape=(2,), dtype=seq, **grow)
    d[0] = np.array([1, 2, 3], "<u2")
    d[1] = np.array([], "<u2")
    f.create_dataset("fixed_rows", data=np.array([7, 8, 9], "<u4"))
"#,
        "typed.h5",
        &["h5py"],
    ) else {
        return;
    };
    // Rows read from each dataset (so in our reader's types) and rows built in other types.
    let f = H5File::open(&path).unwrap();
    let own = |name: &str| f.dataset(name).unwrap().read_rows(0, 1).unwrap();
    let before: Vec<(String, serde_json::Value)> = [
        "be_i16", "be_f32", "half", "enum", "rec", "cplx", "arr", "fixed", "seq",
    ]
    .iter()
    .map(|n| {
        (
            n.to_string(),
            array_to_json(&f.dataset(n).unwrap().read().unwrap()),
        )
    })
    .collect();
    let mut a = FileAppender::open(&path).unwrap();
    for (name, _) in &before {
        a.append_rows(name, own(name)).unwrap();
    }
    a.append_rows("be_i16", Array::vector(Data::I64(vec![-32768, 32767])))
        .unwrap();
    a.append_rows("be_f32", Array::vector(Data::F64(vec![2.25])))
        .unwrap();
    a.append_rows("half", Array::vector(Data::I32(vec![3])))
        .unwrap();
    a.append_rows(
        "rec",
        Array::vector(Data::Compound(vec![
            ("tag".into(), Data::VarStr(vec!["wxyz".into()])),
            ("x".into(), Data::U8(vec![9])),
            ("y".into(), Data::F32(vec![-4.0])),
        ])),
    )
    .unwrap();
    a.append_rows(
        "enum",
        Array::vector(Data::Enum {
            values: vec![1],
            members: vec![("a".into(), 0), ("b".into(), 1)],
        }),
    )
    .unwrap();
    a.write_rows("fixed_rows", 1, Array::vector(Data::U8(vec![42])))
        .unwrap();
    a.write_rows("fixed_rows", 2, Array::vector(Data::U64(vec![43])))
        .unwrap();
    a.append_rows(
        "seq",
        Array::vector(Data::VarLen(vec![
            Data::I64(vec![65_535, 0]),
            Data::I64(vec![]),
        ])),
    )
    .unwrap();
    // Values the types cannot hold: refused, nothing changed.
    for (name, rows) in [
        ("be_i16", Data::I64(vec![40_000])),
        ("enum", Data::U8(vec![10])),
        ("fixed", Data::VarStr(vec!["too long".into()])),
        (
            "rec",
            Data::Compound(vec![("x".into(), Data::U16(vec![1]))]),
        ),
        ("fixed_rows", Data::I8(vec![-1])),
    ] {
        let shape = a.shape(name).unwrap();
        let e = a.write_rows(name, 0, Array::vector(rows)).expect_err(name);
        assert!(
            matches!(e, FormatError::TypeMismatch(_) | FormatError::Invalid(_)),
            "{name}: {e}"
        );
        assert_eq!(a.shape(name).unwrap(), shape, "{name}");
    }
    a.commit().unwrap();
    drop(f);

    let f = H5File::open(&path).unwrap();
    let value = |name: &str| array_to_json(&f.dataset(name).unwrap().read().unwrap());
    for (name, was) in &before {
        let now = value(name);
        let (now, was) = (now.as_array().unwrap(), was.as_array().unwrap());
        assert_eq!(&now[..was.len()], &was[..], "{name}: the old rows");
        assert_eq!(
            now[was.len()],
            was[0],
            "{name}: the row appended from its own first row"
        );
    }
    assert_eq!(value("be_i16"), json!([1, -2, 3, 1, -32768, 32767]));
    assert_eq!(value("be_f32"), json!([0.5, 1.5, 0.5, 2.25]));
    assert_eq!(value("half"), json!([0.25, 0.25, 3.0]));
    assert_eq!(value("fixed_rows"), json!([7, 42, 43]));
    assert_eq!(
        value("seq"),
        json!([[1, 2, 3], [], [1, 2, 3], [65535, 0], []])
    );
    let rec = value("rec");
    assert_eq!(rec[2], json!({"y": -4.0, "x": 9, "tag": "wxyz"}));
    let enums = f.dataset("enum").unwrap().read().unwrap();
    match &enums.data {
        Data::Enum { values, .. } => assert_eq!(values, &[10, 20, 10, 20]),
        other => panic!("enum read as {other:?}"),
    }
    common::assert_equal_to_h5py(&path);
}

/// Appending to a file h5py wrote with its defaults (libver "earliest": superblock v0, version-1 object
/// headers, symbol-table groups): rows, datasets, groups and attributes land in place; changed groups are
/// rewritten in the link format libhdf5 1.8+ reads; h5py keeps editing it and we keep appending; h5py,
/// PyTables (HDF5 1.14) and h5dump (HDF5 1.10, where installed) read every value.
#[test]
fn append_to_h5py_default_file() {
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["title"] = "notes"
    g = f.create_group("mem")
    g.create_dataset("ids", data=np.arange(5, dtype="<i8"), maxshape=(None,), chunks=(4,), compression="gzip")
    g.create_dataset("texts", data=np.array(["note %d" % i for i in range(5)], dtype=object), dtype=h5py.string_dtype(), maxshape=(None,), chunks=(8,))
    g.create_dataset("fixed", data=np.arange(6, dtype=">f8").reshape(3, 2))
    for i in range(6):
        f.create_group("old/g%d" % i).attrs["n"] = i
"#,
        "default.h5",
        &["h5py"],
    ) else {
        return;
    };
    assert_eq!(H5File::open(&path).unwrap().superblock().version, 0);
    let size0 = std::fs::metadata(&path).unwrap().len();
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/mem/ids", Array::vector(Data::I64((5..40).collect())))
        .unwrap();
    a.append_rows(
        "/mem/texts",
        Array::vector(Data::VarStr((5..40).map(|i| format!("note {i}")).collect())),
    )
    .unwrap();
    a.write_rows(
        "/mem/fixed",
        1,
        Array::matrix(1, 2, Data::F64(vec![-1.0, -2.0])).unwrap(),
    )
    .unwrap();
    a.write_dataset(
        "/mem/new/vectors",
        Array::matrix(2, 3, Data::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])).unwrap(),
        DatasetOptions::default(),
    )
    .unwrap();
    for i in 0..12 {
        a.set_attr("/mem", &format!("a{i}"), Array::scalar(Data::I64(vec![i])))
            .unwrap();
    }
    a.set_attr(
        "/",
        "title",
        Array::scalar(Data::VarStr(vec!["memory".into()])),
    )
    .unwrap();
    a.commit().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() - size0 < 64 * 1024);
    common::assert_equal_to_h5py(&path);

    // h5py edits the result (its default libver again), then we append once more.
    common::run_python(
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    assert f.attrs["title"] == "memory"
    assert list(f["mem/ids"][:]) == list(range(40))
    d = f["mem/ids"]
    d.resize((45,))
    d[40:] = np.arange(40, 45)
    f["mem"].create_dataset("h5py_added", data=np.arange(3))
    f["mem"].attrs["a3"] = 33
    del f["old/g2"]
    f.create_group("old/g9")
"#,
        &[&path],
    );
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/mem/ids", Array::vector(Data::I64((45..50).collect())))
        .unwrap();
    a.create_group("/old/g10").unwrap();
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/mem/ids")
            .unwrap()
            .read()
            .unwrap()
            .as_i64()
            .unwrap(),
        &(0..50).collect::<Vec<_>>()[..]
    );
    assert_eq!(f.attr("/mem", "a3").unwrap().as_i64(), Some(&[33i64][..]));
    let mut old: Vec<String> = f
        .list("/old")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    old.sort();
    assert_eq!(old, ["g0", "g1", "g10", "g3", "g4", "g5", "g9"]);
    common::assert_equal_to_h5py(&path);

    if common::have_python_module("tables") {
        common::run_python(
            r#"
import sys, warnings
warnings.simplefilter("ignore")
import tables
with tables.open_file(sys.argv[1]) as f:
    assert list(f.root.mem.ids[:]) == list(range(50))
    assert f.root.mem.new.vectors[:].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert f.root.mem.fixed[:].tolist() == [[0, 1], [-1, -2], [4, 5]]
    assert sorted(f.root.old._v_children) == ["g0", "g1", "g10", "g3", "g4", "g5", "g9"]
"#,
            &[&path],
        );
    }
    if let Ok(out) = std::process::Command::new("h5dump").arg(&path).output() {
        assert!(
            out.status.success(),
            "h5dump: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("\"note 39\""),
            "{}",
            &text[..text.len().min(2000)]
        );
    }
}

/// libhdf5 cannot run shuffle on variable-length strings (it stores the filter without its element size and
/// writes every chunk with it skipped): chunks we append are written the same way, so h5py reads and
/// rewrites them.
#[test]
fn appended_chunks_skip_the_filters_libhdf5_skips() {
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("s", data=np.array(["a", "bb", "ccc"], dtype=object), dtype=h5py.string_dtype(), maxshape=(None,), chunks=(2,), shuffle=True, compression="gzip")
"#,
        "vlen_shuffle.h5",
        &["h5py"],
    ) else {
        return;
    };
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/s", texts(0, 5)).unwrap();
    a.commit().unwrap();
    common::run_python(
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    d = f["s"]
    want = ["a", "bb", "ccc"] + ["memory %d \u2713" % i for i in range(5)]
    assert [x.decode() for x in d[:]] == want, d[:]
    assert {d.id.get_chunk_info(i).filter_mask for i in range(d.id.get_num_chunks())} == {1}
    d[3] = "rewritten by h5py"
"#,
        &[&path],
    );
    let f = H5File::open(&path).unwrap();
    let s = f.dataset("/s").unwrap().read().unwrap();
    assert_eq!(s.as_strings().unwrap()[3], "rewritten by h5py");
}

/// Unlinking datasets and groups, deleting attributes and adding soft and external links: h5py sees the
/// result as `del`, `del attrs[...]`, `SoftLink` and `ExternalLink` would have left it.
#[test]
fn unlink_delete_attributes_and_add_links() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.h5");
    initial(&path);
    let mut w = FileWriter::new();
    w.write_dataset(
        "/x",
        Array::vector(Data::I32(vec![7])),
        DatasetOptions::default(),
    )
    .unwrap();
    w.write_file(&dir.path().join("other.h5")).unwrap();
    let mut a = FileAppender::open(&path).unwrap();
    a.unlink("/big").unwrap();
    a.unlink("/mem/ids").unwrap();
    for i in 0..12 {
        a.set_attr("/mem", &format!("a{i}"), Array::scalar(Data::I64(vec![i])))
            .unwrap();
    }
    a.delete_attr("/", "generation").unwrap();
    a.soft_link("/mem/latest", "/mem/vectors").unwrap();
    a.soft_link("/dangling", "/nowhere").unwrap();
    a.external_link("/ext", "other.h5", "/x").unwrap();
    assert!(matches!(a.unlink("/big"), Err(FormatError::NotFound(_))));
    assert!(matches!(
        a.delete_attr("/", "generation"),
        Err(FormatError::NotFound(_))
    ));
    assert!(matches!(
        a.soft_link("/mem/texts", "/x"),
        Err(FormatError::Invalid(_))
    ));
    a.commit().unwrap();
    let mut a = FileAppender::open(&path).unwrap();
    a.delete_attr("/mem", "a3").unwrap();
    a.unlink("/dangling").unwrap();
    a.commit().unwrap();

    let f = H5File::open(&path).unwrap();
    let mut names: Vec<String> = f.list("/").unwrap().into_iter().map(|e| e.name).collect();
    names.sort();
    assert_eq!(names, ["ext", "mem"]);
    assert!(f.attr_names("/").unwrap().is_empty());
    assert_eq!(f.attr_names("/mem").unwrap().len(), 11);
    check_rows_of(&f, "/mem/latest", 5);
    if !common::have_python_module("h5py") {
        return;
    }
    common::run_python(
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert sorted(f.keys()) == ["ext", "mem"], list(f.keys())
    assert sorted(f["mem"].keys()) == ["latest", "texts", "vectors"], list(f["mem"].keys())
    assert f["mem"].get("latest", getlink=True).path == "/mem/vectors"
    assert f["mem/latest"].shape == (5, 4)
    assert f["ext"][0] == 7
    assert len(f.attrs) == 0 and "a3" not in f["mem"].attrs and f["mem"].attrs["a11"] == 11
"#,
        &[&path],
    );
}

fn check_rows_of(f: &H5File, path: &str, n: u64) {
    assert_eq!(f.dataset(path).unwrap().read().unwrap(), vec_rows(0, n));
}

/// Appending to datasets compressed by plugin filters: Blosc (each codec it names, LZ4HC written as LZ4;
/// with and without shuffle), LZ4, zstd and bzip2 as hdf5plugin writes them, and PyTables' own Blosc and
/// bzip2 arrays; h5py (HDF5 2.0, with hdf5plugin's filters) and PyTables (HDF5 1.14) read every row back.
#[test]
fn rows_appended_through_plugin_filters() {
    if !common::have_python_module("hdf5plugin") || !common::have_python_module("tables") {
        return;
    }
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, warnings
warnings.simplefilter("ignore")
import h5py, hdf5plugin, numpy as np, tables
data = (np.arange(6000, dtype="<f4") // 7).reshape(1500, 4)
with h5py.File(sys.argv[1], "w") as f:
    grow = dict(maxshape=(None, 4), chunks=(256, 4))
    for cname in ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"]:
        for shuffle, sname in [(hdf5plugin.Blosc.NOSHUFFLE, "none"), (hdf5plugin.Blosc.SHUFFLE, "byte"), (hdf5plugin.Blosc.BITSHUFFLE, "bit")]:
            f.create_dataset("blosc_%s_%s" % (cname, sname), data=data, **grow, **hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=shuffle))
    f.create_dataset("lz4", data=data, **grow, **hdf5plugin.LZ4())
    f.create_dataset("zstd", data=data, **grow, **hdf5plugin.Zstd(clevel=7))
    f.create_dataset("bzip2", data=data, **grow, **hdf5plugin.BZip2(blocksize=5))
    f.create_dataset("lzf", data=data, compression="lzf", shuffle=True, **grow)
    for cname in ["none", "lz4", "zstd"]:
        f.create_dataset("bitshuffle_" + cname, data=data, **grow, **hdf5plugin.Bitshuffle(cname=cname))
    f.create_dataset("bitshuffle_lz4_block64", data=data, **grow, **hdf5plugin.Bitshuffle(nelems=64, cname="lz4"))
    # Noise liblzf cannot shrink: h5py's chunks skip the filter, and ours must too.
    noise = np.random.default_rng(5).integers(0, 2**31, size=(64, 4)).astype("<u4")
    f.create_dataset("lzf_noise", data=noise, compression="lzf", maxshape=(None, 4), chunks=(16, 4))
with tables.open_file(sys.argv[1] + ".pt", "w") as t:
    for lib in ["blosc", "blosc:lz4", "blosc:zstd", "bzip2"]:
        e = t.create_earray("/", lib.replace(":", "_"), tables.Float32Atom(), (0, 4), filters=tables.Filters(5, lib, shuffle=True))
        e.append(data)
"#,
        "plugins.h5",
        &["h5py"],
    ) else {
        return;
    };
    let pt = path.with_extension("h5.pt");
    let more: Vec<f32> = (6000..8000).map(|i| (i / 7) as f32).collect();
    for file in [&path, &pt] {
        let f = H5File::open(file).unwrap();
        let names: Vec<String> = f
            .list("/")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .filter(|n| n != "lzf_noise")
            .collect();
        drop(f);
        let mut a = FileAppender::open(file).unwrap();
        for n in &names {
            a.append_rows(
                &format!("/{n}"),
                Array::matrix(500, 4, Data::F32(more.clone())).unwrap(),
            )
            .unwrap_or_else(|e| panic!("{n}: {e}"));
        }
        if file == &path {
            // Rows of noise again (each value rotated): no chunk shrinks.
            let noise = f_noise(&path);
            let rows: Vec<u32> = noise.iter().map(|v| v.rotate_left(7)).collect();
            a.append_rows("/lzf_noise", Array::matrix(64, 4, Data::U32(rows)).unwrap())
                .unwrap();
        }
        a.commit().unwrap();
        let f = H5File::open(file).unwrap();
        let want: Vec<f32> = (0..8000).map(|i| (i / 7) as f32).collect();
        for n in &names {
            let got = f.dataset(&format!("/{n}")).unwrap().read().unwrap();
            assert_eq!(got.as_f32().unwrap(), &want[..], "{n}");
        }
    }
    common::run_python(
        r#"
import sys, warnings
warnings.simplefilter("ignore")
import h5py, hdf5plugin, numpy as np, tables
want = (np.arange(8000, dtype="<f4") // 7).reshape(2000, 4)
formats = {"blosclz": 0, "lz4": 1, "lz4hc": 1, "snappy": 2, "zlib": 3, "zstd": 4}
with h5py.File(sys.argv[1], "r") as f:
    for n in f:
        if n != "lzf_noise":
            assert np.array_equal(f[n][:], want), n
        if n.startswith("blosc_"):
            # Our chunks (rows 1500 on) hold streams of the compressor the dataset names.
            _, raw = f[n].id.read_direct_chunk((1792, 0))
            assert raw[2] & 0x02 or raw[2] >> 5 == formats[n.split("_")[1]], (n, raw[:4])
    noise = f["lzf_noise"][:]
    assert noise.shape == (128, 4)
    rot = ((noise[:64].astype("u8") << 7) | (noise[:64].astype("u8") >> 25)) & 0xFFFFFFFF
    assert np.array_equal(noise[64:], rot.astype("<u4"))
    d = f["lzf_noise"]
    assert {d.id.get_chunk_info(i).filter_mask for i in range(d.id.get_num_chunks())} == {1}
with tables.open_file(sys.argv[2]) as t:
    for node in t.root:
        assert np.array_equal(node[:], want), node
"#,
        &[&path, &pt],
    );
}

/// Appending to datasets whose filters we cannot encode — id 511 (from the range HDF5 keeps for testing, so
/// nobody's filter), optional, which libhdf5 skips too: our chunks are stored with that filter skipped and its mask bit set, as
/// libhdf5 stores a chunk an optional filter fails on, and h5py reads every row back. N-bit, szip (libhdf5's
/// own, set through h5py), Blosc2 and ZFP (hdf5plugin, ZFP reversible and mandatory), which we encode, take
/// our chunks through them, optional or mandatory, 20-bit integers among them: N-bit packs them into the bytes
/// libhdf5 packs, libaec decodes our szip streams, c-blosc2 our Blosc2 frames, and our ZFP chunks are the
/// bytes H5Z-ZFP writes for the same rows. (LZO, which we encode too, is tested in `tests/lzo.rs`.)
#[test]
fn rows_appended_past_optional_filters_we_cannot_encode() {
    if !common::have_python_module("hdf5plugin") {
        return;
    }
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, warnings
warnings.simplefilter("ignore")
import h5py, hdf5plugin, numpy as np
from h5py import h5z
data = (np.arange(6000, dtype="<i4") // 7).reshape(1500, 4)
data[::3, 1] *= -1
with h5py.File(sys.argv[1], "w") as f:
    grow = dict(maxshape=(None, 4), chunks=(256, 4))
    f.create_dataset("szip", data=data, compression="szip", **grow)
    f.create_dataset("blosc2", data=data, **grow, **hdf5plugin.Blosc2(cname="lz4"))
    def low_level(name, filter_id, flags, precision, opts=()):
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((256, 4))
        dcpl.set_filter(filter_id, flags, opts)
        t = h5py.h5t.STD_I32BE.copy() if name.endswith(b"_be") else h5py.h5t.STD_I32LE.copy()
        t.set_precision(precision)
        space = h5py.h5s.create_simple((1500, 4), (h5py.h5s.UNLIMITED, 4))
        d = h5py.h5d.create(f.id, name, t, space, dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
    low_level(b"nbit", h5z.FILTER_NBIT, h5z.FLAG_OPTIONAL, 20)
    low_level(b"nbit_mandatory_be", h5z.FILTER_NBIT, h5z.FLAG_MANDATORY, 17)
    low_level(b"szip_mandatory", h5z.FILTER_SZIP, h5z.FLAG_MANDATORY, 32, (32, 8))
    low_level(b"szip_20_be", h5z.FILTER_SZIP, h5z.FLAG_MANDATORY, 20, (32 | 16, 16))
    low_level(b"blosc2_mandatory", 32026, h5z.FLAG_MANDATORY, 32, (0, 0, 0, 0, 5, 1, 1))
    low_level(b"testing_511", 511, h5z.FLAG_OPTIONAL, 32)
    zfp = hdf5plugin.Zfp(reversible=True)
    low_level(b"zfp_mandatory", zfp.filter_id, h5z.FLAG_MANDATORY, 32, zfp.filter_options)
    f.create_dataset("szip_f64", data=data.astype("<f8") / 3, compression="szip", maxshape=(None, 4), chunks=(256, 4))
"#,
        "optional.h5",
        &["h5py"],
    ) else {
        return;
    };
    let value = |i: i32| {
        if (i / 4) % 3 == 0 && i % 4 == 1 {
            -(i / 7)
        } else {
            i / 7
        }
    };
    let more: Vec<i32> = (6000..8000).map(value).collect();
    let rows = || Array::matrix(500, 4, Data::I32(more.clone())).unwrap();
    let mut a = FileAppender::open(&path).unwrap();
    let appended = [
        "szip",
        "blosc2",
        "nbit",
        "nbit_mandatory_be",
        "szip_mandatory",
        "szip_20_be",
        "blosc2_mandatory",
        "testing_511",
        "zfp_mandatory",
    ];
    for n in appended {
        a.append_rows(&format!("/{n}"), rows())
            .unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    let thirds: Vec<f64> = more.iter().map(|&v| f64::from(v) / 3.0).collect();
    a.append_rows(
        "/szip_f64",
        Array::matrix(500, 4, Data::F64(thirds)).unwrap(),
    )
    .unwrap();
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    let want: Vec<i32> = (0..8000).map(value).collect();
    for n in appended {
        let got = f.dataset(&format!("/{n}")).unwrap().read().unwrap();
        assert_eq!(got.as_i32().unwrap(), &want[..], "{n}");
    }
    let thirds: Vec<f64> = want.iter().map(|&v| f64::from(v) / 3.0).collect();
    let got = f.dataset("/szip_f64").unwrap().read().unwrap();
    assert_eq!(got.as_f64().unwrap(), &thirds[..]);
    common::run_python(
        r#"
import sys, warnings
warnings.simplefilter("ignore")
import h5py, hdf5plugin, numpy as np
want = (np.arange(8000, dtype="<i4") // 7).reshape(2000, 4)
want[::3, 1] *= -1
with h5py.File(sys.argv[1], "r") as f:
    assert np.array_equal(f["szip_f64"][:], want.astype("<f8") / 3)
    for n, ours in [("szip", 0), ("blosc2", 0), ("nbit", 0), ("nbit_mandatory_be", 0), ("szip_mandatory", 0),
                    ("szip_20_be", 0), ("szip_f64", 0), ("blosc2_mandatory", 0), ("testing_511", 1),
                    ("zfp_mandatory", 0)]:
        d = f[n]
        assert np.array_equal(d[:], want.astype("<f8") / 3 if n == "szip_f64" else want), n
        chunks = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
        # libhdf5's chunks (rows below 1280) went through every filter it has (not 511); ours (the rewritten
        # partial chunk at 1280 and the new ones) skip the one we cannot encode.
        assert {c.filter_mask for c in chunks if c.chunk_offset[0] < 1280} == {int(n == "testing_511")}, n
        assert {c.filter_mask for c in chunks if c.chunk_offset[0] >= 1280} == {ours}, n
        if n.startswith(("szip", "blosc2")):
            # Compressed: the chunks we wrote are smaller than the rows they hold.
            ours_sizes = [c.size for c in chunks if c.chunk_offset[0] >= 1536]
            assert max(ours_sizes) < 256 * 4 * d.dtype.itemsize, (n, ours_sizes)
        if n.startswith("nbit"):
            # Packed as libhdf5 packs: a full chunk of 1024 values of p bits, and (libhdf5's count) the byte
            # after the last bit.
            p = d.id.get_type().get_precision()
            sizes = {c.size for c in chunks}
            assert sizes == {1024 * p // 8 + 1}, (n, [(c.chunk_offset[0], c.size) for c in chunks])
        if n.startswith(("nbit", "zfp")):
            # Our chunks hold the bytes libhdf5's hold for the same values: libhdf5 writes them all again.
            with h5py.File(sys.argv[1] + "." + n, "w") as g:
                twin = h5py.h5d.create(g.id, b"x", d.id.get_type(), d.id.get_space(), dcpl=d.id.get_create_plist())
                twin.write(h5py.h5s.ALL, h5py.h5s.ALL, want)
                for at in [1280, 1536, 1792]:
                    assert twin.read_direct_chunk((at, 0)) == d.id.read_direct_chunk((at, 0)), (n, at)
"#,
        &[&path],
    );
}

fn f_noise(path: &Path) -> Vec<u32> {
    let f = H5File::open(path).unwrap();
    let a = f.dataset("/lzf_noise").unwrap().read().unwrap();
    a.as_u32().unwrap().to_vec()
}

/// A commit to an h5py-default file (superblock v0) cut short before its superblock switch leaves the previous
/// state, for us and for h5py; only the superblock's first 96 bytes differ from the committed file.
#[test]
fn commit_to_a_v0_file_cut_short_keeps_previous_state() {
    let Some((dir, path)) = common::python_written(
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("ids", data=np.arange(5, dtype="<i8"), maxshape=(None,), chunks=(4,))
    f.attrs["generation"] = 1
"#,
        "v0.h5",
        &["h5py"],
    ) else {
        return;
    };
    let old = std::fs::read(&path).unwrap();
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/ids", Array::vector(Data::I64((5..60).collect())))
        .unwrap();
    a.set_attr("/", "generation", Array::scalar(Data::I64(vec![2])))
        .unwrap();
    a.create_group("/new").unwrap();
    a.commit().unwrap();
    let new = std::fs::read(&path).unwrap();
    assert!(new.len() > old.len());
    assert_eq!(
        &new[96..old.len()],
        &old[96..],
        "committed bytes were overwritten"
    );
    let tail = new.len() - old.len();
    let mut last = None;
    for i in 0..=8 {
        let cut = old.len() + tail * i / 8;
        let mut crashed = new[..cut].to_vec();
        crashed[..96].copy_from_slice(&old[..96]);
        let f = H5File::from_bytes(crashed.clone()).unwrap();
        assert_eq!(
            f.dataset("/ids").unwrap().read().unwrap().as_i64().unwrap(),
            &[0, 1, 2, 3, 4]
        );
        assert_eq!(
            f.attr("/", "generation").unwrap().as_i64(),
            Some(&[1i64][..])
        );
        assert!(!f.exists("/new"));
        last = Some(crashed);
    }
    let crashed = dir.path().join("crashed.h5");
    std::fs::write(&crashed, last.unwrap()).unwrap();
    common::run_python(
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert list(f["ids"][:]) == [0, 1, 2, 3, 4] and f.attrs["generation"] == 1 and "new" not in f
with h5py.File(sys.argv[2], "r") as f:
    assert list(f["ids"][:]) == list(range(60)) and f.attrs["generation"] == 2 and "new" in f
"#,
        &[&crashed, &path],
    );
}

/// Files with a user block (h5py's `userblock_size`: the superblock and the base of every address move past
/// it), under superblock v0 and v3: appends land past the end, the user block's bytes stay as they were,
/// and h5py reads the result.
#[test]
fn append_to_files_with_a_user_block() {
    let Some((dir, path)) = common::python_written(
        r#"
import sys, h5py, numpy as np
for name, block, libver in [("", 512, "earliest"), (".v3", 1024, "v110")]:
    with h5py.File(sys.argv[1] + name, "w", userblock_size=block, libver=libver) as f:
        f.create_dataset("x", data=np.arange(5, dtype="<i8"), maxshape=(None,), chunks=(4,))
        f.attrs["a"] = 1
    with open(sys.argv[1] + name, "r+b") as raw:
        raw.write(b"user block: keep me")
"#,
        "ub.h5",
        &["h5py"],
    ) else {
        return;
    };
    let v3 = dir.path().join("ub.h5.v3");
    for (file, block, version) in [(&path, 512u64, 0u8), (&v3, 1024, 3)] {
        let sb = H5File::open(file).unwrap().superblock().clone();
        assert_eq!((sb.at, sb.base, sb.version), (block, block, version));
        for round in 0..2i64 {
            let mut a = FileAppender::open(file).unwrap();
            let from = 5 + round * 20;
            a.append_rows("/x", Array::vector(Data::I64((from..from + 20).collect())))
                .unwrap();
            a.set_attr(
                "/",
                &format!("r{round}"),
                Array::scalar(Data::I64(vec![round])),
            )
            .unwrap();
            a.create_group(&format!("/g{round}")).unwrap();
            a.commit().unwrap();
        }
        let bytes = std::fs::read(file).unwrap();
        assert!(bytes.starts_with(b"user block: keep me"));
        let f = H5File::open(file).unwrap();
        assert_eq!(
            f.dataset("/x").unwrap().read().unwrap().as_i64().unwrap(),
            &(0..45).collect::<Vec<_>>()[..]
        );
        common::assert_equal_to_h5py(file);
    }
    common::run_python(
        r#"
import sys, h5py
for name in sys.argv[1:]:
    with h5py.File(name, "r+") as f:
        assert list(f["x"][:]) == list(range(45)) and f.attrs["r1"] == 1 and "g1" in f, name
        assert f.userblock_size in (512, 1024)
        f["x"].resize((46,))
        f["x"][45] = 45
    with open(name, "rb") as raw:
        assert raw.read(19) == b"user block: keep me"
"#,
        &[&path, &v3],
    );
}

/// Rows appended to datasets h5py wrote through libhdf5's scale-offset filter (integers of several widths,
/// signedness and byte orders, with and without a fill value; D-scaled floats) read back in h5py: integers
/// exactly, floats to the dataset's D decimal digits.
#[test]
fn rows_appended_through_scale_offset() {
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    g = dict(chunks=(16,), maxshape=(None,))
    f.create_dataset("u8", data=(np.arange(50) * 3 % 200).astype("u1"), scaleoffset=0, **g)
    f.create_dataset("i16", data=np.arange(-500, 500, 20).astype("<i2"), scaleoffset=0, **g)
    f.create_dataset("i32be", data=(np.arange(40) * 1000 - 7).astype(">i4"), scaleoffset=0, **g)
    f.create_dataset("i64", data=(np.arange(30) * 10**12).astype("<i8"), scaleoffset=0, **g)
    f.create_dataset("fill", data=np.array([3, -1, 9, 4] * 5, dtype="<i4"), scaleoffset=0, fillvalue=-1, **g)
    f.create_dataset("f64", data=np.linspace(-2.5, 7.25, 45), scaleoffset=3, **g)
    f.create_dataset("f32", data=np.linspace(0.5, 3.5, 21).astype("<f4"), scaleoffset=2, **g)
"#,
        "scaleoffset.h5",
        &["h5py"],
    ) else {
        return;
    };
    let ints: [(&str, Vec<i64>); 5] = [
        ("u8", (0..40).map(|i| (i * 7 % 250) as i64).collect()),
        ("i16", (0..40).map(|i| i * 37 - 700).collect()),
        ("i32be", (0..40).map(|i| -i * 100_003).collect()),
        ("i64", (0..40).map(|i| i * 999_999_999_999 - 5).collect()),
        ("fill", vec![-1, 5, -1, 8, 0, 12, -1, 7]),
    ];
    let floats = [
        (
            "f64",
            (0..40).map(|i| i as f64 * 0.3125 - 4.0).collect::<Vec<_>>(),
        ),
        ("f32", (0..40).map(|i| i as f64 * 0.25 + 0.01).collect()),
    ];
    let mut a = FileAppender::open(&path).unwrap();
    for (name, v) in &ints {
        a.append_rows(&format!("/{name}"), Array::vector(Data::I64(v.clone())))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for (name, v) in &floats {
        a.append_rows(&format!("/{name}"), Array::vector(Data::F64(v.clone())))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    a.commit().unwrap();
    let expected = serde_json::json!({
        "ints": ints.iter().map(|(n, v)| (n.to_string(), v.clone())).collect::<std::collections::BTreeMap<_, _>>(),
        "floats": floats.iter().map(|(n, v)| (n.to_string(), v.clone())).collect::<std::collections::BTreeMap<_, _>>(),
    });
    let want = path.with_extension("json");
    std::fs::write(&want, expected.to_string()).unwrap();
    common::run_python(
        r#"
import sys, json, h5py, numpy as np
want = json.load(open(sys.argv[2]))
with h5py.File(sys.argv[1], "r") as f:
    old = {"u8": (np.arange(50) * 3 % 200), "i16": np.arange(-500, 500, 20), "i32be": np.arange(40) * 1000 - 7,
           "i64": np.arange(30) * 10**12, "fill": np.array([3, -1, 9, 4] * 5)}
    for name, rows in want["ints"].items():
        got = f[name][:].astype("i8").tolist()
        assert got == old[name].tolist() + rows, (name, got[-len(rows):], rows)
    # libhdf5 appending the same rows itself (in a twin file) re-encodes the partial chunk the same way; rows
    # there carry two roundings, so the bound is one step of 10^-D.
    oldf = {"f64": (np.linspace(-2.5, 7.25, 45), "<f8", 3), "f32": (np.linspace(0.5, 3.5, 21).astype("<f4"), "<f4", 2)}
    # (Written, closed, then appended to, as our appender's rows come in a session of their own.)
    with h5py.File(sys.argv[1] + ".twin", "w") as t:
        for name, rows in want["floats"].items():
            base, dt, digits = oldf[name]
            t.create_dataset(name, data=base, scaleoffset=digits, chunks=(16,), maxshape=(None,))
    with h5py.File(sys.argv[1] + ".twin", "a") as t:
        for name, rows in want["floats"].items():
            base, dt, digits = oldf[name]
            d = t[name]
            d.resize((len(base) + len(rows),))
            d[len(base):] = np.array(rows, dtype=dt)
    # Reopened, so that values come through the filter and not libhdf5's chunk cache.
    with h5py.File(sys.argv[1] + ".twin", "r") as t:
        for name, rows in want["floats"].items():
            base, dt, digits = oldf[name]
            got = f[name][:].astype("f8")
            ref = np.concatenate([base.astype("f8"), np.array(rows, dtype=dt).astype("f8")])
            theirs = t[name][:].astype("f8")
            step = 10.0 ** -digits
            assert got.shape == ref.shape and np.all(np.abs(got - ref) <= step * 1.0001), (name, np.max(np.abs(got - ref)))
            assert np.max(np.abs(got - ref)) <= np.max(np.abs(theirs - ref)) + 1e-6, (name, np.max(np.abs(got - ref)), np.max(np.abs(theirs - ref)))
            print(name, "ours", np.max(np.abs(got - ref)), "libhdf5", np.max(np.abs(theirs - ref)), "identical", np.array_equal(got, theirs))
"#,
        &[&path, &want],
    );
}

/// Appending to PyTables' time columns (the time class, whose one writer PyTables is): Time64 and Time32
/// arrays in either byte order take f64 seconds and whole seconds, stored byte for byte as PyTables stores the
/// same values appended by itself, and PyTables reads them back. Fractional seconds for a Time32 array and
/// times beyond 32-bit seconds are refused.
#[test]
fn rows_appended_to_pytables_time_arrays_are_stored_as_pytables_stores_them() {
    if !common::have_python_module("tables") {
        return;
    }
    let more = vec![
        -0.25,
        1e9 + 0.123456,
        -2.0000004,
        3.9999996,
        1.0000005,
        2147483647.5,
        -2147483648.25,
        86400.000001,
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("times.h5");
    let values = dir.path().join("more.json");
    std::fs::write(&values, json!(more).to_string()).unwrap();
    common::run_python(
        r#"
import sys, json, warnings
warnings.simplefilter("ignore")
import tables, numpy as np
first = np.array([0.0, 1.5, -1.5])
more = np.array(json.load(open(sys.argv[2])))
for name, batches in [(sys.argv[1], [first]), (sys.argv[1] + ".twin", [first, more])]:
    with tables.open_file(name, "w") as t:
        for order in ["little", "big"]:
            e64 = t.create_earray("/", "t64_" + order, tables.Time64Atom(), (0,), byteorder=order)
            e32 = t.create_earray("/", "t32_" + order, tables.Time32Atom(), (0,), byteorder=order)
            for b in batches:
                e64.append(b)
                e32.append(np.trunc(b).astype(np.int32))
"#,
        &[&path, &values],
    );
    let whole: Vec<i32> = more.iter().map(|v: &f64| v.trunc() as i32).collect();
    let mut a = FileAppender::open(&path).unwrap();
    for order in ["little", "big"] {
        a.append_rows(
            &format!("/t64_{order}"),
            Array::vector(Data::F64(more.clone())),
        )
        .unwrap();
        a.append_rows(
            &format!("/t32_{order}"),
            Array::vector(Data::I32(whole.clone())),
        )
        .unwrap();
        for (name, bad) in [
            ("t32", Data::F64(vec![1.5])),
            ("t64", Data::F64(vec![2147483648.0])),
            ("t64", Data::F64(vec![f64::NAN])),
        ] {
            let e = a
                .append_rows(&format!("/{name}_{order}"), Array::vector(bad))
                .unwrap_err();
            assert!(matches!(e, FormatError::Invalid(_)), "{name}: {e}");
        }
    }
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    let got = f.dataset("/t64_big").unwrap().read().unwrap();
    let want: Vec<f64> = [0.0, 1.5, -1.5].iter().chain(&more).copied().collect();
    for (g, w) in got.as_f64().unwrap().iter().zip(&want) {
        assert!((g - w).abs() < 1e-6, "{g} against {w}");
    }
    common::run_python(
        r#"
import sys, warnings
warnings.simplefilter("ignore")
import h5py, numpy as np
with h5py.File(sys.argv[1], "r") as ours, h5py.File(sys.argv[1] + ".twin", "r") as twin:
    for name in ours:
        a, b = ours[name].id, twin[name].id
        assert a.shape == b.shape, (name, a.shape, b.shape)
        size = a.get_type().get_size()
        raw_a = np.zeros(a.shape, dtype="V%d" % size)
        raw_b = np.zeros(b.shape, dtype="V%d" % size)
        a.read(h5py.h5s.ALL, h5py.h5s.ALL, raw_a, mtype=a.get_type())
        b.read(h5py.h5s.ALL, h5py.h5s.ALL, raw_b, mtype=b.get_type())
        differ = [(i, bytes(x).hex(), bytes(y).hex()) for i, (x, y) in enumerate(zip(raw_a, raw_b)) if bytes(x) != bytes(y)]
        assert not differ, (name, differ)
import tables
with tables.open_file(sys.argv[1]) as t, tables.open_file(sys.argv[1] + ".twin") as w:
    for node in t.root:
        assert np.array_equal(node[:], w.get_node("/" + node.name)[:]), node.name
"#,
        &[&path],
    );
}
