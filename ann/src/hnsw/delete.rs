//! Deletion by tombstone, and compaction that unlinks tombstoned rows and repairs their neighbours.

use super::{Hnsw, ABSENT};
use crate::error::AnnError;
use crate::store::VectorStore;
use crate::topk::Neighbor;
use rayon::prelude::*;

impl Hnsw {
    /// Marks row `id` deleted: searches skip it at once, but it keeps routing until [`Hnsw::compact`].
    /// Returns `false` if the row was not indexed (or already deleted).
    pub fn delete(&mut self, id: u32) -> bool {
        if !self.contains(id) {
            return false;
        }
        self.deleted.insert(id);
        self.live -= 1;
        true
    }

    /// Removes every tombstoned row from the graph and reconnects the rows that linked to them:
    /// each affected row re-selects its neighbours (Algorithm 4) from its live neighbours plus the
    /// live neighbours of its deleted ones. Removed rows may be inserted again later.
    pub fn compact<S: VectorStore + ?Sized>(&mut self, store: &S) -> Result<(), AnnError> {
        self.check_store(store)?;
        if self.deleted.is_empty() {
            return Ok(());
        }
        let max_level = self.max_level;
        let this = &*self;
        // (row, level, new links) for every live row that links to a deleted one.
        let repairs: Vec<(u32, usize, Vec<u32>)> = (0..self.levels.len() as u32)
            .into_par_iter()
            .filter(|&id| this.contains(id))
            .flat_map_iter(|id| {
                let top = this.levels[id as usize] as usize;
                (0..=top.min(max_level)).filter_map(move |l| this.repaired_links(store, id, l))
            })
            .collect();
        for (id, l, nb) in repairs {
            self.set_links(id, l, &nb);
        }
        let dead: Vec<u32> = self.deleted.iter().collect();
        for id in dead {
            let i = id as usize;
            if i < self.levels.len() {
                self.levels[i] = ABSENT;
                self.upper[i] = Vec::new();
                self.set_links(id, 0, &[]);
            }
            self.deleted.remove(id);
        }
        self.deleted = crate::filter::IdSet::default();
        // New entry point: the highest live row (lowest id on ties) if the old one is gone.
        if self.entry.is_some_and(|e| !self.is_present(e)) {
            self.entry = None;
            self.max_level = 0;
            for (i, &l) in self.levels.iter().enumerate() {
                if l != ABSENT && (self.entry.is_none() || l as usize > self.max_level) {
                    self.entry = Some(i as u32);
                    self.max_level = l as usize;
                }
            }
        }
        Ok(())
    }

    fn repaired_links<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        id: u32,
        l: usize,
    ) -> Option<(u32, usize, Vec<u32>)> {
        let nb = self.links(id, l);
        if !nb.iter().any(|&n| self.deleted.contains(n)) {
            return None;
        }
        let mut cand: Vec<u32> = Vec::with_capacity(nb.len() * 4);
        for &n in nb {
            if self.deleted.contains(n) {
                let lvl = self.levels[n as usize] as usize;
                if lvl >= l {
                    cand.extend(
                        self.links(n, l)
                            .iter()
                            .copied()
                            .filter(|&x| x != id && !self.deleted.contains(x)),
                    );
                }
            } else {
                cand.push(n);
            }
        }
        cand.sort_unstable();
        cand.dedup();
        let mut scored: Vec<Neighbor> = cand
            .into_iter()
            .map(|n| Neighbor {
                id: n,
                distance: self.row_distance(store, id, n),
            })
            .collect();
        scored.sort();
        Some((id, l, self.select_neighbors(store, &scored, self.cap(l))))
    }
}
