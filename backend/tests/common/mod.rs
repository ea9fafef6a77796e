//! Helpers shared by the backend's integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Run the `clawhdf5` binary with arguments.
pub fn clawhdf5(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clawhdf5"))
        .args(args)
        .output()
        .expect("the clawhdf5 binary runs")
}

/// Stdout as a string.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as a string.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// True when `python3 -c "import MODULE"` works. Under CI=true a missing module is a test failure.
pub fn python_has(module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("python3 module {module} is missing under CI=true; the test command must install it");
        }
        eprintln!("skipping: python3 module {module} is not installed (run scripts/setup/*.sh)");
    }
    ok
}

/// True when `clawhdf5 model path` finds the embedding model. Under CI=true a missing model is a test failure.
pub fn model_installed() -> bool {
    if clawhdf5(&["model", "path"]).status.success() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the embedding model must be installed under CI (scripts/setup/embed.sh)"
    );
    eprintln!("skipped: the embedding model is not installed");
    false
}

/// Run a python3 script with arguments and return its stdout; panics with stderr on failure.
pub fn python(script: &str, args: &[&Path]) -> String {
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}
