//! What the store file holds and what changed since it was written: the next checkpoint writes exactly the
//! difference (new rows appended, changed rows rewritten column group by column group).

use clawhdf5_ann::IdSet;
use std::collections::{BTreeMap, BTreeSet};

/// How much of the store the HDF5 file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileState {
    /// Record rows in the file.
    pub rows: usize,
    /// Keyword vocabulary size in the file.
    pub terms: usize,
    /// Length of `/index/bm25/doc_terms`.
    pub term_ids: u64,
    /// Rows the file's graph covers (0: no graph).
    pub graph_slots: usize,
    /// Vector epoch of the file's graph.
    pub graph_epoch: u64,
    /// The file has the embedding columns.
    pub has_embedding: bool,
    /// The file has `/integrity`, signed with this key.
    pub signer: Option<[u8; 32]>,
    /// Rows per chunk of the file's record columns.
    pub chunk_rows: u64,
    /// The file's keyword index is missing or stale: the next checkpoint rewrites the file.
    pub keywords_stale: bool,
    /// Bytes of superseded data left in the file by incremental checkpoints since the last full write.
    pub dead_bytes: u64,
}

/// Changes since the last checkpoint.
#[derive(Clone, Debug, Default)]
pub struct Pending {
    /// Rows whose text (and embedding) changed.
    pub text_rows: BTreeSet<u32>,
    /// Rows whose tags, importance, tier, supersession or tombstone changed.
    pub meta_rows: BTreeSet<u32>,
    /// Rows whose access statistics changed (a bitmap: replaying a log of searches marks the same rows
    /// again and again).
    pub access_rows: IdSet,
    /// Extensions whose state changed.
    pub extensions: BTreeSet<String>,
    /// Term ids of rows whose keyword entry the file lacks (new rows and changed texts).
    pub row_terms: BTreeMap<u32, Vec<u32>>,
}

impl Pending {
    /// Whether the text, metadata or access statistics of a row at or past `row` changed.
    pub fn changed_from(&self, row: u32) -> bool {
        self.text_rows.range(row..).next().is_some()
            || self.meta_rows.range(row..).next().is_some()
            || self.access_rows.iter().any(|r| r >= row)
    }

    /// Rows of `rows` (ascending) below `file_rows` (rows past it are written whole as new rows), grouped into
    /// runs whose gaps are at most `gap` rows, as `start..end` ranges.
    pub fn runs(
        rows: impl IntoIterator<Item = u32>,
        file_rows: usize,
        gap: usize,
    ) -> Vec<std::ops::Range<usize>> {
        let mut out: Vec<std::ops::Range<usize>> = Vec::new();
        for row in rows.into_iter().map(|r| r as usize) {
            if row >= file_rows {
                break;
            }
            match out.last_mut() {
                Some(r) if row <= r.end + gap => r.end = row + 1,
                _ => out.push(row..row + 1),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_from_looks_at_every_kind_of_change() {
        let mut p = Pending::default();
        assert!(!p.changed_from(0));
        p.text_rows.insert(10);
        assert!(p.changed_from(10) && !p.changed_from(11));
        p.meta_rows.insert(20);
        assert!(p.changed_from(20) && !p.changed_from(21));
        p.access_rows.insert(3000);
        assert!(p.changed_from(2999) && p.changed_from(3000) && !p.changed_from(3001));
        // New rows' term ids are not changes to rows in the file.
        p.row_terms.insert(5000, vec![1]);
        assert!(!p.changed_from(3001));
    }

    #[test]
    fn runs_merge_close_rows_and_skip_new_ones() {
        let set: BTreeSet<u32> = [1, 2, 5, 40, 41, 90, 120].into_iter().collect();
        assert_eq!(
            Pending::runs(set.iter().copied(), 100, 4),
            vec![1..6, 40..42, 90..91]
        );
        assert_eq!(
            Pending::runs(set.iter().copied(), 100, 0),
            vec![1..3, 5..6, 40..42, 90..91]
        );
        assert!(Pending::runs([], 10, 4).is_empty());
    }

    #[test]
    fn bitmap_rows_give_the_runs_a_tree_set_gives() {
        let rows: IdSet = [90u32, 5, 63, 64, 5, 0, 1000, 90].into_iter().collect();
        let set: BTreeSet<u32> = rows.iter().collect();
        assert_eq!(
            Pending::runs(rows.iter(), 100, 4),
            Pending::runs(set.iter().copied(), 100, 4)
        );
        assert_eq!(
            Pending::runs(rows.iter(), 100, 4),
            vec![0..6, 63..65, 90..91]
        );
    }
}
