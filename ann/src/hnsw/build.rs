//! Insertion: neighbour selection (Algorithm 4), incremental insert, and the batched parallel build.
//!
//! Both paths run the same two phases per batch of new rows: (1) in parallel, each new row searches
//! the graph as it was before the batch and picks its neighbours; (2) the links are written, and every
//! existing row that gained back-links is re-pruned, in parallel per row. Batch sizes depend only on
//! how many rows are already in the graph, so the result is the same for any number of threads.
//! Rows of the same batch do not see each other while searching; batches are at most a tenth of the
//! graph (and 512 rows), so they link up through the rows around them.

use super::search::{F32Oracle, I8Oracle, Oracle};
use super::{Hnsw, HnswParams, ABSENT, MAX_LEVEL};
use crate::error::AnnError;
use crate::quant::Int8Vectors;
use crate::rng::mix64;
use crate::store::VectorStore;
use crate::topk::Neighbor;
use rayon::prelude::*;

/// Neighbours chosen for one new row, per level `0..=top`.
struct Plan {
    id: u32,
    level: usize,
    per_level: Vec<Vec<u32>>,
}

impl Hnsw {
    /// Builds an index over every row of `store` (in parallel with rayon; deterministic for `params.seed`
    /// whatever the thread count). Construction searches traverse an int8 copy of the vectors (kept
    /// if `params.quantize`, dropped afterwards otherwise) and re-score their candidates in f32 before
    /// neighbour selection, so links are chosen on exact distances.
    pub fn build<S: VectorStore + ?Sized>(store: &S, params: HnswParams) -> Result<Self, AnnError> {
        let mut h = Hnsw::new(store.dim(), params)?;
        let ids: Vec<u32> = (0..store.len() as u32).collect();
        let all = Int8Vectors::from_store(store);
        if h.quant.is_some() {
            h.quant = Some(all);
            // Rows quantised above are not re-quantised by insert_many.
            h.prequantized = true;
            h.insert_many_with(&ids, store, None)?;
        } else {
            // A temporary int8 copy speeds up the construction searches; it is dropped afterwards.
            h.insert_many_with(&ids, store, Some(&all))?;
        }
        Ok(h)
    }

    /// Inserts row `id` of `store`. Returns `false` if the row was already indexed (nothing changes).
    /// A deleted row is re-inserted from scratch.
    pub fn insert<S: VectorStore + ?Sized>(
        &mut self,
        id: u32,
        store: &S,
    ) -> Result<bool, AnnError> {
        let before = self.live;
        self.insert_many(&[id], store)?;
        Ok(self.live > before)
    }

    /// Inserts many rows, in batches whose searches run in parallel. Rows already indexed are skipped.
    pub fn insert_many<S: VectorStore + ?Sized>(
        &mut self,
        ids: &[u32],
        store: &S,
    ) -> Result<(), AnnError> {
        self.insert_many_with(ids, store, None)
    }

    /// [`Hnsw::insert_many`], traversing with `build_quant` (an int8 copy of the store) when the
    /// index has no int8 copy of its own.
    fn insert_many_with<S: VectorStore + ?Sized>(
        &mut self,
        ids: &[u32],
        store: &S,
        build_quant: Option<&Int8Vectors>,
    ) -> Result<(), AnnError> {
        if store.dim() != self.dim {
            return Err(AnnError::DimensionMismatch {
                expected: self.dim,
                got: store.dim(),
            });
        }
        let n = store.len();
        if let Some(&bad) = ids.iter().find(|&&id| id as usize >= n) {
            return Err(AnnError::IdOutOfRange { id: bad, len: n });
        }
        if self.levels.len() > n {
            return Err(AnnError::StoreTooSmall {
                store_len: n,
                index_len: self.levels.len(),
            });
        }
        let max_id = ids.iter().copied().max().map_or(0, |m| m as usize + 1);
        self.ensure_slots(max_id);
        let mut todo: Vec<u32> = Vec::with_capacity(ids.len());
        let mut seen = crate::filter::IdSet::with_capacity(max_id);
        for &id in ids {
            if self.contains(id) || seen.contains(id) {
                continue;
            }
            seen.insert(id);
            if self.deleted.contains(id) {
                // Re-insert a tombstoned row from scratch; routing links into it stay valid.
                self.deleted.remove(id);
                self.levels[id as usize] = ABSENT;
                self.upper[id as usize] = Vec::new();
            }
            todo.push(id);
        }
        let prequantized = std::mem::take(&mut self.prequantized);
        if let Some(q) = &mut self.quant {
            if !prequantized {
                for &id in &todo {
                    q.set(id, &store.row(id).to_f32());
                }
            }
        } else {
            self.f32_signs.update(store, &todo);
        }
        let mut done = 0;
        while done < todo.len() {
            let size = (self.live / 10).clamp(1, 512).min(todo.len() - done);
            self.insert_batch(&todo[done..done + size], store, build_quant);
            done += size;
        }
        Ok(())
    }

    /// Level of a row: geometric with ratio 1/m, drawn from (seed, id) so it is order independent.
    fn level_for(&self, id: u32) -> usize {
        let r = mix64(self.params.seed ^ mix64(id as u64 ^ 0xA5A5_5A5A_DEAD_BEEF));
        let u = ((r >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
        let ml = 1.0 / (self.params.m as f64).ln();
        ((-u.ln() * ml) as usize).min(MAX_LEVEL)
    }

    fn insert_batch<S: VectorStore + ?Sized>(
        &mut self,
        ids: &[u32],
        store: &S,
        build_quant: Option<&Int8Vectors>,
    ) {
        // Phase 1: plans against the graph as it stands (read only, parallel).
        let quant = self.quant.as_ref().or(build_quant);
        let plans: Vec<Plan> = if ids.len() >= 4 {
            ids.par_iter()
                .map(|&id| self.plan(id, store, quant))
                .collect()
        } else {
            ids.iter().map(|&id| self.plan(id, store, quant)).collect()
        };
        // Phase 2a: write each new row's own links and collect the back-links it asks for.
        let mut back: Vec<(u32, u8, u32)> = Vec::new();
        for p in &plans {
            let id = p.id;
            self.levels[id as usize] = p.level as u8;
            self.upper[id as usize] = vec![0; p.level * (1 + self.params.m)];
            for (l, nb) in p.per_level.iter().enumerate() {
                self.set_links(id, l, nb);
                back.extend(nb.iter().map(|&e| (e, l as u8, id)));
            }
            self.live += 1;
        }
        // Phase 2b: re-prune every row that gained back-links (parallel per row, deterministic).
        back.sort_unstable();
        let groups: Vec<&[(u32, u8, u32)]> =
            back.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1).collect();
        let this = &*self;
        let updates: Vec<(u32, usize, Vec<u32>)> = if groups.len() >= 8 {
            groups
                .par_iter()
                .map(|g| this.merged_links(store, g))
                .collect()
        } else {
            groups.iter().map(|g| this.merged_links(store, g)).collect()
        };
        for (e, l, nb) in updates {
            self.set_links(e, l, &nb);
        }
        // Phase 2c: raise the entry point if a new row is higher than the graph.
        for p in &plans {
            if self.entry.is_none() || p.level > self.max_level {
                self.entry = Some(p.id);
                self.max_level = p.level;
            }
        }
    }

    /// Searches for the neighbours of row `id` on each of its levels, traversing with int8
    /// distances when a copy is given (candidates are then re-scored in f32 before selection).
    fn plan<S: VectorStore + ?Sized>(
        &self,
        id: u32,
        store: &S,
        quant: Option<&Int8Vectors>,
    ) -> Plan {
        let metric = self.params.metric;
        match quant {
            Some(qv) if qv.len() > id as usize => {
                let o = I8Oracle {
                    quant: qv,
                    query: qv.quantize_query(&store.row(id).to_f32()),
                    metric,
                };
                self.plan_with(id, store, &o, true)
            }
            _ => {
                let query = store.row(id).to_f32();
                let o = F32Oracle {
                    store,
                    query: &query,
                    metric,
                };
                self.plan_with(id, store, &o, false)
            }
        }
    }

    fn plan_with<S: VectorStore + ?Sized, O: Oracle>(
        &self,
        id: u32,
        store: &S,
        o: &O,
        rescore: bool,
    ) -> Plan {
        let level = self.level_for(id);
        let mut per_level = vec![Vec::new(); level + 1];
        let Some(_) = self.entry else {
            return Plan {
                id,
                level,
                per_level,
            };
        };
        let top = level.min(self.max_level);
        let Some(ep) = self.descend(o, top) else {
            return Plan {
                id,
                level,
                per_level,
            };
        };
        let deleted = &self.deleted;
        let live = |n: u32| !deleted.contains(n);
        let mut eps = vec![ep];
        for l in (0..=top).rev() {
            let found = self
                .search_layer(
                    o,
                    &eps,
                    self.params.ef_construction,
                    l,
                    &live,
                    usize::MAX,
                    false,
                    self.params.ef_construction,
                )
                .unwrap_or_default();
            let mut cands = if rescore {
                let mut v: Vec<Neighbor> = found
                    .into_iter()
                    .map(|n| Neighbor {
                        id: n.id,
                        distance: self.row_distance(store, id, n.id),
                    })
                    .collect();
                v.sort();
                v
            } else {
                found.into_sorted_vec()
            };
            cands.retain(|c| c.id != id);
            per_level[l] = self.select_neighbors(store, &cands, self.params.m);
            if !cands.is_empty() {
                eps = cands;
            }
        }
        Plan {
            id,
            level,
            per_level,
        }
    }

    /// Algorithm 4 (heuristic): walk candidates closest first and keep one only if it is closer to
    /// the base than to every kept neighbour; then, with `keep_pruned`, fill free slots with the
    /// closest pruned ones. `cands` must be sorted by distance to the base row.
    pub(crate) fn select_neighbors<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        cands: &[Neighbor],
        m: usize,
    ) -> Vec<u32> {
        let mut kept: Vec<Neighbor> = Vec::with_capacity(m);
        let mut pruned: Vec<u32> = Vec::new();
        for c in cands {
            if kept.len() >= m {
                break;
            }
            let v = store.row(c.id);
            let diverse = kept
                .iter()
                .all(|r| self.params.metric.distance_rows(v, store.row(r.id)) > c.distance);
            if diverse {
                kept.push(*c);
            } else if self.params.keep_pruned {
                pruned.push(c.id);
            }
        }
        let mut out: Vec<u32> = kept.iter().map(|n| n.id).collect();
        let free = m - out.len();
        out.extend(pruned.into_iter().take(free));
        out
    }

    /// New link list of row `g[0].0` at level `g[0].1` after adding the back-links in `g`.
    fn merged_links<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        g: &[(u32, u8, u32)],
    ) -> (u32, usize, Vec<u32>) {
        let (e, l) = (g[0].0, g[0].1 as usize);
        let cap = self.cap(l);
        let current = self.links(e, l);
        let mut all: Vec<u32> = current.to_vec();
        for &(_, _, id) in g {
            if !all.contains(&id) {
                all.push(id);
            }
        }
        if all.len() <= cap {
            return (e, l, all);
        }
        let mut cands: Vec<Neighbor> = all
            .iter()
            .filter(|&&n| !self.deleted.contains(n))
            .map(|&n| Neighbor {
                id: n,
                distance: self.row_distance(store, e, n),
            })
            .collect();
        cands.sort();
        (e, l, self.select_neighbors(store, &cands, cap))
    }
}
