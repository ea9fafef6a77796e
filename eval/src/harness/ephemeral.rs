//! `ephemeral`: operations per second of the ephemeral tier (the in-process scratchpad of `AgentMemory`):
//! put (with a 384-dim embedding, evicting when full), get, embedding search and promotion into the durable
//! store. No Redis figure is shown: none is measured here.

use std::path::{Path, PathBuf};

use clawhdf5_memory::cognitive::{AgentMemory, CognitiveConfig};
use clawhdf5_memory::{Durability, NewMemory, Store, StoreOptions};
use serde_json::json;

use super::corpus::Corpus;
use super::error::{HarnessError, Result};
use super::measure::{fig, thousands, timed};
use super::report::{HarnessReport, Table};
use super::vectors;

/// Settings of an `ephemeral` run.
#[derive(Clone, Debug)]
pub struct EphemeralOptions {
    /// Scratchpad capacities measured.
    pub capacities: Vec<usize>,
    /// Puts and gets per capacity.
    pub ops: usize,
    /// Searches per capacity.
    pub searches: usize,
    /// Promotions per durability mode.
    pub promotions: usize,
    /// Smoke size.
    pub smoke: bool,
    /// LoCoMo folder (entry texts).
    pub locomo: PathBuf,
    /// Folder for the stores (a temporary folder when absent).
    pub work_dir: Option<PathBuf>,
}

/// Rates at one capacity.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EphemeralResult {
    /// Scratchpad capacity.
    pub capacity: usize,
    /// put ops/s (384-dim embedding each; evicting once full).
    pub put_per_s: f64,
    /// get ops/s (hits).
    pub get_per_s: f64,
    /// search ops/s (k = 10 over a full scratchpad).
    pub search_per_s: f64,
    /// promote ops/s, store durability none.
    pub promote_none_per_s: f64,
    /// promote ops/s, store durability every-save.
    pub promote_every_save_per_s: f64,
    /// Entries evicted during the puts.
    pub evicted: u64,
}

fn memory(path: &Path, capacity: usize, durability: Durability) -> Result<AgentMemory> {
    let s = Store::open_with(
        path,
        StoreOptions {
            durability,
            ..StoreOptions::default()
        },
    )?;
    Ok(AgentMemory::from_store(
        s,
        CognitiveConfig {
            ephemeral_capacity: capacity,
            ephemeral_ttl_ms: Some(3_600_000),
            ..CognitiveConfig::default()
        },
    )?)
}

fn rate(n: usize, s: f64) -> f64 {
    n as f64 / s.max(1e-9)
}

/// Measure one capacity.
pub fn measure(
    o: &EphemeralOptions,
    corpus: &Corpus,
    capacity: usize,
    dir: &Path,
) -> Result<EphemeralResult> {
    let n = o.ops.max(capacity);
    let texts: Vec<String> = (0..n).map(|i| corpus.record(i).text).collect();
    let vecs = vectors::base(n);
    let keys: Vec<String> = (0..n).map(|i| format!("scratch-{i}")).collect();
    let now = clawhdf5_memory::now_ms();
    let path = dir.join(format!("ephemeral-{capacity}.h5"));
    let mut m = memory(&path, capacity, Durability::None)?;
    let e = m.ephemeral();
    let ((), put_s) = timed(|| {
        for i in 0..n {
            e.put(&keys[i], &texts[i], Some(vecs.vector(i as u32)), None, now);
        }
    });
    let evicted = e.evicted();
    // Gets of keys still present (the last `capacity` put).
    let live: Vec<&String> = keys[n - capacity.min(n)..].iter().collect();
    let gets = o.ops;
    let (hits, get_s) = timed(|| {
        let mut hits = 0usize;
        for i in 0..gets {
            hits += usize::from(e.get(live[i % live.len()], now).is_some());
        }
        hits
    });
    if hits != gets {
        return Err(HarnessError::Input(format!(
            "ephemeral get missed {} of {gets} live keys",
            gets - hits
        )));
    }
    let qs = vectors::fresh_queries(o.searches.max(1));
    let ((), search_s) = timed(|| {
        for i in 0..o.searches {
            std::hint::black_box(e.search(qs.vector(i as u32), 10, now));
        }
    });
    let promote = |m: &mut AgentMemory| -> Result<f64> {
        let count = o.promotions.min(live.len());
        let (r, t) = timed(|| -> Result<()> {
            for k in live.iter().take(count) {
                m.promote_ephemeral(k, now, NewMemory::default())?;
            }
            Ok(())
        });
        r?;
        Ok(rate(count, t))
    };
    let promote_none = promote(&mut m)?;
    drop(m);
    // Every-save: refill a fresh scratchpad over a fresh store, then promote.
    let path2 = dir.join(format!("ephemeral-{capacity}-durable.h5"));
    let mut m2 = memory(&path2, capacity, Durability::EverySave)?;
    for i in n - capacity.min(n)..n {
        m2.ephemeral()
            .put(&keys[i], &texts[i], Some(vecs.vector(i as u32)), None, now);
    }
    let promote_every = promote(&mut m2)?;
    drop(m2);
    for p in [&path, &path2] {
        super::ingest::remove_store(p);
    }
    Ok(EphemeralResult {
        capacity,
        put_per_s: rate(n, put_s),
        get_per_s: rate(gets, get_s),
        search_per_s: rate(o.searches, search_s),
        promote_none_per_s: promote_none,
        promote_every_save_per_s: promote_every,
        evicted,
    })
}

/// Run the harness and write `OUT/ephemeral.{md,json}`.
pub fn run(o: &EphemeralOptions, out: &Path) -> Result<()> {
    if o.capacities.is_empty() || o.capacities.contains(&0) || o.ops == 0 {
        return Err(HarnessError::Option(
            "--capacities and --ops must be above 0".into(),
        ));
    }
    let corpus = Corpus::load(&o.locomo)?;
    let (dir, _tmp) = super::measure::work_dir(&o.work_dir)?;
    let mut results = Vec::new();
    for &c in &o.capacities {
        eprintln!("ephemeral: capacity {c}");
        results.push(measure(o, &corpus, c, &dir)?);
    }
    let mut t = Table::new(
        "Ephemeral tier (`AgentMemory::ephemeral`), one thread",
        &[
            "capacity",
            "put (ops/s)",
            "get (ops/s)",
            "search k=10 (ops/s)",
            "promote, durability none (ops/s)",
            "promote, every-save (ops/s)",
        ],
    );
    for r in &results {
        t.row(vec![
            thousands(r.capacity as u64),
            fig(r.put_per_s),
            fig(r.get_per_s),
            fig(r.search_per_s),
            fig(r.promote_none_per_s),
            fig(r.promote_every_save_per_s),
        ]);
    }
    t.notes.push(format!(
        "put: {} entries with LoCoMo-derived text and a vector ({}), evicting the least recently used once \
         full; get: hits on live keys; search: exact cosine over every live entry, k = 10; promote: \
         `promote_ephemeral` (a full cognitive save: knowledge updates, entity extraction, then the store's \
         save) into a fresh store. Redis is not compared: no `redis-server` is measured in this run.",
        thousands(o.ops as u64),
        vectors::describe()
    ));
    let mut rep = HarnessReport::new("ephemeral", o.smoke);
    rep.tables.push(t);
    rep.data = json!({ "capacities": serde_json::to_value(&results)
        .map_err(|e| HarnessError::Input(e.to_string()))? });
    rep.finish(out)
}
