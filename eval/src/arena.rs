//! MemoryArena: a deterministic synthetic benchmark of one user's life over 50 weekly sessions of about 20 turns
//! (personal facts, food, music, travel, work schedule, hobbies), with facts that change over time, and 35
//! questions of four types: single-session, multi-session, temporal and knowledge-update.
//!
//! A question is a hit at k when one of its gold turns is among the top k results; knowledge-update questions
//! have only the newest statement of the fact as gold, so an outdated answer ranked first is a miss at 1.

use std::collections::HashSet;
use std::time::Instant;

use serde::Serialize;

use crate::dates::day_label;
use crate::embeddings::EmbeddingService;
use crate::error::{EvalError, Result};
use crate::metrics::{score_ranking, Accumulator};
use crate::report::{f3, Grid, Report, Table};
use crate::retrieval::{Doc, Index, Mode, Params, Query};

/// Seed of the published figures.
pub const DEFAULT_SEED: u64 = 2024;
/// Sessions generated.
pub const SESSIONS: usize = 50;
/// Cut-offs reported.
pub const KS: &[usize] = &[1, 5, 10];

/// Question types, in report order.
pub const TYPES: [&str; 4] = [
    "single-session",
    "multi-session",
    "temporal",
    "knowledge-update",
];

/// One generated turn.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArenaTurn {
    /// `S{session}:T{turn}`.
    pub key: String,
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub text: String,
    /// When (ms since epoch).
    pub time: i64,
}

/// One generated question.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArenaQuestion {
    /// One of [`TYPES`].
    pub kind: String,
    /// The question.
    pub question: String,
    /// Keys of the turns that answer it.
    pub gold: Vec<String>,
}

/// The whole generated benchmark.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Arena {
    /// Generator seed.
    pub seed: u64,
    /// Sessions of turns, oldest first.
    pub sessions: Vec<Vec<ArenaTurn>>,
    /// The questions.
    pub questions: Vec<ArenaQuestion>,
}

/// splitmix64: small, fast and fully determined by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// A fact the user states in a session: (session, text).
type Fact = (usize, &'static str);

/// Facts stated once (single-session questions).
const SINGLE: [(Fact, &str); 10] = [
    (
        (4, "We adopted a grey kitten last week and named her Miso."),
        "What is the name of my cat?",
    ),
    (
        (
            7,
            "My sister Priya's birthday is on the 14th of September, I should plan something.",
        ),
        "When is my sister's birthday?",
    ),
    (
        (
            11,
            "Reminder for myself: I'm allergic to peanuts, so skip any satay recipes.",
        ),
        "What food allergy do I have?",
    ),
    (
        (
            16,
            "Honestly Thai food is my favourite cuisine, green curry above all.",
        ),
        "Which cuisine do I like best?",
    ),
    (
        (
            19,
            "I signed up for a Tuesday evening pottery class at the community studio.",
        ),
        "What class did I sign up for at the community studio?",
    ),
    (
        (
            22,
            "My book club is reading The Overstory by Richard Powers this month.",
        ),
        "Which novel is my book club reading?",
    ),
    (
        (
            25,
            "I booked a dentist appointment with Dr. Alvarez for a cleaning.",
        ),
        "Who is my dentist?",
    ),
    (
        (
            29,
            "I grew up in Duluth, Minnesota, right by Lake Superior.",
        ),
        "Where did I grow up as a child?",
    ),
    (
        (
            36,
            "My goal for next spring is to finish a marathon in under four hours.",
        ),
        "What is my marathon time goal?",
    ),
    (
        (
            43,
            "My license plate number is KJX 4471, writing it down so I stop forgetting.",
        ),
        "What is my license plate number?",
    ),
];

/// Families of related facts across sessions (multi-session questions, and temporal ones by month).
const MULTI: [(&str, &str, [Fact; 3]); 8] = [
    (
        "Which countries did I travel to this year?",
        "Where did I travel to in",
        [
            (9, "I just got back from my trip to Japan, Kyoto's temples were stunning."),
            (21, "Back from a week of travel in Portugal, Lisbon was hilly but lovely."),
            (38, "Our Mexico trip was great, Oaxaca had the best mole I've ever had."),
        ],
    ),
    (
        "What dishes have I cooked for friends?",
        "What did I cook for my friends in",
        [
            (3, "I cooked a big vegetable lasagna for my friends on Saturday night."),
            (26, "I made seafood paella for friends yesterday, it took three hours to cook."),
            (47, "Cooked a Thai green curry for my friends and nobody found it too spicy."),
        ],
    ),
    (
        "Which concerts or live music events have I been to?",
        "Which concert did I go to in",
        [
            (13, "Saw Fleet Foxes live in concert, the harmonies were unreal."),
            (35, "Spent the weekend at a jazz festival downtown, live music all day."),
            (46, "Went to a Phoebe Bridgers concert with Jess, I cried during Motion Sickness."),
        ],
    ),
    (
        "What races have I run?",
        "Which race did I run in",
        [
            (17, "Ran my first 10k race this morning, finished in 52 minutes."),
            (32, "I ran a trail race through the forest, 15 km of mud."),
            (44, "Finished the city half marathon race today in 1:58!"),
        ],
    ),
    (
        "What home improvement projects have I done?",
        "Which home improvement project did I do in",
        [
            (15, "This weekend's home project: I painted the bedroom a sage green."),
            (27, "I built a new bookshelf for the living room, my first real woodworking project at home."),
            (39, "Home improvement update: we retiled the bathroom floor ourselves."),
        ],
    ),
    (
        "Who came to visit me?",
        "Who visited me in",
        [
            (20, "My parents came to visit for a few days and we hiked Forest Park."),
            (33, "My college roommate Jess came to visit and stayed the weekend."),
            (48, "My brother Arjun visited with his kids, the house was chaos in the best way."),
        ],
    ),
    (
        "What courses or lessons have I taken?",
        "Which lessons did I start in",
        [
            (6, "Started online Spanish lessons, three times a week before work."),
            (30, "I began ukulele lessons with a teacher from the music shop."),
            (41, "Signed up for a photography course, we shoot on film."),
        ],
    ),
    (
        "Which movies have I watched in the cinema?",
        "What movie did I see in the cinema in",
        [
            (8, "Watched Dune Part Two in the cinema, the sound was incredible."),
            (24, "Saw Inside Out 2 at the cinema with my niece."),
            (40, "Went to the cinema for Wicked, the songs are stuck in my head."),
        ],
    ),
];

/// Facts that change: (question, old statement, new statement).
const UPDATES: [(&str, Fact, Fact); 9] = [
    (
        "Where do I work now?",
        (
            2,
            "I started a new job as a data analyst at Northwind Traders.",
        ),
        (
            23,
            "Big news: I left Northwind, I now work as a product manager at Contoso Labs.",
        ),
    ),
    (
        "Which city do I live in now?",
        (
            5,
            "We live in Portland, in a small apartment near the river.",
        ),
        (
            31,
            "We finally moved, we live in Denver now and the mountains are right there.",
        ),
    ),
    (
        "Who is my favourite musician these days?",
        (
            10,
            "My favourite musician right now is Fleet Foxes' Robin Pecknold.",
        ),
        (
            37,
            "These days my favourite musician is Phoebe Bridgers, I play her albums nonstop.",
        ),
    ),
    (
        "What is my current work schedule?",
        (12, "My work schedule is Monday to Thursday, eight to six."),
        (
            42,
            "My work schedule changed: Tuesday to Saturday, starting at noon.",
        ),
    ),
    (
        "What diet do I follow now?",
        (14, "I've decided to follow a vegetarian diet from now on."),
        (
            45,
            "Diet update: I eat fish again, so I'm pescatarian rather than vegetarian.",
        ),
    ),
    (
        "Which day do I currently go climbing?",
        (18, "I go climbing at the bouldering gym every Wednesday."),
        (
            34,
            "I moved my climbing to Fridays because Wednesdays got too busy at the gym.",
        ),
    ),
    (
        "What car do I drive now?",
        (1, "I drive an old Honda Civic, it has 200k miles on it."),
        (43, "Traded in the Civic, I now drive a used Tesla Model 3."),
    ),
    (
        "What is my usual coffee order now?",
        (9, "My usual coffee order is an oat milk flat white."),
        (36, "New usual coffee order: cold brew, no milk, no sugar."),
    ),
    (
        "Which phone do I use now?",
        (16, "I use a Pixel 6 phone, the camera is still great."),
        (
            46,
            "I replaced my Pixel, I now use an iPhone 15 as my phone.",
        ),
    ),
];

/// Temporal questions: (family index in MULTI, member index).
const TEMPORAL: [(usize, usize); 8] = [
    (0, 1),
    (1, 0),
    (2, 2),
    (3, 1),
    (4, 2),
    (5, 1),
    (6, 0),
    (7, 1),
];

const FILLER_USER: [&str; 16] = [
    "Can you suggest a {x} for a rainy {d}?",
    "What's a good way to organise my {x} this {d}?",
    "I need help writing an email to a colleague about the {x}.",
    "Any tips for staying focused while working on the {x}?",
    "Could you explain how a {x} works in simple terms?",
    "Remind me to look into the {x} later this week.",
    "What should I pack for a short weekend away in {w} weather?",
    "Give me three quick dinner ideas with {x}.",
    "How long should I rest between workouts if I feel {w}?",
    "Help me plan my errands for {d}: groceries, bank and the {x}.",
    "What's the difference between a {x} and a budget plan?",
    "Recommend a podcast about {x}.",
    "I feel a bit {w} today, any ideas to cheer up?",
    "Summarise the pros and cons of a {x} for me.",
    "Draft a polite reply declining the {x} invitation.",
    "Quick question about spreadsheets: how do I sum a {x} column?",
];

const FILLER_ASSISTANT: [&str; 8] = [
    "Sure! Here are a few ideas you could try, starting with the simplest one.",
    "Good question. In short, it depends on your goals, but a steady routine helps most.",
    "Here's a draft you can adapt: keep it short, friendly and specific.",
    "I'd break it into small steps and tackle the hardest part first.",
    "That sounds reasonable. You might also set a reminder so it doesn't slip.",
    "Here is a quick summary with the main trade-offs laid out.",
    "Happy to help. Let me know if you want a more detailed version.",
    "A simple approach works well here; start small and adjust as you go.",
];

const FILL_X: [&str; 16] = [
    "board game",
    "garden",
    "project deadline",
    "budget",
    "neural network",
    "history",
    "calendar",
    "quarterly report",
    "tofu",
    "science fiction",
    "team offsite",
    "savings account",
    "tax return",
    "birthday party",
    "lentils",
    "pivot table",
];
const FILL_D: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const FILL_W: [&str; 5] = ["cold", "tired", "sunny", "restless", "windy"];

/// Start of session `s`: weekly from Sunday 7 January 2024, 18:00 UTC.
fn session_start(s: usize) -> i64 {
    const JAN7_2024_18H: i64 = 1_704_650_400_000;
    JAN7_2024_18H + s as i64 * 7 * 86_400_000
}

/// Generate the benchmark; the same seed always gives the same sessions and questions.
pub fn generate(seed: u64) -> Arena {
    let mut rng = Rng(seed);
    // Facts per session, in the order they are stated.
    let mut facts: Vec<Vec<&'static str>> = vec![Vec::new(); SESSIONS];
    for ((s, t), _) in SINGLE {
        facts[s].push(t);
    }
    for (_, _, fam) in MULTI {
        for (s, t) in fam {
            facts[s].push(t);
        }
    }
    for (_, (s1, t1), (s2, t2)) in UPDATES {
        facts[s1].push(t1);
        facts[s2].push(t2);
    }
    let mut sessions = Vec::with_capacity(SESSIONS);
    let mut key_of = std::collections::HashMap::new();
    for (s, session_facts) in facts.iter().enumerate() {
        let n_turns = 18 + (rng.next() % 5) as usize; // 18..=22
                                                      // Facts go on user turns (the even ones), spread over the session: at most three per session, so the
                                                      // slots 2..=16 never collide and always fit in 18 turns.
        let slots: Vec<usize> = (0..session_facts.len())
            .map(|i| 2 * (1 + 3 * i + (rng.next() % 2) as usize))
            .collect();
        let mut turns = Vec::with_capacity(n_turns);
        for i in 0..n_turns {
            let key = format!("S{}:T{}", s + 1, i + 1);
            let time = session_start(s) + i as i64 * 60_000;
            let text = if let Some(f) = slots.iter().position(|&x| x == i) {
                key_of.insert(session_facts[f], key.clone());
                session_facts[f].to_string()
            } else if i % 2 == 0 {
                rng.pick(&FILLER_USER)
                    .replace("{x}", rng.pick(&FILL_X))
                    .replace("{d}", rng.pick(&FILL_D))
                    .replace("{w}", rng.pick(&FILL_W))
            } else {
                rng.pick(&FILLER_ASSISTANT).to_string()
            };
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            turns.push(ArenaTurn {
                key,
                role: role.into(),
                text,
                time,
            });
        }
        sessions.push(turns);
    }
    let key = |t: &str| key_of.get(t).cloned().unwrap_or_default();
    let mut questions = Vec::new();
    for ((_, t), q) in SINGLE {
        questions.push(ArenaQuestion {
            kind: TYPES[0].into(),
            question: q.into(),
            gold: vec![key(t)],
        });
    }
    for (q, _, fam) in MULTI {
        questions.push(ArenaQuestion {
            kind: TYPES[1].into(),
            question: q.into(),
            gold: fam.iter().map(|(_, t)| key(t)).collect(),
        });
    }
    for (f, m) in TEMPORAL {
        let (_, prefix, fam) = MULTI[f];
        let (s, t) = fam[m];
        let label = day_label(session_start(s));
        let month_year: Vec<&str> = label.split(' ').skip(1).collect();
        questions.push(ArenaQuestion {
            kind: TYPES[2].into(),
            question: format!("{prefix} {}?", month_year.join(" ")),
            gold: vec![key(t)],
        });
    }
    for (q, _, (_, t)) in UPDATES {
        questions.push(ArenaQuestion {
            kind: TYPES[3].into(),
            question: q.into(),
            gold: vec![key(t)],
        });
    }
    Arena {
        seed,
        sessions,
        questions,
    }
}

/// The benchmark's turns as documents.
pub fn docs(a: &Arena) -> Vec<Doc> {
    a.sessions
        .iter()
        .enumerate()
        .flat_map(|(s, turns)| {
            turns.iter().map(move |t| Doc {
                key: t.key.clone(),
                session: format!("S{}", s + 1),
                text: t.text.clone(),
                embed_text: t.text.clone(),
                event_time: Some(t.time),
                speaker: None,
                dated: crate::dates::mentions_time(&t.text),
                told: crate::dates::told_window(&t.text, t.time),
            })
        })
        .collect()
}

/// Run every mode over the benchmark and report Hit@1/5/10, MRR and latency per question type.
pub fn run(
    a: &Arena,
    modes: &[Mode],
    params: Params,
    sweep: bool,
    embedder: Option<&mut EmbeddingService>,
) -> Result<Report> {
    let mut modes = modes.to_vec();
    if !modes.contains(&Mode::Bm25) {
        modes.insert(0, Mode::Bm25);
    }
    let needs = modes.iter().any(|m| m.needs_embeddings()) || sweep;
    let docs = docs(a);
    let (dv, qv) = match embedder {
        Some(e) if needs => {
            let texts: Vec<String> = docs.iter().map(|d| d.embed_text.clone()).collect();
            let dv = e.embed(&texts, "arena turns")?;
            let qt: Vec<String> = a.questions.iter().map(|q| q.question.clone()).collect();
            (Some(dv), Some(e.embed(&qt, "arena questions")?))
        }
        None if needs => {
            return Err(EvalError::InvalidInput(
                "the vector, hybrid, rrf and hybrid-rerank modes need the embedding model".into(),
            ))
        }
        _ => (None, None),
    };
    let stem = Index::build(&docs, dv.as_deref(), true, params)?;
    let plain = Index::build(&docs, dv.as_deref(), false, params)?;
    let turns = docs.len();
    let mut r = Report::new(
        "MemoryArena (synthetic)",
        serde_json::json!({"seed": a.seed, "modes": modes, "params": params}),
        serde_json::json!({"sessions": a.sessions.len(), "turns": turns, "questions": a.questions.len()}),
    );
    r.notes.push(format!(
        "{} sessions, {turns} turns, {} questions (seed {}); one store holds every turn; a hit needs a gold turn \
         in the top k; knowledge-update gold is only the newest statement.",
        a.sessions.len(),
        a.questions.len(),
        a.seed
    ));
    let mut head = Grid {
        title: "Headline".into(),
        header: vec![
            "mode".into(),
            "Hit@1".into(),
            "Hit@5".into(),
            "Hit@10".into(),
            "MRR".into(),
            "knowledge-update Hit@1".into(),
            "mean ms/query".into(),
        ],
        rows: Vec::new(),
    };
    for &mode in &modes {
        let idx = if mode.stemming() { &stem } else { &plain };
        let mut acc = Accumulator::new(KS);
        acc.declare("all");
        for t in TYPES {
            acc.declare(t);
        }
        let mut ms: std::collections::BTreeMap<String, (f64, usize)> = Default::default();
        for (qi, q) in a.questions.iter().enumerate() {
            let query = Query {
                text: q.question.clone(),
                embedding: qv.as_ref().map(|v| v[qi].clone()),
                before: None,
            };
            let t0 = Instant::now();
            let ranked = idx.rank(&query, mode, 10)?;
            let el = t0.elapsed().as_secs_f64() * 1000.0;
            for g in ["all", q.kind.as_str()] {
                let e = ms.entry(g.to_string()).or_default();
                e.0 += el;
                e.1 += 1;
            }
            let keys: Vec<String> = ranked
                .iter()
                .map(|&(d, _)| idx.key(d).to_string())
                .collect();
            let gold: HashSet<String> = q.gold.iter().cloned().collect();
            acc.add(&["all", q.kind.as_str()], &score_ranking(&keys, &gold, KS));
        }
        let mean_ms = |g: &str| ms.get(g).map_or(0.0, |(t, n)| t / (*n).max(1) as f64);
        if let Some(mut row) = headline_row(mode.as_str().into(), &acc) {
            row.push(format!("{:.3}", mean_ms("all")));
            head.rows.push(row);
        }
        let mut lat = Grid {
            title: format!("{} — mean latency per type", mode.as_str()),
            header: vec!["type".into(), "n".into(), "mean ms/query".into()],
            rows: Vec::new(),
        };
        for g in std::iter::once("all").chain(TYPES) {
            lat.rows.push(vec![
                g.into(),
                ms.get(g).map_or(0, |x| x.1).to_string(),
                format!("{:.3}", mean_ms(g)),
            ]);
        }
        r.tables.push(Table {
            title: format!("{} — Hit@k (= recall_any@k) per type", mode.as_str()),
            ks: KS.to_vec(),
            ndcg: false,
            rows: acc.summaries(),
        });
        r.grids.push(lat);
    }
    r.grids.insert(0, head);
    if sweep {
        r.grids
            .insert(1, recency_sweep(a, &stem, qv.as_deref(), params)?);
        r.grids
            .insert(2, calibration_sweep(a, &stem, qv.as_deref())?);
        r.grids
            .insert(3, ceiling_sweep(a, &stem, qv.as_deref(), params)?);
        r.grids
            .insert(4, fusion_before_after(a, &stem, qv.as_deref(), params)?);
    }
    Ok(r)
}

/// Keyword calibration constants (BM25 score worth 0.5) and vector weights tried by `--sweep`.
const SWEEP_HALF: [f32; 6] = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
const SWEEP_CAL_W: [f32; 5] = [0.2, 0.3, 0.4, 0.5, 0.6];

/// Plain hybrid fusion at several keyword calibrations and vector weights: Hit@1 / MRR per cell.
fn calibration_sweep(a: &Arena, idx: &Index, qv: Option<&[Vec<f32>]>) -> Result<Grid> {
    let qv =
        qv.ok_or_else(|| EvalError::InvalidInput("the sweep needs query embeddings".into()))?;
    let mut g = Grid {
        title: "Sweep: keyword calibration (BM25 score worth 0.5) x vector weight, plain hybrid; cells: \
                Hit@1 / Hit@10 / MRR"
            .into(),
        header: std::iter::once("half \\ w".to_string())
            .chain(SWEEP_CAL_W.iter().map(|w| format!("w = {w:.1}")))
            .collect(),
        rows: Vec::new(),
    };
    let lists = stage_lists_all(a, idx, qv)?;
    for h in SWEEP_HALF {
        let mut row = vec![format!("{h}")];
        for w in SWEEP_CAL_W {
            let mut acc = Accumulator::new(KS);
            for (q, l) in a.questions.iter().zip(&lists) {
                let keys: Vec<String> = idx
                    .fuse_calibrated_at(l, w, h)
                    .iter()
                    .map(|&(d, _)| idx.key(d).to_string())
                    .collect();
                let gold: HashSet<String> = q.gold.iter().cloned().collect();
                acc.add(&["all"], &score_ranking(&keys, &gold, KS));
            }
            row.push(match acc.summary("all") {
                Some(s) => format!(
                    "{} / {} / {}",
                    f3(s.recall_any[&1]),
                    f3(s.recall_any[&10]),
                    f3(s.mrr)
                ),
                None => "-".into(),
            });
        }
        g.rows.push(row);
    }
    Ok(g)
}

/// Plain hybrid with the keyword calibration scaled to each query's attainable BM25 (the score worth 0.5 =
/// share x the ceiling), beside the store's fixed constant, at the default vector weight.
fn ceiling_sweep(a: &Arena, idx: &Index, qv: Option<&[Vec<f32>]>, params: Params) -> Result<Grid> {
    let qv =
        qv.ok_or_else(|| EvalError::InvalidInput("the sweep needs query embeddings".into()))?;
    let w = params.vector_weight;
    let mut g = Grid {
        title: format!(
            "Sweep: keyword calibration scaled to the query (BM25 score worth 0.5 = share x the query's \
             attainable BM25), plain hybrid at vector weight {w}; fixed {} beside it",
            crate::retrieval::KEYWORD_HALF_DEFAULT
        ),
        header: vec![
            "share of the ceiling".into(),
            "Hit@1".into(),
            "Hit@5".into(),
            "Hit@10".into(),
            "MRR".into(),
            "knowledge-update Hit@1".into(),
        ],
        rows: Vec::new(),
    };
    let lists = stage_lists_all(a, idx, qv)?;
    let shares: Vec<Option<f32>> = std::iter::once(None)
        .chain(crate::locomo_eval::SWEEP_CEILING.iter().map(|c| Some(*c)))
        .collect();
    for share in shares {
        let mut acc = Accumulator::new(KS);
        for (q, l) in a.questions.iter().zip(&lists) {
            let ranked = match share {
                Some(c) => idx.fuse_ceiling_at(l, w, c),
                None => idx.fuse_at(l, w),
            };
            let keys: Vec<String> = ranked
                .iter()
                .map(|&(d, _)| idx.key(d).to_string())
                .collect();
            let gold: HashSet<String> = q.gold.iter().cloned().collect();
            acc.add(&["all", q.kind.as_str()], &score_ranking(&keys, &gold, KS));
        }
        let label = share.map_or(
            format!("fixed {}", crate::retrieval::KEYWORD_HALF_DEFAULT),
            |c| format!("{c:.2}"),
        );
        g.rows.extend(headline_row(label, &acc));
    }
    Ok(g)
}

/// hybrid and hybrid-rerank with the store's former min-max fusion (before) and its calibrated fusion (now).
fn fusion_before_after(
    a: &Arena,
    idx: &Index,
    qv: Option<&[Vec<f32>]>,
    params: Params,
) -> Result<Grid> {
    let qv =
        qv.ok_or_else(|| EvalError::InvalidInput("the sweep needs query embeddings".into()))?;
    let mut g = Grid {
        title:
            "Before / after: min-max fusion per query (before) vs calibrated absolute fusion (now)"
                .into(),
        header: vec![
            "fusion".into(),
            "Hit@1".into(),
            "Hit@5".into(),
            "Hit@10".into(),
            "MRR".into(),
            "knowledge-update Hit@1".into(),
        ],
        rows: Vec::new(),
    };
    let labels = [
        "hybrid, min-max (before)",
        "hybrid-rerank, min-max (before)",
        "hybrid, calibrated (now)",
        "hybrid-rerank, calibrated (now)",
    ];
    let mut accs: Vec<Accumulator> = (0..4).map(|_| Accumulator::new(KS)).collect();
    for (qi, q) in a.questions.iter().enumerate() {
        let query = Query {
            text: q.question.clone(),
            embedding: Some(qv[qi].clone()),
            before: None,
        };
        let lists = idx.stage_lists(&query, params.rerank.depth)?;
        let gold: HashSet<String> = q.gold.iter().cloned().collect();
        let old = idx.fuse_minmax_at(&lists, params.vector_weight);
        let new = idx.fuse_at(&lists, params.vector_weight);
        for (i, f) in [old, new].iter().enumerate() {
            for (j, ranked) in [
                f.clone(),
                idx.rerank_with_feedback(&query, f, &params.rerank)?,
            ]
            .iter()
            .enumerate()
            {
                let keys: Vec<String> = ranked
                    .iter()
                    .take(10)
                    .map(|&(d, _)| idx.key(d).to_string())
                    .collect();
                accs[2 * i + j].add(&["all", q.kind.as_str()], &score_ranking(&keys, &gold, KS));
            }
        }
    }
    for (l, acc) in labels.iter().zip(&accs) {
        g.rows.extend(headline_row(l.to_string(), acc));
    }
    Ok(g)
}

/// Re-rank recency weights tried by `--sweep`.
const SWEEP_RECENCY: [f32; 8] = [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0];

/// hybrid-rerank at several recency weights (other weights as given).
fn recency_sweep(a: &Arena, idx: &Index, qv: Option<&[Vec<f32>]>, params: Params) -> Result<Grid> {
    let qv =
        qv.ok_or_else(|| EvalError::InvalidInput("the sweep needs query embeddings".into()))?;
    let mut g = Grid {
        title: "Sweep: hybrid-rerank recency weight".into(),
        header: vec![
            "recency".into(),
            "Hit@1".into(),
            "Hit@5".into(),
            "Hit@10".into(),
            "MRR".into(),
            "knowledge-update Hit@1".into(),
        ],
        rows: Vec::new(),
    };
    for w in SWEEP_RECENCY {
        let p = crate::retrieval::Rerank {
            recency: w,
            ..params.rerank
        };
        let mut acc = Accumulator::new(KS);
        for (qi, q) in a.questions.iter().enumerate() {
            let query = Query {
                text: q.question.clone(),
                embedding: Some(qv[qi].clone()),
                before: None,
            };
            let fused = idx.rank(&query, Mode::Hybrid, p.depth)?;
            let ranked = idx.rerank_with_feedback(&query, &fused, &p)?;
            let keys: Vec<String> = ranked
                .iter()
                .take(10)
                .map(|&(d, _)| idx.key(d).to_string())
                .collect();
            let gold: HashSet<String> = q.gold.iter().cloned().collect();
            acc.add(&["all", q.kind.as_str()], &score_ranking(&keys, &gold, KS));
        }
        g.rows.extend(headline_row(format!("{w:.2}"), &acc));
    }
    Ok(g)
}

/// Every question's per-stage candidate lists (top 10 of each stage), for the sweeps that re-fuse them.
fn stage_lists_all(
    a: &Arena,
    idx: &Index,
    qv: &[Vec<f32>],
) -> Result<Vec<crate::retrieval::StageLists>> {
    a.questions
        .iter()
        .zip(qv)
        .map(|(q, v)| {
            idx.stage_lists(
                &Query {
                    text: q.question.clone(),
                    embedding: Some(v.clone()),
                    before: None,
                },
                10,
            )
        })
        .collect()
}

/// `label`, then Hit@1 / Hit@5 / Hit@10 / MRR over all questions and knowledge-update Hit@1; `None` when a
/// group has no questions.
fn headline_row(label: String, acc: &Accumulator) -> Option<Vec<String>> {
    let (all, ku) = (acc.summary("all")?, acc.summary(TYPES[3])?);
    Some(vec![
        label,
        f3(all.recall_any[&1]),
        f3(all.recall_any[&5]),
        f3(all.recall_any[&10]),
        f3(all.mrr),
        f3(ku.recall_any[&1]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_well_formed() {
        let a = generate(DEFAULT_SEED);
        assert_eq!(a, generate(DEFAULT_SEED));
        assert_eq!(a.sessions.len(), 50);
        assert_eq!(a.questions.len(), 35);
        let turns: usize = a.sessions.iter().map(Vec::len).sum();
        assert!((900..=1100).contains(&turns), "{turns} turns");
        let keys: HashSet<&str> = a
            .sessions
            .iter()
            .flatten()
            .map(|t| t.key.as_str())
            .collect();
        assert_eq!(keys.len(), turns, "keys are unique");
        for q in &a.questions {
            assert!(!q.gold.is_empty(), "{}", q.question);
            for g in &q.gold {
                assert!(keys.contains(g.as_str()), "{} -> {g:?}", q.question);
            }
        }
        // Every stated fact made it into the sessions.
        let texts: HashSet<&str> = a
            .sessions
            .iter()
            .flatten()
            .map(|t| t.text.as_str())
            .collect();
        for (_, (_, old), (_, new)) in UPDATES {
            assert!(texts.contains(old) && texts.contains(new));
        }
        let counts: Vec<usize> = TYPES
            .iter()
            .map(|t| a.questions.iter().filter(|q| q.kind == *t).count())
            .collect();
        assert_eq!(counts, vec![10, 8, 8, 9]);
        assert_ne!(a, generate(7), "another seed changes the filler");
    }

    #[test]
    fn temporal_questions_name_the_gold_month() {
        let a = generate(DEFAULT_SEED);
        let by_key: std::collections::HashMap<&str, i64> = a
            .sessions
            .iter()
            .flatten()
            .map(|t| (t.key.as_str(), t.time))
            .collect();
        for q in a.questions.iter().filter(|q| q.kind == "temporal") {
            let (from, to) = crate::dates::month_window(&q.question).expect("month in question");
            let t = by_key[q.gold[0].as_str()];
            assert!(t >= from && t < to, "{}", q.question);
        }
    }

    #[test]
    fn bm25_run_reports_every_type() {
        let a = generate(DEFAULT_SEED);
        let r = run(&a, &[Mode::Bm25], Params::default(), false, None).unwrap();
        let t = &r.tables[0];
        let labels: Vec<&str> = t.rows.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(
            labels,
            vec![
                "all",
                "single-session",
                "multi-session",
                "temporal",
                "knowledge-update"
            ]
        );
        assert_eq!(t.rows[0].1.n, 35);
        assert!(
            run(&a, &[Mode::Hybrid], Params::default(), false, None).is_err(),
            "hybrid needs a model"
        );
    }
}
