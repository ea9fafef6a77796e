//! `clawhdf5 serve`: the long-running JSON-RPC server the OpenClaw plugin talks to.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clawhdf5_backend::serve::{serve, ServeOptions};
use clawhdf5_backend::HdfBackend;
use clawhdf5_memory::{Durability, StoreOptions};

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Directory holding one store file per agent.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Workspace whose memory files `sync` indexes and `get` reads.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Per-request deadline in milliseconds (every method but `sync`).
    #[arg(long, default_value_t = 10_000)]
    deadline_ms: u64,
    /// Deadline of a workspace `sync` in milliseconds (indexing a workspace can take far longer than a search).
    #[arg(long, default_value_t = 120_000)]
    sync_deadline_ms: u64,
    /// Durability: every-save (default), <N>ms, or none.
    #[arg(long, default_value = "every-save")]
    durability: String,
    /// Fold the write-ahead log into the HDF5 file once it exceeds this many bytes.
    #[arg(long, default_value_t = 16 << 20)]
    checkpoint_bytes: u64,
    #[command(flatten)]
    write: super::WriteOpts,
}

pub fn run(a: ServeArgs) -> anyhow::Result<()> {
    let durability = Durability::parse(&a.durability).ok_or_else(|| {
        anyhow::anyhow!(
            "--durability {:?}: use every-save, <N>ms or none",
            a.durability
        )
    })?;
    let opts = StoreOptions {
        durability,
        auto_checkpoint_bytes: a.checkpoint_bytes,
        ..a.write.store_options()?
    };
    let backend = Arc::new(HdfBackend::new(&a.dir, a.workspace, opts)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(serve(
        backend,
        tokio::io::stdin(),
        tokio::io::stdout(),
        ServeOptions {
            deadline: Duration::from_millis(a.deadline_ms.max(1)),
            method_deadlines: HashMap::from([(
                "sync".to_string(),
                Duration::from_millis(a.sync_deadline_ms.max(1)),
            )]),
            ..ServeOptions::default()
        },
    ))?;
    Ok(())
}
