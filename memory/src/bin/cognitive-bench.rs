//! Figures for the cognitive layer: decision-gate ns/op, 2-hop BFS over 1K entities, consolidation cycle time
//! at 1K/10K/100K records, and the re-ranker's effect on LoCoMo (Hit@1/Hit@5) and on a synthetic set of
//! conflicting facts (how often the newer fact comes first), each in keyword (BM25) mode and in hybrid mode
//! (BM25 + all-MiniLM-L6-v2 embeddings computed locally, cached on disk between runs).
//!
//! Usage: cognitive-bench [--only gate,bfs,consolidation,locomo,conflicts,locomo-hybrid,conflicts-hybrid]
//!                        [--sizes 1000,10000,100000] [--locomo DIR] [--conversations N]
//!                        [--model DIR] [--embed-cache FILE] [--smoke]
//!
//! `--smoke` shrinks every section (fewer timing iterations, one LoCoMo conversation) so a test can run the
//! binary end to end; its figures are not for quoting.

use std::error::Error;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clawhdf5_embed::{Embedder, EmbeddingCache, LocalMiniLm};
use clawhdf5_memory::cognitive::confidence::ConfidenceConfig;
use clawhdf5_memory::cognitive::graph::Graph;
use clawhdf5_memory::cognitive::temporal::parse_conversation_date;
use clawhdf5_memory::cognitive::{gate, AgentMemory, CognitiveConfig};
use clawhdf5_memory::{Durability, NewMemory, SearchMode, SearchQuery, Store, StoreOptions};

type Res<T> = Result<T, Box<dyn Error>>;

const DAY: i64 = 86_400_000;

/// Every section, in the order they run.
const SECTIONS: &[&str] = &[
    "gate",
    "bfs",
    "consolidation",
    "locomo",
    "conflicts",
    "locomo-hybrid",
    "conflicts-hybrid",
];

struct Args {
    only: Vec<String>,
    sizes: Vec<usize>,
    locomo: PathBuf,
    conversations: Option<usize>,
    model: Option<PathBuf>,
    embed_cache: Option<PathBuf>,
    smoke: bool,
}

fn parse_args() -> Res<Args> {
    let mut a = Args {
        only: SECTIONS.iter().map(|s| s.to_string()).collect(),
        sizes: vec![1_000, 10_000, 100_000],
        locomo: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/datasets/locomo"
        )),
        conversations: None,
        model: None,
        embed_cache: None,
        smoke: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--smoke" {
            a.smoke = true;
            continue;
        }
        let val = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--only" => {
                a.only = val.split(',').map(String::from).collect();
                if let Some(bad) = a.only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                    return Err(format!(
                        "unknown section {bad:?} (sections: {})",
                        SECTIONS.join(",")
                    )
                    .into());
                }
            }
            "--conversations" => {
                a.conversations = Some(
                    val.parse::<usize>()
                        .map_err(|e| format!("bad --conversations {val:?}: {e}"))?,
                )
            }
            "--model" => a.model = Some(PathBuf::from(val)),
            "--embed-cache" => a.embed_cache = Some(PathBuf::from(val)),
            "--sizes" => {
                a.sizes = val
                    .split(',')
                    .map(|s| {
                        s.parse::<usize>()
                            .map_err(|e| format!("bad size {s:?}: {e}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--locomo" => a.locomo = PathBuf::from(val),
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    Ok(a)
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn bench_gate(smoke: bool) {
    let turns = [
        "ok",
        "Thanks!",
        "yes please",
        "👍",
        "I moved to Berlin last month",
        "What's my sister's name?",
        "got it.",
        "Can you remind me what we decided about the Kubernetes migration plan?",
    ];
    let iters = if smoke { 20_000 } else { 2_000_000usize };
    let t = Instant::now();
    let mut n = 0usize;
    for i in 0..iters {
        if gate::should_save(black_box(turns[i % turns.len()]), black_box("Noted.")) {
            n += 1;
        }
    }
    let save_ns = t.elapsed().as_nanos() as f64 / iters as f64;
    let t = Instant::now();
    for i in 0..iters {
        if gate::should_search(black_box(turns[i % turns.len()])) {
            n += 1;
        }
    }
    let search_ns = t.elapsed().as_nanos() as f64 / iters as f64;
    black_box(n);
    println!("## Decision gate\n");
    println!("| call | ns/op (mean over {iters} calls, 8 mixed turns) |\n|---|---|");
    println!("| should_save(user, assistant) | {save_ns:.1} |");
    println!("| should_search(user) | {search_ns:.1} |\n");
}

/// `count` distinct synthetic names, no two within the resolver's edit-distance tolerance.
fn synthetic_names(count: usize, rng: &mut Rng) -> Vec<String> {
    let cons = [
        "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
    ];
    let vows = ["a", "e", "i", "o", "u"];
    let mut out: Vec<String> = Vec::with_capacity(count);
    while out.len() < count {
        let mut name = String::new();
        for _ in 0..3 {
            name.push_str(cons[rng.below(cons.len() as u64) as usize]);
            name.push_str(vows[rng.below(vows.len() as u64) as usize]);
        }
        let lower = name.clone();
        if out.iter().any(|o| {
            clawhdf5_memory::cognitive::graph::resolve::same_entity(&o.to_lowercase(), &lower)
        }) {
            continue;
        }
        let mut c = name.chars();
        let cap: String = c
            .next()
            .map(|f| f.to_ascii_uppercase())
            .into_iter()
            .chain(c)
            .collect();
        out.push(cap);
    }
    out
}

fn bench_bfs(smoke: bool) {
    let mut g = Graph::new();
    let mut rng = Rng(42);
    let names = synthetic_names(1000, &mut rng);
    // 1,000 people; each record links two of them (related_to + co_occurs): a ring plus 3,000 random links.
    for i in 0..1000usize {
        g.ingest(
            i as u64 + 1,
            &format!("So {} met {}", names[i], names[(i + 1) % 1000]),
            0,
        );
    }
    for k in 0..3000u64 {
        let a = rng.below(1000) as usize;
        let b = rng.below(1000) as usize;
        g.ingest(1001 + k, &format!("So {} met {}", names[a], names[b]), 0);
    }
    let n = g.entities().len();
    let t = Instant::now();
    let csr_edges = g.adjacency().targets.len();
    let build_us = t.elapsed().as_secs_f64() * 1e6;
    let iters = if smoke { 2_000 } else { 200_000usize };
    let mut reached = 0usize;
    let t = Instant::now();
    for i in 0..iters {
        reached += g.bfs(black_box((i % n) as u32), 2).len();
    }
    let bfs_us = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
    let t = Instant::now();
    let spread_iters = if smoke { 500 } else { 50_000usize };
    for i in 0..spread_iters {
        black_box(g.spread(&[(i % n) as u32], 2, 0.5, 0.05));
    }
    let spread_us = t.elapsed().as_secs_f64() * 1e6 / spread_iters as f64;
    println!("## Knowledge graph\n");
    println!("{n} entities, {csr_edges} adjacency entries (CSR, built once after the last change in {build_us:.0} µs).\n");
    println!("| operation | µs/op |\n|---|---|");
    println!(
        "| 2-hop BFS (mean {:.0} entities reached) | {bfs_us:.2} |",
        reached as f64 / iters as f64
    );
    println!("| spreading activation, 2 steps | {spread_us:.2} |\n");
}

fn bench_consolidation(sizes: &[usize]) -> Res<()> {
    println!("## Consolidation\n");
    println!("Records saved through `Store` (durability none), wrapped in `AgentMemory`; clock two days after saving,");
    println!("so every Working record is due. `incremental` = one cycle of the default batch (4,096 records examined,");
    println!("their tier/importance changes logged); `full pass` = batch 0 (every record) on a fresh copy.\n");
    println!("| records | incremental cycle (ms) | changes | full pass (ms) | changes |\n|---|---|---|---|---|");
    let dir = tempfile_dir()?;
    for &n in sizes {
        let mut row = Vec::new();
        for full in [false, true] {
            let p = dir.join(format!("cons-{n}-{full}.h5"));
            let opts = StoreOptions {
                durability: Durability::None,
                auto_checkpoint_bytes: u64::MAX,
                // Keyword-only store: never build a vector graph (the store tries to at 20,000 rows).
                config: clawhdf5_memory::StoreConfig {
                    exact_search_threshold: u32::MAX,
                    ..Default::default()
                },
                ..Default::default()
            };
            let mut s = Store::open_with(&p, opts)?;
            let mut rng = Rng(7);
            for i in 0..n {
                let topic = rng.below(500);
                s.save(NewMemory {
                    text: format!(
                        "note {i} about topic {topic}: item {} of list {}",
                        rng.below(50),
                        rng.below(9)
                    ),
                    importance: Some(0.3 + (rng.below(60) as f32) / 100.0),
                    ..Default::default()
                })?;
            }
            let cfg = CognitiveConfig {
                extract_entities: false,
                consolidation: clawhdf5_memory::cognitive::consolidation::ConsolidationConfig {
                    batch: if full { 0 } else { 4096 },
                    ..Default::default()
                },
                ..Default::default()
            };
            let mut m = AgentMemory::from_store(s, cfg)?;
            let now = clawhdf5_memory::now_ms() + 2 * DAY;
            let t = Instant::now();
            let rep = m.consolidate(now)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            row.push((
                ms,
                rep.to_episodic + rep.to_semantic + rep.archived + rep.reweighted,
            ));
            drop(m);
            let _ = std::fs::remove_file(&p);
            let _ = std::fs::remove_file(clawhdf5_memory::wal_path(&p));
        }
        println!(
            "| {n} | {:.1} | {} | {:.1} | {} |",
            row[0].0, row[0].1, row[1].0, row[1].1
        );
    }
    println!();
    Ok(())
}

fn tempfile_dir() -> Res<PathBuf> {
    let d = std::env::temp_dir().join(format!("cognitive-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

struct Turn {
    text: String,
    dia: String,
    session: String,
    time: i64,
}

struct Question {
    text: String,
    evidence: Vec<String>,
    category: i64,
}

fn load_locomo(path: &Path) -> Res<(Vec<Turn>, Vec<Question>, i64)> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let obj = v.as_object().ok_or("a LoCoMo file must hold an object")?;
    let mut turns = Vec::new();
    let mut last = 0i64;
    for n in 1.. {
        let Some(sess) = obj.get(&format!("session_{n}")).and_then(|s| s.as_array()) else {
            break;
        };
        let date = obj
            .get(&format!("session_{n}_date_time"))
            .and_then(|d| d.as_str())
            .and_then(parse_conversation_date)
            .ok_or_else(|| format!("{}: session_{n} has no parsable date", path.display()))?;
        last = last.max(date);
        for t in sess {
            let speaker = t.get("speaker").and_then(|x| x.as_str()).unwrap_or("");
            let text = t.get("text").and_then(|x| x.as_str()).unwrap_or("");
            let dia = t.get("dia_id").and_then(|x| x.as_str()).unwrap_or("");
            if text.trim().is_empty() {
                continue;
            }
            turns.push(Turn {
                text: format!("{speaker}: {text}"),
                dia: dia.to_string(),
                session: format!("session_{n}"),
                time: date,
            });
        }
    }
    let mut qs = Vec::new();
    for q in obj
        .get("qa")
        .and_then(|q| q.as_array())
        .ok_or("no qa list")?
    {
        let text = q
            .get("question")
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_string();
        let category = q.get("category").and_then(|x| x.as_i64()).unwrap_or(0);
        let evidence: Vec<String> = q
            .get("evidence")
            .and_then(|e| e.as_array())
            .map(|e| {
                e.iter()
                    .filter_map(|x| x.as_str())
                    .flat_map(|s| {
                        s.split([';', ' ', ','])
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(String::from)
                            .collect::<Vec<_>>()
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !text.is_empty() && !evidence.is_empty() {
            qs.push(Question {
                text,
                evidence,
                category,
            });
        }
    }
    Ok((turns, qs, last))
}

#[derive(Default, Clone, Copy)]
struct Tally {
    n: usize,
    hit1: usize,
    hit5: usize,
    empty: usize,
}

fn variant_cfg(rerank: bool, updates: bool, confidence: bool) -> CognitiveConfig {
    let mut c = CognitiveConfig::default();
    c.rerank.enabled = rerank;
    c.knowledge_updates = updates;
    if !confidence {
        c.confidence = ConfidenceConfig {
            min_keyword_score: None,
            min_vector_score: None,
            min_relative: 0.0,
        };
    }
    c
}

fn ablate(f: impl Fn(&mut CognitiveConfig)) -> CognitiveConfig {
    let mut c = variant_cfg(true, false, false);
    f(&mut c);
    c
}

/// all-MiniLM-L6-v2 behind an on-disk cache, so a rerun computes no vector twice.
struct Embeddings {
    model: LocalMiniLm,
    cache: EmbeddingCache,
    computed: usize,
}

impl Embeddings {
    fn open(model_dir: Option<&Path>, cache: Option<&Path>) -> Res<Self> {
        let model = LocalMiniLm::load(model_dir, None).map_err(|e| {
            format!(
                "the hybrid sections need the all-MiniLM-L6-v2 model (pass --model DIR, or leave them out with --only): {e}"
            )
        })?;
        let path = match cache {
            Some(p) => p.to_path_buf(),
            None => clawhdf5_embed::default_cache_dir()
                .map(|d| {
                    d.parent()
                        .unwrap_or(&d)
                        .join("cognitive-bench-embeddings.bin")
                })
                .ok_or("no user cache directory: pass --embed-cache FILE")?,
        };
        let cache = EmbeddingCache::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Embeddings {
            model,
            cache,
            computed: 0,
        })
    }

    /// One vector per text, computed only when not cached yet.
    fn embed(&mut self, texts: &[String], label: &str) -> Res<Vec<Vec<f32>>> {
        let id = self.model.model_id().to_string();
        let missing = texts
            .iter()
            .filter(|t| self.cache.get(&id, t).is_none())
            .count();
        if missing > 0 {
            eprintln!("embedding {missing} texts ({label})...");
        }
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(256) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            out.extend(self.cache.embed_with_cache(&self.model, &refs)?);
        }
        self.cache.sync()?;
        self.computed += missing;
        Ok(out)
    }
}

fn mode_name(mode: SearchMode) -> &'static str {
    match mode {
        SearchMode::Keyword => "BM25",
        SearchMode::Hybrid => "hybrid",
        SearchMode::Vector => "vector",
        SearchMode::Rrf => "RRF",
    }
}

/// Store options of the bench's throw-away stores.
fn bench_opts() -> StoreOptions {
    StoreOptions {
        durability: Durability::None,
        auto_checkpoint_bytes: u64::MAX,
        ..Default::default()
    }
}

fn remove_store(p: &Path) {
    let _ = std::fs::remove_file(p);
    let _ = std::fs::remove_file(clawhdf5_memory::wal_path(p));
}

fn bench_locomo(
    dir: &Path,
    mode: SearchMode,
    mut emb: Option<&mut Embeddings>,
    conversations: Option<usize>,
) -> Res<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if let Some(n) = conversations {
        files.truncate(n);
    }
    if files.is_empty() {
        return Err(format!("no LoCoMo json files in {}", dir.display()).into());
    }
    if mode != SearchMode::Keyword && emb.is_none() {
        return Err("a LoCoMo run outside keyword mode needs embeddings".into());
    }
    let label = mode_name(mode);
    // Variants: 0 raw store; AgentMemory with (rerank, knowledge updates, confidence) as named.
    let names = [
        format!("Store::search, {label} (no cognitive layer)"),
        "AgentMemory, re-ranker off".to_string(),
        "AgentMemory, re-ranker on".to_string(),
        "AgentMemory, re-ranker on + knowledge updates".to_string(),
        "AgentMemory, re-ranker on + confidence rejection".to_string(),
        "ablation: re-ranker on, no time-order hint".to_string(),
        "ablation: re-ranker on, no access activation".to_string(),
        "ablation: re-ranker on, no recency".to_string(),
        "ablation: re-ranker on, no conflict rule".to_string(),
    ];
    let variants = [
        None,
        Some(variant_cfg(false, false, false)),
        Some(variant_cfg(true, false, false)),
        Some(variant_cfg(true, true, false)),
        Some(variant_cfg(true, false, true)),
        Some(ablate(|c| c.rerank.order_weight = 0.0)),
        Some(ablate(|c| c.rerank.activation_weight = 0.0)),
        Some(ablate(|c| c.rerank.recency_weight = 0.0)),
        Some(ablate(|c| c.rerank.conflict_margin = 0.0)),
    ];
    let mut tallies = vec![Tally::default(); names.len()];
    let mut cat_tallies = vec![[Tally::default(); 6]; names.len()];
    // Questions whose top answer changed between re-ranker off (1) and on (2): won / lost at rank 1.
    let (mut won, mut lost) = (0usize, 0usize);
    let tmp = tempfile_dir()?;
    let mut total_turns = 0usize;
    for f in &files {
        let (turns, qs, last) = load_locomo(f)?;
        let qs: Vec<Question> = qs.into_iter().filter(|q| q.category != 5).collect();
        total_turns += turns.len();
        let (turn_vecs, q_vecs) = match emb.as_deref_mut() {
            Some(e) if mode != SearchMode::Keyword => {
                let name = f
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                let tv = e.embed(
                    &turns.iter().map(|t| t.text.clone()).collect::<Vec<_>>(),
                    &format!("{name} turns"),
                )?;
                let qv = e.embed(
                    &qs.iter().map(|q| q.text.clone()).collect::<Vec<_>>(),
                    &format!("{name} questions"),
                )?;
                (Some(tv), Some(qv))
            }
            _ => (None, None),
        };
        let mut top1: Vec<Vec<bool>> = vec![Vec::new(); names.len()];
        for (vi, cfg) in variants.iter().enumerate() {
            let p = tmp.join(format!("locomo-{vi}.h5"));
            remove_store(&p);
            let mut m = AgentMemory::open(&p, bench_opts(), cfg.clone().unwrap_or_default())?;
            for (ti, t) in turns.iter().enumerate() {
                m.save(NewMemory {
                    text: t.text.clone(),
                    session: Some(t.session.clone()),
                    event_time: Some(t.time),
                    tags: vec![t.dia.clone()],
                    embedding: turn_vecs.as_ref().map(|v| v[ti].clone()),
                    ..Default::default()
                })?;
            }
            let reference = last + DAY;
            for (qi, q) in qs.iter().enumerate() {
                let mut sq = SearchQuery::new(q.text.clone(), 5);
                sq.mode = mode;
                sq.embedding = q_vecs.as_ref().map(|v| v[qi].clone());
                let ids: Vec<Vec<String>> = if cfg.is_some() {
                    m.search(&sq, reference)?
                        .hits
                        .into_iter()
                        .map(|h| h.record.tags)
                        .collect()
                } else {
                    m.store()
                        .search(&sq)?
                        .into_iter()
                        .map(|h| h.record.tags)
                        .collect()
                };
                let hit_at = |k: usize| {
                    ids.iter()
                        .take(k)
                        .any(|tags| tags.iter().any(|t| q.evidence.contains(t)))
                };
                top1[vi].push(hit_at(1));
                for t in [
                    &mut tallies[vi],
                    &mut cat_tallies[vi][q.category.clamp(0, 5) as usize],
                ] {
                    t.n += 1;
                    t.hit1 += usize::from(hit_at(1));
                    t.hit5 += usize::from(hit_at(5));
                    t.empty += usize::from(ids.is_empty());
                }
            }
            drop(m);
            remove_store(&p);
        }
        for (off, on) in top1[1].iter().zip(&top1[2]) {
            won += usize::from(*on && !*off);
            lost += usize::from(*off && !*on);
        }
    }
    println!("## Re-ranker on LoCoMo, {label} mode\n");
    println!(
        "{} conversations, {total_turns} turns saved as `Speaker: text` with the session date as event time; {} questions",
        files.len(),
        tallies[0].n
    );
    let how = match mode {
        SearchMode::Keyword => "Keyword (BM25) mode".to_string(),
        _ => format!(
            "{} mode (BM25 + all-MiniLM-L6-v2 cosine, the store's default fusion weights)",
            label
        ),
    };
    println!("(categories 1-4; category 5 is adversarial). {how}, k = 5, reference time = last session + 1 day.");
    println!("A hit is a returned turn whose dia_id is in the question's evidence. Without confidence rejection unless named.\n");
    println!("| variant | Hit@1 | Hit@5 | no answer |\n|---|---|---|---|");
    for (i, t) in tallies.iter().enumerate() {
        println!(
            "| {} | {:.3} | {:.3} | {} |",
            names[i],
            t.hit1 as f64 / t.n.max(1) as f64,
            t.hit5 as f64 / t.n.max(1) as f64,
            t.empty
        );
    }
    println!(
        "\nRe-ranker on vs off, question by question: {won} questions gained a rank-1 hit, {lost} lost one.\n"
    );
    println!("Hit@1 by LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):\n");
    println!("| variant | cat 1 | cat 2 | cat 3 | cat 4 |\n|---|---|---|---|---|");
    for (i, c) in cat_tallies.iter().enumerate() {
        let f = |t: &Tally| format!("{:.3} (n={})", t.hit1 as f64 / t.n.max(1) as f64, t.n);
        println!(
            "| {} | {} | {} | {} | {} |",
            names[i],
            f(&c[1]),
            f(&c[2]),
            f(&c[3]),
            f(&c[4])
        );
    }
    println!();
    Ok(())
}

fn bench_conflicts(mode: SearchMode, emb: Option<&mut Embeddings>) -> Res<()> {
    let label = mode_name(mode);
    let people = [
        "Alice", "Bruno", "Chen", "Dana", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas",
    ];
    let things = [
        "color", "food", "band", "book", "city", "sport", "drink", "movie", "game", "flower",
    ];
    let values = [
        "teal", "ramen", "Muse", "Dune", "Oslo", "tennis", "mate", "Alien", "chess", "tulips",
        "amber", "curry", "Blur", "Emma", "Lima", "rowing", "kvass", "Heat", "Go", "irises",
    ];
    let phrasings = [
        "{p}'s favourite {t} is {v}",
        "{p} said the favourite {t} is {v}",
        "{p} mentioned that {p}'s favourite {t} is {v} these days",
    ];
    let render = |tpl: &str, p: &str, t: &str, v: &str| {
        tpl.replace("{p}", p).replace("{t}", t).replace("{v}", v)
    };
    let mut rng = Rng(2024);
    // 100 subjects (person × thing), two conflicting facts each, saved in random order; plus distractors.
    struct Pair {
        query: String,
        newer_text: String,
    }
    let mut saves: Vec<(String, i64)> = Vec::new();
    let mut pairs = Vec::new();
    let base = 1_700_000_000_000i64;
    for p in &people {
        for t in &things {
            let v1 = values[rng.below(values.len() as u64) as usize];
            let mut v2 = values[rng.below(values.len() as u64) as usize];
            if v2 == v1 {
                v2 = values[(values.iter().position(|x| *x == v1).unwrap_or(0) + 1) % values.len()];
            }
            let t1 = base + rng.below(300) as i64 * DAY;
            let t2 = t1 + (1 + rng.below(60) as i64) * DAY;
            let older = render(phrasings[rng.below(3) as usize], p, t, v1);
            let newer = render(phrasings[rng.below(3) as usize], p, t, v2);
            if rng.below(2) == 0 {
                saves.push((older, t1));
                saves.push((newer.clone(), t2));
            } else {
                saves.push((newer.clone(), t2));
                saves.push((older, t1));
            }
            saves.push((
                format!("{p} went to the {t} festival with friends"),
                base + rng.below(360) as i64 * DAY,
            ));
            pairs.push(Pair {
                query: format!("What is {p}'s favourite {t}?"),
                newer_text: newer,
            });
        }
    }
    let reference = base + 400 * DAY;
    let (save_vecs, query_vecs) = match emb {
        Some(e) if mode != SearchMode::Keyword => (
            Some(e.embed(
                &saves.iter().map(|s| s.0.clone()).collect::<Vec<_>>(),
                "conflicting facts",
            )?),
            Some(e.embed(
                &pairs.iter().map(|p| p.query.clone()).collect::<Vec<_>>(),
                "conflict queries",
            )?),
        ),
        Some(_) => (None, None),
        None if mode == SearchMode::Keyword => (None, None),
        None => return Err("the conflicts section outside keyword mode needs embeddings".into()),
    };
    let store_name = format!("Store::search, {label}");
    let names = [
        store_name.as_str(),
        "AgentMemory, re-ranker off",
        "AgentMemory, re-ranker on",
        "ablation: re-ranker on, no conflict rule",
        "ablation: re-ranker on, no recency",
    ];
    let tmp = tempfile_dir()?;
    println!("## Conflicting facts, {label} mode\n");
    println!(
        "{} subjects (10 people × 10 attributes), each stated twice with different values 1-60 days apart, saved in",
        pairs.len()
    );
    println!("random order, plus one distractor per subject; 3 phrasings. Query: \"What is P's favourite T?\" ({label}).");
    println!(
        "Knowledge updates off, so both facts stay retrievable and only the ranking decides.\n"
    );
    println!("| variant | newer fact ranked above the older one |\n|---|---|");
    for (vi, name) in names.iter().enumerate() {
        let p = tmp.join(format!("conflicts-{vi}.h5"));
        remove_store(&p);
        let cfg = match vi {
            3 => ablate(|c| c.rerank.conflict_margin = 0.0),
            4 => ablate(|c| c.rerank.recency_weight = 0.0),
            _ => variant_cfg(vi >= 2, false, false),
        };
        let mut m = AgentMemory::open(&p, bench_opts(), cfg)?;
        for (si, (text, t)) in saves.iter().enumerate() {
            m.save(NewMemory {
                text: text.clone(),
                event_time: Some(*t),
                embedding: save_vecs.as_ref().map(|v| v[si].clone()),
                ..Default::default()
            })?;
        }
        let mut newer_first = 0;
        for (pi, pair) in pairs.iter().enumerate() {
            let mut q = SearchQuery::new(pair.query.clone(), 10);
            q.mode = mode;
            q.embedding = query_vecs.as_ref().map(|v| v[pi].clone());
            let texts: Vec<String> = if vi == 0 {
                m.store()
                    .search(&q)?
                    .into_iter()
                    .map(|h| h.record.text)
                    .collect()
            } else {
                m.search(&q, reference)?
                    .hits
                    .into_iter()
                    .map(|h| h.record.text)
                    .collect()
            };
            // The first of the two facts to appear decides.
            let needle = pair
                .query
                .trim_start_matches("What is ")
                .trim_end_matches('?')
                .to_string();
            let first_fact = texts.iter().find(|t| {
                let (p, rest) = needle.split_once("'s favourite ").unwrap_or(("", ""));
                t.starts_with(p) && t.contains(&format!("favourite {rest} is"))
            });
            if first_fact == Some(&pair.newer_text) {
                newer_first += 1;
            }
        }
        println!("| {name} | {newer_first} / {} |", pairs.len());
        drop(m);
        remove_store(&p);
    }
    println!();
    Ok(())
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let has = |s: &str| args.only.iter().any(|x| x == s);
    let conversations = if args.smoke {
        Some(args.conversations.unwrap_or(1))
    } else {
        args.conversations
    };
    if has("gate") {
        bench_gate(args.smoke);
    }
    if has("bfs") {
        bench_bfs(args.smoke);
    }
    if has("consolidation") {
        let sizes = if args.smoke {
            vec![1_000]
        } else {
            args.sizes.clone()
        };
        bench_consolidation(&sizes)?;
    }
    if has("locomo") {
        bench_locomo(&args.locomo, SearchMode::Keyword, None, conversations)?;
    }
    if has("conflicts") {
        bench_conflicts(SearchMode::Keyword, None)?;
    }
    if has("locomo-hybrid") || has("conflicts-hybrid") {
        let mut emb = Embeddings::open(args.model.as_deref(), args.embed_cache.as_deref())?;
        if has("locomo-hybrid") {
            bench_locomo(
                &args.locomo,
                SearchMode::Hybrid,
                Some(&mut emb),
                conversations,
            )?;
        }
        if has("conflicts-hybrid") {
            bench_conflicts(SearchMode::Hybrid, Some(&mut emb))?;
        }
        eprintln!(
            "{} texts embedded in this run (the rest came from the cache)",
            emb.computed
        );
    }
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("cognitive-bench-{}", std::process::id())),
    );
    Ok(())
}
