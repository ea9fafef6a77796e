//! The probe: a fresh process that reopens a store, runs its first query and then a steady stream of queries,
//! reporting open time, first-query time, latency percentiles and resident memory. A fresh process, so that
//! memory freed by building the store cannot hide the reopened store's footprint and nothing is warm but the
//! operating system's page cache.

use std::path::Path;
use std::process::Command;

use clawhdf5_memory::{SearchMode, SearchQuery};
use serde::{Deserialize, Serialize};

use super::error::{io_at, HarnessError, Result};
use super::ingest::reopen;
use super::measure::{latency, rss_bytes, thread_cpu, timed, Latency};

/// One query: text plus a query vector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeQuery {
    /// Query text.
    pub text: String,
    /// Query embedding.
    pub embedding: Vec<f32>,
}

/// What the probe measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// Live records of the reopened store.
    pub records: usize,
    /// `Store::open_with` wall time (ms).
    pub open_ms: f64,
    /// The first hybrid query after open (ms); in a `late` probe, the same query asked for the first time
    /// after the steady stream.
    pub first_query_ms: f64,
    /// Results of the first query.
    pub first_hits: usize,
    /// The same query as the first at steady state: median of its re-runs, one after every 25 queries of the
    /// steady stream (ms).
    pub first_query_warm_ms: f64,
    /// Steady-state hybrid queries after the first.
    pub steady: Latency,
    /// Keyword-only (BM25) queries after the hybrid ones, same texts.
    pub keyword: Latency,
    /// Vector-only queries after those, same vectors.
    pub vector: Latency,
    /// Mean thread CPU time per steady query (µs), when the OS reports it.
    pub cpu_us_per_query: Option<f64>,
    /// Resident bytes before open.
    pub rss_before: u64,
    /// Resident bytes after open.
    pub rss_after_open: u64,
    /// Resident bytes after the first query.
    pub rss_after_first: u64,
    /// Whether the first query was asked after the steady stream (`harness-probe --late`).
    #[serde(default)]
    pub late: bool,
    /// From [`run_probes`]: the first query asked for the first time after the steady stream, in processes
    /// of its own (median, ms), the cost of any query new to a warm process.
    #[serde(default)]
    pub first_query_late_ms: Option<f64>,
}

fn query(q: &ProbeQuery, k: usize) -> SearchQuery {
    let mut s = SearchQuery::new(q.text.clone(), k);
    s.embedding = Some(q.embedding.clone());
    s
}

/// What one probe does: the store it reopens, the queries file it reads, how many steady queries it asks
/// for the top `k`, and whether the first query is asked late (see [`probe`]).
#[derive(Debug, Clone, Copy)]
pub struct Probe<'a> {
    /// The store to reopen.
    pub store: &'a Path,
    /// The queries file ([`write_queries`]).
    pub queries: &'a Path,
    /// Steady queries after the first.
    pub count: usize,
    /// Results per query.
    pub k: usize,
    /// Leave the first query out of the stream and ask it once after it.
    pub late: bool,
}

/// The probe itself (run inside the child): reopen `store`, query it `count + 1` times. With `late`, the first
/// query is left out of the stream and asked once after it instead of right after open.
pub fn probe(p: &Probe<'_>) -> Result<ProbeResult> {
    let Probe {
        store,
        queries,
        count,
        k,
        late,
    } = *p;
    let text = std::fs::read_to_string(queries).map_err(io_at(queries))?;
    let qs: Vec<ProbeQuery> = serde_json::from_str(&text)
        .map_err(|e| HarnessError::Input(format!("{}: {e}", queries.display())))?;
    if qs.is_empty() {
        return Err(HarnessError::Input(format!(
            "{}: no queries",
            queries.display()
        )));
    }
    let prepared: Vec<SearchQuery> = qs.iter().map(|q| query(q, k)).collect();
    drop(qs);
    let rss_before = rss_bytes().unwrap_or(0);
    let (s, open_s) = timed(|| reopen(store));
    let s = s?;
    let rss_after_open = rss_bytes().unwrap_or(0);
    // A late probe needs another query to stream; with one only, it is asked right after open as usual.
    let late = late && prepared.len() > 1;
    let (mut first_hits, mut first_s) = (0, 0.0);
    if !late {
        let (first, t) = timed(|| s.search(&prepared[0]));
        first_hits = first?.len();
        first_s = t;
    }
    let rss_after_first = rss_bytes().unwrap_or(0);
    // The stream's i-th query; a late probe's stream never asks the first.
    let nth = |i: usize| {
        if late {
            &prepared[1 + i % (prepared.len() - 1)]
        } else {
            &prepared[(i + 1) % prepared.len()]
        }
    };
    let mut samples = Vec::with_capacity(count);
    let mut again = Vec::with_capacity(count / 25 + 1);
    let mut again_s = 0.0;
    let cpu0 = thread_cpu();
    let (res, total) = timed(|| -> Result<()> {
        for i in 0..count {
            let (r, t) = timed(|| s.search(nth(i)));
            r?;
            samples.push(t);
            if !late && i % 25 == 24 {
                // The first query again, among the others (its own path no hotter than theirs); not counted
                // in the stream's time.
                let (r, t) = timed(|| s.search(&prepared[0]));
                r?;
                again.push(t);
                again_s += t;
            }
        }
        Ok(())
    });
    res?;
    let cpu = match (cpu0, thread_cpu()) {
        (Some(a), Some(b)) if count > 0 => {
            Some((b - a).as_secs_f64() * 1e6 / (count + again.len()) as f64)
        }
        _ => None,
    };
    let mode_pass = |mode: SearchMode| -> Result<Latency> {
        let n = count.clamp(1, 500);
        let mut times = Vec::with_capacity(n);
        let (r, total) = timed(|| -> Result<()> {
            for i in 0..n {
                let mut q = prepared[(i + 1) % prepared.len()].clone();
                q.mode = mode;
                let (r, t) = timed(|| s.search(&q));
                r?;
                times.push(t);
            }
            Ok(())
        });
        r?;
        Ok(latency(&times, total))
    };
    if late {
        let (first, t) = timed(|| s.search(&prepared[0]));
        first_hits = first?.len();
        first_s = t;
    }
    if again.is_empty() {
        let (r, t) = timed(|| s.search(&prepared[0]));
        r?;
        again.push(t);
    }
    again.sort_by(f64::total_cmp);
    let first_query_warm_ms = again[again.len() / 2] * 1e3;
    let keyword = mode_pass(SearchMode::Keyword)?;
    let vector = mode_pass(SearchMode::Vector)?;
    let records = s.len();
    drop(s);
    Ok(ProbeResult {
        records,
        open_ms: open_s * 1e3,
        first_query_ms: first_s * 1e3,
        first_hits,
        first_query_warm_ms,
        steady: latency(&samples, (total - again_s).max(0.0)),
        keyword,
        vector,
        cpu_us_per_query: cpu,
        rss_before,
        rss_after_open,
        rss_after_first,
        late,
        first_query_late_ms: None,
    })
}

/// Write the queries file a probe reads.
pub fn write_queries(path: &Path, qs: &[ProbeQuery]) -> Result<()> {
    let text = serde_json::to_string(qs)
        .map_err(|e| HarnessError::Input(format!("cannot encode queries: {e}")))?;
    std::fs::write(path, text).map_err(io_at(path))
}

/// Run the probe in a fresh process of this binary (`clawhdf5-eval harness-probe [--late]`).
pub fn run_probe(p: &Probe<'_>) -> Result<ProbeResult> {
    let exe = std::env::current_exe()
        .map_err(|e| HarnessError::Probe(format!("cannot find this program: {e}")))?;
    let out = Command::new(&exe)
        .arg("harness-probe")
        .arg("--store")
        .arg(p.store)
        .arg("--queries")
        .arg(p.queries)
        .arg("--count")
        .arg(p.count.to_string())
        .arg("--k")
        .arg(p.k.to_string())
        .args(p.late.then_some("--late"))
        .output()
        .map_err(|e| HarnessError::Probe(format!("cannot start {}: {e}", exe.display())))?;
    if !out.status.success() {
        return Err(HarnessError::Probe(format!(
            "{} harness-probe failed ({}): {}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| HarnessError::Probe(format!("no JSON in its output: {stdout:?}")))?;
    serde_json::from_str(line)
        .map_err(|e| HarnessError::Probe(format!("unreadable answer {line:?}: {e}")))
}

/// [`run_probe`] in `runs` fresh processes: the first run's figures, with open time and the first query (and
/// that query at steady state) replaced by their medians over the runs, which are single samples each; then
/// `runs` late probes, whose median first query is `first_query_late_ms`.
pub fn run_probes(
    store: &Path,
    queries: &Path,
    count: usize,
    k: usize,
    runs: usize,
) -> Result<ProbeResult> {
    let mut all = Vec::with_capacity(runs.max(1));
    let mut late = Vec::with_capacity(runs.max(1));
    let mut p = Probe {
        store,
        queries,
        count,
        k,
        late: false,
    };
    for _ in 0..runs.max(1) {
        all.push(run_probe(&p)?);
    }
    // After the others, so that the access entries their searches log do not lengthen the log the others'
    // opens replay.
    p.late = true;
    for _ in 0..runs.max(1) {
        late.push(run_probe(&p)?.first_query_ms);
    }
    late.sort_by(f64::total_cmp);
    let median = |f: &dyn Fn(&ProbeResult) -> f64| {
        let mut v: Vec<f64> = all.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let open_ms = median(&|p| p.open_ms);
    let first_query_ms = median(&|p| p.first_query_ms);
    let first_query_warm_ms = median(&|p| p.first_query_warm_ms);
    let mut out = all.swap_remove(0);
    out.open_ms = open_ms;
    out.first_query_ms = first_query_ms;
    out.first_query_warm_ms = first_query_warm_ms;
    out.first_query_late_ms = late.get(late.len() / 2).copied();
    Ok(out)
}
