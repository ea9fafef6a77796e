//! FileAppender on files whose superblock sets addresses and/or lengths of 4 bytes (h5py's
//! `fcpl.set_sizes(4, 4)`, `(4, 8)`, `(8, 4)`), in superblock versions 0 and 3: rows appended, datasets (vlen strings, chunked
//! and deflated), groups, dense attributes, unlinks, object references and a replaced dataset over several
//! commits; then h5py (HDF5 2.0), `h5dump` (when installed) and our reader read every value back. A value
//! too wide for the file's lengths is a typed error that leaves the file byte-identical; files with 2-byte
//! fields are refused, untouched.

use crate::common;

use clawhdf5_format::region::Selection;
use clawhdf5_format::{Array, Data, DatasetOptions, FileAppender, FormatError, H5File};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Creates `argv[1]` with sizes of offsets `argv[2]` and lengths `argv[3]`, libver bounds `argv[4]`
/// (earliest: superblock 0; v18: superblock 2; latest: superblock 3).
const CREATE: &str = r#"
import sys, h5py, numpy as np
name, so, sl, libver = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
fcpl.set_sizes(so, sl)
fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
low = {"latest": h5py.h5f.LIBVER_LATEST, "v18": h5py.h5f.LIBVER_V18}.get(libver, h5py.h5f.LIBVER_EARLIEST)
fapl.set_libver_bounds(low, h5py.h5f.LIBVER_LATEST)
f = h5py.File(h5py.h5f.create(name.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl))
# libhdf5 itself cannot read an unlimited dimension back from 4-byte lengths in a latest-format file (its
# extensible array index): there the maximum is fixed.
grow_max = 1000 if libver == "latest" else None
f.create_dataset("grow", data=np.arange(10, dtype="i4").reshape(5, 2), maxshape=(grow_max, 2), chunks=(2, 2))
f.create_dataset("cont", data=np.arange(6.0))
f.create_dataset("s", data=np.array(["a", "bb", "ccc"], dtype=object), dtype=h5py.string_dtype())
f.attrs["x"] = 3
f.attrs["vs"] = "hello"
g = f.create_group("g")
for i in range(10):
    g.create_group(f"c{i}")
f["ref"] = f["cont"].ref
f.attrs["r"] = g.ref
f.close()
"#;

/// Prints every value of the appended file as JSON (references as the paths they name). With `argv[2]`
/// "skip" the dataset "refs" is left out: libhdf5 (2.0 and 1.10 alike) cannot read an array of more than one
/// object reference of 4-byte addresses, even one it wrote itself.
const READ: &str = r#"
import sys, json, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
skip = sys.argv[2] == "skip"
def val(v):
    if isinstance(v, h5py.RegionReference):
        return {"name": f[v].name, "sel": f[v][v].tolist()}
    if isinstance(v, h5py.Reference):
        return f[v].name
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return [val(x) for x in v.tolist()] if v.dtype == object else v.tolist()
    if isinstance(v, list):
        return [val(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v
out = {"datasets": {}, "attrs": {}, "groups": sorted(f["g"].keys())}
def visit(name, obj):
    if isinstance(obj, h5py.Dataset) and not (skip and name == "refs"):
        out["datasets"][name] = val(obj[()])
    for k, v in obj.attrs.items():
        out["attrs"][name + "@" + k] = val(v)
f.visititems(visit)
for k, v in f.attrs.items():
    out["attrs"]["/@" + k] = val(v)
print(json.dumps(out))
"#;

fn have_h5py() -> bool {
    common::have_python_module("h5py") && common::have_python_module("numpy")
}

fn create(dir: &Path, so: u8, sl: u8, libver: &str) -> PathBuf {
    let path = dir.join(format!("o{so}l{sl}{libver}.h5"));
    let (so, sl) = (so.to_string(), sl.to_string());
    common::run_python(
        CREATE,
        &[&path, Path::new(&so), Path::new(&sl), Path::new(libver)],
    );
    path
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("vlen {i} ✓")).collect()
}

fn seqs() -> Data {
    Data::VarLen(vec![Data::I32(vec![1, 2, 3]), Data::I32(vec![4])])
}

fn chunked() -> DatasetOptions {
    DatasetOptions {
        chunk: Some(vec![16]),
        deflate: Some(6),
        max_shape: Some(vec![None]),
        ..Default::default()
    }
}

/// Three commits of everything the appender does.
fn append_everything(path: &Path) {
    let mut a = FileAppender::open(path).unwrap();
    a.append_rows(
        "/grow",
        Array::matrix(3, 2, Data::I32(vec![10, 11, 12, 13, 14, 15])).unwrap(),
    )
    .unwrap();
    a.write_dataset(
        "/new/vs",
        Array::vector(Data::VarStr(texts(20))),
        DatasetOptions::default(),
    )
    .unwrap();
    a.write_dataset(
        "/new/chunked",
        Array::vector(Data::F64((0..100).map(f64::from).collect())),
        chunked(),
    )
    .unwrap();
    a.create_group("/g/c10").unwrap();
    for i in 0..10 {
        a.set_attr("/grow", &format!("a{i}"), Array::scalar(Data::I64(vec![i])))
            .unwrap();
    }
    a.set_attr("/", "y", Array::vector(Data::VarStr(texts(2))))
        .unwrap();
    a.commit().unwrap();

    let mut a = FileAppender::open(path).unwrap();
    a.unlink("/g/c3").unwrap();
    a.append_rows(
        "/grow",
        Array::matrix(1, 2, Data::I32(vec![16, 17])).unwrap(),
    )
    .unwrap();
    a.append_rows("/new/chunked", Array::vector(Data::F64(vec![100.0, 101.0])))
        .unwrap();
    a.write_object_refs("/refs", &["/cont", "/new/vs", "/g"])
        .unwrap();
    a.write_object_refs("/ref1", &["/new/vs"]).unwrap();
    a.write_dataset("/new/seq", Array::vector(seqs()), DatasetOptions::default())
        .unwrap();
    let blocks = Selection::Blocks(vec![(vec![2], vec![4])]);
    a.set_attr_region_refs("/", "rr", &[], &[("/new/chunked", blocks)])
        .unwrap();
    let points = Selection::Points(vec![vec![1, 0], vec![3, 1]]);
    a.write_region_refs("/rr1", &[("/grow", points)]).unwrap();
    a.set_attr_object_refs("/", "r2", &[], &["/new/chunked"])
        .unwrap();
    a.commit().unwrap();

    // The dataset h5py's references (and ours) point at moves: they follow it.
    let mut a = FileAppender::open(path).unwrap();
    a.replace_dataset(
        "/cont",
        Array::vector(Data::F64(vec![9.0, 8.0, 7.0])),
        DatasetOptions::default(),
    )
    .unwrap();
    a.set_attr("/cont", "after", Array::scalar(Data::U8(vec![1])))
        .unwrap();
    a.commit().unwrap();
}

/// What h5py reads (`with_ref_array`: the dataset "refs" too).
fn expected(with_ref_array: bool) -> Value {
    let mut attrs = serde_json::Map::new();
    attrs.insert("/@x".into(), json!(3));
    attrs.insert("/@vs".into(), json!("hello"));
    attrs.insert("/@r".into(), json!("/g"));
    attrs.insert("/@y".into(), json!(texts(2)));
    attrs.insert("/@r2".into(), json!("/new/chunked"));
    attrs.insert(
        "/@rr".into(),
        json!({"name": "/new/chunked", "sel": [2.0, 3.0, 4.0]}),
    );
    attrs.insert("cont@after".into(), json!(1));
    for i in 0..10 {
        attrs.insert(format!("grow@a{i}"), json!(i));
    }
    let mut groups: Vec<String> = (0..11)
        .filter(|&i| i != 3)
        .map(|i| format!("c{i}"))
        .collect();
    groups.sort();
    let mut chunked: Vec<f64> = (0..100).map(f64::from).collect();
    chunked.extend([100.0, 101.0]);
    let mut want = json!({
        "datasets": {
            "grow": (0..18).collect::<Vec<i32>>().chunks(2).map(|r| r.to_vec()).collect::<Vec<_>>(),
            "cont": [9.0, 8.0, 7.0],
            "s": ["a", "bb", "ccc"],
            "ref": "/cont",
            "ref1": ["/new/vs"],
            "new/seq": [[1, 2, 3], [4]],
            "rr1": [{"name": "/grow", "sel": [2, 7]}],
            "new/vs": texts(20),
            "new/chunked": chunked,
        },
        "attrs": attrs,
        "groups": groups,
    });
    if with_ref_array {
        want["datasets"]["refs"] = json!(["/cont", "/new/vs", "/g"]);
    }
    want
}

/// Our reader's view of the same values.
fn check_our_reader(path: &Path) {
    let f = H5File::open(path).unwrap();
    let grow = f.dataset("/grow").unwrap().read().unwrap();
    assert_eq!(grow.shape, vec![9, 2]);
    assert_eq!(grow.data, Data::I32((0..18).collect()));
    assert_eq!(
        f.dataset("/new/vs").unwrap().read().unwrap().data,
        Data::VarStr(texts(20))
    );
    assert_eq!(
        f.dataset("/s").unwrap().read().unwrap().data,
        Data::VarStr(vec!["a".into(), "bb".into(), "ccc".into()])
    );
    assert_eq!(
        f.dataset("/cont").unwrap().read().unwrap().data,
        Data::F64(vec![9.0, 8.0, 7.0])
    );
    assert_eq!(f.attr_names("/grow").unwrap().len(), 10);
    assert_eq!(f.attr("/grow", "a7").unwrap().data, Data::I64(vec![7]));
    let cont = f.resolve("/cont").unwrap();
    match f.dataset("/ref").unwrap().read().unwrap().data {
        Data::ObjectRef(v) => assert_eq!(v, vec![cont]),
        other => panic!("{other:?}"),
    }
    match f.dataset("/refs").unwrap().read().unwrap().data {
        Data::ObjectRef(v) => assert_eq!(
            v,
            vec![
                cont,
                f.resolve("/new/vs").unwrap(),
                f.resolve("/g").unwrap()
            ]
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(f.list("/g").unwrap().len(), 10);
    assert_eq!(f.dataset("/new/seq").unwrap().read().unwrap().data, seqs());
    match f.attr("/", "rr").unwrap().data {
        Data::RegionRef(v) => {
            assert_eq!(v.len(), 1);
            assert_eq!(v[0].object, f.resolve("/new/chunked").unwrap());
            assert_eq!(v[0].selection, Selection::Blocks(vec![(vec![2], vec![4])]));
        }
        other => panic!("{other:?}"),
    }
}

/// `h5dump` (Debian's HDF5 1.10), when installed, parses the whole file.
fn check_h5dump(path: &Path) {
    if !Path::new("/usr/bin/h5dump").exists() {
        eprintln!("no /usr/bin/h5dump: skipped for {}", path.display());
        return;
    }
    let out = Command::new("/usr/bin/h5dump").arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "h5dump {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn appending_to_files_with_narrow_lengths_reads_back_everywhere() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (so, sl, libver) in [
        (4, 4, "earliest"),
        (4, 4, "latest"),
        (4, 8, "earliest"),
        (4, 8, "latest"),
        (8, 4, "earliest"),
        (8, 4, "latest"),
        (4, 4, "v18"),
        (4, 8, "v18"),
        (8, 4, "v18"),
    ] {
        let path = create(dir.path(), so, sl, libver);
        append_everything(&path);
        let skip = if so == 4 { "skip" } else { "all" };
        let got = common::python_json(READ, &[&path, Path::new(skip)]);
        assert_eq!(got, expected(so == 8), "{}", path.display());
        check_our_reader(&path);
        check_h5dump(&path);
    }
}

#[test]
fn a_dimension_too_wide_for_the_lengths_is_a_typed_error_and_the_file_is_unchanged() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for libver in ["earliest", "latest"] {
        let path = create(dir.path(), 8, 4, libver);
        let before = std::fs::read(&path).unwrap();
        let mut a = FileAppender::open(&path).unwrap();
        let opts = DatasetOptions {
            chunk: Some(vec![4]),
            max_shape: Some(vec![Some(1 << 33)]),
            ..Default::default()
        };
        a.write_dataset("/wide", Array::vector(Data::U8(vec![1, 2, 3])), opts)
            .unwrap();
        a.set_attr("/", "z", Array::scalar(Data::U8(vec![1])))
            .unwrap();
        match a.commit() {
            Err(FormatError::TooWide(o)) => {
                assert!(o.what.contains("maximum dimension 0"), "{}", o.what);
                assert_eq!((o.value, o.bytes), (1 << 33, 4));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // The file still opens and takes changes that fit.
        let mut a = FileAppender::open(&path).unwrap();
        a.set_attr("/", "z", Array::scalar(Data::U8(vec![1])))
            .unwrap();
        a.commit().unwrap();
        assert_eq!(
            H5File::open(&path).unwrap().attr("/", "z").unwrap().data,
            Data::U8(vec![1])
        );
    }
}

#[test]
fn files_with_2_byte_fields_are_refused_untouched() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (so, sl, what) in [(2, 4, "2-byte addresses"), (8, 2, "2-byte lengths")] {
        let path = create(dir.path(), so, sl, "earliest");
        let before = std::fs::read(&path).unwrap();
        match FileAppender::open(&path) {
            Err(FormatError::Unsupported(why)) => assert!(why.contains(what), "{why}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("{so}/{sl} opened"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}
