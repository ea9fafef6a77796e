//! HNSW graph index over vectors held by a [`VectorStore`].
//!
//! The index stores only the graph (and, optionally, an int8 copy of the vectors for traversal);
//! every operation takes the store so the f32 vectors are never duplicated. Node ids are store rows.

mod build;
mod delete;
mod link_codec;
mod persist;
mod search;

pub use search::SearchPlan;

use crate::error::AnnError;
use crate::filter::IdSet;
use crate::metric::Metric;
use crate::quant::Int8Vectors;
use crate::store::VectorStore;

/// Marker level for rows that are not in the graph.
pub(crate) const ABSENT: u8 = u8::MAX;
/// Largest supported `m` (level 0 keeps `2 m` links, at most 256).
pub const MAX_M: usize = 128;
/// Highest level a node may get (levels are capped so they fit a byte).
pub(crate) const MAX_LEVEL: usize = 30;

/// Construction parameters for [`Hnsw`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HnswParams {
    /// Links per node on upper levels (2..=128); level 0 keeps `2 * m`.
    pub m: usize,
    /// Candidate list size while inserting.
    pub ef_construction: usize,
    /// Seed for level sampling; a build is deterministic for a given seed (whatever the thread count).
    pub seed: u64,
    /// Distance metric.
    pub metric: Metric,
    /// Keep an int8 copy of the vectors and traverse with it (results are re-scored in f32).
    pub quantize: bool,
    /// Fill unused link slots with connections the heuristic pruned (Algorithm 4's `keepPrunedConnections`).
    pub keep_pruned: bool,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 200,
            seed: 42,
            metric: Metric::Cosine,
            quantize: false,
            keep_pruned: true,
        }
    }
}

impl HnswParams {
    fn validate(&self) -> Result<(), AnnError> {
        if !(2..=MAX_M).contains(&self.m) {
            return Err(AnnError::InvalidParameter {
                name: "m",
                reason: format!("{} not in 2..={MAX_M}", self.m),
            });
        }
        if self.ef_construction == 0 {
            return Err(AnnError::InvalidParameter {
                name: "ef_construction",
                reason: "must be > 0".into(),
            });
        }
        Ok(())
    }
}

/// Hierarchical navigable small-world graph over a caller-owned vector store.
#[derive(Debug, Clone, PartialEq)]
pub struct Hnsw {
    pub(crate) params: HnswParams,
    pub(crate) dim: usize,
    /// Level per row, [`ABSENT`] if the row is not in the graph.
    pub(crate) levels: Vec<u8>,
    /// Level-0 links: `1 + 2m` u32 per row: count, then neighbour ids.
    pub(crate) links0: Vec<u32>,
    /// Upper-level links per row: `level * (1 + m)` u32 (count + ids per level), empty for level 0.
    pub(crate) upper: Vec<Vec<u32>>,
    /// Tombstones: deleted rows stay in the graph for routing until [`Hnsw::compact`].
    pub(crate) deleted: IdSet,
    pub(crate) entry: Option<u32>,
    pub(crate) max_level: usize,
    pub(crate) live: usize,
    pub(crate) quant: Option<Int8Vectors>,
    /// Without an int8 copy: sign codes of the store's rows, built by the first large exact scan that
    /// pays for them (see `crate::sign`).
    pub(crate) f32_signs: crate::sign::LazySignCodes,
    /// Set by `build` for one `insert_many` call: the int8 copy already holds every row.
    pub(crate) prequantized: bool,
}

impl Hnsw {
    /// An empty index for `dim`-dimensional vectors.
    pub fn new(dim: usize, params: HnswParams) -> Result<Self, AnnError> {
        params.validate()?;
        if dim == 0 {
            return Err(AnnError::InvalidParameter {
                name: "dim",
                reason: "must be > 0".into(),
            });
        }
        Ok(Hnsw {
            params,
            dim,
            levels: Vec::new(),
            links0: Vec::new(),
            upper: Vec::new(),
            deleted: IdSet::default(),
            entry: None,
            max_level: 0,
            live: 0,
            quant: params.quantize.then(|| Int8Vectors::new(dim)),
            f32_signs: Default::default(),
            prequantized: false,
        })
    }

    /// Parameters the index was built with.
    pub fn params(&self) -> &HnswParams {
        &self.params
    }

    /// Dimensions of the indexed vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of live (inserted, not deleted) rows.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no live rows are indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Whether row `id` is in the index and not deleted.
    pub fn contains(&self, id: u32) -> bool {
        self.is_present(id) && !self.deleted.contains(id)
    }

    /// Number of row slots (one past the highest row id ever inserted).
    pub fn slots(&self) -> usize {
        self.levels.len()
    }

    /// Number of tombstoned rows still in the graph (cleared by [`Hnsw::compact`]).
    pub fn deleted_count(&self) -> usize {
        self.deleted.len()
    }

    /// Heap bytes held by the index (graph, tombstones, int8 copy and sign codes; never the store's
    /// vectors).
    pub fn memory_bytes(&self) -> usize {
        self.levels.capacity()
            + self.links0.capacity() * 4
            + self.upper.capacity() * std::mem::size_of::<Vec<u32>>()
            + self.upper.iter().map(|u| u.capacity() * 4).sum::<usize>()
            + self.deleted.memory_bytes()
            + self.quant.as_ref().map_or(0, |q| q.memory_bytes())
            + self.f32_signs.memory_bytes()
    }

    /// Reads every cache line of the graph and its int8 copy once, so the first search after a load does not
    /// pay for cold memory; returns a checksum of what it read (callers pass it to `std::hint::black_box`).
    pub fn touch(&self) -> u64 {
        let words = |v: &[u32]| v.iter().step_by(16).map(|&x| u64::from(x)).sum::<u64>();
        let mut sum = crate::quant::touch_bytes(&self.levels).wrapping_add(words(&self.links0));
        for u in &self.upper {
            sum = sum.wrapping_add(words(u));
        }
        sum.wrapping_add(self.quant.as_ref().map_or(0, |q| q.touch()))
    }

    /// Turns int8 traversal on (quantising every indexed row of `store`) or off; the graph is unchanged.
    pub fn set_quantized<S: VectorStore + ?Sized>(
        &mut self,
        store: &S,
        on: bool,
    ) -> Result<(), AnnError> {
        self.check_store(store)?;
        self.params.quantize = on;
        self.quant = if on {
            // Every slot, in parallel (absent slots' codes are never read).
            Some(Int8Vectors::from_store_prefix(store, self.levels.len()))
        } else {
            None
        };
        // Built again from `store` if a scan needs them.
        self.f32_signs.clear();
        Ok(())
    }

    /// The int8 copy used for traversal, if the index was built with `quantize`.
    pub fn quantized(&self) -> Option<&Int8Vectors> {
        self.quant.as_ref()
    }

    #[inline]
    pub(crate) fn m0(&self) -> usize {
        2 * self.params.m
    }

    #[inline]
    pub(crate) fn is_present(&self, id: u32) -> bool {
        self.levels.get(id as usize).is_some_and(|&l| l != ABSENT)
    }

    /// Max links kept at `level`.
    #[inline]
    pub(crate) fn cap(&self, level: usize) -> usize {
        if level == 0 {
            self.m0()
        } else {
            self.params.m
        }
    }

    /// Neighbours of `id` at `level` (the node must be present at that level).
    #[inline]
    pub(crate) fn links(&self, id: u32, level: usize) -> &[u32] {
        if level == 0 {
            let base = id as usize * (1 + self.m0());
            let n = self.links0[base] as usize;
            &self.links0[base + 1..base + 1 + n]
        } else {
            let stride = 1 + self.params.m;
            let u = &self.upper[id as usize];
            let base = (level - 1) * stride;
            let n = u[base] as usize;
            &u[base + 1..base + 1 + n]
        }
    }

    /// Replaces the neighbours of `id` at `level` (`ids.len() <= cap(level)`).
    pub(crate) fn set_links(&mut self, id: u32, level: usize, ids: &[u32]) {
        debug_assert!(ids.len() <= self.cap(level));
        if level == 0 {
            let base = id as usize * (1 + self.m0());
            self.links0[base] = ids.len() as u32;
            self.links0[base + 1..base + 1 + ids.len()].copy_from_slice(ids);
        } else {
            let stride = 1 + self.params.m;
            let u = &mut self.upper[id as usize];
            let base = (level - 1) * stride;
            u[base] = ids.len() as u32;
            u[base + 1..base + 1 + ids.len()].copy_from_slice(ids);
        }
    }

    /// Grows the per-row arrays to hold `n` rows.
    pub(crate) fn ensure_slots(&mut self, n: usize) {
        if n > self.levels.len() {
            self.levels.resize(n, ABSENT);
            self.links0.resize(n * (1 + self.m0()), 0);
            self.upper.resize_with(n, Vec::new);
        }
    }

    /// Checks the store matches the index (dimensions, and it still has every indexed row).
    pub(crate) fn check_store<S: VectorStore + ?Sized>(&self, store: &S) -> Result<(), AnnError> {
        if store.dim() != self.dim {
            return Err(AnnError::DimensionMismatch {
                expected: self.dim,
                got: store.dim(),
            });
        }
        if store.len() < self.levels.len() {
            return Err(AnnError::StoreTooSmall {
                store_len: store.len(),
                index_len: self.levels.len(),
            });
        }
        Ok(())
    }

    /// Distance between two stored rows.
    #[inline]
    pub(crate) fn row_distance<S: VectorStore + ?Sized>(&self, store: &S, a: u32, b: u32) -> f32 {
        self.params.metric.distance_rows(store.row(a), store.row(b))
    }
}

#[cfg(test)]
mod tests;
