//! `search-harness`: (a) the HNSW ef sweep through the `ann` crate — recall@10 against exact search and
//! queries per second per `ef`; (b) the end-to-end hybrid table through `Store` at each size: batch ingest,
//! durable saves under group commit, checkpoints, cold index build, open, first query after open and the
//! steady-state latency of hybrid search — each printed beside the goals of issue #6.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use clawhdf5_ann::rng::SplitMix64;
use clawhdf5_ann::{exact_top_k, FlatVectors, Hnsw, HnswParams, Metric, VectorStore};
use clawhdf5_memory::{Store, StoreConfig};
use serde_json::json;

use super::corpus::{Corpus, CorpusRecord};
use super::error::{HarnessError, Result};
use super::ingest::{self, Ingested};
use super::measure::{
    fig, latency, median, met, size_label, thousands, thread_cpu, timed, Latency,
};
use super::probe::{run_probes, write_queries, ProbeQuery, ProbeResult};
use super::report::{HarnessReport, Table};
use super::vectors;

/// Results asked per query.
pub const K: usize = 10;
/// Fresh processes the open and first-query figures are the median of (each is one sample per process).
pub const PROBES: usize = 7;

/// Settings of a `search-harness` run.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// Store sizes of the end-to-end table.
    pub sizes: Vec<usize>,
    /// Seconds-long smoke run (tiny sizes; figures not meaningful).
    pub smoke: bool,
    /// LoCoMo folder the record texts come from.
    pub locomo: PathBuf,
    /// Folder for the stores (a temporary folder when absent).
    pub work_dir: Option<PathBuf>,
    /// Steady-state hybrid queries per size.
    pub queries: usize,
    /// Vectors of the ef sweep (0: skip the sweep).
    pub sweep_n: usize,
    /// Queries of the ef sweep.
    pub sweep_queries: usize,
    /// `ef` values of the sweep.
    pub efs: Vec<usize>,
    /// Writer-thread counts of the group-commit measurement (one run each).
    pub writers: Vec<usize>,
    /// Durable saves of each group-commit run (all writers together).
    pub group_saves: usize,
    /// Runs of each group-commit way and writer count (their median is reported).
    pub group_rounds: usize,
    /// Batch ingests of each size into fresh stores (their median is reported).
    pub ingest_rounds: usize,
    /// Sequential durable saves (one writer).
    pub single_saves: usize,
}

impl SearchOptions {
    /// The smoke settings.
    pub fn smoke(locomo: PathBuf) -> SearchOptions {
        SearchOptions {
            sizes: vec![300],
            smoke: true,
            locomo,
            work_dir: None,
            queries: 50,
            sweep_n: 500,
            sweep_queries: 20,
            efs: vec![10, 32],
            writers: vec![4],
            group_saves: 64,
            group_rounds: 1,
            ingest_rounds: 2,
            single_saves: 16,
        }
    }
}

/// One row of the ef sweep.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SweepRow {
    /// Index variant.
    pub variant: String,
    /// Candidate list size.
    pub ef: usize,
    /// Mean recall@10 against exact search.
    pub recall: f64,
    /// Queries per second, one thread, wall clock.
    pub qps: f64,
    /// Queries per second of thread CPU time (robust to a loaded machine).
    pub qps_cpu: Option<f64>,
    /// Build time of the variant's graph (s).
    pub build_s: f64,
}

/// The ef sweep: one graph per variant over `n` vectors, `nq` fresh queries, recall@10 and QPS per ef.
pub fn ef_sweep(n: usize, nq: usize, efs: &[usize], min_seconds: f64) -> Result<Vec<SweepRow>> {
    let base = vectors::base(n);
    let qs = vectors::fresh_queries(nq);
    let truth: Vec<Vec<u32>> = (0..nq as u32)
        .map(|i| {
            exact_top_k(&base, qs.vector(i), K, Metric::Cosine, None)
                .map(|r| r.into_iter().map(|x| x.id).collect())
        })
        .collect::<std::result::Result<_, _>>()?;
    let mut rows = Vec::new();
    for (variant, quantize) in [
        ("int8 traversal + f32 re-score (the store's setting)", true),
        ("f32", false),
    ] {
        let params = HnswParams {
            quantize,
            ..HnswParams::default()
        };
        let (h, build_s) = timed(|| Hnsw::build(&base, params));
        let h = h?;
        for &ef in efs {
            let mut found = 0usize;
            let mut passes = 0usize;
            let cpu0 = thread_cpu();
            let (res, wall) = timed(|| -> Result<()> {
                let t = std::time::Instant::now();
                loop {
                    for (i, gold) in truth.iter().enumerate() {
                        let r = h.search(&base, qs.vector(i as u32), K, ef, None)?;
                        if passes == 0 {
                            found += r.iter().filter(|x| gold.contains(&x.id)).count();
                        }
                    }
                    passes += 1;
                    if t.elapsed().as_secs_f64() >= min_seconds {
                        return Ok(());
                    }
                }
            });
            res?;
            let cpu = match (cpu0, thread_cpu()) {
                (Some(a), Some(b)) => Some((b - a).as_secs_f64()),
                _ => None,
            };
            let total = (nq * passes) as f64;
            rows.push(SweepRow {
                variant: variant.into(),
                ef,
                recall: found as f64 / (nq * K).max(1) as f64,
                qps: total / wall.max(1e-9),
                qps_cpu: cpu.filter(|c| *c > 0.0).map(|c| total / c),
                build_s,
            });
        }
    }
    Ok(rows)
}

/// Everything measured at one size.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SizeResult {
    /// Records asked for.
    pub size: usize,
    /// The batch ingest of median rate.
    pub ingest: Ingested,
    /// Records per second of every batch ingest (`ingest_rounds` fresh stores), ascending.
    pub ingest_rates: Vec<f64>,
    /// Full checkpoint after the batch (ms).
    pub checkpoint_full_ms: f64,
    /// Group-commit runs.
    pub group: Vec<GroupCommit>,
    /// Background folds of new rows into the vector graph taken in while the durable saves ran.
    pub folds: FoldWork,
    /// Sequential durable saves, one writer (each its own fsync).
    pub single_save: Latency,
    /// Checkpoint of the saves made after the full checkpoint (ms).
    pub checkpoint_incremental_ms: f64,
    /// Saves folded by that checkpoint.
    pub checkpoint_incremental_saves: usize,
    /// True when the store searches vectors through its HNSW graph (else an exact scan).
    pub store_uses_hnsw: bool,
    /// Building the HNSW graph over all the store's vectors from scratch, the store's parameters (s).
    pub cold_build_s: f64,
    /// Bytes of the HDF5 file after the last checkpoint.
    pub file_bytes: u64,
    /// Reopen and queries, in a fresh process.
    pub probe: ProbeResult,
}

/// The group-commit runs of one writer count: the median of each way, and every run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GroupCommit {
    /// Writer threads.
    pub writers: usize,
    /// Durable saves of each run, all writers together.
    pub saves: usize,
    /// Wall time per save (µs, amortised): writers sharing the store behind a lock.
    pub us_per_save: f64,
    /// Wall time per save (µs, amortised): writers handing their saves to one committer thread.
    pub committer_us_per_save: f64,
    /// Wall time per save (µs, amortised): async tasks saving as `clawhdf5 serve` does (tokenized, saved under
    /// the store's lock on the task, durability awaited).
    pub async_us_per_save: f64,
    /// Every run of each way, in order: behind a lock, one committer, async tasks.
    pub runs: [Vec<f64>; 3],
    /// What the log did in each of those runs.
    pub logs: [Vec<LogRun>; 3],
}

/// Background work on the vector graph during the durable saves (`Store::index_stats`): the jobs taken in
/// (one still running at the end is not counted).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct FoldWork {
    /// Durable saves made meanwhile.
    pub saves: usize,
    /// Jobs taken in.
    pub jobs: u64,
    /// Rows they placed in the graph.
    pub rows: u64,
    /// CPU seconds their threads spent.
    pub cpu_s: f64,
}

/// The write-ahead log and the CPU during one run of durable saves.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct LogRun {
    /// Saves made durable per log write (one write and one disk flush per sync round).
    pub saves_per_write: f64,
    /// Share of the run's wall time the log spent writing and waiting for the disk (0–1).
    pub busy: f64,
    /// CPU time of the whole process per save (µs): the savers, the log's syncer and the background fold
    /// of new rows into the vector graph.
    pub cpu_us_per_save: f64,
}

/// Runs `f` (a run of `saves` durable saves that takes the store and gives it back) and reads what the log did.
fn with_log_run(
    store: Store,
    saves: usize,
    f: impl FnOnce(Store) -> Result<(Store, f64)>,
) -> Result<(Store, f64, LogRun)> {
    let before = store.log_stats();
    let cpu0 = super::measure::process_cpu();
    let started = std::time::Instant::now();
    let (store, us) = f(store)?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = match (cpu0, super::measure::process_cpu()) {
        (Some(a), Some(b)) => b.saturating_sub(a).as_secs_f64(),
        _ => f64::NAN,
    };
    let d = store.log_stats().since(&before);
    let n = saves.max(1) as f64;
    let run = LogRun {
        saves_per_write: d.entries_per_sync(),
        busy: if wall > 0.0 {
            d.busy.as_secs_f64() / wall
        } else {
            0.0
        },
        cpu_us_per_save: cpu * 1e6 / n,
    };
    Ok((store, us, run))
}

impl GroupCommit {
    /// `median (N writers|tasks; min–max)` of one way.
    fn cell(&self, way: usize, unit: &str) -> String {
        let med = [
            self.us_per_save,
            self.committer_us_per_save,
            self.async_us_per_save,
        ][way];
        let runs = &self.runs[way];
        if runs.len() < 2 {
            return format!("{} ({} {unit})", fig(med), self.writers);
        }
        let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = runs.iter().copied().fold(0.0, f64::max);
        format!(
            "{} ({} {unit}; {}–{})",
            fig(med),
            self.writers,
            fig(lo),
            fig(hi)
        )
    }
}

impl GroupCommit {
    /// `saves per write / busy % / CPU µs (N unit)` of one way: medians over its runs.
    fn log_cell(&self, way: usize, unit: &str) -> String {
        let runs = &self.logs[way];
        let med = |f: fn(&LogRun) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        format!(
            "{:.1} / {:.0} % / {} ({} {unit})",
            med(|l| l.saves_per_write),
            100.0 * med(|l| l.busy),
            fig(med(|l| l.cpu_us_per_save)),
            self.writers
        )
    }
}

/// One cell per writer count of `r`'s group-commit runs, joined.
fn per_writer_count(r: &SizeResult, cell: impl Fn(&GroupCommit) -> String) -> String {
    r.group.iter().map(cell).collect::<Vec<_>>().join("; ")
}

/// The next record a writer thread saves, with its vector; `None` once all are taken.
fn take_next(
    next: &std::sync::atomic::AtomicUsize,
    records: &[CorpusRecord],
    vecs: &FlatVectors,
    first_vec: usize,
) -> Option<clawhdf5_memory::NewMemory> {
    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let r = records.get(i)?;
    Some(ingest::memory(r, vecs.vector((first_vec + i) as u32)))
}

/// Durable saves by `writers` threads sharing the store behind a lock; each waits for durability outside the
/// lock, so concurrent saves share fsyncs (group commit). Returns µs of wall time per save.
fn group_commit(
    store: Store,
    records: &[CorpusRecord],
    vecs: &FlatVectors,
    first_vec: usize,
    writers: usize,
) -> Result<(Store, f64)> {
    let shared = Mutex::new(store);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (res, wall) = timed(|| {
        std::thread::scope(|scope| -> Result<()> {
            let handles: Vec<_> = (0..writers.max(1))
                .map(|_| {
                    scope.spawn(|| -> Result<()> {
                        while let Some(m) = take_next(&next, records, vecs, first_vec) {
                            let ticket = {
                                let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
                                s.save_deferred(m)?.1
                            };
                            if let Some(t) = ticket {
                                t.wait()?;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join()
                    .map_err(|_| HarnessError::Probe("a writer thread panicked".into()))??;
            }
            Ok(())
        })
    });
    res?;
    let store = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok((store, wall * 1e6 / records.len().max(1) as f64))
}

/// Durable saves by `writers` threads that hand each save to one committer thread and wait for its answer
/// (what a server does with concurrent requests): the committer takes every request waiting, saves them
/// with [`Store::save_each`] (one write, one fsync) and answers each. Returns µs of wall time per save.
fn committer(
    mut store: Store,
    records: &[CorpusRecord],
    vecs: &FlatVectors,
    first_vec: usize,
    writers: usize,
) -> Result<(Store, f64)> {
    type Reply = std::sync::mpsc::SyncSender<std::result::Result<(), String>>;
    let (tx, rx) = std::sync::mpsc::channel::<(clawhdf5_memory::NewMemory, Reply)>();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (res, wall) = timed(|| {
        std::thread::scope(|scope| -> Result<Store> {
            let server = scope.spawn(move || -> Result<Store> {
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        batch.push(more);
                    }
                    let (items, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
                    let outcomes = store.save_each(items)?;
                    for (out, reply) in outcomes.into_iter().zip(replies) {
                        let _ = reply.send(out.map(|_| ()).map_err(|e| e.to_string()));
                    }
                }
                Ok(store)
            });
            let handles: Vec<_> = (0..writers.max(1))
                .map(|_| {
                    let tx = tx.clone();
                    let next = &next;
                    scope.spawn(move || -> Result<()> {
                        let (reply, answer) = std::sync::mpsc::sync_channel(1);
                        while let Some(m) = take_next(next, records, vecs, first_vec) {
                            tx.send((m, reply.clone()))
                                .map_err(|_| HarnessError::Probe("the committer stopped".into()))?;
                            answer
                                .recv()
                                .map_err(|_| HarnessError::Probe("no answer".into()))?
                                .map_err(HarnessError::Probe)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            drop(tx);
            for h in handles {
                h.join()
                    .map_err(|_| HarnessError::Probe("a writer thread panicked".into()))??;
            }
            server
                .join()
                .map_err(|_| HarnessError::Probe("the committer panicked".into()))?
        })
    });
    Ok((res?, wall * 1e6 / records.len().max(1) as f64))
}

/// Durable saves by `tasks` concurrent async tasks, the way the backend serves concurrent save requests of
/// memories that bring their embeddings: each task tokenizes its text ([`clawhdf5_memory::SaveKit::prepare`]),
/// awaits the store's lock (tokio's `RwLock`, as the backend holds each agent's store), saves
/// ([`Store::save_prepared`]) and then awaits
/// [`clawhdf5_memory::wal::DurableTicket::durable`], so waiting for the shared fsync holds no thread. The
/// runtime has one worker per core, like `clawhdf5 serve`. Returns µs of wall time per save.
fn async_tasks(
    store: Store,
    records: &[CorpusRecord],
    vecs: &FlatVectors,
    first_vec: usize,
    tasks: usize,
) -> Result<(Store, f64)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .build()
        .map_err(|e| HarnessError::Probe(format!("cannot start a runtime: {e}")))?;
    let kit = store.save_kit();
    let shared = std::sync::Arc::new(tokio::sync::RwLock::new(store));
    let items: Vec<clawhdf5_memory::NewMemory> = records
        .iter()
        .enumerate()
        .map(|(i, r)| ingest::memory(r, vecs.vector((first_vec + i) as u32)))
        .collect();
    let queue = std::sync::Arc::new(Mutex::new(items.into_iter()));
    let (res, wall) = timed(|| {
        rt.block_on(async {
            let workers: Vec<_> = (0..tasks.max(1))
                .map(|_| {
                    let shared = std::sync::Arc::clone(&shared);
                    let queue = std::sync::Arc::clone(&queue);
                    let kit = kit.clone();
                    tokio::spawn(async move {
                        loop {
                            let Some(m) = queue.lock().unwrap_or_else(|p| p.into_inner()).next()
                            else {
                                return Ok::<(), HarnessError>(());
                            };
                            // As the backend saves a memory that brings its embedding: tokenized, then
                            // saved on this task, the lock awaited.
                            let p = kit.prepare(m)?;
                            let ticket = shared.write().await.save_prepared(p)?.1;
                            if let Some(t) = ticket {
                                t.durable().await?;
                            }
                        }
                    })
                })
                .collect();
            for w in workers {
                w.await
                    .map_err(|e| HarnessError::Probe(format!("a saving task failed: {e}")))??;
            }
            Ok::<(), HarnessError>(())
        })
    });
    res?;
    drop(rt);
    let store = std::sync::Arc::try_unwrap(shared)
        .map_err(|_| HarnessError::Probe("a saving task still holds the store".into()))?
        .into_inner();
    Ok((store, wall * 1e6 / records.len().max(1) as f64))
}

/// Queries: LoCoMo question texts, each with a vector near a random stored one.
fn make_queries(
    corpus: &Corpus,
    vecs: &FlatVectors,
    n_rows: usize,
    count: usize,
) -> Vec<ProbeQuery> {
    let mut rng = SplitMix64::new(7);
    (0..count.max(1))
        .map(|i| {
            let row = rng.below(n_rows as u64) as u32;
            ProbeQuery {
                text: corpus.question(i).to_string(),
                embedding: vectors::near(vecs.vector(row), 0.3, &mut rng),
            }
        })
        .collect()
}

/// Measure one size in `dir`.
pub fn measure_size(
    corpus: &Corpus,
    size: usize,
    o: &SearchOptions,
    dir: &Path,
) -> Result<SizeResult> {
    let extra = 3 * o.group_saves * o.group_rounds.max(1) * o.writers.len() + o.single_saves;
    let recs = corpus.records(size + extra)?;
    let vecs = vectors::base(size + extra);
    let path = dir.join(format!("search-{size}.h5"));
    eprintln!("search-harness: {size} records: batch ingest");
    // Every round but the last ingests into a throwaway store; the last one's store is measured below.
    let rounds = o.ingest_rounds.max(1);
    let mut ingests = Vec::with_capacity(rounds);
    for round in 1..rounds {
        let spare = dir.join(format!("search-{size}-ingest-{round}.h5"));
        let mut s = ingest::fresh_store(&spare)?;
        ingests.push(ingest::batch(&mut s, &recs[..size], &vecs)?);
        s.close()?;
        ingest::remove_store(&spare);
    }
    let mut store = ingest::fresh_store(&path)?;
    ingests.push(ingest::batch(&mut store, &recs[..size], &vecs)?);
    ingests.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
    let ingest_rates: Vec<f64> = ingests.iter().map(Ingested::rate).collect();
    let ing = ingests.swap_remove(ingests.len() / 2);
    let (r, cp_full) = timed(|| store.checkpoint());
    r?;
    eprintln!("search-harness: {size} records: cold index build");
    let uses_hnsw = store.vectors().rows() >= store.config().exact_search_threshold as usize;
    // The store's own graph: built here, persisted by close, loaded by the reopened store.
    let (r, cold) = timed(|| store.build_index());
    r?;
    let n_rows = store.vectors().rows();
    store.close()?;
    let file_bytes = std::fs::metadata(&path)
        .map_err(super::error::io_at(&path))?
        .len();
    // Durable saves go to a copy, so the store reopened below holds exactly `size` records.
    let scratch = dir.join(format!("search-{size}-saves.h5"));
    std::fs::copy(&path, &scratch).map_err(super::error::io_at(&scratch))?;
    let mut store = ingest::reopen(&scratch)?;
    eprintln!("search-harness: {size} records: durable saves (on a copy)");
    let index_before = store.index_stats();
    let mut group = Vec::new();
    let mut at = size;
    let n = o.group_saves;
    for &w in &o.writers {
        // The three ways take turns, so a slow moment of the machine falls on one run, not on one way.
        let mut runs: [Vec<f64>; 3] = Default::default();
        let mut logs: [Vec<LogRun>; 3] = Default::default();
        for _ in 0..o.group_rounds.max(1) {
            let (s, us, l0) = with_log_run(store, n, |s| {
                group_commit(s, &recs[at..at + n], &vecs, at, w)
            })?;
            at += n;
            let (s, committer_us, l1) =
                with_log_run(s, n, |s| committer(s, &recs[at..at + n], &vecs, at, w))?;
            at += n;
            let (s, async_us, l2) =
                with_log_run(s, n, |s| async_tasks(s, &recs[at..at + n], &vecs, at, w))?;
            at += n;
            store = s;
            for (r, v) in runs.iter_mut().zip([us, committer_us, async_us]) {
                r.push(v);
            }
            for (l, v) in logs.iter_mut().zip([l0, l1, l2]) {
                l.push(v);
            }
        }
        group.push(GroupCommit {
            writers: w,
            saves: n,
            us_per_save: median(&runs[0]),
            committer_us_per_save: median(&runs[1]),
            async_us_per_save: median(&runs[2]),
            runs,
            logs,
        });
    }
    let mut singles = Vec::with_capacity(o.single_saves);
    for (i, rec) in recs.iter().enumerate().skip(at) {
        let m = ingest::memory(rec, vecs.vector(i as u32));
        let (r, t) = timed(|| store.save(m));
        r?;
        singles.push(t);
    }
    let single = latency(&singles, singles.iter().sum());
    let index_work = store.index_stats().since(&index_before);
    let folds = FoldWork {
        saves: at - size + singles.len(),
        jobs: index_work.jobs,
        rows: index_work.rows,
        cpu_s: index_work.cpu.as_secs_f64(),
    };
    let (r, cp_incr) = timed(|| store.checkpoint());
    r?;
    drop(store);
    ingest::remove_store(&scratch);
    let qpath = dir.join(format!("queries-{size}.json"));
    write_queries(
        &qpath,
        &make_queries(corpus, &vecs, n_rows.min(vecs.len()), o.queries.min(2000)),
    )?;
    eprintln!("search-harness: {size} records: reopen and query (fresh process)");
    let probe = run_probes(&path, &qpath, o.queries, K, PROBES)?;
    Ok(SizeResult {
        size,
        ingest: ing,
        ingest_rates,
        checkpoint_full_ms: cp_full * 1e3,
        group,
        folds,
        single_save: single,
        checkpoint_incremental_ms: cp_incr * 1e3,
        checkpoint_incremental_saves: extra,
        store_uses_hnsw: uses_hnsw,
        cold_build_s: cold,
        file_bytes,
        probe,
    })
}

fn sweep_table(n: usize, nq: usize, rows: &[SweepRow]) -> Table {
    let mut t = Table::new(
        format!(
            "HNSW ef sweep — {} vectors, {nq} queries, k = {K}, M = 16, ef_construction = 200",
            thousands(n as u64)
        ),
        &[
            "variant",
            "build (s)",
            "ef",
            "recall@10",
            "QPS (1 thread, wall)",
            "QPS (1 thread, CPU time)",
        ],
    );
    for r in rows {
        t.row(vec![
            r.variant.clone(),
            fig(r.build_s),
            r.ef.to_string(),
            format!("{:.3}", r.recall),
            fig(r.qps),
            r.qps_cpu.map_or("n/a".into(), fig),
        ]);
    }
    t.notes.push(format!(
        "Vectors: {}; queries drawn from the same distribution with another seed; recall against \
         `exact_top_k`. Build is parallel (all cores); queries run one at a time on one thread.",
        vectors::describe()
    ));
    t
}

fn e2e_table(results: &[SizeResult], threshold: u32) -> Table {
    // (runs, saves per run) of the group-commit measurement.
    let group_runs = results
        .iter()
        .flat_map(|r| r.group.first())
        .map(|g| (g.runs[2].len(), g.saves))
        .next()
        .unwrap_or((0, 0));
    let mut header = vec!["measure".to_string()];
    header.extend(results.iter().map(|r| size_label(r.size)));
    let mut t = Table {
        title: "End-to-end hybrid search through `Store`".into(),
        header,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    let mut row = |label: &str, f: &dyn Fn(&SizeResult) -> String| {
        let mut cells = vec![label.to_string()];
        cells.extend(results.iter().map(f));
        t.rows.push(cells);
    };
    row("records after reopen", &|r| {
        thousands(r.probe.records as u64)
    });
    row("batch ingest, vectors given (records/s)", &|r| match (
        r.ingest_rates.first(),
        r.ingest_rates.last(),
    ) {
        (Some(lo), Some(hi)) if r.ingest_rates.len() > 1 => format!(
            "{} ({} runs; {}–{})",
            fig(r.ingest.rate()),
            r.ingest_rates.len(),
            fig(*lo),
            fig(*hi)
        ),
        _ => fig(r.ingest.rate()),
    });
    row("batch ingest per CPU-second of the saving thread", &|r| {
        r.ingest.cpu_rate().map_or("n/a".into(), fig)
    });
    for (way, (label, unit)) in [
        (
            "durable save, group commit, writers share the store behind a lock (µs/save, amortised)",
            "writers",
        ),
        (
            "durable save, group commit, writers hand saves to one committer (µs/save, amortised)",
            "writers",
        ),
        (
            "durable save, group commit, async tasks as `clawhdf5 serve` saves (µs/save, amortised)",
            "tasks",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        row(label, &|r| per_writer_count(r, |g| g.cell(way, unit)));
    }
    row(
        "async tasks: saves per log write / share of the time the log writes / process CPU per save (µs)",
        &|r| per_writer_count(r, |g| g.log_cell(2, "tasks")),
    );
    row(
        "background graph folds during the durable saves: jobs / rows placed / CPU per row placed (µs)",
        &|r| {
            let f = &r.folds;
            if f.rows == 0 {
                return format!("none taken in ({} saves)", f.saves);
            }
            format!(
                "{} / {} / {} ({} saves)",
                f.jobs,
                f.rows,
                fig(f.cpu_s * 1e6 / f.rows as f64),
                f.saves
            )
        },
    );
    row("durable save, one writer, p50 (µs)", &|r| {
        fig(r.single_save.p50_ms * 1e3)
    });
    row("checkpoint after the batch (ms)", &|r| {
        fig(r.checkpoint_full_ms)
    });
    row("checkpoint of the saves since (ms)", &|r| {
        format!(
            "{} ({} saves)",
            fig(r.checkpoint_incremental_ms),
            r.checkpoint_incremental_saves
        )
    });
    row("vector search in the store", &|r| {
        if r.store_uses_hnsw {
            "HNSW, int8 + re-score".into()
        } else {
            "exact scan".into()
        }
    });
    row("cold index build, `Store::build_index` (s)", &|r| {
        if r.store_uses_hnsw {
            fig(r.cold_build_s)
        } else {
            "— (exact scan)".into()
        }
    });
    row("file size (MiB)", &|r| fig(r.file_bytes as f64 / 1048576.0));
    row("open, fresh process (ms; median of 7 processes)", &|r| {
        fig(r.probe.open_ms)
    });
    row(
        "first hybrid query after open (ms; median of 7 processes)",
        &|r| fig(r.probe.first_query_ms),
    );
    row(
        "the same query at steady state (ms; median, re-run every 25th query)",
        &|r| fig(r.probe.first_query_warm_ms),
    );
    row("hybrid p50 (ms)", &|r| fig(r.probe.steady.p50_ms));
    row("hybrid p99 (ms)", &|r| fig(r.probe.steady.p99_ms));
    row("hybrid QPS (1 thread)", &|r| fig(r.probe.steady.per_s));
    row("keyword-only p50 / vector-only p50 (ms)", &|r| {
        format!(
            "{} / {}",
            fig(r.probe.keyword.p50_ms),
            fig(r.probe.vector.p50_ms)
        )
    });
    row("hybrid CPU per query (µs)", &|r| {
        r.probe.cpu_us_per_query.map_or("n/a".into(), fig)
    });
    row("first query / the same query at steady state", &|r| {
        format!(
            "{:.2}×",
            r.probe.first_query_ms / r.probe.first_query_warm_ms.max(1e-9)
        )
    });
    row(
        "the same query asked first after the steady stream (ms; median of 7 other processes)",
        &|r| r.probe.first_query_late_ms.map_or("—".into(), fig),
    );
    row(
        "first query after open / the same query asked first at steady state",
        &|r| {
            r.probe.first_query_late_ms.map_or("—".into(), |l| {
                format!("{:.2}×", r.probe.first_query_ms / l.max(1e-9))
            })
        },
    );
    row("first query / p50 of all queries", &|r| {
        format!(
            "{:.2}×",
            r.probe.first_query_ms / r.probe.steady.p50_ms.max(1e-9)
        )
    });
    t.notes.push(format!(
        "Records: two LoCoMo turns each (speaker-prefixed, paired so every record is distinct), with the \
         conversation's session id and date. Vectors: {}. Queries: LoCoMo question texts, each with a vector \
         near a random stored one (noise 0.3), hybrid mode (0.4 vector / 0.6 keyword), k = {K}.",
        vectors::describe()
    ));
    t.notes.push(format!(
        "Batch ingest = `Store::save_batch` in batches of 10,000 (one log write and one fsync per batch; the \
         vector graph is not touched) into a fresh store, repeated `--ingest-rounds` times (the row gives the \
         median run and the range; the per-CPU-second row is the median run's); the store's durability mode is \
         every-save. Group commit, behind a lock \
         = the writers share the store behind a mutex and each waits for its fsync outside it; group commit, \
         one committer = the writers send their saves to one thread that saves everything waiting with \
         `Store::save_each` (one log write, one fsync) and answers each writer, as a server does with \
         concurrent requests; group commit, async tasks = as many tokio tasks, each tokenizing its memory \
         (`SaveKit::prepare`), awaiting the store's lock, saving (`save_prepared`) and then awaiting `DurableTicket::durable` (the log's syncer thread \
         fsyncs for every waiting task at once), which is how `clawhdf5 serve` and `clawhdf5 mcp` handle \
         concurrent saves; all three are wall time of all the saves divided by their number. For the async tasks the \
         next row gives, as medians over the runs, how many saves shared each log write (`Store::log_stats`: one \
         write and one disk flush per sync round), the share of the run's wall time the log spent writing and \
         waiting for the disk, and the CPU time of the whole process per save (the tasks, the log's syncer \
         thread, and the background job that folds new rows into the vector graph). The folds row counts the \
         background jobs taken in while all the durable saves ran (`Store::index_stats`; one still running at \
         the end is not counted), the rows they placed in the graph and their threads' CPU time per row. For \
         each writer count \
         the three ways take turns, {} runs of {} saves each, and the table gives the median run with the \
         range. One writer = `save`, one \
         fsync per save. Durable saves and the second checkpoint run on a copy of the store, so the reopened \
         store holds exactly the batch. The store searches vectors exactly below {} vectors (its `exact_search_threshold`) \
         and through its HNSW graph above; the cold build row times `Store::build_index`, which builds the \
         store's graph over every vector (close then persists it, and the reopened store loads it). Open, first \
         query and the steady queries run in a fresh process (`harness-probe`) with the page cache warm; open \
         and the first query are the median of {PROBES} such processes, the other figures come from the first. \
         {PROBES} more processes (`harness-probe --late`, run after those) leave the first query out of the steady \
         stream and ask it once after it: what that query costs the first time it is asked in a warm process, \
         as any new question is.",
        group_runs.0,
        group_runs.1,
        thousands(u64::from(threshold))
    ));
    t
}

/// Goal rows: (goal, size, measured, met).
fn goals_table(results: &[SizeResult]) -> Table {
    let mut t = Table::new(
        "Goals of issue #6 (this machine, 384-dim)",
        &["goal", "size", "measured", "status"],
    );
    let at = |n: usize| results.iter().find(|r| r.size == n);
    for (n, limit) in [(10_000usize, 0.5f64), (100_000, 5.0)] {
        let goal = format!("hybrid search p50 ≤ {limit} ms");
        match at(n) {
            Some(r) => t.row(vec![
                goal,
                size_label(n),
                format!("{} ms", fig(r.probe.steady.p50_ms)),
                met(r.probe.steady.p50_ms <= limit),
            ]),
            None => t.row(vec![goal, size_label(n), "—".into(), "not run".into()]),
        }
    }
    for r in results {
        let ratio = r.probe.first_query_ms / r.probe.first_query_warm_ms.max(1e-9);
        t.row(vec![
            "first query after open ≤ 1.2× the same query at steady state".into(),
            size_label(r.size),
            format!("{ratio:.2}×"),
            met(ratio <= 1.2),
        ]);
    }
    match at(100_000) {
        Some(r) => t.row(vec![
            "open a 100K store ≤ 300 ms".into(),
            "100K".into(),
            format!("{} ms", fig(r.probe.open_ms)),
            met(r.probe.open_ms <= 300.0),
        ]),
        None => t.row(vec![
            "open a 100K store ≤ 300 ms".into(),
            "100K".into(),
            "—".into(),
            "not run".into(),
        ]),
    }
    for r in results {
        t.row(vec![
            "batch ingest (vectors given) ≥ 70,000 records/s".into(),
            size_label(r.size),
            format!("{}/s", fig(r.ingest.rate())),
            met(r.ingest.rate() >= 70_000.0),
        ]);
    }
    for r in results {
        for g in &r.group {
            t.row(vec![
                "durable single save ≤ 30 µs amortised under group commit".into(),
                size_label(r.size),
                format!(
                    "{} µs as async tasks (the server's path), {} µs via one committer, {} µs behind a lock ({} writers)",
                    fig(g.async_us_per_save),
                    fig(g.committer_us_per_save),
                    fig(g.us_per_save),
                    g.writers
                ),
                met(g.async_us_per_save <= 30.0),
            ]);
        }
    }
    t
}

/// Run the whole harness and write `OUT/search-harness.{md,json}`.
pub fn run(o: &SearchOptions, out: &Path) -> Result<()> {
    if o.sizes.is_empty() || o.sizes.contains(&0) {
        return Err(HarnessError::Option(
            "--sizes needs at least one size above 0".into(),
        ));
    }
    if o.queries == 0 {
        return Err(HarnessError::Option("--queries must be above 0".into()));
    }
    let corpus = Corpus::load(&o.locomo)?;
    let mut rep = HarnessReport::new("search-harness", o.smoke);
    rep.notes.push(format!(
        "Record texts from {} LoCoMo turns ({}).",
        thousands(corpus.turns() as u64),
        o.locomo.display()
    ));
    let mut data = json!({});
    if o.sweep_n > 0 {
        eprintln!("search-harness: ef sweep over {} vectors", o.sweep_n);
        let min_s = if o.smoke { 0.0 } else { 1.0 };
        let rows = ef_sweep(o.sweep_n, o.sweep_queries.max(1), &o.efs, min_s)?;
        rep.tables
            .push(sweep_table(o.sweep_n, o.sweep_queries.max(1), &rows));
        data["ef_sweep"] = json!({"n": o.sweep_n, "queries": o.sweep_queries, "rows": rows});
    }
    let tmp;
    let dir = match &o.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(super::error::io_at(d))?;
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir().map_err(super::error::io_at(&std::env::temp_dir()))?;
            tmp.path().to_path_buf()
        }
    };
    let mut results = Vec::new();
    for &n in &o.sizes {
        let r = measure_size(&corpus, n, o, &dir)?;
        ingest::remove_store(&dir.join(format!("search-{n}.h5")));
        let _ = std::fs::remove_file(dir.join(format!("queries-{n}.json")));
        results.push(r);
    }
    let threshold = StoreConfig::default().exact_search_threshold;
    rep.tables.push(e2e_table(&results, threshold));
    rep.tables.push(goals_table(&results));
    data["sizes"] = serde_json::to_value(&results)
        .map_err(|e| HarnessError::Input(format!("cannot encode results: {e}")))?;
    rep.data = data;
    rep.finish(out)
}
