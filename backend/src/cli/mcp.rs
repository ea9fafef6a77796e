//! `clawhdf5 mcp`: the Model Context Protocol server over stdio.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clawhdf5_backend::mcp::McpServer;
use clawhdf5_backend::serve::{serve_with, ServeOptions};
use clawhdf5_backend::HdfBackend;

/// Arguments of `mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Directory holding one store file per agent.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Workspace whose files memory_get may read.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Per-request deadline in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    deadline_ms: u64,
    #[command(flatten)]
    write: super::WriteOpts,
}

pub fn run(a: McpArgs) -> anyhow::Result<()> {
    let backend = Arc::new(HdfBackend::new(
        &a.dir,
        a.workspace,
        a.write.store_options()?,
    )?);
    let server = Arc::new(McpServer::new(backend));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(serve_with(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        ServeOptions {
            deadline: Duration::from_millis(a.deadline_ms.max(1)),
            ..ServeOptions::default()
        },
    ))?;
    Ok(())
}
