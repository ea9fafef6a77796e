//! `clawhdf5 search`: ranked results for a query.

use anyhow::Context;
use clawhdf5_memory::{format_time, parse_time, SearchMode, SearchQuery, Store};

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
    /// Only memories from this source (repeatable: any of them).
    #[arg(long = "source")]
    sources: Vec<String>,
    /// Only memories carrying this tag (repeatable or comma-separated: all of them).
    #[arg(long = "tag", alias = "tags", value_delimiter = ',')]
    tags: Vec<String>,
    /// Only memories that happened at or after this time (event time, else when saved): RFC 3339,
    /// YYYY-MM-DD or ms since epoch.
    #[arg(long)]
    from: Option<String>,
    /// Only memories that happened before this time (same forms as --from).
    #[arg(long)]
    to: Option<String>,
    /// Drop results scoring below this (scores are in [0, 1]).
    #[arg(long)]
    min_score: Option<f32>,
    /// hybrid (default: keyword + vector when the model is installed), keyword, vector or rrf.
    #[arg(long, default_value = "hybrid")]
    mode: String,
    #[command(flatten)]
    embed: super::embed::EmbedOpts,
    /// What to look for.
    query: String,
}

/// `--from` / `--to` as ms since epoch.
fn time_arg(flag: &str, v: &Option<String>) -> anyhow::Result<Option<i64>> {
    v.as_deref()
        .map(|s| parse_time(s).with_context(|| format!("{flag} {s:?} is not a date or time")))
        .transpose()
}

pub fn run(a: SearchArgs) -> anyhow::Result<()> {
    let mode = SearchMode::parse(&a.mode).ok_or_else(|| {
        anyhow::anyhow!("--mode {:?}: use hybrid, keyword, vector or rrf", a.mode)
    })?;
    let (from, to) = (time_arg("--from", &a.from)?, time_arg("--to", &a.to)?);
    if let (Some(f), Some(t)) = (from, to) {
        anyhow::ensure!(f <= t, "--from ({f} ms) is after --to ({t} ms)");
    }
    anyhow::ensure!(a.k >= 1, "-k/--limit must be at least 1");
    if let Some(m) = a.min_score {
        anyhow::ensure!(m.is_finite(), "--min-score must be a number");
    }
    let tags: Vec<String> = a
        .tags
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
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
    q.filter.sources = a.sources;
    q.filter.tags = tags;
    q.filter.time_from = from;
    q.filter.time_to = to;
    q.min_score = a.min_score;
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
                    "tags": h.record.tags,
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
