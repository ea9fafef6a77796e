//! Dataset region references h5py writes (in a dataset and in attributes): boxes, strided hyperslabs, the
//! whole dataset, points, an empty selection and null references. Each reads as its object and selection, and
//! the elements the selection names are the ones h5py reads through the reference.

mod common;

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
    json.dump(want, g)
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

/// HDF5 1.12's references (`H5T_STD_REF`, written through h5py's libhdf5 by ctypes: h5py cannot): objects
/// inline, a region and an attribute in the global heap, a null one; in a dataset and in an attribute.
const MAKE_STD_REF: &str = r#"
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

#[test]
fn hdf5_1_12_references_read_as_written() {
    use clawhdf5_format::region::Reference;
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("std_ref.h5");
    common::run_python(MAKE_STD_REF, &[&path]);
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
