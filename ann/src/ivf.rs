//! IVF: k-means inverted lists over a caller-owned store; a query scans the `nprobe` nearest lists
//! with exact f32 distances. Memory is the centroids plus one u32 per row.

use crate::error::AnnError;
use crate::filter::{Filter, IdSet};
use crate::kmeans::{kmeans, nearest};
use crate::metric::Metric;
use crate::rng::SplitMix64;
use crate::store::{check_row, VectorStore};
use crate::topk::{Neighbor, TopK};
use rayon::prelude::*;

/// Training parameters for [`Ivf`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IvfParams {
    /// Number of lists (k-means centroids); `0` picks `4 * sqrt(n)`.
    pub nlist: usize,
    /// Lloyd iterations.
    pub iters: usize,
    /// Training sample size cap (rows sampled at random); `0` trains on all rows.
    pub max_train: usize,
    /// Seed for sampling and initialisation.
    pub seed: u64,
    /// Distance metric for search (lists are always trained with L2).
    pub metric: Metric,
}

impl Default for IvfParams {
    fn default() -> Self {
        IvfParams {
            nlist: 0,
            iters: 10,
            max_train: 50_000,
            seed: 42,
            metric: Metric::Cosine,
        }
    }
}

/// Inverted-file index: each row lives in the list of its nearest centroid.
#[derive(Debug, Clone, PartialEq)]
pub struct Ivf {
    pub(crate) params: IvfParams,
    pub(crate) dim: usize,
    pub(crate) centroids: Vec<f32>,
    pub(crate) lists: Vec<Vec<u32>>,
    pub(crate) present: IdSet,
    pub(crate) deleted: IdSet,
    pub(crate) live: usize,
}

/// Picks the training rows: all of them, or a seeded random sample of `max_train`.
pub(crate) fn training_rows<S: VectorStore + ?Sized>(
    store: &S,
    max_train: usize,
    seed: u64,
) -> Vec<f32> {
    let n = store.len();
    let take = if max_train == 0 { n } else { n.min(max_train) };
    let mut ids: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64::new(seed ^ 0x7EA1);
    for i in 0..take {
        let j = i + rng.below((n - i) as u64) as usize;
        ids.swap(i, j);
    }
    ids[..take]
        .iter()
        .flat_map(|&id| store.row(id).to_f32().into_owned())
        .collect()
}

impl Ivf {
    /// Trains centroids on `store` and assigns every row to a list.
    pub fn build<S: VectorStore + ?Sized>(store: &S, params: IvfParams) -> Result<Self, AnnError> {
        let dim = store.dim();
        let n = store.len();
        let nlist = if params.nlist == 0 {
            ((4.0 * (n as f64).sqrt()) as usize).clamp(1, n.max(1))
        } else {
            params.nlist
        };
        let train = training_rows(store, params.max_train, params.seed);
        let centroids = kmeans(&train, dim, nlist, params.iters, params.seed)?;
        let assign: Vec<usize> = (0..n as u32)
            .into_par_iter()
            .map(|id| nearest(&centroids, dim, &store.row(id).to_f32()).0)
            .collect();
        let mut lists = vec![Vec::new(); nlist];
        for (id, &a) in assign.iter().enumerate() {
            lists[a].push(id as u32);
        }
        let present: IdSet = (0..n as u32).collect();
        Ok(Ivf {
            params: IvfParams { nlist, ..params },
            dim,
            centroids,
            lists,
            present,
            deleted: IdSet::default(),
            live: n,
        })
    }

    /// Adds row `id` of `store` to the list of its nearest centroid; `Ok(false)` if already live.
    pub fn add<S: VectorStore + ?Sized>(&mut self, id: u32, store: &S) -> Result<bool, AnnError> {
        check_row(store, self.dim, id)?;
        if self.present.contains(id) {
            if !self.deleted.contains(id) {
                return Ok(false);
            }
            // Re-adding a deleted row: drop its old list entry first.
            self.lists.iter_mut().for_each(|l| l.retain(|&x| x != id));
            self.deleted.remove(id);
        }
        let (c, _) = nearest(&self.centroids, self.dim, &store.row(id).to_f32());
        self.lists[c].push(id);
        self.present.insert(id);
        self.live += 1;
        Ok(true)
    }

    /// Marks row `id` deleted (searches skip it). Returns whether it was live.
    pub fn delete(&mut self, id: u32) -> bool {
        if self.deleted.contains(id) || !self.present.contains(id) {
            return false;
        }
        self.deleted.insert(id);
        self.live -= 1;
        true
    }

    /// Number of live rows.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no live rows are indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Number of lists.
    pub fn nlist(&self) -> usize {
        self.lists.len()
    }

    /// Heap bytes held by the index (centroids, list ids, tombstones).
    pub fn memory_bytes(&self) -> usize {
        self.centroids.capacity() * 4
            + self.lists.capacity() * std::mem::size_of::<Vec<u32>>()
            + self.lists.iter().map(|l| l.capacity() * 4).sum::<usize>()
            + self.deleted.memory_bytes()
            + self.present.memory_bytes()
    }

    /// Lists to probe for `q`, nearest centroid first.
    pub(crate) fn probe_order(&self, q: &[f32], nprobe: usize) -> Vec<usize> {
        let mut d: Vec<(f32, usize)> = self
            .centroids
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, c)| (crate::kernels::l2_f32(q, c), i))
            .collect();
        let np = nprobe.clamp(1, d.len());
        d.select_nth_unstable_by(np - 1, |a, b| a.0.total_cmp(&b.0));
        d.truncate(np);
        d.sort_by(|a, b| a.0.total_cmp(&b.0));
        d.into_iter().map(|x| x.1).collect()
    }

    /// The `k` nearest allowed rows among the `nprobe` nearest lists (exact f32 distances).
    pub fn search<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        query: &[f32],
        k: usize,
        nprobe: usize,
        filter: Option<Filter<'_>>,
    ) -> Result<Vec<Neighbor>, AnnError> {
        if query.len() != self.dim || store.dim() != self.dim {
            return Err(AnnError::DimensionMismatch {
                expected: self.dim,
                got: query.len().min(store.dim()),
            });
        }
        let metric = self.params.metric;
        let q = metric.prepare_query(query);
        let mut top = TopK::new(k);
        for l in self.probe_order(&q, nprobe) {
            for &id in &self.lists[l] {
                if id as usize >= store.len() {
                    return Err(AnnError::StoreTooSmall {
                        store_len: store.len(),
                        index_len: id as usize + 1,
                    });
                }
                if !self.deleted.contains(id) && filter.is_none_or(|f| f.allows(id)) {
                    top.push(id, metric.distance_to(&q, store.row(id)));
                }
            }
        }
        Ok(top.into_sorted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::exact_top_k;
    use crate::synth::Clustered;

    #[test]
    fn probing_more_lists_reaches_exact_results() {
        let g = Clustered::new(16, 10, 1.0, 4);
        let s = g.sample(2000, 1);
        let qs = g.sample(20, 2);
        let ivf = Ivf::build(
            &s,
            IvfParams {
                nlist: 20,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ivf.nlist(), 20);
        assert_eq!(ivf.lists.iter().map(|l| l.len()).sum::<usize>(), 2000);
        for i in 0..20 {
            let q = qs.vector(i);
            let truth = exact_top_k(&s, q, 10, Metric::Cosine, None).unwrap();
            assert_eq!(ivf.search(&s, q, 10, 20, None).unwrap(), truth);
            let few = ivf.search(&s, q, 10, 4, None).unwrap();
            assert_eq!(few.len(), 10);
        }
        let mut ivf = ivf;
        assert!(ivf.delete(5));
        assert!(!ivf.delete(5));
        assert!(ivf
            .search(&s, s.vector(5), 3, 20, None)
            .unwrap()
            .iter()
            .all(|n| n.id != 5));
        assert!(ivf.add(5, &s).unwrap());
        assert!(!ivf.add(5, &s).unwrap());
        assert_eq!(ivf.search(&s, s.vector(5), 1, 20, None).unwrap()[0].id, 5);
        assert!(ivf.search(&s, &[0.0; 3], 1, 1, None).is_err());
        assert!(ivf.memory_bytes() < 2000 * 16 * 4);
    }
}
