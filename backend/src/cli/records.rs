//! `clawhdf5 get`, `forget`, `export` and `import`: single records and JSON-lines dumps.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clawhdf5_backend::rpc::record_json;
use clawhdf5_memory::{parse_time, NewMemory, Origin, SearchQuery, Store};
use serde::Deserialize;

use super::StoreArg;

/// Arguments of `get`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Record id.
    id: u64,
}

pub fn get(a: GetArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&a.store.store)?;
    let r = store
        .get(a.id)
        .filter(|r| !r.tombstone)
        .with_context(|| format!("no memory with id {}", a.id))?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&record_json(&r))?)?;
    } else {
        outln!("#{} [{}] {}", r.id, r.source.as_str(), r.text)?;
    }
    Ok(())
}

/// Arguments of `forget`.
#[derive(Debug, clap::Args)]
pub struct ForgetArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Forget what this query finds instead of one id.
    #[arg(long, conflicts_with = "id")]
    query: Option<String>,
    /// With --query: only results scoring at least this (0..1).
    #[arg(long, default_value_t = 0.5)]
    min_score: f32,
    /// With --query: forget at most this many.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Record id.
    #[arg(required_unless_present = "query")]
    id: Option<u64>,
}

pub fn forget(a: ForgetArgs) -> anyhow::Result<()> {
    let mut store = Store::open_with(
        &a.store.store,
        clawhdf5_memory::StoreOptions {
            create: false,
            ..Default::default()
        },
    )?;
    let ids: Vec<u64> = match (a.id, &a.query) {
        (Some(id), _) => vec![id],
        (None, Some(q)) => {
            let mut sq = SearchQuery::new(q.clone(), a.limit);
            sq.min_score = Some(a.min_score);
            store
                .search(&sq)?
                .into_iter()
                .map(|h| h.record.id)
                .collect()
        }
        (None, None) => bail!("give an id or --query"),
    };
    let mut forgotten = Vec::new();
    for id in ids {
        if store.forget(id)? {
            forgotten.push(id);
        }
    }
    super::close_durable(store);
    if a.json {
        outln!("{}", serde_json::json!({ "forgotten": forgotten }))?;
    } else if forgotten.is_empty() {
        outln!("nothing forgotten")?;
    } else {
        outln!(
            "forgot {} memor{}: {:?}",
            forgotten.len(),
            if forgotten.len() == 1 { "y" } else { "ies" },
            forgotten
        )?;
    }
    if a.id.is_some() && forgotten.is_empty() {
        bail!("no memory with id {}", a.id.unwrap_or_default());
    }
    Ok(())
}

/// Arguments of `export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Write here instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Include forgotten records.
    #[arg(long)]
    all: bool,
}

pub fn export(a: ExportArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&a.store.store)?;
    let sink: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut w = BufWriter::new(sink);
    let mut n = 0usize;
    for r in store.records() {
        if r.tombstone && !a.all {
            continue;
        }
        let mut v = record_json(r);
        if let (Some(e), serde_json::Value::Object(m)) =
            (store.get(r.id).and_then(|x| x.embedding), &mut v)
        {
            m.insert("embedding".into(), serde_json::json!(e));
        }
        if r.tombstone {
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("forgotten".into(), serde_json::json!(true));
            }
        }
        writeln!(w, "{v}")?;
        n += 1;
    }
    w.flush()?;
    if a.out.is_some() {
        eprintln!("exported {n} records");
    }
    Ok(())
}

/// One JSON line accepted by `import` (what `export` writes; only `text` is required).
#[derive(Debug, Deserialize)]
struct ImportLine {
    text: String,
    source: Option<String>,
    agent: Option<String>,
    session: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    path: Option<String>,
    start_line: Option<u32>,
    end_line: Option<u32>,
    event_time: Option<serde_json::Value>,
    importance: Option<f32>,
    embedding: Option<Vec<f32>>,
    #[serde(default)]
    forgotten: bool,
}

/// Arguments of `import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    write: super::WriteOpts,
    /// Hide the progress bar.
    #[arg(long)]
    quiet: bool,
    /// Print the summary as JSON ({"imported", "duplicates", "forgotten_skipped"}).
    #[arg(long)]
    json: bool,
    /// JSON-lines file (one object per line with at least "text"), or - for standard input.
    file: PathBuf,
}

/// The memory one line of an import file holds; `None` for a forgotten one (skipped), or what is wrong with it.
/// `dim` is the embeddings' dimension (the store's, else the file's first embedding's; set by it).
fn import_line(line: &str, dim: &mut Option<usize>) -> anyhow::Result<Option<NewMemory>> {
    let l: ImportLine = serde_json::from_str(line).context("not a memory object")?;
    if l.forgotten {
        return Ok(None);
    }
    let event_time = match &l.event_time {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Number(n)) => Some(n.as_i64().with_context(|| {
            format!("event_time {n} is not a whole number of milliseconds since 1970")
        })?),
        Some(serde_json::Value::String(s)) => {
            Some(parse_time(s).with_context(|| format!("bad event_time {s:?}"))?)
        }
        Some(_) => bail!("event_time must be a string or a number"),
    };
    if l.text.trim().is_empty() {
        bail!("a memory's text must not be empty");
    }
    let m = NewMemory {
        text: l.text,
        source: l.source,
        agent: l.agent,
        session: l.session,
        tags: l.tags,
        origin: l.path.map(|path| Origin {
            path,
            start_line: l.start_line.unwrap_or(1),
            end_line: l.end_line.or(l.start_line).unwrap_or(1),
        }),
        event_time,
        importance: l.importance,
        embedding: l.embedding,
    };
    // Checked here as well as by the store, so that the error names this line rather than its batch.
    clawhdf5_memory::validate::new_memory(&m)?;
    if let Some(v) = &m.embedding {
        if v.iter().any(|x| !x.is_finite()) {
            bail!("the embedding holds NaN or infinity");
        }
        let d = *dim.get_or_insert(v.len());
        if d != v.len() {
            bail!(
                "the embedding has {} dimensions where {d} are expected (the store's, or the file's first \
                 embedding's)",
                v.len()
            );
        }
    }
    Ok(Some(m))
}

pub fn import(a: ImportArgs) -> anyhow::Result<()> {
    let reader: Box<dyn BufRead> = if a.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(&a.file)
            .with_context(|| format!("cannot open {}", a.file.display()))?;
        Box::new(std::io::BufReader::new(f))
    };
    let total = if a.file.as_os_str() == "-" {
        None
    } else {
        std::fs::metadata(&a.file).ok().map(|m| m.len())
    };
    let mut store = Store::open_with(
        &a.store.store,
        clawhdf5_memory::StoreOptions {
            durability: clawhdf5_memory::Durability::None,
            ..a.write.store_options()?
        },
    )?;
    let bar = match (a.quiet, total) {
        (false, Some(t)) => indicatif::ProgressBar::new(t),
        (false, None) => indicatif::ProgressBar::new_spinner(),
        (true, _) => indicatif::ProgressBar::hidden(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} importing [{bar:30}] {bytes}/{total_bytes} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (mut added, mut dup, mut skipped) = (0usize, 0usize, 0usize);
    // Memories go in batches: one log write each and, with an embedder, one embedding batch.
    const BATCH: usize = 256;
    let mut batch: Vec<NewMemory> = Vec::with_capacity(BATCH);
    let mut first_line = 0usize;
    // The embeddings' dimension: the store's, else the first line's that brings one.
    let mut dim = store.config().embedding_dim.map(|d| d as usize);
    let mut flush = |batch: &mut Vec<NewMemory>, first: usize, last: usize| -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        for out in store.save_batch(std::mem::take(batch)).with_context(|| {
            format!("lines {first}-{last} (none of them saved; the lines before them are imported)")
        })? {
            if out.deduplicated {
                dup += 1;
            } else {
                added += 1;
            }
        }
        Ok(())
    };
    let mut last_line = 0usize;
    let mut bad: Option<anyhow::Error> = None;
    for (i, line) in reader.lines().enumerate() {
        let n = i + 1;
        let parsed = match line {
            Err(e) => Err(anyhow::Error::from(e)),
            Ok(line) => {
                bar.inc(line.len() as u64 + 1);
                if line.trim().is_empty() {
                    continue;
                }
                import_line(&line, &mut dim)
            }
        };
        let memory = match parsed {
            Ok(Some(m)) => m,
            Ok(None) => {
                skipped += 1;
                continue;
            }
            Err(e) => {
                // Everything before the bad line goes in (and the store is closed durably below), so that
                // what the error says holds.
                bad = Some(match flush(&mut batch, first_line, last_line) {
                    Err(f) => f,
                    Ok(()) => e.context(format!(
                        "line {n} (the lines before it are imported; importing the file again once it is \
                         mended skips them as duplicates)"
                    )),
                });
                break;
            }
        };
        if batch.is_empty() {
            first_line = n;
        }
        last_line = n;
        batch.push(memory);
        if batch.len() == BATCH {
            if let Err(e) = flush(&mut batch, first_line, last_line) {
                bad = Some(e);
                break;
            }
        }
    }
    if bad.is_none() {
        bad = flush(&mut batch, first_line, last_line).err();
    }
    bar.finish_and_clear();
    super::close_durable(store);
    if let Some(e) = bad {
        return Err(e);
    }
    if a.json {
        outln!(
            "{}",
            serde_json::json!({"imported": added, "duplicates": dup, "forgotten_skipped": skipped})
        )?;
    } else {
        outln!("imported {added} memories ({dup} duplicates, {skipped} forgotten skipped)")?;
    }
    Ok(())
}
