//! Per-thread "visited" marks for graph searches: a bitset (one bit per row, so 100K rows take 12.5 KB
//! and stay in L1/L2 cache) that remembers which words it dirtied, so resetting costs O(rows visited).

use std::cell::RefCell;

pub(crate) struct Visited {
    words: Vec<u64>,
    /// Indices of the words set non-zero since the last reset.
    dirty: Vec<u32>,
}

impl Visited {
    const fn empty() -> Self {
        Visited {
            words: Vec::new(),
            dirty: Vec::new(),
        }
    }

    /// Starts a new search over ids `< n`.
    fn reset(&mut self, n: usize) {
        // Clearing the dirty words is cheaper than a full clear unless most words were touched.
        if self.dirty.len() * 8 < self.words.len() {
            for &w in &self.dirty {
                self.words[w as usize] = 0;
            }
        } else {
            self.words.iter_mut().for_each(|w| *w = 0);
        }
        self.dirty.clear();
        let need = n.div_ceil(64);
        if self.words.len() < need {
            self.words.resize(need, 0);
        }
    }

    /// Marks `id`; returns true if it was not marked yet in this search.
    #[inline]
    pub(crate) fn insert(&mut self, id: u32) -> bool {
        let wi = id as usize / 64;
        let bit = 1u64 << (id % 64);
        let w = &mut self.words[wi];
        if *w & bit != 0 {
            return false;
        }
        if *w == 0 {
            self.dirty.push(wi as u32);
        }
        *w |= bit;
        true
    }
}

thread_local! {
    static VISITED: RefCell<Visited> = const { RefCell::new(Visited::empty()) };
}

/// Runs `f` with this thread's visited set, reset for ids `< n`.
pub(crate) fn with_visited<R>(n: usize, f: impl FnOnce(&mut Visited) -> R) -> R {
    VISITED.with(|v| match v.try_borrow_mut() {
        Ok(mut v) => {
            v.reset(n);
            f(&mut v)
        }
        // Re-entrant use on the same thread (not done by this crate): fall back to a fresh set.
        Err(_) => {
            let mut fresh = Visited::empty();
            fresh.reset(n);
            f(&mut fresh)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_reset_between_searches() {
        let mut v = Visited::empty();
        for round in 0..3u32 {
            v.reset(1000);
            for id in (round..1000).step_by(7) {
                assert!(v.insert(id), "round {round} id {id}");
                assert!(!v.insert(id));
            }
        }
        // Growing keeps earlier words clear.
        v.reset(5000);
        assert!((0..5000).all(|id| v.insert(id)));
        v.reset(5000);
        assert!(v.insert(4999) && v.insert(0));
    }
}
