//! Retrieval through the real memory store: documents saved into a fresh store in a temporary folder, queries
//! answered by `Store::search`, results mapped back to the benchmark's document keys.

use std::collections::HashMap;

use clawhdf5_memory::search::{fuse_calibrated, Candidates, KEYWORD_HALF};
use clawhdf5_memory::tokenize::{Tokenizer, TokenizerConfig};
use clawhdf5_memory::{
    Durability, Filter, NewMemory, SearchMode, SearchQuery, Store, StoreConfig, StoreOptions,
};
use serde::Serialize;

use crate::dates::{asks_when, day_window, month_window};
use crate::error::{io_err, EvalError, Result};

/// The store's fixed keyword calibration constant (the BM25 score worth 0.5), for reports.
pub const KEYWORD_HALF_DEFAULT: f32 = KEYWORD_HALF;

/// A retrieval mode of the harness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Mode {
    /// BM25 over unstemmed terms (stop words dropped).
    Bm25,
    /// BM25 over Snowball-stemmed terms (the store's default tokenizer).
    Bm25Stem,
    /// MiniLM cosine similarity only.
    Vector,
    /// Weighted sum of min-max-normalised BM25 (stemmed) and cosine scores.
    Hybrid,
    /// Reciprocal rank fusion of BM25 (stemmed) and cosine rankings.
    Rrf,
    /// Hybrid, then re-ranked with neighbouring turns, session evidence and date hints (no cross-encoder).
    HybridRerank,
}

impl Mode {
    /// Every mode, in report order.
    pub const ALL: [Mode; 6] = [
        Mode::Bm25,
        Mode::Bm25Stem,
        Mode::Vector,
        Mode::Hybrid,
        Mode::Rrf,
        Mode::HybridRerank,
    ];

    /// Parse a command-line name.
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "bm25" => Mode::Bm25,
            "bm25-stem" => Mode::Bm25Stem,
            "vector" => Mode::Vector,
            "hybrid" => Mode::Hybrid,
            "rrf" => Mode::Rrf,
            "hybrid-rerank" => Mode::HybridRerank,
            _ => return None,
        })
    }

    /// Command-line name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Bm25 => "bm25",
            Mode::Bm25Stem => "bm25-stem",
            Mode::Vector => "vector",
            Mode::Hybrid => "hybrid",
            Mode::Rrf => "rrf",
            Mode::HybridRerank => "hybrid-rerank",
        }
    }

    /// True when the mode needs document and query embeddings.
    pub fn needs_embeddings(self) -> bool {
        !matches!(self, Mode::Bm25 | Mode::Bm25Stem)
    }

    /// Whether the store's tokenizer stems for this mode.
    pub fn stemming(self) -> bool {
        !matches!(self, Mode::Bm25)
    }
}

/// One retrievable unit (a turn or a session) of a benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    /// The benchmark's id for it (`D1:3`, `answer_4be1b6b4_2_3`, ...).
    pub key: String,
    /// The session it belongs to (for neighbours and session evidence).
    pub session: String,
    /// Text indexed for keyword search.
    pub text: String,
    /// Text embedded for vector search (may differ from `text`).
    pub embed_text: String,
    /// When it happened (ms since epoch).
    pub event_time: Option<i64>,
    /// Who said it, when the benchmark names its speakers (LoCoMo).
    pub speaker: Option<String>,
    /// Whether its own text (without context) dates what it says ([`crate::dates::mentions_time`]).
    pub dated: bool,
    /// When what it says happened, when its own text says so relative to `event_time` ("yesterday", "last
    /// month"; [`crate::dates::told_window`]): [start, end) in ms.
    pub told: Option<(i64, i64)>,
}

/// A question put to an index.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// The question.
    pub text: String,
    /// Its embedding, for modes that need one.
    pub embedding: Option<Vec<f32>>,
    /// Only documents that happened before this time (ms) are eligible.
    pub before: Option<i64>,
}

/// Re-ranking weights of [`Mode::HybridRerank`]; defaults chosen by the LoCoMo and MemoryArena sweeps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rerank {
    /// Weight of the best neighbouring turn's score (same session, one turn away).
    pub neighbour: f32,
    /// Weight of the best score among other candidates of the same session.
    pub session: f32,
    /// Bonus for documents inside a month the question names ("in March 2024"): said in it, or telling of
    /// something that happened in it ("last week", said on 2 April).
    pub month: f32,
    /// Bonus for documents of a day the question names ("on 9 May, 2023"): said on it, or telling of it
    /// ("yesterday", said on 10 May).
    pub day: f32,
    /// Bonus for recency when the question asks about the present: the newest candidate gets this times its
    /// retrieval score relative to the best candidate's.
    pub recency: f32,
    /// Bonus for documents spoken by the speaker the question is about: the one it names ("What did Caroline
    /// paint?"), or the first-named of two it does not join ("What did Jon say about Gina's store?";
    /// [`subject_of_two`]).
    pub speaker: f32,
    /// Bonus for documents that date what they say, when the question asks "when" or "how long".
    pub dated: f32,
    /// How many fused candidates are re-ranked.
    pub depth: usize,
    /// Pseudo-relevance feedback: a second retrieval seeded by the first pass's best turns.
    pub feedback: Feedback,
}

/// Pseudo-relevance feedback of [`Mode::HybridRerank`]: the first pass's best `docs` documents lend the query
/// their most distinctive words (a second keyword search, added with weight `keyword` to the first one's BM25)
/// and their embeddings (Rocchio: the query vector plus `vector` times their mean); the merged candidates are
/// fused and re-ranked again. `docs` 0 turns it off.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Feedback {
    /// First-pass documents the feedback is taken from.
    pub docs: usize,
    /// Expansion words taken from them (highest tf·idf, query words excluded).
    pub terms: usize,
    /// Weight of the expansion words' BM25 score beside the question's own.
    pub keyword: f32,
    /// Weight of the feedback documents' mean embedding added to the query's.
    pub vector: f32,
}

impl Default for Feedback {
    /// Off (`docs` 0); the other fields are the sweep's best LoCoMo session-level setting (3 turns, 10 words
    /// at 0.2: session R_any@5 0.953), used as soon as `docs` is set.
    fn default() -> Self {
        Feedback {
            docs: 0,
            terms: 10,
            keyword: 0.2,
            vector: 0.0,
        }
    }
}

impl Feedback {
    /// No feedback at all.
    pub const OFF: Feedback = Feedback {
        docs: 0,
        terms: 0,
        keyword: 0.0,
        vector: 0.0,
    };

    /// Whether a second pass runs at all.
    pub fn active(&self) -> bool {
        self.docs > 0 && ((self.terms > 0 && self.keyword > 0.0) || self.vector > 0.0)
    }
}

impl Default for Rerank {
    fn default() -> Self {
        // Each from a sweep of `clawhdf5-eval locomo|memory-arena --sweep` (BENCHMARKS.md):
        // neighbour / session: LoCoMo (turn R_any@5 0.799 at 0 / 0, 0.810 at 0.2 / 0.2, best);
        // speaker: LoCoMo (turn R_any@5 0.744 at 0, 0.821 at 0.15, best; 0.5 overshoots);
        // dated: LoCoMo (turn R_any@5 0.798 at 0, 0.804 at 0.1, best; 0.3 overshoots);
        // recency: MemoryArena (knowledge-update Hit@1 0.556 at 0, 1.000 at 1.0), LoCoMo within 0.002;
        // month: LoCoMo (session R_any@5 0.944 at 0, 0.949 at 0.25-1.0; turn R_any@5 0.821 from 0.25);
        // day: LoCoMo, flat (every metric within 0.001 over 0-0.5; turn R_all@5 0.689 at 0, 0.690 at 0.1);
        // feedback: off — on LoCoMo it trades turn level (turn R_any@5 0.792-0.821 against 0.821, R_any@1
        // lower everywhere) for session R_any@5 0.947-0.953 (0.949 off), and on MemoryArena it costs
        // knowledge-update Hit@1 (0.889 against 1.000).
        Rerank {
            neighbour: 0.2,
            session: 0.2,
            month: 0.5,
            day: 0.1,
            recency: 1.0,
            speaker: 0.15,
            dated: 0.1,
            depth: 100,
            feedback: Feedback::default(),
        }
    }
}

/// Settings of an index and of its searches.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Params {
    /// Weight of the vector score in hybrid fusion (the keyword weight is `1 - vector_weight`).
    pub vector_weight: f32,
    /// Re-ranking weights.
    pub rerank: Rerank,
}

impl Default for Params {
    fn default() -> Self {
        // LoCoMo sweep (turn R_any@5): 0.0 -> 0.707, 0.3 -> 0.747, 0.4 -> 0.745, 0.5 -> 0.731, 1.0 -> 0.401.
        Params {
            vector_weight: 0.4,
            rerank: Rerank::default(),
        }
    }
}

/// A ranked document: index into the index's documents and its score.
pub type Ranked = (usize, f32);

/// A store holding one benchmark unit's documents.
pub struct Index {
    store: Store,
    _dir: tempfile::TempDir,
    /// Record id -> documents saved under it (identical texts in one session share a record).
    docs_of: HashMap<u64, Vec<usize>>,
    keys: Vec<String>,
    sessions: Vec<String>,
    times: Vec<Option<i64>>,
    speakers: Vec<Option<String>>,
    dated: Vec<bool>,
    told: Vec<Option<(i64, i64)>>,
    /// Distinct speaker names, lower case.
    speaker_names: Vec<String>,
    /// Unstemmed content words of each document (for feedback terms).
    words: Vec<Vec<String>>,
    /// Documents holding each word.
    doc_freq: HashMap<String, u32>,
    /// Document embeddings, when given (for vector feedback).
    embeddings: Option<Vec<Vec<f32>>>,
    /// The store's tokenizer (for the keyword ceiling of a query).
    tokenizer: Tokenizer,
    /// Records holding each of the store's terms, and the number of records.
    term_records: HashMap<String, u32>,
    records: u32,
    params: Params,
}

impl Index {
    /// Save `docs` (with `embeddings`, one per doc, when given) into a fresh store.
    pub fn build(
        docs: &[Doc],
        embeddings: Option<&[Vec<f32>]>,
        stemming: bool,
        params: Params,
    ) -> Result<Index> {
        if let Some(e) = embeddings {
            if e.len() != docs.len() {
                return Err(EvalError::InvalidInput(format!(
                    "{} embeddings for {} documents",
                    e.len(),
                    docs.len()
                )));
            }
        }
        if !(0.0..=1.0).contains(&params.vector_weight) {
            return Err(EvalError::InvalidInput(format!(
                "vector weight {} is outside [0, 1]",
                params.vector_weight
            )));
        }
        let dir = tempfile::tempdir().map_err(io_err(&std::env::temp_dir()))?;
        let config = StoreConfig {
            tokenizer: TokenizerConfig {
                stemming,
                stop_words: true,
            },
            fusion_vector_weight: params.vector_weight,
            fusion_keyword_weight: 1.0 - params.vector_weight,
            ..StoreConfig::default()
        };
        let opts = StoreOptions {
            durability: Durability::None,
            config: config.clone(),
            ..StoreOptions::default()
        };
        let mut store = Store::open_with(&dir.path().join("eval.h5"), opts)?;
        let mut docs_of: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            let out = store.save(NewMemory {
                text: d.text.clone(),
                session: Some(d.session.clone()),
                event_time: d.event_time,
                embedding: embeddings.map(|e| e[i].clone()),
                ..NewMemory::default()
            })?;
            docs_of.entry(out.id).or_default().push(i);
        }
        let plain = Tokenizer::new(TokenizerConfig {
            stemming: false,
            stop_words: true,
        });
        let words: Vec<Vec<String>> = docs.iter().map(|d| plain.tokens(&d.text)).collect();
        let mut doc_freq: HashMap<String, u32> = HashMap::new();
        for w in &words {
            let mut seen: Vec<&String> = w.iter().collect();
            seen.sort();
            seen.dedup();
            for t in seen {
                *doc_freq.entry(t.clone()).or_default() += 1;
            }
        }
        let tokenizer = Tokenizer::new(config.tokenizer.clone());
        let mut term_records: HashMap<String, u32> = HashMap::new();
        for ds in docs_of.values() {
            let mut toks = tokenizer.tokens(&docs[ds[0]].text);
            toks.sort();
            toks.dedup();
            for t in toks {
                *term_records.entry(t).or_default() += 1;
            }
        }
        Ok(Index {
            records: docs_of.len() as u32,
            tokenizer,
            term_records,
            words,
            doc_freq,
            embeddings: embeddings.map(<[Vec<f32>]>::to_vec),
            store,
            _dir: dir,
            docs_of,
            keys: docs.iter().map(|d| d.key.clone()).collect(),
            sessions: docs.iter().map(|d| d.session.clone()).collect(),
            times: docs.iter().map(|d| d.event_time).collect(),
            speakers: docs.iter().map(|d| d.speaker.clone()).collect(),
            dated: docs.iter().map(|d| d.dated).collect(),
            told: docs.iter().map(|d| d.told).collect(),
            speaker_names: {
                let mut v: Vec<String> = docs
                    .iter()
                    .filter_map(|d| d.speaker.as_ref().map(|s| s.to_lowercase()))
                    .collect();
                v.sort();
                v.dedup();
                v
            },
            params,
        })
    }

    /// Session of document `i`.
    pub fn session(&self, i: usize) -> &str {
        &self.sessions[i]
    }

    /// Key of document `i`.
    pub fn key(&self, i: usize) -> &str {
        &self.keys[i]
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn filter(q: &Query) -> Filter {
        Filter {
            time_to: q.before,
            ..Filter::default()
        }
    }

    /// `Store::search` in `mode`, expanded to documents.
    fn store_search(&self, q: &Query, mode: SearchMode, k: usize) -> Result<Vec<Ranked>> {
        let hits = self.store.search(&SearchQuery {
            text: q.text.clone(),
            k,
            mode,
            filter: Self::filter(q),
            min_score: None,
            embedding: if mode == SearchMode::Keyword {
                None
            } else {
                q.embedding.clone()
            },
        })?;
        Ok(self.expand(hits.into_iter().map(|h| (h.record.id, h.score))))
    }

    /// Scored records, best first, as scored documents (a record may stand for several documents).
    fn expand(&self, scored: impl IntoIterator<Item = (u64, f32)>) -> Vec<Ranked> {
        let mut out = Vec::new();
        for (id, score) in scored {
            for &d in self.docs_of.get(&id).map(Vec::as_slice).unwrap_or(&[]) {
                out.push((d, score));
            }
        }
        out
    }

    /// Rank up to `k` documents for `q` in `mode`.
    pub fn rank(&self, q: &Query, mode: Mode, k: usize) -> Result<Vec<Ranked>> {
        if mode.needs_embeddings() && q.embedding.is_none() {
            return Err(EvalError::InvalidInput(format!(
                "mode {} needs a query embedding",
                mode.as_str()
            )));
        }
        match mode {
            Mode::Bm25 | Mode::Bm25Stem => self.store_search(q, SearchMode::Keyword, k),
            Mode::Vector => self.store_search(q, SearchMode::Vector, k),
            Mode::Hybrid => self.store_search(q, SearchMode::Hybrid, k),
            Mode::Rrf => self.store_search(q, SearchMode::Rrf, k),
            Mode::HybridRerank => {
                let depth = self.params.rerank.depth.max(k);
                let fused = self.store_search(q, SearchMode::Hybrid, depth)?;
                let mut out = self.rerank_with_feedback(q, &fused, &self.params.rerank)?;
                out.truncate(k);
                Ok(out)
            }
        }
    }

    /// [`rerank`](Self::rerank), then, when `p.feedback` is active, a second retrieval seeded by the
    /// re-ranked first pass (see [`Feedback`]), re-ranked the same way.
    pub fn rerank_with_feedback(
        &self,
        q: &Query,
        fused: &[Ranked],
        p: &Rerank,
    ) -> Result<Vec<Ranked>> {
        let first = self.rerank(q, fused, p);
        if !p.feedback.active() {
            return Ok(first);
        }
        let second = self.feedback_fused(q, &first, &p.feedback, p.depth.max(fused.len()))?;
        Ok(self.rerank(q, &second, p))
    }

    /// Raw stage scores of one store search: (record row, BM25 or cosine).
    fn raw_stage(
        &self,
        text: &str,
        embedding: Option<&[f32]>,
        mode: SearchMode,
        pool: usize,
        q: &Query,
    ) -> Result<Vec<(u32, f32)>> {
        let hits = self.store.search(&SearchQuery {
            text: text.to_string(),
            k: pool,
            mode,
            filter: Self::filter(q),
            min_score: None,
            embedding: embedding.map(<[f32]>::to_vec),
        })?;
        stage_scores(hits, mode)
    }

    /// The `n` most distinctive words (summed tf/len · idf) of documents `seeds`, leaving out the query's own.
    pub fn feedback_terms(&self, q: &Query, seeds: &[usize], n: usize) -> Vec<String> {
        let plain = Tokenizer::new(TokenizerConfig {
            stemming: false,
            stop_words: true,
        });
        let own: Vec<String> = plain.tokens(&q.text);
        let total = self.keys.len().max(1) as f32;
        let mut weight: HashMap<&str, f32> = HashMap::new();
        for &d in seeds {
            let words = &self.words[d];
            let len = words.len().max(1) as f32;
            for w in words {
                if own.contains(w) || w.chars().all(|c| c.is_ascii_digit()) {
                    continue;
                }
                let df = self.doc_freq.get(w).copied().unwrap_or(1) as f32;
                let idf = (1.0 + (total - df + 0.5) / (df + 0.5)).ln();
                *weight.entry(w.as_str()).or_default() += idf / len;
            }
        }
        let mut v: Vec<(&str, f32)> = weight.into_iter().collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        v.into_iter().take(n).map(|(w, _)| w.to_string()).collect()
    }

    /// Second-pass candidates: the question's BM25 plus `fb.keyword` times the expansion words' BM25, and the
    /// cosine to the query vector moved towards the feedback documents' mean, fused as the store fuses.
    fn feedback_fused(
        &self,
        q: &Query,
        first: &[Ranked],
        fb: &Feedback,
        depth: usize,
    ) -> Result<Vec<Ranked>> {
        let mut seeds: Vec<usize> = Vec::new();
        for &(d, _) in first {
            if seeds.len() >= fb.docs {
                break;
            }
            seeds.push(d);
        }
        let pool = (depth * 4).max(50);
        let mut kw: HashMap<u32, f32> = self
            .raw_stage(&q.text, None, SearchMode::Keyword, pool, q)?
            .into_iter()
            .collect();
        if fb.terms > 0 && fb.keyword > 0.0 {
            let terms = self.feedback_terms(q, &seeds, fb.terms);
            if !terms.is_empty() {
                for (id, s) in
                    self.raw_stage(&terms.join(" "), None, SearchMode::Keyword, pool, q)?
                {
                    *kw.entry(id).or_default() += fb.keyword * s;
                }
            }
        }
        let mut keyword: Vec<(u32, f32)> = kw.into_iter().collect();
        keyword.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let vector = match (&q.embedding, &self.embeddings) {
            (Some(e), Some(all)) => {
                let mut v = e.clone();
                let norm = |x: &mut Vec<f32>| {
                    let n = x.iter().map(|a| a * a).sum::<f32>().sqrt();
                    if n > 0.0 {
                        x.iter_mut().for_each(|a| *a /= n);
                    }
                };
                norm(&mut v);
                if fb.vector > 0.0 && !seeds.is_empty() {
                    let share = fb.vector / seeds.len() as f32;
                    for &d in &seeds {
                        let mut u = all[d].clone();
                        norm(&mut u);
                        for (a, b) in v.iter_mut().zip(&u) {
                            *a += share * b;
                        }
                    }
                    norm(&mut v);
                }
                self.raw_stage(&q.text, Some(&v), SearchMode::Vector, pool, q)?
            }
            _ => Vec::new(),
        };
        let w = self.params.vector_weight;
        let fused = fuse_calibrated(
            &Candidates { keyword, vector },
            SearchMode::Hybrid,
            w,
            1.0 - w,
            self.store.config().rrf_k,
            KEYWORD_HALF,
        );
        Ok(self.expand(
            fused
                .into_iter()
                .take(depth)
                .map(|(id, score, _, _)| (u64::from(id), score)),
        ))
    }

    /// The keyword and vector candidate lists the store's hybrid search would fuse for `k` results, as
    /// (record id, raw score); lets a sweep re-fuse them at many weights with the store's own [`fuse`].
    pub fn stage_lists(&self, q: &Query, k: usize) -> Result<StageLists> {
        let pool = (k * 4).max(50);
        let raw = |mode: SearchMode| -> Result<Vec<(u32, f32)>> {
            let hits = self.store.search(&SearchQuery {
                text: q.text.clone(),
                k: pool,
                mode,
                filter: Self::filter(q),
                min_score: None,
                embedding: if mode == SearchMode::Keyword {
                    None
                } else {
                    q.embedding.clone()
                },
            })?;
            stage_scores(hits, mode)
        };
        Ok(StageLists {
            candidates: Candidates {
                keyword: raw(SearchMode::Keyword)?,
                vector: if q.embedding.is_some() {
                    raw(SearchMode::Vector)?
                } else {
                    Vec::new()
                },
            },
            k,
            ceiling: self.keyword_ceiling(&q.text),
        })
    }

    /// The highest BM25 score `text` could reach in this index: the sum over its distinct known terms of
    /// idf · (k1 + 1), the store's BM25 formula with a term frequency far above k1 (depends on the corpus and
    /// the query, never on which documents the query matches best).
    pub fn keyword_ceiling(&self, text: &str) -> f32 {
        let k1 = clawhdf5_memory::bm25::Bm25Params::default().k1;
        let mut toks = self.tokenizer.tokens(text);
        toks.sort();
        toks.dedup();
        let n = self.records as f32;
        toks.iter()
            .filter_map(|t| self.term_records.get(t))
            .map(|&df| {
                let df = df as f32;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln() * (k1 + 1.0)
            })
            .sum()
    }

    /// Plain hybrid fusion with the keyword calibration scaled to the query: the BM25 score worth 0.5 is
    /// `share` times the query's [`keyword_ceiling`](Self::keyword_ceiling) (a fixed constant when the query has
    /// no known term).
    pub fn fuse_ceiling_at(&self, lists: &StageLists, w: f32, share: f32) -> Vec<Ranked> {
        let half = if lists.ceiling > 0.0 {
            share * lists.ceiling
        } else {
            KEYWORD_HALF
        };
        self.fuse_calibrated_at(lists, w, half)
    }

    /// Fuse stage lists at vector weight `w` exactly as the store's hybrid search does; documents best first.
    pub fn fuse_at(&self, lists: &StageLists, w: f32) -> Vec<Ranked> {
        self.fuse_calibrated_at(lists, w, KEYWORD_HALF)
    }

    /// [`fuse_at`](Self::fuse_at) with another keyword calibration constant (the BM25 score worth 0.5).
    pub fn fuse_calibrated_at(&self, lists: &StageLists, w: f32, keyword_half: f32) -> Vec<Ranked> {
        let rrf_k = self.store.config().rrf_k;
        let fused = fuse_calibrated(
            &lists.candidates,
            SearchMode::Hybrid,
            w,
            1.0 - w,
            rrf_k,
            keyword_half,
        );
        self.expand(
            fused
                .into_iter()
                .take(lists.k)
                .map(|(id, score, _, _)| (u64::from(id), score)),
        )
    }

    /// Fuse stage lists the way the store did before its scores were calibrated (min-max normalisation of each
    /// list per query, then the weighted sum), for before/after comparisons; documents best first.
    pub fn fuse_minmax_at(&self, lists: &StageLists, w: f32) -> Vec<Ranked> {
        let c = &lists.candidates;
        let range = |l: &[(u32, f32)]| {
            l.iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), x| {
                    (lo.min(x.1), hi.max(x.1))
                })
        };
        let scale = |s: f32, (lo, hi): (f32, f32)| {
            if hi - lo > f32::EPSILON {
                (s - lo) / (hi - lo)
            } else {
                1.0
            }
        };
        let (kr, vr) = (range(&c.keyword), range(&c.vector));
        let mut by: HashMap<u32, (Option<f32>, Option<f32>)> = HashMap::new();
        for &(id, s) in &c.keyword {
            by.entry(id).or_default().0 = Some(s);
        }
        for &(id, s) in &c.vector {
            by.entry(id).or_default().1 = Some(s);
        }
        let mut fused: Vec<(u32, f32)> = by
            .into_iter()
            .map(|(id, (k, v))| {
                let s = if c.vector.is_empty() {
                    k.map_or(0.0, |s| if kr.1 > 0.0 { s / kr.1 } else { 0.0 })
                } else {
                    (1.0 - w) * k.map_or(0.0, |s| scale(s, kr))
                        + w * v.map_or(0.0, |s| scale(s, vr))
                };
                (id, s)
            })
            .collect();
        fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        self.expand(
            fused
                .into_iter()
                .take(lists.k)
                .map(|(id, score)| (u64::from(id), score)),
        )
    }

    /// Re-rank fused candidates: add the best neighbour's and the best same-session candidate's scores, a bonus
    /// inside a month the question names, and a recency bonus when the question asks about the present.
    pub fn rerank(&self, q: &Query, fused: &[Ranked], p: &Rerank) -> Vec<Ranked> {
        let score: HashMap<usize, f32> = fused.iter().copied().collect();
        let mut best_in_session: HashMap<&str, (f32, f32)> = HashMap::new();
        for &(d, s) in fused {
            let e = best_in_session
                .entry(self.sessions[d].as_str())
                .or_insert((0.0, 0.0));
            // Keep the two best so a document never counts itself as its session's evidence.
            if s > e.0 {
                *e = (s, e.0);
            } else if s > e.1 {
                e.1 = s;
            }
        }
        let month = month_window(&q.text);
        let day = day_window(&q.text);
        let inside = |d: usize, (from, to): (i64, i64)| {
            self.times[d].is_some_and(|t| t >= from && t < to)
                || self.told[d].is_some_and(|(a, b)| a < to && b > from)
        };
        let present = asks_about_present(&q.text);
        let about = named_speaker(&q.text, &self.speaker_names)
            .map(str::to_string)
            .or_else(|| subject_of_two(&q.text, &self.speaker_names));
        let top = fused.iter().map(|x| x.1).fold(0.0f32, f32::max);
        let when = asks_when(&q.text);
        let (tmin, tmax) = fused
            .iter()
            .filter_map(|&(d, _)| self.times[d])
            .fold((i64::MAX, i64::MIN), |(a, b), t| (a.min(t), b.max(t)));
        let mut out: Vec<Ranked> = fused
            .iter()
            .map(|&(d, s)| {
                let neighbour = [d.wrapping_sub(1), d + 1]
                    .into_iter()
                    .filter(|&n| n < self.keys.len() && self.sessions[n] == self.sessions[d])
                    .filter_map(|n| score.get(&n).copied())
                    .fold(0.0f32, f32::max);
                let (b1, b2) = best_in_session[self.sessions[d].as_str()];
                let session = if (s - b1).abs() < f32::EPSILON {
                    b2
                } else {
                    b1
                };
                let mut total = s + p.neighbour * neighbour + p.session * session;
                if month.is_some_and(|w| inside(d, w)) {
                    total += p.month;
                }
                if day.is_some_and(|w| inside(d, w)) {
                    total += p.day;
                }
                if let (Some(n), Some(sp)) = (&about, &self.speakers[d]) {
                    if sp.eq_ignore_ascii_case(n) {
                        total += p.speaker;
                    }
                }
                if when && self.dated[d] {
                    total += p.dated;
                }
                if present && tmax > tmin && top > 0.0 {
                    // Newest among the relevant: the bonus scales with the candidate's share of the best
                    // retrieval score, so a recent but barely related turn cannot jump the answer.
                    if let Some(t) = self.times[d] {
                        let pos = (t - tmin) as f32 / (tmax - tmin) as f32;
                        total += p.recency * pos * (s / top).clamp(0.0, 1.0);
                    }
                }
                (d, total)
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

/// Keyword and vector candidates of one query, ready to be fused at any weight.
#[derive(Clone, Debug)]
pub struct StageLists {
    candidates: Candidates,
    k: usize,
    /// The query's [`Index::keyword_ceiling`].
    ceiling: f32,
}

/// The one speaker of `names` (lower case) a question names as a whole word; `None` when it names none or
/// several.
pub fn named_speaker<'a>(question: &str, names: &'a [String]) -> Option<&'a str> {
    let q = question.to_lowercase();
    let words: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = names.iter().filter(|n| {
        let parts: Vec<&str> = n.split_whitespace().collect();
        !parts.is_empty() && words.windows(parts.len()).any(|w| w == parts.as_slice())
    });
    match (found.next(), found.next()) {
        (Some(n), None) => Some(n.as_str()),
        _ => None,
    }
}

/// The speaker a question is about when it names two of `names` (lower case) without joining them: the
/// first-named one, the subject of "What did Jon say about Gina's store?" or "What book did Tim recommend to
/// John?". `None` when it names fewer or more than two, or joins them ("Jon and Gina", "Tim or John"), since
/// it then asks about both.
pub fn subject_of_two(question: &str, names: &[String]) -> Option<String> {
    let q = question.to_lowercase();
    let words: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    let mut at: Vec<(usize, usize, &String)> = names
        .iter()
        .filter_map(|n| {
            let parts: Vec<&str> = n.split_whitespace().collect();
            if parts.is_empty() {
                return None;
            }
            words
                .windows(parts.len())
                .position(|w| w == parts.as_slice())
                .map(|i| (i, i + parts.len(), n))
        })
        .collect();
    if at.len() != 2 {
        return None;
    }
    at.sort();
    let (first, second) = (at[0], at[1]);
    let joined = second.0 == first.1 + 1 && ["and", "or", "&"].contains(&words[first.1]);
    (!joined).then(|| first.2.clone())
}

/// True when a question asks about the current state of something ("now", "currently", "these days").
pub fn asks_about_present(question: &str) -> bool {
    let q = question.to_ascii_lowercase();
    let words: Vec<&str> = q.split(|c: char| !c.is_alphanumeric()).collect();
    [
        "now",
        "currently",
        "current",
        "latest",
        "nowadays",
        "anymore",
        "still",
    ]
    .iter()
    .any(|w| words.contains(w))
        || q.contains("these days")
        || q.contains("most recent")
}

/// A one-stage search's hits as (document id, that stage's own score: raw BM25 or cosine).
fn stage_scores(
    hits: Vec<clawhdf5_memory::SearchHit>,
    mode: SearchMode,
) -> Result<Vec<(u32, f32)>> {
    hits.into_iter()
        .map(|h| {
            let id = u32::try_from(h.record.id).map_err(|_| {
                EvalError::InvalidInput(format!("record id {} too large", h.record.id))
            })?;
            let s = match mode {
                SearchMode::Keyword => h.keyword_score.unwrap_or(h.score),
                _ => h.vector_score.unwrap_or(h.score),
            };
            Ok((id, s))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(key: &str, session: &str, text: &str, t: i64) -> Doc {
        Doc {
            key: key.into(),
            session: session.into(),
            text: text.into(),
            embed_text: text.into(),
            event_time: Some(t),
            speaker: None,
            dated: false,
            told: None,
        }
    }

    fn unit(x: f32, y: f32) -> Vec<f32> {
        vec![x, y]
    }

    #[test]
    fn modes_parse_round_trip() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        assert_eq!(Mode::parse("magic"), None);
    }

    #[test]
    fn keyword_ranking_maps_back_to_keys_and_duplicates() {
        let docs = vec![
            doc("D1:1", "D1", "I adopted a dog named Rex", 1),
            doc("D1:2", "D1", "Thanks!", 2),
            doc("D1:3", "D1", "Thanks!", 3),
            doc("D2:1", "D2", "We went hiking in the Alps", 4),
        ];
        let idx = Index::build(&docs, None, true, Params::default()).unwrap();
        let q = Query {
            text: "what is the dog's name".into(),
            ..Query::default()
        };
        let r = idx.rank(&q, Mode::Bm25Stem, 5).unwrap();
        assert_eq!(idx.key(r[0].0), "D1:1");
        let q = Query {
            text: "thanks".into(),
            ..Query::default()
        };
        let keys: Vec<&str> = idx
            .rank(&q, Mode::Bm25, 5)
            .unwrap()
            .iter()
            .map(|&(d, _)| idx.key(d))
            .collect();
        assert_eq!(
            keys,
            vec!["D1:2", "D1:3"],
            "identical texts share a record but both keys come back"
        );
    }

    #[test]
    fn vector_mode_needs_query_embedding() {
        let docs = vec![doc("a", "s", "x", 1)];
        let idx = Index::build(&docs, Some(&[unit(1.0, 0.0)]), true, Params::default()).unwrap();
        assert!(idx.rank(&Query::default(), Mode::Vector, 1).is_err());
    }

    #[test]
    fn sweep_fusion_equals_store_hybrid() {
        let docs = vec![
            doc("a", "s1", "red apples and pears", 1),
            doc("b", "s1", "green apples", 2),
            doc("c", "s2", "bananas", 3),
            doc("d", "s2", "red cars", 4),
        ];
        let embs = vec![
            unit(1.0, 0.0),
            unit(0.8, 0.6),
            unit(0.0, 1.0),
            unit(0.6, 0.8),
        ];
        for w in [0.0f32, 0.3, 0.5, 1.0] {
            let params = Params {
                vector_weight: w,
                ..Params::default()
            };
            let idx = Index::build(&docs, Some(&embs), true, params).unwrap();
            let q = Query {
                text: "red apples".into(),
                embedding: Some(unit(0.0, 1.0)),
                before: None,
            };
            let direct: Vec<usize> = idx
                .rank(&q, Mode::Hybrid, 3)
                .unwrap()
                .iter()
                .map(|x| x.0)
                .collect();
            let lists = idx.stage_lists(&q, 3).unwrap();
            let swept: Vec<usize> = idx.fuse_at(&lists, w).iter().map(|x| x.0).collect();
            assert_eq!(direct, swept, "weight {w}");
        }
    }

    #[test]
    fn time_limit_hides_later_documents() {
        let docs = vec![
            doc("old", "s1", "I work at Acme", 10),
            doc("new", "s2", "I work at Globex", 20),
        ];
        let idx = Index::build(&docs, None, true, Params::default()).unwrap();
        let q = Query {
            text: "where do I work".into(),
            embedding: None,
            before: Some(15),
        };
        let r = idx.rank(&q, Mode::Bm25Stem, 5).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(idx.key(r[0].0), "old");
    }

    #[test]
    fn rerank_prefers_recent_for_present_questions() {
        let docs = vec![
            doc("old", "s1", "I work at Acme", 10),
            doc("new", "s2", "I work at Globex", 20),
        ];
        let idx = Index::build(&docs, None, true, Params::default()).unwrap();
        let q = Query {
            text: "where do I work now".into(),
            ..Query::default()
        };
        let out = idx.rerank(&q, &[(0, 1.0), (1, 0.95)], &Rerank::default());
        assert_eq!(out[0].0, 1);
        let q = Query {
            text: "where did I work".into(),
            ..Query::default()
        };
        let out = idx.rerank(&q, &[(0, 1.0), (1, 0.95)], &Rerank::default());
        assert_eq!(out[0].0, 0);
    }

    #[test]
    fn named_speaker_needs_exactly_one_name() {
        let names = vec!["caroline".to_string(), "melanie".to_string()];
        assert_eq!(
            named_speaker("What did Caroline paint?", &names),
            Some("caroline")
        );
        assert_eq!(
            named_speaker("Did Melanie's kids paint?", &names),
            Some("melanie")
        );
        assert_eq!(
            named_speaker("When did Caroline and Melanie meet?", &names),
            None
        );
        assert_eq!(named_speaker("Carolines are rare", &names), None);
    }

    #[test]
    fn subject_of_two_speakers() {
        let names = vec!["gina".to_string(), "jon".to_string()];
        let s = |q: &str| subject_of_two(q, &names);
        assert_eq!(
            s("What did Jon say about Gina's progress?").as_deref(),
            Some("jon")
        );
        assert_eq!(
            s("What advice does Gina give to Jon?").as_deref(),
            Some("gina")
        );
        assert_eq!(s("How do Jon and Gina both like to destress?"), None);
        assert_eq!(s("Did Gina or Jon dance?"), None);
        assert_eq!(
            s("What did Jon open?"),
            None,
            "one name is named_speaker's case"
        );
    }

    #[test]
    fn rerank_speaker_and_dated_bonuses() {
        let mut a = doc("D1:1", "D1", "I painted a sunset", 10);
        a.speaker = Some("Caroline".into());
        let mut b = doc("D1:2", "D1", "I painted a lake last week", 10);
        b.speaker = Some("Melanie".into());
        b.dated = true;
        let idx = Index::build(&[a, b], None, true, Params::default()).unwrap();
        let p = Rerank::default();
        let q = Query {
            text: "What did Caroline paint?".into(),
            ..Query::default()
        };
        assert_eq!(idx.rerank(&q, &[(1, 0.5), (0, 0.45)], &p)[0].0, 0);
        let q = Query {
            text: "When did they paint?".into(),
            ..Query::default()
        };
        assert_eq!(idx.rerank(&q, &[(0, 0.5), (1, 0.45)], &p)[0].0, 1);
        let off = Rerank {
            speaker: 0.0,
            dated: 0.0,
            ..p
        };
        assert_eq!(idx.rerank(&q, &[(0, 0.5), (1, 0.45)], &off)[0].0, 0);
    }

    #[test]
    fn rerank_day_and_month_of_what_a_turn_tells() {
        let said = crate::dates::parse_locomo("8:16 pm on 5 December, 2023").unwrap();
        let earlier = crate::dates::parse_locomo("8:16 pm on 1 December, 2023").unwrap();
        let mut a = doc("D2:1", "D2", "I went to a meeting yesterday", said);
        a.told = crate::dates::told_window(&a.text, said);
        let b = doc("D1:1", "D1", "I went to a meeting", earlier);
        let idx = Index::build(&[a, b], None, true, Params::default()).unwrap();
        let p = Rerank {
            day: 0.2,
            month: 0.5,
            ..Rerank::default()
        };
        let q = Query {
            text: "What was Sam doing on December 4, 2023?".into(),
            ..Query::default()
        };
        assert_eq!(idx.rerank(&q, &[(1, 0.5), (0, 0.45)], &p)[0].0, 0);
        let q = Query {
            text: "What did Sam do in November 2023?".into(),
            ..Query::default()
        };
        // Neither was said in November, and neither tells of it.
        assert_eq!(idx.rerank(&q, &[(1, 0.5), (0, 0.45)], &p)[0].0, 1);
        let mut c = doc("D3:1", "D3", "Last month I ran a marathon", said);
        c.told = crate::dates::told_window(&c.text, said);
        let d = doc("D3:2", "D3", "I ran a marathon", said);
        let idx = Index::build(&[c, d], None, true, Params::default()).unwrap();
        assert_eq!(idx.rerank(&q, &[(1, 0.5), (0, 0.45)], &p)[0].0, 0);
    }

    #[test]
    fn feedback_words_and_second_pass() {
        let docs = vec![
            doc("a", "s1", "I practise taekwondo and kickboxing", 1),
            doc("b", "s2", "Martial arts keep me fit", 2),
            doc("c", "s3", "Kickboxing class was tough today", 3),
            doc("d", "s4", "We baked bread", 4),
        ];
        let embs = vec![
            unit(1.0, 0.0),
            unit(0.9, 0.1),
            unit(0.8, 0.6),
            unit(0.0, 1.0),
        ];
        let idx = Index::build(&docs, Some(&embs), true, Params::default()).unwrap();
        let q = Query {
            text: "martial arts".into(),
            embedding: Some(unit(1.0, 0.0)),
            before: None,
        };
        let words = idx.feedback_terms(&q, &[1, 0], 5);
        assert!(
            !words.iter().any(|w| w == "martial" || w == "arts"),
            "{words:?}"
        );
        assert!(words.iter().any(|w| w == "kickboxing"), "{words:?}");
        let fb = Rerank {
            feedback: Feedback {
                docs: 2,
                terms: 5,
                keyword: 0.5,
                vector: 0.25,
            },
            ..Rerank::default()
        };
        assert!(fb.feedback.active() && !Feedback::OFF.active());
        let fused = idx.rank(&q, Mode::Hybrid, 4).unwrap();
        let out = idx.rerank_with_feedback(&q, &fused, &fb).unwrap();
        let keys: Vec<&str> = out.iter().map(|&(d, _)| idx.key(d)).collect();
        let at = |k: &str| keys.iter().position(|x| *x == k);
        assert!(at("c") < at("d"), "{keys:?}");
    }

    #[test]
    fn keyword_ceiling_sums_the_query_terms_idf() {
        let docs = vec![
            doc("a", "s1", "red apples", 1),
            doc("b", "s1", "green apples", 2),
            doc("c", "s2", "bananas", 3),
        ];
        let idx = Index::build(&docs, None, true, Params::default()).unwrap();
        let one = idx.keyword_ceiling("red");
        let two = idx.keyword_ceiling("red apples");
        assert!(one > 0.0 && two > one);
        assert!(
            idx.keyword_ceiling("red") > idx.keyword_ceiling("apples"),
            "rarer terms weigh more"
        );
        assert_eq!(idx.keyword_ceiling("zebra"), 0.0);
    }

    #[test]
    fn bad_weight_is_an_error() {
        let params = Params {
            vector_weight: 1.5,
            ..Params::default()
        };
        assert!(Index::build(&[], None, true, params).is_err());
    }
}
