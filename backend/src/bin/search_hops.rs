//! `clawhdf5-search-hops`: where the time of one `search` request of `clawhdf5 serve` goes, piece by piece, on
//! an existing store (benchmark harness; scripts/bench/openclaw_10k.sh runs it).
//!
//! For every query (one per line of --queries), each piece is timed on its own: tokenization, the query
//! embedding (the server's embedder, and one pinned to a single thread for comparison), the store's search
//! given a ready query vector, the full search as the server runs it (embedding included, with the number of
//! forward passes it made), logging access statistics, the JSON of the answer, and the whole request through
//! the JSON-RPC server loop in this process (no pipe, no other process). Prints medians and 95th percentiles.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use clawhdf5_backend::rpc::hit_json;
use clawhdf5_backend::serve::{serve, ServeOptions};
use clawhdf5_backend::HdfBackend;
use clawhdf5_memory::embed::{EmbedError, Embedder, LocalConfig, LocalMiniLm};
use clawhdf5_memory::{now_ms, SearchQuery, StoreOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Debug, Parser)]
#[command(about = "Time the pieces of one clawhdf5 serve search request on an existing store")]
struct Args {
    /// Store directory (as `clawhdf5 serve --dir`).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Agent whose store is searched.
    #[arg(long, default_value = "main")]
    agent: String,
    /// Queries, one per line.
    #[arg(long, value_name = "FILE")]
    queries: PathBuf,
    /// Results per query.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Model folder (default: $CLAWHDF5_MODEL_DIR, then the per-user cache).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Print the figures as one JSON object instead of a Markdown table.
    #[arg(long)]
    json: bool,
    /// Idle this long before each timed piece (and each in-process request), so each starts as a real
    /// request does after a pause, with the machine's threads asleep; 0 times them back to back.
    #[arg(long, default_value_t = 0)]
    gap_ms: u64,
}

/// `--gap-ms`, for [`timed`].
static GAP_MS: AtomicU64 = AtomicU64::new(0);

/// The server's embedder, counting forward passes and their time, and keeping the texts it was asked for.
struct Counted {
    inner: Arc<LocalMiniLm>,
    calls: AtomicU64,
    nanos: AtomicU64,
    texts: Mutex<Vec<String>>,
}

impl Embedder for Counted {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let t = Instant::now();
        let out = self.inner.embed_batch(texts);
        self.nanos
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.texts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(texts.iter().map(|t| t.to_string()));
        out
    }
}

/// Durations of one piece over all queries.
#[derive(Default)]
struct Series {
    name: &'static str,
    what: &'static str,
    ms: Vec<f64>,
}

impl Series {
    fn new(name: &'static str, what: &'static str) -> Self {
        Series {
            name,
            what,
            ms: Vec::new(),
        }
    }

    fn push(&mut self, d: Duration) {
        self.ms.push(d.as_secs_f64() * 1e3);
    }

    fn quantile(&self, p: f64) -> f64 {
        let mut s = self.ms.clone();
        s.sort_by(f64::total_cmp);
        if s.is_empty() {
            return f64::NAN;
        }
        let i = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
        s[i]
    }

    fn min(&self) -> f64 {
        self.ms.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn mean(&self) -> f64 {
        self.ms.iter().sum::<f64>() / self.ms.len().max(1) as f64
    }
}

fn timed<T>(series: &mut Series, f: impl FnOnce() -> T) -> T {
    let gap = GAP_MS.load(Ordering::Relaxed);
    if gap > 0 {
        std::thread::sleep(Duration::from_millis(gap));
    }
    let t = Instant::now();
    let out = f();
    series.push(t.elapsed());
    out
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    GAP_MS.store(a.gap_ms, Ordering::Relaxed);
    let text = std::fs::read_to_string(&a.queries)
        .with_context(|| format!("reading {}", a.queries.display()))?;
    let queries: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if queries.is_empty() {
        bail!("{} holds no queries", a.queries.display());
    }
    let load = |threads: Option<usize>| {
        LocalMiniLm::load_with(&LocalConfig {
            model_dir: a.model_dir.clone(),
            threads,
            ..LocalConfig::default()
        })
        .context("loading the embedding model (clawhdf5 model fetch installs it)")
    };
    let model = Arc::new(load(None)?);
    let single = load(Some(1))?;
    let counted = Arc::new(Counted {
        inner: Arc::clone(&model),
        calls: AtomicU64::new(0),
        nanos: AtomicU64::new(0),
        texts: Mutex::new(Vec::new()),
    });
    let embedder: Arc<dyn Embedder> = counted.clone();
    let opts = StoreOptions {
        embedder: Some(embedder),
        ..StoreOptions::default()
    };
    let backend = Arc::new(HdfBackend::new(&a.dir, None, opts)?);
    let memory = backend.stores().get(&a.agent)?;
    let records = memory.blocking_read().store().len();

    let mut tokenize = Series::new("tokenize", "tokenizer only (server's thread pool)");
    let mut embed = Series::new(
        "embed",
        "query embedding, server's embedder (tokenize + forward pass)",
    );
    let mut embed1 = Series::new("embed_1_thread", "query embedding, one thread");
    let mut given = Series::new(
        "store_search_given_vector",
        "store search with the query vector given (no forward pass)",
    );
    let mut full = Series::new(
        "store_search_full",
        "store search as the server runs it (embedding included)",
    );
    let mut access = Series::new(
        "record_access",
        "logging access statistics of the returned records",
    );
    let mut to_json = Series::new("answer_json", "hits to JSON text");
    let mut inproc = Series::new(
        "serve_in_process",
        "whole request through the JSON-RPC server loop, in process",
    );
    let mut separately = Series::new(
        "search_texts_one_by_one",
        "the texts a full search embeds, one forward pass each",
    );
    let mut together = Series::new(
        "search_texts_one_batch",
        "the same texts in one embed_batch call",
    );
    let mut together1 = Series::new(
        "search_texts_one_batch_1_thread",
        "the same texts in one embed_batch call, one thread",
    );
    let mut passes: Vec<u64> = Vec::new();

    // Warm-up: first-touch of the index pages, thread pools and allocator.
    for q in queries.iter().take(5) {
        let _ = model.embed_one(q)?;
        let _ = single.embed_one(q)?;
        let s = memory.blocking_read();
        let _ = s.search(&SearchQuery::new(*q, a.k), now_ms())?;
    }
    for q in &queries {
        timed(&mut tokenize, || model.tokenize(&[q]))?;
        let vec = timed(&mut embed, || model.embed_one(q))?;
        timed(&mut embed1, || single.embed_one(q))?;
        let s = memory.blocking_read();
        let mut with_vec = SearchQuery::new(*q, a.k);
        with_vec.embedding = Some(vec);
        timed(&mut given, || s.search(&with_vec, now_ms()))?;
        let before = counted.calls.load(Ordering::Relaxed);
        counted
            .texts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let recall = timed(&mut full, || s.search(&SearchQuery::new(*q, a.k), now_ms()))?;
        passes.push(counted.calls.load(Ordering::Relaxed) - before);
        let texts = std::mem::take(&mut *counted.texts.lock().unwrap_or_else(|p| p.into_inner()));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        timed(&mut separately, || {
            refs.iter()
                .map(|t| model.embed_one(t))
                .collect::<Result<Vec<_>, _>>()
        })?;
        timed(&mut together, || model.embed_batch(&refs))?;
        timed(&mut together1, || single.embed_batch(&refs))?;
        let ids: Vec<u64> = recall.hits.iter().map(|h| h.record.id).collect();
        timed(&mut access, || s.store().record_access(&ids))?;
        timed(&mut to_json, || {
            json!({"results": recall.hits.iter().map(|h| {
                hit_json(&clawhdf5_memory::SearchHit {
                    score: h.retrieval_score,
                    keyword_score: h.keyword_score,
                    vector_score: h.vector_score,
                    record: h.record.clone(),
                })
            }).collect::<Vec<_>>(), "mode": "hybrid"})
            .to_string()
        });
    }

    // The server loop in process: requests written to an in-memory pipe one at a time.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let (client, server_io) = tokio::io::duplex(1 << 20);
        let (server_in, server_out) = tokio::io::split(server_io);
        let server = tokio::spawn(serve(
            backend.clone(),
            server_in,
            server_out,
            ServeOptions::default(),
        ));
        let (read, mut write) = tokio::io::split(client);
        let mut lines = BufReader::new(read).lines();
        for (i, q) in queries.iter().enumerate() {
            let req = json!({"jsonrpc": "2.0", "id": i, "method": "search",
                "params": {"agent": a.agent, "query": q, "k": a.k}});
            let line = format!("{req}\n");
            if a.gap_ms > 0 {
                tokio::time::sleep(Duration::from_millis(a.gap_ms)).await;
            }
            let t = Instant::now();
            write.write_all(line.as_bytes()).await?;
            let answer = lines.next_line().await?.context("server closed")?;
            inproc.push(t.elapsed());
            let v: Value = serde_json::from_str(&answer)?;
            if v.get("error").is_some() {
                bail!("search failed: {answer}");
            }
        }
        write.shutdown().await?;
        drop(lines);
        server.await??;
        Ok::<_, anyhow::Error>(())
    })?;

    let series = [
        &tokenize,
        &embed,
        &embed1,
        &separately,
        &together,
        &together1,
        &given,
        &full,
        &access,
        &to_json,
        &inproc,
    ];
    let mean_passes = passes.iter().sum::<u64>() as f64 / passes.len().max(1) as f64;
    if a.json {
        let mut m = serde_json::Map::new();
        for s in series {
            m.insert(
                s.name.into(),
                json!({"p50": s.quantile(0.5), "p95": s.quantile(0.95), "mean": s.mean(), "min": s.min()}),
            );
        }
        let out = json!({
            "records": records,
            "queries": queries.len(),
            "threads": model.threads(),
            "forward_passes_per_search": mean_passes,
            "ms": m,
        });
        println!("{out}");
    } else {
        println!(
            "{} records, {} queries, k {}, embedder threads {}, {} ms idle before each timed piece; forward passes per full search: {mean_passes:.2}",
            records,
            queries.len(),
            a.k,
            model.threads(),
            a.gap_ms
        );
        println!();
        println!("| piece | p50 ms | p95 ms | mean ms | min ms |");
        println!("| --- | ---: | ---: | ---: | ---: |");
        for s in series {
            println!(
                "| {} (`{}`) | {:.2} | {:.2} | {:.2} | {:.2} |",
                s.what,
                s.name,
                s.quantile(0.5),
                s.quantile(0.95),
                s.mean(),
                s.min()
            );
        }
    }
    Ok(())
}
