//! Benchmark harness for clawhdf5-ann (see BENCHMARKS.md, scripts/bench/ann_compare.sh and
//! scripts/bench/ann_filtered.sh).
//!
//! ```text
#![doc = include_str!("ann-bench-usage.txt")]
//! ```
//! `--graph FILE` loads the graph saved there (no build is timed) or, when the file is missing, builds
//! it and saves it there, so repeated search experiments on one data set skip the build.
//! A data directory holds `base.f32` (N x dim), `queries.f32` (Q x dim), `dim.txt` and `gt.u32`
//! (exact cosine top-10 of every query, Q x 10 u32). `run` prints one tab-separated line per measurement.

use anyhow::{bail, Context, Result};
use clawhdf5_ann::synth::Clustered;
use clawhdf5_ann::{
    exact_top_k, kernels, Filter, FlatVectors, Hnsw, HnswParams, IdSet, Metric, SearchPlan,
    VectorStore,
};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `ann-bench --help` prints.
const USAGE: &str = include_str!("ann-bench-usage.txt");

const K: usize = 10;
/// Minimum CPU seconds per timed query measurement.
const MIN_TIMED_CPU_S: f64 = 0.5;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        bail!("no command given\n{USAGE}");
    };
    if matches!(cmd.as_str(), "-h" | "--help" | "help") {
        print!("{USAGE}");
        return Ok(());
    }
    let opts = parse_opts(&args[1..])?;
    match cmd.as_str() {
        "gen" => gen(&opts),
        "prepare" => prepare(&opts),
        "run" => run(&opts),
        "sign-ranks" => sign_ranks(&opts),
        other => {
            bail!("unknown command {other:?}; expected gen, prepare, run or sign-ranks\n{USAGE}")
        }
    }
}

fn parse_opts(args: &[String]) -> Result<HashMap<String, String>> {
    let mut m = HashMap::new();
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let Some(key) = k.strip_prefix("--") else {
            bail!("expected --option, got {k:?}")
        };
        let v = it
            .next()
            .with_context(|| format!("--{key} needs a value"))?;
        m.insert(key.to_string(), v.clone());
    }
    Ok(m)
}

fn opt<T: std::str::FromStr>(o: &HashMap<String, String>, key: &str, default: T) -> Result<T> {
    match o.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("--{key}: cannot parse {v:?}")),
    }
}

fn out_dir(o: &HashMap<String, String>, key: &str) -> Result<PathBuf> {
    let d = PathBuf::from(
        o.get(key)
            .with_context(|| format!("--{key} DIR is required"))?,
    );
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    Ok(d)
}

fn write_f32(path: &Path, data: &[f32]) -> Result<()> {
    let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn read_f32(path: &Path, dim: usize) -> Result<FlatVectors> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() % (4 * dim) != 0 {
        bail!(
            "{}: {} bytes is not a whole number of {dim}-d f32 rows",
            path.display(),
            bytes.len()
        );
    }
    let data: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(FlatVectors::from_vec(dim, data)?)
}

/// Unit-normalises every row (cosine data must be unit length).
fn normalise(s: &FlatVectors) -> Result<FlatVectors> {
    let dim = s.dim();
    let mut out = Vec::with_capacity(s.as_slice().len());
    for i in 0..s.len() as u32 {
        out.extend(Metric::Cosine.prepare_query(s.vector(i)));
    }
    Ok(FlatVectors::from_vec(dim, out)?)
}

fn gen(o: &HashMap<String, String>) -> Result<()> {
    let dir = out_dir(o, "out")?;
    let n: usize = opt(o, "n", 10_000)?;
    let nq: usize = opt(o, "queries", 200)?;
    let dim: usize = opt(o, "dim", 384)?;
    let clusters: usize = opt(o, "clusters", 100)?;
    let noise: f32 = opt(o, "noise", 1.0)?;
    let seed: u64 = opt(o, "seed", 42)?;
    let g = Clustered::new(dim, clusters, noise, seed);
    let base = g.sample(n, seed.wrapping_add(1));
    let queries = g.sample(nq, seed.wrapping_add(2));
    finish_dir(&dir, &base, &queries)
}

fn prepare(o: &HashMap<String, String>) -> Result<()> {
    let dir = out_dir(o, "out")?;
    let dim: usize = opt(o, "dim", 384)?;
    let base = normalise(&read_f32(
        Path::new(o.get("base").context("--base FILE is required")?),
        dim,
    )?)?;
    let queries = normalise(&read_f32(
        Path::new(o.get("queries").context("--queries FILE is required")?),
        dim,
    )?)?;
    finish_dir(&dir, &base, &queries)
}

fn finish_dir(dir: &Path, base: &FlatVectors, queries: &FlatVectors) -> Result<()> {
    write_f32(&dir.join("base.f32"), base.as_slice())?;
    write_f32(&dir.join("queries.f32"), queries.as_slice())?;
    std::fs::write(dir.join("dim.txt"), base.dim().to_string())?;
    let t = Instant::now();
    let gt = ground_truth(base, queries, None)?;
    let bytes: Vec<u8> = gt
        .iter()
        .flatten()
        .flat_map(|id| id.to_le_bytes())
        .collect();
    std::fs::write(dir.join("gt.u32"), bytes)?;
    eprintln!(
        "wrote {} base and {} query vectors ({}-d) and exact top-{K} ({:.1}s) to {}",
        base.len(),
        queries.len(),
        base.dim(),
        t.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(())
}

/// `sign-ranks`: what the sign pass (`Hnsw::sign_pass`) leaves for exact scoring and whether its error
/// bounds hold. Per query-filter pair: the best `--seed-rows` estimates per result are scored exactly
/// (the seeds), and every other row whose bound reaches below the seeds' 10th distance is left; the
/// report gives how many rows were left, how many rows of the exact top 10 erred past their bound,
/// and how many of those the pass would lose (neither seeds nor left). Each query gets its own ids
/// filter per `--seeds` draw, so many pairs are seen.
fn sign_ranks(o: &HashMap<String, String>) -> Result<()> {
    use clawhdf5_ann::sign::SignCodes;
    let dir = PathBuf::from(o.get("dir").context("--dir DIR is required")?);
    let d = load_dir(&dir)?;
    let pcts: Vec<u64> = opt(o, "filters", "5,10,20".to_string())?
        .split(',')
        .map(|p| p.trim().parse().context("--filters takes percentages"))
        .collect::<Result<_>>()?;
    let seeds: u64 = opt(o, "seeds", 3)?;
    let seed_rows: usize = opt(o, "seed-rows", 4)?;
    let metric = Metric::Cosine;
    let n = d.base.len() as u32;
    let int8 = clawhdf5_ann::Int8Vectors::from_store(&d.base);
    let from_int8 = int8
        .sign_codes()
        .context("the int8 copy keeps no sign codes (too few rows)")?;
    let from_f32 = SignCodes::from_store(&d.base, d.base.len());
    println!(
        "# sign-ranks dir={} rows={n} queries={} seed_rows={seed_rows} epsilon={}",
        dir.display(),
        d.queries.len(),
        clawhdf5_ann::sign::BOUND_EPSILON
    );
    for (codes, signs) in [("int8", from_int8), ("f32", &from_f32)] {
        for &pct in &pcts {
            // Per pair: rows left, top-10 rows past their bound, top-10 rows lost.
            let outcomes: Vec<(usize, usize, usize)> = (0..seeds)
                .flat_map(|seed| (0..d.queries.len() as u64).map(move |qi| (seed, qi)))
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(|(seed, qi)| {
                    let salt = clawhdf5_ann::rng::mix64(seed << 32 | qi);
                    let allowed: Vec<u32> = (0..n)
                        .filter(|&i| clawhdf5_ann::rng::mix64(u64::from(i) ^ salt) % 100 < pct)
                        .collect();
                    let q = metric.prepare_query(d.queries.vector(qi as u32));
                    let exact = |i: u32| metric.distance_to(&q, d.base.row(i));
                    let mut by_exact: Vec<(f32, u32)> =
                        allowed.iter().map(|&i| (exact(i), i)).collect();
                    by_exact.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let sq = signs.prepare(&q);
                    // (estimate, least distance, id), best estimate first.
                    let mut est: Vec<(f32, f32, u32)> = allowed
                        .iter()
                        .map(|&i| {
                            let (e, low) = signs.distance_bounds(metric, &sq, i);
                            (e, low, i)
                        })
                        .collect();
                    est.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let probe = (K * seed_rows).min(est.len());
                    let mut seeded: Vec<f32> = est[..probe].iter().map(|e| exact(e.2)).collect();
                    seeded.sort_by(f32::total_cmp);
                    let reach = seeded.get(K - 1).copied().unwrap_or(f32::INFINITY);
                    let left = est[probe..]
                        .iter()
                        .filter(|e| e.1 < reach || e.1.is_nan())
                        .count();
                    let (mut past, mut lost) = (0, 0);
                    for &(dist, id) in by_exact.iter().take(K) {
                        let Some(at) = est.iter().position(|e| e.2 == id) else {
                            continue;
                        };
                        if est[at].1 > dist {
                            past += 1;
                            lost += usize::from(at >= probe && est[at].1 >= reach);
                        }
                    }
                    (left, past, lost)
                })
                .collect();
            let pairs = outcomes.len();
            let mut left: Vec<usize> = outcomes.iter().map(|o| o.0).collect();
            left.sort_unstable();
            let mean = left.iter().sum::<usize>() as f64 / pairs.max(1) as f64;
            println!(
                "sign-ranks\tcodes={codes}\tfilter={pct}%\tpairs={pairs}\tleft_mean={mean:.0}\tleft_p50={}\tleft_p99={}\tleft_max={}\tpast_bound={}\tlost={}",
                left.get(pairs / 2).copied().unwrap_or(0),
                left.get(pairs * 99 / 100).copied().unwrap_or(0),
                left.last().copied().unwrap_or(0),
                outcomes.iter().map(|o| o.1).sum::<usize>(),
                outcomes.iter().map(|o| o.2).sum::<usize>(),
            );
        }
    }
    Ok(())
}

fn ground_truth(
    base: &FlatVectors,
    queries: &FlatVectors,
    filter: Option<Filter<'_>>,
) -> Result<Vec<Vec<u32>>> {
    (0..queries.len() as u32)
        .into_par_iter()
        .map(|i| {
            Ok(
                exact_top_k(base, queries.vector(i), K, Metric::Cosine, filter)?
                    .iter()
                    .map(|n| n.id)
                    .collect(),
            )
        })
        .collect()
}

fn rss_bytes() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// CPU time consumed by the calling thread so far (seconds), from /proc/thread-self/schedstat;
/// robust against other processes competing for the CPU.
fn thread_cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0.0, |ns| ns as f64 * 1e-9)
}

fn recall(truth: &[Vec<u32>], got: &[Vec<u32>]) -> f64 {
    let mut hit = 0usize;
    let mut total = 0usize;
    for (t, g) in truth.iter().zip(got) {
        total += t.len();
        hit += t.iter().filter(|id| g.contains(id)).count();
    }
    if total == 0 {
        1.0
    } else {
        hit as f64 / total as f64
    }
}

struct Data {
    base: FlatVectors,
    queries: FlatVectors,
    gt: Vec<Vec<u32>>,
}

fn load_dir(dir: &Path) -> Result<Data> {
    let dim: usize = std::fs::read_to_string(dir.join("dim.txt"))
        .context("reading dim.txt")?
        .trim()
        .parse()
        .context("dim.txt")?;
    let base = read_f32(&dir.join("base.f32"), dim)?;
    let queries = read_f32(&dir.join("queries.f32"), dim)?;
    let gtb = std::fs::read(dir.join("gt.u32")).context("reading gt.u32")?;
    if gtb.len() != queries.len() * K * 4 {
        bail!(
            "gt.u32 has {} bytes, expected {}",
            gtb.len(),
            queries.len() * K * 4
        );
    }
    let ids: Vec<u32> = gtb
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let gt = ids.chunks(K).map(|c| c.to_vec()).collect();
    Ok(Data { base, queries, gt })
}

/// Runs every query through `f` on this thread; returns (results, wall QPS, CPU-time QPS).
/// Unfiltered top-`K` ids of `hm` at `ef`, as the timing loops take it.
fn unfiltered<'a>(
    hm: &'a Hnsw,
    base: &'a FlatVectors,
    ef: usize,
) -> impl Fn(&[f32]) -> Result<Vec<u32>> + Sync + 'a {
    move |q| {
        Ok(hm
            .search(base, q, K, ef, None)?
            .iter()
            .map(|n| n.id)
            .collect())
    }
}

fn time_queries_1t(
    d: &Data,
    f: &(dyn Fn(&[f32]) -> Result<Vec<u32>> + Sync),
) -> Result<(Vec<Vec<u32>>, f64, f64)> {
    // Warm-up pass (page faults, caches), then the timed pass.
    for i in 0..d.queries.len().min(20) as u32 {
        f(d.queries.vector(i))?;
    }
    // Repeat whole passes until at least MIN_TIMED_CPU_S of CPU time so short runs are not noise.
    let c = thread_cpu_secs();
    let t = Instant::now();
    let mut passes = 0usize;
    let mut res = Vec::new();
    while passes == 0 || thread_cpu_secs() - c < MIN_TIMED_CPU_S {
        res = (0..d.queries.len() as u32)
            .map(|i| f(d.queries.vector(i)))
            .collect::<Result<_>>()?;
        passes += 1;
    }
    let wall = t.elapsed().as_secs_f64();
    let cpu = thread_cpu_secs() - c;
    let nq = (d.queries.len() * passes) as f64;
    Ok((res, nq / wall, nq / cpu.max(1e-9)))
}

/// Share of the queries that `plan` answers with an exact scan instead of a graph walk.
fn scanned_share(d: &Data, plan: &dyn Fn(u32) -> Result<SearchPlan>) -> Result<f64> {
    let mut scans = 0usize;
    for i in 0..d.queries.len() as u32 {
        scans += usize::from(plan(i)? == SearchPlan::ExactScan);
    }
    Ok(scans as f64 / d.queries.len().max(1) as f64)
}

/// Median of a non-empty list (upper median for even lengths).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn time_queries_all(d: &Data, f: &(dyn Fn(&[f32]) -> Result<Vec<u32>> + Sync)) -> Result<f64> {
    let t = Instant::now();
    let mut passes = 0usize;
    while passes == 0 || t.elapsed().as_secs_f64() < MIN_TIMED_CPU_S {
        let _: Vec<Vec<u32>> = (0..d.queries.len() as u32)
            .into_par_iter()
            .map(|i| f(d.queries.vector(i)))
            .collect::<Result<_>>()?;
        passes += 1;
    }
    Ok((d.queries.len() * passes) as f64 / t.elapsed().as_secs_f64())
}

fn run(o: &HashMap<String, String>) -> Result<()> {
    let dir = PathBuf::from(o.get("dir").context("--dir DIR is required")?);
    let m: usize = opt(o, "m", 16)?;
    let efc: usize = opt(o, "efc", 200)?;
    let seed: u64 = opt(o, "seed", 42)?;
    let threads: usize = opt(
        o,
        "threads",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    )?;
    let efs: Vec<usize> = o
        .get("ef")
        .map_or("10,16,24,32,48,64,96,128,192,256", |s| s.as_str())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .context("--ef takes comma-separated integers")
        })
        .collect::<Result<_>>()?;
    let keep_pruned: bool = opt(o, "keep-pruned", true)?;
    let rss0 = rss_bytes();
    let d = load_dir(&dir)?;
    let n = d.base.len();
    let raw = n * d.base.dim() * 4;
    println!(
        "# data\tn={n}\tdim={}\tqueries={}\tkernels={}\tthreads={threads}",
        d.base.dim(),
        d.queries.len(),
        kernels::active().name
    );
    println!(
        "# raw_f32_bytes\t{raw}\trss_after_load\t{}",
        rss_bytes().saturating_sub(rss0)
    );
    let pool1 = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let pool_all = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let params = HnswParams {
        m,
        ef_construction: efc,
        seed,
        metric: Metric::Cosine,
        quantize: false,
        keep_pruned,
    };

    let modes: Vec<bool> = o
        .get("modes")
        .map_or("f32,int8", |s| s.as_str())
        .split(',')
        .map(|m| match m.trim() {
            "f32" => Ok(false),
            "int8" => Ok(true),
            other => bail!("--modes takes f32 and/or int8, got {other:?}"),
        })
        .collect::<Result<_>>()?;
    let filtered: bool = opt(o, "filtered", true)?;
    let graph_file = o.get("graph").map(PathBuf::from);
    let mut h = match &graph_file {
        Some(p) if p.exists() => {
            let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            let h = Hnsw::from_bytes(&bytes, 0)?;
            println!("# graph loaded from {} (build not timed)", p.display());
            h
        }
        _ => build_and_time(&d, params, threads, &pool1, &pool_all)?,
    };
    if let Some(p) = &graph_file {
        if !p.exists() {
            std::fs::write(p, h.to_bytes(0)).with_context(|| format!("writing {}", p.display()))?;
        }
    }
    search_sweeps(o, &d, &mut h, &efs, &modes, filtered, &pool_all)
}

/// Builds with one thread and then all threads (checking the graphs are identical), times persistence.
fn build_and_time(
    d: &Data,
    params: HnswParams,
    threads: usize,
    pool1: &rayon::ThreadPool,
    pool_all: &rayon::ThreadPool,
) -> Result<Hnsw> {
    // Build: one thread, then all threads (the graphs are identical: the build is deterministic).
    let rss_before = rss_bytes();
    let t = Instant::now();
    let (h, build_cpu) = pool1.install(|| {
        let c = thread_cpu_secs();
        let h = Hnsw::build(&d.base, params);
        (h, thread_cpu_secs() - c)
    });
    let h = h?;
    let build_1t = t.elapsed().as_secs_f64();
    let rss_index = rss_bytes().saturating_sub(rss_before);
    println!(
        "build\tours-f32\tthreads=1\t{build_1t:.3}\ts\tcpu_s={build_cpu:.3}\tindex_bytes={}\trss_delta={rss_index}",
        h.memory_bytes()
    );
    if threads > 1 {
        let t = Instant::now();
        let h2 = pool_all.install(|| Hnsw::build(&d.base, params))?;
        let build_all = t.elapsed().as_secs_f64();
        let same = h2.to_bytes(0) == h.to_bytes(0);
        println!(
            "build\tours-f32\tthreads={threads}\t{build_all:.3}\ts\tidentical_to_1_thread={same}"
        );
    }

    // Persistence: save / load of the graph.
    let t = Instant::now();
    let bytes = h.to_bytes(7);
    let save = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let loaded = Hnsw::from_bytes(&bytes, 7)?;
    let load = t.elapsed().as_secs_f64();
    // Neighbour lists come back in id order (the format stores them as sets), so compare what was saved
    // with the loaded index saved again.
    if loaded.to_bytes(7) != bytes {
        bail!("loaded index differs from the saved one");
    }
    drop(loaded);
    println!(
        "persist\tours-f32\tbytes={}\tsave_s={save:.4}\tload_s={load:.4}\tload_over_build={:.4}",
        bytes.len(),
        load / build_cpu.max(1e-9)
    );

    Ok(h)
}

/// Unfiltered ef sweeps for the chosen modes, then (optionally) the filtered searches.
fn search_sweeps(
    o: &HashMap<String, String>,
    d: &Data,
    h: &mut Hnsw,
    efs: &[usize],
    modes: &[bool],
    filtered: bool,
    pool_all: &rayon::ThreadPool,
) -> Result<()> {
    let n = d.base.len();
    let raw = n * d.base.dim() * 4;
    // Unfiltered sweep: f32 traversal and int8 traversal + re-score on the same graph. With
    // `--repeat R`, each ef is timed R times, alternating the modes, and the median is reported, so
    // load changes on a shared machine hit both modes alike.
    let repeat: usize = opt(o, "repeat", 1)?.max(1);
    let mut indexes: Vec<(bool, Hnsw)> = Vec::new();
    for &quant in modes {
        let mut hm = h.clone();
        let t = Instant::now();
        hm.set_quantized(&d.base, quant)?;
        let name = if quant { "ours-int8" } else { "ours-f32" };
        let quantise = if quant {
            format!("\tquantise_s={:.3}", t.elapsed().as_secs_f64())
        } else {
            String::new()
        };
        let bytes = hm.memory_bytes();
        // Sign codes are derived when a large filtered scan first asks for them: time that here,
        // and report their bytes apart from the index's.
        let t = Instant::now();
        let signs = hm
            .quantized()
            .and_then(|q| q.sign_codes())
            .map_or(String::new(), |codes| {
                format!(
                    "\tsign_codes_s={:.3}\tsign_codes_bytes={}",
                    t.elapsed().as_secs_f64(),
                    codes.memory_bytes()
                )
            });
        println!(
            "build\t{name}{quantise}\tindex_bytes={bytes}\tindex_over_raw={:.3}{signs}",
            bytes as f64 / raw as f64
        );
        indexes.push((quant, hm));
    }
    let mut f32_curve = Vec::new();
    for &ef in efs {
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); indexes.len()];
        let mut results: Vec<Vec<Vec<u32>>> = vec![Vec::new(); indexes.len()];
        for _ in 0..repeat {
            for (i, (_, hm)) in indexes.iter().enumerate() {
                let search = unfiltered(hm, &d.base, ef);
                let (res, qps1, qps1_cpu) = time_queries_1t(d, &search)?;
                runs[i].push((qps1, qps1_cpu));
                results[i] = res;
            }
        }
        for (i, (quant, hm)) in indexes.iter().enumerate() {
            let search = unfiltered(hm, &d.base, ef);
            let qps_all = pool_all.install(|| time_queries_all(d, &search))?;
            let qps1 = median(runs[i].iter().map(|r| r.0).collect());
            let qps1_cpu = median(runs[i].iter().map(|r| r.1).collect());
            let r = recall(&d.gt, &results[i]);
            let name = if *quant { "ours-int8" } else { "ours-f32" };
            println!("search\t{name}\tef={ef}\trecall={r:.4}\tqps_1t={qps1:.0}\tqps_all={qps_all:.0}\tqps_1t_cpu={qps1_cpu:.0}\treps={repeat}");
            if !quant {
                f32_curve.push((ef, r, qps1));
            }
        }
    }
    drop(indexes);

    // Filtered search (int8 index and f32 index), ef = smallest ef with unfiltered f32 recall >= 0.99.
    let fef: usize = match o.get("filtered-ef") {
        Some(v) => v.parse().context("--filtered-ef")?,
        None => f32_curve.iter().find(|c| c.1 >= 0.99).map_or(64, |c| c.0),
    };
    if !filtered {
        return Ok(());
    }
    // `--filters 50,10,1,exclude` (the default) picks the filtered cases to run.
    let cases: Vec<String> = o
        .get("filters")
        .map_or("50,10,1,exclude", |s| s.as_str())
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    let pcts: Vec<u64> = cases
        .iter()
        .filter(|c| c.as_str() != "exclude")
        .map(|c| {
            c.parse()
                .with_context(|| format!("--filters takes percentages and `exclude`, got {c:?}"))
        })
        .collect::<Result<_>>()?;
    for &quant in modes {
        h.set_quantized(&d.base, quant)?;
        let name = if quant { "ours-int8" } else { "ours-f32" };
        let unf = |q: &[f32]| -> Result<Vec<u32>> {
            Ok(h.search(&d.base, q, K, fef, None)?
                .iter()
                .map(|n| n.id)
                .collect())
        };
        // Each filtered measurement is paired with an unfiltered one taken right before it; with
        // `--repeat R` the pairs are repeated and the medians reported (QPS, and the ratio per pair).
        let unf_qps_once = || -> Result<f64> { Ok(time_queries_1t(d, &unf)?.2) };
        let unf_qps = median(
            (0..repeat)
                .map(|_| unf_qps_once())
                .collect::<Result<Vec<_>>>()?,
        );
        println!("filtered\t{name}\tef={fef}\tunfiltered\trecall=-\tqps_1t_cpu={unf_qps:.0}\treps={repeat}");
        for &pct in &pcts {
            let set: IdSet = (0..n as u32)
                .filter(|&i| clawhdf5_ann::rng::mix64(i as u64 ^ 0xF1F1) % 100 < pct)
                .collect();
            let filter = Filter::Ids(&set);
            let truth = ground_truth(&d.base, &d.queries, Some(filter))?;
            let f = |q: &[f32]| -> Result<Vec<u32>> {
                Ok(h.search(&d.base, q, K, fef, Some(filter))?
                    .iter()
                    .map(|n| n.id)
                    .collect())
            };
            let (mut qs, mut ratios, mut res) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..repeat {
                let base_qps = unf_qps_once()?;
                let (r, _, qps) = time_queries_1t(d, &f)?;
                qs.push(qps);
                ratios.push(qps / base_qps);
                res = r;
            }
            let scans = scanned_share(d, &|i| {
                Ok(
                    h.search_with_plan(&d.base, d.queries.vector(i), K, fef, Some(filter))?
                        .1,
                )
            })?;
            println!(
                "filtered\t{name}\tef={fef}\tselectivity={pct}%\trecall={:.4}\tqps_1t_cpu={:.0}\tvs_unfiltered={:.2}\texact_scan_share={scans:.2}",
                recall(&truth, &res),
                median(qs),
                median(ratios)
            );
        }
        if !cases.iter().any(|c| c == "exclude") {
            continue;
        }
        // Filters that exclude each query's own 100 nearest rows (an IdSet per query, complemented
        // through a predicate). Sets and ground truth are prepared first; searches are timed in one
        // block (repeated until MIN_TIMED_CPU_S) because per-call CPU clocks are too coarse.
        let mut excluded = Vec::with_capacity(d.queries.len());
        let mut truths = Vec::with_capacity(d.queries.len());
        for i in 0..d.queries.len() as u32 {
            let q = d.queries.vector(i);
            let near: IdSet = exact_top_k(&d.base, q, 100, Metric::Cosine, None)?
                .iter()
                .map(|n| n.id)
                .collect();
            let pred = |id: u32| !near.contains(id);
            let truth = exact_top_k(
                &d.base,
                q,
                K,
                Metric::Cosine,
                Some(Filter::Predicate(&pred)),
            )?;
            truths.push(truth.iter().map(|n| n.id).collect::<Vec<u32>>());
            excluded.push(near);
        }
        let (mut qs, mut ratios) = (Vec::new(), Vec::new());
        let mut got: Vec<Vec<u32>> = Vec::new();
        for _ in 0..repeat {
            let base_qps = unf_qps_once()?;
            let c = thread_cpu_secs();
            let mut passes = 0usize;
            while passes == 0 || thread_cpu_secs() - c < MIN_TIMED_CPU_S {
                got = excluded
                    .iter()
                    .enumerate()
                    .map(|(i, near)| {
                        let pred = |id: u32| !near.contains(id);
                        Ok(h.search(
                            &d.base,
                            d.queries.vector(i as u32),
                            K,
                            fef,
                            Some(Filter::Predicate(&pred)),
                        )?
                        .iter()
                        .map(|n| n.id)
                        .collect())
                    })
                    .collect::<Result<_>>()?;
                passes += 1;
            }
            let qps = (d.queries.len() * passes) as f64 / (thread_cpu_secs() - c).max(1e-9);
            qs.push(qps);
            ratios.push(qps / base_qps);
        }
        let scans = scanned_share(d, &|i| {
            let near = &excluded[i as usize];
            let pred = |id: u32| !near.contains(id);
            Ok(h.search_with_plan(
                &d.base,
                d.queries.vector(i),
                K,
                fef,
                Some(Filter::Predicate(&pred)),
            )?
            .1)
        })?;
        println!(
            "filtered\t{name}\tef={fef}\texclude-own-top100\trecall={:.4}\tqps_1t_cpu={:.0}\tvs_unfiltered={:.2}\texact_scan_share={scans:.2}",
            recall(&truths, &got),
            median(qs),
            median(ratios)
        );
    }
    Ok(())
}
