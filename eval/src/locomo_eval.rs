//! Running LoCoMo: one store per conversation, every question asked in every mode, evidence recall scored at
//! turn level and at session level (turn rankings rolled up to distinct sessions).

use std::collections::HashSet;
use std::time::Instant;

use serde::Serialize;

use crate::embeddings::EmbeddingService;
use crate::error::{EvalError, Result};
use crate::locomo::{self, category_name, Conversation, TurnText};
use crate::metrics::{score_ranking, Accumulator, LOCOMO_KS};
use crate::report::{f3, Grid, Report, Table};
use crate::retrieval::{Doc, Feedback, Index, Mode, Params, Query, Ranked, Rerank};

/// What is indexed as one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Granularity {
    /// One document per turn (turn metrics, plus session metrics by roll-up).
    Turn,
    /// One document per session (session metrics only).
    Session,
}

impl Granularity {
    /// Parse `turn` or `session`.
    pub fn parse(s: &str) -> Option<Granularity> {
        match s {
            "turn" => Some(Granularity::Turn),
            "session" => Some(Granularity::Session),
            _ => None,
        }
    }
}

/// Settings of a LoCoMo run.
#[derive(Clone, Debug, Serialize)]
pub struct LocomoOptions {
    /// Modes to run (BM25 is always added so its figure sits beside the others).
    pub modes: Vec<Mode>,
    /// Turn or session documents.
    pub granularity: Granularity,
    /// Ask only about this many questions, evenly strided over all of them.
    pub limit: Option<usize>,
    /// How turns are written for keyword indexing.
    pub index_text: TurnText,
    /// How turns are written for embedding.
    pub embed_text: TurnText,
    /// Fusion and re-ranking settings.
    pub params: Params,
    /// Also sweep the hybrid vector weight and the re-ranking weights.
    pub sweep: bool,
    /// Documents retrieved per question (rankings are cut here before scoring and roll-up).
    pub depth: usize,
    /// Turn granularity: how the hybrid-rerank turn ranking is aggregated into the session ranking (the other
    /// modes' session figures are plain roll-ups of their turn rankings).
    pub session_agg: SessionAgg,
    /// Write every question's rankings (stemmed BM25, vector, hybrid, hybrid-rerank turns and the session
    /// documents' hybrid scores) here as JSON lines, for per-question analysis of misses.
    pub dump: Option<std::path::PathBuf>,
}

impl Default for LocomoOptions {
    fn default() -> Self {
        LocomoOptions {
            modes: vec![Mode::Bm25],
            granularity: Granularity::Turn,
            limit: None,
            index_text: TurnText {
                speaker: true,
                date: true,
                neighbours: 2,
                repeat: 2,
            },
            // Embedding each turn with one turn either side: turn R_any@5 0.785 -> 0.804, session 0.939 -> 0.944
            // (hybrid-rerank, BENCHMARKS.md).
            embed_text: TurnText {
                speaker: true,
                date: false,
                neighbours: 1,
                repeat: 1,
            },
            params: Params::default(),
            sweep: false,
            depth: 100,
            session_agg: SessionAgg::default(),
            dump: None,
        }
    }
}

/// Group label of the headline set (categories 1–4).
pub const HEADLINE: &str = "cat 1-4";

fn groups_of(category: u8) -> Vec<String> {
    let own = format!("cat {category} {}", category_name(category));
    if category <= 4 {
        vec![HEADLINE.to_string(), own]
    } else {
        vec![format!("{own} (not in cat 1-4)")]
    }
}

/// Evenly strided subsample of `n` items down to at most `limit`.
pub fn strided(n: usize, limit: Option<usize>) -> Vec<usize> {
    match limit {
        Some(l) if l < n && l > 0 => {
            let stride = n.div_ceil(l);
            (0..n).step_by(stride).collect()
        }
        Some(0) => Vec::new(),
        _ => (0..n).collect(),
    }
}

struct ModeAcc {
    turn: Accumulator,
    session: Accumulator,
    seconds: f64,
    queries: usize,
}

impl ModeAcc {
    fn new() -> Self {
        let mut turn = Accumulator::new(LOCOMO_KS);
        let mut session = Accumulator::new(LOCOMO_KS);
        for acc in [&mut turn, &mut session] {
            acc.declare(HEADLINE);
            for c in 1..=5 {
                acc.declare(&groups_of(c).last().cloned().unwrap_or_default());
            }
        }
        ModeAcc {
            turn,
            session,
            seconds: 0.0,
            queries: 0,
        }
    }
}

/// How a turn ranking becomes a session ranking: a session scores its best turn's score, plus `share` times
/// the sum of its next `top - 1` best turns' scores, plus `vector` times the best cosine between the question
/// and any of its turns, plus `docs` times the hybrid score of the whole session as a document of its own
/// (share, vector and docs all 0 = plain roll-up to distinct sessions, first wins).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SessionAgg {
    /// Weight of the session's other strong turns.
    pub share: f32,
    /// Turns per session counted (the best one included).
    pub top: usize,
    /// Weight of the session's best question–turn cosine, over all its turns (the dense evidence of the
    /// session, whichever turn won the fused ranking).
    pub vector: f32,
    /// Weight of the session document's own hybrid score (keyword: all its turns; vector: the mean of its
    /// turns' embeddings).
    pub docs: f32,
}

impl Default for SessionAgg {
    fn default() -> Self {
        // LoCoMo sweep (--sweep, hybrid-rerank at the default weights), categories 1-4 (BENCHMARKS.md):
        // vector: session R_any@5 0.949 at 0 (plain roll-up), 0.952-0.953 at every weight from 0.3 to 0.75,
        // 0.950 at 1.0, falling beyond; 0.5 is the middle of that plateau. Alone it costs session R_any@1
        // (0.755 -> 0.751) and MRR (0.840 -> 0.837);
        // docs: 0.2 beside it wins them back (R_any@1 / R_any@5 / MRR 0.756 / 0.953 / 0.841), and every cell
        // around (cosine 0.4-0.75, docs 0.1-0.3) stays at session R_any@5 0.952-0.955. Alone (no cosine) docs
        // moved R_any@5 by at most 0.001.
        // share / top: no share of the other turns (top 2-10, share 0.1-1.0) moved session R_any@5 by more
        // than 0.002 from the plain roll-up, and many lowered it; share stays 0.
        SessionAgg {
            share: 0.0,
            top: 3,
            vector: 0.5,
            docs: 0.2,
        }
    }
}

/// Per-session evidence beside the turn ranking: the session documents' own hybrid scores and each session's
/// best question–turn cosine.
#[derive(Clone, Debug, Default)]
pub struct SessionEvidence {
    /// Hybrid score of each session as a whole document.
    pub docs: std::collections::HashMap<String, f32>,
    /// Best cosine between the question and any turn of each session.
    pub vectors: std::collections::HashMap<String, f32>,
}

/// Best cosine between `query` and the turns of each session (`turns[i]` is embedded as `vecs[i]`).
pub fn session_best_cosine(
    query: &[f32],
    turns: &[Doc],
    vecs: &[Vec<f32>],
) -> std::collections::HashMap<String, f32> {
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let qn = norm(query);
    let mut best: std::collections::HashMap<String, f32> = std::collections::HashMap::new();
    for (d, v) in turns.iter().zip(vecs) {
        let dn = norm(v);
        let cos = if qn > 0.0 && dn > 0.0 {
            query.iter().zip(v).map(|(a, b)| a * b).sum::<f32>() / (qn * dn)
        } else {
            0.0
        };
        let e = best.entry(d.session.clone()).or_insert(f32::NEG_INFINITY);
        *e = e.max(cos);
    }
    best
}

/// Rank sessions from a scored turn ranking (best first) and per-session `evidence` with `agg`; ties keep first
/// appearance order. Sessions with evidence but no ranked turn join with a turn score of 0.
pub fn aggregate_sessions(
    ranked: &[(String, f32)],
    session_of: impl Fn(&str) -> Option<String>,
    evidence: &SessionEvidence,
    agg: SessionAgg,
) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut per: std::collections::HashMap<String, Vec<f32>> = std::collections::HashMap::new();
    for (t, s) in ranked {
        if let Some(sess) = session_of(t) {
            let e = per.entry(sess.clone()).or_default();
            if e.is_empty() {
                order.push(sess);
            }
            e.push(*s);
        }
    }
    let use_docs = agg.docs > 0.0 && !evidence.docs.is_empty();
    let use_vectors = agg.vector > 0.0 && !evidence.vectors.is_empty();
    if (agg.share <= 0.0 || agg.top <= 1) && !use_docs && !use_vectors {
        return order;
    }
    let mut extra: Vec<&String> = Vec::new();
    if use_docs {
        extra.extend(evidence.docs.keys());
    }
    if use_vectors {
        extra.extend(evidence.vectors.keys());
    }
    // Sorted so sessions without a ranked turn join in the same order on every run.
    extra.sort();
    for sess in extra {
        if !per.contains_key(sess) {
            per.insert(sess.clone(), Vec::new());
            order.push(sess.clone());
        }
    }
    let mut scored: Vec<(usize, f32)> = order
        .iter()
        .enumerate()
        .map(|(i, sess)| {
            let mut v = per[sess].clone();
            v.sort_by(|a, b| b.total_cmp(a));
            let best = v.first().copied().unwrap_or(0.0);
            let rest: f32 = v.iter().skip(1).take(agg.top.saturating_sub(1)).sum();
            let mut total = best + agg.share * rest;
            if use_docs {
                total += agg.docs * evidence.docs.get(sess).copied().unwrap_or(0.0);
            }
            if use_vectors {
                total += agg.vector * evidence.vectors.get(sess).copied().unwrap_or(0.0);
            }
            (i, total)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|(i, _)| order[i].clone()).collect()
}

/// Mean embedding of each session document's turns (turn documents carry their session in `session`).
fn session_centroids(turns: &[Doc], turn_vecs: &[Vec<f32>], sessions: &[Doc]) -> Vec<Vec<f32>> {
    let dim = turn_vecs.first().map_or(0, Vec::len);
    let mut sum: std::collections::HashMap<&str, Vec<f32>> = std::collections::HashMap::new();
    for (d, v) in turns.iter().zip(turn_vecs) {
        let acc = sum
            .entry(d.session.as_str())
            .or_insert_with(|| vec![0.0; dim]);
        for (a, x) in acc.iter_mut().zip(v) {
            *a += x;
        }
    }
    sessions
        .iter()
        .map(|s| {
            let v = sum.get(s.key.as_str()).cloned().unwrap_or_default();
            // A session without turns gets a unit vector that matches nothing in particular.
            if v.iter().all(|x| *x == 0.0) {
                let mut u = vec![0.0; dim];
                if let Some(first) = u.first_mut() {
                    *first = 1.0;
                }
                u
            } else {
                v
            }
        })
        .collect()
}

const SWEEP_WEIGHTS: [f32; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const SWEEP_NEIGHBOUR: [f32; 4] = [0.0, 0.1, 0.2, 0.4];
const SWEEP_SESSION: [f32; 4] = [0.0, 0.1, 0.2, 0.4];
/// Keyword calibration constants (BM25 score worth 0.5) and vector weights of the calibration grid.
const SWEEP_HALF: [f32; 6] = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
const SWEEP_CAL_W: [f32; 5] = [0.2, 0.3, 0.4, 0.5, 0.6];
/// Session aggregation: shares and turns per session.
const SWEEP_SHARE: [f32; 7] = [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0];
const SWEEP_TOP: [usize; 4] = [2, 3, 5, 10];
/// Session aggregation: weights of the session documents' own scores (at the default share and top).
const SWEEP_DOCS: [f32; 7] = [0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0];
/// Session aggregation: weights of each session's best question-turn cosine.
const SWEEP_SESSION_VECTOR: [f32; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0];
/// Session aggregation: session-document weights crossed with the cosine weights.
const SWEEP_DOCS_BY_VECTOR: [f32; 5] = [0.0, 0.1, 0.2, 0.3, 0.5];
/// Keyword calibration relative to the query's attainable BM25 (the score worth 0.5 = share x ceiling).
pub const SWEEP_CEILING: [f32; 7] = [0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75];
/// Re-rank bonus for turns of a day the question names.
const SWEEP_DAY: [f32; 6] = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5];
/// Re-rank bonus for turns of a month the question names.
const SWEEP_MONTH: [f32; 6] = [0.0, 0.1, 0.25, 0.5, 0.75, 1.0];
/// Pseudo-relevance feedback: first-pass turns x (expansion-word weight, Rocchio weight).
const SWEEP_FB_DOCS: [usize; 4] = [0, 2, 3, 5];
const SWEEP_FB_WEIGHTS: [(f32, f32); 5] =
    [(0.1, 0.0), (0.2, 0.0), (0.0, 0.25), (0.0, 0.5), (0.1, 0.25)];
/// Expansion words per feedback query.
const SWEEP_FB_TERMS: usize = 10;
/// Re-rank bonus for the named speaker's turns.
const SWEEP_SPEAKER: [f32; 7] = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5];
/// Re-rank recency bonus for questions about the present.
const SWEEP_RECENCY: [f32; 6] = [0.0, 0.1, 0.25, 0.5, 1.0, 2.0];
/// Re-rank bonus for dated turns on "when" questions.
const SWEEP_DATED: [f32; 6] = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3];

/// Accumulators of every sweep.
struct Sweeps {
    weight: Vec<ModeAcc>,
    rerank: Vec<ModeAcc>,
    calibration: Vec<ModeAcc>,
    aggregation: Vec<ModeAcc>,
    docs: Vec<ModeAcc>,
    session_vector: Vec<ModeAcc>,
    vector_docs: Vec<ModeAcc>,
    speaker: Vec<ModeAcc>,
    recency: Vec<ModeAcc>,
    dated: Vec<ModeAcc>,
    ceiling: Vec<ModeAcc>,
    day: Vec<ModeAcc>,
    month: Vec<ModeAcc>,
    feedback: Vec<ModeAcc>,
    /// hybrid and hybrid-rerank with min-max fusion (before calibration), then calibrated (now).
    fusion: Vec<ModeAcc>,
}

impl Sweeps {
    fn new() -> Self {
        let accs = |n: usize| (0..n).map(|_| ModeAcc::new()).collect::<Vec<_>>();
        Sweeps {
            weight: accs(SWEEP_WEIGHTS.len()),
            rerank: accs(SWEEP_NEIGHBOUR.len() * SWEEP_SESSION.len()),
            calibration: accs(SWEEP_HALF.len() * SWEEP_CAL_W.len()),
            aggregation: accs(SWEEP_SHARE.len() * SWEEP_TOP.len()),
            docs: accs(SWEEP_DOCS.len()),
            session_vector: accs(SWEEP_SESSION_VECTOR.len()),
            vector_docs: accs(SWEEP_SESSION_VECTOR.len() * SWEEP_DOCS_BY_VECTOR.len()),
            speaker: accs(SWEEP_SPEAKER.len()),
            recency: accs(SWEEP_RECENCY.len()),
            dated: accs(SWEEP_DATED.len()),
            ceiling: accs(SWEEP_CEILING.len()),
            day: accs(SWEEP_DAY.len()),
            month: accs(SWEEP_MONTH.len()),
            feedback: accs(SWEEP_FB_DOCS.len() * SWEEP_FB_WEIGHTS.len()),
            fusion: accs(4),
        }
    }
}

/// Run LoCoMo over `convs`. `embedder` is required when a mode needs embeddings.
pub fn run(
    convs: &[Conversation],
    opts: &LocomoOptions,
    mut embedder: Option<&mut EmbeddingService>,
) -> Result<Report> {
    let mut modes = opts.modes.clone();
    if !modes.contains(&Mode::Bm25) {
        modes.insert(0, Mode::Bm25);
    }
    let needs_vectors = modes.iter().any(|m| m.needs_embeddings()) || opts.sweep;
    if needs_vectors && embedder.is_none() {
        return Err(EvalError::InvalidInput(
            "the vector, hybrid, rrf and hybrid-rerank modes and --sweep need the embedding model"
                .into(),
        ));
    }
    let all: Vec<(usize, usize)> = convs
        .iter()
        .enumerate()
        .flat_map(|(c, conv)| (0..conv.questions.len()).map(move |q| (c, q)))
        .collect();
    let picked: HashSet<(usize, usize)> = strided(all.len(), opts.limit)
        .into_iter()
        .map(|i| all[i])
        .collect();
    let mut accs: Vec<ModeAcc> = modes.iter().map(|_| ModeAcc::new()).collect();
    let mut sweeps = Sweeps::new();
    let mut asked = 0usize;
    let mut dump = match &opts.dump {
        Some(p) => Some(std::io::BufWriter::new(std::fs::File::create(p).map_err(
            |e| EvalError::InvalidInput(format!("cannot write {}: {e}", p.display())),
        )?)),
        None => None,
    };
    for (ci, conv) in convs.iter().enumerate() {
        let qs: Vec<usize> = (0..conv.questions.len())
            .filter(|q| picked.contains(&(ci, *q)))
            .collect();
        if qs.is_empty() {
            continue;
        }
        let docs = match opts.granularity {
            Granularity::Turn => locomo::turn_docs(conv, opts.index_text, opts.embed_text),
            Granularity::Session => locomo::session_docs(conv),
        };
        let (doc_vecs, q_vecs) = match embedder.as_deref_mut() {
            Some(e) if needs_vectors => {
                let texts: Vec<String> = docs.iter().map(|d| d.embed_text.clone()).collect();
                let dv = e.embed(&texts, &format!("conversation {}", conv.id))?;
                let qt: Vec<String> = qs
                    .iter()
                    .map(|&q| conv.questions[q].question.clone())
                    .collect();
                let qv = e.embed(&qt, "questions")?;
                (Some(dv), Some(qv))
            }
            _ => (None, None),
        };
        let stem_needed = modes.iter().any(|m| m.stemming()) || opts.sweep;
        let stem_index = if stem_needed {
            Some(Index::build(&docs, doc_vecs.as_deref(), true, opts.params)?)
        } else {
            None
        };
        let plain_index = Index::build(&docs, doc_vecs.as_deref(), false, opts.params)?;
        let turn_level = opts.granularity == Granularity::Turn;
        let docs_used = opts.session_agg.docs > 0.0 && modes.contains(&Mode::HybridRerank);
        let session_index = if turn_level && (docs_used || opts.sweep || opts.dump.is_some()) {
            let sdocs = locomo::session_docs(conv);
            let centroids = doc_vecs
                .as_deref()
                .map(|dv| session_centroids(&docs, dv, &sdocs));
            Some(Index::build(
                &sdocs,
                centroids.as_deref(),
                true,
                opts.params,
            )?)
        } else {
            None
        };
        let sessions = locomo::turn_sessions(conv);
        let session_of = |t: &str| sessions.get(t).cloned();
        for (qi, &q) in qs.iter().enumerate() {
            let question = &conv.questions[q];
            asked += 1;
            let gold_turns: HashSet<String> = question.evidence.iter().cloned().collect();
            let gold_sessions: HashSet<String> = question
                .evidence
                .iter()
                .filter_map(|t| locomo::session_of(t).map(str::to_string))
                .collect();
            let groups = groups_of(question.category);
            let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
            let query = Query {
                text: question.question.clone(),
                embedding: q_vecs.as_ref().map(|v| v[qi].clone()),
                before: None,
            };
            let session_scores: Vec<(String, f32)> = match &session_index {
                Some(si) => {
                    let mode = if query.embedding.is_some() {
                        Mode::Hybrid
                    } else {
                        Mode::Bm25Stem
                    };
                    si.rank(&query, mode, si.len())?
                        .iter()
                        .map(|&(d, s)| (si.key(d).to_string(), s))
                        .collect()
                }
                None => Vec::new(),
            };
            let evidence = SessionEvidence {
                docs: session_scores.iter().cloned().collect(),
                vectors: match (&query.embedding, &doc_vecs) {
                    (Some(q), Some(dv)) if turn_level => session_best_cosine(q, &docs, dv),
                    _ => Default::default(),
                },
            };
            let score_agg = |acc: &mut ModeAcc, idx: &Index, ranked: &[Ranked], agg: SessionAgg| {
                let scored: Vec<(String, f32)> = ranked
                    .iter()
                    .map(|&(d, s)| (idx.key(d).to_string(), s))
                    .collect();
                match opts.granularity {
                    Granularity::Turn => {
                        let keys: Vec<String> = scored.iter().map(|x| x.0.clone()).collect();
                        acc.turn
                            .add(&groups, &score_ranking(&keys, &gold_turns, LOCOMO_KS));
                        let rolled = aggregate_sessions(&scored, session_of, &evidence, agg);
                        acc.session
                            .add(&groups, &score_ranking(&rolled, &gold_sessions, LOCOMO_KS));
                    }
                    Granularity::Session => {
                        let keys: Vec<String> = scored.into_iter().map(|x| x.0).collect();
                        acc.session
                            .add(&groups, &score_ranking(&keys, &gold_sessions, LOCOMO_KS));
                    }
                }
            };
            let score = |acc: &mut ModeAcc, idx: &Index, ranked: &[Ranked]| {
                score_agg(acc, idx, ranked, opts.session_agg)
            };
            // The other modes' session figures stay plain roll-ups of their own rankings (BM25 mixes no cosine in).
            let plain_agg = SessionAgg {
                share: 0.0,
                vector: 0.0,
                docs: 0.0,
                ..opts.session_agg
            };
            if let Some(w) = dump.as_mut() {
                let idx = stem_index.as_ref().unwrap_or(&plain_index);
                let line = dump_line(conv, question, idx, &query, opts.depth, &session_scores)?;
                use std::io::Write;
                writeln!(w, "{line}").map_err(|e| EvalError::InvalidInput(format!("dump: {e}")))?;
            }
            for (mi, &mode) in modes.iter().enumerate() {
                let idx = if mode.stemming() {
                    stem_index.as_ref().unwrap_or(&plain_index)
                } else {
                    &plain_index
                };
                let t0 = Instant::now();
                let ranked = idx.rank(&query, mode, opts.depth)?;
                accs[mi].seconds += t0.elapsed().as_secs_f64();
                accs[mi].queries += 1;
                let agg = if mode == Mode::HybridRerank {
                    opts.session_agg
                } else {
                    plain_agg
                };
                score_agg(&mut accs[mi], idx, &ranked, agg);
            }
            if opts.sweep {
                let idx = stem_index.as_ref().unwrap_or(&plain_index);
                let lists = idx.stage_lists(&query, opts.depth)?;
                for (wi, &w) in SWEEP_WEIGHTS.iter().enumerate() {
                    score_agg(
                        &mut sweeps.weight[wi],
                        idx,
                        &idx.fuse_at(&lists, w),
                        plain_agg,
                    );
                }
                for (hi, &h) in SWEEP_HALF.iter().enumerate() {
                    for (wi, &w) in SWEEP_CAL_W.iter().enumerate() {
                        let r = idx.fuse_calibrated_at(&lists, w, h);
                        score_agg(
                            &mut sweeps.calibration[hi * SWEEP_CAL_W.len() + wi],
                            idx,
                            &r,
                            plain_agg,
                        );
                    }
                }
                let w = opts.params.vector_weight;
                for (ci, &c) in SWEEP_CEILING.iter().enumerate() {
                    score_agg(
                        &mut sweeps.ceiling[ci],
                        idx,
                        &idx.fuse_ceiling_at(&lists, w, c),
                        plain_agg,
                    );
                }
                let deep = idx.stage_lists(&query, opts.params.rerank.depth.max(opts.depth))?;
                let fused = idx.fuse_at(&deep, opts.params.vector_weight);
                let old = idx.fuse_minmax_at(&deep, w);
                for (i, f) in [&old, &fused].into_iter().enumerate() {
                    let mut plain = f.clone();
                    plain.truncate(opts.depth);
                    score_agg(&mut sweeps.fusion[2 * i], idx, &plain, plain_agg);
                    let mut r = idx.rerank_with_feedback(&query, f, &opts.params.rerank)?;
                    r.truncate(opts.depth);
                    score(&mut sweeps.fusion[2 * i + 1], idx, &r);
                }
                for (ni, &nb) in SWEEP_NEIGHBOUR.iter().enumerate() {
                    for (si, &ss) in SWEEP_SESSION.iter().enumerate() {
                        let p = Rerank {
                            neighbour: nb,
                            session: ss,
                            ..opts.params.rerank
                        };
                        let mut r = idx.rerank_with_feedback(&query, &fused, &p)?;
                        r.truncate(opts.depth);
                        score(&mut sweeps.rerank[ni * SWEEP_SESSION.len() + si], idx, &r);
                    }
                }
                for (si, &sp) in SWEEP_SPEAKER.iter().enumerate() {
                    let p = Rerank {
                        speaker: sp,
                        ..opts.params.rerank
                    };
                    let mut r = idx.rerank_with_feedback(&query, &fused, &p)?;
                    r.truncate(opts.depth);
                    score(&mut sweeps.speaker[si], idx, &r);
                }
                for (ri, &rw) in SWEEP_RECENCY.iter().enumerate() {
                    let p = Rerank {
                        recency: rw,
                        ..opts.params.rerank
                    };
                    let mut r = idx.rerank_with_feedback(&query, &fused, &p)?;
                    r.truncate(opts.depth);
                    score(&mut sweeps.recency[ri], idx, &r);
                }
                for (di, &dw) in SWEEP_DATED.iter().enumerate() {
                    let p = Rerank {
                        dated: dw,
                        ..opts.params.rerank
                    };
                    let mut r = idx.rerank_with_feedback(&query, &fused, &p)?;
                    r.truncate(opts.depth);
                    score(&mut sweeps.dated[di], idx, &r);
                }
                for (di, &dw) in SWEEP_DAY.iter().enumerate() {
                    let p = Rerank {
                        day: dw,
                        ..opts.params.rerank
                    };
                    let mut r = idx.rerank_with_feedback(&query, &fused, &p)?;
                    r.truncate(opts.depth);
                    score(&mut sweeps.day[di], idx, &r);
                }
                for (mi, &mw) in SWEEP_MONTH.iter().enumerate() {
                    let p = Rerank {
                        month: mw,
                        ..opts.params.rerank
                    };
                    let mut r = idx.rerank_with_feedback(&query, &fused, &p)?;
                    r.truncate(opts.depth);
                    score(&mut sweeps.month[mi], idx, &r);
                }
                for (fi, &docs) in SWEEP_FB_DOCS.iter().enumerate() {
                    for (wi, &(kw, vw)) in SWEEP_FB_WEIGHTS.iter().enumerate() {
                        let p = Rerank {
                            feedback: Feedback {
                                docs,
                                terms: SWEEP_FB_TERMS,
                                keyword: kw,
                                vector: vw,
                            },
                            ..opts.params.rerank
                        };
                        let mut r = idx.rerank_with_feedback(&query, &fused, &p)?;
                        r.truncate(opts.depth);
                        score(
                            &mut sweeps.feedback[fi * SWEEP_FB_WEIGHTS.len() + wi],
                            idx,
                            &r,
                        );
                    }
                }
                if turn_level {
                    let mut r = idx.rerank_with_feedback(&query, &fused, &opts.params.rerank)?;
                    r.truncate(opts.depth);
                    for (di, &docs) in SWEEP_DOCS.iter().enumerate() {
                        let agg = SessionAgg {
                            docs,
                            ..opts.session_agg
                        };
                        score_agg(&mut sweeps.docs[di], idx, &r, agg);
                    }
                    for (vi, &vector) in SWEEP_SESSION_VECTOR.iter().enumerate() {
                        let agg = SessionAgg {
                            vector,
                            ..opts.session_agg
                        };
                        score_agg(&mut sweeps.session_vector[vi], idx, &r, agg);
                        for (di, &docs) in SWEEP_DOCS_BY_VECTOR.iter().enumerate() {
                            let agg = SessionAgg {
                                vector,
                                docs,
                                ..opts.session_agg
                            };
                            let acc = &mut sweeps.vector_docs[vi * SWEEP_DOCS_BY_VECTOR.len() + di];
                            score_agg(acc, idx, &r, agg);
                        }
                    }
                    for (si, &share) in SWEEP_SHARE.iter().enumerate() {
                        for (ti, &top) in SWEEP_TOP.iter().enumerate() {
                            let agg = SessionAgg {
                                share,
                                top,
                                ..opts.session_agg
                            };
                            let acc = &mut sweeps.aggregation[si * SWEEP_TOP.len() + ti];
                            score_agg(acc, idx, &r, agg);
                        }
                    }
                }
            }
        }
    }
    build_report(convs, opts, &modes, &accs, &sweeps, asked)
}

/// One question's rankings as a JSON line (see [`LocomoOptions::dump`]).
fn dump_line(
    conv: &Conversation,
    question: &locomo::Question,
    idx: &Index,
    query: &Query,
    depth: usize,
    session_scores: &[(String, f32)],
) -> Result<String> {
    let list = |r: Vec<Ranked>| -> Vec<(String, f32)> {
        r.into_iter()
            .map(|(d, s)| (idx.key(d).to_string(), s))
            .collect()
    };
    let mut v = serde_json::json!({
        "conversation": conv.id,
        "category": question.category,
        "question": question.question,
        "evidence": question.evidence,
        "bm25": list(idx.rank(query, Mode::Bm25Stem, depth)?),
    });
    if query.embedding.is_some() {
        v["vector"] = serde_json::json!(list(idx.rank(query, Mode::Vector, depth)?));
        v["hybrid"] = serde_json::json!(list(idx.rank(query, Mode::Hybrid, depth)?));
        v["rerank"] = serde_json::json!(list(idx.rank(query, Mode::HybridRerank, depth)?));
        v["sessions"] = serde_json::json!(session_scores);
    }
    Ok(v.to_string())
}

fn headline_cells(acc: &ModeAcc, turn: bool) -> Vec<String> {
    let mut cells = Vec::new();
    let pick = |a: &Accumulator| a.summary(HEADLINE).filter(|s| s.n > 0);
    if turn {
        match pick(&acc.turn) {
            Some(s) => {
                cells.extend(LOCOMO_KS.iter().map(|k| f3(s.recall_any[k])));
                cells.push(f3(s.recall_all[&5]));
                cells.push(f3(s.mrr));
            }
            None => cells.extend(std::iter::repeat_n("-".to_string(), LOCOMO_KS.len() + 2)),
        }
    }
    match pick(&acc.session) {
        Some(s) => {
            cells.extend(LOCOMO_KS.iter().map(|k| f3(s.recall_any[k])));
            cells.push(f3(s.mrr));
        }
        None => cells.extend(std::iter::repeat_n("-".to_string(), LOCOMO_KS.len() + 1)),
    }
    cells
}

/// `turn R_any@1 / turn R_any@5 / session R_any@5` of an accumulator (categories 1-4).
fn r5_pair(acc: &ModeAcc) -> String {
    let get = |a: &Accumulator, k: usize| {
        a.summary(HEADLINE)
            .filter(|s| s.n > 0)
            .map_or("-".to_string(), |s| f3(s.recall_any[&k]))
    };
    format!(
        "{} / {} / {}",
        get(&acc.turn, 1),
        get(&acc.turn, 5),
        get(&acc.session, 5)
    )
}

fn headline_header(first: &str, turn: bool) -> Vec<String> {
    let mut h = vec![first.to_string()];
    if turn {
        h.extend(LOCOMO_KS.iter().map(|k| format!("turn R_any@{k}")));
        h.push("turn R_all@5".into());
        h.push("turn MRR".into());
    }
    h.extend(LOCOMO_KS.iter().map(|k| format!("session R_any@{k}")));
    h.push("session MRR".into());
    h
}

fn build_report(
    convs: &[Conversation],
    opts: &LocomoOptions,
    modes: &[Mode],
    accs: &[ModeAcc],
    sweeps: &Sweeps,
    asked: usize,
) -> Result<Report> {
    let st = locomo::stats(convs);
    let dataset = serde_json::to_value(&st).map_err(|e| EvalError::InvalidInput(e.to_string()))?;
    let settings =
        serde_json::to_value(opts).map_err(|e| EvalError::InvalidInput(e.to_string()))?;
    let mut r = Report::new("LoCoMo evidence retrieval", settings, dataset);
    let turn = opts.granularity == Granularity::Turn;
    let n_head = accs
        .first()
        .and_then(|a| a.session.summary(HEADLINE))
        .map_or(0, |s| s.n);
    r.notes.push(format!(
        "{} conversations, {} sessions, {} turns; {asked} questions asked, {n_head} of them in categories 1-4 \
         (the headline set); category 5 is reported separately.",
        st.conversations, st.sessions, st.turns
    ));
    r.notes.push(format!(
        "{} evidence entries name no turn of their conversation and are ignored; {} questions of categories 1-4 \
         are left without evidence and count as misses.",
        st.unresolved_evidence.len(),
        st.questions_without_evidence
    ));
    r.notes.push(format!(
        "granularity {:?}; turns indexed as {:?}, embedded as {:?}; hybrid vector weight {}; re-rank {:?}; \
         keyword calibration {} (BM25 score worth 0.5); sessions ranked by {:?}",
        opts.granularity,
        opts.index_text,
        opts.embed_text,
        opts.params.vector_weight,
        opts.params.rerank,
        clawhdf5_memory::search::KEYWORD_HALF,
        opts.session_agg
    ));
    let mut head = Grid {
        title: format!("Headline: categories 1-4 (n = {n_head}), BM25 beside every mode"),
        header: headline_header("mode", turn),
        rows: Vec::new(),
    };
    head.header.push("ms/query".into());
    for (m, a) in modes.iter().zip(accs) {
        let mut row = vec![m.as_str().to_string()];
        row.extend(headline_cells(a, turn));
        row.push(format!(
            "{:.2}",
            1000.0 * a.seconds / a.queries.max(1) as f64
        ));
        head.rows.push(row);
    }
    r.grids.push(head);
    if opts.sweep {
        let mut g = Grid {
            title: "Sweep: hybrid vector weight (keyword weight = 1 - w), categories 1-4".into(),
            header: headline_header("w", turn),
            rows: Vec::new(),
        };
        for (w, a) in SWEEP_WEIGHTS.iter().zip(&sweeps.weight) {
            let mut row = vec![format!("{w:.1}")];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: format!(
                "Sweep: re-rank weights at vector weight {} (neighbour, session), categories 1-4",
                opts.params.vector_weight
            ),
            header: headline_header("neighbour / session", turn),
            rows: Vec::new(),
        };
        for (ni, nb) in SWEEP_NEIGHBOUR.iter().enumerate() {
            for (si, ss) in SWEEP_SESSION.iter().enumerate() {
                let mut row = vec![format!("{nb:.1} / {ss:.1}")];
                row.extend(headline_cells(
                    &sweeps.rerank[ni * SWEEP_SESSION.len() + si],
                    turn,
                ));
                g.rows.push(row);
            }
        }
        r.grids.push(g);
        let mut g = Grid {
            title: "Before / after: min-max fusion per query (before) vs calibrated absolute fusion (now), \
                    same candidates and weights, categories 1-4"
                .into(),
            header: headline_header("fusion", turn),
            rows: Vec::new(),
        };
        let labels = [
            "hybrid, min-max (before)",
            "hybrid-rerank, min-max (before)",
            "hybrid, calibrated (now)",
            "hybrid-rerank, calibrated (now)",
        ];
        for (l, a) in labels.iter().zip(&sweeps.fusion) {
            let mut row = vec![l.to_string()];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: "Sweep: re-rank bonus for the turns of the speaker the question is about (the one it names, \
                    or the first-named of two it does not join; other weights at their defaults), categories 1-4"
                .into(),
            header: headline_header("speaker bonus", turn),
            rows: Vec::new(),
        };
        for (w, a) in SWEEP_SPEAKER.iter().zip(&sweeps.speaker) {
            let mut row = vec![format!("{w:.2}")];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: "Sweep: re-rank recency bonus for questions about the present (other weights at their \
                    defaults), categories 1-4"
                .into(),
            header: headline_header("recency", turn),
            rows: Vec::new(),
        };
        for (w, a) in SWEEP_RECENCY.iter().zip(&sweeps.recency) {
            let mut row = vec![format!("{w:.2}")];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: "Sweep: re-rank bonus for turns that date what they say, on \"when\" / \"how long\" questions \
                    (other weights at their defaults), categories 1-4"
                .into(),
            header: headline_header("dated bonus", turn),
            rows: Vec::new(),
        };
        for (w, a) in SWEEP_DATED.iter().zip(&sweeps.dated) {
            let mut row = vec![format!("{w:.2}")];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: "Sweep: re-rank bonus for turns of a day the question names (\"on 9 May, 2023\"): said on it or \
                    telling of it (\"yesterday\"), other weights at their defaults, categories 1-4"
                .into(),
            header: headline_header("day bonus", turn),
            rows: Vec::new(),
        };
        for (w, a) in SWEEP_DAY.iter().zip(&sweeps.day) {
            let mut row = vec![format!("{w:.2}")];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: "Sweep: re-rank bonus for turns of a month the question names (\"in October 2023\"): said in it \
                    or telling of it (\"last week\"), other weights at their defaults, categories 1-4"
                .into(),
            header: headline_header("month bonus", turn),
            rows: Vec::new(),
        };
        for (w, a) in SWEEP_MONTH.iter().zip(&sweeps.month) {
            let mut row = vec![format!("{w:.2}")];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: format!(
                "Sweep: pseudo-relevance feedback from the first pass's best turns ({SWEEP_FB_TERMS} expansion \
                 words; turns / expansion-word weight / Rocchio weight), other weights at their defaults, \
                 categories 1-4"
            ),
            header: headline_header("turns / words / Rocchio", turn),
            rows: Vec::new(),
        };
        for (fi, docs) in SWEEP_FB_DOCS.iter().enumerate() {
            for (wi, (kw, vw)) in SWEEP_FB_WEIGHTS.iter().enumerate() {
                if *docs == 0 && wi > 0 {
                    continue;
                }
                let label = if *docs == 0 {
                    "off".to_string()
                } else {
                    format!("{docs} / {kw:.2} / {vw:.2}")
                };
                let mut row = vec![label];
                row.extend(headline_cells(
                    &sweeps.feedback[fi * SWEEP_FB_WEIGHTS.len() + wi],
                    turn,
                ));
                g.rows.push(row);
            }
        }
        r.grids.push(g);
        let mut g = Grid {
            title: format!(
                "Sweep: keyword calibration scaled to the query (BM25 score worth 0.5 = share x the query's \
                 attainable BM25, sum of idf x (k1 + 1)), plain hybrid at vector weight {}, categories 1-4; \
                 fixed {} beside it",
                opts.params.vector_weight,
                clawhdf5_memory::search::KEYWORD_HALF
            ),
            header: headline_header("share of the ceiling", turn),
            rows: Vec::new(),
        };
        if let Some(a) = SWEEP_WEIGHTS
            .iter()
            .position(|w| (w - opts.params.vector_weight).abs() < 1e-6)
            .map(|i| &sweeps.weight[i])
        {
            let mut row = vec![format!("fixed {}", clawhdf5_memory::search::KEYWORD_HALF)];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        for (c, a) in SWEEP_CEILING.iter().zip(&sweeps.ceiling) {
            let mut row = vec![format!("{c:.2}")];
            row.extend(headline_cells(a, turn));
            g.rows.push(row);
        }
        r.grids.push(g);
        let mut g = Grid {
            title: "Sweep: keyword calibration (BM25 score worth 0.5) x hybrid vector weight, categories 1-4; \
                    cells: turn R_any@1 / turn R_any@5 / session R_any@5 (hybrid, no re-rank)"
                .into(),
            header: std::iter::once("half \\ w".to_string())
                .chain(SWEEP_CAL_W.iter().map(|w| format!("w = {w:.1}")))
                .collect(),
            rows: Vec::new(),
        };
        for (hi, h) in SWEEP_HALF.iter().enumerate() {
            let mut row = vec![format!("{h}")];
            for wi in 0..SWEEP_CAL_W.len() {
                row.push(r5_pair(&sweeps.calibration[hi * SWEEP_CAL_W.len() + wi]));
            }
            g.rows.push(row);
        }
        r.grids.push(g);
        if turn {
            let mut g = Grid {
                title: format!(
                    "Sweep: session aggregation of the hybrid-rerank turn ranking (session score = best turn + \
                     share x sum of its next top-1 turns, session cosine weight {}, session-doc weight {}), \
                     categories 1-4; cells: session R_any@5 / session MRR",
                    opts.session_agg.vector, opts.session_agg.docs
                ),
                header: std::iter::once("share \\ top".to_string())
                    .chain(SWEEP_TOP.iter().map(|t| format!("top = {t}")))
                    .collect(),
                rows: Vec::new(),
            };
            for (si, sh) in SWEEP_SHARE.iter().enumerate() {
                let mut row = vec![format!("{sh:.2}")];
                for ti in 0..SWEEP_TOP.len() {
                    let a = &sweeps.aggregation[si * SWEEP_TOP.len() + ti];
                    row.push(match a.session.summary(HEADLINE).filter(|s| s.n > 0) {
                        Some(s) => format!("{} / {}", f3(s.recall_any[&5]), f3(s.mrr)),
                        None => "-".into(),
                    });
                }
                g.rows.push(row);
            }
            r.grids.push(g);
            let mut g = Grid {
                title: format!(
                    "Sweep: weight of the session documents' own hybrid score (share {}, top {}, session cosine \
                     weight {}), categories 1-4",
                    opts.session_agg.share, opts.session_agg.top, opts.session_agg.vector
                ),
                header: headline_header("session-doc weight", turn),
                rows: Vec::new(),
            };
            for (d, a) in SWEEP_DOCS.iter().zip(&sweeps.docs) {
                let mut row = vec![format!("{d:.2}")];
                row.extend(headline_cells(a, turn));
                g.rows.push(row);
            }
            r.grids.push(g);
            let mut g = Grid {
                title: format!(
                    "Sweep: weight of each session's best question-turn cosine (over all its turns) added to its \
                     best hybrid-rerank turn score (share {}, top {}, session-doc weight {}), categories 1-4",
                    opts.session_agg.share, opts.session_agg.top, opts.session_agg.docs
                ),
                header: headline_header("session cosine weight", turn),
                rows: Vec::new(),
            };
            for (v, a) in SWEEP_SESSION_VECTOR.iter().zip(&sweeps.session_vector) {
                let mut row = vec![format!("{v:.2}")];
                row.extend(headline_cells(a, turn));
                g.rows.push(row);
            }
            r.grids.push(g);
            let mut g = Grid {
                title: "Sweep: session cosine weight x session-document weight, categories 1-4; cells: session \
                        R_any@1 / session R_any@5 / session MRR"
                    .into(),
                header: std::iter::once("cosine \\ session doc".to_string())
                    .chain(SWEEP_DOCS_BY_VECTOR.iter().map(|d| format!("doc = {d:.2}")))
                    .collect(),
                rows: Vec::new(),
            };
            for (vi, v) in SWEEP_SESSION_VECTOR.iter().enumerate() {
                let mut row = vec![format!("{v:.2}")];
                for di in 0..SWEEP_DOCS_BY_VECTOR.len() {
                    let a = &sweeps.vector_docs[vi * SWEEP_DOCS_BY_VECTOR.len() + di];
                    row.push(match a.session.summary(HEADLINE).filter(|s| s.n > 0) {
                        Some(s) => format!(
                            "{} / {} / {}",
                            f3(s.recall_any[&1]),
                            f3(s.recall_any[&5]),
                            f3(s.mrr)
                        ),
                        None => "-".into(),
                    });
                }
                g.rows.push(row);
            }
            r.grids.push(g);
        }
    }
    for (m, a) in modes.iter().zip(accs) {
        if turn {
            r.tables.push(Table {
                title: format!("{} — turn level (evidence dia_ids)", m.as_str()),
                ks: LOCOMO_KS.to_vec(),
                ndcg: false,
                rows: a.turn.summaries(),
            });
        }
        r.tables.push(Table {
            title: format!(
                "{} — session level ({})",
                m.as_str(),
                if turn {
                    "turn rankings rolled up"
                } else {
                    "session documents"
                }
            ),
            ks: LOCOMO_KS.to_vec(),
            ndcg: false,
            rows: a.session.summaries(),
        });
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_subsample() {
        assert_eq!(strided(10, Some(3)), vec![0, 4, 8]);
        assert_eq!(strided(4, Some(10)), vec![0, 1, 2, 3]);
        assert_eq!(strided(4, None).len(), 4);
        assert!(strided(4, Some(0)).is_empty());
    }

    #[test]
    fn session_aggregation() {
        let ranked: Vec<(String, f32)> =
            [("D1:1", 1.0), ("D2:1", 0.9), ("D2:2", 0.8), ("D2:3", 0.7)]
                .iter()
                .map(|(k, s)| (k.to_string(), *s))
                .collect();
        let of = |t: &str| t.split_once(':').map(|(s, _)| s.to_string());
        let none = SessionEvidence::default();
        let plain = SessionAgg {
            share: 0.0,
            top: 3,
            vector: 0.0,
            docs: 0.0,
        };
        assert_eq!(
            aggregate_sessions(&ranked, of, &none, plain),
            vec!["D1", "D2"]
        );
        // D2: 0.9 + 0.2 * (0.8 + 0.7) = 1.2 > 1.0
        let agg = SessionAgg {
            share: 0.2,
            top: 3,
            vector: 0.0,
            docs: 0.0,
        };
        assert_eq!(
            aggregate_sessions(&ranked, of, &none, agg),
            vec!["D2", "D1"]
        );
        // Only the next best turn counts: 0.9 + 0.1 * 0.8 < 1.0
        let agg = SessionAgg {
            share: 0.1,
            top: 2,
            vector: 0.0,
            docs: 0.0,
        };
        assert_eq!(
            aggregate_sessions(&ranked, of, &none, agg),
            vec!["D1", "D2"]
        );
    }

    #[test]
    fn session_cosine_evidence_lifts_a_session() {
        let ranked: Vec<(String, f32)> = [("D1:1", 1.0), ("D2:1", 0.9), ("D1:2", 0.5)]
            .iter()
            .map(|(k, s)| (k.to_string(), *s))
            .collect();
        let of = |t: &str| t.split_once(':').map(|(s, _)| s.to_string());
        let ev = SessionEvidence {
            docs: Default::default(),
            vectors: [("D1", 0.1), ("D2", 0.5), ("D3", 0.9)]
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        };
        let off = SessionAgg {
            vector: 0.0,
            ..SessionAgg::default()
        };
        assert_eq!(aggregate_sessions(&ranked, of, &ev, off), vec!["D1", "D2"]);
        // D2: 0.9 + 0.5 * 0.5 = 1.15 > D1: 1.0 + 0.5 * 0.1 = 1.05; D3 has no ranked turn: 0 + 0.45.
        let on = SessionAgg {
            vector: 0.5,
            ..SessionAgg::default()
        };
        assert_eq!(
            aggregate_sessions(&ranked, of, &ev, on),
            vec!["D2", "D1", "D3"]
        );
    }

    #[test]
    fn best_cosine_per_session() {
        let doc = |key: &str, session: &str| Doc {
            key: key.into(),
            session: session.into(),
            text: String::new(),
            embed_text: String::new(),
            event_time: None,
            speaker: None,
            dated: false,
            told: None,
        };
        let turns = vec![doc("D1:1", "D1"), doc("D1:2", "D1"), doc("D2:1", "D2")];
        let vecs = vec![vec![1.0, 0.0], vec![0.6, 0.8], vec![0.0, 2.0]];
        let best = session_best_cosine(&[0.0, 1.0], &turns, &vecs);
        assert!((best["D1"] - 0.8).abs() < 1e-6);
        // Not normalised on input: the cosine is still 1.
        assert!((best["D2"] - 1.0).abs() < 1e-6);
        // A zero vector matches nothing rather than dividing by zero.
        let zero = session_best_cosine(&[0.0, 0.0], &turns, &vecs);
        assert_eq!(zero["D1"], 0.0);
    }

    #[test]
    fn category_groups() {
        assert_eq!(groups_of(1), vec!["cat 1-4", "cat 1 multi-hop"]);
        assert_eq!(groups_of(5), vec!["cat 5 adversarial (not in cat 1-4)"]);
    }
}
