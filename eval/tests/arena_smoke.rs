//! Smoke tests of `clawhdf5-eval memory-arena`.

mod common;

use common::*;

#[test]
fn bm25_run_and_dump_are_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let (d1, d2, json) = (
        dir.path().join("a.json"),
        dir.path().join("b.json"),
        dir.path().join("r.json"),
    );
    run(&[
        "memory-arena",
        "--mode",
        "bm25-stem",
        "--dump",
        d1.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    run(&[
        "memory-arena",
        "--mode",
        "bm25",
        "--dump",
        d2.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&d1).unwrap(), std::fs::read(&d2).unwrap());
    let bench = read_json(&d1);
    assert_eq!(bench["sessions"].as_array().unwrap().len(), 50);
    assert_eq!(bench["questions"].as_array().unwrap().len(), 35);
    let r = read_json(&json);
    let hit10 = headline(&r, "bm25-stem", "Hit@10");
    assert!((0.0..=1.0).contains(&hit10));
}

#[test]
fn all_modes_with_the_model() {
    if !require(
        model_available(),
        "the all-MiniLM-L6-v2 model (scripts/setup/embed.sh)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cache = dir.path().join("emb.bin");
    run(&[
        "memory-arena",
        "--json",
        json.to_str().unwrap(),
        "--embedding-cache",
        cache.to_str().unwrap(),
        "--quiet",
    ]);
    let r = read_json(&json);
    for m in [
        "bm25",
        "bm25-stem",
        "vector",
        "hybrid",
        "rrf",
        "hybrid-rerank",
    ] {
        assert!((0.0..=1.0).contains(&headline(&r, m, "Hit@10")), "{m}");
    }
}
