//! clawhdf5-backend: what agents and frameworks call — the async [`MemoryBackend`] trait over per-agent stores,
//! workspace sync, and the JSON-RPC server behind `clawhdf5 serve`.

pub mod agents;
pub mod backend;
pub mod chunk;
pub mod error;
pub mod mcp;
pub mod rpc;
pub mod serve;
pub mod workspace;

pub use backend::{BackendStatus, ForgetTarget, HdfBackend, MemoryBackend, SyncRequest};
pub use error::BackendError;
