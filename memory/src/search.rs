//! Search requests, results and score fusion.

use serde::{Deserialize, Serialize};

use crate::filter::Filter;
use crate::record::Record;

/// How keyword and vector evidence are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum SearchMode {
    /// Weighted sum of calibrated, absolute keyword and vector evidence (weights from the store's config).
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
    /// Drop results whose score is below this. Hybrid, keyword and vector scores are absolute evidence in
    /// [0, 1] (see [`fuse`]), so one threshold means the same on every query; RRF scores are rank-based.
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

/// Default BM25 score that counts as half-certain keyword evidence (see [`keyword_evidence`]); chosen by the
/// LoCoMo and MemoryArena sweeps of `clawhdf5-eval` (`--sweep`), see BENCHMARKS.md.
pub const KEYWORD_HALF: f32 = 4.0;

/// Absolute keyword evidence in [0, 1): the saturating transform `s / (s + half)` of a raw BM25 score, so a
/// score means the same on every query, whatever the query's other matches score.
pub fn keyword_evidence(bm25: f32, half: f32) -> f32 {
    if bm25 > 0.0 {
        bm25 / (bm25 + half.max(f32::MIN_POSITIVE))
    } else {
        0.0
    }
}

/// Absolute vector evidence in [0, 1]: the cosine similarity, negative similarities counted as none.
pub fn vector_evidence(cosine: f32) -> f32 {
    cosine.clamp(0.0, 1.0)
}

/// Combine candidate lists into one ranking (keyword evidence calibrated with [`KEYWORD_HALF`]).
///
/// Hybrid and single-stage scores are absolute, comparable across queries: `keyword_weight` ·
/// [`keyword_evidence`] + `vector_weight` · [`vector_evidence`]. A candidate the vector stage did not return is
/// given the lowest similarity that stage returned (its own similarity is at most that); one the keyword
/// stage did not return matched no query term (BM25 0). Without any vector evidence at all (a keyword-only
/// store, or no query embedding) the keyword evidence is the score on its own. RRF scores are rank-based and
/// only comparable within one query.
pub fn fuse(
    c: &Candidates,
    mode: SearchMode,
    vector_weight: f32,
    keyword_weight: f32,
    rrf_k: f32,
) -> Vec<Fused> {
    fuse_calibrated(c, mode, vector_weight, keyword_weight, rrf_k, KEYWORD_HALF)
}

/// [`fuse`] with an explicit keyword calibration constant (`keyword_half`: the BM25 score worth 0.5).
pub fn fuse_calibrated(
    c: &Candidates,
    mode: SearchMode,
    vector_weight: f32,
    keyword_weight: f32,
    rrf_k: f32,
    keyword_half: f32,
) -> Vec<Fused> {
    /// Per row: keyword score, vector score, keyword rank, vector rank.
    type Evidence = (Option<f32>, Option<f32>, Option<usize>, Option<usize>);
    let mut by_row: crate::FastMap<u32, Evidence> = crate::FastMap::default();
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
    let vector_floor = c.vector.iter().map(|x| x.1).fold(f32::INFINITY, f32::min);
    let kw = |s: Option<f32>| s.map_or(0.0, |s| keyword_evidence(s, keyword_half));
    let mut out: Vec<Fused> = by_row
        .into_iter()
        .map(|(row, (ks, vs, kr, vr))| {
            let score = match mode {
                SearchMode::Keyword => kw(ks),
                SearchMode::Vector => vs.map_or(0.0, vector_evidence),
                SearchMode::Hybrid => {
                    if c.vector.is_empty() {
                        kw(ks)
                    } else {
                        let v = vector_evidence(vs.unwrap_or(vector_floor));
                        keyword_weight * kw(ks) + vector_weight * v
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

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn hybrid_weights_absolute_evidence() {
        let c = Candidates {
            keyword: vec![(1, 8.0), (2, 4.0)],
            vector: vec![(3, 0.9), (2, 0.5), (1, 0.1)],
        };
        let f = fuse_calibrated(&c, SearchMode::Hybrid, 0.4, 0.6, 60.0, 8.0);
        // row 1: 0.6 * 8/16 + 0.4 * 0.1 = 0.34; row 2: 0.6 * 4/12 + 0.4 * 0.5 = 0.4;
        // row 3 (no keyword match): 0.4 * 0.9 = 0.36
        assert_eq!(f.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 3, 1]);
        assert!(close(f[0].1, 0.4), "{f:?}");
        assert!(close(f[1].1, 0.36), "{f:?}");
        assert!(close(f[2].1, 0.34), "{f:?}");
        assert_eq!(f[2].2, Some(8.0));
        assert_eq!(f[2].3, Some(0.1));
    }

    #[test]
    fn scores_do_not_depend_on_the_other_candidates() {
        let alone = Candidates {
            keyword: vec![(1, 5.0)],
            vector: vec![(1, 0.6)],
        };
        let crowded = Candidates {
            keyword: vec![(7, 50.0), (1, 5.0), (8, 0.5)],
            vector: vec![(7, 0.95), (1, 0.6), (8, 0.2)],
        };
        for mode in [SearchMode::Hybrid, SearchMode::Keyword, SearchMode::Vector] {
            let a = fuse(&alone, mode, 0.4, 0.6, 60.0);
            let b = fuse(&crowded, mode, 0.4, 0.6, 60.0);
            let b1 = b.iter().find(|x| x.0 == 1).unwrap();
            assert!(close(a[0].1, b1.1), "{mode:?}: {a:?} vs {b1:?}");
        }
        // Min-max normalisation would have given the lone candidate 1.0 and the weakest crowded one 0.
        assert!(fuse(&alone, SearchMode::Hybrid, 0.4, 0.6, 60.0)[0].1 < 1.0);
        let weakest = fuse(&crowded, SearchMode::Hybrid, 0.4, 0.6, 60.0)[2].1;
        assert!(weakest > 0.0);
    }

    #[test]
    fn evidence_transforms() {
        assert_eq!(keyword_evidence(0.0, 8.0), 0.0);
        assert!(close(keyword_evidence(8.0, 8.0), 0.5));
        assert!(keyword_evidence(1000.0, 8.0) < 1.0);
        assert!(keyword_evidence(3.0, 8.0) < keyword_evidence(4.0, 8.0));
        assert_eq!(vector_evidence(-0.2), 0.0);
        assert!(close(vector_evidence(0.7), 0.7));
        assert_eq!(vector_evidence(1.5), 1.0);
    }

    #[test]
    fn missing_vector_evidence_is_the_pool_floor() {
        let c = Candidates {
            keyword: vec![(1, 8.0)],
            vector: vec![(2, 0.8), (3, 0.3)],
        };
        let f = fuse_calibrated(&c, SearchMode::Hybrid, 0.4, 0.6, 60.0, 8.0);
        let one = f.iter().find(|x| x.0 == 1).unwrap();
        // Not in the vector pool: at most as similar as its weakest member.
        assert!(close(one.1, 0.6 * 0.5 + 0.4 * 0.3), "{f:?}");
        assert_eq!(one.3, None, "the reported vector score stays absent");
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
    fn keyword_only_when_no_vectors() {
        let c = Candidates {
            keyword: vec![(5, 2.0), (6, 1.0)],
            vector: vec![],
        };
        let f = fuse(&c, SearchMode::Hybrid, 0.4, 0.6, 60.0);
        assert_eq!(f[0].0, 5);
        assert!(close(f[0].1, keyword_evidence(2.0, KEYWORD_HALF)));
        // The weakest match keeps a positive score (confidence rejection must not see 0).
        assert!(f[1].1 > 0.0);
    }

    #[test]
    fn modes_parse() {
        for m in ["hybrid", "rrf", "keyword", "vector"] {
            assert_eq!(SearchMode::parse(m).unwrap().as_str(), m);
        }
        assert!(SearchMode::parse("magic").is_none());
    }
}
