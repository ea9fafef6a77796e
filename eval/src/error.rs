//! Errors of the evaluation library.

use std::path::PathBuf;

/// Everything that can go wrong while loading a benchmark or running it.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON.
    #[error("{path}: not valid JSON: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A benchmark file parsed as JSON but does not follow the benchmark's schema.
    #[error("{path}: {reason}")]
    Schema { path: PathBuf, reason: String },
    /// A caller passed an option the harness cannot honour.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The memory store failed.
    #[error("memory store: {0}")]
    Memory(#[from] clawhdf5_memory::MemoryError),
    /// The embedding model or its cache failed.
    #[error("embeddings: {0}")]
    Embed(#[from] clawhdf5_embed::EmbedError),
}

/// Result alias for the evaluation library.
pub type Result<T> = std::result::Result<T, EvalError>;

/// Attach a path to an I/O error.
pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> EvalError + '_ {
    move |source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A schema error for `path`.
pub(crate) fn schema(path: &std::path::Path, reason: impl Into<String>) -> EvalError {
    EvalError::Schema {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}
