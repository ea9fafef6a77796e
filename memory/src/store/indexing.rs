//! Keeping the in-memory row tables and indexes current: adding records, and the vector graph's upkeep.

use crate::bm25::Bm25Index;
use crate::error::Result;
use crate::pending::Pending;
use crate::record::Record;
use crate::tokenize::Terms;

use super::{record_dedup_key, row_flags, Store};

impl Store {
    /// Room for `n` more records in the per-row tables, so a large batch grows each of them once.
    pub(super) fn reserve(&mut self, n: usize) {
        self.records.reserve(n);
        self.row_flags.reserve(n);
        self.by_id.reserve(n);
        self.dedup.reserve(n);
    }

    /// Add a record read from the file to the row tables (not to the keyword index).
    pub(super) fn push_record(&mut self, mut r: Record, key: Option<u64>) {
        let row = self.records.len() as u32;
        if let Some(key) = key {
            self.dedup.insert(key, r.id);
        }
        self.by_id.insert(r.id, row);
        self.meta.next_id = self.meta.next_id.max(r.id + 1);
        r.embedding = None;
        self.row_flags.push(row_flags(&r));
        self.records.push(r);
    }

    /// Bring the vector graph fully up to date now (waits for a background job).
    pub(super) fn refresh_index(&mut self) -> Result<()> {
        let records = &self.records;
        let live = |row: u32| records.get(row as usize).is_some_and(|r| !r.tombstone);
        self.index.ensure(&self.vectors, &self.meta.config, &live)
    }

    /// Take in a finished background index job (never waits).
    pub(super) fn poll_index(&mut self) {
        let records = &self.records;
        let live = |row: u32| records.get(row as usize).is_some_and(|r| !r.tombstone);
        self.index.poll(&self.vectors, &live);
    }

    /// Take in a finished background job, and start one when the graph is missing or enough rows wait for it.
    pub(super) fn maintain_index(&mut self) {
        self.poll_index();
        self.index
            .start_background(&self.vectors, &self.meta.config);
    }

    /// Build the vector graph now, or fold into it every row saved since it was built (batch saves leave
    /// that for later; until then those rows are searched exactly).
    pub fn build_index(&mut self) -> Result<()> {
        self.refresh_index()
    }

    /// Add a new record (a save, live or replayed from the log) to every in-memory structure; `tokens` are its
    /// text's terms when already known, with the term ids
    /// [`Bm25Index::known_ids`](crate::bm25::Bm25Index::known_ids) found for them (or none).
    pub(super) fn index_record(&mut self, r: Record, tokens: Option<(Terms, Vec<u32>)>) {
        let row = self.records.len() as u32;
        let tokens = (!r.tombstone)
            .then(|| tokens.unwrap_or_else(|| (self.tokenizer.terms(&r.text), Vec::new())));
        self.push_row(r);
        if let Some(tokens) = tokens {
            self.index_terms(row, tokens);
        }
    }

    /// Add a new record to the row tables and its vector to the vector table, leaving its text to
    /// [`Self::index_terms`].
    pub(super) fn push_row(&mut self, r: Record) {
        self.vectors.push(r.embedding.as_deref());
        let key = (!r.tombstone).then(|| record_dedup_key(&r));
        self.push_record(r, key);
    }

    /// Add row `row`'s terms (with the ids the keyword index knew for them) to the keyword index.
    pub(super) fn index_terms(&mut self, row: u32, tokens: (Terms, Vec<u32>)) {
        index_terms(&mut self.bm25, &mut self.pending, row, tokens);
    }
}

/// [`Store::index_terms`] on the two parts of a store it changes (the keyword index, and the row's term ids
/// for the next checkpoint), for code that holds other parts of the store at the same time.
pub(super) fn index_terms(
    bm25: &mut Bm25Index,
    pending: &mut Pending,
    row: u32,
    (terms, known): (Terms, Vec<u32>),
) {
    let ids = bm25.add_known(row, terms.iter(), known);
    pending.row_terms.insert(row, ids);
}
