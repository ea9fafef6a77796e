//! Packed string columns: `FileWriter::write_strings` writes the same file as `Data::VarStr`, and
//! `Dataset::read_strings` reads what `read` reads (ours, h5py's, fixed-length, chunked, slices).

use crate::common;

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, FormatError, H5File, StringColumn};

/// Strings of every kind the heap holds: empty, ASCII, multi-byte, long, many (past one collection's
/// 65,535 objects when `many`).
fn strings(many: usize) -> Vec<String> {
    let mut v = vec![
        String::new(),
        "hello".into(),
        "héllo wörld ✓ 世界".into(),
        "x".repeat(5000),
        String::new(),
    ];
    v.extend((0..many).map(|i| format!("memory number {i}")));
    v
}

fn option_sets() -> Vec<DatasetOptions> {
    vec![
        DatasetOptions::default(),
        DatasetOptions {
            chunk: Some(vec![512]),
            deflate: Some(6),
            shuffle: true,
            fletcher32: true,
            max_shape: Some(vec![None]),
            ..Default::default()
        },
    ]
}

#[test]
fn a_column_writes_the_file_that_a_vector_of_strings_writes() {
    for many in [0, 3, 70_000] {
        for opts in option_sets() {
            let v = strings(many);
            let mut a = FileWriter::new();
            a.write_dataset("/g/s", Array::vector(Data::VarStr(v.clone())), opts.clone())
                .unwrap();
            let mut b = FileWriter::new();
            b.write_strings("/g/s", v.iter().collect(), opts.clone())
                .unwrap();
            let bytes = b.to_bytes().unwrap();
            assert!(a.to_bytes().unwrap() == bytes, "{many} strings, {opts:?}");

            let f = H5File::from_bytes(bytes).unwrap();
            let d = f.dataset("/g/s").unwrap();
            assert_eq!(d.read().unwrap().data, Data::VarStr(v.clone()));
            let col = d.read_strings().unwrap();
            assert_eq!(col.len(), v.len());
            assert!(col.iter().eq(v.iter().map(String::as_str)));
        }
    }
}

#[test]
fn compact_columns_write_alike_and_too_large_ones_fail_alike() {
    let compact = DatasetOptions {
        compact: true,
        ..Default::default()
    };
    for many in [3, 70_000] {
        let v = strings(many);
        let mut a = FileWriter::new();
        a.write_dataset(
            "/s",
            Array::vector(Data::VarStr(v.clone())),
            compact.clone(),
        )
        .unwrap();
        let mut b = FileWriter::new();
        b.write_strings("/s", v.iter().collect(), compact.clone())
            .unwrap();
        match (a.to_bytes(), b.to_bytes()) {
            (Ok(x), Ok(y)) => {
                assert!(x == y, "{many} strings");
                let f = H5File::from_bytes(y).unwrap();
                assert_eq!(f.dataset("/s").unwrap().read_strings().unwrap().to_vec(), v);
            }
            (Err(x), Err(y)) => {
                assert_eq!(many, 70_000);
                assert_eq!(x.to_string(), y.to_string());
            }
            other => panic!("{many} strings: {other:?}"),
        }
    }
}

#[test]
fn slices_of_contiguous_and_chunked_columns_read_as_the_rows_they_select() {
    let v = strings(2_000);
    for opts in option_sets() {
        let mut w = FileWriter::new();
        w.write_strings("/s", v.iter().collect(), opts).unwrap();
        let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
        let d = f.dataset("/s").unwrap();
        for (start, count) in [(0, 0), (0, 1), (3, 1), (4, 700), (1_500, 505)] {
            let col = d.read_strings_slice(&[start], &[count]).unwrap();
            let want = &v[start as usize..(start + count) as usize];
            assert_eq!(col.to_vec(), want, "rows {start}..+{count}");
            let rows = d.read_slice(&[start], &[count]).unwrap();
            assert_eq!(rows.data, Data::VarStr(want.to_vec()));
        }
        assert!(d.read_strings_slice(&[2_000], &[10]).is_err());
    }
}

#[test]
fn fixed_length_strings_and_strings_cut_at_a_null_read_as_read_gives_them() {
    let mut w = FileWriter::new();
    w.write_dataset(
        "/fixed",
        Array::vector(Data::FixedStr {
            len: 6,
            values: vec!["abc".into(), "abcdef".into(), "".into()],
        }),
        DatasetOptions::default(),
    )
    .unwrap();
    // A null byte ends a variable-length string early, whichever way it is read.
    let with_nulls = vec![
        "a\0b".to_string(),
        "plain".into(),
        "\0".into(),
        "end\0".into(),
    ];
    w.write_dataset(
        "/nulls",
        Array::vector(Data::VarStr(with_nulls.clone())),
        DatasetOptions::default(),
    )
    .unwrap();
    w.write_strings(
        "/nulls_column",
        with_nulls.iter().collect(),
        Default::default(),
    )
    .unwrap();
    w.write_strings("/empty", StringColumn::new(), Default::default())
        .unwrap();
    w.write_dataset(
        "/numbers",
        Array::vector(Data::F32(vec![1.0, 2.0])),
        DatasetOptions::default(),
    )
    .unwrap();
    let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
    for path in ["/fixed", "/nulls", "/nulls_column", "/empty"] {
        let d = f.dataset(path).unwrap();
        let want = d.read().unwrap().as_strings().unwrap().to_vec();
        assert_eq!(d.read_strings().unwrap().to_vec(), want, "{path}");
    }
    assert_eq!(
        f.dataset("/nulls")
            .unwrap()
            .read_strings()
            .unwrap()
            .to_vec(),
        vec!["a", "plain", "", "end"]
    );
    assert_eq!(
        f.dataset("/fixed")
            .unwrap()
            .read_strings()
            .unwrap()
            .to_vec(),
        vec!["abc", "abcdef", ""]
    );
    match f.dataset("/numbers").unwrap().read_strings() {
        Err(FormatError::TypeMismatch(m)) => assert!(m.contains("not strings"), "{m}"),
        other => panic!("numbers read as strings: {other:?}"),
    }
    // One column read into again and again: each read replaces what it held; an error empties it.
    let mut col = StringColumn::new();
    for path in ["/nulls", "/fixed", "/empty", "/nulls_column", "/fixed"] {
        let d = f.dataset(path).unwrap();
        d.read_strings_into(&mut col).unwrap();
        assert_eq!(col, d.read_strings().unwrap(), "{path}");
    }
    f.dataset("/nulls")
        .unwrap()
        .read_strings_slice_into(&[1], &[2], &mut col)
        .unwrap();
    assert_eq!(col.to_vec(), vec!["plain", ""]);
    assert!(f
        .dataset("/numbers")
        .unwrap()
        .read_strings_into(&mut col)
        .is_err());
    assert!(col.is_empty());
}

#[test]
fn h5py_reads_a_written_column_and_we_read_h5pys_strings_into_columns() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("column.h5");
    let v = strings(70_000);
    let mut w = FileWriter::new();
    w.write_strings("/s", v.iter().collect(), DatasetOptions::default())
        .unwrap();
    w.write_strings(
        "/chunked",
        v[..100].iter().collect(),
        option_sets()[1].clone(),
    )
    .unwrap();
    w.write_file(&ours).unwrap();
    let seen = common::python_json(
        "import h5py, json, sys\n\
         f = h5py.File(sys.argv[1], 'r')\n\
         out = {k: [s.decode('utf-8') for s in f[k][...]] for k in ('s', 'chunked')}\n\
         print(json.dumps(out))",
        &[&ours],
    );
    assert_eq!(seen["s"], serde_json::json!(v));
    assert_eq!(seen["chunked"], serde_json::json!(v[..100]));

    let theirs = dir.path().join("h5py.h5");
    common::run_python(
        "import h5py, sys\n\
         f = h5py.File(sys.argv[1], 'w', libver='earliest')\n\
         vals = ['', 'a', 'héllo ✓'] + ['turn %d' % i for i in range(3000)]\n\
         f.create_dataset('vlen', data=vals, dtype=h5py.string_dtype())\n\
         f.create_dataset('vlen_chunked', data=vals, dtype=h5py.string_dtype(), chunks=(100,), compression='gzip')\n\
         f.create_dataset('fixed', data=[b'ab', b'abcd', b''], dtype='S4')\n\
         f.close()",
        &[&theirs],
    );
    let f = H5File::open(&theirs).unwrap();
    for path in ["/vlen", "/vlen_chunked", "/fixed"] {
        let d = f.dataset(path).unwrap();
        let want = d.read().unwrap().as_strings().unwrap().to_vec();
        assert_eq!(d.read_strings().unwrap().to_vec(), want, "{path}");
    }
    let col = f.dataset("/vlen").unwrap().read_strings().unwrap();
    assert_eq!(col.len(), 3003);
    assert_eq!(col.get(2), Some("héllo ✓"));
    assert_eq!(col.get(3002), Some("turn 2999"));
}
