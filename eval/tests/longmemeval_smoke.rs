//! Smoke tests of `clawhdf5-eval longmemeval` on schema-faithful generated files.

mod common;

use common::*;

#[test]
fn bm25_session_and_turn_level_on_a_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("longmemeval_s.json");
    std::fs::write(&file, longmemeval_fixture(12, 10).to_string()).unwrap();
    let json = dir.path().join("r.json");
    run(&[
        "longmemeval",
        file.to_str().unwrap(),
        "--mode",
        "bm25-stem",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    let r = read_json(&json);
    assert_eq!(r["dataset"]["questions_evaluated"], 12);
    assert_eq!(r["dataset"]["abstention"], 2);
    // single-session-assistant questions (2 of 12, neither an abstention here) have no user-side evidence.
    assert_eq!(r["dataset"]["user_side_evidence"], 8);
    let density = r["dataset"]["evidence_session_density"].as_f64().unwrap();
    assert!(density > 0.09 && density < 0.2, "{density}");
    let rows: Vec<&str> = r["tables"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[0].as_str().unwrap())
        .collect();
    assert!(
        rows.contains(&"type: multi-session") && rows.contains(&"type: abstention"),
        "{rows:?}"
    );
    assert_eq!(
        headline(&r, "bm25-stem", "R_any@5 user-ev"),
        1.0,
        "the fixture's facts are lexical matches"
    );

    let out = run(&[
        "longmemeval",
        file.to_str().unwrap(),
        "--mode",
        "bm25",
        "--granularity",
        "turn",
        "--limit",
        "6",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.contains("turn level"), "{out}");
    let r = read_json(&json);
    assert_eq!(r["dataset"]["questions_evaluated"], 6);
    let ks: Vec<u64> = r["tables"][0]["ks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_u64().unwrap())
        .collect();
    assert_eq!(ks, vec![1, 3, 5, 10, 30, 50]);
}

#[test]
fn oracle_density_is_flagged_and_bad_files_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("longmemeval_oracle.json");
    // An oracle file holds only the evidence sessions.
    let mut data = longmemeval_fixture(4, 3);
    for q in data.as_array_mut().unwrap() {
        q["answer_session_ids"] = q["haystack_session_ids"].clone();
    }
    std::fs::write(&file, data.to_string()).unwrap();
    let out = run(&[
        "longmemeval",
        file.to_str().unwrap(),
        "--mode",
        "bm25",
        "--quiet",
    ]);
    assert!(out.contains("oracle-style file"), "{out}");
    std::fs::write(&file, "[{\"question_id\": 1}]").unwrap();
    let err = run_err(&["longmemeval", file.to_str().unwrap(), "--mode", "bm25"]);
    assert!(err.contains("question [0]"), "{err}");
    let err = run_err(&[
        "longmemeval",
        dir.path().join("missing.json").to_str().unwrap(),
        "--mode",
        "bm25",
    ]);
    assert!(err.contains("missing.json"), "{err}");
}

#[test]
fn hybrid_modes_with_the_model() {
    if !require(
        model_available(),
        "the all-MiniLM-L6-v2 model (scripts/setup/embed.sh)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("longmemeval_s.json");
    std::fs::write(&file, longmemeval_fixture(4, 6).to_string()).unwrap();
    let json = dir.path().join("r.json");
    let cache = dir.path().join("emb.bin");
    run(&[
        "longmemeval",
        file.to_str().unwrap(),
        "--sweep",
        "--json",
        json.to_str().unwrap(),
        "--embedding-cache",
        cache.to_str().unwrap(),
        "--quiet",
    ]);
    let r = read_json(&json);
    for m in ["vector", "hybrid", "rrf", "hybrid-rerank"] {
        assert!((0.0..=1.0).contains(&headline(&r, m, "R_any@5 all")), "{m}");
    }
    assert_eq!(r["grids"][1]["rows"].as_array().unwrap().len(), 11);
}
