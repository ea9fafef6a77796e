//! Ranking metrics as LongMemEval's official evaluation defines them (`recall_any@k`, `recall_all@k`,
//! `ndcg_any@k`) plus MRR, per-query scoring, roll-up of turn rankings to sessions, and averaging by group.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

/// The cut-offs LoCoMo results are reported at.
pub const LOCOMO_KS: &[usize] = &[1, 5, 10];
/// The cut-offs LongMemEval results are reported at.
pub const LONGMEMEVAL_KS: &[usize] = &[1, 3, 5, 10, 30, 50];

/// Scores of one ranking against its gold set, one value per cut-off.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryScores {
    /// 1 when at least one gold item is in the top k.
    pub recall_any: Vec<f64>,
    /// 1 when every gold item is in the top k.
    pub recall_all: Vec<f64>,
    /// Binary-relevance nDCG of the top k.
    pub ndcg_any: Vec<f64>,
    /// Reciprocal rank of the first gold item (0 when none is ranked).
    pub reciprocal_rank: f64,
}

/// LongMemEval's DCG: the first two ranks both weigh 1, rank i > 1 weighs 1/log2(i).
fn dcg(relevances: &[f64]) -> f64 {
    match relevances.split_first() {
        None => 0.0,
        Some((first, rest)) => {
            first
                + rest
                    .iter()
                    .enumerate()
                    .map(|(i, r)| r / ((i + 2) as f64).log2())
                    .sum::<f64>()
        }
    }
}

/// Score `ranked` (best first, duplicates allowed but counted once) against `gold` at each of `ks`.
///
/// A query with an empty gold set scores 0 everywhere: it cannot be answered from retrieval, and the caller
/// reports how many such queries it had.
pub fn score_ranking(ranked: &[String], gold: &HashSet<String>, ks: &[usize]) -> QueryScores {
    let ranked = dedup(ranked);
    let n = ks.len();
    if gold.is_empty() {
        return QueryScores {
            recall_any: vec![0.0; n],
            recall_all: vec![0.0; n],
            ndcg_any: vec![0.0; n],
            reciprocal_rank: 0.0,
        };
    }
    let rel: Vec<f64> = ranked
        .iter()
        .map(|d| if gold.contains(*d) { 1.0 } else { 0.0 })
        .collect();
    let mut out = QueryScores {
        recall_any: Vec::with_capacity(n),
        recall_all: Vec::with_capacity(n),
        ndcg_any: Vec::with_capacity(n),
        reciprocal_rank: rel
            .iter()
            .position(|&r| r > 0.0)
            .map_or(0.0, |p| 1.0 / (p + 1) as f64),
    };
    for &k in ks {
        let top = &rel[..k.min(rel.len())];
        let found = top.iter().filter(|&&r| r > 0.0).count();
        out.recall_any.push(if found > 0 { 1.0 } else { 0.0 });
        out.recall_all
            .push(if found == gold.len() { 1.0 } else { 0.0 });
        let ideal = vec![1.0; gold.len().min(k)];
        out.ndcg_any.push(dcg(top) / dcg(&ideal));
    }
    out
}

/// Keep the first occurrence of each item.
fn dedup(ranked: &[String]) -> Vec<&String> {
    let mut seen = HashSet::new();
    ranked.iter().filter(|d| seen.insert(d.as_str())).collect()
}

/// Map a ranking of turns to the ranking of the distinct sessions holding them (first appearance wins).
pub fn roll_up(ranked: &[String], session_of: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for t in ranked {
        if let Some(s) = session_of(t) {
            if seen.insert(s.clone()) {
                out.push(s);
            }
        }
    }
    out
}

/// Averages of [`QueryScores`] over a group of queries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Number of queries averaged.
    pub n: usize,
    /// Mean recall_any per cut-off.
    pub recall_any: BTreeMap<usize, f64>,
    /// Mean recall_all per cut-off.
    pub recall_all: BTreeMap<usize, f64>,
    /// Mean ndcg_any per cut-off.
    pub ndcg_any: BTreeMap<usize, f64>,
    /// Mean reciprocal rank.
    pub mrr: f64,
}

#[derive(Clone, Debug)]
struct Sums {
    n: usize,
    any: Vec<f64>,
    all: Vec<f64>,
    ndcg: Vec<f64>,
    rr: f64,
}

/// Accumulates per-query scores under any number of group labels ("all", "cat 1", "multi-session", ...).
#[derive(Clone, Debug)]
pub struct Accumulator {
    ks: Vec<usize>,
    groups: BTreeMap<String, Sums>,
    order: Vec<String>,
}

impl Accumulator {
    /// An empty accumulator for the cut-offs `ks`.
    pub fn new(ks: &[usize]) -> Self {
        Accumulator {
            ks: ks.to_vec(),
            groups: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    /// The cut-offs.
    pub fn ks(&self) -> &[usize] {
        &self.ks
    }

    /// Declare a group so it is listed (in declaration order) even when no query lands in it.
    pub fn declare(&mut self, group: &str) {
        if !self.groups.contains_key(group) {
            self.order.push(group.to_string());
            self.groups.insert(
                group.to_string(),
                Sums {
                    n: 0,
                    any: vec![0.0; self.ks.len()],
                    all: vec![0.0; self.ks.len()],
                    ndcg: vec![0.0; self.ks.len()],
                    rr: 0.0,
                },
            );
        }
    }

    /// Add one query's scores to every group in `groups`.
    pub fn add(&mut self, groups: &[&str], s: &QueryScores) {
        for g in groups {
            self.declare(g);
            if let Some(sum) = self.groups.get_mut(*g) {
                sum.n += 1;
                for i in 0..self.ks.len() {
                    sum.any[i] += s.recall_any[i];
                    sum.all[i] += s.recall_all[i];
                    sum.ndcg[i] += s.ndcg_any[i];
                }
                sum.rr += s.reciprocal_rank;
            }
        }
    }

    /// The averages of one group.
    pub fn summary(&self, group: &str) -> Option<Summary> {
        let s = self.groups.get(group)?;
        let mean = |x: f64| if s.n == 0 { 0.0 } else { x / s.n as f64 };
        let per_k = |v: &[f64]| self.ks.iter().zip(v).map(|(&k, &x)| (k, mean(x))).collect();
        Some(Summary {
            n: s.n,
            recall_any: per_k(&s.any),
            recall_all: per_k(&s.all),
            ndcg_any: per_k(&s.ndcg),
            mrr: mean(s.rr),
        })
    }

    /// Every group's averages, in declaration order.
    pub fn summaries(&self) -> Vec<(String, Summary)> {
        self.order
            .iter()
            .filter_map(|g| self.summary(g).map(|s| (g.clone(), s)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn set(items: &[&str]) -> HashSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recall_any_and_all() {
        let s = score_ranking(&v(&["a", "b", "c", "d"]), &set(&["b", "d"]), &[1, 2, 4, 10]);
        assert_eq!(s.recall_any, vec![0.0, 1.0, 1.0, 1.0]);
        assert_eq!(s.recall_all, vec![0.0, 0.0, 1.0, 1.0]);
        assert!((s.reciprocal_rank - 0.5).abs() < 1e-12);
    }

    #[test]
    fn ndcg_matches_longmemeval_definition() {
        // Relevant at ranks 1 and 3 of two relevant documents, k = 3:
        // dcg = 1 + 0/log2(2) + 1/log2(3); ideal = 1 + 1/log2(2) = 2.
        let s = score_ranking(&v(&["a", "x", "b"]), &set(&["a", "b"]), &[3]);
        let want = (1.0 + 1.0 / 3f64.log2()) / 2.0;
        assert!((s.ndcg_any[0] - want).abs() < 1e-12);
        // A relevant document at rank 2 weighs as much as at rank 1.
        let s = score_ranking(&v(&["x", "a"]), &set(&["a"]), &[2]);
        assert!((s.ndcg_any[0] - 1.0).abs() < 1e-12);
        // Perfect ranking scores 1.
        let s = score_ranking(&v(&["a", "b", "c"]), &set(&["a", "b"]), &[1, 5]);
        assert_eq!(s.ndcg_any, vec![1.0, 1.0]);
    }

    #[test]
    fn duplicates_count_once_and_empty_gold_scores_zero() {
        let s = score_ranking(&v(&["x", "x", "a"]), &set(&["a"]), &[2]);
        assert_eq!(s.recall_any, vec![1.0]);
        let s = score_ranking(&v(&["a"]), &HashSet::new(), &[1]);
        assert_eq!(s.recall_any, vec![0.0]);
        assert_eq!(s.recall_all, vec![0.0]);
        assert_eq!(s.reciprocal_rank, 0.0);
    }

    #[test]
    fn short_rankings_are_not_padded_with_hits() {
        let s = score_ranking(&v(&["x"]), &set(&["a"]), &[1, 10]);
        assert_eq!(s.recall_any, vec![0.0, 0.0]);
        assert_eq!(s.ndcg_any, vec![0.0, 0.0]);
    }

    #[test]
    fn roll_up_keeps_first_appearance() {
        let turns = v(&["D2:1", "D1:4", "D2:7", "D3:1", "D1:1"]);
        let sessions = roll_up(&turns, |t| t.split(':').next().map(str::to_string));
        assert_eq!(sessions, v(&["D2", "D1", "D3"]));
    }

    #[test]
    fn accumulator_averages_per_group() {
        let mut acc = Accumulator::new(&[1]);
        acc.declare("empty");
        let hit = score_ranking(&v(&["a"]), &set(&["a"]), &[1]);
        let miss = score_ranking(&v(&["b"]), &set(&["a"]), &[1]);
        acc.add(&["all", "cat 1"], &hit);
        acc.add(&["all"], &miss);
        let all = acc.summary("all").unwrap();
        assert_eq!(all.n, 2);
        assert_eq!(all.recall_any[&1], 0.5);
        assert_eq!(all.mrr, 0.5);
        assert_eq!(acc.summary("cat 1").unwrap().recall_any[&1], 1.0);
        let names: Vec<String> = acc.summaries().into_iter().map(|(g, _)| g).collect();
        assert_eq!(names, vec!["empty", "all", "cat 1"]);
        assert_eq!(acc.summary("empty").unwrap().n, 0);
    }
}
