//! Vector search over the store's embeddings: an exact SIMD scan below a size threshold, an HNSW graph (int8
//! traversal, exact f32 re-scoring) above it. The index never copies the f32 vectors: it reads the store's
//! [`VectorTable`].

use clawhdf5_ann::{exact_top_k, Filter, Hnsw, HnswParams, Metric, Neighbor, VectorStore};

/// Largest tail of unindexed rows that opening a store folds into the graph.
pub const CHEAP_TAIL: usize = 1024;

use crate::config::StoreConfig;
use crate::error::{MemoryError, Result};
use crate::vectors::VectorTable;

impl VectorStore for VectorTable {
    fn dim(&self) -> usize {
        VectorTable::dim(self)
    }

    fn len(&self) -> usize {
        self.rows()
    }

    fn vector(&self, id: u32) -> &[f32] {
        self.row(id as usize)
    }
}

/// The vector index of a store.
#[derive(Default)]
pub struct VectorIndex {
    hnsw: Option<Hnsw>,
    /// Rows changed in place since the graph was built (their graph position is stale): rebuild on next use.
    stale: bool,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("hnsw", &self.hnsw.as_ref().map(|h| h.len()))
            .field("stale", &self.stale)
            .finish()
    }
}

fn ann_err(e: clawhdf5_ann::AnnError) -> MemoryError {
    MemoryError::Embedding(format!("vector index: {e}"))
}

fn params(config: &StoreConfig) -> HnswParams {
    HnswParams {
        m: config.hnsw_m.clamp(2, 64) as usize,
        ef_construction: config.hnsw_ef_construction.max(16) as usize,
        metric: Metric::Cosine,
        quantize: true,
        ..HnswParams::default()
    }
}

impl VectorIndex {
    /// Restore a persisted graph; `None` (rebuilt on demand) when it is missing, stale or unreadable.
    pub fn load(bytes: Option<&[u8]>, generation: u64, table: &VectorTable) -> VectorIndex {
        let hnsw = bytes
            .and_then(|b| Hnsw::from_bytes(b, generation).ok())
            .and_then(|mut h| {
                if h.dim() != table.dim() || h.slots() > table.rows() {
                    return None;
                }
                // The persisted graph omits the int8 copy; quantise again from the store's vectors.
                h.set_quantized(table, true).ok()?;
                Some(h)
            });
        VectorIndex { hnsw, stale: false }
    }

    /// True when vectors changed in place since the graph was built (it is rebuilt before next use).
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// The graph, if one is built.
    pub fn graph(&self) -> Option<&Hnsw> {
        self.hnsw.as_ref()
    }

    /// Serialise the graph (without the int8 copy, which is rebuilt on load) for a checkpoint.
    pub fn persist(&mut self, generation: u64, table: &VectorTable) -> Result<Option<Vec<u8>>> {
        if self.stale {
            return Ok(None);
        }
        let Some(h) = self.hnsw.as_mut() else {
            return Ok(None);
        };
        h.set_quantized(table, false).map_err(ann_err)?;
        let bytes = h.to_bytes(generation);
        h.set_quantized(table, true).map_err(ann_err)?;
        Ok(Some(bytes))
    }

    /// A row was forgotten.
    pub fn deleted(&mut self, row: u32) {
        if let Some(h) = self.hnsw.as_mut() {
            h.delete(row);
        }
    }

    /// A row's vector changed in place.
    pub fn changed(&mut self) {
        if self.hnsw.is_some() {
            self.stale = true;
        }
    }

    /// Rows the graph has not seen yet (saved since it was built or stored): they are searched exactly until
    /// [`Self::ensure`] folds them in.
    pub fn tail(&self, table: &VectorTable) -> usize {
        match (&self.hnsw, self.stale) {
            (Some(h), false) => table.rows().saturating_sub(h.slots()),
            _ => 0,
        }
    }

    /// Bring the graph up to date when the store is big enough to need one: build it (in parallel) or fold
    /// in the rows saved since. With `cheap_only`, only a tail of at most [`CHEAP_TAIL`] rows is folded in
    /// and nothing is built (opening a store stays fast; searches cover what is left exactly).
    pub fn ensure(
        &mut self,
        table: &VectorTable,
        config: &StoreConfig,
        live: &dyn Fn(u32) -> bool,
        cheap_only: bool,
    ) -> Result<()> {
        let want = table.dim() > 0 && table.rows() >= config.exact_search_threshold as usize;
        if !want {
            self.hnsw = None;
            self.stale = false;
            return Ok(());
        }
        if let (Some(h), false) = (self.hnsw.as_mut(), self.stale) {
            let (slots, rows) = (h.slots(), table.rows());
            if slots >= rows || (cheap_only && rows - slots > CHEAP_TAIL) {
                return Ok(());
            }
            let ids: Vec<u32> = (slots as u32..rows as u32).collect();
            h.insert_many(&ids, table).map_err(ann_err)?;
            for id in ids {
                if !table.has(id as usize) || !live(id) {
                    h.delete(id);
                }
            }
            return Ok(());
        }
        if cheap_only {
            return Ok(());
        }
        let mut h = Hnsw::build(table, params(config)).map_err(ann_err)?;
        for row in 0..table.rows() as u32 {
            if !table.has(row as usize) || !live(row) {
                h.delete(row);
            }
        }
        self.hnsw = Some(h);
        self.stale = false;
        Ok(())
    }

    /// The `k` rows most similar to `query` (unit length) among those `allow` accepts, with cosine similarity,
    /// best first.
    pub fn search(
        &self,
        table: &VectorTable,
        query: &[f32],
        k: usize,
        ef: usize,
        allow: &(dyn Fn(u32) -> bool + Sync),
    ) -> Result<Vec<(u32, f32)>> {
        let with_vector = |row: u32| table.has(row as usize) && allow(row);
        let hits = match (&self.hnsw, self.stale) {
            (Some(h), false) => {
                let mut hits = h
                    .search(
                        table,
                        query,
                        k,
                        ef.max(k),
                        Some(Filter::Predicate(&with_vector)),
                    )
                    .map_err(ann_err)?;
                // Rows saved since the graph was built: scanned exactly and merged.
                for row in h.slots()..table.rows() {
                    if with_vector(row as u32) {
                        hits.push(Neighbor {
                            id: row as u32,
                            distance: Metric::Cosine.distance(query, table.row(row)),
                        });
                    }
                }
                hits.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.id.cmp(&b.id)));
                hits.truncate(k);
                hits
            }
            _ => exact_top_k(
                table,
                query,
                k,
                Metric::Cosine,
                Some(Filter::Predicate(&with_vector)),
            )
            .map_err(ann_err)?,
        };
        Ok(hits.into_iter().map(|n| (n.id, 1.0 - n.distance)).collect())
    }
}
