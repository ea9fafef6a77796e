//! A client for OpenAI-compatible embedding APIs: `POST {base}/v1/embeddings`.
//!
//! Request: `{"model": M, "input": [texts], "encoding_format": "float", "dimensions": D?}` with
//! `Authorization: Bearer $KEY`. Response: `{"data": [{"index": i, "embedding": [..]}, ..]}`.
//! Texts are sent in batches; 429 and 5xx answers and transport errors (including timeouts) are
//! retried with exponential backoff (honouring `Retry-After` in seconds), other errors are not.
//!
//! The client is blocking: call it from ordinary threads (inside an async runtime, use
//! `spawn_blocking`).

use std::time::Duration;

use serde::Deserialize;

use crate::{EmbedError, Embedder};

/// Default environment variable holding the API key.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";

/// Settings of a [`RemoteEmbedder`].
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080` (the client appends `/v1/embeddings`).
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Length of the vectors the model returns (checked on every answer).
    pub dim: usize,
    /// Send `"dimensions": dim` in requests (for models that can shorten their vectors).
    pub send_dimensions: bool,
    /// Environment variable holding the API key; when it is unset no `Authorization` header is sent.
    pub api_key_env: String,
    /// Most texts per request.
    pub batch_size: usize,
    /// Retries after the first attempt, for 429/5xx answers and transport errors.
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each further retry.
    pub initial_backoff: Duration,
    /// Longest delay between two attempts.
    pub max_backoff: Duration,
    /// Time limit of one HTTP request (connect + answer).
    pub timeout: Duration,
}

impl RemoteConfig {
    /// Settings with the usual defaults: key in `OPENAI_API_KEY`, 64 texts per request,
    /// 4 retries from 500 ms backoff (capped at 20 s), 30 s timeout, no `dimensions` field.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, dim: usize) -> Self {
        RemoteConfig {
            base_url: base_url.into(),
            model: model.into(),
            dim,
            send_dimensions: false,
            api_key_env: API_KEY_ENV.to_string(),
            batch_size: 64,
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            timeout: Duration::from_secs(30),
        }
    }
}

/// An [`Embedder`] backed by an OpenAI-compatible HTTP API. Its model id is `"{model}@{dim}"`.
pub struct RemoteEmbedder {
    cfg: RemoteConfig,
    url: String,
    api_key: Option<String>,
    client: reqwest::blocking::Client,
    model_id: String,
}

#[derive(Deserialize)]
struct ApiResponse {
    data: Vec<ApiItem>,
}

#[derive(Deserialize)]
struct ApiItem {
    index: usize,
    embedding: Vec<f32>,
}

enum Attempt {
    Done(Vec<Vec<f32>>),
    Retry {
        err: EmbedError,
        after: Option<Duration>,
    },
    Fail(EmbedError),
}

impl RemoteEmbedder {
    /// Builds the client; reads the API key from `cfg.api_key_env` now.
    pub fn new(cfg: RemoteConfig) -> Result<Self, EmbedError> {
        if cfg.dim == 0 || cfg.batch_size == 0 {
            return Err(EmbedError::InvalidInput(
                "remote embedder needs dim > 0 and batch_size > 0".into(),
            ));
        }
        let base = cfg.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(EmbedError::InvalidInput(format!(
                "base URL {:?} must start with http:// or https://",
                cfg.base_url
            )));
        }
        let url = format!("{base}/v1/embeddings");
        let api_key = std::env::var(&cfg.api_key_env)
            .ok()
            .filter(|k| !k.is_empty());
        let client = reqwest::blocking::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout)
            .build()
            .map_err(|e| EmbedError::RemoteTransport(e.to_string()))?;
        Ok(RemoteEmbedder {
            model_id: format!("{}@{}", cfg.model, cfg.dim),
            cfg,
            url,
            api_key,
            client,
        })
    }

    fn attempt(&self, texts: &[&str]) -> Attempt {
        let mut body = serde_json::json!({
            "model": self.cfg.model,
            "input": texts,
            "encoding_format": "float",
        });
        if self.cfg.send_dimensions {
            body["dimensions"] = self.cfg.dim.into();
        }
        let mut req = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = match req.send() {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Retry {
                    err: EmbedError::RemoteTransport(e.to_string()),
                    after: None,
                }
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let text = match resp.text() {
            Ok(t) => t,
            Err(e) => {
                return Attempt::Retry {
                    err: EmbedError::RemoteTransport(e.to_string()),
                    after: None,
                }
            }
        };
        if !status.is_success() {
            let err = EmbedError::RemoteStatus {
                status: status.as_u16(),
                body: text.chars().take(500).collect(),
            };
            return if status.as_u16() == 429 || status.is_server_error() {
                Attempt::Retry {
                    err,
                    after: retry_after,
                }
            } else {
                Attempt::Fail(err)
            };
        }
        match self.parse(&text, texts.len()) {
            Ok(v) => Attempt::Done(v),
            Err(e) => Attempt::Fail(e),
        }
    }

    fn parse(&self, text: &str, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let resp: ApiResponse = serde_json::from_str(text).map_err(|e| {
            EmbedError::RemoteProtocol(format!(
                "{e} in {:?}",
                text.chars().take(200).collect::<String>()
            ))
        })?;
        if resp.data.len() != expected {
            return Err(EmbedError::WrongCount {
                expected,
                got: resp.data.len(),
            });
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
        for item in resp.data {
            if item.embedding.len() != self.cfg.dim {
                return Err(EmbedError::DimensionMismatch {
                    expected: self.cfg.dim,
                    got: item.embedding.len(),
                });
            }
            match out.get_mut(item.index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => {
                    return Err(EmbedError::RemoteProtocol(format!(
                        "index {} out of range or repeated",
                        item.index
                    )))
                }
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn embed_chunk(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut delay = self.cfg.initial_backoff;
        let mut retries = 0;
        loop {
            match self.attempt(texts) {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry { err, after } => {
                    if retries >= self.cfg.max_retries {
                        return Err(err);
                    }
                    retries += 1;
                    let wait = after.unwrap_or(delay).min(self.cfg.max_backoff);
                    std::thread::sleep(wait);
                    delay = (delay * 2).min(self.cfg.max_backoff);
                }
            }
        }
    }
}

impl Embedder for RemoteEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.cfg.dim
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.cfg.batch_size) {
            out.extend(self.embed_chunk(chunk)?);
        }
        Ok(out)
    }
}
