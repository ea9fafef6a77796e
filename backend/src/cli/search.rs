//! `clawhdf5 search`: ranked results for a query.

use clawhdf5_memory::{format_time, SearchMode, SearchQuery, Store};

use super::StoreArg;

/// Arguments of `search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    #[command(flatten)]
    store: StoreArg,
    /// How many results.
    #[arg(short = 'k', long = "limit", default_value_t = 5)]
    k: usize,
    /// Print a JSON array instead of text.
    #[arg(long)]
    json: bool,
    /// Only this agent's memories.
    #[arg(long)]
    agent: Option<String>,
    /// Only this session's memories.
    #[arg(long)]
    session: Option<String>,
    /// hybrid (default: keyword + vector when the model is installed), keyword, vector or rrf.
    #[arg(long, default_value = "hybrid")]
    mode: String,
    #[command(flatten)]
    embed: super::embed::EmbedOpts,
    /// What to look for.
    query: String,
}

pub fn run(a: SearchArgs) -> anyhow::Result<()> {
    let mode = SearchMode::parse(&a.mode).ok_or_else(|| {
        anyhow::anyhow!("--mode {:?}: use hybrid, keyword, vector or rrf", a.mode)
    })?;
    let embedder = if mode == SearchMode::Keyword {
        None
    } else {
        a.embed.load()?
    };
    let store = Store::open_with(
        &a.store.store,
        clawhdf5_memory::StoreOptions {
            create: false,
            read_only: true,
            embedder,
            ..Default::default()
        },
    )?;
    let mut q = SearchQuery::new(a.query, a.k);
    q.mode = mode;
    q.filter.agent = a.agent;
    q.filter.session = a.session;
    let hits = store.search(&q)?;
    if a.json {
        let out: Vec<serde_json::Value> = hits
            .iter()
            .map(|h| {
                serde_json::json!({
                    "id": h.record.id,
                    "score": h.score,
                    "keyword_score": h.keyword_score,
                    "vector_score": h.vector_score,
                    "text": h.record.text,
                    "source": h.record.source.as_str(),
                    "session": h.record.session,
                    "agent": h.record.agent,
                    "created_at": format_time(h.record.created_at),
                    "event_time": h.record.event_time.map(format_time),
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else if hits.is_empty() {
        outln!("no results")?;
    } else {
        for (i, h) in hits.iter().enumerate() {
            outln!(
                "{:>2}. [{:.3}] #{} {}",
                i + 1,
                h.score,
                h.record.id,
                h.record.text
            )?;
        }
    }
    Ok(())
}
