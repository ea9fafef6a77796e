//! Runs `cognitive-bench --smoke` end to end, so the commands behind BENCHMARKS.md's cognitive-layer figures
//! cannot rot. The hybrid sections need the all-MiniLM-L6-v2 model (scripts/setup/embed.sh installs it):
//! under CI=true a missing model fails the test; elsewhere those sections are skipped with a printed reason.

use std::process::Command;

fn bench(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cognitive-bench"))
        .args(args)
        .output()
        .expect("cognitive-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "cognitive-bench {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn keyword_sections_run() {
    let out = bench(&[
        "--smoke",
        "--only",
        "gate,bfs,consolidation,locomo,conflicts",
    ]);
    for heading in [
        "## Decision gate",
        "## Knowledge graph",
        "## Consolidation",
        "## Re-ranker on LoCoMo, BM25 mode",
        "## Conflicting facts, BM25 mode",
    ] {
        assert!(out.contains(heading), "{heading} missing:\n{out}");
    }
    assert!(out.contains("| AgentMemory, re-ranker on |"), "{out}");
}

#[test]
fn hybrid_sections_run() {
    if let Err(e) = clawhdf5_embed::resolve_model_dir(None) {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true and the embedding model is missing: {e}");
        }
        eprintln!("skipping the hybrid sections: no embedding model ({e})");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("embeddings.bin");
    let cache = cache.to_str().unwrap();
    let out = bench(&[
        "--smoke",
        "--only",
        "locomo-hybrid,conflicts-hybrid",
        "--embed-cache",
        cache,
    ]);
    assert!(out.contains("## Re-ranker on LoCoMo, hybrid mode"), "{out}");
    assert!(out.contains("| Store::search, hybrid |"), "{out}");
    // A second run reads every vector from the cache.
    let again = bench(&[
        "--smoke",
        "--only",
        "conflicts-hybrid",
        "--embed-cache",
        cache,
    ]);
    assert!(
        again.contains("## Conflicting facts, hybrid mode"),
        "{again}"
    );
}

#[test]
fn unknown_section_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_cognitive-bench"))
        .args(["--only", "nonsense"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown section"));
}
