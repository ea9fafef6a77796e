//! `clawhdf5 save`: store one memory durably.

use anyhow::Context;
use clawhdf5_memory::{parse_time, NewMemory, Store};

use super::StoreArg;

/// Arguments of `save`.
#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    write: super::WriteOpts,
    /// Where the memory came from (conversation, user_correction, document, tool, system, ...).
    #[arg(long)]
    source: Option<String>,
    /// Session or conversation id.
    #[arg(long)]
    session: Option<String>,
    /// Agent id (default "main").
    #[arg(long)]
    agent: Option<String>,
    /// Tag (repeatable or comma-separated).
    #[arg(long = "tag", alias = "tags", value_delimiter = ',')]
    tags: Vec<String>,
    /// When it happened: RFC 3339, YYYY-MM-DD or ms since epoch.
    #[arg(long)]
    event_time: Option<String>,
    /// The text to remember.
    text: String,
}

pub fn run(a: SaveArgs) -> anyhow::Result<()> {
    let event_time = match &a.event_time {
        Some(s) => Some(
            parse_time(s).with_context(|| format!("--event-time {s:?} is not a date or time"))?,
        ),
        None => None,
    };
    let mut store = Store::open_with(&a.store.store, a.write.store_options()?)?;
    let outcome = store.save(NewMemory {
        text: a.text,
        source: a.source,
        agent: a.agent,
        session: a.session,
        tags: a.tags.iter().map(|t| t.trim().to_string()).collect(),
        event_time,
        ..NewMemory::default()
    })?;
    // Durable in the log now: acknowledge before folding it into the HDF5 file.
    outln!(
        "{}",
        serde_json::json!({"id": outcome.id, "deduplicated": outcome.deduplicated})
    )?;
    super::close_durable(store);
    Ok(())
}
