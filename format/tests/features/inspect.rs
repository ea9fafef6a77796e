//! `inspect::ls` and `inspect::dump_json` (behind `clawhdf5 h5 ls/dump --json`).

use clawhdf5_format::inspect::{dump_json, ls, ls_recursive};
use clawhdf5_format::{Array, Data, DatasetOptions, EntryKind, FileWriter, H5File};
use serde_json::json;

use crate::common;

fn file() -> H5File {
    let mut w = FileWriter::new();
    w.write_dataset(
        "/mem/v",
        Array::matrix(2, 2, Data::F32(vec![1.0, 2.0, 3.0, 4.5])).unwrap(),
        DatasetOptions {
            chunk: Some(vec![1, 2]),
            deflate: Some(4),
            max_shape: Some(vec![None, Some(2)]),
            ..Default::default()
        },
    )
    .unwrap();
    w.write_dataset(
        "/mem/t",
        Array::vector(Data::VarStr(vec!["a".into(), "é".into()])),
        DatasetOptions::default(),
    )
    .unwrap();
    w.create_group("/sessions").unwrap();
    w.set_attr("/mem/v", "dim", Array::scalar(Data::U32(vec![2])))
        .unwrap();
    H5File::from_bytes(w.to_bytes().unwrap()).unwrap()
}

#[test]
fn ls_lists_groups_and_datasets() {
    let f = file();
    let root = ls(&f, "/").unwrap();
    assert_eq!(root.len(), 2);
    assert!(root[0].starts_with("mem") && root[0].contains("Group"));
    let mem = ls(&f, "/mem").unwrap();
    assert!(
        mem.iter()
            .any(|l| l.starts_with("v") && l.contains("{2/Inf, 2}") && l.contains("f32")),
        "{mem:?}"
    );
    assert!(
        mem.iter()
            .any(|l| l.starts_with("t") && l.contains("vlen-str")),
        "{mem:?}"
    );
    assert!(ls(&f, "/nope").is_err());
}

#[test]
fn ls_recursive_lists_every_object_by_full_path_in_order() {
    let mut w = FileWriter::new();
    w.write_dataset(
        "/mem/v",
        Array::vector(Data::F32(vec![1.0])),
        DatasetOptions::default(),
    )
    .unwrap();
    w.create_group("/mem/deep/er").unwrap();
    w.create_group("/sessions").unwrap();
    w.soft_link("/mem/alias", "/mem/v").unwrap();
    let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
    let names: Vec<String> = ls_recursive(&f, "/")
        .unwrap()
        .iter()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "/",
            "/mem",
            "/mem/alias",
            "/mem/deep",
            "/mem/deep/er",
            "/mem/v",
            "/sessions"
        ]
    );
    let under = ls_recursive(&f, "mem/deep").unwrap();
    assert_eq!(under.len(), 2, "{under:?}");
    assert!(under[1].starts_with("/mem/deep/er") && under[1].contains("Group"));
    let one = ls_recursive(&f, "/mem/v").unwrap();
    assert_eq!(one.len(), 1);
    assert!(one[0].starts_with("/mem/v") && one[0].contains("Dataset {1}"));
    assert!(ls_recursive(&f, "/mem/alias").unwrap()[0].contains("Dataset"));
    assert!(ls_recursive(&f, "/nope").is_err());
}

#[test]
fn ls_recursive_walks_a_deep_file_by_address_and_can_stop_early() {
    let depth = 600;
    let path: String = (0..depth).map(|i| format!("/g{i}")).collect();
    let mut w = FileWriter::new();
    w.create_group(&path).unwrap();
    let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
    let lines = ls_recursive(&f, "/").unwrap();
    assert_eq!(lines.len(), depth + 1);
    assert!(lines[depth].starts_with(&path), "{}", lines[depth]);
    let mut n = 0;
    clawhdf5_format::inspect::ls_recursive_each(&f, "/", &mut |_| {
        n += 1;
        if n == 3 {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!(n, 3);
}

#[test]
fn ls_recursive_ends_on_a_cycle_of_hard_links() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cycle.h5");
    common::run_python(
        "import sys, h5py\n\
             with h5py.File(sys.argv[1], 'w') as f:\n\
             \x20   g = f.create_group('a/b')\n\
             \x20   g['up'] = f['a']\n\
             \x20   f['also_b'] = g\n\
             \x20   g['x'] = [1, 2]\n",
        &[&path],
    );
    let f = H5File::open(&path).unwrap();
    let lines = ls_recursive(&f, "/").unwrap();
    let find = |p: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(p))
            .unwrap_or_else(|| panic!("{p} missing from {lines:?}"))
    };
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(find("/a/b/up").contains("same as /a"), "{lines:?}");
    assert!(find("/also_b").contains("same as /a/b"), "{lines:?}");
    assert!(find("/a/b/x").contains("Dataset {2}"), "{lines:?}");
}

#[test]
fn dump_json_describes_datasets_and_groups() {
    let f = file();
    let d = dump_json(&f, "/mem/v").unwrap();
    assert_eq!(d["kind"], json!("dataset"));
    assert_eq!(d["shape"], json!([2, 2]));
    assert_eq!(d["max_shape"], json!([null, 2]));
    assert_eq!(d["layout"], json!("chunked"));
    assert_eq!(d["chunks"], json!([1, 2]));
    assert_eq!(d["filters"][0]["name"], json!("deflate"));
    assert_eq!(d["value"], json!([[1.0, 2.0], [3.0, 4.5]]));
    assert_eq!(d["attributes"]["dim"], json!(2));
    assert_eq!(dump_json(&f, "/mem/t").unwrap()["value"], json!(["a", "é"]));
    let g = dump_json(&f, "/mem").unwrap();
    assert_eq!(g["kind"], json!("group"));
    assert_eq!(
        g["links"],
        json!([{"name": "t", "kind": "dataset"}, {"name": "v", "kind": "dataset"}])
    );
}

#[test]
fn committed_datatypes_are_listed_and_dumped_as_types() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("named.h5");
    common::run_python(
        "import sys, h5py, numpy as np\n\
         with h5py.File(sys.argv[1], 'w') as f:\n\
         \x20   f['pair'] = np.dtype([('a', '<i4'), ('b', '<f8')])\n\
         \x20   f['pair'].attrs['note'] = 'a committed type'\n\
         \x20   f.create_dataset('uses', data=np.zeros(2, dtype=f['pair'].dtype), dtype=f['pair'])\n",
        &[&path],
    );
    let f = H5File::open(&path).unwrap();
    assert_eq!(f.kind("/pair").unwrap(), EntryKind::Datatype);
    let want = "Type compound{a: i32, b: f64}";
    let root = ls(&f, "/").unwrap();
    assert!(
        root[0].starts_with("pair") && root[0].ends_with(want),
        "{root:?}"
    );
    assert!(ls(&f, "/pair").unwrap()[0].ends_with(want));
    let all = ls_recursive(&f, "/").unwrap();
    assert!(
        all.iter()
            .any(|l| l.starts_with("/pair") && l.ends_with(want)),
        "{all:?}"
    );
    let j = dump_json(&f, "/pair").unwrap();
    assert_eq!(j["kind"], "datatype");
    assert_eq!(j["dtype"], "compound{a: i32, b: f64}");
    assert_eq!(j["attributes"]["note"], "a committed type");
    assert_eq!(dump_json(&f, "/").unwrap()["links"][0]["kind"], "datatype");
    assert!(f.named_datatype("/uses").is_err());
}
