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
            heap: BinaryHeap::with_capacity(k + 1),
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

#[cfg(test)]
mod tests {
    use super::*;

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
