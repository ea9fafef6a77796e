//! Datasets whose bytes h5py stores in external files (`external=`): several segments with offsets, one
//! segment to the end of its file, an absolute name, a file cut short (its missing tail reads as zeros) and a
//! file deleted (a clear error). Values equal h5py's, read with the external files' folder as the current
//! directory (where libhdf5 looks for relative names); we find them beside the HDF5 file from anywhere.

use crate::common;

use clawhdf5_format::{Array, Data, H5File};

const MAKE: &str = r#"
import json, os, sys, h5py, numpy as np
out = sys.argv[1]
os.chdir(out)
with h5py.File("ext.h5", "w") as f:
    f.create_dataset("segments", shape=(100,), dtype="f8", external=[("ext_a.bin", 0, 400), ("ext_b.bin", 16, 400)])
    f["segments"][:] = np.arange(100) / 4
    f.create_dataset("to_end", shape=(10, 10), dtype="<i4", external=[("ext_c.bin", 8, h5py.h5f.UNLIMITED)])
    f["to_end"][:] = np.arange(100).reshape(10, 10) * 3
    f.create_dataset("absolute", shape=(50,), dtype=">i2", external=[(os.path.join(out, "ext_d.bin"), 4, 100)])
    f["absolute"][:] = np.arange(50) - 25
    f.create_dataset("cut_short", shape=(40,), dtype="u1", external=[("ext_e.bin", 0, 40)])
    f["cut_short"][:] = np.arange(40) + 1
    f.create_dataset("gone", shape=(5,), dtype="u1", external=[("ext_f.bin", 0, 5)])
    f["gone"][:] = 1
with open("ext_e.bin", "r+b") as g:
    g.truncate(30)
os.remove("ext_f.bin")
with h5py.File("ext.h5", "r") as f:
    want = {k: f[k][()].ravel().tolist() for k in ["segments", "to_end", "absolute", "cut_short"]}
with open("want.json", "w") as g:
    g.write(json.dumps(want))
"#;

fn numbers(a: &Array) -> Vec<f64> {
    match &a.data {
        Data::F64(v) => v.clone(),
        Data::I32(v) => v.iter().map(|&x| x.into()).collect(),
        Data::I16(v) => v.iter().map(|&x| x.into()).collect(),
        Data::U8(v) => v.iter().map(|&x| x.into()).collect(),
        other => panic!("{}", other.type_name()),
    }
}

#[test]
fn external_data_files_read_equal_to_h5py() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path()]);
    let want = common::read_json(&dir.path().join("want.json"));
    let f = H5File::open(&dir.path().join("ext.h5")).unwrap();
    for name in ["segments", "to_end", "absolute", "cut_short"] {
        let d = f.dataset(&format!("/{name}")).unwrap();
        assert!(d.is_external(), "{name}");
        common::assert_f64s_equal(name, &numbers(&d.read().unwrap()), &want[name], &[]);
    }
    assert_eq!(
        numbers(&f.dataset("/cut_short").unwrap().read().unwrap())[29..31],
        [30.0, 0.0]
    );
    // Parts, and a typed read into a buffer.
    let d = f.dataset("/to_end").unwrap();
    assert_eq!(
        numbers(&d.read_slice(&[2, 3], &[1, 2]).unwrap()),
        [69.0, 72.0]
    );
    let mut buf = vec![0i32; 100];
    d.read_into(&mut buf).unwrap();
    assert_eq!(buf[99], 297);
    let e = f.dataset("/gone").unwrap().read().unwrap_err().to_string();
    assert!(e.contains("ext_f.bin"), "{e}");
}
