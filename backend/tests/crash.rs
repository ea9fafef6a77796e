//! Crash safety: a server saving in a loop is killed with SIGKILL at random moments (some during checkpoints);
//! after each kill the store opens and holds every save that had been acknowledged.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clawhdf5_memory::Store;

/// Small deterministic PRNG (xorshift) so failures can be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A whole number from the environment variable `name`, else `default`.
fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Longer hunts: `CLAWHDF5_CRASH_KILLS` (default 50) and `CLAWHDF5_CRASH_SEED` choose the kills; with
/// `CLAWHDF5_CRASH_EMBED=1` the server embeds its saves with the local model, so the kills also land in vector
/// folds and checkpoints that write the graph.
#[test]
fn acknowledged_saves_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(env_number("CLAWHDF5_CRASH_SEED", 0x9E37_79B9_7F4A_7C15).max(1));
    let mut acked: Vec<(u64, String)> = Vec::new();
    let kills = env_number("CLAWHDF5_CRASH_KILLS", 50);
    let embed = std::env::var("CLAWHDF5_CRASH_EMBED").is_ok_and(|v| v == "1");
    let mut counter = 0u64;
    for round in 0..kills {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clawhdf5"));
        child.arg("serve");
        if !embed {
            child.arg("--no-embed");
        }
        let mut child = child
            .args(["--checkpoint-bytes", "6000", "--dir"])
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<u64>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    break;
                };
                if let (Some(req), Some(_)) = (v["id"].as_u64(), v["result"]["id"].as_u64()) {
                    if tx.send(req).is_err() {
                        break;
                    }
                }
            }
        });
        // Write requests as fast as the pipe takes them; kill after a random delay.
        let texts: Vec<String> = (0..2000)
            .map(|i| format!("round {round} memory {i} token{}", counter + i))
            .collect();
        counter += 2000;
        let texts2 = texts.clone();
        let writer = std::thread::spawn(move || {
            for (i, t) in texts2.iter().enumerate() {
                let req = serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "save", "params": {"text": t}});
                if writeln!(stdin, "{req}").is_err() {
                    break;
                }
            }
            let _ = stdin.flush();
            // Keep stdin open (EOF would shut the server down cleanly) until the kill.
            std::thread::sleep(Duration::from_secs(30));
        });
        // Loading the model takes about half a second before the first save is answered.
        let (least, spread) = if embed { (300, 900) } else { (60, 240) };
        let delay = Duration::from_millis(least + rng.next() % spread);
        let start = Instant::now();
        let mut acked_now = Vec::new();
        while start.elapsed() < delay {
            if let Ok(req) = rx.recv_timeout(Duration::from_millis(1)) {
                acked_now.push(req as usize);
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Responses already read were acknowledged before the kill.
        while let Ok(req) = rx.try_recv() {
            acked_now.push(req as usize);
        }
        reader.join().unwrap();
        drop(writer);
        for i in acked_now {
            acked.push((0, texts[i].clone()));
        }
        let path = dir.path().join("main.h5");
        if !path.exists() && acked.is_empty() {
            // Killed before the first save created the store: nothing was acknowledged, nothing to check.
            continue;
        }
        let store = Store::open_read_only(&path)
            .unwrap_or_else(|e| panic!("round {round}: store does not open after SIGKILL: {e}"));
        let present: std::collections::HashSet<&str> =
            store.records().iter().map(|r| r.text.as_str()).collect();
        for (_, t) in &acked {
            assert!(
                present.contains(t.as_str()),
                "round {round}: acknowledged save {t:?} was lost"
            );
        }
    }
    assert!(
        acked.len() > 100,
        "too few saves were acknowledged ({}) to mean anything",
        acked.len()
    );
}
