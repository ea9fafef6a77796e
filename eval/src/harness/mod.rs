//! Benchmark harnesses behind BENCHMARKS.md: each one command that measures, writes Markdown and JSON tables
//! to an output folder, and has a seconds-long `--smoke` size that the integration tests run.
//!
//! * [`search`]: HNSW ef sweep through the `ann` crate and the end-to-end hybrid table through `Store`.
//! * [`footprint`]: file bytes per record against the payload, per-dataset breakdown, resident memory.
//! * [`consolidation`]: cycle time through `AgentMemory` and retrieval quality before/after a cycle.
//! * [`ephemeral`]: operations per second of the ephemeral tier.
//! * [`read`]: partial reads of a 2-D f64 dataset with the format crate (and h5py when importable).
//!
//! Shared pieces: [`error`], [`report`] (the output files), [`measure`] (timers, percentiles, resident memory),
//! [`corpus`] (realistic record texts from LoCoMo), [`vectors`] (synthetic embeddings), [`ingest`] (filling a
//! store) and [`probe`] (a fresh process that reopens a store and queries it).

pub mod cli;
pub mod consolidation;
pub mod corpus;
pub mod ephemeral;
pub mod error;
pub mod footprint;
pub mod ingest;
pub mod measure;
pub mod probe;
pub mod read;
pub mod report;
pub mod search;
pub mod vectors;
