//! Confidence rejection: drop results whose evidence is too weak in absolute terms or too far below the best
//! one. An empty answer ("I don't know") is a valid outcome.

use serde::{Deserialize, Serialize};

use super::rerank::Ranked;

/// Rejection thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceConfig {
    /// A result found only by keywords needs at least this raw BM25 score (`None`: no floor).
    pub min_keyword_score: Option<f32>,
    /// A result found only by vectors needs at least this cosine similarity (`None`: no floor).
    pub min_vector_score: Option<f32>,
    /// Results scoring below this fraction of the best final score are dropped (0 keeps everything).
    pub min_relative: f32,
}

impl Default for ConfidenceConfig {
    fn default() -> Self {
        ConfidenceConfig {
            min_keyword_score: Some(0.1),
            min_vector_score: Some(0.3),
            min_relative: 0.25,
        }
    }
}

/// Whether one result carries enough absolute evidence: any signal above its floor is enough.
fn strong_enough(r: &Ranked, cfg: &ConfidenceConfig) -> bool {
    let kw = match (r.keyword_score, cfg.min_keyword_score) {
        (Some(s), Some(min)) => s >= min,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let vec = match (r.vector_score, cfg.min_vector_score) {
        (Some(s), Some(min)) => s >= min,
        (Some(_), None) => true,
        (None, _) => false,
    };
    // A result without either stage's score (e.g. added by graph expansion) is judged by its relative score.
    kw || vec || (r.keyword_score.is_none() && r.vector_score.is_none())
}

/// Keep the confident results (input best first, order kept); returns them and how many were rejected.
pub fn reject(ranked: Vec<Ranked>, cfg: &ConfidenceConfig) -> (Vec<Ranked>, usize) {
    let (kept, rejected) = split(ranked, cfg);
    (kept, rejected.len())
}

/// The confident results and the rejected ones, each in input order.
pub fn split(ranked: Vec<Ranked>, cfg: &ConfidenceConfig) -> (Vec<Ranked>, Vec<Ranked>) {
    let top = ranked
        .iter()
        .find(|r| strong_enough(r, cfg))
        .map_or(0.0, |r| r.score);
    ranked
        .into_iter()
        .partition(|r| strong_enough(r, cfg) && top > 0.0 && r.score >= cfg.min_relative * top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Record, Source, Tier};

    fn ranked(score: f32, kw: Option<f32>, vs: Option<f32>) -> Ranked {
        Ranked {
            score,
            relevance: score,
            retrieval_score: score,
            keyword_score: kw,
            vector_score: vs,
            recency: 0.0,
            authority: 0.5,
            activation: 0.0,
            record: Record {
                id: 1,
                text: "x".into(),
                source: Source::Conversation,
                agent: "main".into(),
                session: String::new(),
                origin: None,
                tags: vec![],
                event_time: None,
                created_at: 0,
                importance: 0.5,
                access_count: 0,
                last_access: 0,
                tier: Tier::Working,
                supersedes: None,
                superseded_by: None,
                tombstone: false,
                embedding: None,
            },
        }
    }

    #[test]
    fn weak_evidence_is_rejected() {
        let cfg = ConfidenceConfig::default();
        let (kept, rej) = reject(
            vec![ranked(1.0, Some(0.05), None), ranked(0.9, None, Some(0.1))],
            &cfg,
        );
        assert!(kept.is_empty(), "I don't know");
        assert_eq!(rej, 2);
    }

    #[test]
    fn far_below_top_is_rejected() {
        let cfg = ConfidenceConfig::default();
        let (kept, rej) = reject(
            vec![
                ranked(1.0, Some(5.0), None),
                ranked(0.5, Some(2.0), None),
                ranked(0.1, Some(1.0), None),
            ],
            &cfg,
        );
        assert_eq!(kept.len(), 2);
        assert_eq!(rej, 1);
    }

    #[test]
    fn either_signal_suffices() {
        let cfg = ConfidenceConfig::default();
        let (kept, _) = reject(vec![ranked(1.0, Some(0.1), Some(0.8))], &cfg);
        assert_eq!(kept.len(), 1);
    }
}
