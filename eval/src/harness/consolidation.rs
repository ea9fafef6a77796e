//! `consolidation`: the cost of a consolidation cycle through the cognitive layer (`AgentMemory::consolidate`)
//! at 1K / 10K / 100K records, and what consolidation does to retrieval: LoCoMo evidence recall (BM25, through
//! `AgentMemory::search`) before any cycle and after full passes at simulated ages of the memories.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use clawhdf5_memory::cognitive::consolidation::ConsolidationConfig;
use clawhdf5_memory::cognitive::{AgentMemory, CognitiveConfig};
use clawhdf5_memory::{Durability, NewMemory, SearchMode, SearchQuery, Store, StoreOptions, Tier};
use serde_json::json;

use super::corpus::{load_locomo, Corpus};
use super::error::{io_at, HarnessError, Result};
use super::ingest::remove_store;
use super::measure::{fig, latency, median, size_label, thousands, timed, Latency};
use super::report::{HarnessReport, Table};
use crate::locomo::Conversation;
use crate::metrics::score_ranking;

const DAY: i64 = 86_400_000;

/// Settings of a `consolidation` run.
#[derive(Clone, Debug)]
pub struct ConsolidationOptions {
    /// Store sizes of the cycle-time table.
    pub sizes: Vec<usize>,
    /// Smoke size.
    pub smoke: bool,
    /// LoCoMo folder (record texts and the quality query set).
    pub locomo: PathBuf,
    /// Folder for the stores (a temporary folder when absent).
    pub work_dir: Option<PathBuf>,
    /// Ask at most this many LoCoMo questions (evenly strided; all when absent).
    pub question_limit: Option<usize>,
    /// Use only the first this many conversations (all when absent).
    pub conversations: Option<usize>,
}

/// Cycle times at one size.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CycleResult {
    /// Records in the store.
    pub records: usize,
    /// Incremental cycles (default batch), durability none: ms each, in order.
    pub incremental_none_ms: Vec<f64>,
    /// Changes decided by the first incremental cycle.
    pub incremental_changes: usize,
    /// The same first incremental cycle with durability every-save (one fsync per logged change), ms.
    pub incremental_every_save_ms: f64,
    /// A full pass (batch 0, every record), durability none, ms.
    pub full_none_ms: f64,
    /// Changes decided by the full pass.
    pub full_changes: usize,
}

fn options(durability: Durability) -> StoreOptions {
    StoreOptions {
        durability,
        config: clawhdf5_memory::StoreConfig {
            // Keyword-only: consolidation reads text sketches, not embeddings.
            exact_search_threshold: u32::MAX,
            ..Default::default()
        },
        ..StoreOptions::default()
    }
}

fn cognitive(batch: usize) -> CognitiveConfig {
    CognitiveConfig {
        consolidation: ConsolidationConfig {
            batch,
            ..ConsolidationConfig::default()
        },
        ..CognitiveConfig::default()
    }
}

fn copy_store(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).map_err(io_at(to))?;
    let (wf, wt) = (
        clawhdf5_memory::wal_path(from),
        clawhdf5_memory::wal_path(to),
    );
    if wf.exists() {
        std::fs::copy(&wf, &wt).map_err(io_at(&wt))?;
    }
    Ok(())
}

/// Build a keyword-only store of `n` corpus records, checkpointed and closed, at `path`.
fn build_store(corpus: &Corpus, n: usize, path: &Path) -> Result<()> {
    let recs = corpus.records(n)?;
    let mut s = Store::open_with(path, options(Durability::None))?;
    for (i, r) in recs.iter().enumerate() {
        s.save_deferred(NewMemory {
            text: r.text.clone(),
            session: Some(r.session.clone()),
            event_time: r.event_time,
            // Deterministic spread of importance in [0.3, 0.9).
            importance: Some(0.3 + ((i * 7919) % 60) as f32 / 100.0),
            ..NewMemory::default()
        })?;
    }
    s.close()?;
    Ok(())
}

fn cycle(
    path: &Path,
    durability: Durability,
    batch: usize,
    cycles: usize,
) -> Result<Vec<(f64, usize)>> {
    let s = Store::open_with(
        path,
        StoreOptions {
            create: false,
            ..options(durability)
        },
    )?;
    let mut m = AgentMemory::from_store(s, cognitive(batch))?;
    // Two days after saving: every Working record is past its window.
    let now = clawhdf5_memory::now_ms() + 2 * DAY;
    let mut out = Vec::new();
    for _ in 0..cycles {
        let (rep, t) = timed(|| m.consolidate(now));
        let rep = rep?;
        out.push((
            t * 1e3,
            rep.to_episodic + rep.to_semantic + rep.archived + rep.reweighted,
        ));
    }
    drop(m);
    Ok(out)
}

/// Cycle times at `n` records.
pub fn measure_cycles(corpus: &Corpus, n: usize, dir: &Path) -> Result<CycleResult> {
    let base = dir.join(format!("consolidation-{n}.h5"));
    eprintln!("consolidation: {n} records: building the store");
    build_store(corpus, n, &base)?;
    let copies: Vec<PathBuf> = ["a", "b", "c"]
        .iter()
        .map(|x| dir.join(format!("consolidation-{n}-{x}.h5")))
        .collect();
    for c in &copies {
        copy_store(&base, c)?;
    }
    eprintln!("consolidation: {n} records: cycles");
    let incr = cycle(
        &copies[0],
        Durability::None,
        ConsolidationConfig::default().batch,
        3,
    )?;
    let every = cycle(
        &copies[1],
        Durability::EverySave,
        ConsolidationConfig::default().batch,
        1,
    )?;
    let full = cycle(&copies[2], Durability::None, 0, 1)?;
    for p in copies.iter().chain(std::iter::once(&base)) {
        remove_store(p);
    }
    Ok(CycleResult {
        records: n,
        incremental_none_ms: incr.iter().map(|x| x.0).collect(),
        incremental_changes: incr.first().map_or(0, |x| x.1),
        incremental_every_save_ms: every.first().map_or(0.0, |x| x.0),
        full_none_ms: full.first().map_or(0.0, |x| x.0),
        full_changes: full.first().map_or(0, |x| x.1),
    })
}

/// Retrieval quality at one stage.
#[derive(Clone, Debug, serde::Serialize)]
pub struct QualityRow {
    /// Stage label.
    pub stage: String,
    /// Questions asked.
    pub questions: usize,
    /// Mean recall_any@1, @5, @10.
    pub recall_any: [f64; 3],
    /// Mean reciprocal rank.
    pub mrr: f64,
    /// Search latency.
    pub latency: Latency,
    /// Records per tier: working, episodic, semantic, archived.
    pub tiers: [usize; 4],
    /// Evidence turns of the asked questions that are Archived (distinct), of all evidence turns.
    pub evidence_archived: (usize, usize),
    /// Consolidation time of the stage (ms summed over conversations; 0 before any cycle).
    pub cycle_ms: f64,
}

struct ConvStore {
    memory: AgentMemory,
    reference: i64,
    questions: Vec<(String, HashSet<String>)>,
}

const KS: [usize; 3] = [1, 5, 10];

fn ask(stores: &[ConvStore], stage: &str, cycle_ms: f64) -> Result<QualityRow> {
    let mut sums = [0.0f64; 3];
    let mut mrr = 0.0;
    let mut n = 0usize;
    let mut times = Vec::new();
    let mut tiers = [0usize; 4];
    let (res, total) = timed(|| -> Result<()> {
        for s in stores {
            for (q, gold) in &s.questions {
                let mut sq = SearchQuery::new(q.clone(), 10);
                sq.mode = SearchMode::Keyword;
                let (r, t) = timed(|| s.memory.search(&sq, s.reference));
                times.push(t);
                let ranked: Vec<String> = r?
                    .hits
                    .iter()
                    .filter_map(|h| h.record.tags.first().cloned())
                    .collect();
                let sc = score_ranking(&ranked, gold, &KS);
                for (i, x) in sc.recall_any.iter().enumerate() {
                    sums[i] += x;
                }
                mrr += sc.reciprocal_rank;
                n += 1;
            }
        }
        Ok(())
    });
    res?;
    let mut evidence = (0usize, 0usize);
    for s in stores {
        let gold: HashSet<&String> = s.questions.iter().flat_map(|(_, g)| g.iter()).collect();
        evidence.1 += gold.len();
        for r in s.memory.store().records() {
            if r.tombstone {
                continue;
            }
            if r.tier == Tier::Archived && r.tags.first().is_some_and(|t| gold.contains(t)) {
                evidence.0 += 1;
            }
            tiers[match r.tier {
                Tier::Working => 0,
                Tier::Episodic => 1,
                Tier::Semantic => 2,
                Tier::Archived => 3,
            }] += 1;
        }
    }
    let d = n.max(1) as f64;
    Ok(QualityRow {
        stage: stage.into(),
        questions: n,
        recall_any: [sums[0] / d, sums[1] / d, sums[2] / d],
        mrr: mrr / d,
        latency: latency(&times, total),
        tiers,
        evidence_archived: evidence,
        cycle_ms,
    })
}

/// LoCoMo evidence recall before consolidation and after full passes at simulated ages.
pub fn measure_quality(
    convs: &[Conversation],
    limit: Option<usize>,
    dir: &Path,
) -> Result<Vec<QualityRow>> {
    let total_q: usize = convs
        .iter()
        .flat_map(|c| &c.questions)
        .filter(|q| (1..=4).contains(&q.category) && !q.evidence.is_empty())
        .count();
    let stride = limit.map_or(1, |l| total_q.div_ceil(l.max(1)).max(1));
    let mut stores = Vec::new();
    let mut qi = 0usize;
    eprintln!(
        "consolidation: LoCoMo quality: saving {} conversations",
        convs.len()
    );
    for (ci, c) in convs.iter().enumerate() {
        let path = dir.join(format!("locomo-{ci}.h5"));
        let s = Store::open_with(&path, options(Durability::None))?;
        let mut m = AgentMemory::from_store(s, cognitive(0))?;
        let mut reference = 0i64;
        for sess in &c.sessions {
            let t = sess.time;
            reference = reference.max(t.unwrap_or(0));
            for turn in &sess.turns {
                let mut text = format!("{}: {}", turn.speaker, turn.text.trim());
                if let Some(cap) = &turn.caption {
                    text.push_str(&format!(" [shares a photo: {}]", cap.trim()));
                }
                m.save(NewMemory {
                    text,
                    session: Some(format!("session_{}", sess.number)),
                    event_time: t,
                    tags: vec![turn.dia_id.clone()],
                    ..NewMemory::default()
                })?;
            }
        }
        let mut questions = Vec::new();
        for q in &c.questions {
            if !(1..=4).contains(&q.category) || q.evidence.is_empty() {
                continue;
            }
            if qi.is_multiple_of(stride) {
                questions.push((q.question.clone(), q.evidence.iter().cloned().collect()));
            }
            qi += 1;
        }
        stores.push(ConvStore {
            memory: m,
            reference,
            questions,
        });
    }
    let mut rows = vec![ask(&stores, "before consolidation", 0.0)?];
    let start = clawhdf5_memory::now_ms();
    for days in [2i64, 30, 180] {
        eprintln!("consolidation: LoCoMo quality: full pass at +{days} days");
        let mut ms = 0.0;
        for s in &mut stores {
            let (r, t) = timed(|| s.memory.consolidate(start + days * DAY));
            r?;
            ms += t * 1e3;
        }
        rows.push(ask(
            &stores,
            &format!("after a full pass at +{days} days"),
            ms,
        )?);
    }
    drop(stores);
    for ci in 0..convs.len() {
        remove_store(&dir.join(format!("locomo-{ci}.h5")));
    }
    Ok(rows)
}

fn cycle_table(rs: &[CycleResult]) -> Table {
    let mut t = Table::new(
        "Consolidation cycle time through `AgentMemory::consolidate`",
        &[
            "records",
            "incremental cycle, durability none (ms): 1st / median of 3",
            "changes (1st cycle)",
            "incremental cycle, every-save (ms)",
            "full pass, durability none (ms)",
            "changes (full pass)",
        ],
    );
    for r in rs {
        t.row(vec![
            thousands(r.records as u64),
            format!(
                "{} / {}",
                fig(r.incremental_none_ms.first().copied().unwrap_or(0.0)),
                fig(median(&r.incremental_none_ms))
            ),
            thousands(r.incremental_changes as u64),
            fig(r.incremental_every_save_ms),
            fig(r.full_none_ms),
            thousands(r.full_changes as u64),
        ]);
    }
    t.notes.push(format!(
        "Keyword-only stores of LoCoMo-derived records (two turns each), importance spread over 0.3–0.9; the \
         clock is two days after saving, so every Working record is due. Incremental = the default batch ({} \
         records examined per cycle, resuming from a persisted cursor); full pass = batch 0 on a fresh copy. \
         A cycle's decided changes go through the store's log as one batch (`Store::update_many`: one write, \
         one fsync under durability every-save).",
        thousands(ConsolidationConfig::default().batch as u64)
    ));
    t
}

fn quality_table(rows: &[QualityRow]) -> Table {
    let mut t = Table::new(
        "LoCoMo evidence recall before and after consolidation (BM25 through `AgentMemory::search`, turn level)",
        &[
            "stage",
            "questions",
            "recall_any@1",
            "recall_any@5",
            "recall_any@10",
            "MRR",
            "search p50 (ms)",
            "tiers W / E / S / A",
            "evidence turns archived",
            "cycle time, all conversations (ms)",
        ],
    );
    for r in rows {
        t.row(vec![
            r.stage.clone(),
            r.questions.to_string(),
            format!("{:.3}", r.recall_any[0]),
            format!("{:.3}", r.recall_any[1]),
            format!("{:.3}", r.recall_any[2]),
            format!("{:.3}", r.mrr),
            fig(r.latency.p50_ms),
            format!(
                "{} / {} / {} / {}",
                r.tiers[0], r.tiers[1], r.tiers[2], r.tiers[3]
            ),
            format!("{} of {}", r.evidence_archived.0, r.evidence_archived.1),
            if r.cycle_ms > 0.0 {
                fig(r.cycle_ms)
            } else {
                "—".into()
            },
        ]);
    }
    t.notes.push(
        "One store per LoCoMo conversation, every turn saved through `AgentMemory::save` (default cognitive \
         settings: knowledge updates, entity extraction) with its dia_id as tag; categories 1–4. Full passes \
         (batch 0) run with the clock 2, 30 and 180 days after saving, in that order, on the same stores; \
         search excludes Archived records (the default), so recall lost here is what an agent would lose."
            .into(),
    );
    t
}

/// Run the harness and write `OUT/consolidation.{md,json}`.
pub fn run(o: &ConsolidationOptions, out: &Path) -> Result<()> {
    if o.sizes.contains(&0) {
        return Err(HarnessError::Option("--sizes must be above 0".into()));
    }
    let convs = load_locomo(&o.locomo)?;
    let convs: Vec<Conversation> = match o.conversations {
        Some(n) => convs.into_iter().take(n.max(1)).collect(),
        None => convs,
    };
    let corpus = Corpus::new(&convs)?;
    let (dir, _tmp) = super::measure::work_dir(&o.work_dir)?;
    let mut cycles = Vec::new();
    for &n in &o.sizes {
        cycles.push(measure_cycles(&corpus, n, &dir)?);
    }
    let quality = measure_quality(&convs, o.question_limit, &dir)?;
    let mut rep = HarnessReport::new("consolidation", o.smoke);
    rep.notes.push(format!(
        "Sizes: {}; LoCoMo: {} conversations from {}.",
        o.sizes
            .iter()
            .map(|&n| size_label(n))
            .collect::<Vec<_>>()
            .join(", "),
        convs.len(),
        o.locomo.display()
    ));
    rep.tables.push(cycle_table(&cycles));
    rep.tables.push(quality_table(&quality));
    rep.data = json!({ "cycles": serde_json::to_value(&cycles)
        .map_err(|e| HarnessError::Input(e.to_string()))?,
        "quality": serde_json::to_value(&quality).map_err(|e| HarnessError::Input(e.to_string()))? });
    rep.finish(out)
}
