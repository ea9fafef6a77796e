//! Running LongMemEval: one store per question holding its haystack (with the sessions' dates as event times),
//! the question asked at its `question_date`, scored with the official metrics at session and turn level.

use std::collections::HashSet;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::json;

use crate::embeddings::EmbeddingService;
use crate::error::{EvalError, Result};
use crate::locomo_eval::{strided, Granularity};
use crate::longmemeval::{self as lme, LmeQuestion, Roles};
use crate::metrics::{roll_up, score_ranking, Accumulator, LONGMEMEVAL_KS};
use crate::report::{f3, Grid, Report, Table};
use crate::retrieval::{Index, Mode, Params, Query};

/// Settings of a LongMemEval run.
#[derive(Clone, Debug, Serialize)]
pub struct LmeOptions {
    /// Modes to run (BM25 is always added).
    pub modes: Vec<Mode>,
    /// Session or turn documents.
    pub granularity: Granularity,
    /// Evaluate only this many questions (evenly strided).
    pub limit: Option<usize>,
    /// Which turns are indexed.
    pub roles: Roles,
    /// Fusion and re-ranking settings.
    pub params: Params,
    /// Also sweep the hybrid vector weight.
    pub sweep: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Name of the input file (printed with the results).
    pub source: String,
}

/// Label of all questions.
pub const ALL: &str = "all";
/// Label of the non-abstention questions.
pub const NON_ABS: &str = "non-abstention";
/// Label of the non-abstention questions with an evidence turn said by the user.
pub const USER_EVIDENCE: &str = "non-abstention, user-side evidence";

struct Accs {
    turn: Accumulator,
    session: Accumulator,
}

impl Accs {
    fn new() -> Self {
        let mut turn = Accumulator::new(LONGMEMEVAL_KS);
        let mut session = Accumulator::new(LONGMEMEVAL_KS);
        for a in [&mut turn, &mut session] {
            for g in [ALL, NON_ABS, USER_EVIDENCE] {
                a.declare(g);
            }
        }
        Accs { turn, session }
    }
}

const SWEEP_WEIGHTS: [f32; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

fn groups(q: &LmeQuestion) -> Vec<String> {
    let mut g = vec![ALL.to_string()];
    if q.is_abstention() {
        g.push("type: abstention".into());
    } else {
        g.push(NON_ABS.into());
        if q.has_user_evidence() {
            g.push(USER_EVIDENCE.into());
        }
        g.push(format!("type: {}", q.question_type));
    }
    g
}

/// Run LongMemEval over `data`.
pub fn run(
    data: &[LmeQuestion],
    opts: &LmeOptions,
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
    let picked = strided(data.len(), opts.limit);
    let mut accs: Vec<Accs> = modes.iter().map(|_| Accs::new()).collect();
    let mut sweep: Vec<Accs> = SWEEP_WEIGHTS.iter().map(|_| Accs::new()).collect();
    let bar = if opts.progress {
        let b = ProgressBar::new(picked.len() as u64);
        if let Ok(s) = ProgressStyle::with_template("questions {bar:30} {pos}/{len}, eta {eta}") {
            b.set_style(s);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let turn_level = opts.granularity == Granularity::Turn;
    let max_k = *LONGMEMEVAL_KS.last().unwrap_or(&50);
    for &qi in &picked {
        let q = &data[qi];
        let docs = if turn_level {
            lme::turn_docs(q, opts.roles)
        } else {
            lme::session_docs(q, opts.roles)
        };
        let (dv, qv) = match embedder.as_deref_mut() {
            Some(e) if needs_vectors => {
                let texts: Vec<String> = docs.iter().map(|d| d.embed_text.clone()).collect();
                let dv = e.embed(&texts, &q.question_id)?;
                let qv = e.embed(std::slice::from_ref(&q.question), "question")?;
                (Some(dv), qv.into_iter().next())
            }
            _ => (None, None),
        };
        let stem = if modes.iter().any(|m| m.stemming()) || opts.sweep {
            Some(Index::build(&docs, dv.as_deref(), true, opts.params)?)
        } else {
            None
        };
        let plain = Index::build(&docs, dv.as_deref(), false, opts.params)?;
        let before = crate::dates::parse_longmemeval(&q.question_date).map(|t| t + 1);
        let query = Query {
            text: q.question.clone(),
            embedding: qv,
            before,
        };
        let gold_sessions: HashSet<String> = q.answer_session_ids.iter().cloned().collect();
        let gold_turns = lme::gold_turns(q, opts.roles);
        let g = groups(q);
        let g: Vec<&str> = g.iter().map(String::as_str).collect();
        // Depth: every document at session level (haystacks are ~50 sessions); enough turns for 50 sessions.
        let depth = if turn_level {
            4 * max_k
        } else {
            docs.len().max(max_k)
        };
        let score_keys = |a: &mut Accs, keys: Vec<String>| {
            if turn_level {
                a.turn
                    .add(&g, &score_ranking(&keys, &gold_turns, LONGMEMEVAL_KS));
                let rolled = roll_up(&keys, |t| lme::session_of_turn(t).map(str::to_string));
                a.session
                    .add(&g, &score_ranking(&rolled, &gold_sessions, LONGMEMEVAL_KS));
            } else {
                a.session
                    .add(&g, &score_ranking(&keys, &gold_sessions, LONGMEMEVAL_KS));
            }
        };
        for (mi, &mode) in modes.iter().enumerate() {
            let idx = if mode.stemming() {
                stem.as_ref().unwrap_or(&plain)
            } else {
                &plain
            };
            let ranked = idx.rank(&query, mode, depth)?;
            let keys = ranked
                .iter()
                .map(|&(d, _)| idx.key(d).to_string())
                .collect();
            score_keys(&mut accs[mi], keys);
        }
        if opts.sweep {
            let idx = stem.as_ref().unwrap_or(&plain);
            let lists = idx.stage_lists(&query, depth)?;
            for (wi, &w) in SWEEP_WEIGHTS.iter().enumerate() {
                let keys = idx
                    .fuse_at(&lists, w)
                    .iter()
                    .map(|&(d, _)| idx.key(d).to_string())
                    .collect();
                score_keys(&mut sweep[wi], keys);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    report(data, &picked, opts, &modes, &accs, &sweep)
}

fn report(
    data: &[LmeQuestion],
    picked: &[usize],
    opts: &LmeOptions,
    modes: &[Mode],
    accs: &[Accs],
    sweep: &[Accs],
) -> Result<Report> {
    let qs: Vec<&LmeQuestion> = picked.iter().map(|&i| &data[i]).collect();
    let n = qs.len();
    let density = qs.iter().map(|q| q.evidence_density()).sum::<f64>() / n.max(1) as f64;
    let sessions = qs
        .iter()
        .map(|q| q.haystack_session_ids.len())
        .sum::<usize>() as f64
        / n.max(1) as f64;
    let abs = qs.iter().filter(|q| q.is_abstention()).count();
    let user = qs
        .iter()
        .filter(|q| !q.is_abstention() && q.has_user_evidence())
        .count();
    let dataset = json!({
        "file": opts.source,
        "questions_in_file": data.len(),
        "questions_evaluated": n,
        "abstention": abs,
        "non_abstention": n - abs,
        "user_side_evidence": user,
        "mean_haystack_sessions": sessions,
        "evidence_session_density": density,
    });
    let settings =
        serde_json::to_value(opts).map_err(|e| EvalError::InvalidInput(e.to_string()))?;
    let mut r = Report::new(
        &format!("LongMemEval retrieval ({})", opts.source),
        settings,
        dataset,
    );
    r.notes.push(format!(
        "{n} of {} questions evaluated: {} non-abstention, {user} of them with user-side evidence, {abs} abstention.",
        data.len(),
        n - abs
    ));
    r.notes.push(format!(
        "measured evidence-session density {:.3} (evidence sessions / haystack sessions, mean {:.1} sessions per \
         haystack){}",
        density,
        sessions,
        if density > 0.5 {
            " — this is an oracle-style file, not longmemeval_s/_m"
        } else {
            ""
        }
    ));
    r.notes.push(format!(
        "granularity {:?}, indexed roles {:?}, hybrid vector weight {}; queries only see sessions dated before \
         question_date.",
        opts.granularity, opts.roles, opts.params.vector_weight
    ));
    let turn = opts.granularity == Granularity::Turn;
    let mut head = Grid {
        title: "Headline (session level, over all evaluated questions / non-abstention / user-side evidence)".into(),
        header: vec![
            "mode".into(),
            "R_any@5 all".into(),
            "R_any@5 non-abs".into(),
            "R_any@5 user-ev".into(),
            "R_all@5 non-abs".into(),
            "nDCG@10 non-abs".into(),
            "MRR non-abs".into(),
        ],
        rows: Vec::new(),
    };
    let cell = |a: &Accumulator, g: &str, f: &dyn Fn(&crate::metrics::Summary) -> f64| {
        a.summary(g)
            .filter(|s| s.n > 0)
            .map_or("-".to_string(), |s| f3(f(&s)))
    };
    let push_row = |grid: &mut Grid, label: String, a: &Accs| {
        grid.rows.push(vec![
            label,
            cell(&a.session, ALL, &|s| s.recall_any[&5]),
            cell(&a.session, NON_ABS, &|s| s.recall_any[&5]),
            cell(&a.session, USER_EVIDENCE, &|s| s.recall_any[&5]),
            cell(&a.session, NON_ABS, &|s| s.recall_all[&5]),
            cell(&a.session, NON_ABS, &|s| s.ndcg_any[&10]),
            cell(&a.session, NON_ABS, &|s| s.mrr),
        ]);
    };
    for (m, a) in modes.iter().zip(accs) {
        push_row(&mut head, m.as_str().to_string(), a);
    }
    let sweep_grid = opts.sweep.then(|| {
        let mut g = Grid {
            title: "Sweep: hybrid vector weight (session level)".into(),
            header: head.header.clone(),
            rows: Vec::new(),
        };
        g.header[0] = "w".into();
        for (w, a) in SWEEP_WEIGHTS.iter().zip(sweep) {
            push_row(&mut g, format!("{w:.1}"), a);
        }
        g
    });
    r.grids.push(head);
    r.grids.extend(sweep_grid);
    for (m, a) in modes.iter().zip(accs) {
        if turn {
            r.tables.push(Table {
                title: format!("{} — turn level", m.as_str()),
                ks: LONGMEMEVAL_KS.to_vec(),
                ndcg: true,
                rows: a.turn.summaries(),
            });
        }
        r.tables.push(Table {
            title: format!(
                "{} — session level{}",
                m.as_str(),
                if turn {
                    " (turn rankings rolled up)"
                } else {
                    ""
                }
            ),
            ks: LONGMEMEVAL_KS.to_vec(),
            ndcg: true,
            rows: a.session.summaries(),
        });
    }
    Ok(r)
}
