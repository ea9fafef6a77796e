//! Helpers the memory crate's integration tests share.

use std::path::Path;
use std::process::Command;

/// Whether python3 can import h5py and numpy; under `CI=true` their absence fails the test instead of skipping it.
pub fn python_has_h5py() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import h5py, numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var("CI").map(|v| v != "true").unwrap_or(true),
            "h5py is missing under CI=true: scripts/setup/python.sh must install it"
        );
        eprintln!("skipping: h5py is not installed (bash scripts/setup/python.sh installs it)");
    }
    ok
}

/// Runs the python3 `script` with `path` as its argument; its standard output, trimmed. Panics if it fails.
#[allow(dead_code)]
pub fn python(script: &str, path: &Path) -> String {
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
