//! Consolidation: Working → Episodic → Semantic promotion and eviction to Archived, run incrementally.
//!
//! Each cycle examines up to `batch` records after a persisted cursor (wrapping around), so a cycle's cost is
//! bounded whatever the store's size. Per record it computes a strength — importance decayed with a tier's
//! half-life since the record was last used, plus access activation — and a novelty — one minus the highest
//! similarity of its term sketch to the Semantic records' sketches, computed as one matrix-vector product
//! over a contiguous matrix. Then:
//!
//! * Working older than `working_window_ms` (or beyond `working_capacity`, oldest first): a near-duplicate
//!   of Semantic knowledge reinforces that record and is archived; anything else moves to Episodic with its
//!   importance nudged by novelty.
//! * Episodic: promoted to Semantic when accessed often, important, or repeated across episodes; archived
//!   when its strength falls below `evict_below`.
//! * Semantic: archived only when its (slowly decaying) strength falls below a quarter of `evict_below`.
//!
//! Archived records stay in the store (searchable with `include_archived`) until explicitly forgotten.

use serde::{Deserialize, Serialize};

use super::rerank::activation;
use super::sketch::{dot, max_similarity, sketch, SKETCH_DIM};
use crate::record::{Record, Tier};

/// Consolidation thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConsolidationConfig {
    /// Records examined per cycle (0: all).
    pub batch: usize,
    /// Age after which a Working record is consolidated (ms).
    pub working_window_ms: i64,
    /// Most Working records kept; the oldest beyond it are consolidated early.
    pub working_capacity: usize,
    /// Accesses that make an Episodic record Semantic.
    pub semantic_min_access: u32,
    /// Importance that makes an Episodic record Semantic.
    pub semantic_min_importance: f32,
    /// Similar recent Episodic records that make one Semantic (a fact repeated across episodes).
    pub semantic_min_repeats: u32,
    /// Sketch similarity at which two records say the same thing.
    pub repeat_similarity: f32,
    /// Strength below which an Episodic record is archived.
    pub evict_below: f32,
    /// Half-life of an Episodic record's strength (ms).
    pub episodic_half_life_ms: i64,
    /// Half-life of a Semantic record's strength (ms).
    pub semantic_half_life_ms: i64,
}

impl Default for ConsolidationConfig {
    fn default() -> Self {
        ConsolidationConfig {
            batch: 4096,
            working_window_ms: 86_400_000,
            working_capacity: 512,
            semantic_min_access: 3,
            semantic_min_importance: 0.8,
            semantic_min_repeats: 2,
            repeat_similarity: 0.85,
            evict_below: 0.05,
            episodic_half_life_ms: 30 * 86_400_000,
            semantic_half_life_ms: 365 * 86_400_000,
        }
    }
}

/// Persisted progress of consolidation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConsolidationState {
    /// Id of the last record examined.
    pub cursor: u64,
    /// Cycles run.
    pub cycles: u64,
    /// Records promoted so far.
    pub promoted: u64,
    /// Records archived so far.
    pub archived: u64,
}

/// One change a cycle decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    /// Move a record to a tier.
    Tier(u64, Tier),
    /// Set a record's importance.
    Importance(u64, f32),
}

/// What one cycle did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CycleReport {
    /// Records examined.
    pub examined: usize,
    /// Working → Episodic moves.
    pub to_episodic: usize,
    /// → Semantic moves.
    pub to_semantic: usize,
    /// → Archived moves.
    pub archived: usize,
    /// Importance changes.
    pub reweighted: usize,
}

/// Working memory of the consolidator: sketches of Semantic records and of recent Episodic ones.
#[derive(Debug, Default)]
pub struct Consolidator {
    /// Persisted progress.
    pub state: ConsolidationState,
    semantic: Vec<f32>,
    semantic_ids: Vec<u64>,
    recent_episodic: Vec<f32>,
    recent_next: usize,
    loaded: bool,
}

const RECENT_EPISODIC: usize = 1024;

/// Strength of a record at `now`: importance decayed since last use, plus half its access activation.
pub fn strength(r: &Record, now: i64, cfg: &ConsolidationConfig) -> f32 {
    let half_life = match r.tier {
        Tier::Semantic => cfg.semantic_half_life_ms,
        _ => cfg.episodic_half_life_ms,
    }
    .max(1) as f64;
    let since = r
        .last_access
        .max(r.event_time.unwrap_or(r.created_at))
        .max(r.created_at.min(now));
    let age = (now - since).max(0) as f64;
    r.importance * (0.5f64).powf(age / half_life) as f32 + 0.5 * activation(r)
}

impl Consolidator {
    /// A consolidator resuming from persisted progress.
    pub fn new(state: ConsolidationState) -> Self {
        Consolidator {
            state,
            ..Default::default()
        }
    }

    fn load(&mut self, records: &[Record]) {
        if self.loaded {
            return;
        }
        for r in records
            .iter()
            .filter(|r| !r.tombstone && r.tier == Tier::Semantic)
        {
            self.semantic.extend(sketch(&r.text));
            self.semantic_ids.push(r.id);
        }
        self.loaded = true;
    }

    fn remember_episodic(&mut self, s: &[f32]) {
        if self.recent_episodic.len() < RECENT_EPISODIC * SKETCH_DIM {
            self.recent_episodic.extend_from_slice(s);
        } else {
            let at = self.recent_next * SKETCH_DIM;
            self.recent_episodic[at..at + SKETCH_DIM].copy_from_slice(s);
            self.recent_next = (self.recent_next + 1) % RECENT_EPISODIC;
        }
    }

    /// Decide one cycle's changes over `records` (row order = id order) at time `now`.
    pub fn cycle(
        &mut self,
        records: &[Record],
        now: i64,
        cfg: &ConsolidationConfig,
    ) -> (Vec<Change>, CycleReport) {
        self.load(records);
        let mut changes = Vec::new();
        let mut report = CycleReport::default();
        if records.is_empty() {
            return (changes, report);
        }
        // Working records beyond capacity, oldest first: the cut-off time below which they consolidate.
        let mut working_times: Vec<i64> = records
            .iter()
            .filter(|r| !r.tombstone && r.tier == Tier::Working)
            .map(|r| r.created_at)
            .collect();
        let capacity_cutoff = if working_times.len() > cfg.working_capacity {
            let excess = working_times.len() - cfg.working_capacity;
            let (_, nth, _) = working_times.select_nth_unstable(excess - 1);
            Some(*nth)
        } else {
            None
        };
        let start = records.partition_point(|r| r.id <= self.state.cursor);
        let n = if cfg.batch == 0 {
            records.len()
        } else {
            cfg.batch.min(records.len())
        };
        for k in 0..n {
            let r = &records[(start + k) % records.len()];
            self.state.cursor = r.id;
            if r.tombstone || r.tier == Tier::Archived {
                continue;
            }
            report.examined += 1;
            let s = strength(r, now, cfg);
            match r.tier {
                Tier::Working => {
                    let aged = now - r.created_at >= cfg.working_window_ms;
                    let over = capacity_cutoff.is_some_and(|c| r.created_at <= c);
                    if !(aged || over) {
                        continue;
                    }
                    let sk = sketch(&r.text);
                    let best = self.best_semantic(&sk);
                    match best {
                        Some((sim, sem_id)) if sim >= cfg.repeat_similarity => {
                            // Already known: reinforce the semantic record, archive the duplicate.
                            if let Some(sem) = records
                                .binary_search_by_key(&sem_id, |x| x.id)
                                .ok()
                                .map(|i| &records[i])
                            {
                                changes.push(Change::Importance(
                                    sem_id,
                                    (sem.importance + 0.1).min(1.0),
                                ));
                                report.reweighted += 1;
                            }
                            changes.push(Change::Tier(r.id, Tier::Archived));
                            report.archived += 1;
                            self.state.archived += 1;
                        }
                        other => {
                            let novelty = 1.0 - other.map_or(0.0, |x| x.0).max(0.0);
                            let imp = (r.importance + 0.2 * (novelty - 0.5)).clamp(0.0, 1.0);
                            if (imp - r.importance).abs() > 0.01 {
                                changes.push(Change::Importance(r.id, imp));
                                report.reweighted += 1;
                            }
                            changes.push(Change::Tier(r.id, Tier::Episodic));
                            report.to_episodic += 1;
                            self.remember_episodic(&sk);
                        }
                    }
                }
                Tier::Episodic => {
                    let sk = sketch(&r.text);
                    let repeats = self
                        .recent_episodic
                        .chunks_exact(SKETCH_DIM)
                        .filter(|row| dot(row, &sk) >= cfg.repeat_similarity)
                        .count()
                        // The record's own sketch may be in the window.
                        .saturating_sub(1) as u32;
                    let promote = r.access_count >= cfg.semantic_min_access
                        || r.importance >= cfg.semantic_min_importance
                        || repeats >= cfg.semantic_min_repeats;
                    if promote {
                        changes.push(Change::Tier(r.id, Tier::Semantic));
                        report.to_semantic += 1;
                        self.state.promoted += 1;
                        self.semantic.extend_from_slice(&sk);
                        self.semantic_ids.push(r.id);
                    } else if s < cfg.evict_below {
                        changes.push(Change::Tier(r.id, Tier::Archived));
                        report.archived += 1;
                        self.state.archived += 1;
                    }
                }
                Tier::Semantic => {
                    if s < cfg.evict_below / 4.0 {
                        changes.push(Change::Tier(r.id, Tier::Archived));
                        report.archived += 1;
                        self.state.archived += 1;
                        if let Some(p) = self.semantic_ids.iter().position(|&x| x == r.id) {
                            self.semantic_ids.remove(p);
                            self.semantic.drain(p * SKETCH_DIM..(p + 1) * SKETCH_DIM);
                        }
                    }
                }
                Tier::Archived => {}
            }
        }
        self.state.cycles += 1;
        (changes, report)
    }

    /// Best (similarity, id) among Semantic sketches.
    fn best_semantic(&self, sk: &[f32]) -> Option<(f32, u64)> {
        if self.semantic_ids.is_empty() {
            return None;
        }
        let best = max_similarity(sk, &self.semantic, SKETCH_DIM);
        let idx = self
            .semantic
            .chunks_exact(SKETCH_DIM)
            .position(|row| dot(row, sk) >= best)
            .unwrap_or(0);
        Some((best, self.semantic_ids[idx]))
    }

    /// Forget cached sketches (after records were forgotten or tiers changed outside consolidation).
    pub fn invalidate(&mut self) {
        self.semantic.clear();
        self.semantic_ids.clear();
        self.loaded = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Source;

    const DAY: i64 = 86_400_000;

    fn rec(id: u64, text: &str, tier: Tier, created: i64) -> Record {
        Record {
            id,
            text: text.into(),
            source: Source::Conversation,
            agent: "main".into(),
            session: String::new(),
            origin: None,
            tags: vec![],
            event_time: None,
            created_at: created,
            importance: 0.5,
            access_count: 0,
            last_access: 0,
            tier,
            supersedes: None,
            superseded_by: None,
            tombstone: false,
            embedding: None,
        }
    }

    fn apply(records: &mut [Record], changes: &[Change]) {
        for c in changes {
            match *c {
                Change::Tier(id, t) => records.iter_mut().find(|r| r.id == id).unwrap().tier = t,
                Change::Importance(id, x) => {
                    records.iter_mut().find(|r| r.id == id).unwrap().importance = x
                }
            }
        }
    }

    #[test]
    fn working_ages_into_episodic_then_semantic_or_archive() {
        let cfg = ConsolidationConfig::default();
        let mut records = vec![
            rec(1, "my passport number is X123", Tier::Working, 0),
            rec(2, "we talked about the weather", Tier::Working, 0),
            rec(3, "fresh thought", Tier::Working, 10 * DAY),
        ];
        records[0].access_count = 5;
        let mut c = Consolidator::default();
        let (ch, rep) = c.cycle(&records, 10 * DAY, &cfg);
        assert_eq!(rep.to_episodic, 2, "{rep:?}");
        apply(&mut records, &ch);
        assert_eq!(records[2].tier, Tier::Working, "too young");
        let (ch, rep) = c.cycle(&records, 200 * DAY, &cfg);
        apply(&mut records, &ch);
        assert_eq!(records[0].tier, Tier::Semantic, "{rep:?}");
        assert_eq!(records[1].tier, Tier::Archived, "decayed away");
    }

    #[test]
    fn duplicates_of_semantic_knowledge_are_archived() {
        let cfg = ConsolidationConfig::default();
        let mut records = vec![
            rec(1, "Alice's birthday is on March 3", Tier::Semantic, 0),
            rec(2, "Alice birthday is on March 3", Tier::Working, 0),
        ];
        let mut c = Consolidator::default();
        let (ch, rep) = c.cycle(&records, 2 * DAY, &cfg);
        apply(&mut records, &ch);
        assert_eq!(records[1].tier, Tier::Archived, "{rep:?}");
        assert!(records[0].importance > 0.5);
    }

    #[test]
    fn batches_resume_from_the_cursor() {
        let cfg = ConsolidationConfig {
            batch: 2,
            ..Default::default()
        };
        let records: Vec<Record> = (1..=5)
            .map(|i| rec(i, &format!("note number {i}"), Tier::Working, 0))
            .collect();
        let mut c = Consolidator::default();
        let (_, r1) = c.cycle(&records, 2 * DAY, &cfg);
        assert_eq!(c.state.cursor, 2);
        let (_, r2) = c.cycle(&records, 2 * DAY, &cfg);
        assert_eq!(c.state.cursor, 4);
        assert_eq!(r1.examined + r2.examined, 4);
        let _ = c.cycle(&records, 2 * DAY, &cfg);
        assert_eq!(c.state.cursor, 1, "wraps around");
    }

    #[test]
    fn capacity_forces_consolidation() {
        let cfg = ConsolidationConfig {
            working_capacity: 1,
            ..Default::default()
        };
        let records = vec![
            rec(1, "first", Tier::Working, 0),
            rec(2, "second", Tier::Working, 1),
        ];
        let mut c = Consolidator::default();
        let (ch, _) = c.cycle(&records, 2, &cfg);
        assert!(ch.contains(&Change::Tier(1, Tier::Episodic)));
        assert!(!ch.contains(&Change::Tier(2, Tier::Episodic)));
    }
}
