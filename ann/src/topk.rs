//! Search results and the bounded heap that keeps the best `k`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One search hit: row id and distance (lower is closer, see [`crate::Metric`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbor {
    /// Row id in the vector store.
    pub id: u32,
    /// Distance to the query under the index's metric.
    pub distance: f32,
}

impl Eq for Neighbor {}

impl Ord for Neighbor {
    /// Total order by distance, ties broken by id, so results are deterministic.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.distance
            .total_cmp(&other.distance)
            .then(self.id.cmp(&other.id))
    }
}

impl PartialOrd for Neighbor {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The most entries a collector reserves up front, whatever its `k`.
const PREALLOCATE_AT_MOST: usize = 1 << 12;

/// Keeps the `k` closest neighbours pushed so far (a max-heap on distance).
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Neighbor>,
}

impl TopK {
    /// Empty collector for the best `k`.
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            // Reserve for a plausible `k` only: a caller's huge `k` (say "all") grows the heap as rows come.
            heap: BinaryHeap::with_capacity(k.min(PREALLOCATE_AT_MOST) + 1),
        }
    }

    /// Distance a candidate must beat to enter (infinity until full).
    #[inline]
    pub fn threshold(&self) -> f32 {
        if self.heap.len() < self.k {
            f32::INFINITY
        } else {
            self.heap.peek().map_or(f32::INFINITY, |n| n.distance)
        }
    }

    /// Offers a candidate.
    #[inline]
    pub fn push(&mut self, id: u32, distance: f32) {
        if self.k == 0 {
            return;
        }
        let n = Neighbor { id, distance };
        if self.heap.len() < self.k {
            self.heap.push(n);
        } else if let Some(mut top) = self.heap.peek_mut() {
            if n < *top {
                *top = n;
            }
        }
    }

    /// Merges another collector into this one.
    pub fn merge(&mut self, other: TopK) {
        for n in other.heap {
            self.push(n.id, n.distance);
        }
    }

    /// Results sorted closest first.
    pub fn into_sorted(self) -> Vec<Neighbor> {
        self.heap.into_sorted_vec()
    }
}

/// Keeps the `k` closest of many candidates by appending them to a buffer of `2k` and, when it fills,
/// keeping its best `k` with a linear-time selection: cheaper than a heap when most of a long stream
/// enters (as in a scan that keeps hundreds of rows), since an append costs no sifting.
#[derive(Debug, Clone)]
pub struct TopKBuffer {
    k: usize,
    buf: Vec<Neighbor>,
    /// Candidates must be closer than this to enter: the `k`-th best at the last selection.
    bound: f32,
}

impl TopKBuffer {
    /// Empty collector for the best `k`.
    pub fn new(k: usize) -> Self {
        TopKBuffer {
            k,
            buf: Vec::with_capacity(2 * k.min(PREALLOCATE_AT_MOST)),
            bound: f32::INFINITY,
        }
    }

    /// Distance a candidate must beat to enter (infinity until the first selection).
    #[inline]
    pub fn threshold(&self) -> f32 {
        self.bound
    }

    /// Offers a candidate.
    #[inline]
    pub fn push(&mut self, id: u32, distance: f32) {
        if self.k == 0 || distance >= self.bound {
            return;
        }
        self.buf.push(Neighbor { id, distance });
        if self.buf.len() >= 2 * self.k {
            self.select();
        }
    }

    /// Keeps the best `k` of the buffer and tightens the bound to the worst of them.
    fn select(&mut self) {
        if self.buf.len() > self.k {
            self.buf.select_nth_unstable(self.k - 1);
            self.buf.truncate(self.k);
            self.bound = self.buf[self.k - 1].distance;
        }
    }

    /// The best `k` (or all, if fewer came), in no particular order.
    pub fn into_unsorted(mut self) -> Vec<Neighbor> {
        self.select();
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_keeps_what_the_heap_keeps() {
        let mut rng = crate::rng::SplitMix64::new(5);
        for k in [0usize, 1, 3, 10, 100] {
            for n in [0usize, 1, 5, 50, 1000] {
                let (mut heap, mut buf) = (TopK::new(k), TopKBuffer::new(k));
                for id in 0..n as u32 {
                    // Few distinct distances, so ties are exercised too.
                    let d = rng.below(40) as f32;
                    heap.push(id, d);
                    buf.push(id, d);
                }
                let mut got = buf.into_unsorted();
                got.sort();
                let want = heap.into_sorted();
                // Ties at the bound may keep other ids; the distances must agree.
                let dist = |v: &[Neighbor]| v.iter().map(|n| n.distance).collect::<Vec<_>>();
                assert_eq!(dist(&got), dist(&want), "k={k} n={n}");
            }
        }
    }

    #[test]
    fn keeps_best_k_sorted() {
        let mut t = TopK::new(3);
        for (i, d) in [5.0f32, 1.0, 4.0, 2.0, 3.0, 0.5].iter().enumerate() {
            t.push(i as u32, *d);
        }
        let r = t.into_sorted();
        assert_eq!(r.iter().map(|n| n.id).collect::<Vec<_>>(), vec![5, 1, 3]);
        let mut z = TopK::new(0);
        z.push(1, 1.0);
        assert!(z.into_sorted().is_empty());
    }
}
