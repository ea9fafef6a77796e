//! Errors of the benchmark harnesses.

use std::path::{Path, PathBuf};

/// Everything that can stop a harness run.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A required input (dataset, script) is missing or malformed.
    #[error("{0}")]
    Input(String),
    /// An option the harness cannot honour.
    #[error("invalid option: {0}")]
    Option(String),
    /// The memory store failed.
    #[error("memory store: {0}")]
    Memory(#[from] clawhdf5_memory::MemoryError),
    /// The HDF5 layer failed.
    #[error("HDF5: {0}")]
    Format(#[from] clawhdf5_format::FormatError),
    /// The vector index failed.
    #[error("vector index: {0}")]
    Ann(#[from] clawhdf5_ann::AnnError),
    /// Loading an evaluation dataset failed.
    #[error("{0}")]
    Eval(#[from] crate::EvalError),
    /// The probe child process failed or answered something unreadable.
    #[error("probe process: {0}")]
    Probe(String),
}

/// Result alias for the harnesses.
pub type Result<T> = std::result::Result<T, HarnessError>;

/// Attach a path to an I/O error.
pub fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> HarnessError + '_ {
    move |source| HarnessError::Io {
        path: path.to_path_buf(),
        source,
    }
}
