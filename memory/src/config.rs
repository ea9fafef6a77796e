//! Store configuration: fixed at creation (dimension, precision, tokenizer) or tunable (fusion weights, index
//! parameters). Persisted as attributes of `/config` and restored on open.

use serde::{Deserialize, Serialize};

use crate::tokenize::TokenizerConfig;

/// How embeddings are stored in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VectorPrecision {
    /// IEEE half precision (default; half the bytes, no measurable recall loss for MiniLM).
    F16,
    /// Full single precision.
    F32,
}

impl VectorPrecision {
    /// Bytes of one stored vector element.
    pub fn bytes(self) -> usize {
        match self {
            VectorPrecision::F16 => 2,
            VectorPrecision::F32 => 4,
        }
    }

    /// Name stored in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            VectorPrecision::F16 => "f16",
            VectorPrecision::F32 => "f32",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "f16" => Some(VectorPrecision::F16),
            "f32" => Some(VectorPrecision::F32),
            _ => None,
        }
    }
}

/// Everything about a store that is persisted in its file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoreConfig {
    /// Embedding dimension; `None` for a keyword-only store that has never seen an embedding.
    pub embedding_dim: Option<u32>,
    /// Id of the model that produced the stored embeddings.
    pub embedding_model: Option<String>,
    /// On-disk precision of embeddings.
    pub vector_precision: VectorPrecision,
    /// Weight of the normalised vector score in weighted fusion.
    pub fusion_vector_weight: f32,
    /// Weight of the normalised keyword score in weighted fusion.
    pub fusion_keyword_weight: f32,
    /// `k` of reciprocal rank fusion.
    pub rrf_k: f32,
    /// Keyword tokenizer settings.
    pub tokenizer: TokenizerConfig,
    /// HNSW links per node.
    pub hnsw_m: u32,
    /// HNSW candidate list size while building.
    pub hnsw_ef_construction: u32,
    /// HNSW candidate list size while searching.
    pub hnsw_ef_search: u32,
    /// Below this many vectors, vector search scans exactly instead of using the graph.
    pub exact_search_threshold: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            embedding_dim: None,
            embedding_model: None,
            vector_precision: VectorPrecision::F16,
            fusion_vector_weight: 0.4,
            fusion_keyword_weight: 0.6,
            rrf_k: 60.0,
            tokenizer: TokenizerConfig::default(),
            hnsw_m: 16,
            hnsw_ef_construction: 200,
            hnsw_ef_search: 64,
            exact_search_threshold: 4_096,
        }
    }
}
