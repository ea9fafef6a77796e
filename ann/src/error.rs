//! Error type shared by every index in the crate.

use thiserror::Error;

/// Everything that can go wrong when building, searching or loading an index.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum AnnError {
    /// A vector or query has a different number of dimensions than the index/store.
    #[error("dimension mismatch: expected {expected}, got {got}")]
    DimensionMismatch { expected: usize, got: usize },
    /// An id refers to a row the vector store does not have.
    #[error("id {id} is out of range: the vector store has {len} rows")]
    IdOutOfRange { id: u32, len: usize },
    /// A parameter is outside its valid range.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
    /// Persisted bytes are not a valid index (truncated, bad magic, checksum, out-of-range links...).
    #[error("corrupt persisted index: {0}")]
    Corrupt(String),
    /// The persisted index was written for another generation of the vector store.
    #[error("stale index: persisted for store generation {found}, expected {expected}")]
    StaleIndex { expected: u64, found: u64 },
    /// The index expects vectors the store no longer has (the store shrank or was swapped).
    #[error("vector store has {store_len} rows but the index references {index_len}")]
    StoreTooSmall { store_len: usize, index_len: usize },
    /// Training data is insufficient (e.g. fewer vectors than k-means centroids).
    #[error("not enough training vectors: need {needed}, have {have}")]
    NotEnoughData { needed: usize, have: usize },
}
