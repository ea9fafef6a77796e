//! Errors of the memory store.

use std::path::PathBuf;

/// Everything that can go wrong while opening, changing or searching a store.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// An operating-system I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The store file does not exist (and the operation does not create one).
    #[error("store not found: {0}")]
    NotFound(PathBuf),
    /// The file exists but is not a clawhdf5 store (not HDF5, or HDF5 without our schema).
    #[error("{path} is not a clawhdf5 store: {reason}")]
    NotAStore { path: PathBuf, reason: String },
    /// The HDF5 layer rejected the file.
    #[error("{path}: {source}")]
    Format {
        path: PathBuf,
        #[source]
        source: clawhdf5_format::FormatError,
    },
    /// The store was written by a newer clawhdf5 whose schema this build does not know.
    #[error("{path} has schema version {found}, newer than this build supports ({supported}); upgrade clawhdf5")]
    SchemaTooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// The file's contents contradict the schema (missing column, wrong length, ...).
    #[error("{path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    /// Another process holds the store's writer lock.
    #[error("{0} is locked by another writer (only one process may write a store at a time)")]
    Locked(PathBuf),
    /// Another program has the store's HDF5 file open for writing (an HDF5 library holds its file lock).
    #[error("{0} is open for writing in another program (an HDF5 library holds its lock, e.g. h5py in \"a\" or \"w\" mode); close it there first")]
    InUse(PathBuf),
    /// A caller passed something the store cannot accept.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// No record has this id.
    #[error("no record with id {0}")]
    NoSuchRecord(u64),
    /// The write-ahead log could not be encoded or decoded.
    #[error("write-ahead log {path}: {reason}")]
    Wal { path: PathBuf, reason: String },
    /// The embedding layer failed or disagrees with the store.
    #[error("embedding: {0}")]
    Embedding(String),
    /// The store was opened read-only.
    #[error("store {0} is open read-only")]
    ReadOnly(PathBuf),
}

/// Result alias for the memory crate.
pub type Result<T> = std::result::Result<T, MemoryError>;

/// Attach a path to an `std::io::Error`.
pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> MemoryError + '_ {
    move |source| MemoryError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The error of the format crate's `source`, at `path` (for `map_err`).
pub(crate) fn format_err(
    path: &std::path::Path,
) -> impl Fn(clawhdf5_format::FormatError) -> MemoryError + Copy + '_ {
    move |source| MemoryError::Format {
        path: path.to_path_buf(),
        source,
    }
}
