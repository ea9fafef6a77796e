//! Search filters: a dense bitset of allowed ids, or an arbitrary predicate.

/// Dense bitset over u32 ids.
#[derive(Debug, Clone, Default)]
pub struct IdSet {
    words: Vec<u64>,
}

impl PartialEq for IdSet {
    /// Sets are equal when they hold the same ids, whatever their capacity.
    fn eq(&self, other: &Self) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| {
            self.words.get(i).copied().unwrap_or(0) == other.words.get(i).copied().unwrap_or(0)
        })
    }
}

impl Eq for IdSet {}

impl IdSet {
    /// Empty set able to hold ids `< capacity` without growing.
    pub fn with_capacity(capacity: usize) -> Self {
        IdSet {
            words: vec![0; capacity.div_ceil(64)],
        }
    }

    /// Adds `id`, growing as needed.
    pub fn insert(&mut self, id: u32) {
        let w = id as usize / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (id % 64);
    }

    /// Removes `id`.
    pub fn remove(&mut self, id: u32) {
        if let Some(w) = self.words.get_mut(id as usize / 64) {
            *w &= !(1u64 << (id % 64));
        }
    }

    /// Whether `id` is in the set.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.words
            .get(id as usize / 64)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    /// Number of ids in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Ids in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                Some(wi as u32 * 64 + b)
            })
        })
    }

    /// Raw 64-bit words (bit `i` of word `w` is id `64 w + i`).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Builds a set from raw words.
    pub fn from_words(words: Vec<u64>) -> Self {
        IdSet { words }
    }

    /// Heap bytes used.
    pub fn memory_bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

impl FromIterator<u32> for IdSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut s = IdSet::default();
        for id in iter {
            s.insert(id);
        }
        s
    }
}

/// Restricts a search to some ids. Searches return the best `k` among the allowed ids.
#[derive(Clone, Copy)]
pub enum Filter<'a> {
    /// Only ids in the set are allowed (the count is known, which lets searches pick the cheapest plan).
    Ids(&'a IdSet),
    /// Only ids for which the predicate returns true are allowed.
    Predicate(&'a (dyn Fn(u32) -> bool + Sync)),
}

impl Filter<'_> {
    /// Whether `id` passes the filter.
    #[inline]
    pub fn allows(&self, id: u32) -> bool {
        match self {
            Filter::Ids(s) => s.contains(id),
            Filter::Predicate(p) => p(id),
        }
    }
}

impl std::fmt::Debug for Filter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Filter::Ids(s) => write!(f, "Filter::Ids({} ids)", s.len()),
            Filter::Predicate(_) => write!(f, "Filter::Predicate"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idset_basics() {
        let mut s: IdSet = [3u32, 64, 200].into_iter().collect();
        assert!(s.contains(3) && s.contains(64) && s.contains(200));
        assert!(!s.contains(4) && !s.contains(100_000));
        assert_eq!(s.len(), 3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 64, 200]);
        s.remove(64);
        s.remove(1_000_000);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 200]);
        let f = Filter::Ids(&s);
        assert!(f.allows(3) && !f.allows(64));
        let p = |id: u32| id.is_multiple_of(2);
        assert!(Filter::Predicate(&p).allows(4));
        assert!(IdSet::with_capacity(10).is_empty());
    }
}
