//! Smoke tests of `clawhdf5-eval locomo`: a real conversation with BM25 (seconds), a fixture with the model.

mod common;

use common::*;

#[test]
fn bm25_on_a_real_conversation_subset() {
    let src = shared().join("datasets/locomo/30.json");
    if !require(src.is_file(), "shared/datasets/locomo/30.json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&src, dir.path().join("30.json")).unwrap();
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let out = run(&[
        "locomo",
        dir.path().to_str().unwrap(),
        "--mode",
        "bm25-stem",
        "--limit",
        "40",
        "--json",
        json.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.contains("BM25 beside every mode"), "{out}");
    let r = read_json(&json);
    // BM25 is always run beside the requested modes.
    let modes: Vec<&str> = r["grids"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[0].as_str().unwrap())
        .collect();
    assert_eq!(modes, vec!["bm25", "bm25-stem"]);
    let turn = headline(&r, "bm25-stem", "turn R_any@5");
    let session = headline(&r, "bm25-stem", "session R_any@5");
    assert!(
        (0.0..=1.0).contains(&turn) && session >= turn,
        "turn {turn}, session {session}"
    );
    assert_eq!(r["dataset"]["turns"], 369);
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("| cat 1-4 |"));
}

#[test]
fn session_granularity_and_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.json"), locomo_fixture().to_string()).unwrap();
    let json = out.path().join("r.json");
    run(&[
        "locomo",
        dir.path().to_str().unwrap(),
        "--mode",
        "bm25",
        "--granularity",
        "session",
        "--json",
        json.to_str().unwrap(),
    ]);
    let r = read_json(&json);
    assert_eq!(
        headline(&r, "bm25", "session R_any@10"),
        1.0,
        "two sessions: both always within 10"
    );
    let err = run_err(&["locomo", dir.path().to_str().unwrap(), "--mode", "magic"]);
    assert!(err.contains("unknown mode"), "{err}");
    let err = run_err(&[
        "locomo",
        dir.path().to_str().unwrap(),
        "--granularity",
        "word",
        "--mode",
        "bm25",
    ]);
    assert!(err.contains("granularity"), "{err}");
    std::fs::write(dir.path().join("broken.json"), "{\"speaker_a\": 1}").unwrap();
    let err = run_err(&["locomo", dir.path().to_str().unwrap(), "--mode", "bm25"]);
    assert!(err.contains("broken.json"), "{err}");
}

#[test]
fn every_mode_with_the_model_on_a_fixture() {
    if !require(
        model_available(),
        "the all-MiniLM-L6-v2 model (scripts/setup/embed.sh)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("c.json"), locomo_fixture().to_string()).unwrap();
    let json = dir.path().join("r.json");
    let cache = dir.path().join("emb.bin");
    let args = [
        "locomo",
        data.to_str().unwrap(),
        "--sweep",
        "--json",
        json.to_str().unwrap(),
        "--embedding-cache",
        cache.to_str().unwrap(),
        "--quiet",
    ];
    run(&args);
    let r = read_json(&json);
    for m in [
        "bm25",
        "bm25-stem",
        "vector",
        "hybrid",
        "rrf",
        "hybrid-rerank",
    ] {
        let v = headline(&r, m, "turn R_any@10");
        assert!((0.0..=1.0).contains(&v), "{m}: {v}");
    }
    assert_eq!(
        r["grids"][1]["rows"].as_array().unwrap().len(),
        11,
        "weight sweep 0.0..1.0"
    );
    let titles: Vec<&str> = r["grids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["title"].as_str())
        .collect();
    for part in [
        "a day the question names",
        "a month the question names",
        "pseudo-relevance feedback",
        "scaled to the query",
        "best question-turn cosine",
        "session cosine weight x session-document weight",
    ] {
        assert!(
            titles.iter().any(|t| t.contains(part)),
            "no sweep about {part:?} in {titles:?}"
        );
    }
    // A second run finds every embedding in the cache and gives the same figures.
    let first = std::fs::metadata(&cache).unwrap().len();
    run(&args);
    assert_eq!(std::fs::metadata(&cache).unwrap().len(), first);
    // Every cell but the last (ms/query, a timing).
    let figures = |v: &serde_json::Value| {
        let row = v["grids"][0]["rows"][2]
            .as_array()
            .cloned()
            .unwrap_or_default();
        row[..row.len().saturating_sub(1)].to_vec()
    };
    assert_eq!(figures(&read_json(&json)), figures(&r));
    // Pseudo-relevance feedback switched on from the command line still gives a valid ranking.
    let fb = [
        "locomo",
        data.to_str().unwrap(),
        "--mode",
        "hybrid-rerank",
        "--feedback-docs",
        "2",
        "--feedback-vector",
        "0.25",
        "--json",
        json.to_str().unwrap(),
        "--embedding-cache",
        cache.to_str().unwrap(),
        "--quiet",
    ];
    run(&fb);
    let v = headline(&read_json(&json), "hybrid-rerank", "session R_any@5");
    assert!((0.0..=1.0).contains(&v), "{v}");
    // The per-question dump: one JSON line per question, every ranking named, evidence beside it.
    let dump = dir.path().join("dump.jsonl");
    run(&[
        "locomo",
        data.to_str().unwrap(),
        "--mode",
        "hybrid-rerank",
        "--dump",
        dump.to_str().unwrap(),
        "--embedding-cache",
        cache.to_str().unwrap(),
        "--quiet",
    ]);
    let text = std::fs::read_to_string(&dump).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let asked = locomo_fixture()["qa"].as_array().unwrap().len();
    assert_eq!(lines.len(), asked);
    for l in &lines {
        for key in ["bm25", "vector", "hybrid", "rerank", "sessions"] {
            assert!(l[key].is_array(), "{key} missing in {l}");
        }
        assert!(l["evidence"].is_array() && l["question"].is_string());
    }
    // With the session cosine and session documents off, the session level is the plain roll-up of the turns.
    run(&[
        "locomo",
        data.to_str().unwrap(),
        "--mode",
        "hybrid-rerank",
        "--session-vector",
        "0",
        "--session-docs",
        "0",
        "--json",
        json.to_str().unwrap(),
        "--embedding-cache",
        cache.to_str().unwrap(),
        "--quiet",
    ]);
    let plain = headline(&read_json(&json), "hybrid-rerank", "session R_any@5");
    assert!((0.0..=1.0).contains(&plain), "{plain}");
}
