//! The error type shared by every part of the crate.

use std::path::PathBuf;

/// Everything that can go wrong while loading a model, embedding text, talking to a remote API or
/// reading the embedding cache.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No model directory was found; the message says where we looked and how to fetch one.
    #[error("embedding model not found (looked in: {searched}); fetch it with `clawhdf5 model fetch` (or scripts/setup/embed.sh), or point CLAWHDF5_MODEL_DIR at a folder holding config.json, tokenizer.json and model.safetensors")]
    ModelNotFound {
        /// The places that were searched, in order.
        searched: String,
    },
    /// A model file exists but its content is not what an all-MiniLM-L6-v2 model needs.
    #[error("bad model file {path}: {reason}")]
    BadModelFile {
        /// The offending file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The tokenizer failed to load or to encode a text.
    #[error("tokenizer error: {0}")]
    Tokenizer(String),
    /// A downloaded file does not have the expected sha256.
    #[error("checksum mismatch for {path}: expected sha256 {expected}, got {actual}")]
    Checksum {
        /// The file that was checked.
        path: PathBuf,
        /// The sha256 we expected (hex).
        expected: String,
        /// The sha256 we computed (hex).
        actual: String,
    },
    /// Fetching the model package failed.
    #[error("model fetch failed: {0}")]
    Fetch(String),
    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The caller passed an unusable argument.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The candle backend failed (a tensor operation or reading its weights).
    #[error("candle backend: {0}")]
    Candle(String),
    /// The requested compute device (a CUDA GPU) cannot be used.
    #[error("compute device unavailable: {0}")]
    Device(String),
    /// The worker thread pool could not be built.
    #[error("cannot build thread pool: {0}")]
    ThreadPool(String),
    /// A remote embedding API answered with an error status (after retries, where retrying applied).
    #[error("remote embedding API returned HTTP {status}: {body}")]
    RemoteStatus {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// A remote request failed at the transport level (connection refused, timeout, ...).
    #[error("remote embedding request failed: {0}")]
    RemoteTransport(String),
    /// A remote API answered with a body that does not follow the OpenAI embeddings wire format.
    #[error("remote embedding API answered with an unexpected body: {0}")]
    RemoteProtocol(String),
    /// A vector has a different length from the one the embedder or cache expects.
    #[error("dimension mismatch: expected {expected}, got {got}")]
    DimensionMismatch {
        /// The expected length.
        expected: usize,
        /// The length found.
        got: usize,
    },
    /// An embedder returned a different number of vectors from the number of texts.
    #[error("embedder returned {got} vectors for {expected} texts")]
    WrongCount {
        /// Number of texts sent.
        expected: usize,
        /// Number of vectors received.
        got: usize,
    },
    /// The embedding cache file is damaged.
    #[error("embedding cache {path} is corrupt at byte {offset}: {reason}")]
    CacheCorrupt {
        /// The cache file.
        path: PathBuf,
        /// Byte offset of the damaged record.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
}

impl EmbedError {
    /// Wraps an I/O error with a short description of what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EmbedError::Io {
            context: context.into(),
            source,
        }
    }
}
