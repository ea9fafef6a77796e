//! Running LoCoMo: one store per conversation, every question asked in every mode, evidence recall scored at
//! turn level and at session level (turn rankings rolled up to distinct sessions).

use std::collections::HashSet;
use std::time::Instant;

use serde::Serialize;

use crate::embeddings::EmbeddingService;
use crate::error::{EvalError, Result};
use crate::locomo::{self, category_name, Conversation, TurnText};
use crate::metrics::{roll_up, score_ranking, Accumulator, LOCOMO_KS};
use crate::report::{f3, Grid, Report, Table};
use crate::retrieval::{Index, Mode, Params, Query, Rerank};

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
    /// Turn granularity: weight of a BM25 ranking of whole-session documents fused (rank-reciprocally) with
    /// the rolled-up turn ranking at session level; 0 leaves the roll-up alone.
    pub session_fusion: f32,
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
            embed_text: TurnText {
                speaker: true,
                date: false,
                neighbours: 0,
                repeat: 1,
            },
            params: Params::default(),
            sweep: false,
            depth: 100,
            session_fusion: 0.0,
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

const SWEEP_FUSION: [f32; 5] = [0.0, 0.25, 0.5, 1.0, 2.0];
/// `k` of the rank-reciprocal fusion of session rankings.
const SESSION_RRF_K: f32 = 10.0;

/// Fuse a rolled-up session ranking with a session-document ranking: score = 1/(k+r1) + w/(k+r2).
pub fn fuse_sessions(rolled: &[String], docs: &[String], w: f32) -> Vec<String> {
    if w <= 0.0 {
        return rolled.to_vec();
    }
    let mut score: std::collections::HashMap<&str, f32> = std::collections::HashMap::new();
    for (r, s) in rolled.iter().enumerate() {
        *score.entry(s.as_str()).or_default() += 1.0 / (SESSION_RRF_K + r as f32 + 1.0);
    }
    for (r, s) in docs.iter().enumerate() {
        *score.entry(s.as_str()).or_default() += w / (SESSION_RRF_K + r as f32 + 1.0);
    }
    let mut v: Vec<(&str, f32)> = score.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    v.into_iter().map(|(s, _)| s.to_string()).collect()
}

const SWEEP_WEIGHTS: [f32; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const SWEEP_NEIGHBOUR: [f32; 4] = [0.0, 0.1, 0.2, 0.4];
const SWEEP_SESSION: [f32; 4] = [0.0, 0.1, 0.2, 0.4];

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
    let mut sweep_w: Vec<ModeAcc> = SWEEP_WEIGHTS.iter().map(|_| ModeAcc::new()).collect();
    let mut sweep_r: Vec<ModeAcc> = (0..SWEEP_NEIGHBOUR.len() * SWEEP_SESSION.len())
        .map(|_| ModeAcc::new())
        .collect();
    let mut sweep_f: Vec<ModeAcc> = SWEEP_FUSION.iter().map(|_| ModeAcc::new()).collect();
    let mut asked = 0usize;
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
        let session_index = if turn_level && (opts.session_fusion > 0.0 || opts.sweep) {
            Some(Index::build(
                &locomo::session_docs(conv),
                None,
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
            let session_docs_ranked: Vec<String> = match &session_index {
                Some(si) => {
                    let q = Query {
                        embedding: None,
                        ..query.clone()
                    };
                    si.rank(&q, Mode::Bm25Stem, si.len())?
                        .iter()
                        .map(|&(d, _)| si.key(d).to_string())
                        .collect()
                }
                None => Vec::new(),
            };
            let score_keys_fused = |acc: &mut ModeAcc, keys: Vec<String>, fusion: f32| match opts
                .granularity
            {
                Granularity::Turn => {
                    acc.turn
                        .add(&groups, &score_ranking(&keys, &gold_turns, LOCOMO_KS));
                    let rolled =
                        fuse_sessions(&roll_up(&keys, session_of), &session_docs_ranked, fusion);
                    acc.session
                        .add(&groups, &score_ranking(&rolled, &gold_sessions, LOCOMO_KS));
                }
                Granularity::Session => {
                    acc.session
                        .add(&groups, &score_ranking(&keys, &gold_sessions, LOCOMO_KS));
                }
            };
            let score_keys = |acc: &mut ModeAcc, keys: Vec<String>| {
                score_keys_fused(acc, keys, opts.session_fusion)
            };
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
                let keys = ranked
                    .iter()
                    .map(|&(d, _)| idx.key(d).to_string())
                    .collect();
                score_keys(&mut accs[mi], keys);
            }
            if opts.sweep {
                let idx = stem_index.as_ref().unwrap_or(&plain_index);
                let lists = idx.stage_lists(&query, opts.depth)?;
                for (wi, &w) in SWEEP_WEIGHTS.iter().enumerate() {
                    let keys = idx
                        .fuse_at(&lists, w)
                        .iter()
                        .map(|&(d, _)| idx.key(d).to_string())
                        .collect();
                    score_keys(&mut sweep_w[wi], keys);
                }
                let deep = idx.stage_lists(&query, opts.params.rerank.depth.max(opts.depth))?;
                let fused = idx.fuse_at(&deep, opts.params.vector_weight);
                for (ni, &nb) in SWEEP_NEIGHBOUR.iter().enumerate() {
                    for (si, &ss) in SWEEP_SESSION.iter().enumerate() {
                        let p = Rerank {
                            neighbour: nb,
                            session: ss,
                            ..opts.params.rerank
                        };
                        let mut r = idx.rerank(&query, &fused, &p);
                        r.truncate(opts.depth);
                        let keys = r.iter().map(|&(d, _)| idx.key(d).to_string()).collect();
                        score_keys(&mut sweep_r[ni * SWEEP_SESSION.len() + si], keys);
                    }
                }
                if turn_level {
                    let mut r = idx.rerank(&query, &fused, &opts.params.rerank);
                    r.truncate(opts.depth);
                    let keys: Vec<String> =
                        r.iter().map(|&(d, _)| idx.key(d).to_string()).collect();
                    for (fi, &f) in SWEEP_FUSION.iter().enumerate() {
                        score_keys_fused(&mut sweep_f[fi], keys.clone(), f);
                    }
                }
            }
        }
    }
    build_report(
        convs,
        opts,
        &modes,
        &accs,
        &[&sweep_w, &sweep_r, &sweep_f],
        asked,
    )
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
    sweeps: &[&[ModeAcc]; 3],
    asked: usize,
) -> Result<Report> {
    let [sweep_w, sweep_r, sweep_f] = *sweeps;
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
         session level fused with session documents at weight {} (0 = plain roll-up)",
        opts.granularity,
        opts.index_text,
        opts.embed_text,
        opts.params.vector_weight,
        opts.params.rerank,
        opts.session_fusion
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
        for (w, a) in SWEEP_WEIGHTS.iter().zip(sweep_w) {
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
                    &sweep_r[ni * SWEEP_SESSION.len() + si],
                    turn,
                ));
                g.rows.push(row);
            }
        }
        r.grids.push(g);
        if turn {
            let mut g = Grid {
                title: "Sweep: session level, hybrid-rerank roll-up fused with a BM25 ranking of session documents \
                        (weight of the session documents; 0 = roll-up alone), categories 1-4"
                    .into(),
                header: headline_header("session-doc weight", turn),
                rows: Vec::new(),
            };
            for (f, a) in SWEEP_FUSION.iter().zip(sweep_f) {
                let mut row = vec![format!("{f:.2}")];
                row.extend(headline_cells(a, turn));
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
    fn session_fusion() {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rolled = v(&["D1", "D2", "D3"]);
        assert_eq!(fuse_sessions(&rolled, &v(&["D3", "D2", "D1"]), 0.0), rolled);
        assert_eq!(
            fuse_sessions(&rolled, &v(&["D3", "D2", "D1"]), 0.5)[0],
            "D1"
        );
        assert_eq!(
            fuse_sessions(&rolled, &v(&["D3", "D2", "D1"]), 2.0)[0],
            "D3"
        );
        assert_eq!(fuse_sessions(&v(&["D1"]), &v(&["D2"]), 1.0).len(), 2);
    }

    #[test]
    fn category_groups() {
        assert_eq!(groups_of(1), vec!["cat 1-4", "cat 1 multi-hop"]);
        assert_eq!(groups_of(5), vec!["cat 5 adversarial (not in cat 1-4)"]);
    }
}
