//! Dataset region references h5py writes (in a dataset and in attributes): boxes, strided hyperslabs, the
//! whole dataset, points, an empty selection and null references. Each reads as its object and selection, and
//! the elements the selection names are the ones h5py reads through the reference.

use crate::common;

use clawhdf5_format::region::Selection;
use clawhdf5_format::{Data, H5File};

const MAKE: &str = r#"
import json, sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    d = f.create_dataset("d", data=np.arange(60).reshape(6, 10))
    refs = [d.regionref[0:2, 3:5], d.regionref[::2, 1:8:3], d.regionref[...], h5py.RegionReference(), d.regionref[5, :]]
    sp = d.id.get_space()
    sp.select_elements([(1, 1), (5, 9), (0, 0)])
    refs.append(h5py.h5r.create(f.id, b"d", h5py.h5r.DATASET_REGION, sp))
    sp = d.id.get_space()
    sp.select_none()
    refs.append(h5py.h5r.create(f.id, b"d", h5py.h5r.DATASET_REGION, sp))
    sp = d.id.get_space()
    sp.select_hyperslab((0, 0), (2, 2), stride=(3, 4), block=(2, 3))
    refs.append(h5py.h5r.create(f.id, b"d", h5py.h5r.DATASET_REGION, sp))
    f.create_dataset("refs", data=refs, dtype=h5py.regionref_dtype)
    f.attrs.create("some", data=refs[:2], dtype=h5py.regionref_dtype)
    want = [None if not r else d[r].ravel().tolist() for r in refs]
with open(sys.argv[1] + ".json", "w") as g:
    g.write(json.dumps(want))
"#;

#[test]
fn region_references_read_as_h5py_resolves_them() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("regions.h5");
    common::run_python(MAKE, &[&path]);
    common::assert_equal_to_h5py(&path);
    let want: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("regions.h5.json")).unwrap())
            .unwrap();
    let f = H5File::open(&path).unwrap();
    let d = f.dataset("/d").unwrap();
    let values = d.read().unwrap();
    let values = values.as_i64().unwrap();
    let Data::RegionRef(refs) = f.dataset("/refs").unwrap().read().unwrap().data else {
        panic!("region references");
    };
    assert_eq!(refs.len(), 8);
    for (i, (r, w)) in refs.iter().zip(want.as_array().unwrap()).enumerate() {
        if w.is_null() {
            assert_eq!((r.object, &r.selection), (0, &Selection::None), "{i}: null");
            continue;
        }
        assert_eq!(r.object, d.addr(), "{i}");
        let got: Vec<i64> = r
            .selection
            .linear_indices(d.shape(), 1000)
            .unwrap()
            .iter()
            .map(|&k| values[k as usize])
            .collect();
        let w: Vec<i64> = w
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        assert_eq!(got, w, "{i}");
    }
    let Data::RegionRef(some) = f.attr("/", "some").unwrap().data else {
        panic!("region references in an attribute");
    };
    assert_eq!(&some[..], &refs[..2]);
}

#[test]
fn hdf5_1_12_references_read_as_written() {
    use clawhdf5_format::region::Reference;
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("std_ref.h5");
    common::run_python(common::MAKE_STD_REF, &[&path]);
    let f = H5File::open(&path).unwrap();
    let d = f.dataset("/d").unwrap();
    let g = f.resolve("/g").unwrap();
    let Data::Ref(refs) = f.dataset("/refs").unwrap().read().unwrap().data else {
        panic!("references");
    };
    assert_eq!(refs[0], Reference::Object(d.addr()));
    assert_eq!(refs[1], Reference::Object(g));
    let Reference::Region(r) = &refs[2] else {
        panic!("a region: {:?}", refs[2]);
    };
    assert_eq!(r.object, d.addr());
    let mut idx = r.selection.linear_indices(d.shape(), 100).unwrap();
    idx.sort_unstable();
    assert_eq!(idx, [12, 13, 14, 22, 23, 24]);
    assert_eq!(
        refs[3],
        Reference::Attribute {
            object: d.addr(),
            name: "note".into()
        }
    );
    assert_eq!(refs[4], Reference::Null);
    let Data::Ref(attr) = f.attr("/", "refs").unwrap().data else {
        panic!("references in an attribute");
    };
    assert_eq!(&attr[..], &refs[2..4]);
}

/// HDF5 1.12 references into another file (libhdf5 through ctypes, as above): an object, a region and an
/// attribute of `a.h5`, stored in `b.h5` beside a reference to one of `b.h5`'s own objects.
const MAKE_EXTERNAL_REF: &str = r#"
import ctypes, glob, os, sys, h5py, numpy as np
libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
lib = ctypes.CDLL(libs[0] if libs else h5py.h5.__file__)
lib.H5open()
hid = ctypes.c_int64
lib.H5Dcreate2.restype = hid
REF = ctypes.c_uint8 * 64
os.chdir(sys.argv[1])
with h5py.File("a.h5", "w", libver="latest") as f:
    f["d"] = np.arange(60).reshape(6, 10)
    f["d"].attrs["note"] = "x"
with h5py.File("b.h5", "w", libver="latest") as f:
    f["local"] = np.arange(3)
fa = h5py.h5f.open(b"a.h5", h5py.h5f.ACC_RDONLY)
fb = h5py.h5f.open(b"b.h5", h5py.h5f.ACC_RDWR)
refs = (REF * 4)()
assert lib.H5Rcreate_object(hid(fa.id), b"/d", hid(0), ctypes.byref(refs[0])) >= 0
space = h5py.h5s.create_simple((6, 10))
space.select_hyperslab((1, 2), (2, 3))
assert lib.H5Rcreate_region(hid(fa.id), b"/d", hid(space.id), hid(0), ctypes.byref(refs[1])) >= 0
assert lib.H5Rcreate_attr(hid(fa.id), b"/d", b"note", hid(0), ctypes.byref(refs[2])) >= 0
assert lib.H5Rcreate_object(hid(fb.id), b"/local", hid(0), ctypes.byref(refs[3])) >= 0
std_ref = hid.in_dll(lib, "H5T_STD_REF_g").value
four = h5py.h5s.create_simple((4,))
did = lib.H5Dcreate2(hid(fb.id), b"refs", hid(std_ref), hid(four.id), hid(0), hid(0), hid(0))
assert did >= 0 and lib.H5Dwrite(hid(did), hid(std_ref), hid(0), hid(0), hid(0), refs) >= 0
lib.H5Dclose(hid(did))
for i in range(4):
    lib.H5Rdestroy(ctypes.byref(refs[i]))
fa.close()
fb.close()
"#;

#[test]
fn hdf5_1_12_references_into_other_files_name_the_file() {
    use clawhdf5_format::region::Reference;
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE_EXTERNAL_REF, &[dir.path()]);
    let a = H5File::open(&dir.path().join("a.h5")).unwrap();
    let d = a.resolve("/d").unwrap();
    let b = H5File::open(&dir.path().join("b.h5")).unwrap();
    let Data::Ref(refs) = b.dataset("/refs").unwrap().read().unwrap().data else {
        panic!("references");
    };
    let external = |target: Reference| Reference::External {
        file: "a.h5".into(),
        target: Box::new(target),
    };
    assert_eq!(refs[0], external(Reference::Object(d)));
    let Reference::External { file, target } = &refs[1] else {
        panic!("a region in a.h5: {:?}", refs[1]);
    };
    let Reference::Region(r) = &**target else {
        panic!("a region: {target:?}");
    };
    assert_eq!((file.as_str(), r.object), ("a.h5", d));
    let mut idx = r.selection.linear_indices(&[6, 10], 100).unwrap();
    idx.sort_unstable();
    assert_eq!(idx, [12, 13, 14, 22, 23, 24]);
    assert_eq!(
        refs[2],
        external(Reference::Attribute {
            object: d,
            name: "note".into()
        })
    );
    assert_eq!(refs[3], Reference::Object(b.resolve("/local").unwrap()));
    // The inspection tool names the file.
    let json =
        clawhdf5_format::inspect::array_to_json(&b.dataset("/refs").unwrap().read().unwrap());
    assert_eq!(json[0]["ref"]["file"], "a.h5", "{json}");
    assert_eq!(json[2]["ref"]["attribute"], "note", "{json}");
}
