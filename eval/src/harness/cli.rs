//! Command-line front of the harnesses (flattened into `clawhdf5-eval`'s subcommands).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::consolidation::{self, ConsolidationOptions};
use super::corpus::default_locomo_dir;
use super::ephemeral::{self, EphemeralOptions};
use super::error::{HarnessError, Result};
use super::footprint::{self, FootprintOptions};
use super::read::{self, ReadOptions};
use super::search::{self, SearchOptions};

/// The harness subcommands.
#[derive(Subcommand, Debug)]
pub enum HarnessCmd {
    /// HNSW ef sweep (recall@10, QPS) and the end-to-end hybrid table through Store at 1K/10K/100K records,
    /// with the goals of issue #6 beside the figures.
    SearchHarness(SearchArgs),
    /// File bytes per record against the payload (goal ≤ 1.1×), bytes per HDF5 dataset, and resident memory of
    /// a reopened store against its raw f32 vectors (goal ≤ 1.8×), at 10K and 100K records.
    Footprint(FootprintArgs),
    /// Consolidation cycle time at 1K/10K/100K records through AgentMemory, and LoCoMo evidence recall
    /// (BM25) before and after consolidation.
    Consolidation(ConsolidationArgs),
    /// Operations per second of the ephemeral tier: put, get, search, promote.
    Ephemeral(EphemeralArgs),
    /// Partial reads (full, 64×64, 512×512, row, column) of a 4096×2048 f64 dataset stored chunked+deflate,
    /// chunked and contiguous, with h5py timed beside when importable.
    ReadHarness(ReadArgs),
    /// Internal: reopen a store in this fresh process and query it (used by the harnesses).
    #[command(hide = true)]
    HarnessProbe(ProbeArgs),
}

/// Options every harness takes.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Folder the Markdown and JSON results are written to.
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,
    /// Seconds-long run on tiny sizes (what CI runs; the figures mean nothing).
    #[arg(long)]
    pub smoke: bool,
    /// LoCoMo folder the record texts come from.
    #[arg(long, default_value_os_t = default_locomo_dir())]
    pub locomo: PathBuf,
    /// Folder for the stores the harness builds (default: a temporary folder, removed afterwards).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

/// `search-harness` options.
#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Store sizes of the end-to-end table, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Steady-state hybrid queries per size.
    #[arg(long, default_value_t = 2000)]
    pub queries: usize,
    /// Vectors of the ef sweep (default: the largest size; 0 skips the sweep).
    #[arg(long)]
    pub sweep_n: Option<usize>,
    /// Queries of the ef sweep.
    #[arg(long, default_value_t = 200)]
    pub sweep_queries: usize,
    /// ef values of the sweep, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "10,16,32,64,128,256")]
    pub ef: Vec<usize>,
    /// Writer-thread counts of the group-commit measurement, comma separated (one run each).
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    pub writers: Vec<usize>,
    /// Durable saves of each group-commit run (all writers together).
    #[arg(long, default_value_t = 2000)]
    pub group_saves: usize,
    /// Runs of each group-commit way and writer count; the table gives their median and range.
    #[arg(long, default_value_t = 5)]
    pub group_rounds: usize,
    /// Batch ingests of each size, each into a fresh store; the table gives their median and range.
    #[arg(long, default_value_t = 5)]
    pub ingest_rounds: usize,
    /// Sequential durable saves by one writer.
    #[arg(long, default_value_t = 200)]
    pub single_saves: usize,
}

/// `footprint` options.
#[derive(Args, Debug)]
pub struct FootprintArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Store sizes, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Leave the stores in `--work-dir` (as `footprint-N.h5`, with the probe's queries beside them) for
    /// inspection instead of removing them.
    #[arg(long, requires = "work_dir")]
    pub keep_stores: bool,
}

/// `consolidation` options.
#[derive(Args, Debug)]
pub struct ConsolidationArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Store sizes of the cycle-time table, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Ask at most this many LoCoMo questions (evenly strided).
    #[arg(long)]
    pub limit: Option<usize>,
}

/// `ephemeral` options.
#[derive(Args, Debug)]
pub struct EphemeralArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Scratchpad capacities, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1024,10000")]
    pub capacities: Vec<usize>,
    /// Puts and gets per capacity.
    #[arg(long, default_value_t = 50_000)]
    pub ops: usize,
    /// Searches per capacity.
    #[arg(long, default_value_t = 500)]
    pub searches: usize,
    /// Promotions per durability mode.
    #[arg(long, default_value_t = 200)]
    pub promotions: usize,
}

/// `read-harness` options.
#[derive(Args, Debug)]
pub struct ReadArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Rows of the dataset.
    #[arg(long, default_value_t = 4096)]
    pub rows: u64,
    /// Columns of the dataset.
    #[arg(long, default_value_t = 2048)]
    pub cols: u64,
    /// Chunk shape of the chunked layouts, ROWSxCOLS.
    #[arg(long, default_value = "128x128")]
    pub chunk: String,
    /// Python interpreter with h5py (the h5py column is absent when it cannot import h5py).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// The h5py timing script.
    #[arg(long, default_value_os_t = super::read::default_h5py_script())]
    pub h5py_script: PathBuf,
}

/// `harness-probe` options.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Store to reopen.
    #[arg(long)]
    pub store: PathBuf,
    /// Queries file (JSON: [{text, embedding}]).
    #[arg(long)]
    pub queries: PathBuf,
    /// Steady-state queries after the first.
    #[arg(long)]
    pub count: usize,
    /// Results per query.
    #[arg(long, default_value_t = 10)]
    pub k: usize,
    /// Ask the first query only after the steady stream (which then leaves it out), for the first time in the
    /// process: what a query new to a warm process costs, to compare with the first query after open.
    #[arg(long)]
    pub late: bool,
}

fn search_options(a: &SearchArgs) -> SearchOptions {
    let c = &a.common;
    if c.smoke {
        let mut o = SearchOptions::smoke(c.locomo.clone());
        if let Some(s) = &a.sizes {
            o.sizes = s.clone();
        }
        o.work_dir = c.work_dir.clone();
        return o;
    }
    let sizes = a
        .sizes
        .clone()
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let largest = sizes.iter().copied().max().unwrap_or(0);
    SearchOptions {
        sweep_n: a.sweep_n.unwrap_or(largest),
        sizes,
        smoke: false,
        locomo: c.locomo.clone(),
        work_dir: c.work_dir.clone(),
        queries: a.queries,
        sweep_queries: a.sweep_queries,
        efs: a.ef.clone(),
        writers: a.writers.clone(),
        group_saves: a.group_saves,
        group_rounds: a.group_rounds,
        ingest_rounds: a.ingest_rounds,
        single_saves: a.single_saves,
    }
}

/// Run a harness subcommand.
pub fn run(cmd: &HarnessCmd) -> Result<()> {
    match cmd {
        HarnessCmd::SearchHarness(a) => search::run(&search_options(a), &a.common.out),
        HarnessCmd::Footprint(a) => {
            let c = &a.common;
            let default = if c.smoke {
                vec![300]
            } else {
                vec![10_000, 100_000]
            };
            let o = FootprintOptions {
                sizes: a.sizes.clone().unwrap_or(default),
                smoke: c.smoke,
                locomo: c.locomo.clone(),
                work_dir: c.work_dir.clone(),
                keep_stores: a.keep_stores,
            };
            footprint::run(&o, &c.out)
        }
        HarnessCmd::Consolidation(a) => {
            let c = &a.common;
            let o = ConsolidationOptions {
                sizes: a.sizes.clone().unwrap_or_else(|| {
                    if c.smoke {
                        vec![100]
                    } else {
                        vec![1_000, 10_000, 100_000]
                    }
                }),
                smoke: c.smoke,
                locomo: c.locomo.clone(),
                work_dir: c.work_dir.clone(),
                question_limit: a.limit.or(c.smoke.then_some(40)),
                conversations: c.smoke.then_some(1),
            };
            consolidation::run(&o, &c.out)
        }
        HarnessCmd::Ephemeral(a) => {
            let c = &a.common;
            let o = if c.smoke {
                EphemeralOptions {
                    capacities: vec![64],
                    ops: 500,
                    searches: 20,
                    promotions: 10,
                    smoke: true,
                    locomo: c.locomo.clone(),
                    work_dir: c.work_dir.clone(),
                }
            } else {
                EphemeralOptions {
                    capacities: a.capacities.clone(),
                    ops: a.ops,
                    searches: a.searches,
                    promotions: a.promotions,
                    smoke: false,
                    locomo: c.locomo.clone(),
                    work_dir: c.work_dir.clone(),
                }
            };
            ephemeral::run(&o, &c.out)
        }
        HarnessCmd::ReadHarness(a) => {
            let c = &a.common;
            let chunk: Vec<u64> = a
                .chunk
                .split('x')
                .map(|x| x.trim().parse::<u64>())
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| HarnessError::Option(format!("--chunk {:?}: {e}", a.chunk)))?;
            let [cr, cc] = chunk[..] else {
                return Err(HarnessError::Option(format!(
                    "--chunk must be ROWSxCOLS, got {:?}",
                    a.chunk
                )));
            };
            let o = ReadOptions {
                rows: if c.smoke { 256 } else { a.rows },
                cols: if c.smoke { 128 } else { a.cols },
                chunk: if c.smoke { [32, 32] } else { [cr, cc] },
                min_seconds: if c.smoke { 0.0 } else { 0.5 },
                min_reps: if c.smoke { 1 } else { 5 },
                max_reps: if c.smoke { 3 } else { 200 },
                smoke: c.smoke,
                work_dir: c.work_dir.clone(),
                h5py_script: a.h5py_script.clone(),
                python: a.python.clone(),
            };
            read::run(&o, &c.out)
        }
        HarnessCmd::HarnessProbe(a) => {
            let r = super::probe::probe(&super::probe::Probe {
                store: &a.store,
                queries: &a.queries,
                count: a.count,
                k: a.k,
                late: a.late,
            })?;
            let line = serde_json::to_string(&r)
                .map_err(|e| HarnessError::Probe(format!("cannot encode the result: {e}")))?;
            println!("{line}");
            Ok(())
        }
    }
}
