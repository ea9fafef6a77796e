//! Per-thread "visited" marks for graph searches, reset in O(1) by bumping an epoch.

use std::cell::RefCell;

pub(crate) struct Visited {
    marks: Vec<u32>,
    epoch: u32,
}

impl Visited {
    /// Starts a new search over ids `< n`.
    fn reset(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
    }

    /// Marks `id`; returns true if it was not marked yet in this search.
    #[inline]
    pub(crate) fn insert(&mut self, id: u32) -> bool {
        let m = &mut self.marks[id as usize];
        if *m == self.epoch {
            false
        } else {
            *m = self.epoch;
            true
        }
    }
}

thread_local! {
    static VISITED: RefCell<Visited> = const { RefCell::new(Visited { marks: Vec::new(), epoch: 0 }) };
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
            let mut fresh = Visited {
                marks: Vec::new(),
                epoch: 0,
            };
            fresh.reset(n);
            f(&mut fresh)
        }
    })
}
