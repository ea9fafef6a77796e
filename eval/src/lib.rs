//! clawhdf5-eval: retrieval quality of the clawhdf5 memory store on LoCoMo, LongMemEval and a deterministic
//! synthetic MemoryArena, scored the way each benchmark's authors define it.

pub mod arena;
pub mod dates;
pub mod embeddings;
pub mod error;
pub mod harness;
pub mod locomo;
pub mod locomo_eval;
pub mod longmemeval;
pub mod longmemeval_eval;
pub mod metrics;
pub mod report;
pub mod retrieval;

pub use error::{EvalError, Result};
