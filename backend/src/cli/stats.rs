//! `clawhdf5 stats`: what a store holds.

use clawhdf5_memory::Store;

use super::StoreArg;

/// Arguments of `stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: StatsArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&a.store.store)?;
    let s = store.stats();
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&s)?)?;
    } else {
        outln!("store:          {}", s.path.display())?;
        outln!("records:        {}", s.records)?;
        outln!("forgotten:      {}", s.tombstones)?;
        outln!("file size:      {} bytes", s.file_bytes)?;
        outln!("log size:       {} bytes", s.wal_bytes)?;
        outln!("schema version: {}", s.schema_version)?;
        outln!("generation:     {}", s.generation)?;
        match (&s.embedding_model, s.embedding_dim) {
            (Some(m), Some(d)) => outln!(
                "embeddings:     {} of {} ({m}, {d} dims)",
                s.embedded,
                s.records
            )?,
            (None, Some(d)) => {
                outln!("embeddings:     {} of {} ({d} dims)", s.embedded, s.records)?
            }
            _ => outln!("embeddings:     none (keyword-only)")?,
        }
        if s.graph_rows > 0 {
            outln!(
                "vector graph:   {} rows ({} searched exactly until folded in)",
                s.graph_rows,
                s.unindexed_rows
            )?;
        }
    }
    Ok(())
}
