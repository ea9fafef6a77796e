//! Errors of the backend layer.

use clawhdf5_memory::MemoryError;

/// Why a backend call failed.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The request itself is wrong (bad agent id, path outside the workspace, ...).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The thing asked for does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The store failed.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// Reading the workspace failed.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A blocking task panicked or was cancelled.
    #[error("internal error: {0}")]
    Internal(String),
}
