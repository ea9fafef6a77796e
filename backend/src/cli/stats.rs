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
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        println!("store:          {}", s.path.display());
        println!("records:        {}", s.records);
        println!("forgotten:      {}", s.tombstones);
        println!("file size:      {} bytes", s.file_bytes);
        println!("log size:       {} bytes", s.wal_bytes);
        println!("schema version: {}", s.schema_version);
        println!("generation:     {}", s.generation);
        match (&s.embedding_model, s.embedding_dim) {
            (Some(m), Some(d)) => println!(
                "embeddings:     {} of {} ({m}, {d} dims)",
                s.embedded, s.records
            ),
            (None, Some(d)) => {
                println!("embeddings:     {} of {} ({d} dims)", s.embedded, s.records)
            }
            _ => println!("embeddings:     none (keyword-only)"),
        }
        if s.graph_rows > 0 {
            println!(
                "vector graph:   {} rows ({} searched exactly until folded in)",
                s.graph_rows, s.unindexed_rows
            );
        }
    }
    Ok(())
}
