//! The keyword index as stored under `/index/bm25`: the vocabulary and, per row, its term ids. Opening a store
//! rebuilds the BM25 postings from these integers instead of tokenising every text again, and a checkpoint
//! appends only the new terms and rows.

use crate::bm25::{Bm25Index, Bm25Params};

/// Version of the tokenizer's output; bump it whenever the same configuration would tokenise differently, so
/// persisted term ids from an older build are rebuilt rather than trusted.
pub const TOKENIZER_OUTPUT_VERSION: u32 = 1;

/// Value of `/index/bm25`'s `doc_terms_encoding` attribute when each row's ids are stored as gaps.
pub const GAPS_ENCODING: &str = "gaps";

/// The persisted keyword index: vocabulary plus a flat list of term ids with each row's span in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeywordTable {
    /// Terms by id.
    pub terms: Vec<String>,
    /// Term ids of all rows, concatenated (a row's ids ascending, one per token); as gaps when `gaps`.
    pub doc_terms: Vec<u32>,
    /// Each row's span holds its first id, then the difference from the previous id (the stored form:
    /// small numbers that shuffle + deflate pack to about a byte a token).
    pub gaps: bool,
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

    /// The stored ids of `row` (gaps when `gaps`); `None` when its span lies outside the flat list.
    fn row_span(&self, row: usize) -> Option<&[u32]> {
        let start = usize::try_from(*self.doc_start.get(row)?).ok()?;
        let len = *self.doc_len.get(row)? as usize;
        self.doc_terms.get(start..start.checked_add(len)?)
    }

    /// Term ids of `row`, decoded into `buf`; `None` when the span is outside the list or the gaps overflow.
    fn row_ids<'b>(&self, row: usize, buf: &'b mut Vec<u32>) -> Option<&'b [u32]> {
        let span = self.row_span(row)?;
        buf.clear();
        if self.gaps {
            let mut id = 0u32;
            for &g in span {
                id = id.checked_add(g)?;
                buf.push(id);
            }
        } else {
            buf.extend_from_slice(span);
        }
        Some(buf)
    }

    /// The table in its stored form: every row's span rewritten as gaps, rows laid out in order.
    pub fn to_gaps(&self) -> KeywordTable {
        if self.gaps {
            return self.clone();
        }
        let mut out = KeywordTable {
            terms: self.terms.clone(),
            gaps: true,
            ..Default::default()
        };
        out.doc_terms.reserve(self.doc_terms.len());
        for row in 0..self.doc_start.len() {
            let ids = self.row_span(row).unwrap_or(&[]);
            out.doc_start.push(out.doc_terms.len() as u64);
            out.doc_len.push(ids.len() as u32);
            push_gaps(ids, &mut out.doc_terms);
        }
        out
    }

    /// Rebuild the BM25 index, adding the rows `live` accepts, on every core. `None` when the table is
    /// inconsistent (the caller then tokenises the texts again).
    pub fn to_index(
        &self,
        params: Bm25Params,
        live: &(dyn Fn(usize) -> bool + Sync),
    ) -> Option<Bm25Index> {
        if self.doc_start.len() != self.doc_len.len() {
            return None;
        }
        Bm25Index::from_doc_ids(
            params,
            self.terms.clone(),
            self.doc_start.len(),
            |row, buf| {
                if !live(row) {
                    return Some(false);
                }
                self.row_ids(row, buf)?;
                Some(true)
            },
        )
    }
}

/// Appends `ids` (ascending) as gaps: the first id, then each id's difference from the one before.
pub fn push_gaps(ids: &[u32], out: &mut Vec<u32>) {
    let mut prev = 0u32;
    for &id in ids {
        out.push(id.wrapping_sub(prev));
        prev = id;
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
        let mut bad = t.clone();
        bad.doc_terms[0] = 77;
        assert!(bad.to_index(Bm25Params::default(), &|_| true).is_none());
        // The stored (gap) form rebuilds the same index, and damage to it is caught too.
        let g = t.to_gaps();
        assert!(g.gaps && g.doc_len == t.doc_len);
        assert!(g.doc_terms.iter().max() <= t.doc_terms.iter().max());
        let back = g.to_index(Bm25Params::default(), &|_| true).unwrap();
        assert_eq!(
            back.search(&toks("gamma beta"), 5, &|_| true),
            ix.search(&toks("gamma beta"), 5, &|_| true)
        );
        let mut bad = g.clone();
        bad.doc_terms[1] = u32::MAX;
        assert!(bad.to_index(Bm25Params::default(), &|_| true).is_none());
        let mut bad = g;
        bad.doc_terms[0] = 77;
        assert!(bad.to_index(Bm25Params::default(), &|_| true).is_none());
    }
}
