//! References survive appends: h5py writes object and region references (datasets contiguous, compact and
//! chunked with gzip, attributes, compound members, variable-length sequences of them, reference cycles
//! between groups, a reference to the root) and second hard links; the appender then changes the referenced objects, which moves their headers
//! (copy-on-write). After the commit every reference and link, read by h5py and by us, names the changed
//! object, not its old version.

use crate::common;

use clawhdf5_format::{Array, Data, FileAppender, H5File};
use serde_json::Value;
use std::path::Path;

const MAKE: &str = r#"
import sys, h5py, numpy as np
libver = sys.argv[2]
with h5py.File(sys.argv[1], "w", libver=(libver, "latest")) as f:
    data = f.create_dataset("data", data=np.arange(12, dtype="i4").reshape(6, 2), maxshape=(None, 2), chunks=(4, 2))
    g = f.create_group("g")
    sub = g.create_dataset("sub", data=np.arange(5, dtype="f8"))
    h = f.create_group("h")
    f.create_dataset("objrefs", data=[data.ref, g.ref, sub.ref, f.ref, h5py.Reference()], dtype=h5py.ref_dtype)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    small = h5py.h5d.create(f.id, b"smallrefs", h5py.h5t.STD_REF_OBJ, h5py.h5s.create_simple((2,)), dcpl=dcpl)
    small.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([sub.ref, h.ref], dtype=h5py.ref_dtype))
    f.create_dataset("gzrefs", data=[data.ref, sub.ref, g.ref] * 7, dtype=h5py.ref_dtype, chunks=(4,), compression="gzip", maxshape=(None,))
    f.create_dataset("mixed", data=[sub.ref] * 4 + [data.ref] * 8, dtype=h5py.ref_dtype, chunks=(4,), compression="gzip")
    f.create_dataset("regrefs", data=[data.regionref[1:3, :], sub.regionref[::2], h5py.RegionReference()], dtype=h5py.regionref_dtype)
    ct = np.dtype([("n", "i4"), ("r", h5py.ref_dtype), ("pair", h5py.ref_dtype, (2,))])
    rows = np.zeros(3, dtype=ct)
    for i in range(3):
        rows[i]["n"] = i
        rows[i]["r"] = [data.ref, sub.ref, h.ref][i]
        rows[i]["pair"] = (g.ref, data.ref)
    f.create_dataset("table", data=rows, chunks=(2,), compression="gzip", shuffle=True, fletcher32=True)
    g.attrs["to_data"] = data.ref
    g.attrs.create("regions", data=[data.regionref[0:1, 1:2]], dtype=h5py.regionref_dtype)
    f.attrs["root"] = f.ref
    # Second hard links: to a dataset from the root, and to one in another group.
    f["alias"] = data
    f["h"]["sub2"] = sub
    # A cycle: each of g and h names the other.
    h.attrs["peer"] = g.ref
    g.attrs["peer"] = h.ref
    # Variable-length sequences of references: a chunked, gzipped dataset of them and an attribute.
    seq = h5py.vlen_dtype(h5py.ref_dtype)
    seqs = f.create_dataset("seqs", (3,), dtype=seq, chunks=(2,), compression="gzip")
    seqs[0] = np.array([data.ref, g.ref], dtype=h5py.ref_dtype)
    seqs[1] = np.array([], dtype=h5py.ref_dtype)
    seqs[2] = np.array([sub.ref, h.ref, data.ref], dtype=h5py.ref_dtype)
    one = np.empty(1, dtype=object)
    one[0] = np.array([sub.ref, data.ref], dtype=h5py.ref_dtype)
    h.attrs.create("seqattr", one, dtype=seq)
"#;

const CHECK: &str = r#"
import json, sys, h5py, numpy as np
out = {}
with h5py.File(sys.argv[1], "r") as f:
    def name(r):
        return f[r].name if r else None
    out["objrefs"] = [name(r) for r in f["objrefs"][...]]
    out["gzrefs"] = [name(r) for r in f["gzrefs"][...]]
    out["smallrefs"] = [name(r) for r in f["smallrefs"][...]]
    out["mixed"] = [name(r) for r in f["mixed"][...]]
    out["regrefs"] = [f[r][r].tolist() if r else None for r in f["regrefs"][...]]
    t = f["table"][...]
    out["table"] = [[int(x["n"]), name(x["r"]), [name(p) for p in x["pair"]]] for x in t]
    g = f["g"]
    out["to_data"] = name(g.attrs["to_data"])
    r = g.attrs["regions"][0]
    out["regions"] = f[r][r].tolist()
    out["root"] = name(f.attrs["root"])
    out["peers"] = [name(g.attrs["peer"]), name(f["h"].attrs["peer"])]
    out["marks"] = [f[g.attrs["peer"]].attrs.get("mark", "").__str__(), f[f["h"].attrs["peer"]].attrs.get("mark", "").__str__()]
    out["data_shape"] = list(f[f["objrefs"][0]].shape)
    out["sub_mark"] = str(f[f["objrefs"][2]].attrs.get("mark", ""))
    out["sub_len"] = len(f[f["objrefs"][2]])
    out["alias_shape"] = list(f["alias"].shape)
    out["sub2_mark"] = str(f["h/sub2"].attrs.get("mark", ""))
    out["sub2_len"] = len(f["h/sub2"])
    out["root_mark"] = str(f[f.attrs["root"]].attrs.get("mark", ""))
    if "seqs" in f:
        out["seqs"] = [[name(r) for r in x] for x in f["seqs"][...]]
        out["seqattr"] = [[name(r) for r in x] for x in f["h"].attrs["seqattr"]]
        out["seq_data_shape"] = list(f[f["seqs"][2][2]].shape)
        out["seq_sub_mark"] = str(f[f["h"].attrs["seqattr"][0][0]].attrs.get("mark", ""))
print(json.dumps(out))
"#;

fn h5py_view(path: &Path) -> Value {
    common::python_json(CHECK, &[path])
}

/// The addresses of a dataset's chunks, in order.
fn chunk_addrs(path: &Path, dataset: &str) -> Vec<u64> {
    let f = H5File::open(path).unwrap();
    let d = f.dataset(dataset).unwrap();
    d.chunk_entries().unwrap().iter().map(|e| e.addr).collect()
}

fn object_refs(f: &H5File, path: &str) -> Vec<u64> {
    match f.dataset(path).unwrap().read().unwrap().data {
        Data::ObjectRef(v) => v,
        other => panic!("{path}: {}", other.type_name()),
    }
}

/// Where Debian's h5dump (HDF5 1.10) is installed: it follows the references (chunks stored unfiltered under a
/// gzip pipeline included) to the objects as they are now.
fn h5dump_follows(path: &Path, libver: &str) {
    let Ok(out) = std::process::Command::new("h5dump")
        .args(["-d", "/gzrefs", "-d", "/objrefs", "-d", "/table"])
        .arg(path)
        .output()
    else {
        eprintln!("SKIP: h5dump not installed");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{libver}: h5dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Objects with two names appear under either.
    for want in [
        &["DATASET"][..],
        &["\"/data\"", "\"/alias\""],
        &["\"/g/sub\"", "\"/h/sub2\""],
        &["GROUP"],
        &["\"/g\""],
        &["102, 103"],
    ] {
        assert!(
            want.iter().any(|w| text.contains(w)),
            "{libver}: h5dump lacks {want:?}: {text}"
        );
    }
}

#[test]
fn references_follow_objects_the_appender_moves() {
    if !common::have_python_module("h5py") {
        return;
    }
    for libver in ["earliest", "latest"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refs.h5");
        common::run_python(MAKE, &[&path, Path::new(libver)]);
        let before = h5py_view(&path);
        assert_eq!(before["data_shape"], serde_json::json!([6, 2]), "{libver}");

        // Move /data (rows appended), /g/sub and /g (an attribute), /h (an attribute) and the root.
        let mut a = FileAppender::open(&path).unwrap();
        a.append_rows(
            "/data",
            Array::matrix(2, 2, Data::I32(vec![100, 101, 102, 103])).unwrap(),
        )
        .unwrap();
        a.set_attr(
            "/g/sub",
            "mark",
            Array::scalar(Data::VarStr(vec!["sub".into()])),
        )
        .unwrap();
        a.set_attr("/h", "mark", Array::scalar(Data::VarStr(vec!["h".into()])))
            .unwrap();
        a.set_attr(
            "/",
            "mark",
            Array::scalar(Data::VarStr(vec!["root".into()])),
        )
        .unwrap();
        a.commit().unwrap();

        let after = h5py_view(&path);
        assert_eq!(
            after["data_shape"],
            serde_json::json!([8, 2]),
            "{libver}: {after}"
        );
        assert_eq!(after["sub_mark"], "sub", "{libver}");
        // Second hard links follow the objects too.
        assert_eq!(before["alias_shape"], serde_json::json!([6, 2]), "{libver}");
        assert_eq!(after["alias_shape"], serde_json::json!([8, 2]), "{libver}");
        assert_eq!(after["sub2_mark"], "sub", "{libver}");
        assert_eq!(after["root_mark"], "root", "{libver}");
        // References inside variable-length sequences too.
        assert_eq!(
            after["seq_data_shape"],
            serde_json::json!([8, 2]),
            "{libver}"
        );
        assert_eq!(after["seq_sub_mark"], "sub", "{libver}");
        assert_eq!(
            after["marks"],
            serde_json::json!(["h", ""]),
            "{libver}: g's peer is h (marked), h's peer is g"
        );
        for key in [
            "objrefs",
            "gzrefs",
            "smallrefs",
            "mixed",
            "regrefs",
            "table",
            "to_data",
            "regions",
            "root",
            "peers",
            "seqs",
            "seqattr",
        ] {
            assert_eq!(after[key], before[key], "{libver}: {key}");
        }

        // Our reader sees the same: each reference is the current address of its object.
        let f = H5File::open(&path).unwrap();
        let at = |p: &str| f.resolve(p).unwrap();
        assert_eq!(
            object_refs(&f, "/objrefs"),
            vec![at("/data"), at("/g"), at("/g/sub"), at("/"), 0]
        );
        let gz = object_refs(&f, "/gzrefs");
        assert_eq!(gz.len(), 21);
        for (i, r) in gz.iter().enumerate() {
            assert_eq!(
                *r,
                [at("/data"), at("/g/sub"), at("/g")][i % 3],
                "gzrefs[{i}]"
            );
        }
        let Data::RegionRef(regions) = f.dataset("/regrefs").unwrap().read().unwrap().data else {
            panic!("region references");
        };
        assert_eq!(
            regions.iter().map(|r| r.object).collect::<Vec<_>>(),
            vec![at("/data"), at("/g/sub"), 0]
        );
        match f.attr("/", "root").unwrap().data {
            Data::ObjectRef(v) => assert_eq!(v, vec![at("/")]),
            other => panic!("root attribute: {}", other.type_name()),
        }
        common::assert_equal_to_h5py(&path);
        if libver == "earliest" {
            // HDF5 1.10 cannot open what HDF5 2.0 writes under libver "latest".
            h5dump_follows(&path, libver);
        }

        // A second session that changes nothing referenced leaves the references alone and still valid.
        let mut a = FileAppender::open(&path).unwrap();
        a.create_group("/later").unwrap();
        a.commit().unwrap();
        assert_eq!(h5py_view(&path), after, "{libver}");

        // A replaced dataset takes its references with it.
        let chunks_before = chunk_addrs(&path, "/mixed");
        let mut a = FileAppender::open(&path).unwrap();
        a.replace_dataset(
            "/g/sub",
            Array::vector(Data::F64(vec![0.5; 9])),
            Default::default(),
        )
        .unwrap();
        a.commit().unwrap();
        let replaced = h5py_view(&path);
        assert_eq!(replaced["sub_len"], 9, "{libver}");
        assert_eq!(
            replaced["sub2_len"], 9,
            "{libver}: the second link names the new dataset"
        );
        assert_eq!(
            replaced["sub_mark"], "",
            "{libver}: the new dataset has no mark"
        );
        for key in ["objrefs", "gzrefs", "smallrefs", "mixed", "table", "peers"] {
            assert_eq!(replaced[key], before[key], "{libver}: {key}");
        }
        // Only the chunk that names the replaced dataset was stored anew; the others stay where they were.
        let chunks_after = chunk_addrs(&path, "/mixed");
        assert_ne!(chunks_after[0], chunks_before[0], "{libver}");
        assert_eq!(chunks_after[1..], chunks_before[1..], "{libver}");
        assert_eq!(
            replaced["regrefs"][1],
            serde_json::json!([0.5, 0.5, 0.5]),
            "{libver}: the region reference selects from the new data"
        );
    }
}

#[test]
fn files_without_references_commit_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.h5");
    let mut w = clawhdf5_format::FileWriter::new();
    w.write_dataset(
        "/d",
        Array::vector(Data::U8(vec![1, 2, 3])),
        Default::default(),
    )
    .unwrap();
    w.write_file(&path).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let mut a = FileAppender::open(&path).unwrap();
    a.set_attr("/d", "x", Array::scalar(Data::I32(vec![7])))
        .unwrap();
    a.commit().unwrap();
    let grown = std::fs::metadata(&path).unwrap().len() - len;
    // One new dataset header and one new root group header: no second copy of either.
    assert!(grown < 1024, "{grown} bytes appended");
    let f = H5File::open(&path).unwrap();
    assert_eq!(f.attr("/d", "x").unwrap().data, Data::I32(vec![7]));
}

#[test]
fn the_appender_writes_references() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new_refs.h5");
    let mut w = clawhdf5_format::FileWriter::new();
    w.write_dataset(
        "/d",
        Array::vector(Data::I32(vec![1, 2, 3])),
        Default::default(),
    )
    .unwrap();
    w.create_group("/grp").unwrap();
    w.write_file(&path).unwrap();

    let mut a = FileAppender::open(&path).unwrap();
    a.write_dataset(
        "/new/x",
        Array::vector(Data::F32(vec![0.5; 4])),
        Default::default(),
    )
    .unwrap();
    a.create_group("/new/g").unwrap();
    a.set_attr_object_refs("/", "r", &[5], &["/d", "/new/x", "/new/g", "/", "/grp"])
        .unwrap();
    a.set_attr_object_refs("/new/x", "me", &[], &["/new/x"])
        .unwrap();
    a.set_attr_object_refs("/grp", "pair", &[2, 1], &["/d", "/new"])
        .unwrap();
    a.write_object_refs("/new/refs", &["/d", "/new/g", "/new/x", "/"])
        .unwrap();
    a.write_object_refs("/new/refs_to_refs", &["/new/refs"])
        .unwrap();
    a.write_object_refs("/new/no_refs", &[]).unwrap();
    assert!(a.write_object_refs("/new/refs", &["/d"]).is_err(), "exists");
    assert!(a
        .write_rows("/new/refs", 0, Array::vector(Data::U64(vec![0])))
        .is_err());
    assert!(a.set_attr_object_refs("/", "bad", &[2], &["/d"]).is_err());
    assert!(a.set_attr_object_refs("/", "bad", &[1], &["d"]).is_err());
    assert!(a
        .set_attr_object_refs("/", "bad", &[1], &["/nowhere"])
        .is_err());
    a.commit().unwrap();

    const NAMES: &str = r#"
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(json.dumps({
        "r": [f[r].name for r in f.attrs["r"]],
        "me": f[f["new/x"].attrs["me"]].name,
        "pair": [[f[r].name for r in row] for row in f["grp"].attrs["pair"]],
        "x": f[f.attrs["r"][1]][...].tolist(),
        "refs": [f[r].name for r in f["new/refs"][...]],
        "refs_to_refs": [f[r].name for r in f["new/refs_to_refs"][...]],
        "no_refs": f["new/no_refs"].shape,
    }))
"#;
    let names = || common::python_json(NAMES, &[&path]);
    let want = serde_json::json!({
        "r": ["/d", "/new/x", "/new/g", "/", "/grp"],
        "me": "/new/x",
        "pair": [["/d"], ["/new"]],
        "x": [0.5, 0.5, 0.5, 0.5],
        "refs": ["/d", "/new/g", "/new/x", "/"],
        "refs_to_refs": ["/new/refs"],
        "no_refs": [0],
    });
    assert_eq!(names(), want);
    common::assert_equal_to_h5py(&path);

    // A reference to an object created and unlinked in one session fails the commit; the file keeps its
    // previous state.
    let mut a = FileAppender::open(&path).unwrap();
    a.write_dataset(
        "/gone",
        Array::vector(Data::U8(vec![1])),
        Default::default(),
    )
    .unwrap();
    a.set_attr_object_refs("/", "dangling", &[1], &["/gone"])
        .unwrap();
    a.unlink("/gone").unwrap();
    let err = a.commit().unwrap_err();
    assert!(err.to_string().contains("unlinked"), "{err}");
    assert_eq!(names(), want);
    let f = H5File::open(&path).unwrap();
    assert!(f.attr("/", "dangling").is_err());
}

/// libhdf5 (h5py's, through ctypes) opens each HDF5 1.12 reference of `/refs` and names its object.
const NAME_STD_REFS: &str = r#"
import ctypes, glob, json, os, sys, h5py
libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
lib = ctypes.CDLL(libs[0] if libs else h5py.h5.__file__)
lib.H5open()
hid = ctypes.c_int64
for fn in ("H5Dopen2", "H5Ropen_object", "H5Ropen_attr"):
    getattr(lib, fn).restype = hid
REF = ctypes.c_uint8 * 64
fid = h5py.h5f.open(sys.argv[1].encode(), h5py.h5f.ACC_RDONLY)
std_ref = hid.in_dll(lib, "H5T_STD_REF_g").value
refs = (REF * 5)()
did = lib.H5Dopen2(hid(fid.id), b"refs", hid(0))
assert did >= 0 and lib.H5Dread(hid(did), hid(std_ref), hid(0), hid(0), hid(0), refs) >= 0
def name(obj):
    buf = ctypes.create_string_buffer(256)
    assert lib.H5Iget_name(hid(obj), buf, ctypes.c_size_t(256)) > 0
    return buf.value.decode()
out = []
for i in range(4):
    obj = lib.H5Ropen_object(ctypes.byref(refs[i]), hid(0), hid(0))
    assert obj >= 0, i
    out.append(name(obj))
attr = lib.H5Ropen_attr(ctypes.byref(refs[3]), hid(0), hid(0))
assert attr >= 0
buf = ctypes.create_string_buffer(64)
lib.H5Aget_name(hid(attr), ctypes.c_size_t(64), buf)
out.append(buf.value.decode())
print(json.dumps(out))
"#;

#[test]
fn hdf5_1_12_references_follow_moved_objects() {
    use clawhdf5_format::region::Reference;
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("std_ref.h5");
    common::run_python(common::MAKE_STD_REF, &[&path]);
    let names = || common::python_json(NAME_STD_REFS, &[&path]);
    let want = serde_json::json!(["/d", "/g", "/d", "/d", "note"]);
    assert_eq!(names(), want);
    let old_d = H5File::open(&path).unwrap().resolve("/d").unwrap();

    let mut a = FileAppender::open(&path).unwrap();
    a.set_attr("/d", "moved", Array::scalar(Data::U8(vec![1])))
        .unwrap();
    a.set_attr("/g", "moved", Array::scalar(Data::U8(vec![1])))
        .unwrap();
    a.commit().unwrap();

    let f = H5File::open(&path).unwrap();
    let (d, g) = (f.resolve("/d").unwrap(), f.resolve("/g").unwrap());
    assert_ne!(d, old_d, "the appender moved /d");
    let Data::Ref(refs) = f.dataset("/refs").unwrap().read().unwrap().data else {
        panic!("references");
    };
    assert_eq!(refs[0], Reference::Object(d));
    assert_eq!(refs[1], Reference::Object(g));
    let Reference::Region(r) = &refs[2] else {
        panic!("a region: {:?}", refs[2]);
    };
    assert_eq!(r.object, d);
    let mut idx = r.selection.linear_indices(&[6, 10], 100).unwrap();
    idx.sort_unstable();
    assert_eq!(idx, [12, 13, 14, 22, 23, 24]);
    assert_eq!(
        refs[3],
        Reference::Attribute {
            object: d,
            name: "note".into()
        }
    );
    assert_eq!(refs[4], Reference::Null);
    let Data::Ref(attr) = f.attr("/", "refs").unwrap().data else {
        panic!("references in an attribute");
    };
    assert_eq!(&attr[..], &refs[2..4]);
    assert_eq!(names(), want);
}

/// A holder of references reached first (in the walk) through a second hard link to its group, while the
/// session changes that group under its other name: the group is written once, both names keep naming it, and
/// its references follow the moved target.
#[test]
fn holders_behind_a_second_hard_link_are_written_once() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alias.h5");
    common::run_python(
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    t = f.create_dataset("target", data=np.arange(4), maxshape=(None,), chunks=(4,))
    a = f.create_group("a")
    a.create_dataset("refs", data=[t.ref], dtype=h5py.ref_dtype)
    f["zz"] = a
"#,
        &[&path],
    );
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/target", Array::vector(Data::I64(vec![4, 5])))
        .unwrap();
    a.set_attr("/a", "mark", Array::scalar(Data::I32(vec![1])))
        .unwrap();
    a.commit().unwrap();
    let got = common::python_json(
        r#"
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(json.dumps([f["a"] == f["zz"], int(f["zz"].attrs["mark"]), len(f[f["a/refs"][0]]), len(f[f["zz/refs"][0]])]))
"#,
        &[&path],
    );
    assert_eq!(got, serde_json::json!([true, 1, 6, 6]));
}

/// Each region reference of `dataset` (or of attribute `object@name`), as h5py follows it: the referenced
/// dataset's name and the selected values, flattened (null references as null).
const REGIONS: &str = r#"
import json, sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    out = []
    where = sys.argv[2]
    if "@" in where:
        obj, name = where.split("@")
        refs = np.asarray(f[obj].attrs[name], dtype=object).ravel()
    else:
        refs = f[where][...]
    for r in refs:
        if not r:
            out.append(None)
            continue
        d = f[r]
        sel = h5py.h5r.get_region(r, d.id)
        vals = [] if sel.get_select_npoints() == 0 else np.asarray(d[r]).ravel().tolist()
        out.append([d.name, vals])
    print(json.dumps(out))
"#;

fn h5py_regions(path: &Path, dataset: &str) -> Value {
    common::python_json(REGIONS, &[path, Path::new(dataset)])
}

/// Our reader's view of the same: each region's dataset path and selected values (i64), flattened.
fn our_regions(path: &Path, dataset: &str) -> Value {
    let f = H5File::open(path).unwrap();
    let data = match dataset.split_once('@') {
        Some((obj, name)) => f.attr(obj, name).unwrap().data,
        None => f.dataset(dataset).unwrap().read().unwrap().data,
    };
    let Data::RegionRef(refs) = data else {
        panic!("{dataset} holds no region references");
    };
    let mut out = vec![];
    for r in refs {
        let name = ["/m", "/v", "/data", "/g/sub", "/fresh"]
            .into_iter()
            .find(|p| f.resolve(p).ok() == Some(r.object))
            .unwrap_or("?");
        let d = f.dataset(name).unwrap();
        let values: Vec<f64> = match d.read().unwrap().data {
            Data::I32(v) => v.into_iter().map(f64::from).collect(),
            Data::I64(v) => v.into_iter().map(|x| x as f64).collect(),
            Data::F64(v) => v,
            other => panic!("{}", other.type_name()),
        };
        let idx = r.selection.linear_indices(d.shape(), 1 << 20).unwrap();
        let vals: Vec<f64> = idx.iter().map(|&i| values[i as usize]).collect();
        out.push(serde_json::json!([name, vals]));
    }
    Value::Array(out)
}

/// h5py's values as f64 (integers and floats compare alike).
fn as_f64(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(as_f64).collect()),
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        other => other.clone(),
    }
}

#[test]
fn the_writer_and_the_appender_write_region_references() {
    use clawhdf5_format::region::Selection;
    use clawhdf5_format::{DatasetOptions, FileWriter};
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("regions.h5");
    let mut w = FileWriter::new();
    w.write_dataset(
        "/m",
        Array::matrix(6, 4, Data::I32((0..24).collect())).unwrap(),
        DatasetOptions::default(),
    )
    .unwrap();
    w.write_dataset(
        "/v",
        Array::vector(Data::F64((0..10).map(|i| i as f64 / 2.0).collect())),
        DatasetOptions::default(),
    )
    .unwrap();
    let regions = [
        ("/m", Selection::Regular(vec![[1, 2, 2, 1], [0, 1, 1, 4]])),
        ("/m", Selection::Points(vec![vec![5, 3], vec![0, 1]])),
        (
            "/v",
            Selection::Blocks(vec![(vec![2], vec![4]), (vec![8], vec![9])]),
        ),
        ("/v", Selection::All),
        ("/m", Selection::None),
    ];
    w.write_region_refs("/regs", &regions).unwrap();
    w.set_attr_region_refs("/v", "one", &[], &regions[1..2])
        .unwrap();
    w.set_attr_region_refs("/", "two", &[2], &regions[2..4])
        .unwrap();
    // A selection outside its dataset, and a target that is not written (yet), are refused.
    assert!(w
        .write_region_refs("/bad", &[("/v", Selection::Points(vec![vec![10]]))])
        .is_err());
    assert!(w
        .write_region_refs("/bad", &[("/later", Selection::All)])
        .is_err());
    std::fs::write(&path, w.to_bytes().unwrap()).unwrap();
    let want = serde_json::json!([
        ["/m", [4.0, 5.0, 6.0, 7.0, 12.0, 13.0, 14.0, 15.0]],
        ["/m", [23.0, 1.0]],
        ["/v", [1.0, 1.5, 2.0, 4.0, 4.5]],
        ["/v", [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5]],
        ["/m", []],
    ]);
    assert_eq!(as_f64(&h5py_regions(&path, "/regs")), want);
    assert_eq!(our_regions(&path, "/regs"), want);
    for (attr, rows) in [("/v@one", 1..2), ("/@two", 2..4)] {
        let want = Value::Array(want.as_array().unwrap()[rows].to_vec());
        assert_eq!(as_f64(&h5py_regions(&path, attr)), want, "{attr}");
        assert_eq!(our_regions(&path, attr), want, "{attr}");
    }
    // Debian's h5dump (HDF5 1.10) reads the regular hyperslab (version 2), the points and the blocks.
    match std::process::Command::new("h5dump")
        .args(["-d", "/regs", "-R"])
        .arg(&path)
        .output()
    {
        Err(_) => eprintln!("SKIP: h5dump not installed"),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{text}");
            for want in [
                "REGION_TYPE BLOCK  (1,0)-(1,3), (3,0)-(3,3)",
                "REGION_TYPE POINT  (5,3), (0,1)",
                "REGION_TYPE BLOCK  (2)-(4), (8)-(9)",
                "12, 13, 14, 15",
            ] {
                assert!(text.contains(want), "h5dump lacks {want:?}: {text}");
            }
        }
    }

    // The appender: to committed datasets it moves in the same session, and to one it creates.
    let path = dir.path().join("refs.h5");
    common::run_python(MAKE, &[&path, Path::new("latest")]);
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows(
        "/data",
        Array::matrix(1, 2, Data::I32(vec![100, 101])).unwrap(),
    )
    .unwrap();
    a.write_dataset(
        "/fresh",
        Array::vector(Data::I64(vec![7, 8, 9])),
        DatasetOptions::default(),
    )
    .unwrap();
    a.write_region_refs(
        "/newregs",
        &[
            (
                "/data",
                Selection::Regular(vec![[5, 1, 2, 1], [1, 1, 1, 1]]),
            ),
            ("/g/sub", Selection::Points(vec![vec![4], vec![0]])),
            ("/fresh", Selection::Blocks(vec![(vec![1], vec![2])])),
        ],
    )
    .unwrap();
    assert!(a
        .write_region_refs("/bad", &[("/g", Selection::All)])
        .is_err());
    let fresh_and_data = [
        ("/fresh", Selection::Points(vec![vec![0]])),
        (
            "/data",
            Selection::Regular(vec![[0, 3, 2, 1], [0, 1, 1, 2]]),
        ),
    ];
    a.set_attr_region_refs("/g", "regions", &[2], &fresh_and_data)
        .unwrap();
    a.set_attr_region_refs("/fresh", "back", &[], &[("/g/sub", Selection::All)])
        .unwrap();
    a.set_attr("/g", "gone", Array::scalar(Data::I32(vec![1])))
        .unwrap();
    a.set_attr_region_refs("/g", "gone", &[], &[("/fresh", Selection::All)])
        .unwrap();
    a.delete_attr("/g", "gone").unwrap();
    assert!(a
        .write_region_refs("/bad", &[("/data", Selection::Points(vec![vec![7, 0]]))])
        .is_err());
    a.commit().unwrap();
    let want = serde_json::json!([
        ["/data", [11.0, 101.0]],
        ["/g/sub", [4.0, 0.0]],
        ["/fresh", [8.0, 9.0]],
    ]);
    // h5py names /data by either of its two links.
    let seen = as_f64(&h5py_regions(&path, "/newregs")).to_string();
    assert_eq!(seen.replace("\"/alias\"", "\"/data\""), want.to_string());
    assert_eq!(our_regions(&path, "/newregs"), want);
    for (attr, want) in [
        (
            "/g@regions",
            serde_json::json!([["/fresh", [7.0]], ["/data", [0.0, 1.0, 6.0, 7.0]]]),
        ),
        (
            "/fresh@back",
            serde_json::json!([["/g/sub", [0.0, 1.0, 2.0, 3.0, 4.0]]]),
        ),
    ] {
        let seen = as_f64(&h5py_regions(&path, attr)).to_string();
        assert_eq!(
            seen.replace("\"/alias\"", "\"/data\""),
            want.to_string(),
            "{attr}"
        );
        assert_eq!(our_regions(&path, attr), want, "{attr}");
    }
    let f = H5File::open(&path).unwrap();
    assert!(f.attr("/g", "gone").is_err());
}
