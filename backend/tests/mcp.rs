//! `clawhdf5 mcp` driven by a real MCP client library (the `mcp` package from PyPI).

mod common;

use std::process::Command;

#[test]
fn official_python_mcp_client_uses_every_tool() {
    if !common::python_has("mcp") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("MEMORY.md"),
        "first line\nsecond line\nthird line\n",
    )
    .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/mcp_client.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_clawhdf5"))
        .arg(dir.path())
        .arg(ws.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "MCP client failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}
