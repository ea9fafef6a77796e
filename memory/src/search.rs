//! Search requests, results and score fusion.

use serde::{Deserialize, Serialize};

use crate::filter::Filter;
use crate::record::Record;

/// How keyword and vector evidence are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum SearchMode {
    /// Weighted sum of min-max-normalised scores (vector and keyword weights from the store's config).
    #[default]
    Hybrid,
    /// Reciprocal rank fusion.
    Rrf,
    /// BM25 only.
    Keyword,
    /// Embedding similarity only.
    Vector,
}

impl SearchMode {
    /// Parse `hybrid`, `rrf`, `keyword` or `vector`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hybrid" => Some(SearchMode::Hybrid),
            "rrf" => Some(SearchMode::Rrf),
            "keyword" | "bm25" => Some(SearchMode::Keyword),
            "vector" => Some(SearchMode::Vector),
            _ => None,
        }
    }

    /// Canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Rrf => "rrf",
            SearchMode::Keyword => "keyword",
            SearchMode::Vector => "vector",
        }
    }
}

/// A search request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// What to look for.
    pub text: String,
    /// How many results at most.
    pub k: usize,
    /// Fusion mode.
    pub mode: SearchMode,
    /// Exact metadata filter applied before ranking.
    pub filter: Filter,
    /// Drop results whose fused score is below this.
    pub min_score: Option<f32>,
    /// Precomputed query embedding (skips the store's embedder).
    pub embedding: Option<Vec<f32>>,
}

impl SearchQuery {
    /// A hybrid query for `text` returning up to `k` results.
    pub fn new(text: impl Into<String>, k: usize) -> Self {
        SearchQuery {
            text: text.into(),
            k,
            mode: SearchMode::Hybrid,
            filter: Filter::default(),
            min_score: None,
            embedding: None,
        }
    }
}

/// One ranked result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchHit {
    /// Final score (higher is better).
    pub score: f32,
    /// Raw BM25 score, when the keyword stage found it.
    pub keyword_score: Option<f32>,
    /// Cosine similarity, when the vector stage found it.
    pub vector_score: Option<f32>,
    /// The record (embedding omitted).
    pub record: Record,
}

/// Candidate lists from each stage, as (row, raw score), best first.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    /// BM25 results.
    pub keyword: Vec<(u32, f32)>,
    /// Vector results.
    pub vector: Vec<(u32, f32)>,
}

/// A fused candidate: (row, fused score, keyword score, vector score).
pub type Fused = (u32, f32, Option<f32>, Option<f32>);

/// Combine candidate lists into one ranking.
pub fn fuse(
    c: &Candidates,
    mode: SearchMode,
    vector_weight: f32,
    keyword_weight: f32,
    rrf_k: f32,
) -> Vec<Fused> {
    use std::collections::HashMap;
    /// Per row: keyword score, vector score, keyword rank, vector rank.
    type Evidence = (Option<f32>, Option<f32>, Option<usize>, Option<usize>);
    let mut by_row: HashMap<u32, Evidence> = HashMap::new();
    for (rank, &(row, s)) in c.keyword.iter().enumerate() {
        let e = by_row.entry(row).or_default();
        e.0 = Some(s);
        e.2 = Some(rank);
    }
    for (rank, &(row, s)) in c.vector.iter().enumerate() {
        let e = by_row.entry(row).or_default();
        e.1 = Some(s);
        e.3 = Some(rank);
    }
    let norm = |list: &[(u32, f32)]| -> (f32, f32) {
        let max = list.iter().map(|x| x.1).fold(f32::NEG_INFINITY, f32::max);
        let min = list.iter().map(|x| x.1).fold(f32::INFINITY, f32::min);
        (min, max)
    };
    let (kmin, kmax) = norm(&c.keyword);
    let (vmin, vmax) = norm(&c.vector);
    let relative = |s: f32, max: f32| {
        if max > 0.0 {
            (s / max).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let scale = |s: f32, min: f32, max: f32| {
        if max - min > f32::EPSILON {
            (s - min) / (max - min)
        } else {
            1.0
        }
    };
    let mut out: Vec<Fused> = by_row
        .into_iter()
        .map(|(row, (ks, vs, kr, vr))| {
            let score = match mode {
                // Keyword evidence alone: relative to the best BM25 score (never min-max, which would
                // score the weakest match 0 and let confidence rejection drop it).
                SearchMode::Keyword => ks.map_or(0.0, |s| relative(s, kmax)),
                SearchMode::Vector => vs.unwrap_or(0.0),
                SearchMode::Hybrid => {
                    let k = ks.map_or(0.0, |s| scale(s, kmin, kmax));
                    let v = vs.map_or(0.0, |s| scale(s, vmin, vmax));
                    if c.vector.is_empty() {
                        ks.map_or(0.0, |s| relative(s, kmax))
                    } else if c.keyword.is_empty() {
                        v
                    } else {
                        keyword_weight * k + vector_weight * v
                    }
                }
                SearchMode::Rrf => {
                    kr.map_or(0.0, |r| 1.0 / (rrf_k + r as f32 + 1.0))
                        + vr.map_or(0.0, |r| 1.0 / (rrf_k + r as f32 + 1.0))
                }
            };
            (row, score, ks, vs)
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_weights_normalised_scores() {
        let c = Candidates {
            keyword: vec![(1, 10.0), (2, 5.0), (3, 0.0)],
            vector: vec![(3, 0.9), (2, 0.5), (1, 0.1)],
        };
        let f = fuse(&c, SearchMode::Hybrid, 0.4, 0.6, 60.0);
        // row 1: 0.6*1 + 0.4*0 = 0.6; row 2: 0.6*0.5 + 0.4*0.5 = 0.5; row 3: 0 + 0.4 = 0.4
        assert_eq!(f.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!((f[0].1 - 0.6).abs() < 1e-6);
        assert_eq!(f[0].2, Some(10.0));
        assert_eq!(f[0].3, Some(0.1));
    }

    #[test]
    fn rrf_rewards_agreement() {
        let c = Candidates {
            keyword: vec![(1, 3.0), (2, 2.0)],
            vector: vec![(2, 0.9), (3, 0.8)],
        };
        let f = fuse(&c, SearchMode::Rrf, 0.4, 0.6, 60.0);
        assert_eq!(f[0].0, 2);
    }

    #[test]
    fn keyword_scores_are_relative_to_the_best_not_min_max() {
        let c = Candidates {
            keyword: vec![(1, 4.0), (2, 3.0)],
            vector: vec![],
        };
        for mode in [SearchMode::Keyword, SearchMode::Hybrid] {
            let f = fuse(&c, mode, 0.4, 0.6, 60.0);
            assert!((f[0].1 - 1.0).abs() < 1e-6);
            assert!((f[1].1 - 0.75).abs() < 1e-6, "{mode:?}: {f:?}");
        }
    }

    #[test]
    fn keyword_only_when_no_vectors() {
        let c = Candidates {
            keyword: vec![(5, 2.0), (6, 1.0)],
            vector: vec![],
        };
        let f = fuse(&c, SearchMode::Hybrid, 0.4, 0.6, 60.0);
        assert_eq!(f[0].0, 5);
        assert!((f[0].1 - 1.0).abs() < 1e-6);
    }

    #[test]
    fn modes_parse() {
        for m in ["hybrid", "rrf", "keyword", "vector"] {
            assert_eq!(SearchMode::parse(m).unwrap().as_str(), m);
        }
        assert!(SearchMode::parse("magic").is_none());
    }
}
