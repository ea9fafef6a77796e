//! JSON-RPC 2.0 methods of `clawhdf5 serve`: parameter parsing, dispatch to a [`MemoryBackend`], result shapes.

use clawhdf5_memory::{
    format_time, parse_time, Filter, NewMemory, Origin, Record, SearchHit, SearchMode, SearchQuery,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::{ForgetTarget, MemoryBackend, SyncRequest};
use crate::error::BackendError;

/// A JSON-RPC error: code, message, optional data.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// Error code (JSON-RPC reserved or ours, see below).
    pub code: i64,
    /// Human-readable message.
    pub message: String,
}

/// Parse error.
pub const PARSE_ERROR: i64 = -32700;
/// Not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// Unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Bad parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// The store failed.
pub const STORE_ERROR: i64 = -32000;
/// The request ran past its deadline.
pub const DEADLINE_EXCEEDED: i64 = -32001;
/// The thing asked for does not exist.
pub const NOT_FOUND: i64 = -32002;

impl RpcError {
    /// An error with a code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// The JSON error object.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

impl From<BackendError> for RpcError {
    fn from(e: BackendError) -> Self {
        use clawhdf5_memory::MemoryError;
        let code = match &e {
            BackendError::Invalid(_) => INVALID_PARAMS,
            BackendError::NotFound(_) => NOT_FOUND,
            BackendError::Memory(MemoryError::InvalidInput(_)) => INVALID_PARAMS,
            BackendError::Memory(MemoryError::NoSuchRecord(_)) => NOT_FOUND,
            _ => STORE_ERROR,
        };
        RpcError::new(code, e.to_string())
    }
}

fn params<T: for<'de> Deserialize<'de>>(p: Value) -> Result<T, RpcError> {
    let p = if p.is_null() { json!({}) } else { p };
    serde_json::from_value(p)
        .map_err(|e| RpcError::new(INVALID_PARAMS, format!("invalid params: {e}")))
}

fn default_agent() -> String {
    "main".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveParams {
    #[serde(default = "default_agent")]
    agent: String,
    text: String,
    source: Option<String>,
    session: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    path: Option<String>,
    start_line: Option<u32>,
    end_line: Option<u32>,
    event_time: Option<Value>,
    importance: Option<f32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchParams {
    #[serde(default = "default_agent")]
    agent: String,
    query: String,
    k: Option<usize>,
    min_score: Option<f32>,
    session: Option<String>,
    source: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    mode: Option<String>,
    time_from: Option<Value>,
    time_to: Option<Value>,
    /// The query is a user's turn, for automatic recall: the decision gate may skip it.
    #[serde(default)]
    turn: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetParams {
    #[serde(default = "default_agent")]
    agent: String,
    id: Option<u64>,
    path: Option<String>,
    from: Option<u32>,
    lines: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetParams {
    #[serde(default = "default_agent")]
    agent: String,
    id: Option<u64>,
    query: Option<String>,
    min_score: Option<f32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentParams {
    #[serde(default = "default_agent")]
    agent: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SyncParams {
    #[serde(default = "default_agent")]
    agent: String,
    workspace: Option<String>,
    #[serde(default)]
    extra_paths: Vec<String>,
    #[serde(default)]
    force: bool,
}

fn time_param(name: &str, v: &Option<Value>) -> Result<Option<i64>, RpcError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!("{name} must be an integer (ms) or a date string"),
            )
        }),
        Some(Value::String(s)) => parse_time(s).map(Some).ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!("{name} {s:?} is not a date or time"),
            )
        }),
        Some(_) => Err(RpcError::new(
            INVALID_PARAMS,
            format!("{name} must be a number or a string"),
        )),
    }
}

/// A record as JSON (no embedding).
pub fn record_json(r: &Record) -> Value {
    json!({
        "id": r.id,
        "text": r.text,
        "source": r.source.as_str(),
        "agent": r.agent,
        "session": r.session,
        "path": r.origin.as_ref().map(|o| o.path.clone()),
        "start_line": r.origin.as_ref().map(|o| o.start_line),
        "end_line": r.origin.as_ref().map(|o| o.end_line),
        "tags": r.tags,
        "created_at": format_time(r.created_at),
        "event_time": r.event_time.map(format_time),
        "importance": r.importance,
        "superseded_by": r.superseded_by,
    })
}

/// A search hit as JSON: the record plus its scores.
pub fn hit_json(h: &SearchHit) -> Value {
    let mut v = record_json(&h.record);
    if let Value::Object(m) = &mut v {
        m.insert("score".into(), json!(h.score));
        m.insert("keyword_score".into(), json!(h.keyword_score));
        m.insert("vector_score".into(), json!(h.vector_score));
    }
    v
}

/// Synthetic path prefix for records that did not come from a workspace file.
pub const RECORD_PATH_PREFIX: &str = "clawhdf5/";

/// Run one method. `shutdown` is handled by the server loop, not here.
pub async fn dispatch(
    backend: &dyn MemoryBackend,
    method: &str,
    p: Value,
) -> Result<Value, RpcError> {
    match method {
        "ping" => Ok(json!({"ok": true, "version": env!("CARGO_PKG_VERSION")})),
        "save" => {
            let p: SaveParams = params(p)?;
            let origin = match (p.path, p.start_line, p.end_line) {
                (Some(path), s, e) => Some(Origin {
                    path,
                    start_line: s.unwrap_or(1),
                    end_line: e.or(s).unwrap_or(1),
                }),
                (None, None, None) => None,
                _ => {
                    return Err(RpcError::new(
                        INVALID_PARAMS,
                        "start_line/end_line need a path",
                    ))
                }
            };
            let m = NewMemory {
                text: p.text,
                source: p.source,
                agent: Some(p.agent.clone()),
                session: p.session,
                origin,
                tags: p.tags,
                event_time: time_param("event_time", &p.event_time)?,
                importance: p.importance,
                embedding: None,
            };
            let out = backend.save(&p.agent, m).await?;
            Ok(json!({"id": out.id, "deduplicated": out.deduplicated}))
        }
        "search" => {
            let p: SearchParams = params(p)?;
            if p.k == Some(0) {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "k must be at least 1 (got 0)",
                ));
            }
            // A search returns at most 1,000 results (README).
            let mut q = SearchQuery::new(p.query, p.k.unwrap_or(6).min(1000));
            if let Some(m) = &p.mode {
                q.mode = SearchMode::parse(m)
                    .ok_or_else(|| RpcError::new(INVALID_PARAMS, format!("unknown mode {m:?}")))?;
            }
            q.min_score = p.min_score;
            q.filter = Filter {
                session: p.session,
                sources: p.source.into_iter().collect(),
                tags: p.tags,
                time_from: time_param("time_from", &p.time_from)?,
                time_to: time_param("time_to", &p.time_to)?,
                ..Filter::default()
            };
            if let (Some(from), Some(to)) = (q.filter.time_from, q.filter.time_to) {
                if from > to {
                    return Err(RpcError::new(
                        INVALID_PARAMS,
                        format!("time_from ({from} ms) is after time_to ({to} ms)"),
                    ));
                }
            }
            let mode = q.mode;
            let hits = if p.turn {
                match backend.recall(&p.agent, q).await? {
                    Some(hits) => hits,
                    // Nothing to look up in this turn ("ok", "thanks!"): the store was not searched.
                    None => {
                        return Ok(json!({"results": [], "mode": mode.as_str(), "skipped": true}))
                    }
                }
            } else {
                backend.search(&p.agent, q).await?
            };
            let vector_used = hits.iter().any(|h| h.vector_score.is_some());
            let mode_name = if mode == SearchMode::Hybrid && !vector_used {
                "keyword"
            } else {
                mode.as_str()
            };
            Ok(json!({
                "results": hits.iter().map(hit_json).collect::<Vec<_>>(),
                "mode": mode_name,
            }))
        }
        "get" => {
            let p: GetParams = params(p)?;
            let synthetic = p
                .path
                .as_deref()
                .and_then(|s| s.strip_prefix(RECORD_PATH_PREFIX))
                .map(|id| {
                    id.parse::<u64>().map_err(|_| {
                        RpcError::new(INVALID_PARAMS, format!("bad record path {:?}", p.path))
                    })
                })
                .transpose()?;
            match (p.id.or(synthetic), p.path) {
                (Some(id), _) => {
                    let r = backend.get(&p.agent, id).await?;
                    Ok(json!({"record": record_json(&r)}))
                }
                (None, Some(path)) => {
                    let s = backend.read_file(&p.agent, &path, p.from, p.lines).await?;
                    Ok(serde_json::to_value(s)
                        .map_err(|e| RpcError::new(STORE_ERROR, e.to_string()))?)
                }
                (None, None) => Err(RpcError::new(INVALID_PARAMS, "get needs an id or a path")),
            }
        }
        "forget" => {
            let p: ForgetParams = params(p)?;
            let target = match (p.id, p.query) {
                (Some(id), None) => ForgetTarget::Id(id),
                (None, Some(query)) => ForgetTarget::Query {
                    query,
                    min_score: p.min_score.unwrap_or(0.5),
                    limit: 20,
                },
                _ => {
                    return Err(RpcError::new(
                        INVALID_PARAMS,
                        "forget needs exactly one of id or query",
                    ))
                }
            };
            let ids = backend.forget(&p.agent, target).await?;
            Ok(json!({"forgotten": ids}))
        }
        "status" => {
            let p: AgentParams = params(p)?;
            let s = backend.status(&p.agent).await?;
            let mut v =
                serde_json::to_value(&s).map_err(|e| RpcError::new(STORE_ERROR, e.to_string()))?;
            if let Value::Object(m) = &mut v {
                m.insert(
                    "embedding".into(),
                    json!({"available": s.vector, "model": s.embedding_model}),
                );
            }
            Ok(v)
        }
        "sync" => {
            let p: SyncParams = params(p)?;
            let req = SyncRequest {
                workspace: p.workspace.map(Into::into),
                extra_paths: p.extra_paths,
                force: p.force,
            };
            let r = backend.sync(&p.agent, req).await?;
            Ok(serde_json::to_value(r).map_err(|e| RpcError::new(STORE_ERROR, e.to_string()))?)
        }
        other => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("unknown method {other:?}"),
        )),
    }
}
