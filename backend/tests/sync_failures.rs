//! Workspace syncs that meet trouble: a file that cannot be read, and a sync that stops partway (its model
//! fails). Neither may cost the other files their index, nor leave chunks of a version that is gone.

use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use clawhdf5_backend::{HdfBackend, MemoryBackend, SyncRequest};
use clawhdf5_memory::embed::{EmbedError, Embedder};
use clawhdf5_memory::{SearchMode, SearchQuery, StoreOptions};

/// A model that answers `calls_left` calls, then fails (negative: never fails).
struct Flaky {
    calls_left: Arc<AtomicIsize>,
}

impl Embedder for Flaky {
    fn model_id(&self) -> &str {
        "flaky-v1"
    }
    fn dim(&self) -> usize {
        4
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.calls_left.fetch_sub(1, Ordering::SeqCst) == 0 {
            return Err(EmbedError::InvalidInput("the model failed".into()));
        }
        Ok(texts
            .iter()
            .map(|t| vec![1.0, t.len() as f32 % 7.0, 0.5, 0.25])
            .collect())
    }
}

fn backend(calls_left: Arc<AtomicIsize>) -> (tempfile::TempDir, tempfile::TempDir, HdfBackend) {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("memory")).unwrap();
    let opts = StoreOptions {
        embedder: Some(Arc::new(Flaky { calls_left })),
        ..StoreOptions::default()
    };
    let b = HdfBackend::new(dir.path(), Some(ws.path().to_path_buf()), opts).unwrap();
    (dir, ws, b)
}

/// A note of `lines` long lines, each naming `version` (and `version` followed by its number, a word of its
/// own): several chunks of ~400 tokens.
fn note(version: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!(
                "- line {i} ({version}{i}) of the {version} notes: the gardener moved the {version} crates \
                 of tomatoes past the greenhouse and wrote the count on the {version} board by the gate.\n"
            )
        })
        .collect()
}

async fn found(b: &HdfBackend, word: &str) -> usize {
    let mut q = SearchQuery::new(word, 100);
    q.mode = SearchMode::Keyword;
    b.search("main", q).await.unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_that_stops_partway_leaves_no_chunks_of_a_version_that_is_gone() {
    let calls = Arc::new(AtomicIsize::new(-1));
    let (_dir, ws, b) = backend(Arc::clone(&calls));
    let path = ws.path().join("memory/2026-05-01.md");
    std::fs::write(&path, note("alphaversion", 60)).unwrap();
    let first = b.sync("main", SyncRequest::default()).await.unwrap();
    assert!(first.chunks_added >= 6, "{first:?}");
    assert!(found(&b, "alphaversion").await > 0);

    // The second version's sync fails after its first batch (two chunks a model call) was saved.
    std::fs::write(&path, note("betaversion", 60)).unwrap();
    calls.store(1, Ordering::SeqCst);
    let e = b.sync("main", SyncRequest::default()).await.unwrap_err();
    assert!(e.to_string().contains("the model failed"), "{e}");
    assert!(
        found(&b, "betaversion").await > 0,
        "the first batch was saved"
    );

    // A third version, synced whole: nothing of the second may stay behind.
    std::fs::write(&path, note("gammaversion", 60)).unwrap();
    calls.store(-1, Ordering::SeqCst);
    b.sync("main", SyncRequest::default()).await.unwrap();
    assert_eq!(
        found(&b, "betaversion").await,
        0,
        "chunks of a gone version stayed"
    );
    assert_eq!(found(&b, "alphaversion").await, 0);
    let now = found(&b, "gammaversion").await;
    assert!(now >= 6, "{now}");
    // What the store holds is what the sync state counts.
    let status = b.status("main").await.unwrap();
    let s = serde_json::to_value(&status).unwrap();
    assert_eq!(s["chunks"].as_u64(), Some(now as u64), "{s}");

    // The next sync finds nothing to do, and writes nothing.
    let logged = |s: &clawhdf5_backend::BackendStatus| {
        serde_json::to_value(s).unwrap()["log_entries"].clone()
    };
    let before = logged(&b.status("main").await.unwrap());
    let again = b.sync("main", SyncRequest::default()).await.unwrap();
    assert_eq!((again.files_unchanged, again.chunks_added), (1, 0));
    assert_eq!(logged(&b.status("main").await.unwrap()), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_sync_cannot_read_is_reported_and_the_others_are_indexed() {
    let (_dir, ws, b) = backend(Arc::new(AtomicIsize::new(-1)));
    std::fs::write(
        ws.path().join("memory/2026-05-02.md"),
        "- the spare key is under the blue pot\n",
    )
    .unwrap();
    // A memory file that fails to read (EIO): MEMORY.md pointing at this process's memory file.
    #[cfg(target_os = "linux")]
    std::os::unix::fs::symlink("/proc/self/mem", ws.path().join("MEMORY.md")).unwrap();
    let report = b.sync("main", SyncRequest::default()).await.unwrap();
    assert_eq!(report.files_indexed, 1, "{report:?}");
    assert_eq!(found(&b, "spare").await, 1);
    #[cfg(target_os = "linux")]
    {
        assert_eq!(report.files_unreadable.len(), 1, "{report:?}");
        assert!(
            report.files_unreadable[0].starts_with("MEMORY.md: "),
            "{report:?}"
        );
        // A name that is not UTF-8 (it could not be cited) is reported and left out.
        {
            use std::os::unix::ffi::OsStrExt;
            let name = std::ffi::OsStr::from_bytes(b"memory/bad\xffname.md");
            std::fs::write(ws.path().join(name), "- latin-1 name\n").unwrap();
        }
        // A path too long for a session label is left out too; a NUL in a file does not reach the store.
        let deep = format!("memory/{}/{}.md", "d".repeat(250), "n".repeat(240));
        let long_dir = ws.path().join(&deep);
        std::fs::create_dir_all(long_dir.parent().unwrap()).unwrap();
        std::fs::write(&long_dir, "- deep\n").unwrap();
        let mut deeper = deep.clone();
        for _ in 0..3 {
            deeper = deeper.replace(".md", &format!("/{}.md", "e".repeat(200)));
        }
        std::fs::create_dir_all(ws.path().join(&deeper).parent().unwrap()).unwrap();
        std::fs::write(ws.path().join(&deeper), "- deeper\n").unwrap();
        std::fs::write(ws.path().join("memory/2026-05-03.md"), "- nul \0 in text\n").unwrap();
        let r = b.sync("main", SyncRequest::default()).await.unwrap();
        assert_eq!(r.files_indexed, 2, "{r:?}");
        assert!(
            r.files_unreadable
                .iter()
                .any(|f| f.contains("path longer than")),
            "{r:?}"
        );
        assert!(
            r.files_unreadable
                .iter()
                .any(|f| f.ends_with("the name is not UTF-8")),
            "{r:?}"
        );
        let mut q = SearchQuery::new("nul", 5);
        q.mode = SearchMode::Keyword;
        let hits = b.search("main", q).await.unwrap();
        assert_eq!(hits[0].record.text, "- nul \u{FFFD} in text");
        // Readable again: indexed by the next sync.
        std::fs::remove_file(ws.path().join("MEMORY.md")).unwrap();
        std::fs::write(ws.path().join("MEMORY.md"), "- prefers green tea\n").unwrap();
        let next = b.sync("main", SyncRequest::default()).await.unwrap();
        assert_eq!(
            (next.files_indexed, next.files_unchanged),
            (1, 3),
            "{next:?}"
        );
        assert_eq!(
            next.files_unreadable.len(),
            2,
            "the long path and the name: {next:?}"
        );
        assert_eq!(found(&b, "tea").await, 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_of_megabytes_is_indexed_in_pieces_and_does_not_stop_the_sync() {
    let (_dir, ws, b) = backend(Arc::new(AtomicIsize::new(-1)));
    let blob: String = (0..400_000).map(|i| format!("b{i} ")).collect();
    std::fs::write(
        ws.path().join("memory/2026-05-01.md"),
        format!("- pasted log: {blob}\n- next line\n"),
    )
    .unwrap();
    std::fs::write(
        ws.path().join("memory/2026-05-02.md"),
        "- the spare key is under the blue pot\n",
    )
    .unwrap();
    let report = b.sync("main", SyncRequest::default()).await.unwrap();
    assert_eq!(report.files_indexed, 2, "{report:?}");
    assert_eq!(found(&b, "spare").await, 1);
    // A word from deep inside the long line is found, cited by that line.
    let mut q = SearchQuery::new("b399990", 5);
    q.mode = SearchMode::Keyword;
    let hits = b.search("main", q).await.unwrap();
    let origin = hits[0].record.origin.clone().unwrap();
    assert_eq!((origin.start_line, origin.end_line), (1, 1));
    assert!(
        hits[0].record.text.len() <= 1_600,
        "{}",
        hits[0].record.text.len()
    );
}

/// A `clawhdf5 serve` over stdio (keyword-only), answering requests by id.
struct Server {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Server {
    fn start(dir: &std::path::Path, ws: &std::path::Path) -> Server {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_clawhdf5"))
            .args(["serve", "--no-embed", "--dir"])
            .arg(dir)
            .arg("--workspace")
            .arg(ws)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            next: 1,
        }
    }

    /// Send a request; returns its id.
    fn send(&mut self, method: &str, params: serde_json::Value) -> u64 {
        use std::io::Write;
        let id = self.next;
        self.next += 1;
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        id
    }

    /// The result of request `id` (answers to other requests are skipped).
    fn result(&mut self, id: u64) -> serde_json::Value {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server exited"
            );
            let r: serde_json::Value = serde_json::from_str(&line).unwrap();
            if r["id"] == id {
                assert!(r.get("error").is_none(), "{r}");
                return r["result"].clone();
            }
        }
    }

    fn hits(&mut self, word: &str) -> usize {
        let id = self.send(
            "search",
            serde_json::json!({"query": word, "k": 100, "mode": "keyword"}),
        );
        self.result(id)["results"].as_array().unwrap().len()
    }
}

/// A server killed in the middle of a sync has saved some chunks without recording them; after the file
/// changes, the next sync (in a new server) forgets them instead of leaving them searchable.
#[test]
fn chunks_of_a_sync_killed_partway_are_forgotten_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("memory")).unwrap();
    let path = ws.path().join("memory/2026-05-01.md");
    std::fs::write(&path, note("deltaversion", 30_000)).unwrap();
    let mut s = Server::start(dir.path(), ws.path());
    let sync = s.send("sync", serde_json::json!({}));
    // Searches answer between the sync's batches: kill the server once some chunks are in. A batch is saved
    // only after the one before it is durable, so once line 2,000 (a later batch) is found, line 5 is on disk.
    let started = std::time::Instant::now();
    while s.hits("deltaversion2000") == 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    let _ = sync;

    let mut s = Server::start(dir.path(), ws.path());
    assert!(
        s.hits("deltaversion5") > 0,
        "the killed sync's chunks are durable"
    );
    std::fs::write(&path, note("epsilonversion", 200)).unwrap();
    let id = s.send("sync", serde_json::json!({}));
    let report = s.result(id);
    assert!(report["chunks_removed"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(
        s.hits("deltaversion5"),
        0,
        "chunks of the killed sync stayed"
    );
    assert!(s.hits("epsilonversion5") > 0);
    let id = s.send("shutdown", serde_json::json!({}));
    s.result(id);
    s.child.wait().unwrap();
}
