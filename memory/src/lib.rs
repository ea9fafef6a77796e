//! clawhdf5-memory: an agent's memories in one HDF5 file — records, write-ahead log, checkpoints, keyword and
//! vector search with fusion and filters.

pub mod bm25;
pub mod checkpoint;
pub mod cognitive;
pub mod columns;
pub mod config;
pub mod dictionary;
pub mod error;
pub mod filter;
pub mod foreign;
pub mod integrity;
pub mod keyword_table;
pub mod pending;
mod postings;
pub mod record;
pub mod save_ahead;
pub mod schema;
pub mod search;
mod stem_cache;
pub mod store;
pub mod tokenize;
pub mod validate;
pub mod vector_index;
pub mod vectors;
pub mod wal;

/// The embedding layer the store uses (re-exported so callers need not depend on it directly).
pub use clawhdf5_embed as embed;
/// The HDF5 layer the store is written with.
pub use clawhdf5_format as format;

pub use config::{StoreConfig, VectorPrecision};
pub use error::{MemoryError, Result};
pub use filter::Filter;
pub use record::{format_time, now_ms, parse_time, NewMemory, Origin, Record, Source, Tier};
pub use save_ahead::{PreparedSave, SaveKit};
pub use search::{SearchHit, SearchMode, SearchQuery};
pub use store::{verify_store, wal_path, SaveOutcome, Store, StoreOptions, StoreStats};
pub use wal::Durability;

/// Hash map with a fast keyed hasher (aHash, randomly seeded per map, so crafted keys cannot force collisions).
pub type FastMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;
