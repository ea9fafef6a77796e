//! Smoke runs of the benchmark harnesses (`search-harness`, `footprint`, `consolidation`, `ephemeral`,
//! `read-harness`): each finishes in seconds on tiny sizes and writes its Markdown and JSON, so the commands
//! behind BENCHMARKS.md cannot rot.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use serde_json::Value;

fn locomo() -> PathBuf {
    shared().join("datasets/locomo")
}

fn have_locomo() -> bool {
    require(
        locomo().is_dir(),
        "the LoCoMo dataset (../shared/datasets/locomo)",
    )
}

/// Run `NAME --smoke` into a fresh folder; returns (Markdown, JSON).
fn smoke(name: &str, extra: &[&str]) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let work = dir.path().join("work");
    let mut args = vec![
        name,
        "--smoke",
        "--out",
        out.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args);
    let left: Vec<_> = std::fs::read_dir(&work)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.file_name())).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{name} left files behind: {left:?}");
    let stem = out.join(name);
    let md = std::fs::read_to_string(stem.with_extension("md")).unwrap();
    let json = read_json(&stem.with_extension("json"));
    assert_eq!(json["name"], name);
    assert_eq!(json["smoke"], true);
    assert!(md.contains("smoke size"), "{md}");
    (md, json)
}

#[test]
fn search_harness_smoke() {
    if !have_locomo() {
        return;
    }
    let (md, j) = smoke("search-harness", &["--locomo", locomo().to_str().unwrap()]);
    assert!(md.contains("HNSW ef sweep"), "{md}");
    assert!(md.contains("End-to-end hybrid search through `Store`"));
    assert!(md.contains("| hybrid p50 (ms) |"));
    assert!(md.contains("batch ingest (vectors given) ≥ 70,000 records/s"));
    let rows = j["data"]["ef_sweep"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        let recall = r["recall"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&recall));
    }
    let size = &j["data"]["sizes"][0];
    assert!(size["probe"]["records"].as_u64().unwrap() >= 300);
    assert!(size["probe"]["steady"]["p50_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(size["probe"]["first_hits"], 10);
    assert!(size["ingest"]["seconds"].as_f64().unwrap() > 0.0);
}

#[test]
fn footprint_smoke() {
    if !have_locomo() {
        return;
    }
    let (md, j) = smoke("footprint", &["--locomo", locomo().to_str().unwrap()]);
    assert!(md.contains("file / payload (goal ≤ 1.1×)"));
    assert!(md.contains("`/records/embedding`") && md.contains("`/records/text`"));
    let s = &j["data"]["sizes"][0];
    let file = s["file_bytes"].as_u64().unwrap();
    let sum: u64 = s["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["stored"].as_u64().unwrap() + d["heap"].as_u64().unwrap())
        .sum();
    assert!(sum > 0 && sum <= file, "datasets {sum} vs file {file}");
    assert!(s["probe"]["rss_after_first"].as_u64().unwrap() > 0);
}

#[test]
fn consolidation_smoke() {
    if !have_locomo() {
        return;
    }
    let (md, j) = smoke("consolidation", &["--locomo", locomo().to_str().unwrap()]);
    assert!(md.contains("Consolidation cycle time"));
    assert!(md.contains("| before consolidation |"));
    let q = j["data"]["quality"].as_array().unwrap();
    assert_eq!(q.len(), 4);
    assert!(q[0]["questions"].as_u64().unwrap() > 0);
    assert_eq!(j["data"]["cycles"][0]["records"], 100);
}

#[test]
fn ephemeral_smoke() {
    if !have_locomo() {
        return;
    }
    let (md, j) = smoke("ephemeral", &["--locomo", locomo().to_str().unwrap()]);
    assert!(md.contains("| 64 |"), "{md}");
    assert!(
        !md.contains("Redis |"),
        "no Redis column without a measured redis-server"
    );
    assert!(j["data"]["capacities"][0]["put_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn read_harness_smoke() {
    let (md, j) = smoke("read-harness", &[]);
    assert!(md.contains("| chunked + deflate | one column |"), "{md}");
    assert_eq!(j["data"]["rows"].as_array().unwrap().len(), 15);
    let h5py = Command::new("python3")
        .args(["-c", "import h5py"])
        .output()
        .is_ok_and(|o| o.status.success());
    if h5py {
        assert!(j["data"]["rows"][0]["h5py_ms"].as_f64().is_some(), "{md}");
    } else {
        assert!(md.contains("h5py column absent"), "{md}");
    }
}

#[test]
fn missing_dataset_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clawhdf5-eval"))
        .args([
            "search-harness",
            "--smoke",
            "--out",
            dir.path().to_str().unwrap(),
            "--locomo",
            "/nonexistent/locomo",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("LoCoMo dataset is missing"), "{err}");
}
