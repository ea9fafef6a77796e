//! Throughput benchmark of the local all-MiniLM-L6-v2 embedder on LoCoMo turns.
//!
//! Reads the first N turns of `shared/datasets/locomo/*.json` (files by name, sessions in order),
//! embeds them in calls of `--batch` texts and prints sentences per second. `--dump-texts` writes the
//! exact texts used as a JSON array so a peer (sentence-transformers) can embed the same ones. `--join N`
//! makes each text of N consecutive turns (long texts: 20 turns are about 400 tokens).
//! See scripts/bench/embed_compare.sh.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use clawhdf5_embed::{Embedder, LocalBackend, LocalConfig, LocalMiniLm};

#[derive(Parser)]
#[command(about = "Embedding throughput on LoCoMo turns")]
struct Args {
    /// Folder of LoCoMo conversation files.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/datasets/locomo"))]
    locomo: PathBuf,
    /// Number of turns to embed.
    #[arg(long, default_value_t = 5000)]
    n: usize,
    /// Texts per embed_batch call.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Forward pass: native, candle or candle-cuda (default: $CLAWHDF5_EMBED_BACKEND, else native).
    #[arg(long)]
    backend: Option<LocalBackend>,
    /// Model folder (default: CLAWHDF5_MODEL_DIR, then the cache).
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Sort all texts by token count before batching, as sentence-transformers' encode() does.
    #[arg(long)]
    sorted: bool,
    /// Timed passes over the texts (the best is reported).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Write the texts used as a JSON array to this file.
    #[arg(long)]
    dump_texts: Option<PathBuf>,
    /// Make each text of this many consecutive turns (joined by a space): long texts, such as a workspace
    /// sync's chunks, instead of one turn each.
    #[arg(long, default_value_t = 1)]
    join: usize,
}

fn locomo_turns(dir: &Path, n: usize) -> Result<Vec<String>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))?;
        let conv = doc.get("conversation").unwrap_or(&doc);
        let Some(obj) = conv.as_object() else {
            continue;
        };
        let mut sessions: Vec<(usize, &serde_json::Value)> = obj
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v)))
            .collect();
        sessions.sort_by_key(|(i, _)| *i);
        for (_, turns) in sessions {
            for turn in turns.as_array().into_iter().flatten() {
                if let Some(t) = turn.get("text").and_then(|t| t.as_str()) {
                    out.push(t.to_string());
                    if out.len() == n {
                        return Ok(out);
                    }
                }
            }
        }
    }
    if out.len() < n {
        bail!("only {} turns in {}, wanted {n}", out.len(), dir.display());
    }
    Ok(out)
}

/// CPU time (user + system) used by this process so far, in seconds, from /proc/self/stat
/// (Linux; clock ticks are USER_HZ = 100). `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.batch == 0 || args.repeat == 0 || args.join == 0 {
        bail!("--batch, --repeat and --join must be at least 1");
    }
    let turns = locomo_turns(&args.locomo, args.n.saturating_mul(args.join))?;
    let mut texts: Vec<String> = turns.chunks(args.join).map(|c| c.join(" ")).collect();
    if let Some(p) = &args.dump_texts {
        std::fs::write(p, serde_json::to_string(&texts)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    let backend = match args.backend {
        Some(b) => b,
        None => LocalBackend::from_env()?,
    };
    let model = LocalMiniLm::load_with(&LocalConfig {
        model_dir: args.model_dir.clone(),
        threads: args.threads,
        backend,
    })?;
    if args.sorted {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let counts = model.token_counts(&refs)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
        texts = order.into_iter().map(|i| texts[i].clone()).collect();
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = model.token_counts(&refs)?.iter().sum();
    // Warm-up: one batch.
    model.embed_batch(&refs[..args.batch.min(refs.len())])?;
    let mut best = f64::INFINITY;
    let mut best_cpu = None;
    for _ in 0..args.repeat {
        let cpu_start = cpu_seconds();
        let start = Instant::now();
        let mut produced = 0;
        for chunk in refs.chunks(args.batch) {
            produced += model.embed_batch(chunk)?.len();
        }
        let secs = start.elapsed().as_secs_f64();
        if produced != refs.len() {
            bail!("embedded {produced} of {} texts", refs.len());
        }
        if secs < best {
            best = secs;
            best_cpu = cpu_seconds().zip(cpu_start).map(|(b, a)| b - a);
        }
    }
    let cpu = best_cpu
        .map(|c| {
            format!(
                " ({c:.1} CPU-s, {:.1} sentences per CPU-s)",
                refs.len() as f64 / c
            )
        })
        .unwrap_or_default();
    println!(
        "clawhdf5-embed ({}): {} texts ({} tokens), batch {}, {} threads{}: {:.2} s{cpu}, {:.1} sentences/s",
        model.backend(),
        refs.len(),
        tokens,
        args.batch,
        model.threads(),
        if args.sorted {
            ", sorted by length"
        } else {
            ""
        },
        best,
        refs.len() as f64 / best
    );
    Ok(())
}
