//! RemoteEmbedder against a local HTTP server that speaks the OpenAI embeddings wire format.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clawhdf5_embed::{EmbedError, Embedder, RemoteConfig, RemoteEmbedder};

/// What the server does with one request.
#[derive(Clone, Copy)]
enum Reply {
    /// Answer 200 with one vector per input: `[len(text), index, 1, 1, ...]`.
    Ok,
    /// Answer with this status and an error body.
    Status(u16),
    /// Sleep this long before answering 200.
    Slow(Duration),
    /// Answer 200 with vectors one value too short.
    WrongDim,
}

struct Seen {
    body: serde_json::Value,
    auth: Option<String>,
}

/// Serves `script` in order (then `Ok` forever) on 127.0.0.1 at a random port.
fn serve(script: Vec<Reply>, dim: usize) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        let mut step = 0;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let reply = script.get(step).copied().unwrap_or(Reply::Ok);
            step += 1;
            let seen = seen2.clone();
            std::thread::spawn(move || handle(stream, reply, dim, &seen));
        }
    });
    (format!("http://{addr}"), seen)
}

fn handle(stream: TcpStream, reply: Reply, dim: usize, seen: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    assert!(
        request_line.starts_with("POST /v1/embeddings "),
        "{request_line}"
    );
    let mut len = 0;
    let mut auth = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => len = value.trim().parse().unwrap(),
            "authorization" => auth = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let inputs: Vec<String> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    seen.lock().unwrap().push(Seen { body, auth });
    let (status, payload) = match reply {
        Reply::Status(s) => (s, r#"{"error":{"message":"nope"}}"#.to_string()),
        Reply::Slow(d) => {
            std::thread::sleep(d);
            (200, vectors(&inputs, dim))
        }
        Reply::Ok => (200, vectors(&inputs, dim)),
        Reply::WrongDim => (200, vectors(&inputs, dim - 1)),
    };
    let mut out = stream;
    let extra = if status == 429 {
        "Retry-After: 0\r\n"
    } else {
        ""
    };
    let _ = write!(
        out,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
}

/// A response body listing the vectors in reverse order (clients must sort by `index`).
fn vectors(inputs: &[String], dim: usize) -> String {
    let data: Vec<serde_json::Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| {
            let mut v = vec![1.0f32; dim];
            v[0] = t.len() as f32;
            v[1] = i as f32;
            serde_json::json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    serde_json::json!({"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}})
        .to_string()
}

fn config(base: &str) -> RemoteConfig {
    let mut cfg = RemoteConfig::new(base, "text-embedding-test", 4);
    cfg.api_key_env = "CLAWHDF5_EMBED_TEST_KEY_UNSET".into();
    cfg.initial_backoff = Duration::from_millis(10);
    cfg.timeout = Duration::from_secs(5);
    cfg
}

#[test]
fn batches_keep_order_and_send_the_wire_format() {
    let (base, seen) = serve(vec![], 4);
    let mut cfg = config(&base);
    cfg.batch_size = 2;
    cfg.send_dimensions = true;
    cfg.api_key_env = "CLAWHDF5_EMBED_TEST_KEY".into();
    std::env::set_var("CLAWHDF5_EMBED_TEST_KEY", "sk-test");
    let e = RemoteEmbedder::new(cfg).unwrap();
    assert_eq!(e.model_id(), "text-embedding-test@4");
    assert_eq!(e.dim(), 4);
    let v = e.embed_batch(&["a", "bb", "ccc", "dddd", "eeeee"]).unwrap();
    let firsts: Vec<f32> = v.iter().map(|x| x[0]).collect();
    assert_eq!(firsts, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].body["model"], "text-embedding-test");
    assert_eq!(seen[0].body["dimensions"], 4);
    assert_eq!(seen[0].body["input"], serde_json::json!(["a", "bb"]));
    assert_eq!(seen[0].auth.as_deref(), Some("Bearer sk-test"));
    assert!(e.embed_batch(&[]).unwrap().is_empty());
}

#[test]
fn retries_429_and_500_then_succeeds() {
    let (base, seen) = serve(
        vec![Reply::Status(429), Reply::Status(500), Reply::Status(503)],
        4,
    );
    let e = RemoteEmbedder::new(config(&base)).unwrap();
    let v = e.embed_one("hello").unwrap();
    assert_eq!(v, vec![5.0, 0.0, 1.0, 1.0]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4);
    assert!(seen[0].auth.is_none());
}

#[test]
fn gives_up_after_max_retries() {
    let (base, seen) = serve(vec![Reply::Status(500); 10], 4);
    let mut cfg = config(&base);
    cfg.max_retries = 2;
    let e = RemoteEmbedder::new(cfg).unwrap();
    let err = e.embed_one("x").unwrap_err();
    assert!(
        matches!(err, EmbedError::RemoteStatus { status: 500, .. }),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[test]
fn client_errors_are_not_retried() {
    let (base, seen) = serve(vec![Reply::Status(400), Reply::Status(400)], 4);
    let e = RemoteEmbedder::new(config(&base)).unwrap();
    let err = e.embed_one("x").unwrap_err();
    assert!(
        matches!(err, EmbedError::RemoteStatus { status: 400, .. }),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn a_slow_server_times_out() {
    let (base, _seen) = serve(vec![Reply::Slow(Duration::from_secs(3)); 3], 4);
    let mut cfg = config(&base);
    cfg.timeout = Duration::from_millis(300);
    cfg.max_retries = 1;
    let e = RemoteEmbedder::new(cfg).unwrap();
    let start = Instant::now();
    let err = e.embed_one("x").unwrap_err();
    assert!(matches!(err, EmbedError::RemoteTransport(_)), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn wrong_dimension_is_an_error() {
    let (base, _seen) = serve(vec![Reply::WrongDim], 4);
    let e = RemoteEmbedder::new(config(&base)).unwrap();
    let err = e.embed_one("x").unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::DimensionMismatch {
                expected: 4,
                got: 3
            }
        ),
        "{err}"
    );
}

#[test]
fn bad_settings_are_rejected() {
    assert!(RemoteEmbedder::new(RemoteConfig::new("ftp://x", "m", 4)).is_err());
    assert!(RemoteEmbedder::new(RemoteConfig::new("http://x", "m", 0)).is_err());
}

#[test]
fn connection_refused_is_a_transport_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = config(&format!("http://127.0.0.1:{port}"));
    cfg.max_retries = 1;
    let e = RemoteEmbedder::new(cfg).unwrap();
    assert!(matches!(
        e.embed_one("x"),
        Err(EmbedError::RemoteTransport(_))
    ));
}
