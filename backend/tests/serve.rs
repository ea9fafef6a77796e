//! `clawhdf5 serve`: JSON-RPC over stdio end to end through the real binary.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(dir: &std::path::Path, workspace: &std::path::Path) -> Server {
        Server::start_with(dir, workspace, &[])
    }

    fn start_with(dir: &std::path::Path, workspace: &std::path::Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clawhdf5"))
            .args(["serve", "--dir"])
            .arg(dir)
            .arg("--workspace")
            .arg(workspace)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            next: 1,
        }
    }

    fn send_raw(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut resp = String::new();
        self.stdout.read_line(&mut resp).unwrap();
        serde_json::from_str(&resp).unwrap()
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let r = self.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        assert_eq!(r["id"], id);
        r
    }

    fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }
}

#[test]
fn save_search_get_forget_status_sync_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("memory")).unwrap();
    std::fs::write(
        ws.path().join("MEMORY.md"),
        "# Facts\n\nThe deploy key lives in the vault.\n",
    )
    .unwrap();
    std::fs::write(
        ws.path().join("memory/2026-05-01.md"),
        "Met Priya about the Zurich office move.\nShe prefers Tuesday meetings.\n",
    )
    .unwrap();
    let mut s = Server::start(dir.path(), ws.path());

    assert_eq!(s.ok("ping", json!({}))["ok"], true);
    let a = s.ok(
        "save",
        json!({"text": "Bob's favourite colour is green", "session": "s1"}),
    );
    let id = a["id"].as_u64().unwrap();
    s.ok(
        "save",
        json!({"agent": "other", "text": "Bob's favourite colour is purple"}),
    );

    let r = s.ok("search", json!({"query": "favourite colour"}));
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "agents are isolated: {r}");
    assert_eq!(results[0]["id"].as_u64(), Some(id));

    // Automatic recall for a user turn goes through the decision gate: "thanks!" is not searched at all.
    let r = s.ok("search", json!({"query": "thanks!", "turn": true}));
    assert_eq!(r["skipped"], true, "{r}");
    assert!(r["results"].as_array().unwrap().is_empty());
    let r = s.ok(
        "search",
        json!({"query": "what is Bob's favourite colour?", "turn": true}),
    );
    assert_eq!(r["results"][0]["id"].as_u64(), Some(id), "{r}");
    assert!(r.get("skipped").is_none());

    let sync = s.ok("sync", json!({}));
    assert_eq!(sync["files_indexed"], 2);
    let again = s.ok("sync", json!({}));
    assert_eq!(again["files_unchanged"], 2);
    assert_eq!(again["files_indexed"], 0);

    let r = s.ok("search", json!({"query": "Zurich office"}));
    let top = &r["results"][0];
    assert_eq!(top["path"], "memory/2026-05-01.md");
    assert_eq!(top["start_line"], 1);
    assert_eq!(top["end_line"], 2);
    assert!(top["event_time"]
        .as_str()
        .unwrap()
        .starts_with("2026-05-01"));

    let g = s.ok(
        "get",
        json!({"path": "memory/2026-05-01.md", "from": 2, "lines": 1}),
    );
    assert_eq!(g["text"], "She prefers Tuesday meetings.");
    let g = s.ok("get", json!({"id": id}));
    assert_eq!(g["record"]["text"], "Bob's favourite colour is green");
    let g = s.ok("get", json!({"path": format!("clawhdf5/{id}")}));
    assert_eq!(g["record"]["id"].as_u64(), Some(id));

    let bad = s.call("get", json!({"path": "../../etc/passwd"}));
    assert_eq!(bad["error"]["code"], -32602);
    for zero in [json!({"from": 0}), json!({"lines": 0})] {
        let mut p = json!({"path": "memory/2026-05-01.md"});
        p.as_object_mut()
            .unwrap()
            .extend(zero.as_object().unwrap().clone());
        let bad = s.call("get", p);
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
    }
    let bad = s.call("search", json!({"query": "colour", "k": 0}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let bad = s.call("save", json!({"text": ""}));
    assert_eq!(bad["error"]["code"], -32602);
    let bad = s.call("save", json!({"text": "x", "bogus": 1}));
    assert_eq!(bad["error"]["code"], -32602);
    let bad = s.call("nope", json!({}));
    assert_eq!(bad["error"]["code"], -32601);
    let bad = s.send_raw("{not json");
    assert_eq!(bad["error"]["code"], -32700);
    let bad = s.call("save", json!({"agent": "../evil", "text": "x"}));
    assert_eq!(bad["error"]["code"], -32602);
    let bad = s.call(
        "search",
        json!({"query": "colour", "time_from": "2024-02-01", "time_to": "2024-01-01"}),
    );
    assert_eq!(bad["error"]["code"], -32602);
    assert!(
        bad["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("time_from")),
        "{bad}"
    );

    let f = s.ok("forget", json!({"id": id}));
    assert_eq!(f["forgotten"], json!([id]));
    let r = s.ok("search", json!({"query": "favourite colour"}));
    assert!(r["results"].as_array().unwrap().is_empty());
    let st = s.ok("status", json!({}));
    assert_eq!(st["backend"], "clawhdf5");
    assert_eq!(st["files"], 2);
    assert_eq!(st["fts"], true);
    // The saves went through the log (each durable write carrying whatever waited), a store this small is
    // searched exactly, so no row waits for the graph and no fold ran.
    assert!(st["log_writes"].as_u64().is_some_and(|n| n >= 1), "{st}");
    assert!(
        st["log_entries"].as_u64() >= st["log_writes"].as_u64(),
        "{st}"
    );
    assert_eq!(st["unindexed_rows"], 0);
    assert_eq!(st["index_folds"], 0);

    let bye = s.ok("shutdown", json!({}));
    assert_eq!(bye["ok"], true);
    let status = s.child.wait().unwrap();
    assert!(status.success());
    // Shutdown checkpointed: the HDF5 file alone holds the records, the log is empty.
    let wal = std::fs::metadata(dir.path().join("main.h5.wal"))
        .unwrap()
        .len();
    assert_eq!(wal, 16);
}

#[test]
fn end_of_input_shuts_down_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut s = Server::start(dir.path(), ws.path());
    s.ok("save", json!({"text": "remember this"}));
    drop(s.stdin.take());
    assert!(s.child.wait().unwrap().success());
    assert!(dir.path().join("main.h5").exists());
}

/// A workspace of `n` daily notes, enough that indexing it takes well over a millisecond.
fn big_workspace(n: usize) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("memory")).unwrap();
    for i in 0..n {
        let body: String = (0..40)
            .map(|l| {
                format!(
                    "Note {i} line {l}: the quarterly plan mentions item {}.\n",
                    i * 40 + l
                )
            })
            .collect();
        std::fs::write(
            ws.path()
                .join(format!("memory/2026-01-{:02}.md", i % 28 + 1)),
            body,
        )
        .unwrap();
    }
    ws
}

#[test]
fn sync_runs_under_its_own_deadline_not_the_request_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let ws = big_workspace(28);
    // A 1 ms request deadline would cut any real sync short; sync has its own.
    let mut s = Server::start_with(
        dir.path(),
        ws.path(),
        &["--deadline-ms", "1", "--sync-deadline-ms", "120000"],
    );
    let sync = s.ok("sync", json!({}));
    assert_eq!(sync["files_indexed"], 28, "{sync}");
    assert_eq!(s.ok("shutdown", json!({}))["ok"], true);
    assert!(s.child.wait().unwrap().success());
}

#[test]
fn a_sync_past_its_deadline_answers_deadline_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    let ws = big_workspace(28);
    let mut s = Server::start_with(
        dir.path(),
        ws.path(),
        &["--deadline-ms", "120000", "--sync-deadline-ms", "1"],
    );
    let r = s.call("sync", json!({}));
    assert_eq!(r["error"]["code"], -32001, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("sync did not finish within 1 ms"), "{msg}");
    // Other methods keep the ordinary deadline.
    assert_eq!(s.ok("ping", json!({}))["ok"], true);
    assert_eq!(s.ok("shutdown", json!({}))["ok"], true);
    assert!(s.child.wait().unwrap().success());
}
