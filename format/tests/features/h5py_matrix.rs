//! The h5py-generated matrix: every feature × libver earliest / v108 / v110 / latest, written by
//! h5py (HDF5 2.0) at test time; every dataset, attribute and link we read equals h5py's view.

use crate::common;

use std::process::Command;

#[test]
fn h5py_matrix_reads_equal() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("python3")
        .arg(common::script("make_matrix.py"))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success(), "make_matrix.py failed");
    let mut bad = Vec::new();
    for lv in ["earliest", "v108", "v110", "latest"] {
        let (b, unsupported) = common::compare_file(&dir.path().join(format!("{lv}.h5")));
        bad.extend(b);
        bad.extend(unsupported);
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
