//! Model fetch from a Hugging Face hub, against a local HTTP server that serves the hub's
//! `/{repo}/resolve/{revision}/{file}` layout.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clawhdf5_embed::{
    default_model_dir, fetch_model_from_hub, sha256_file, EmbedError, HubSource, HUB_FILES,
    HUB_REPO,
};

/// Serves `files` (URL path -> body) on 127.0.0.1; anything else is a 404. Returns the base URL
/// and a counter of requests served.
fn serve(files: HashMap<String, Vec<u8>>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let hits2 = hits.clone();
    let files = Arc::new(files);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            hits2.fetch_add(1, Ordering::SeqCst);
            let files = files.clone();
            std::thread::spawn(move || handle(stream, &files));
        }
    });
    (format!("http://{addr}"), hits)
}

fn handle(mut stream: TcpStream, files: &HashMap<String, Vec<u8>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line.trim_end().is_empty() {
            break;
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let (status, body): (&str, &[u8]) = match files.get(path) {
        Some(b) if request_line.starts_with("GET ") => ("200 OK", b),
        _ => ("404 Not Found", b"Entry not found"),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

fn sha256_hex(bytes: &[u8]) -> String {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), bytes).unwrap();
    sha256_file(tmp.path()).unwrap()
}

/// Fake model files, served at the resolve URLs of `HUB_REPO`@main.
fn fake_files() -> HashMap<String, Vec<u8>> {
    HUB_FILES
        .iter()
        .map(|f| {
            (
                format!("/{HUB_REPO}/resolve/main/{f}"),
                format!("contents of {f}").into_bytes(),
            )
        })
        .collect()
}

fn source(base: &str, sha: &str) -> HubSource {
    HubSource {
        base_url: base.to_string(),
        safetensors_sha256: sha.to_string(),
        timeout: Duration::from_secs(20),
        ..HubSource::from_env()
    }
}

/// Entries of `dir` whose names start with `.fetch-` (leftover temporary folders).
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".fetch-"))
        })
        .collect()
}

#[test]
fn hub_fetch_installs_checked_files_once() {
    let files = fake_files();
    let sha = sha256_hex(&files[&format!("/{HUB_REPO}/resolve/main/model.safetensors")]);
    let (base, hits) = serve(files);
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("models").join("minilm");
    let got = fetch_model_from_hub(Some(&target), &source(&base, &sha)).unwrap();
    assert_eq!(got, target);
    for f in HUB_FILES {
        assert_eq!(
            std::fs::read_to_string(target.join(f)).unwrap(),
            format!("contents of {f}")
        );
    }
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    assert!(leftovers(&tmp.path().join("models")).is_empty());
    // Already installed and verified: nothing is downloaded again.
    fetch_model_from_hub(Some(&target), &source(&base, &sha)).unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 3);
}

#[test]
fn a_stale_copy_is_replaced() {
    let files = fake_files();
    let sha = sha256_hex(&files[&format!("/{HUB_REPO}/resolve/main/model.safetensors")]);
    let (base, _) = serve(files);
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("minilm");
    std::fs::create_dir(&target).unwrap();
    for f in HUB_FILES {
        std::fs::write(target.join(f), b"old").unwrap();
    }
    fetch_model_from_hub(Some(&target), &source(&base, &sha)).unwrap();
    assert_eq!(sha256_file(&target.join("model.safetensors")).unwrap(), sha);
    assert!(leftovers(tmp.path()).is_empty());
}

#[test]
fn wrong_checksum_is_an_error_and_installs_nothing() {
    let (base, _) = serve(fake_files());
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("minilm");
    let err = fetch_model_from_hub(Some(&target), &source(&base, &"0".repeat(64))).unwrap_err();
    assert!(matches!(err, EmbedError::Checksum { .. }), "{err}");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    assert!(!target.exists());
    assert!(leftovers(tmp.path()).is_empty());
}

#[test]
fn a_missing_file_names_the_url_and_status() {
    let mut files = fake_files();
    files.remove(&format!("/{HUB_REPO}/resolve/main/tokenizer.json"));
    let (base, _) = serve(files);
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("minilm");
    let err = fetch_model_from_hub(Some(&target), &source(&base, &"0".repeat(64))).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, EmbedError::Fetch(_)), "{msg}");
    assert!(
        msg.contains("tokenizer.json") && msg.contains("404"),
        "{msg}"
    );
    assert!(!target.exists());
}

#[test]
fn an_unreachable_hub_is_an_error() {
    // Bind then drop a listener so the port is (almost certainly) closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = tempfile::tempdir().unwrap();
    let err = fetch_model_from_hub(
        Some(&tmp.path().join("m")),
        &source(&format!("http://127.0.0.1:{port}"), &"0".repeat(64)),
    )
    .unwrap_err();
    assert!(matches!(err, EmbedError::Fetch(_)), "{err}");
    assert!(err.to_string().contains("config.json"), "{err}");
}

/// The real model files, served locally, pass the real checksum (`HubSource::from_env`'s).
#[test]
fn the_real_model_passes_the_default_checksum() {
    let Some(dir) = default_model_dir().filter(|d| d.join("model.safetensors").is_file()) else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "CI=true and the embedding model is missing (scripts/setup/embed.sh installs it)"
            );
        }
        eprintln!("SKIPPED: no model in the cache");
        return;
    };
    let files: HashMap<String, Vec<u8>> = HUB_FILES
        .iter()
        .map(|f| {
            (
                format!("/{HUB_REPO}/resolve/main/{f}"),
                std::fs::read(dir.join(f)).unwrap(),
            )
        })
        .collect();
    let (base, _) = serve(files);
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("minilm");
    let src = HubSource {
        base_url: base,
        ..HubSource::from_env()
    };
    fetch_model_from_hub(Some(&target), &src).unwrap();
    assert_eq!(
        sha256_file(&target.join("model.safetensors")).unwrap(),
        sha256_file(&dir.join("model.safetensors")).unwrap()
    );
}
