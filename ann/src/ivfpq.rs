//! IVF-PQ: inverted lists storing product-quantised residuals (one byte per sub-vector), searched
//! with asymmetric distance tables, then optionally re-ranked with exact f32 distances from the store.
//! Memory per row is `m` code bytes plus a u32 id.

use crate::error::AnnError;
use crate::filter::{Filter, IdSet};
use crate::ivf::training_rows;
use crate::kernels;
use crate::kmeans::{kmeans, nearest};
use crate::metric::Metric;
use crate::store::{check_row, VectorStore};
use crate::topk::{Neighbor, TopK};
use rayon::prelude::*;

/// Training parameters for [`IvfPq`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IvfPqParams {
    /// Number of coarse lists; `0` picks `4 * sqrt(n)`.
    pub nlist: usize,
    /// Number of sub-quantisers (must divide the dimension); each costs one byte per row.
    pub m: usize,
    /// Lloyd iterations for the coarse and sub-space k-means.
    pub iters: usize,
    /// Training sample size cap; `0` trains on all rows.
    pub max_train: usize,
    /// Seed for sampling and initialisation.
    pub seed: u64,
    /// Distance metric.
    pub metric: Metric,
    /// Candidates re-ranked with exact f32 distances (`0`: return PQ-approximate distances).
    pub rerank: usize,
}

impl Default for IvfPqParams {
    fn default() -> Self {
        IvfPqParams {
            nlist: 0,
            m: 48,
            iters: 10,
            max_train: 30_000,
            seed: 42,
            metric: Metric::Cosine,
            rerank: 100,
        }
    }
}

/// Inverted lists of PQ codes over a caller-owned store.
#[derive(Debug, Clone, PartialEq)]
pub struct IvfPq {
    params: IvfPqParams,
    dim: usize,
    dsub: usize,
    ksub: usize,
    centroids: Vec<f32>,
    /// `m x ksub x dsub` codewords for residuals.
    codebooks: Vec<f32>,
    ids: Vec<Vec<u32>>,
    codes: Vec<Vec<u8>>,
    present: IdSet,
    deleted: IdSet,
    live: usize,
}

impl IvfPq {
    /// Trains coarse centroids and residual codebooks on `store`, then encodes every row.
    pub fn build<S: VectorStore + ?Sized>(
        store: &S,
        params: IvfPqParams,
    ) -> Result<Self, AnnError> {
        let dim = store.dim();
        let n = store.len();
        if params.m == 0 || !dim.is_multiple_of(params.m) {
            return Err(AnnError::InvalidParameter {
                name: "m",
                reason: format!("{} must divide dim {dim}", params.m),
            });
        }
        let dsub = dim / params.m;
        let nlist = if params.nlist == 0 {
            ((4.0 * (n as f64).sqrt()) as usize).clamp(1, n.max(1))
        } else {
            params.nlist
        };
        let train = training_rows(store, params.max_train, params.seed);
        let ntrain = train.len() / dim.max(1);
        let centroids = kmeans(&train, dim, nlist, params.iters, params.seed)?;
        // Residuals of the training rows, then one k-means per sub-space.
        let residuals: Vec<f32> = train
            .par_chunks_exact(dim)
            .flat_map_iter(|v| {
                let (c, _) = nearest(&centroids, dim, v);
                let cv = &centroids[c * dim..(c + 1) * dim];
                v.iter().zip(cv).map(|(a, b)| a - b).collect::<Vec<_>>()
            })
            .collect();
        let ksub = 256.min(ntrain);
        let books: Vec<Vec<f32>> = (0..params.m)
            .into_par_iter()
            .map(|j| {
                let sub: Vec<f32> = residuals
                    .chunks_exact(dim)
                    .flat_map(|r| r[j * dsub..(j + 1) * dsub].iter().copied())
                    .collect();
                kmeans(&sub, dsub, ksub, params.iters, params.seed ^ (j as u64 + 1))
            })
            .collect::<Result<_, _>>()?;
        let codebooks: Vec<f32> = books.into_iter().flatten().collect();
        let mut index = IvfPq {
            params: IvfPqParams { nlist, ..params },
            dim,
            dsub,
            ksub,
            centroids,
            codebooks,
            ids: vec![Vec::new(); nlist],
            codes: vec![Vec::new(); nlist],
            present: IdSet::with_capacity(n),
            deleted: IdSet::default(),
            live: 0,
        };
        let encoded: Vec<(usize, Vec<u8>)> = (0..n as u32)
            .into_par_iter()
            .map(|id| index.encode(&store.row(id).to_f32()))
            .collect();
        for (id, (list, code)) in encoded.into_iter().enumerate() {
            index.ids[list].push(id as u32);
            index.codes[list].extend(code);
            index.present.insert(id as u32);
        }
        index.live = n;
        Ok(index)
    }

    /// Coarse list and PQ code of a vector.
    fn encode(&self, v: &[f32]) -> (usize, Vec<u8>) {
        let (c, _) = nearest(&self.centroids, self.dim, v);
        let cv = &self.centroids[c * self.dim..(c + 1) * self.dim];
        let r: Vec<f32> = v.iter().zip(cv).map(|(a, b)| a - b).collect();
        let code = (0..self.params.m)
            .map(|j| {
                let book =
                    &self.codebooks[j * self.ksub * self.dsub..(j + 1) * self.ksub * self.dsub];
                nearest(book, self.dsub, &r[j * self.dsub..(j + 1) * self.dsub]).0 as u8
            })
            .collect();
        (c, code)
    }

    /// Encodes and adds row `id` of `store`; `Ok(false)` if it is already live.
    pub fn add<S: VectorStore + ?Sized>(&mut self, id: u32, store: &S) -> Result<bool, AnnError> {
        check_row(store, self.dim, id)?;
        if self.present.contains(id) {
            if !self.deleted.contains(id) {
                return Ok(false);
            }
            let m = self.params.m;
            for (ids, codes) in self.ids.iter_mut().zip(self.codes.iter_mut()) {
                while let Some(pos) = ids.iter().position(|&x| x == id) {
                    ids.remove(pos);
                    codes.drain(pos * m..(pos + 1) * m);
                }
            }
            self.deleted.remove(id);
        }
        let (list, code) = self.encode(&store.row(id).to_f32());
        self.ids[list].push(id);
        self.codes[list].extend(code);
        self.present.insert(id);
        self.live += 1;
        Ok(true)
    }

    /// Marks row `id` deleted (searches skip it). Returns whether it was live.
    pub fn delete(&mut self, id: u32) -> bool {
        if !self.present.contains(id) || self.deleted.contains(id) {
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

    /// Heap bytes held by the index (centroids, codebooks, codes, ids, id sets).
    pub fn memory_bytes(&self) -> usize {
        4 * (self.centroids.capacity() + self.codebooks.capacity())
            + self
                .ids
                .iter()
                .map(|l| l.capacity() * 4 + std::mem::size_of::<Vec<u32>>())
                .sum::<usize>()
            + self
                .codes
                .iter()
                .map(|l| l.capacity() + std::mem::size_of::<Vec<u8>>())
                .sum::<usize>()
            + self.present.memory_bytes()
            + self.deleted.memory_bytes()
    }

    /// The `k` nearest allowed rows among the `nprobe` nearest lists. Candidates are ranked by PQ
    /// distance; the best `max(k, rerank)` are re-scored exactly from the store when `rerank > 0`.
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
        let (m, ksub, dsub) = (self.params.m, self.ksub, self.dsub);
        let pool = if self.params.rerank > 0 {
            k.max(self.params.rerank)
        } else {
            k
        };
        let mut top = TopK::new(pool);
        // Inner-product table (query sub-vector . codeword) is shared by all lists.
        let ip_table: Vec<f32> = (0..m * ksub)
            .map(|t| {
                let j = t / ksub;
                kernels::dot_f32(
                    &q[j * dsub..(j + 1) * dsub],
                    &self.codebooks[t * dsub..(t + 1) * dsub],
                )
            })
            .collect();
        let mut table = vec![0f32; m * ksub];
        let mut probe: Vec<(f32, usize)> = self
            .centroids
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, c)| (kernels::l2_f32(&q, c), i))
            .collect();
        probe.sort_by(|a, b| a.0.total_cmp(&b.0));
        probe.truncate(nprobe.clamp(1, self.ids.len().max(1)));
        for &(_, list) in &probe {
            let cv = &self.centroids[list * self.dim..(list + 1) * self.dim];
            let base = match metric {
                Metric::L2 => {
                    let qr: Vec<f32> = q.iter().zip(cv).map(|(a, b)| a - b).collect();
                    for (t, slot) in table.iter_mut().enumerate() {
                        let j = t / ksub;
                        *slot = kernels::l2_f32(
                            &qr[j * dsub..(j + 1) * dsub],
                            &self.codebooks[t * dsub..(t + 1) * dsub],
                        );
                    }
                    0.0
                }
                Metric::Dot | Metric::Cosine => {
                    for (slot, ip) in table.iter_mut().zip(&ip_table) {
                        *slot = -ip;
                    }
                    let qc = kernels::dot_f32(&q, cv);
                    if metric == Metric::Cosine {
                        1.0 - qc
                    } else {
                        -qc
                    }
                }
            };
            for (pos, &id) in self.ids[list].iter().enumerate() {
                if self.deleted.contains(id) || !filter.is_none_or(|f| f.allows(id)) {
                    continue;
                }
                let code = &self.codes[list][pos * m..(pos + 1) * m];
                let d = base
                    + code
                        .iter()
                        .enumerate()
                        .map(|(j, &c)| table[j * ksub + c as usize])
                        .sum::<f32>();
                top.push(id, d);
            }
        }
        let cands = top.into_sorted();
        if self.params.rerank == 0 {
            return Ok(cands);
        }
        let mut exact = TopK::new(k);
        for c in cands {
            if c.id as usize >= store.len() {
                return Err(AnnError::StoreTooSmall {
                    store_len: store.len(),
                    index_len: c.id as usize + 1,
                });
            }
            exact.push(c.id, metric.distance_to(&q, store.row(c.id)));
        }
        Ok(exact.into_sorted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::exact_top_k;
    use crate::synth::Clustered;

    fn recall(idx: &IvfPq, s: &crate::FlatVectors, qs: &crate::FlatVectors, metric: Metric) -> f64 {
        let mut hit = 0;
        for i in 0..qs.len() as u32 {
            let truth = exact_top_k(s, qs.vector(i), 10, metric, None).unwrap();
            let got = idx.search(s, qs.vector(i), 10, 16, None).unwrap();
            hit += truth
                .iter()
                .filter(|t| got.iter().any(|g| g.id == t.id))
                .count();
        }
        hit as f64 / (10 * qs.len()) as f64
    }

    #[test]
    fn reranked_pq_finds_true_neighbours() {
        let g = Clustered::new(32, 10, 1.0, 8);
        let s = g.sample(3000, 1);
        let qs = g.sample(30, 2);
        for metric in [Metric::Cosine, Metric::L2] {
            let p = IvfPqParams {
                nlist: 16,
                m: 8,
                metric,
                ..Default::default()
            };
            let idx = IvfPq::build(&s, p).unwrap();
            let r = recall(&idx, &s, &qs, metric);
            assert!(r >= 0.9, "{metric:?} reranked recall {r}");
            let raw = IvfPq::build(&s, IvfPqParams { rerank: 0, ..p }).unwrap();
            assert!(recall(&raw, &s, &qs, metric) >= 0.3);
            assert!(idx.memory_bytes() < 3000 * 32 * 4 / 2);
        }
        let mut idx = IvfPq::build(
            &s,
            IvfPqParams {
                nlist: 8,
                m: 4,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(idx.delete(9));
        assert!(idx
            .search(&s, s.vector(9), 5, 8, None)
            .unwrap()
            .iter()
            .all(|n| n.id != 9));
        assert!(idx.add(9, &s).unwrap());
        assert_eq!(idx.search(&s, s.vector(9), 1, 8, None).unwrap()[0].id, 9);
        let even = |id: u32| id.is_multiple_of(2);
        assert!(idx
            .search(&s, s.vector(9), 5, 8, Some(Filter::Predicate(&even)))
            .unwrap()
            .iter()
            .all(|n| n.id % 2 == 0));
        assert!(IvfPq::build(
            &s,
            IvfPqParams {
                m: 5,
                ..Default::default()
            }
        )
        .is_err());
    }
}
