//! Files written by FileWriter are opened by h5py (HDF5 2.0) with equal values, and read back
//! by our own reader.

use crate::common;

use clawhdf5_format::inspect::array_to_json;
use clawhdf5_format::{f16, Array, Data, DatasetOptions, FileWriter, H5File};
use serde_json::{json, Value};

fn sample() -> Vec<(&'static str, Array, DatasetOptions)> {
    let chunked = DatasetOptions {
        chunk: Some(vec![7]),
        deflate: Some(6),
        shuffle: true,
        fletcher32: true,
        ..Default::default()
    };
    let unlimited = DatasetOptions {
        chunk: Some(vec![4, 3]),
        max_shape: Some(vec![None, Some(3)]),
        deflate: Some(1),
        ..Default::default()
    };
    let compact = DatasetOptions {
        compact: true,
        ..Default::default()
    };
    vec![
        (
            "/ints/i8",
            Array::vector(Data::I8(vec![-128, -1, 0, 127])),
            DatasetOptions::default(),
        ),
        (
            "/ints/i16",
            Array::vector(Data::I16(vec![-32768, 5, 32767])),
            DatasetOptions::default(),
        ),
        (
            "/ints/i32",
            Array::vector(Data::I32((0..100).map(|x| x * 1000 - 7).collect())),
            chunked.clone(),
        ),
        (
            "/ints/i64",
            Array::vector(Data::I64(vec![i64::MIN, 0, i64::MAX])),
            compact.clone(),
        ),
        (
            "/ints/u8",
            Array::vector(Data::U8(vec![0, 200, 255])),
            DatasetOptions::default(),
        ),
        (
            "/ints/u16",
            Array::vector(Data::U16(vec![0, 65535])),
            DatasetOptions::default(),
        ),
        (
            "/ints/u32",
            Array::vector(Data::U32(vec![0, u32::MAX])),
            DatasetOptions::default(),
        ),
        (
            "/ints/u64",
            Array::vector(Data::U64((0..50).map(|x| x * x * 1_000_000_007).collect())),
            chunked.clone(),
        ),
        (
            "/floats/f16",
            Array::vector(Data::F16(vec![
                f16::from_f32(1.5),
                f16::from_f32(-0.25),
                f16::from_f32(65504.0),
            ])),
            DatasetOptions::default(),
        ),
        (
            "/floats/f32",
            Array::matrix(
                3,
                4,
                Data::F32((0..12).map(|x| x as f32 * 0.5 - 2.0).collect()),
            )
            .unwrap(),
            DatasetOptions::default(),
        ),
        (
            "/floats/f64",
            Array::matrix(10, 3, Data::F64((0..30).map(|x| x as f64 / 7.0).collect())).unwrap(),
            unlimited,
        ),
        (
            "/floats/scalar",
            Array::scalar(Data::F64(vec![std::f64::consts::PI])),
            DatasetOptions::default(),
        ),
        (
            "/strings/vlen",
            Array::vector(Data::VarStr(vec![
                "hello".into(),
                "".into(),
                "héllo wörld ✓".into(),
                "x".repeat(5000),
            ])),
            DatasetOptions::default(),
        ),
        (
            "/strings/vlen_chunked",
            Array::vector(Data::VarStr(
                (0..300).map(|i| format!("memory #{i}")).collect(),
            )),
            DatasetOptions {
                chunk: Some(vec![64]),
                deflate: Some(4),
                max_shape: Some(vec![None]),
                ..Default::default()
            },
        ),
        (
            "/strings/fixed",
            Array::vector(Data::FixedStr {
                len: 6,
                values: vec!["abc".into(), "abcdef".into(), "".into()],
            }),
            DatasetOptions::default(),
        ),
        (
            "/strings/scalar",
            Array::scalar(Data::VarStr(vec!["one string".into()])),
            DatasetOptions::default(),
        ),
        (
            "/types/compound",
            Array::vector(Data::Compound(vec![
                ("id".into(), Data::U32(vec![1, 2, 3])),
                ("score".into(), Data::F64(vec![0.5, -1.25, 3.0])),
                (
                    "tag".into(),
                    Data::FixedStr {
                        len: 4,
                        values: vec!["a".into(), "bb".into(), "cccc".into()],
                    },
                ),
                (
                    "xy".into(),
                    Data::ArrayOf {
                        dims: vec![2],
                        data: Box::new(Data::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
                    },
                ),
                (
                    "note".into(),
                    Data::VarStr(vec!["x".into(), "".into(), "zz".into()]),
                ),
            ])),
            DatasetOptions {
                chunk: Some(vec![2]),
                deflate: Some(1),
                ..Default::default()
            },
        ),
        (
            "/types/bool",
            Array::vector(Data::Enum {
                values: vec![1, 0, 1],
                members: vec![("FALSE".into(), 0), ("TRUE".into(), 1)],
            }),
            DatasetOptions::default(),
        ),
        (
            "/types/enum",
            Array::vector(Data::Enum {
                values: vec![300, -2, 300],
                members: vec![("NEG".into(), -2), ("BIG".into(), 300)],
            }),
            DatasetOptions::default(),
        ),
        (
            "/types/array",
            Array::vector(Data::ArrayOf {
                dims: vec![2, 3],
                data: Box::new(Data::I16((0..12).collect())),
            }),
            DatasetOptions::default(),
        ),
        (
            "/types/opaque",
            Array::vector(Data::Opaque {
                size: 3,
                tag: String::new(),
                bytes: vec![1, 2, 3, 4, 5, 6],
            }),
            DatasetOptions::default(),
        ),
        (
            "/types/vlen_seq",
            Array::vector(Data::VarLen(vec![
                Data::I32(vec![1, 2, 3]),
                Data::I32(vec![]),
                Data::I32(vec![-7]),
            ])),
            DatasetOptions::default(),
        ),
        (
            "/empty/unlimited",
            Array::new(vec![0, 8], Data::F32(vec![])).unwrap(),
            DatasetOptions {
                chunk: Some(vec![16, 8]),
                max_shape: Some(vec![None, Some(8)]),
                ..Default::default()
            },
        ),
    ]
}

fn build() -> (FileWriter, Vec<(&'static str, Array, DatasetOptions)>) {
    let mut w = FileWriter::new();
    let items = sample();
    for (p, a, o) in &items {
        w.write_dataset(p, a.clone(), o.clone()).unwrap();
    }
    w.create_group("/a/b/c/d").unwrap();
    for i in 0..20 {
        w.create_group(&format!("/many/g{i:02}")).unwrap();
    }
    w.set_attr(
        "/",
        "title",
        Array::scalar(Data::VarStr(vec!["agent memory".into()])),
    )
    .unwrap();
    w.set_attr("/", "version", Array::scalar(Data::U32(vec![3])))
        .unwrap();
    w.set_attr(
        "/floats/f32",
        "units",
        Array::scalar(Data::FixedStr {
            len: 8,
            values: vec!["meters".into()],
        }),
    )
    .unwrap();
    w.set_attr(
        "/floats/f32",
        "scale",
        Array::vector(Data::F64(vec![0.5, 2.0])),
    )
    .unwrap();
    for i in 0..12 {
        w.set_attr(
            "/many",
            &format!("attr{i:02}"),
            Array::vector(Data::I64(vec![i, -i])),
        )
        .unwrap();
    }
    w.set_attr(
        "/types/compound",
        "pair",
        Array::scalar(Data::Compound(vec![
            ("a".into(), Data::I8(vec![-1])),
            ("b".into(), Data::F16(vec![f16::from_f32(0.5)])),
        ])),
    )
    .unwrap();
    w.set_attr(
        "/types/array",
        "bits",
        Array::vector(Data::Bitfield {
            size: 2,
            values: vec![0x0101, 0xffff],
        }),
    )
    .unwrap();
    w.set_attr(
        "/many/g03",
        "names",
        Array::vector(Data::VarStr(vec!["a".into(), "bb".into()])),
    )
    .unwrap();
    (w, items)
}

#[test]
fn our_reader_reads_what_we_write() {
    let (w, items) = build();
    let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
    for (p, a, _) in &items {
        let got = f.dataset(p).unwrap().read().unwrap();
        assert_eq!(&got, a, "{p}");
    }
    assert_eq!(f.list("/many").unwrap().len(), 20);
    assert!(f.exists("/a/b/c/d"));
    assert!(!f.exists("/a/x"));
    assert_eq!(f.attr("/", "version").unwrap().as_u32(), Some(&[3u32][..]));
    assert_eq!(f.attr_names("/many").unwrap().len(), 12);
    assert_eq!(
        f.attr("/types/array", "bits").unwrap().data,
        Data::Bitfield {
            size: 2,
            values: vec![0x0101, 0xffff]
        }
    );
    assert_eq!(
        f.attr("/many", "attr07").unwrap().as_i64(),
        Some(&[7i64, -7][..])
    );
    assert_eq!(
        f.attr("/many/g03", "names").unwrap().as_strings().unwrap(),
        &["a".to_string(), "bb".to_string()]
    );
    let ds = f.dataset("/ints/i32").unwrap();
    let rows = ds.read_rows(10, 15).unwrap();
    assert_eq!(
        rows.as_i32().unwrap(),
        &(10..25).map(|x| x * 1000 - 7).collect::<Vec<_>>()[..]
    );
    let m = f.dataset("/floats/f64").unwrap();
    assert_eq!(m.max_shape().unwrap(), &[None, Some(3)]);
    let r = m.read_rows(5, 3).unwrap();
    assert_eq!(r.shape, vec![3, 3]);
    assert_eq!(r.as_f64().unwrap()[0], 15.0 / 7.0);
}

fn h5py_value(dump: &Value, path: &str) -> Value {
    dump.get(path)
        .unwrap_or_else(|| panic!("h5py does not see {path}"))
        .get("value")
        .cloned()
        .unwrap()
}

#[test]
fn h5py_reads_what_we_write() {
    if !common::have_python_module("h5py") {
        return;
    }
    let (w, items) = build();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.h5");
    w.write_file(&path).unwrap();
    let dump = common::h5py_dump(&path);
    for (p, a, opts) in &items {
        let theirs = h5py_value(&dump, p);
        assert_eq!(theirs, array_to_json(a), "values of {p}");
        let meta = &dump[*p];
        if opts.deflate.is_some() {
            assert_eq!(meta["compression"], json!("gzip"), "{p}");
        }
        if opts.shuffle {
            assert_eq!(meta["shuffle"], json!(true), "{p}");
        }
        if opts.fletcher32 {
            assert_eq!(meta["fletcher32"], json!(true), "{p}");
        }
        if let Some(c) = &opts.chunk {
            assert_eq!(meta["chunks"], json!(c), "{p}");
        }
    }
    assert_eq!(dump["/floats/f64"]["maxshape"], json!([null, 3]));
    assert_eq!(dump["/"]["attrs"]["title"], json!("agent memory"));
    assert_eq!(dump["/"]["attrs"]["version"], json!(3));
    assert_eq!(dump["/floats/f32"]["attrs"]["units"], json!("meters"));
    assert_eq!(dump["/floats/f32"]["attrs"]["scale"], json!([0.5, 2.0]));
    assert_eq!(dump["/many"]["links"].as_array().unwrap().len(), 20);
    assert_eq!(dump["/many"]["attrs"].as_object().unwrap().len(), 12);
    assert_eq!(dump["/many"]["attrs"]["attr05"], json!([5, -5]));
    assert_eq!(dump["/many/g03"]["attrs"]["names"], json!(["a", "bb"]));
    assert_eq!(dump["/a/b/c/d"]["kind"], json!("group"));
    assert_eq!(
        dump["/types/compound"]["attrs"]["pair"],
        json!({"a": -1, "b": 0.5})
    );
}

#[test]
fn h5py_reads_large_dense_groups_and_attributes() {
    let mut w = FileWriter::new();
    // ~3,000 links need more than one 64 KiB heap block: root indirect block + leaf of 3,000.
    for i in 0..3000 {
        w.create_group(&format!("/big/group_with_a_longish_name_{i:05}"))
            .unwrap();
    }
    for i in 0..200 {
        w.set_attr(
            "/big",
            &format!("attribute_{i:03}"),
            Array::vector(Data::F64(vec![i as f64; 100])),
        )
        .unwrap();
    }
    // Attributes too big for an object header or a managed heap object ("huge" objects).
    w.set_attr(
        "/big",
        "huge",
        Array::vector(Data::F64((0..100_000).map(|x| x as f64).collect())),
    )
    .unwrap();
    w.create_group("/small").unwrap();
    w.set_attr("/small", "k", Array::scalar(Data::U8(vec![1])))
        .unwrap();
    w.set_attr(
        "/small",
        "wide",
        Array::vector(Data::I32((0..20_000).collect())),
    )
    .unwrap();
    let bytes = w.to_bytes().unwrap();
    let f = H5File::from_bytes(bytes.clone()).unwrap();
    assert_eq!(
        f.attr("/big", "huge").unwrap().as_f64().unwrap()[99_999],
        99_999.0
    );
    assert_eq!(
        f.attr("/small", "wide").unwrap().as_i32().unwrap()[19_999],
        19_999
    );
    assert_eq!(f.list("/big").unwrap().len(), 3000);
    assert!(f.exists("/big/group_with_a_longish_name_02999"));
    assert_eq!(
        f.attr("/big", "attribute_150").unwrap().as_f64().unwrap()[99],
        150.0
    );
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.h5");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, h5py\n\
             f = h5py.File(sys.argv[1], 'r')\n\
             g = f['big']\n\
             assert len(g) == 3000, len(g)\n\
             assert 'group_with_a_longish_name_01234' in g\n\
             assert len(g.attrs) == 201\n\
             assert g.attrs['huge'][99999] == 99999.0\n\
             assert f['small'].attrs['wide'][19999] == 19999 and f['small'].attrs['k'] == 1\n\
             assert g.attrs['attribute_199'][5] == 199.0\n\
             print('ok')",
        )
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// h5py adds, deletes and replaces links and attributes in dense storage we wrote (one heap block, several
/// blocks under a root indirect block, huge objects), and in a group whose dense storage our appender
/// rewrote in an h5py file; libhdf5 must manage our heaps (an earlier heap header said its root indirect
/// block starts with 0 rows, and libhdf5's first insertion beyond the root direct block failed).
#[test]
fn h5py_modifies_dense_storage_we_wrote() {
    use clawhdf5_format::FileAppender;
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut w = FileWriter::new();
    for i in 0..20 {
        let d = format!("/one/d{i:02}");
        w.write_dataset(
            &d,
            Array::vector(Data::I32(vec![i])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.set_attr(
            "/one",
            &format!("a{i:02}"),
            Array::vector(Data::I32(vec![i])),
        )
        .unwrap();
    }
    for i in 0..3000 {
        w.create_group(&format!("/many/group_with_a_longish_name_{i:05}"))
            .unwrap();
    }
    for i in 0..40 {
        let v = Array::vector(Data::F64(vec![i as f64; 400]));
        w.set_attr("/many", &format!("a{i:02}"), v).unwrap();
    }
    for i in 0..3 {
        let v = Array::vector(Data::F64(vec![i as f64; 1000]));
        w.set_attr("/many", &format!("huge{i}"), v).unwrap();
    }
    let ours = dir.path().join("ours.h5");
    std::fs::write(&ours, w.to_bytes().unwrap()).unwrap();
    let theirs = dir.path().join("theirs.h5");
    common::run_python(
        "import sys, h5py, numpy as np\n\
         with h5py.File(sys.argv[1], 'w', libver='latest') as f:\n\
         \x20   for i in range(20):\n\
         \x20       f[f'one/d{i:02}'] = np.array([i], dtype='i4')\n\
         \x20       f['one'].attrs[f'a{i:02}'] = np.array([i], dtype='i4')\n",
        &[&theirs],
    );
    let mut a = FileAppender::open(&theirs).unwrap();
    a.write_dataset(
        "/one/appended",
        Array::vector(Data::F64(vec![1.5, 2.5])),
        DatasetOptions::default(),
    )
    .unwrap();
    a.set_attr("/one", "appended", Array::vector(Data::I32(vec![7])))
        .unwrap();
    a.commit().unwrap();
    for path in [&ours, &theirs] {
        common::run_python(
            "import sys, h5py, numpy as np\n\
             with h5py.File(sys.argv[1], 'a') as f:\n\
             \x20   for name in ('one', 'many'):\n\
             \x20       if name not in f:\n\
             \x20           continue\n\
             \x20       g = f[name]\n\
             \x20       for i in range(300):\n\
             \x20           g[f'new{i:03}'] = np.arange(3)\n\
             \x20       for i in range(60):\n\
             \x20           g.attrs[f'n{i:02}'] = np.arange(300.0) + i\n\
             \x20       del g[sorted(k for k in g.keys() if not k.startswith('new'))[3]]\n\
             \x20       del g.attrs['a03']\n\
             \x20       g.attrs['a04'] = 'replaced'\n\
             \x20       g.attrs['huge9'] = np.arange(3000.0)\n\
             \x20       if 'huge1' in g.attrs:\n\
             \x20           del g.attrs['huge1']\n\
             with h5py.File(sys.argv[1], 'r') as f:\n\
             \x20   g = f['one']\n\
             \x20   assert g.attrs['n59'][-1] == 358.0 and g.attrs['a04'] == 'replaced' and g.attrs['a05'] == 5\n\
             \x20   assert list(g['new299'][()]) == [0, 1, 2] and g['d19'][0] == 19\n",
            &[path],
        );
        common::assert_equal_to_h5py(path);
    }
    let f = H5File::open(&ours).unwrap();
    assert_eq!(f.list("/many").unwrap().len(), 3299);
    assert_eq!(f.attr("/many", "huge2").unwrap().as_f64().unwrap()[0], 2.0);
    let f = H5File::open(&theirs).unwrap();
    assert_eq!(f.attr("/one", "appended").unwrap().as_i32().unwrap(), &[7]);
    assert_eq!(
        f.attr("/one", "huge9").unwrap().as_f64().unwrap()[2999],
        2999.0
    );
}

/// libhdf5 counts a v2 object header's attributes through its attribute-info message only: without one,
/// `len(attrs)` was 0, h5repack dropped the root's attributes, and h5py adding then deleting attributes
/// lost some of its own (its count and the stored messages disagreed).
#[test]
fn h5py_counts_and_edits_compact_attributes_we_wrote() {
    use clawhdf5_format::FileAppender;
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut w = FileWriter::new();
    w.write_dataset(
        "/d",
        Array::vector(Data::I32(vec![1, 2, 3])),
        DatasetOptions::default(),
    )
    .unwrap();
    w.create_group("/g").unwrap();
    w.create_group("/bare").unwrap();
    for (object, n) in [("/", 8), ("/d", 3), ("/g", 1)] {
        for i in 0..n {
            w.set_attr(
                object,
                &format!("ours{i}"),
                Array::scalar(Data::I32(vec![i])),
            )
            .unwrap();
        }
    }
    let ours = dir.path().join("ours.h5");
    std::fs::write(&ours, w.to_bytes().unwrap()).unwrap();
    // Objects the appender rewrites: one of ours, and in an h5py file one with compact attributes.
    let appended = dir.path().join("appended.h5");
    std::fs::copy(&ours, &appended).unwrap();
    let mut a = FileAppender::open(&appended).unwrap();
    a.set_attr("/bare", "ours0", Array::scalar(Data::I32(vec![0])))
        .unwrap();
    a.set_attr("/g", "ours1", Array::scalar(Data::I32(vec![1])))
        .unwrap();
    a.commit().unwrap();
    let theirs = dir.path().join("theirs.h5");
    common::run_python(
        "import sys, h5py\n\
         with h5py.File(sys.argv[1], 'w', libver='latest') as f:\n\
         \x20   f.create_group('g').attrs['ours0'] = 0\n",
        &[&theirs],
    );
    let mut a = FileAppender::open(&theirs).unwrap();
    for i in 1..4 {
        a.set_attr("/g", &format!("ours{i}"), Array::scalar(Data::I32(vec![i])))
            .unwrap();
    }
    a.commit().unwrap();
    let check = "import sys, h5py, h5py.h5o as h5o\n\
         objects = sys.argv[2].split(',')\n\
         with h5py.File(sys.argv[1], 'a') as f:\n\
         \x20   for name in objects:\n\
         \x20       attrs = f[name].attrs\n\
         \x20       ours = sorted(attrs.keys())\n\
         \x20       assert ours and all(k.startswith('ours') for k in ours), (name, ours)\n\
         \x20       n = h5o.get_info(f[name].id).num_attrs\n\
         \x20       assert len(attrs) == n == len(ours), (name, len(attrs), n, ours)\n\
         \x20       for i in range(10):\n\
         \x20           attrs[f'theirs{i}'] = i\n\
         \x20       assert len(attrs) == len(ours) + 10, (name, len(attrs))\n\
         \x20       for k in ours:\n\
         \x20           del attrs[k]\n\
         \x20       assert sorted(attrs.keys()) == [f'theirs{i}' for i in range(10)], (name, sorted(attrs.keys()))\n\
         \x20       assert [int(attrs[f'theirs{i}']) for i in range(10)] == list(range(10))\n\
         \x20       for i in range(10):\n\
         \x20           del attrs[f'theirs{i}']\n\
         \x20       assert len(attrs) == 0 and not list(attrs.keys()), name\n";
    for (file, objects) in [
        (&ours, "/,/d,/g"),
        (&appended, "/,/d,/g,/bare"),
        (&theirs, "/g"),
    ] {
        let out = std::process::Command::new("python3")
            .args(["-c", check])
            .arg(file)
            .arg(objects)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        common::assert_equal_to_h5py(file);
    }
}
