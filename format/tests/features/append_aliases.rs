//! One object, several paths: h5py links datasets and groups at second paths (and the root inside itself);
//! the appender changes them through any of their paths in one session. Each object is written once, every
//! path still names it after the commit, and it holds every change, whichever path made it, even one
//! unlinked afterwards at the path that made it.

use crate::common;

use clawhdf5_format::{Array, Data, FileAppender, H5File};
use serde_json::json;
use std::path::Path;

const MAKE: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver=sys.argv[2]) as f:
    d = f.create_dataset("data", data=np.arange(4, dtype="i8"), maxshape=(None,), chunks=(4,))
    f["alias"] = d
    g = f.create_group("g")
    g.create_dataset("x", data=np.arange(3.0))
    f["galias"] = g
    f["self"] = f
    e = f.create_dataset("e", data=np.arange(2, dtype="i4"), maxshape=(None,), chunks=(2,))
    g["e2"] = e
    h = f.create_group("h")
    h.create_dataset("y", data=np.arange(2, dtype="i2"), maxshape=(None,), chunks=(2,))
    f["galias"]["yy"] = h["y"]
"#;

const CHECK: &str = r#"
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(json.dumps({
        "same": [f["data"] == f["alias"], f["g"] == f["galias"], f["self"] == f["/"], f["g/yy"] == f["galias/yy"]],
        "data": f["alias"][...].tolist(),
        "x_attrs": sorted((k, int(v)) for k, v in f["galias/x"].attrs.items()),
        "g_attrs": sorted((k, int(v)) for k, v in f["g"].attrs.items()),
        "root_attrs": sorted((k, int(v)) for k, v in f.attrs.items()),
        "names": sorted(f.keys()),
        "e2": f["g/e2"][...].tolist(),
        "yy": f["g/yy"][...].tolist(),
    }))
"#;

fn make(path: &Path, libver: &str) {
    common::run_python(MAKE, &[path, Path::new(libver)]);
}

fn session(path: &Path) {
    let mut a = FileAppender::open(path).unwrap();
    a.append_rows("/data", Array::vector(Data::I64(vec![4, 5])))
        .unwrap();
    a.append_rows("/alias", Array::vector(Data::I64(vec![6])))
        .unwrap();
    assert_eq!(a.shape("/data").unwrap(), vec![7]);
    a.set_attr("/g/x", "m", Array::scalar(Data::I32(vec![1])))
        .unwrap();
    a.set_attr("/galias/x", "n", Array::scalar(Data::I32(vec![2])))
        .unwrap();
    a.set_attr("/self/g", "via_self", Array::scalar(Data::I32(vec![3])))
        .unwrap();
    a.set_attr("/self", "root_mark", Array::scalar(Data::I32(vec![4])))
        .unwrap();
    // Changed at one path, then unlinked there: the change stays with the object at its other path.
    a.append_rows("/e", Array::vector(Data::I32(vec![2])))
        .unwrap();
    a.unlink("/e").unwrap();
    // A group unlinked with a changed dataset in it that another group also links.
    a.append_rows("/h/y", Array::vector(Data::I16(vec![7])))
        .unwrap();
    a.unlink("/h").unwrap();
    a.commit().unwrap();
}

fn expected() -> serde_json::Value {
    json!({
        "same": [true, true, true, true],
        "data": [0, 1, 2, 3, 4, 5, 6],
        "x_attrs": [["m", 1], ["n", 2]],
        "g_attrs": [["via_self", 3]],
        "root_attrs": [["root_mark", 4]],
        "names": ["alias", "data", "g", "galias", "self"],
        "e2": [0, 1, 2],
        "yy": [0, 1, 7],
    })
}

#[test]
fn an_object_changed_through_several_paths_is_written_once() {
    if !common::have_python_module("h5py") {
        return;
    }
    for libver in ["earliest", "latest"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("aliases.h5");
        make(&path, libver);
        session(&path);
        assert_eq!(
            common::python_json(CHECK, &[&path]),
            expected(),
            "libver {libver}"
        );
        let f = H5File::open(&path).unwrap();
        let data = f.dataset("/alias").unwrap().read().unwrap();
        assert_eq!(data.data, Data::I64((0..7).collect()), "libver {libver}");
        assert_eq!(
            f.dataset("/g/e2").unwrap().read().unwrap().data,
            Data::I32(vec![0, 1, 2])
        );
        assert!(f.dataset("/e").is_err());
    }
}

#[test]
fn a_later_session_through_the_other_paths_sees_the_changes() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aliases.h5");
    make(&path, "latest");
    session(&path);
    let mut a = FileAppender::open(&path).unwrap();
    assert_eq!(a.shape("/alias").unwrap(), vec![7]);
    a.write_rows("/alias", 0, Array::vector(Data::I64(vec![10])))
        .unwrap();
    a.write_rows("/data", 1, Array::vector(Data::I64(vec![11])))
        .unwrap();
    a.commit().unwrap();
    let got = common::python_json(CHECK, &[&path]);
    assert_eq!(got["data"], json!([10, 11, 2, 3, 4, 5, 6]));
    assert_eq!(got["same"], json!([true, true, true, true]));
}
