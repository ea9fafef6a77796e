//! The `ann-bench` harness behind BENCHMARKS.md runs end to end on a small data set (generate, build, save and
//! load the graph, sweep, filtered searches), so the commands documented there cannot rot.

use std::process::Command;

fn bench(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ann-bench"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("ann-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ann-bench {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn generate_build_persist_and_search() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    bench(&[
        "gen",
        "--out",
        data,
        "--n",
        "1500",
        "--queries",
        "20",
        "--dim",
        "32",
    ]);
    let graph = dir.path().join("graph.bin");
    let graph = graph.to_str().unwrap();
    let first = bench(&[
        "run",
        "--dir",
        data,
        "--ef",
        "16,32",
        "--threads",
        "2",
        "--repeat",
        "1",
        "--graph",
        graph,
    ]);
    assert!(first.contains("persist\tours-f32"), "{first}");
    assert!(first.lines().any(|l| l.starts_with("filtered")), "{first}");
    // The second run loads the saved graph instead of building it.
    let again = bench(&[
        "run",
        "--dir",
        data,
        "--ef",
        "16",
        "--repeat",
        "1",
        "--graph",
        graph,
        "--filtered",
        "false",
    ]);
    assert!(again.contains("graph loaded from"), "{again}");
}

#[test]
fn bad_options_are_clear_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_ann-bench"))
        .args(["run", "--dir"])
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dir needs a value"));
}

#[test]
fn help_prints_the_usage_and_a_missing_command_is_an_error_that_shows_it() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ann-bench"))
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap()
    };
    for flag in ["--help", "-h", "help"] {
        let out = run(&[flag]);
        assert!(out.status.success(), "{flag}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("ann-bench run     --dir DIR"),
            "{flag}: {text}"
        );
        assert!(out.stderr.is_empty(), "{flag}");
    }
    let out = run(&[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no command given") && err.contains("ann-bench gen"),
        "{err}"
    );
}
