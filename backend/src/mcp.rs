//! `clawhdf5 mcp`: a Model Context Protocol server over stdio with the tools `memory_search`, `memory_get`,
//! `memory_store` and `memory_forget`; input schemas are generated from the Rust types below.

use std::sync::Arc;

use clawhdf5_memory::{parse_time, Filter, NewMemory, SearchQuery};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::{ForgetTarget, MemoryBackend};
use crate::rpc::{
    hit_json, record_json, RpcError, INVALID_PARAMS, METHOD_NOT_FOUND, RECORD_PATH_PREFIX,
};
use crate::serve::RpcHandler;

/// Protocol revisions this server speaks; it answers with the client's when it is one of these.
const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Input of `memory_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemorySearchInput {
    /// What to look for, in natural language.
    pub query: String,
    /// Most results to return (default 6).
    #[schemars(range(min = 1, max = 100))]
    pub max_results: Option<u32>,
    /// Drop results scoring below this (0..1).
    pub min_score: Option<f32>,
    /// Only memories from this session.
    pub session: Option<String>,
    /// Only memories from this source (conversation, user_correction, document, tool, system, ...).
    pub source: Option<String>,
    /// Only memories carrying all of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only memories that happened at or after this time (RFC 3339 or YYYY-MM-DD; when they were saved if no
    /// event time was given).
    pub time_from: Option<String>,
    /// Only memories that happened before this time (RFC 3339 or YYYY-MM-DD).
    pub time_to: Option<String>,
    /// Agent whose memory to search (default "main").
    pub agent: Option<String>,
}

/// `memory_search`'s filter from its input, or what is wrong with it (the result count included).
fn search_filter(i: &mut MemorySearchInput) -> Result<Filter, String> {
    let time = |name: &str, v: &Option<String>| -> Result<Option<i64>, String> {
        v.as_deref()
            .map(|s| parse_time(s).ok_or_else(|| format!("{name} {s:?} is not a date or time")))
            .transpose()
    };
    if let Some(n) = i.max_results.filter(|n| !(1..=100).contains(n)) {
        return Err(format!("maxResults must be between 1 and 100 (got {n})"));
    }
    let (from, to) = (time("timeFrom", &i.time_from)?, time("timeTo", &i.time_to)?);
    if let (Some(f), Some(t)) = (from, to) {
        if f > t {
            return Err(format!("timeFrom ({f} ms) is after timeTo ({t} ms)"));
        }
    }
    Ok(Filter {
        session: i.session.take(),
        sources: i.source.take().into_iter().collect(),
        tags: std::mem::take(&mut i.tags),
        time_from: from,
        time_to: to,
        ..Filter::default()
    })
}

/// Input of `memory_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemoryGetInput {
    /// Workspace-relative file path (as cited by memory_search), or `clawhdf5/<id>` for a stored memory.
    pub path: Option<String>,
    /// Memory id (instead of a path).
    pub id: Option<u64>,
    /// First line to read (1-based).
    #[schemars(range(min = 1))]
    pub from: Option<u32>,
    /// Number of lines to read.
    #[schemars(range(min = 1))]
    pub lines: Option<u32>,
    /// Agent (default "main").
    pub agent: Option<String>,
}

/// Input of `memory_store`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemoryStoreInput {
    /// The fact or note to remember.
    pub text: String,
    /// Where it came from: conversation, user_correction, document, tool, system.
    pub source: Option<String>,
    /// Session id.
    pub session: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Agent (default "main").
    pub agent: Option<String>,
}

/// Input of `memory_forget`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemoryForgetInput {
    /// Id of the memory to forget.
    pub id: Option<u64>,
    /// Forget what this query finds (score ≥ minScore) instead.
    pub query: Option<String>,
    /// With query: least score to forget (default 0.5).
    pub min_score: Option<f32>,
    /// Agent (default "main").
    pub agent: Option<String>,
}

fn schema_of<T: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T))
        .unwrap_or_else(|_| json!({"type": "object"}));
    if let Value::Object(m) = &mut v {
        m.remove("$schema");
        m.remove("title");
    }
    v
}

/// The tool list, as `tools/list` returns it.
pub fn tools() -> Value {
    json!([
        {"name": "memory_search", "description": "Search long-term memory (keyword + semantic). Returns ranked memories with citations.", "inputSchema": schema_of::<MemorySearchInput>()},
        {"name": "memory_get", "description": "Read a cited workspace file's lines, or one stored memory by id.", "inputSchema": schema_of::<MemoryGetInput>()},
        {"name": "memory_store", "description": "Save a fact or note to long-term memory.", "inputSchema": schema_of::<MemoryStoreInput>()},
        {"name": "memory_forget", "description": "Forget a memory by id, or the memories a query finds.", "inputSchema": schema_of::<MemoryForgetInput>()},
    ])
}

/// The MCP server's state.
pub struct McpServer {
    backend: Arc<dyn MemoryBackend>,
}

impl McpServer {
    /// A server over `backend`.
    pub fn new(backend: Arc<dyn MemoryBackend>) -> Self {
        McpServer { backend }
    }

    async fn call_tool(&self, name: &str, args: Value) -> Result<Value, RpcError> {
        fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: Value) -> Result<T, String> {
            let args = if args.is_null() { json!({}) } else { args };
            serde_json::from_value(args).map_err(|e| format!("invalid arguments for {tool}: {e}"))
        }
        let agent = |a: &Option<String>| a.clone().unwrap_or_else(|| "main".into());
        let outcome: Result<Value, String> = match name {
            "memory_search" => match parse::<MemorySearchInput>(name, args) {
                Ok(mut i) => match search_filter(&mut i) {
                    Ok(filter) => {
                        let mut q = SearchQuery::new(i.query, i.max_results.unwrap_or(6) as usize);
                        q.min_score = i.min_score;
                        q.filter = filter;
                        self.backend
                            .search(&agent(&i.agent), q)
                            .await
                            .map(|hits| {
                                let results: Vec<Value> = hits.iter().map(hit_json).collect();
                                json!({"results": results, "count": results.len()})
                            })
                            .map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            },
            "memory_get" => match parse::<MemoryGetInput>(name, args) {
                Ok(i) => {
                    let id = i.id.or_else(|| {
                        i.path
                            .as_deref()
                            .and_then(|p| p.strip_prefix(RECORD_PATH_PREFIX))
                            .and_then(|s| s.parse().ok())
                    });
                    match (id, &i.path) {
                        (Some(id), _) => self
                            .backend
                            .get(&agent(&i.agent), id)
                            .await
                            .map(|r| json!({"record": record_json(&r)}))
                            .map_err(|e| e.to_string()),
                        (None, Some(p)) => self
                            .backend
                            .read_file(&agent(&i.agent), p, i.from, i.lines)
                            .await
                            .map(|s| json!(s))
                            .map_err(|e| e.to_string()),
                        (None, None) => Err("memory_get needs a path or an id".into()),
                    }
                }
                Err(e) => Err(e),
            },
            "memory_store" => match parse::<MemoryStoreInput>(name, args) {
                Ok(i) => {
                    let a = agent(&i.agent);
                    let m = NewMemory {
                        text: i.text,
                        source: i.source,
                        session: i.session,
                        tags: i.tags,
                        agent: Some(a.clone()),
                        ..NewMemory::default()
                    };
                    self.backend
                        .save(&a, m)
                        .await
                        .map(|o| json!({"id": o.id, "deduplicated": o.deduplicated}))
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e),
            },
            "memory_forget" => match parse::<MemoryForgetInput>(name, args) {
                Ok(i) => {
                    let target = match (i.id, i.query) {
                        (Some(id), None) => Ok(ForgetTarget::Id(id)),
                        (None, Some(query)) => Ok(ForgetTarget::Query {
                            query,
                            min_score: i.min_score.unwrap_or(0.5),
                            limit: 20,
                        }),
                        _ => Err("memory_forget needs exactly one of id or query".to_string()),
                    };
                    match target {
                        Ok(t) => self
                            .backend
                            .forget(&agent(&i.agent), t)
                            .await
                            .map(|ids| json!({"forgotten": ids}))
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            },
            other => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("unknown tool {other:?}"),
                ))
            }
        };
        Ok(match outcome {
            Ok(payload) => json!({
                "content": [{"type": "text", "text": serde_json::to_string_pretty(&payload).unwrap_or_default()}],
                "isError": false,
            }),
            Err(msg) => json!({
                "content": [{"type": "text", "text": msg}],
                "isError": true,
            }),
        })
    }
}

#[async_trait::async_trait]
impl RpcHandler for McpServer {
    async fn handle(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => {
                let asked = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let version = PROTOCOL_VERSIONS
                    .iter()
                    .find(|v| **v == asked)
                    .copied()
                    .unwrap_or(PROTOCOL_VERSIONS[0]);
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "clawhdf5", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "Long-term memory for this agent: search before answering questions about the user or past work; store durable facts.",
                }))
            }
            "ping" => Ok(json!({})),
            "notifications/initialized" | "notifications/cancelled" => Ok(Value::Null),
            "tools/list" => Ok(json!({"tools": tools()})),
            "tools/call" => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| RpcError::new(INVALID_PARAMS, "tools/call needs a tool name"))?
                    .to_string();
                let args = params.get("arguments").cloned().unwrap_or(Value::Null);
                self.call_tool(&name, args).await
            }
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }

    fn is_shutdown(&self, _method: &str) -> bool {
        false
    }

    async fn close(&self) -> Result<(), RpcError> {
        self.backend.close().await.map_err(RpcError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_count_outside_the_schema_is_an_error_naming_it() {
        let input = |n: u32| MemorySearchInput {
            query: "q".into(),
            max_results: Some(n),
            min_score: None,
            session: None,
            source: None,
            tags: Vec::new(),
            time_from: None,
            time_to: None,
            agent: None,
        };
        for n in [0, 101, u32::MAX] {
            let e = search_filter(&mut input(n)).unwrap_err();
            assert!(
                e.contains("maxResults") && e.contains(&n.to_string()),
                "{e}"
            );
        }
        for n in [1, 6, 100] {
            assert!(search_filter(&mut input(n)).is_ok());
        }
    }

    #[test]
    fn tool_schemas_are_objects_with_required_fields() {
        let t = tools();
        let search = &t[0]["inputSchema"];
        assert_eq!(search["type"], "object");
        assert_eq!(search["required"], json!(["query"]));
        assert!(search["properties"]["maxResults"].is_object());
        assert_eq!(search["additionalProperties"], false);
        let store = &t[2]["inputSchema"];
        assert_eq!(store["required"], json!(["text"]));
    }
}
