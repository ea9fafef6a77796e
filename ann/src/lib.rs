//! clawhdf5-ann: vector search for the clawhdf5 memory store.
//!
//! * [`kernels`]: dot / L2 distance kernels over `f32`, `f16` and `i8`, dispatched at run time
//!   (AVX-512, AVX2+FMA, NEON, scalar).
//! * [`exact_top_k`]: brute-force top-k with a bounded heap, parallel for large stores, optional filter.
//! * [`Hnsw`]: graph index over vectors the caller owns ([`VectorStore`]); parallel deterministic build,
//!   incremental insert, tombstone delete + compaction, exact-when-needed filtered search, optional int8
//!   traversal copy with f32 re-scoring, persistence tied to a store generation.
//! * [`Ivf`] and [`IvfPq`]: k-means inverted lists (optionally product-quantised) for tight memory budgets.
//! * [`sign`]: one bit a dimension per row (rotated by [`rotation`]), whose estimates and error bounds
//!   pick the rows of large filtered scans that are then scored in int8 or f32.
//!
//! The indexes never own a second copy of the f32 vectors: every search takes the store as an argument.

pub mod error;
pub mod exact;
pub mod filter;
pub mod hnsw;
pub mod ivf;
pub mod ivfpq;
pub mod kernels;
pub mod kmeans;
pub mod metric;
pub mod pages;
pub mod quant;
pub mod rng;
pub mod rotation;
pub mod sign;
pub mod store;
pub mod synth;
pub mod topk;
mod visited;

pub use error::AnnError;
pub use exact::exact_top_k;
pub use filter::{Filter, IdSet};
pub use hnsw::{Hnsw, HnswParams, SearchPlan};
pub use ivf::{Ivf, IvfParams};
pub use ivfpq::{IvfPq, IvfPqParams};
pub use metric::Metric;
pub use quant::Int8Vectors;
pub use store::{FlatVectors, HalfVectors, Row, VectorStore};
pub use topk::Neighbor;
