//! Soft and external links and object references written by FileWriter: our reader and h5py
//! (HDF5 2.0) see them, links in compact and dense link storage.

use crate::common;

use clawhdf5_format::{Array, Data, DatasetOptions, EntryKind, FileWriter, H5File};

fn build(extra_links: usize) -> FileWriter {
    let mut w = FileWriter::new();
    w.write_dataset(
        "/data/x",
        Array::vector(Data::I32(vec![1, 2, 3])),
        DatasetOptions::default(),
    )
    .unwrap();
    w.soft_link("/soft_abs", "/data/x").unwrap();
    w.soft_link("/data/soft_rel", "x").unwrap();
    w.soft_link("/dangling", "/nowhere").unwrap();
    w.external_link("/ext", "other.h5", "/values").unwrap();
    for i in 0..extra_links {
        w.soft_link(&format!("/many/s{i:02}"), "/data/x").unwrap();
    }
    w
}

#[test]
fn our_reader_sees_written_links() {
    for extra in [0, 20] {
        let f = H5File::from_bytes(build(extra).to_bytes().unwrap()).unwrap();
        let x = |p: &str| f.dataset(p).unwrap().read().unwrap();
        assert_eq!(x("/soft_abs").as_i32(), Some(&[1, 2, 3][..]));
        assert_eq!(x("/data/soft_rel").as_i32(), Some(&[1, 2, 3][..]));
        let root = f.list("/").unwrap();
        let kind = |n: &str| root.iter().find(|e| e.name == n).unwrap().kind.clone();
        assert_eq!(kind("soft_abs"), EntryKind::SoftLink("/data/x".into()));
        assert_eq!(kind("dangling"), EntryKind::SoftLink("/nowhere".into()));
        assert_eq!(
            kind("ext"),
            EntryKind::ExternalLink {
                file: "other.h5".into(),
                path: "/values".into()
            }
        );
        assert!(f.dataset("/dangling").is_err());
        assert!(f.dataset("/ext").is_err());
        if extra > 0 {
            assert_eq!(f.list("/many").unwrap().len(), extra);
            assert_eq!(x("/many/s13").as_i32(), Some(&[1, 2, 3][..]));
        }
    }
}

#[test]
fn bad_links_are_refused() {
    let mut w = build(0);
    assert!(w.soft_link("/soft_abs", "/data").is_err(), "duplicate name");
    assert!(w.soft_link("/s", "").is_err());
    assert!(w.external_link("/e", "", "/x").is_err());
    assert!(w.external_link("/e", "a\0b", "/x").is_err());
    assert!(
        w.soft_link("/soft_abs/below", "/data").is_err(),
        "link is no group"
    );
    assert!(w
        .set_attr("/soft_abs", "a", Array::scalar(Data::I32(vec![1])))
        .is_err());
}

const CHECK: &str = r#"
import sys, h5py, numpy as np, os
d = sys.argv[1]
with h5py.File(os.path.join(d, "other.h5"), "w") as o:
    o["values"] = np.arange(4, dtype="f8")
with h5py.File(os.path.join(d, "links.h5"), "r") as f:
    for name in ["soft_abs", "data/soft_rel"] + ["many/s%02d" % i for i in range(int(sys.argv[2]))]:
        assert list(f[name][()]) == [1, 2, 3], name
    l = f.get("soft_abs", getlink=True)
    assert isinstance(l, h5py.SoftLink) and l.path == "/data/x", l
    assert isinstance(f.get("dangling", getlink=True), h5py.SoftLink)
    assert f.get("dangling") is None
    e = f.get("ext", getlink=True)
    assert isinstance(e, h5py.ExternalLink), e
    assert e.filename == "other.h5" and e.path == "/values", (e.filename, e.path)
    assert list(f["ext"][()]) == [0.0, 1.0, 2.0, 3.0]
print("ok")
"#;

#[test]
fn h5py_follows_written_links() {
    if !common::have_python_module("h5py") {
        return;
    }
    for extra in [0, 20] {
        let dir = tempfile::tempdir().unwrap();
        build(extra)
            .write_file(&dir.path().join("links.h5"))
            .unwrap();
        let out = std::process::Command::new("python3")
            .args(["-c", CHECK])
            .arg(dir.path())
            .arg(extra.to_string())
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "h5py ({extra} extra links): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn with_refs() -> FileWriter {
    let mut w = build(0);
    w.create_group("/g/h").unwrap();
    w.write_object_refs("/refs", &["/data/x", "/g/h", "/", "/data/x"])
        .unwrap();
    w.set_attr("/refs", "note", Array::scalar(Data::U8(vec![1])))
        .unwrap();
    w
}

#[test]
fn object_references_point_at_their_targets() {
    let f = H5File::from_bytes(with_refs().to_bytes().unwrap()).unwrap();
    let refs = f.dataset("/refs").unwrap().read().unwrap();
    let addrs = match refs.data {
        Data::ObjectRef(a) => a,
        other => panic!("not references: {}", other.type_name()),
    };
    assert_eq!(addrs.len(), 4);
    assert_eq!(addrs[0], f.resolve("/data/x").unwrap());
    assert_eq!(addrs[1], f.resolve("/g/h").unwrap());
    assert_eq!(addrs[2], f.root_addr());
    assert_eq!(addrs[3], addrs[0]);
    let x = f.dataset_at(addrs[0]).unwrap().read().unwrap();
    assert_eq!(x.as_i32(), Some(&[1, 2, 3][..]));
    assert_eq!(f.attr("/refs", "note").unwrap().as_u8(), Some(&[1u8][..]));

    let mut w = FileWriter::new();
    w.write_object_refs("/r", &["/missing"]).unwrap();
    assert!(w.to_bytes().is_err(), "missing target");
    assert!(w.write_object_refs("/r2", &["relative"]).is_err());
}

const CHECK_REFS: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    r = f["refs"]
    assert r.dtype == h5py.ref_dtype, r.dtype
    names = [f[x].name for x in r[()]]
    assert names == ["/data/x", "/g/h", "/", "/data/x"], names
    assert list(f[r[0]][()]) == [1, 2, 3]
    assert r.attrs["note"] == 1
print("ok")
"#;

#[test]
fn h5py_follows_written_object_references() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("refs.h5");
    with_refs().write_file(&path).unwrap();
    let out = std::process::Command::new("python3")
        .args(["-c", CHECK_REFS])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Attributes of object references: on the root, a group, a dataset and a reference dataset; pointing at
/// each other both ways, at the root and at their own object; on an object with enough attributes to keep
/// them densely (fractal heap).
fn with_attr_refs() -> FileWriter {
    let mut w = with_refs();
    w.set_attr_object_refs("/", "everything", &["/data/x", "/g", "/g/h", "/refs", "/"])
        .unwrap();
    w.set_attr_object_refs("/g", "to_h", &["/g/h"]).unwrap();
    w.set_attr_object_refs("/g/h", "to_g", &["/g"]).unwrap();
    w.set_attr_object_refs("/data/x", "me", &["/data/x"])
        .unwrap();
    w.set_attr_object_refs("/refs", "back", &["/data"]).unwrap();
    for i in 0..12 {
        w.set_attr("/data", &format!("n{i}"), Array::scalar(Data::I32(vec![i])))
            .unwrap();
    }
    w.set_attr_object_refs("/data", "dense", &["/g", "/data/x"])
        .unwrap();
    // Replaced by a plain value, then by references again.
    w.set_attr_object_refs("/g", "swap", &["/"]).unwrap();
    w.set_attr("/g", "swap", Array::scalar(Data::U8(vec![7])))
        .unwrap();
    w.set_attr_object_refs("/g", "swap2", &["/"]).unwrap();
    w.set_attr("/g", "swap2", Array::scalar(Data::U8(vec![8])))
        .unwrap();
    w.set_attr_object_refs("/g", "swap2", &["/g/h"]).unwrap();
    w
}

#[test]
fn attributes_of_object_references_point_at_their_targets() {
    let f = H5File::from_bytes(with_attr_refs().to_bytes().unwrap()).unwrap();
    let refs = |obj: &str, name: &str| match f.attr(obj, name).unwrap().data {
        Data::ObjectRef(a) => a,
        other => panic!("{obj}@{name}: {}", other.type_name()),
    };
    let at = |p: &str| f.resolve(p).unwrap();
    assert_eq!(
        refs("/", "everything"),
        [
            at("/data/x"),
            at("/g"),
            at("/g/h"),
            at("/refs"),
            f.root_addr()
        ]
    );
    assert_eq!(refs("/g", "to_h"), [at("/g/h")]);
    assert_eq!(refs("/g/h", "to_g"), [at("/g")]);
    assert_eq!(refs("/data/x", "me"), [at("/data/x")]);
    assert_eq!(refs("/refs", "back"), [at("/data")]);
    assert_eq!(refs("/data", "dense"), [at("/g"), at("/data/x")]);
    assert_eq!(refs("/g", "swap2"), [at("/g/h")]);
    assert_eq!(f.attr("/g", "swap").unwrap().as_u8(), Some(&[7u8][..]));
    assert_eq!(f.attr("/data", "n11").unwrap().as_i32(), Some(&[11][..]));
    // The reference dataset beside them still resolves.
    let Data::ObjectRef(d) = f.dataset("/refs").unwrap().read().unwrap().data else {
        panic!("dataset of references");
    };
    assert_eq!(d[1], at("/g/h"));

    let mut w = FileWriter::new();
    w.create_group("/g").unwrap();
    w.set_attr_object_refs("/g", "r", &["/missing"]).unwrap();
    let e = w.to_bytes().unwrap_err().to_string();
    assert!(e.contains("/missing"), "{e}");
    assert!(w.set_attr_object_refs("/g", "r", &["relative"]).is_err());
    assert!(w.set_attr_object_refs("/nowhere", "r", &["/g"]).is_err());
}

const CHECK_ATTR_REFS: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    names = lambda refs: [f[r].name for r in refs]
    assert names(f.attrs["everything"]) == ["/data/x", "/g", "/g/h", "/refs", "/"], names(f.attrs["everything"])
    assert names(f["g"].attrs["to_h"]) == ["/g/h"]
    assert names(f["g/h"].attrs["to_g"]) == ["/g"]
    assert names(f["data/x"].attrs["me"]) == ["/data/x"]
    assert names(f["refs"].attrs["back"]) == ["/data"]
    assert names(f["data"].attrs["dense"]) == ["/g", "/data/x"]
    assert names(f["g"].attrs["swap2"]) == ["/g/h"] and f["g"].attrs["swap"] == 7
    assert len(f["data"].attrs) == 13 and f["data"].attrs["n11"] == 11
    assert list(f[f.attrs["everything"][0]][()]) == [1, 2, 3]
    assert f.attrs.get_id("everything").dtype == h5py.ref_dtype
print("ok")
"#;

#[test]
fn h5py_follows_attributes_of_object_references() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attr_refs.h5");
    with_attr_refs().write_file(&path).unwrap();
    common::run_python(CHECK_ATTR_REFS, &[&path]);
}
