//! Incremental BM25 keyword index over dense document numbers (the store's row numbers).

use crate::postings::Postings;
use crate::tokenize::Terms;

/// BM25 parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

/// The token count of a document the index does not hold.
const ABSENT: u32 = u32::MAX;

/// What [`Bm25Index::known_ids`] gives a term the vocabulary does not have yet.
pub const UNKNOWN_TERM: u32 = u32::MAX;

/// An inverted index kept up to date document by document; never rebuilt per query.
#[derive(Clone, Debug, Default)]
pub struct Bm25Index {
    params: Bm25Params,
    vocab: crate::FastMap<String, u32>,
    /// Terms by id (ids are assigned in order of first appearance and never reused).
    terms: Vec<String>,
    /// Per term: its documents, ascending, with the term's frequency in each.
    postings: Vec<Postings>,
    /// Per term: number of live documents containing it.
    doc_freq: Vec<u32>,
    /// Per document: token count, [`ABSENT`] when the document is absent or removed.
    doc_len: Vec<u32>,
    live_docs: u32,
    total_len: u64,
}

impl Bm25Index {
    /// An empty index.
    pub fn new(params: Bm25Params) -> Self {
        Bm25Index {
            params,
            ..Default::default()
        }
    }

    /// Reads every cache line of the postings and document lengths once; returns a checksum.
    pub fn touch(&self) -> u64 {
        let mut sum: u64 = self.doc_len.iter().step_by(8).map(|&l| u64::from(l)).sum();
        for p in &self.postings {
            sum = sum.wrapping_add(p.touch());
        }
        sum
    }

    /// Approximate bytes of the postings and document lengths.
    pub fn memory_bytes(&self) -> usize {
        self.postings
            .iter()
            .map(|p| p.memory_bytes() + std::mem::size_of::<Postings>())
            .sum::<usize>()
            + self.doc_len.len() * 4
    }

    /// Number of live documents.
    pub fn len(&self) -> usize {
        self.live_docs as usize
    }

    /// True when no live document is indexed.
    pub fn is_empty(&self) -> bool {
        self.live_docs == 0
    }

    /// Number of distinct terms seen.
    pub fn vocabulary_size(&self) -> usize {
        self.vocab.len()
    }

    /// Terms by id.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Index document `doc` with its tokens (a live document must be removed first; adding it again is a
    /// no-op). Returns the document's term ids, one per token, ascending — what [`Self::add_ids`] takes.
    pub fn add<'a, T: AsRef<str> + ?Sized + 'a>(
        &mut self,
        doc: u32,
        tokens: impl IntoIterator<Item = &'a T>,
    ) -> Vec<u32> {
        self.add_known(doc, tokens.into_iter().map(AsRef::as_ref), Vec::new())
    }

    /// The id of `term`, added to the vocabulary when new.
    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.vocab.get(term) {
            return id;
        }
        let id = self.terms.len() as u32;
        self.vocab.insert(term.to_string(), id);
        self.terms.push(term.to_string());
        self.postings.push(Postings::default());
        self.doc_freq.push(0);
        id
    }

    /// The ids the vocabulary already has for `tokens`, in token order, [`UNKNOWN_TERM`] for new terms. It
    /// only reads the index, so a batch's documents can be looked up on many threads before
    /// [`Self::add_known`] indexes them one by one.
    pub fn known_ids<'a>(&self, tokens: impl IntoIterator<Item = &'a str>) -> Vec<u32> {
        tokens
            .into_iter()
            .map(|t| self.vocab.get(t).copied().unwrap_or(UNKNOWN_TERM))
            .collect()
    }

    /// Give ids to the new terms of a batch of documents looked up with [`Self::known_ids`] (`(terms, ids)`
    /// pairs): each new term is added once, in order of first appearance (the ids [`Self::add_known`] would
    /// give them one document at a time), and the documents' unknown ids are filled in on every core. Worth it
    /// when a batch brings many new terms, as a fresh store's first batch does; returns how many were added.
    pub fn add_new_terms(&mut self, docs: &mut [(Terms, Vec<u32>)]) -> usize {
        use rayon::prelude::*;
        type Firsts<'a> = crate::FastMap<&'a str, u64>;
        fn keep_first<'a>(mut a: Firsts<'a>, b: Firsts<'a>) -> Firsts<'a> {
            for (t, at) in b {
                a.entry(t).and_modify(|x| *x = (*x).min(at)).or_insert(at);
            }
            a
        }
        let added = {
            let firsts: Firsts<'_> = docs
                .par_iter()
                .enumerate()
                .fold(Firsts::default, |mut m, (d, (terms, ids))| {
                    for (pos, (t, &id)) in terms.iter().zip(ids).enumerate() {
                        if id == UNKNOWN_TERM {
                            m.entry(t).or_insert(((d as u64) << 32) | pos as u64);
                        }
                    }
                    m
                })
                .reduce(Firsts::default, keep_first);
            let mut order: Vec<(&str, u64)> = firsts.into_iter().collect();
            order.sort_unstable_by_key(|&(_, at)| at);
            let before = self.terms.len();
            for (t, _) in order {
                self.intern(t);
            }
            self.terms.len() - before
        };
        let vocab = &self.vocab;
        docs.par_iter_mut().for_each(|(terms, ids)| {
            for (t, id) in terms.iter().zip(ids.iter_mut()) {
                if *id == UNKNOWN_TERM {
                    *id = vocab.get(t).copied().unwrap_or(UNKNOWN_TERM);
                }
            }
        });
        added
    }

    /// [`Self::add`] for tokens whose ids [`Self::known_ids`] looked up earlier on this index (ids are never
    /// reused, so they still hold): only the unknown ones are looked up, and added, now.
    pub fn add_known<'a>(
        &mut self,
        doc: u32,
        tokens: impl IntoIterator<Item = &'a str>,
        mut ids: Vec<u32>,
    ) -> Vec<u32> {
        let mut n = 0;
        for t in tokens {
            match ids.get_mut(n) {
                Some(id) if *id != UNKNOWN_TERM && (*id as usize) < self.terms.len() => {}
                Some(id) => *id = self.intern(t),
                None => {
                    let id = self.intern(t);
                    ids.push(id);
                }
            }
            n += 1;
        }
        // Ids past the last token belong to nothing.
        ids.truncate(n);
        ids.sort_unstable();
        self.add_ids(doc, &ids);
        ids
    }

    /// Index document `doc` from its term ids (ascending, one per token), as persisted in the file. Ids must
    /// be below [`Self::vocabulary_size`]; returns false (and changes nothing) when they are not ascending or
    /// out of range.
    pub fn add_ids(&mut self, doc: u32, sorted_ids: &[u32]) -> bool {
        let in_range = sorted_ids
            .last()
            .is_none_or(|&t| (t as usize) < self.postings.len());
        if !in_range || !sorted_ids.is_sorted() {
            return false;
        }
        let d = doc as usize;
        if self.doc_len.len() <= d {
            self.doc_len.resize(d + 1, ABSENT);
        }
        if self.doc_len[d] != ABSENT {
            return true;
        }
        let mut i = 0;
        while i < sorted_ids.len() {
            let term = sorted_ids[i];
            let mut j = i + 1;
            while j < sorted_ids.len() && sorted_ids[j] == term {
                j += 1;
            }
            let count = (j - i) as u32;
            i = j;
            // Documents normally arrive in ascending order; the list stays sorted otherwise.
            self.postings[term as usize].add(doc, count);
            self.doc_freq[term as usize] += 1;
        }
        // (A text of four billion tokens cannot be stored; the bound only keeps the marker free.)
        self.doc_len[d] = sorted_ids.len().min(ABSENT as usize - 1) as u32;
        self.live_docs += 1;
        self.total_len += sorted_ids.len() as u64;
        true
    }

    /// An empty index over a persisted vocabulary (documents are then added with [`Self::add_ids`]).
    pub fn with_terms(params: Bm25Params, terms: Vec<String>) -> Self {
        let n = terms.len();
        Bm25Index {
            params,
            vocab: terms
                .iter()
                .enumerate()
                .map(|(i, t)| (t.clone(), i as u32))
                .collect(),
            terms,
            postings: vec![Postings::default(); n],
            doc_freq: vec![0; n],
            ..Default::default()
        }
    }

    /// An index over a persisted vocabulary built from every document's term ids at once, on every core.
    /// `ids_of(doc, buf)` fills `buf` with document `doc`'s ids (ascending, one per token) and says whether
    /// the document is live (`false`: left out, `buf` unused), for documents `0..docs`; `None` from it, ids
    /// out of order or past the vocabulary make the whole build `None`. The result equals adding the live
    /// documents one by one with [`Self::add_ids`]. The document frequencies are counted first, in parallel
    /// over documents; then the terms are cut into ranges of about equal postings and each range's lists
    /// are filled on its own thread, every thread reading all the documents.
    pub fn from_doc_ids<F>(
        params: Bm25Params,
        terms: Vec<String>,
        docs: usize,
        ids_of: F,
    ) -> Option<Self>
    where
        F: Fn(usize, &mut Vec<u32>) -> Option<bool> + Sync,
    {
        use rayon::prelude::*;
        /// Documents a task of the counting pass takes at least.
        const DOCS_PER_TASK: usize = 4096;
        u32::try_from(docs).ok()?;
        let n_terms = terms.len();
        let mut doc_len = vec![ABSENT; docs];
        // One count per term for each task: no more tasks than threads, so a large vocabulary costs at
        // most a copy of its counts per thread.
        let per_thread = docs
            .div_ceil(DOCS_PER_TASK)
            .div_ceil(rayon::current_num_threads().max(1))
            .max(1);
        let doc_freq: Vec<u32> = doc_len
            .par_chunks_mut(DOCS_PER_TASK)
            .with_min_len(per_thread)
            .enumerate()
            .try_fold(
                || (vec![0u32; n_terms], Vec::new()),
                |(mut df, mut buf), (chunk, lens)| {
                    for (i, len) in lens.iter_mut().enumerate() {
                        if !ids_of(chunk * DOCS_PER_TASK + i, &mut buf)? {
                            continue;
                        }
                        if !buf.is_sorted() || buf.last().is_some_and(|&t| t as usize >= n_terms) {
                            return None;
                        }
                        for run in buf.chunk_by(|a, b| a == b) {
                            df[run[0] as usize] += 1;
                        }
                        *len = buf.len().min(ABSENT as usize - 1) as u32;
                    }
                    Some((df, buf))
                },
            )
            .map(|partial| partial.map(|(df, _)| df))
            .try_reduce(
                || vec![0u32; n_terms],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    Some(a)
                },
            )?;
        let mut postings: Vec<Postings> = doc_freq
            .iter()
            .map(|&c| {
                let mut p = Postings::default();
                p.reserve_exact(c as usize);
                p
            })
            .collect();
        let ranges = balanced_ranges(&doc_freq, rayon::current_num_threads());
        let mut parts = Vec::with_capacity(ranges.len());
        let mut rest = postings.as_mut_slice();
        for r in &ranges {
            let (part, tail) = rest.split_at_mut(r.len());
            parts.push((r.start, part));
            rest = tail;
        }
        let lens = &doc_len;
        parts.into_par_iter().try_for_each(|(first, lists)| {
            let end = first + lists.len();
            let mut buf = Vec::new();
            for (doc, &len) in lens.iter().enumerate() {
                if len == ABSENT {
                    continue;
                }
                ids_of(doc, &mut buf)?;
                let from = buf.partition_point(|&t| (t as usize) < first);
                let mine = buf[from..].partition_point(|&t| (t as usize) < end);
                for run in buf[from..from + mine].chunk_by(|a, b| a == b) {
                    lists[run[0] as usize - first].add(doc as u32, run.len() as u32);
                }
            }
            Some(())
        })?;
        let (mut live_docs, mut total_len) = (0u32, 0u64);
        for &l in doc_len.iter().filter(|&&l| l != ABSENT) {
            live_docs += 1;
            total_len += u64::from(l);
        }
        // Documents after the last live one are not held, as adding them one by one leaves them.
        let held = doc_len
            .iter()
            .rposition(|&l| l != ABSENT)
            .map_or(0, |d| d + 1);
        doc_len.truncate(held);
        let mut ix = Bm25Index::with_terms(params, terms);
        ix.postings = postings;
        ix.doc_freq = doc_freq;
        ix.doc_len = doc_len;
        ix.live_docs = live_docs;
        ix.total_len = total_len;
        Some(ix)
    }

    /// Every live document's term ids (ascending, one per token), for documents `0..docs`; absent and
    /// removed documents get an empty list. The inverse of adding them with [`Self::add_ids`].
    pub fn doc_terms(&self, docs: usize) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = (0..docs)
            .map(|d| {
                let len = self.len_of(d).unwrap_or(0);
                Vec::with_capacity(len as usize)
            })
            .collect();
        for (term, list) in self.postings.iter().enumerate() {
            for (doc, tf) in list.iter() {
                if let Some(v) = out.get_mut(doc as usize) {
                    v.extend(std::iter::repeat_n(term as u32, tf as usize));
                }
            }
        }
        out
    }

    /// Remove document `doc`, given the same tokens it was added with.
    pub fn remove(&mut self, doc: u32, tokens: &[String]) {
        let d = doc as usize;
        let Some(len) = self.len_of(d) else {
            return;
        };
        let mut seen: Vec<u32> = tokens
            .iter()
            .filter_map(|t| self.vocab.get(t).copied())
            .collect();
        seen.sort_unstable();
        seen.dedup();
        for term in seen {
            if self.postings[term as usize].remove(doc) {
                let df = &mut self.doc_freq[term as usize];
                *df = df.saturating_sub(1);
            }
        }
        self.doc_len[d] = ABSENT;
        self.live_docs -= 1;
        self.total_len -= len as u64;
    }

    /// Token count of document `d`, `None` when it is absent or removed.
    #[inline]
    fn len_of(&self, d: usize) -> Option<u32> {
        self.doc_len.get(d).copied().filter(|&l| l != ABSENT)
    }

    /// Inverse document frequency of a term id.
    fn idf(&self, term: u32) -> f32 {
        let n = self.live_docs as f32;
        let df = self.doc_freq[term as usize] as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Scores of every live document matching any query token, best first, at most `k`, restricted to documents
    /// for which `allow` is true.
    pub fn search(
        &self,
        query_tokens: &[String],
        k: usize,
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        if k == 0 || self.live_docs == 0 {
            return Vec::new();
        }
        let mut terms: Vec<u32> = query_tokens
            .iter()
            .filter_map(|t| self.vocab.get(t).copied())
            .collect();
        terms.sort_unstable();
        terms.dedup();
        if terms.is_empty() {
            return Vec::new();
        }
        let avg_len = (self.total_len as f32 / self.live_docs as f32).max(1.0);
        let Bm25Params { k1, b } = self.params;
        // Dense accumulator over documents plus the list of those touched: no hashing per posting. The
        // accumulator is kept per thread and only its touched slots are cleared, so a query costs what it
        // matches, not the corpus size.
        ACCUMULATOR.with(|cell| {
            let mut acc = cell.borrow_mut();
            if acc.len() < self.doc_len.len() {
                acc.resize(self.doc_len.len(), 0.0);
            }
            let mut touched: Vec<u32> = Vec::new();
            let len_scale = k1 * b / avg_len;
            let len_base = k1 * (1.0 - b);
            for &term in &terms {
                let idf = self.idf(term);
                let lift = idf * (k1 + 1.0);
                for (doc, tf) in self.postings[term as usize].iter() {
                    let Some(len) = self.len_of(doc as usize) else {
                        continue;
                    };
                    let tf = tf as f32;
                    let norm = len_base + len_scale * len as f32;
                    let slot = &mut acc[doc as usize];
                    if *slot == 0.0 {
                        touched.push(doc);
                    }
                    *slot += lift * tf / (tf + norm);
                }
            }
            let mut scored: Vec<(u32, f32)> = touched
                .into_iter()
                .map(|d| {
                    let slot = &mut acc[d as usize];
                    let score = *slot;
                    *slot = 0.0;
                    (d, score)
                })
                .collect();
            top_allowed(&mut scored, k, allow)
        })
    }
}

thread_local! {
    /// Per-thread score accumulator of [`Bm25Index::search`] (all zeros between queries).
    static ACCUMULATOR: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The best `k` of `scored` that `allow` accepts, best first (ties by document). The filter is consulted
/// for the best candidates first, widening the window only when too few of them pass, so a permissive
/// filter is asked about a few rows rather than every matching one.
fn top_allowed(
    scored: &mut [(u32, f32)],
    k: usize,
    allow: &dyn Fn(u32) -> bool,
) -> Vec<(u32, f32)> {
    let cmp = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut window = (2 * k).max(16);
    loop {
        if window >= scored.len() {
            let mut out: Vec<(u32, f32)> =
                scored.iter().copied().filter(|&(d, _)| allow(d)).collect();
            out.sort_by(cmp);
            out.truncate(k);
            return out;
        }
        scored.select_nth_unstable_by(window - 1, cmp);
        let head = &mut scored[..window];
        head.sort_by(cmp);
        let out: Vec<(u32, f32)> = head
            .iter()
            .copied()
            .filter(|&(d, _)| allow(d))
            .take(k)
            .collect();
        if out.len() == k {
            return out;
        }
        window = window.saturating_mul(8);
    }
}

/// Cuts the terms `0..counts.len()` into at most `parts` consecutive ranges holding about equal sums of
/// `counts` (one range when there is too little to share out).
fn balanced_ranges(counts: &[u32], parts: usize) -> Vec<std::ops::Range<usize>> {
    /// Below this many postings in all, one thread fills every list.
    const SHARED_FROM: u64 = 1 << 16;
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let parts = if total < SHARED_FROM { 1 } else { parts.max(1) };
    let mut out = Vec::with_capacity(parts);
    let (mut start, mut acc) = (0, 0u64);
    for (t, &c) in counts.iter().enumerate() {
        let c = u64::from(c);
        // Sums scaled by `parts`, so that the k-th cut aims at `total * k`.
        let (goal, before, after) = (
            total * (out.len() as u64 + 1),
            acc * parts as u64,
            (acc + c) * parts as u64,
        );
        acc += c;
        if out.len() + 1 < parts && after >= goal {
            // Cut before or after term `t`, whichever lands nearer the goal.
            let cut = if t > start && goal - before < after - goal {
                t
            } else {
                t + 1
            };
            out.push(start..cut);
            start = cut;
        }
    }
    out.push(start..counts.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn index(docs: &[&str]) -> Bm25Index {
        let mut ix = Bm25Index::new(Bm25Params::default());
        for (i, d) in docs.iter().enumerate() {
            ix.add(i as u32, &toks(d));
        }
        ix
    }

    /// Documents of random sorted ids (frequent low ids, now and then one repeated 300 times), and whether
    /// each is live (some dead ones in the middle and at the end).
    fn random_docs(docs: usize, n_terms: u32) -> Vec<(Vec<u32>, bool)> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..docs)
            .map(|d| {
                let len = next() % 24;
                let mut ids: Vec<u32> = (0..len)
                    .map(|_| {
                        let u = next() % 1000;
                        (u * u * u64::from(n_terms) / 1_000_000) as u32
                    })
                    .collect();
                if d % 997 == 5 {
                    ids.extend(std::iter::repeat_n(7, 300));
                }
                ids.sort_unstable();
                (ids, d % 7 != 3 && d + 5 < docs)
            })
            .collect()
    }

    #[test]
    fn built_at_once_equals_built_one_by_one() {
        let n_terms = 3000u32;
        let terms: Vec<String> = (0..n_terms).map(|t| format!("t{t}")).collect();
        // Small enough for one range, and large enough to be cut in three.
        for docs in [500usize, 20_000] {
            let rows = random_docs(docs, n_terms);
            let mut one_by_one = Bm25Index::with_terms(Bm25Params::default(), terms.clone());
            for (d, (ids, live)) in rows.iter().enumerate() {
                if *live {
                    assert!(one_by_one.add_ids(d as u32, ids));
                }
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap();
            let at_once = pool
                .install(|| {
                    Bm25Index::from_doc_ids(Bm25Params::default(), terms.clone(), docs, |d, buf| {
                        buf.clear();
                        buf.extend_from_slice(&rows[d].0);
                        Some(rows[d].1)
                    })
                })
                .unwrap();
            assert_eq!(at_once.postings, one_by_one.postings);
            assert_eq!(at_once.doc_freq, one_by_one.doc_freq);
            assert_eq!(at_once.doc_len, one_by_one.doc_len);
            assert_eq!(at_once.live_docs, one_by_one.live_docs);
            assert_eq!(at_once.total_len, one_by_one.total_len);
            assert_eq!(at_once.terms, one_by_one.terms);
            let q = toks("t0 t7 t1500 t2999");
            assert_eq!(
                at_once.search(&q, 20, &|_| true),
                one_by_one.search(&q, 20, &|_| true)
            );
        }
        assert_eq!(balanced_ranges(&[5, 5, 5], 4), vec![0..3]);
        let ranges = balanced_ranges(&[40_000, 1, 1, 40_000, 1, 1, 1], 2);
        assert_eq!(ranges, vec![0..3, 3..7]);
    }

    #[test]
    fn built_at_once_refuses_bad_ids() {
        let terms: Vec<String> = (0..10).map(|t| format!("t{t}")).collect();
        let build = |ids: Vec<u32>| {
            Bm25Index::from_doc_ids(Bm25Params::default(), terms.clone(), 3, |d, buf| {
                buf.clear();
                if d == 1 {
                    buf.extend_from_slice(&ids);
                }
                Some(true)
            })
        };
        assert!(build(vec![1, 2, 2, 9]).is_some());
        assert!(build(vec![3, 2]).is_none(), "out of order");
        assert!(build(vec![2, 10]).is_none(), "past the vocabulary");
        let failing = Bm25Index::from_doc_ids(Bm25Params::default(), terms.clone(), 3, |d, _| {
            (d != 2).then_some(true)
        });
        assert!(failing.is_none());
    }

    #[test]
    fn ids_looked_up_ahead_index_like_add() {
        let docs = ["cat sat mat", "new cat words", "mat words cat cat", "zebra"];
        let plain = index(&docs);
        let mut ahead = index(&docs[..1]);
        // All three looked up before any is added: later documents' new terms are unknown at lookup.
        let looked: Vec<Vec<u32>> = docs[1..]
            .iter()
            .map(|d| ahead.known_ids(d.split_whitespace()))
            .collect();
        assert!(looked[0].contains(&UNKNOWN_TERM));
        for (i, (d, ids)) in docs[1..].iter().zip(looked).enumerate() {
            let got = ahead.add_known(i as u32 + 1, d.split_whitespace(), ids);
            assert_eq!(got.len(), d.split_whitespace().count());
        }
        assert_eq!(ahead.terms(), plain.terms());
        for q in ["cat", "words", "zebra mat"] {
            assert_eq!(
                ahead.search(&toks(q), 10, &|_| true),
                plain.search(&toks(q), 10, &|_| true)
            );
        }
        // Too few or too many ids: every token is still indexed once.
        let mut ix = index(&["a b"]);
        let got = ix.add_known(1, "a b c".split_whitespace(), vec![0]);
        assert_eq!(got, vec![0, 1, 2]);
        let got = ix.add_known(2, "b".split_whitespace(), vec![1, 0, 7]);
        assert_eq!(got, vec![1]);
    }

    #[test]
    fn new_terms_added_in_one_pass_get_the_ids_of_one_by_one() {
        use crate::tokenize::{Tokenizer, TokenizerConfig};
        let tk = Tokenizer::new(TokenizerConfig::default());
        let texts: Vec<String> = (0..300)
            .map(|i| {
                format!(
                    "note {i} about topic{} and word{} again {}",
                    i % 7,
                    i % 13,
                    i % 5
                )
            })
            .collect();
        let mut plain = index(&["about again"]);
        let mut batch = plain.clone();
        let mut docs: Vec<(Terms, Vec<u32>)> = texts
            .iter()
            .map(|t| {
                let terms = tk.terms(t);
                let ids = batch.known_ids(terms.iter());
                (terms, ids)
            })
            .collect();
        let added = batch.add_new_terms(&mut docs);
        assert!(added > 300, "{added}");
        assert!(docs.iter().all(|(_, ids)| !ids.contains(&UNKNOWN_TERM)));
        for (i, (t, (terms, ids))) in texts.iter().zip(docs).enumerate() {
            let a = plain.add(i as u32 + 1, tk.terms(t).iter());
            let b = batch.add_known(i as u32 + 1, terms.iter(), ids);
            assert_eq!(a, b, "{t}");
        }
        assert_eq!(plain.terms(), batch.terms());
    }

    #[test]
    fn ranks_matching_documents() {
        let ix = index(&["cat sat mat", "dog barked loud", "cat cat cat purr"]);
        let r = ix.search(&toks("cat"), 10, &|_| true);
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 0]);
        assert!(r[0].1 > r[1].1);
        assert!(ix.search(&toks("zebra"), 10, &|_| true).is_empty());
    }

    #[test]
    fn rare_terms_weigh_more() {
        let ix = index(&["apple banana", "apple cherry", "apple durian"]);
        let r = ix.search(&toks("apple durian"), 3, &|_| true);
        assert_eq!(r[0].0, 2);
    }

    #[test]
    fn remove_and_filter() {
        let mut ix = index(&["red fox", "red car", "blue car"]);
        ix.remove(0, &toks("red fox"));
        assert_eq!(ix.len(), 2);
        let r = ix.search(&toks("red"), 10, &|_| true);
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1]);
        let r = ix.search(&toks("car"), 10, &|d| d != 1);
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn top_k_truncates() {
        let docs: Vec<String> = (0..50).map(|i| format!("word filler{i}")).collect();
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let ix = index(&refs);
        assert_eq!(ix.search(&toks("word"), 5, &|_| true).len(), 5);
        assert!(ix.search(&toks("word"), 0, &|_| true).is_empty());
    }

    #[test]
    fn re_adding_a_removed_document_forgets_its_old_terms() {
        let mut ix = index(&["old words here"]);
        ix.remove(0, &toks("old words here"));
        ix.add(0, &toks("new text"));
        assert!(ix.search(&toks("old"), 5, &|_| true).is_empty());
        assert_eq!(ix.search(&toks("new"), 5, &|_| true).len(), 1);
    }

    #[test]
    fn selective_filters_still_get_the_exact_top_k() {
        let docs: Vec<String> = (0..2000)
            .map(|i| format!("common {} word{}", "extra ".repeat(i % 7), i % 13))
            .collect();
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let ix = index(&refs);
        for modulus in [1u32, 3, 97, 1999, 5000] {
            let allow = |d: u32| d.is_multiple_of(modulus);
            let got = ix.search(&toks("common word3"), 5, &allow);
            let mut all = ix.search(&toks("common word3"), 5000, &|_| true);
            all.retain(|&(d, _)| allow(d));
            all.truncate(5);
            assert_eq!(got, all, "modulus {modulus}");
        }
    }

    #[test]
    fn doc_terms_rebuild_an_identical_index() {
        let mut ix = index(&["cat sat on the mat", "dog dog barked", "cat and dog"]);
        ix.remove(1, &toks("dog dog barked"));
        let terms = ix.doc_terms(3);
        assert!(terms[1].is_empty());
        let mut again = Bm25Index::with_terms(Bm25Params::default(), ix.terms().to_vec());
        for (d, t) in terms.iter().enumerate() {
            if d != 1 {
                assert!(again.add_ids(d as u32, t));
            }
        }
        for q in ["cat", "dog", "mat and"] {
            assert_eq!(
                again.search(&toks(q), 10, &|_| true),
                ix.search(&toks(q), 10, &|_| true)
            );
        }
        assert!(!again.add_ids(5, &[999]));
        assert!(!again.add_ids(5, &[2, 1]));
        assert_eq!(again.len(), 2);
    }

    #[test]
    fn frequencies_past_a_byte_score_exactly() {
        // A term repeated 300 times (its frequency kept on the side of the one-byte column) and 255 times
        // (the marker value itself) against the BM25 formula computed here.
        let long = |n: usize, w: &str| vec![w; n].join(" ");
        let docs = [long(300, "tea"), long(255, "tea"), "tea cake".to_string()];
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let mut ix = index(&refs);
        let (k1, b) = (1.2f32, 0.75f32);
        let lens = [300.0f32, 255.0, 2.0];
        let avg = lens.iter().sum::<f32>() / 3.0;
        let idf = (1.0f32 + (3.0 - 3.0 + 0.5) / (3.0 + 0.5)).ln();
        let want = |d: usize, tf: f32| {
            let norm = k1 * (1.0 - b) + k1 * b / avg * lens[d];
            idf * (k1 + 1.0) * tf / (tf + norm)
        };
        let hits = ix.search(&toks("tea"), 3, &|_| true);
        let score = |d: u32| hits.iter().find(|h| h.0 == d).map(|h| h.1);
        assert_eq!(score(0), Some(want(0, 300.0)));
        assert_eq!(score(1), Some(want(1, 255.0)));
        assert_eq!(score(2), Some(want(2, 1.0)));
        // Removal drops the side entry with the document.
        ix.remove(0, &toks(&docs[0]));
        assert_eq!(ix.postings[0].docs(), &[1, 2]);
        assert_eq!(ix.doc_terms(3)[1].len(), 255);
    }

    #[test]
    fn many_removals_shrink_postings() {
        let mut ix = Bm25Index::new(Bm25Params::default());
        for i in 0..6000u32 {
            ix.add(i, &toks("shared term"));
        }
        for i in 0..5990u32 {
            ix.remove(i, &toks("shared term"));
        }
        let r = ix.search(&toks("shared"), 100, &|_| true);
        assert_eq!(r.len(), 10);
        assert_eq!(ix.postings[0].docs().len(), 10);
        assert!(r.iter().all(|&(d, _)| d >= 5990));
    }
}
