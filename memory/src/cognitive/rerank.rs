//! Relevance-led re-ranking: the retrieval score decides, and recency (exponential half-life decay), source
//! authority and access activation only break near-ties.
//!
//! Final score = relevance (retrieval score divided by the best one, so the top is 1.0), plus
//! `recency_weight` · 0.5^(age / half-life), plus `authority_weight` · authority(source), plus
//! `activation_weight` · activation(access count). With the default weights (0.001, 0.02, 0.01) the
//! tie-breakers add at most 0.031, so a result can only overtake another whose relevance is within 3.1 % of
//! its own; recency alone moves a result past one within 0.1 %, i.e. it breaks near-exact ties only (on
//! LoCoMo in hybrid mode a weight of 0.005 let recency reorder unrelated turns 0.07-0.12 % apart and cost
//! Hit@1; the newer of two *conflicting* statements is put first by the conflict rule below, not by recency).
//! The default half-life is one day: recency separates what was said today from last week's, and older
//! memories tie-break by authority and use instead. A temporal ordering hint ("the first time", "most
//! recently") adds `order_weight` · position in time.
//!
//! Conflicts: two results in the top 20 that word the same kind of fact almost identically (term-sketch
//! similarity ≥ `conflict_similarity`, same agent) and whose relevance is within `conflict_margin` are put
//! newest first — the later statement of a fact wins over the earlier one.

use serde::{Deserialize, Serialize};

use super::sketch::{dot, sketch};
use crate::record::{Record, Source};
use crate::search::SearchHit;

/// Which end of the timeline a query asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimeOrder {
    /// "the first time", "originally", "earliest".
    Earliest,
    /// "most recently", "the last time", "latest", "now".
    Latest,
}

/// Re-ranker weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RerankConfig {
    /// Off: keep the retrieval order (scores are still normalised).
    pub enabled: bool,
    /// Age at which a memory's recency bonus halves (ms).
    pub half_life_ms: i64,
    /// Weight of the recency bonus.
    pub recency_weight: f32,
    /// Weight of source authority.
    pub authority_weight: f32,
    /// Weight of access activation.
    pub activation_weight: f32,
    /// Weight of the position in time when the query asks for the earliest or latest occurrence.
    pub order_weight: f32,
    /// Two results whose term sketches are at least this similar state the same kind of fact (a conflict).
    pub conflict_similarity: f32,
    /// Within a conflict, the newer result moves above the older one when its relevance is at least
    /// (1 - margin) of the older one's.
    pub conflict_margin: f32,
}

impl Default for RerankConfig {
    fn default() -> Self {
        RerankConfig {
            enabled: true,
            half_life_ms: 86_400_000,
            recency_weight: 0.001,
            authority_weight: 0.02,
            activation_weight: 0.01,
            order_weight: 0.3,
            conflict_similarity: 0.6,
            conflict_margin: 0.2,
        }
    }
}

/// One re-ranked result with the parts of its score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranked {
    /// Final score (higher is better).
    pub score: f32,
    /// Retrieval score relative to the best candidate (1.0 for the top).
    pub relevance: f32,
    /// The store's retrieval score.
    pub retrieval_score: f32,
    /// Raw BM25 score, when the keyword stage found it.
    pub keyword_score: Option<f32>,
    /// Cosine similarity, when the vector stage found it.
    pub vector_score: Option<f32>,
    /// Recency in [0, 1] (1 = happened at the reference time).
    pub recency: f32,
    /// Authority of the source in [0, 1].
    pub authority: f32,
    /// Access activation in [0, 1).
    pub activation: f32,
    /// The record.
    pub record: Record,
}

/// Authority of a source: corrections by the user outrank everything else.
pub fn authority(source: &Source) -> f32 {
    match source {
        Source::UserCorrection => 1.0,
        Source::System => 0.8,
        Source::Document => 0.7,
        Source::Conversation => 0.5,
        Source::Tool => 0.4,
        Source::Other(_) => 0.3,
    }
}

/// Time a record is about: its event time, or when it was saved.
pub fn record_time(r: &Record) -> i64 {
    r.event_time.unwrap_or(r.created_at)
}

/// Recency in [0, 1]: 0.5^(age / half-life); records from the future of the reference count as fresh.
pub fn recency(r: &Record, reference_time: i64, half_life_ms: i64) -> f32 {
    let age = (reference_time - record_time(r)).max(0) as f64;
    let hl = half_life_ms.max(1) as f64;
    (0.5f64).powf(age / hl) as f32
}

/// Activation in [0, 1) from how often search returned the record: n / (n + 4).
pub fn activation(r: &Record) -> f32 {
    let n = r.access_count as f32;
    n / (n + 4.0)
}

/// Re-rank candidates (best first). `order` adds the temporal-position term.
pub fn rerank(
    hits: Vec<SearchHit>,
    cfg: &RerankConfig,
    reference_time: i64,
    order: Option<TimeOrder>,
) -> Vec<Ranked> {
    let top = hits.iter().map(|h| h.score).fold(0.0f32, f32::max);
    let (tmin, tmax) = hits
        .iter()
        .map(|h| record_time(&h.record))
        .fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let mut out: Vec<Ranked> = hits
        .into_iter()
        .map(|h| {
            let relevance = if top > 0.0 { h.score / top } else { 0.0 };
            let rec = recency(&h.record, reference_time, cfg.half_life_ms);
            let auth = authority(&h.record.source);
            let act = activation(&h.record);
            let mut score = relevance;
            if cfg.enabled {
                score += cfg.recency_weight * rec
                    + cfg.authority_weight * auth
                    + cfg.activation_weight * act;
                if let Some(o) = order {
                    let span = (tmax - tmin) as f64;
                    let pos = if span > 0.0 {
                        ((record_time(&h.record) - tmin) as f64 / span) as f32
                    } else {
                        0.5
                    };
                    let pos = if o == TimeOrder::Latest {
                        pos
                    } else {
                        1.0 - pos
                    };
                    // Only among results that are relevant at all.
                    score += cfg.order_weight * pos * relevance;
                }
            }
            Ranked {
                score,
                relevance,
                retrieval_score: h.score,
                keyword_score: h.keyword_score,
                vector_score: h.vector_score,
                recency: rec,
                authority: auth,
                activation: act,
                record: h.record,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.record.id.cmp(&b.record.id))
    });
    // Asked for the first occurrence, the older statement is the answer: no conflict resolution.
    if cfg.enabled && cfg.conflict_margin > 0.0 && order != Some(TimeOrder::Earliest) {
        resolve_conflicts(&mut out, cfg);
    }
    out
}

/// How far down the ranking conflicts are looked for.
const CONFLICT_WINDOW: usize = 20;

/// Within the top of the ranking, put the newer of two conflicting results (near-identical wording about the
/// same thing, relevance within the margin) above the older one.
fn resolve_conflicts(out: &mut [Ranked], cfg: &RerankConfig) {
    let n = out.len().min(CONFLICT_WINDOW);
    if n < 2 {
        return;
    }
    let sketches: Vec<Vec<f32>> = out[..n].iter().map(|r| sketch(&r.record.text)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    // One pass per position: the item at position i is replaced by the newest item below it that conflicts
    // with it and is relevant enough.
    for i in 0..n {
        let a = order[i];
        let mut best: Option<usize> = None;
        for (j, &b) in order.iter().enumerate().skip(i + 1) {
            let newer = record_time(&out[b].record)
                > record_time(&out[best.map_or(a, |x| order[x])].record);
            if newer
                && out[b].record.agent == out[a].record.agent
                && out[b].relevance >= out[a].relevance * (1.0 - cfg.conflict_margin)
                && dot(&sketches[a], &sketches[b]) >= cfg.conflict_similarity
            {
                best = Some(j);
            }
        }
        if let Some(j) = best {
            let b = order.remove(j);
            order.insert(i, b);
        }
    }
    let reordered: Vec<Ranked> = order.iter().map(|&k| out[k].clone()).collect();
    for (slot, r) in out.iter_mut().zip(reordered) {
        *slot = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Tier;

    pub(crate) fn rec(id: u64, text: &str, source: Source, time: i64) -> Record {
        Record {
            id,
            text: text.into(),
            source,
            agent: "main".into(),
            session: String::new(),
            origin: None,
            tags: vec![],
            event_time: Some(time),
            created_at: time,
            importance: 0.5,
            access_count: 0,
            last_access: 0,
            tier: Tier::Working,
            supersedes: None,
            superseded_by: None,
            tombstone: false,
            embedding: None,
        }
    }

    fn hit(score: f32, r: Record) -> SearchHit {
        SearchHit {
            score,
            keyword_score: Some(score),
            vector_score: None,
            record: r,
        }
    }

    const DAY: i64 = 86_400_000;

    #[test]
    fn relevance_dominates() {
        let old_relevant = rec(1, "a", Source::Conversation, 0);
        let new_weak = rec(2, "b", Source::UserCorrection, 100 * DAY);
        let r = rerank(
            vec![hit(1.0, old_relevant), hit(0.8, new_weak)],
            &RerankConfig::default(),
            100 * DAY,
            None,
        );
        assert_eq!(r[0].record.id, 1);
    }

    #[test]
    fn recency_does_not_reorder_compressed_hybrid_scores() {
        // Hybrid scores sit close together (0.6 · keyword + 0.4 · cosine): 0.11 % apart is still a
        // relevance difference, and a fresh unrelated turn must not overtake the older, better one.
        let older = rec(
            1,
            "Nate: video games are my main hobbies",
            Source::Conversation,
            0,
        );
        let newer = rec(
            2,
            "Tim: we played chess at the club last night",
            Source::Conversation,
            30 * DAY,
        );
        let r = rerank(
            vec![hit(0.6951, older), hit(0.6943, newer)],
            &RerankConfig::default(),
            30 * DAY,
            None,
        );
        assert_eq!(r[0].record.id, 1);
    }

    #[test]
    fn ties_go_to_newer_and_corrections() {
        let old = rec(1, "I live in Paris", Source::Conversation, 0);
        let new = rec(2, "I live in Berlin", Source::Conversation, 10 * DAY);
        let r = rerank(
            vec![hit(1.0, old.clone()), hit(0.9997, new)],
            &RerankConfig::default(),
            11 * DAY,
            None,
        );
        assert_eq!(r[0].record.id, 2);
        let corr = rec(3, "Actually I live in Lyon", Source::UserCorrection, 0);
        let r = rerank(
            vec![hit(1.0, old), hit(0.995, corr)],
            &RerankConfig::default(),
            0,
            None,
        );
        assert_eq!(r[0].record.id, 3);
    }

    #[test]
    fn newer_of_two_conflicting_facts_wins() {
        let old = rec(
            1,
            "Alice's favourite color is teal",
            Source::Conversation,
            0,
        );
        let new = rec(
            2,
            "Alice said the favourite color is amber",
            Source::Conversation,
            5 * DAY,
        );
        let other = rec(3, "Alice painted the fence", Source::Conversation, 9 * DAY);
        let r = rerank(
            vec![
                hit(1.0, old.clone()),
                hit(0.85, new.clone()),
                hit(0.8, other),
            ],
            &RerankConfig::default(),
            10 * DAY,
            None,
        );
        assert_eq!(
            r.iter().map(|x| x.record.id).collect::<Vec<_>>(),
            vec![2, 1, 3]
        );
        // Too far apart in relevance: relevance still leads.
        let r = rerank(
            vec![hit(1.0, old), hit(0.5, new)],
            &RerankConfig::default(),
            10 * DAY,
            None,
        );
        assert_eq!(r[0].record.id, 1);
    }

    #[test]
    fn order_hint_prefers_the_asked_end() {
        let a = rec(1, "went to the museum", Source::Conversation, 0);
        let b = rec(
            2,
            "went to the museum again",
            Source::Conversation,
            50 * DAY,
        );
        let cfg = RerankConfig::default();
        let r = rerank(
            vec![hit(1.0, b.clone()), hit(0.9, a.clone())],
            &cfg,
            60 * DAY,
            Some(TimeOrder::Earliest),
        );
        assert_eq!(r[0].record.id, 1);
        let r = rerank(
            vec![hit(1.0, a), hit(0.9, b)],
            &cfg,
            60 * DAY,
            Some(TimeOrder::Latest),
        );
        assert_eq!(r[0].record.id, 2);
    }

    #[test]
    fn disabled_keeps_retrieval_order() {
        let old = rec(1, "x", Source::Conversation, 0);
        let new = rec(2, "y", Source::UserCorrection, DAY);
        let cfg = RerankConfig {
            enabled: false,
            ..Default::default()
        };
        let r = rerank(vec![hit(1.0, old), hit(0.999, new)], &cfg, DAY, None);
        assert_eq!(r[0].record.id, 1);
        assert!((r[0].score - 1.0).abs() < 1e-6);
    }
}
