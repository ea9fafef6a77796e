//! The `clawhdf5-search-hops` benchmark harness: a clear error on bad input, and a JSON breakdown on a small
//! store when the embedding model is installed.

mod common;

use std::process::{Command, Output};

use common::{clawhdf5, stderr, stdout};

fn hops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clawhdf5-search-hops"))
        .args(args)
        .output()
        .expect("the clawhdf5-search-hops binary runs")
}

#[test]
fn an_empty_query_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let queries = dir.path().join("q.txt");
    std::fs::write(&queries, "\n  \n").unwrap();
    let o = hops(&[
        "--dir",
        dir.path().to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("holds no queries"), "{}", stderr(&o));
    let missing = dir.path().join("none.txt");
    let o = hops(&[
        "--dir",
        dir.path().to_str().unwrap(),
        "--queries",
        missing.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("none.txt"), "{}", stderr(&o));
}

#[test]
fn every_piece_of_a_search_is_timed() {
    if !common::model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("main.h5");
    for text in [
        "Caroline went to the LGBTQ support group on 7 May",
        "Melanie painted a sunrise over the lake",
        "The user prefers tea over coffee",
    ] {
        let o = clawhdf5(&["save", "--store", store.to_str().unwrap(), text]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let queries = dir.path().join("q.txt");
    std::fs::write(
        &queries,
        "When did Caroline go to the support group?\nWhat did Melanie paint?\n",
    )
    .unwrap();
    let o = hops(&[
        "--dir",
        dir.path().to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
        "--k",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["records"], 3, "{v}");
    assert_eq!(v["queries"], 2, "{v}");
    assert!(
        v["forward_passes_per_search"].as_f64().unwrap() >= 1.0,
        "{v}"
    );
    for piece in [
        "tokenize",
        "embed",
        "embed_1_thread",
        "store_search_given_vector",
        "store_search_full",
        "record_access",
        "answer_json",
        "serve_in_process",
    ] {
        let p50 = v["ms"][piece]["p50"].as_f64();
        assert!(p50.is_some_and(|x| x >= 0.0), "{piece}: {v}");
    }
}
