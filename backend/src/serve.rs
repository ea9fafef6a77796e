//! `clawhdf5 serve`: JSON-RPC 2.0 over stdio, one JSON object (or batch array) per line, requests handled
//! concurrently, each under a deadline (its method's own, else the default one); `shutdown` or end of input
//! checkpoints every store and exits.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::backend::MemoryBackend;
use crate::rpc::{self, RpcError};

/// Something that answers JSON-RPC methods over a line-delimited stream.
#[async_trait::async_trait]
pub trait RpcHandler: Send + Sync + 'static {
    /// Answer one method call.
    async fn handle(&self, method: &str, params: Value) -> Result<Value, RpcError>;
    /// Methods that end the session after they are answered (with every earlier request finished first).
    fn is_shutdown(&self, method: &str) -> bool {
        method == "shutdown"
    }
    /// Called once when the session ends (shutdown method or end of input).
    async fn close(&self) -> Result<(), RpcError>;
}

/// The clawhdf5 JSON-RPC methods (see `rpc`) over a backend.
pub struct MemoryRpc(pub Arc<dyn MemoryBackend>);

#[async_trait::async_trait]
impl RpcHandler for MemoryRpc {
    async fn handle(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        rpc::dispatch(self.0.as_ref(), method, params).await
    }

    async fn close(&self) -> Result<(), RpcError> {
        self.0.close().await.map_err(RpcError::from)
    }
}

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Deadline of a request whose method has none of its own in `method_deadlines`.
    pub deadline: Duration,
    /// Per-method deadlines overriding `deadline` (by default `sync`, which indexes a whole workspace and may take
    /// far longer than a search, gets [`DEFAULT_SYNC_DEADLINE`]).
    pub method_deadlines: HashMap<String, Duration>,
    /// Longest accepted request line, in bytes.
    pub max_line: usize,
    /// Requests in flight at once; further input waits (backpressure), so a flood of pipelined requests
    /// cannot starve the threads that write responses.
    pub max_in_flight: usize,
}

/// Default deadline of `sync`.
pub const DEFAULT_SYNC_DEADLINE: Duration = Duration::from_secs(120);

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            deadline: Duration::from_secs(10),
            method_deadlines: HashMap::from([("sync".to_string(), DEFAULT_SYNC_DEADLINE)]),
            max_line: 8 << 20,
            max_in_flight: 32,
        }
    }
}

impl ServeOptions {
    /// The deadline a request for `method` runs under.
    pub fn deadline_for(&self, method: &str) -> Duration {
        self.method_deadlines
            .get(method)
            .copied()
            .unwrap_or(self.deadline)
    }
}

fn response(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}),
    }
}

/// One request, checked against JSON-RPC 2.0's shape.
struct Call {
    id: Value,
    /// A request without an id: it gets no response.
    notification: bool,
    method: String,
    params: Value,
}

/// Check one request; `Err` holds the error response for a malformed one.
fn parse_call(req: &Value) -> Result<Call, Value> {
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let refuse = |id: Value, why: &str| response(id, Err(RpcError::new(rpc::INVALID_REQUEST, why)));
    if !req.is_object() {
        return Err(refuse(Value::Null, "a request must be a JSON object"));
    }
    let Some(method) = req.get("method").and_then(Value::as_str) else {
        return Err(refuse(id, "missing method"));
    };
    if req.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refuse(id, "jsonrpc must be \"2.0\""));
    }
    Ok(Call {
        notification: req.get("id").is_none(),
        id,
        method: method.to_string(),
        params: req.get("params").cloned().unwrap_or(Value::Null),
    })
}

/// Run `call` under `deadline`: its response, or `None` for a notification.
async fn answer(handler: Arc<dyn RpcHandler>, deadline: Duration, call: Call) -> Option<Value> {
    let result =
        match tokio::time::timeout(deadline, handler.handle(&call.method, call.params)).await {
            Ok(r) => r,
            Err(_) => Err(RpcError::new(
                rpc::DEADLINE_EXCEEDED,
                format!(
                    "{} did not finish within {} ms",
                    call.method,
                    deadline.as_millis()
                ),
            )),
        };
    (!call.notification).then(|| response(call.id, result))
}

/// Answer a batch: its calls run concurrently, each under its own deadline and each taking one of the
/// in-flight `slots` like a request of its own; the responses (none for notifications) come back in the batch's
/// order. A shutdown cannot be part of a batch.
async fn answer_batch(
    handler: Arc<dyn RpcHandler>,
    opts: &ServeOptions,
    slots: &Arc<tokio::sync::Semaphore>,
    items: Vec<Value>,
) -> Vec<Value> {
    let mut answers: Vec<Option<Value>> = vec![None; items.len()];
    let mut running = tokio::task::JoinSet::new();
    for (i, item) in items.iter().enumerate() {
        match parse_call(item) {
            Err(refusal) => answers[i] = Some(refusal),
            Ok(call) if handler.is_shutdown(&call.method) => {
                if !call.notification {
                    answers[i] = Some(response(
                        call.id,
                        Err(RpcError::new(
                            rpc::INVALID_REQUEST,
                            format!("{} cannot be part of a batch", call.method),
                        )),
                    ));
                }
            }
            Ok(call) => {
                let Ok(permit) = Arc::clone(slots).acquire_owned().await else {
                    break;
                };
                let deadline = opts.deadline_for(&call.method);
                let handler = Arc::clone(&handler);
                running.spawn(async move {
                    let a = answer(handler, deadline, call).await;
                    drop(permit);
                    (i, a)
                });
            }
        }
    }
    while let Some(done) = running.join_next().await {
        if let Ok((i, a)) = done {
            answers[i] = a;
        }
    }
    answers.into_iter().flatten().collect()
}

/// Serve the clawhdf5 methods read from `input`, writing responses to `output`, until `shutdown` or end of
/// input. Then every open store is checkpointed.
pub async fn serve<R, W>(
    backend: Arc<dyn MemoryBackend>,
    input: R,
    output: W,
    opts: ServeOptions,
) -> Result<(), std::io::Error>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(Arc::new(MemoryRpc(backend)), input, output, opts).await
}

/// Serve any [`RpcHandler`] over a line-delimited JSON-RPC 2.0 stream; requests run concurrently, each under
/// the deadline.
pub async fn serve_with<R, W>(
    handler: Arc<dyn RpcHandler>,
    input: R,
    output: W,
    opts: ServeOptions,
) -> Result<(), std::io::Error>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut out = output;
        while let Some(v) = rx.recv().await {
            let mut line = v.to_string();
            line.push('\n');
            if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(input);
    let mut buf = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(opts.max_in_flight.max(1)));
    loop {
        buf.clear();
        let n = (&mut lines)
            .take(opts.max_line as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await?;
        if n == 0 {
            break;
        }
        if buf.len() > opts.max_line && !buf.ends_with(b"\n") {
            // Skip the rest of the oversized line a buffer at a time, keeping none of it.
            loop {
                let chunk = lines.fill_buf().await?;
                if chunk.is_empty() {
                    break;
                }
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        lines.consume(i + 1);
                        break;
                    }
                    None => {
                        let n = chunk.len();
                        lines.consume(n);
                    }
                }
            }
            let _ = tx.send(response(
                Value::Null,
                Err(RpcError::new(
                    rpc::INVALID_REQUEST,
                    format!("request longer than {} bytes", opts.max_line),
                )),
            ));
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let req: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                let _ = tx.send(response(
                    Value::Null,
                    Err(RpcError::new(rpc::PARSE_ERROR, format!("parse error: {e}"))),
                ));
                continue;
            }
        };
        let call = match req {
            Value::Array(items) => {
                if items.is_empty() {
                    let _ = tx.send(response(
                        Value::Null,
                        Err(RpcError::new(rpc::INVALID_REQUEST, "empty batch")),
                    ));
                    continue;
                }
                let handler = Arc::clone(&handler);
                let tx = tx.clone();
                let opts = opts.clone();
                let slots = Arc::clone(&slots);
                tasks.spawn(async move {
                    let answers = answer_batch(handler, &opts, &slots, items).await;
                    // A batch of notifications only is answered with nothing at all.
                    if !answers.is_empty() {
                        let _ = tx.send(Value::Array(answers));
                    }
                });
                while tasks.try_join_next().is_some() {}
                continue;
            }
            req => match parse_call(&req) {
                Ok(call) => call,
                Err(refusal) => {
                    let _ = tx.send(refusal);
                    continue;
                }
            },
        };
        if handler.is_shutdown(&call.method) {
            while tasks.join_next().await.is_some() {}
            let result = handler.close().await.map(|_| json!({"ok": true}));
            if !call.notification {
                let _ = tx.send(response(call.id, result));
            }
            drop(tx);
            let _ = writer.await;
            return Ok(());
        }
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        let handler = Arc::clone(&handler);
        let tx = tx.clone();
        let deadline = opts.deadline_for(&call.method);
        tasks.spawn(async move {
            if let Some(r) = answer(handler, deadline, call).await {
                let _ = tx.send(r);
            }
            drop(permit);
        });
        // Reap finished tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let closed = handler.close().await;
    drop(tx);
    let _ = writer.await;
    closed.map_err(|e| std::io::Error::other(e.message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;

    /// Answers every method after sleeping `delay`.
    struct Slow {
        delay: Duration,
    }

    #[async_trait::async_trait]
    impl RpcHandler for Slow {
        async fn handle(&self, method: &str, _params: Value) -> Result<Value, RpcError> {
            tokio::time::sleep(self.delay).await;
            Ok(json!({ "method": method }))
        }

        async fn close(&self) -> Result<(), RpcError> {
            Ok(())
        }
    }

    async fn run(opts: ServeOptions, delay: Duration, methods: &[&str]) -> HashMap<String, Value> {
        let (mut client, server_io) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server_io);
        let server = tokio::spawn(serve_with(
            Arc::new(Slow { delay }),
            server_in,
            server_out,
            opts,
        ));
        let mut input = String::new();
        for (i, m) in methods.iter().enumerate() {
            input.push_str(
                &json!({"jsonrpc": "2.0", "id": i, "method": m, "params": {}}).to_string(),
            );
            input.push('\n');
        }
        client.write_all(input.as_bytes()).await.unwrap();
        let (read, mut write) = tokio::io::split(client);
        let mut lines = BufReader::new(read).lines();
        let mut out = HashMap::new();
        for _ in methods {
            let line = lines.next_line().await.unwrap().unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            let i = v["id"].as_u64().unwrap() as usize;
            out.insert(methods[i].to_string(), v);
        }
        write.shutdown().await.unwrap();
        drop(write);
        drop(lines);
        server.await.unwrap().unwrap();
        out
    }

    #[tokio::test]
    async fn a_batch_is_answered_with_an_array_in_its_order() {
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server_io);
        let server = tokio::spawn(serve_with(
            Arc::new(Slow {
                delay: Duration::from_millis(1),
            }),
            server_in,
            server_out,
            ServeOptions::default(),
        ));
        let (read, mut write) = tokio::io::split(client);
        let batch = json!([
            {"jsonrpc": "2.0", "id": "a", "method": "status"},
            {"jsonrpc": "2.0", "method": "note"},
            {"id": "c", "method": "status"},
            7,
            {"jsonrpc": "2.0", "id": "e", "method": "shutdown"},
            {"jsonrpc": "2.0", "id": "f", "method": "search"}
        ]);
        let input = format!("{batch}\n[]\n[{{\"jsonrpc\":\"2.0\",\"method\":\"note\"}}]\n\"x\"\n");
        write.write_all(input.as_bytes()).await.unwrap();
        let mut lines = BufReader::new(read).lines();
        let mut got = Vec::new();
        for _ in 0..3 {
            let line = lines.next_line().await.unwrap().unwrap();
            got.push(serde_json::from_str::<Value>(&line).unwrap());
        }
        write.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
        // The batch's answer (the notification gets none), the empty batch's error and the non-object's error;
        // the batch of one notification is answered with nothing.
        let batch = got
            .iter()
            .find(|v| v.is_array())
            .and_then(Value::as_array)
            .expect("an array answers the batch");
        let ids: Vec<&Value> = batch.iter().map(|r| &r["id"]).collect();
        assert_eq!(
            ids,
            [
                &json!("a"),
                &json!("c"),
                &Value::Null,
                &json!("e"),
                &json!("f")
            ]
        );
        assert_eq!(batch[0]["result"]["method"], "status");
        assert_eq!(batch[1]["error"]["code"], rpc::INVALID_REQUEST);
        assert_eq!(batch[2]["error"]["code"], rpc::INVALID_REQUEST);
        assert!(batch[3]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("batch")));
        assert_eq!(batch[4]["result"]["method"], "search");
        let singles: Vec<&Value> = got.iter().filter(|v| !v.is_array()).collect();
        assert_eq!(singles.len(), 2);
        for e in singles {
            assert_eq!(e["error"]["code"], rpc::INVALID_REQUEST, "{e}");
        }
    }

    #[tokio::test]
    async fn a_batch_larger_than_the_in_flight_limit_is_answered_whole() {
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server_io);
        let opts = ServeOptions {
            max_in_flight: 2,
            ..ServeOptions::default()
        };
        let server = tokio::spawn(serve_with(
            Arc::new(Slow {
                delay: Duration::from_millis(5),
            }),
            server_in,
            server_out,
            opts,
        ));
        let (read, mut write) = tokio::io::split(client);
        let calls: Vec<Value> = (0..10)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "status"}))
            .collect();
        let line = format!("{}\n", Value::Array(calls));
        write.write_all(line.as_bytes()).await.unwrap();
        let mut lines = BufReader::new(read).lines();
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        let ids: Vec<u64> = answer
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        assert_eq!(ids, (0..10).collect::<Vec<u64>>());
        write.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn an_oversized_request_is_refused_and_the_next_one_answered() {
        let opts = ServeOptions {
            max_line: 1024,
            ..ServeOptions::default()
        };
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server_io);
        let server = tokio::spawn(serve_with(
            Arc::new(Slow {
                delay: Duration::ZERO,
            }),
            server_in,
            server_out,
            opts,
        ));
        let (read, mut write) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            // 3 MB of one request (far past the duplex buffer and the limit), then a good one.
            let huge = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"{}\"}}\n",
                "a".repeat(3 << 20)
            );
            write.write_all(huge.as_bytes()).await.unwrap();
            let ok = json!({"jsonrpc": "2.0", "id": 2, "method": "status", "params": {}});
            write.write_all(format!("{ok}\n").as_bytes()).await.unwrap();
            write.shutdown().await.unwrap();
        });
        let mut lines = BufReader::new(read).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(first["error"]["code"], rpc::INVALID_REQUEST, "{first}");
        assert!(first["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 1024 bytes"));
        let second: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(second["id"], 2);
        assert_eq!(second["result"]["method"], "status");
        writer.await.unwrap();
        drop(lines);
        server.await.unwrap().unwrap();
    }

    #[test]
    fn sync_has_its_own_longer_deadline_by_default() {
        let opts = ServeOptions::default();
        assert_eq!(opts.deadline_for("search"), Duration::from_secs(10));
        assert_eq!(opts.deadline_for("sync"), DEFAULT_SYNC_DEADLINE);
    }

    #[tokio::test]
    async fn a_slow_sync_finishes_under_its_deadline_while_a_slow_search_times_out() {
        let opts = ServeOptions {
            deadline: Duration::from_millis(50),
            method_deadlines: HashMap::from([("sync".to_string(), Duration::from_secs(20))]),
            ..ServeOptions::default()
        };
        let out = run(opts, Duration::from_millis(400), &["search", "sync"]).await;
        let search = &out["search"];
        assert_eq!(search["error"]["code"], rpc::DEADLINE_EXCEEDED, "{search}");
        assert!(
            search["error"]["message"]
                .as_str()
                .unwrap()
                .contains("search did not finish within 50 ms"),
            "{search}"
        );
        let sync = &out["sync"];
        assert_eq!(sync["result"]["method"], "sync", "{sync}");
    }

    #[tokio::test]
    async fn a_sync_past_its_own_deadline_is_cut_off() {
        let opts = ServeOptions {
            deadline: Duration::from_secs(20),
            method_deadlines: HashMap::from([("sync".to_string(), Duration::from_millis(50))]),
            ..ServeOptions::default()
        };
        let out = run(opts, Duration::from_millis(400), &["sync", "status"]).await;
        assert_eq!(out["sync"]["error"]["code"], rpc::DEADLINE_EXCEEDED);
        assert!(out["sync"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sync did not finish within 50 ms"));
        assert_eq!(out["status"]["result"]["method"], "status");
    }
}
