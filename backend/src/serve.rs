//! `clawhdf5 serve`: JSON-RPC 2.0 over stdio, one JSON object per line, requests handled concurrently, each
//! under a deadline; `shutdown` or end of input checkpoints every store and exits.

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
    /// Per-request deadline.
    pub deadline: Duration,
    /// Longest accepted request line, in bytes.
    pub max_line: usize,
    /// Requests in flight at once; further input waits (backpressure), so a flood of pipelined requests
    /// cannot starve the threads that write responses.
    pub max_in_flight: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            deadline: Duration::from_secs(10),
            max_line: 8 << 20,
            max_in_flight: 32,
        }
    }
}

fn response(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}),
    }
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
            // Skip the rest of the oversized line.
            let mut sink = Vec::new();
            lines.read_until(b'\n', &mut sink).await?;
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
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let Some(method) = req
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            let _ = tx.send(response(
                id,
                Err(RpcError::new(rpc::INVALID_REQUEST, "missing method")),
            ));
            continue;
        };
        if req.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            let _ = tx.send(response(
                id,
                Err(RpcError::new(
                    rpc::INVALID_REQUEST,
                    "jsonrpc must be \"2.0\"",
                )),
            ));
            continue;
        }
        let is_notification = req.get("id").is_none();
        if handler.is_shutdown(&method) {
            while tasks.join_next().await.is_some() {}
            let result = handler.close().await.map(|_| json!({"ok": true}));
            if !is_notification {
                let _ = tx.send(response(id, result));
            }
            drop(tx);
            let _ = writer.await;
            return Ok(());
        }
        let params = req.get("params").cloned().unwrap_or(Value::Null);
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        let handler = Arc::clone(&handler);
        let tx = tx.clone();
        let deadline = opts.deadline;
        tasks.spawn(async move {
            let fut = handler.handle(&method, params);
            let result = match tokio::time::timeout(deadline, fut).await {
                Ok(r) => r,
                Err(_) => Err(RpcError::new(
                    rpc::DEADLINE_EXCEEDED,
                    format!("{method} did not finish within {} ms", deadline.as_millis()),
                )),
            };
            if !is_notification {
                let _ = tx.send(response(id, result));
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
