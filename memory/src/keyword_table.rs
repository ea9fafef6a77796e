//! The keyword index as stored under `/index/bm25`: the vocabulary and, per row, its term ids. Opening a store
//! rebuilds the BM25 postings from these integers instead of tokenising every text again, and a checkpoint
//! appends only the new terms and rows.

use crate::bm25::{Bm25Index, Bm25Params};

/// Version of the tokenizer's output; bump it whenever the same configuration would tokenise differently, so
/// persisted term ids from an older build are rebuilt rather than trusted.
pub const TOKENIZER_OUTPUT_VERSION: u32 = 1;

/// The persisted keyword index: vocabulary plus a flat list of term ids with each row's span in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeywordTable {
    /// Terms by id.
    pub terms: Vec<String>,
    /// Term ids of all rows, concatenated (a row's ids ascending, one per token).
    pub doc_terms: Vec<u32>,
    /// Per row: where its ids start in `doc_terms`.
    pub doc_start: Vec<u64>,
    /// Per row: how many ids it has.
    pub doc_len: Vec<u32>,
}

impl KeywordTable {
    /// The table of an index over rows `0..rows`.
    pub fn from_index(index: &Bm25Index, rows: usize) -> Self {
        let mut t = KeywordTable {
            terms: index.terms().to_vec(),
            ..Default::default()
        };
        for ids in index.doc_terms(rows) {
            t.push_row(&ids);
        }
        t
    }

    /// Append one row's ids.
    pub fn push_row(&mut self, ids: &[u32]) {
        self.doc_start.push(self.doc_terms.len() as u64);
        self.doc_len.push(ids.len() as u32);
        self.doc_terms.extend_from_slice(ids);
    }

    /// Term ids of `row`; `None` when its span lies outside the flat list.
    fn row_ids(&self, row: usize) -> Option<&[u32]> {
        let start = usize::try_from(*self.doc_start.get(row)?).ok()?;
        let len = *self.doc_len.get(row)? as usize;
        self.doc_terms.get(start..start.checked_add(len)?)
    }

    /// Rebuild the BM25 index, adding the rows `live` accepts. `None` when the table is inconsistent (the
    /// caller then tokenises the texts again).
    pub fn to_index(&self, params: Bm25Params, live: &dyn Fn(usize) -> bool) -> Option<Bm25Index> {
        if self.doc_start.len() != self.doc_len.len() {
            return None;
        }
        let rows = || (0..self.doc_start.len()).filter(|&row| live(row));
        // Exact posting-list capacities first (no growth slack in memory): documents per term.
        let mut df = vec![0u32; self.terms.len()];
        for row in rows() {
            let mut prev = None;
            for &t in self.row_ids(row)? {
                if prev != Some(t) {
                    *df.get_mut(t as usize)? += 1;
                    prev = Some(t);
                }
            }
        }
        let mut ix = Bm25Index::with_terms(params, self.terms.clone());
        ix.reserve_postings(&df);
        for row in rows() {
            if !ix.add_ids(u32::try_from(row).ok()?, self.row_ids(row)?) {
                return None;
            }
        }
        Some(ix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn round_trip_and_damage() {
        let mut ix = Bm25Index::new(Bm25Params::default());
        for (i, d) in ["alpha beta", "beta gamma gamma", "delta"]
            .iter()
            .enumerate()
        {
            ix.add(i as u32, &toks(d));
        }
        let t = KeywordTable::from_index(&ix, 3);
        assert_eq!(t.doc_len, vec![2, 3, 1]);
        let back = t.to_index(Bm25Params::default(), &|_| true).unwrap();
        assert_eq!(
            back.search(&toks("gamma"), 5, &|_| true),
            ix.search(&toks("gamma"), 5, &|_| true)
        );
        let skipped = t.to_index(Bm25Params::default(), &|r| r != 1).unwrap();
        assert_eq!(skipped.len(), 2);
        let mut bad = t.clone();
        bad.doc_start[2] = 1_000;
        assert!(bad.to_index(Bm25Params::default(), &|_| true).is_none());
        let mut bad = t;
        bad.doc_terms[0] = 77;
        assert!(bad.to_index(Bm25Params::default(), &|_| true).is_none());
    }
}
