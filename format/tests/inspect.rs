//! `inspect::ls` and `inspect::dump_json` (behind `clawhdf5 h5 ls/dump --json`).

use clawhdf5_format::inspect::{dump_json, ls};
use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, H5File};
use serde_json::json;

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
