//! One term's postings in the keyword index: its documents ascending, each with the term's frequency in
//! it, in five bytes a posting (a document number and a one-byte frequency; the rare frequencies of 255 and
//! more are kept exactly on the side).

/// A one-byte frequency that means "look it up in the list's large frequencies".
const LARGE: u8 = u8::MAX;

/// Documents ascending with their term frequencies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Postings {
    docs: Vec<u32>,
    /// Per document: its frequency, or [`LARGE`].
    tfs: Vec<u8>,
    /// Frequencies of [`LARGE`] and more, by document ascending (absent in almost every list). Boxed so
    /// that the common case, no such frequency, costs one word per term rather than a whole `Vec`.
    #[allow(clippy::box_collection)]
    large: Option<Box<Vec<(u32, u32)>>>,
}

impl Postings {
    /// Room for `n` more documents, exactly.
    pub(crate) fn reserve_exact(&mut self, n: usize) {
        self.docs.reserve_exact(n);
        self.tfs.reserve_exact(n);
    }

    /// The documents, ascending.
    #[cfg(test)]
    pub(crate) fn docs(&self) -> &[u32] {
        &self.docs
    }

    /// Reads one value per cache line of the documents and frequencies; returns their sum.
    pub(crate) fn touch(&self) -> u64 {
        let docs: u64 = self.docs.iter().step_by(16).map(|&d| u64::from(d)).sum();
        let tfs: u64 = self.tfs.iter().step_by(64).map(|&t| u64::from(t)).sum();
        docs.wrapping_add(tfs)
    }

    /// Heap bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.docs.capacity() * 4
            + self.tfs.capacity()
            + self.large.as_ref().map_or(0, |l| l.capacity() * 8)
    }

    /// Appends `doc` with frequency `tf`, or inserts it in order when it is not the largest document.
    pub(crate) fn add(&mut self, doc: u32, tf: u32) {
        let pos = match self.docs.last() {
            Some(&last) if last > doc => self.docs.partition_point(|&d| d < doc),
            _ => self.docs.len(),
        };
        self.docs.insert(pos, doc);
        self.tfs.insert(pos, tf.min(u32::from(LARGE)) as u8);
        if tf >= u32::from(LARGE) {
            let large = self.large.get_or_insert_with(Box::default);
            let at = large.partition_point(|&(d, _)| d < doc);
            large.insert(at, (doc, tf));
        }
    }

    /// Removes `doc`; false when it is not listed.
    pub(crate) fn remove(&mut self, doc: u32) -> bool {
        let Ok(pos) = self.docs.binary_search(&doc) else {
            return false;
        };
        self.docs.remove(pos);
        if self.tfs.remove(pos) == LARGE {
            if let Some(large) = &mut self.large {
                if let Ok(at) = large.binary_search_by_key(&doc, |&(d, _)| d) {
                    large.remove(at);
                }
                if large.is_empty() {
                    self.large = None;
                }
            }
        }
        true
    }

    #[cold]
    fn large_tf(&self, doc: u32) -> u32 {
        self.large
            .as_ref()
            .and_then(|l| {
                l.binary_search_by_key(&doc, |&(d, _)| d)
                    .ok()
                    .map(|at| l[at].1)
            })
            .unwrap_or(u32::from(LARGE))
    }

    /// `(document, frequency)` pairs, documents ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.docs.iter().zip(&self.tfs).map(|(&doc, &tf)| match tf {
            LARGE => (doc, self.large_tf(doc)),
            tf => (doc, u32::from(tf)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_of_every_size_read_back_exactly() {
        let mut p = Postings::default();
        let tfs = [1u32, 254, 255, 256, 70_000, 3, u32::MAX];
        for (i, &tf) in tfs.iter().enumerate() {
            p.add(i as u32 * 10, tf);
        }
        // Out of order: inserted in place.
        p.add(15, 300);
        p.add(5, 2);
        let want = vec![
            (0, 1),
            (5, 2),
            (10, 254),
            (15, 300),
            (20, 255),
            (30, 256),
            (40, 70_000),
            (50, 3),
            (60, u32::MAX),
        ];
        assert_eq!(p.iter().collect::<Vec<_>>(), want);
        assert_eq!(p.docs().len(), want.len());
        for doc in [15, 40, 0, 60, 20, 30] {
            assert!(p.remove(doc));
            assert!(!p.remove(doc));
        }
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            vec![(5, 2), (10, 254), (50, 3)]
        );
        assert!(p.large.is_none(), "no large frequency is left");
    }
}
