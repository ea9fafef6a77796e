//! `clawhdf5-eval`: LoCoMo, LongMemEval and MemoryArena retrieval benchmarks of the clawhdf5 memory store.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use clawhdf5_eval::embeddings::{default_cache_path, EmbeddingService};
use clawhdf5_eval::locomo::{self, TurnText};
use clawhdf5_eval::locomo_eval::{self, Granularity, LocomoOptions};
use clawhdf5_eval::report::Report;
use clawhdf5_eval::retrieval::{Feedback, Mode, Params, Rerank};
use clawhdf5_eval::{arena, longmemeval, longmemeval_eval};

#[derive(Parser)]
#[command(
    name = "clawhdf5-eval",
    about = "Retrieval benchmarks of the clawhdf5 memory store"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// LoCoMo evidence retrieval: one store per conversation, every question, turn and session level.
    Locomo(LocomoArgs),
    /// LongMemEval retrieval: one store per question, session and turn level, official metrics.
    Longmemeval(LmeArgs),
    /// Deterministic synthetic MemoryArena: 50 sessions, 35 questions, Hit@1/5/10, MRR and latency per type.
    MemoryArena(ArenaArgs),
    /// Benchmark harnesses behind BENCHMARKS.md (search-harness, footprint, consolidation, ephemeral,
    /// read-harness).
    #[command(flatten)]
    Harness(clawhdf5_eval::harness::cli::HarnessCmd),
}

#[derive(Args)]
struct Common {
    /// Retrieval modes, comma separated: bm25, bm25-stem, vector, hybrid, rrf, hybrid-rerank
    /// (BM25 is always run too, so its figure is printed beside the others).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "bm25,bm25-stem,vector,hybrid,rrf,hybrid-rerank"
    )]
    mode: Vec<String>,
    /// Weight of the vector score in hybrid fusion (keyword weight = 1 - w).
    #[arg(long, default_value_t = Params::default().vector_weight)]
    vector_weight: f32,
    /// hybrid-rerank: weight of the best neighbouring turn's score.
    #[arg(long, default_value_t = Rerank::default().neighbour)]
    rerank_neighbour: f32,
    /// hybrid-rerank: weight of the best other score in the same session.
    #[arg(long, default_value_t = Rerank::default().session)]
    rerank_session: f32,
    /// hybrid-rerank: bonus for the newest candidate when the question asks about the present.
    #[arg(long, default_value_t = Rerank::default().recency)]
    rerank_recency: f32,
    /// hybrid-rerank: bonus for documents inside a month the question names.
    #[arg(long, default_value_t = Rerank::default().month)]
    rerank_month: f32,
    /// hybrid-rerank: bonus for documents of a day the question names.
    #[arg(long, default_value_t = Rerank::default().day)]
    rerank_day: f32,
    /// hybrid-rerank: bonus for turns spoken by the speaker the question is about (the one it names, or the
    /// first-named of two it does not join).
    #[arg(long, default_value_t = Rerank::default().speaker)]
    rerank_speaker: f32,
    /// hybrid-rerank: bonus for turns that date what they say, on "when" / "how long" questions.
    #[arg(long, default_value_t = Rerank::default().dated)]
    rerank_dated: f32,
    /// hybrid-rerank: pseudo-relevance feedback from this many first-pass turns (0 = off).
    #[arg(long, default_value_t = Rerank::default().feedback.docs)]
    feedback_docs: usize,
    /// hybrid-rerank feedback: expansion words taken from those turns.
    #[arg(long, default_value_t = Rerank::default().feedback.terms)]
    feedback_terms: usize,
    /// hybrid-rerank feedback: weight of the expansion words' BM25 beside the question's own.
    #[arg(long, default_value_t = Rerank::default().feedback.keyword)]
    feedback_keyword: f32,
    /// hybrid-rerank feedback: weight of those turns' mean embedding added to the question's.
    #[arg(long, default_value_t = Rerank::default().feedback.vector)]
    feedback_vector: f32,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the results as Markdown here.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Model folder (default: CLAWHDF5_MODEL_DIR, then the per-user cache).
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Embedding threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Embedding cache file, kept across runs (default: ~/.cache/clawhdf5/eval-embeddings.bin).
    #[arg(long)]
    embedding_cache: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

impl Common {
    fn modes(&self) -> Result<Vec<Mode>> {
        self.mode
            .iter()
            .map(|m| Mode::parse(m.trim()).with_context(|| format!("unknown mode {m:?}")))
            .collect()
    }

    fn params(&self) -> Params {
        Params {
            vector_weight: self.vector_weight,
            rerank: Rerank {
                neighbour: self.rerank_neighbour,
                session: self.rerank_session,
                recency: self.rerank_recency,
                month: self.rerank_month,
                day: self.rerank_day,
                speaker: self.rerank_speaker,
                dated: self.rerank_dated,
                feedback: Feedback {
                    docs: self.feedback_docs,
                    terms: self.feedback_terms,
                    keyword: self.feedback_keyword,
                    vector: self.feedback_vector,
                },
                ..Rerank::default()
            },
        }
    }

    fn embedder(&self, needed: bool) -> Result<Option<EmbeddingService>> {
        if !needed {
            return Ok(None);
        }
        let cache = match &self.embedding_cache {
            Some(p) => p.clone(),
            None => default_cache_path()
                .context("no cache folder: set HOME or pass --embedding-cache")?,
        };
        let svc = EmbeddingService::open_minilm(self.model_dir.as_deref(), self.threads, &cache)
            .context("loading the embedding model (modes other than bm25/bm25-stem need it)")?;
        Ok(Some(svc.with_progress(!self.quiet)))
    }

    fn finish(&self, report: &Report) -> Result<()> {
        report.write(self.json.as_deref(), self.markdown.as_deref())?;
        println!("{}", report.to_markdown());
        Ok(())
    }
}

#[derive(Args)]
struct LocomoArgs {
    /// Folder of LoCoMo conversation files (or one file).
    dir: PathBuf,
    #[command(flatten)]
    common: Common,
    /// Sweep the hybrid vector weight 0.0..1.0 and the re-rank weights, reusing one embedding table.
    #[arg(long)]
    sweep: bool,
    /// Index turns or whole sessions.
    #[arg(long, default_value = "turn")]
    granularity: String,
    /// Ask only this many questions (evenly strided over all of them).
    #[arg(long)]
    limit: Option<usize>,
    /// Index each turn together with this many turns before and after it.
    #[arg(long, default_value_t = LocomoOptions::default().index_text.neighbours)]
    neighbours: usize,
    /// Embed each turn together with this many turns before and after it.
    #[arg(long, default_value_t = LocomoOptions::default().embed_text.neighbours)]
    embed_neighbours: usize,
    /// Do not prefix turns with the speaker's name.
    #[arg(long)]
    no_speaker: bool,
    /// Do not prefix indexed turns with the session's date.
    #[arg(long)]
    no_date: bool,
    /// Write each indexed turn this many times, so its own words outweigh its neighbours'.
    #[arg(long, default_value_t = LocomoOptions::default().index_text.repeat)]
    repeat: usize,
    /// Turns retrieved per question before scoring and roll-up.
    #[arg(long, default_value_t = 100)]
    depth: usize,
    /// Session level: a session scores its best turn plus this share of its next best turns' scores
    /// (0 = plain roll-up of the turn ranking to distinct sessions).
    #[arg(long, default_value_t = LocomoOptions::default().session_agg.share)]
    session_share: f32,
    /// Session level: turns per session counted by the aggregation (the best one included).
    #[arg(long, default_value_t = LocomoOptions::default().session_agg.top)]
    session_top: usize,
    /// Session level (hybrid-rerank): weight of each session's best question-turn cosine, over all its turns.
    #[arg(long, default_value_t = LocomoOptions::default().session_agg.vector)]
    session_vector: f32,
    /// Session level: weight of each session's own hybrid score as a whole-session document.
    #[arg(long, default_value_t = LocomoOptions::default().session_agg.docs)]
    session_docs: f32,
    /// Write every question's rankings (BM25, vector, hybrid, hybrid-rerank, session documents) here as JSON
    /// lines, for per-question analysis of misses.
    #[arg(long)]
    dump: Option<PathBuf>,
}

#[derive(Args)]
struct LmeArgs {
    /// A LongMemEval file (longmemeval_s, _m or _oracle; original or cleaned release).
    file: PathBuf,
    #[command(flatten)]
    common: Common,
    /// Sweep the hybrid vector weight 0.0..1.0, reusing one embedding table.
    #[arg(long)]
    sweep: bool,
    /// Index sessions or turns (turn results are also rolled up to sessions).
    #[arg(long, default_value = "session")]
    granularity: String,
    /// Evaluate only this many questions (evenly strided).
    #[arg(long)]
    limit: Option<usize>,
    /// Index the user's turns only (`user`, as the official retrieval runs do) or both sides (`all`).
    #[arg(long, default_value = "user")]
    roles: String,
}

#[derive(Args)]
struct ArenaArgs {
    #[command(flatten)]
    common: Common,
    /// Seed of the generator (the published figures use the default).
    #[arg(long, default_value_t = arena::DEFAULT_SEED)]
    seed: u64,
    /// Write the generated sessions and questions as JSON here.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// Also sweep the re-rank recency weight.
    #[arg(long)]
    sweep: bool,
}

fn granularity(s: &str) -> Result<Granularity> {
    match Granularity::parse(s) {
        Some(g) => Ok(g),
        None => bail!("--granularity must be turn or session, got {s:?}"),
    }
}

fn run_locomo(a: &LocomoArgs) -> Result<()> {
    let modes = a.common.modes()?;
    let convs = locomo::load(&a.dir)?;
    let defaults = LocomoOptions::default();
    let opts = LocomoOptions {
        modes: modes.clone(),
        granularity: granularity(&a.granularity)?,
        limit: a.limit,
        index_text: TurnText {
            speaker: !a.no_speaker,
            date: !a.no_date,
            neighbours: a.neighbours,
            repeat: a.repeat,
        },
        embed_text: TurnText {
            speaker: !a.no_speaker,
            date: defaults.embed_text.date,
            neighbours: a.embed_neighbours,
            repeat: 1,
        },
        params: a.common.params(),
        sweep: a.sweep,
        depth: a.depth,
        session_agg: locomo_eval::SessionAgg {
            share: a.session_share,
            top: a.session_top,
            vector: a.session_vector,
            docs: a.session_docs,
        },
        dump: a.dump.clone(),
    };
    let mut emb = a
        .common
        .embedder(modes.iter().any(|m| m.needs_embeddings()) || a.sweep)?;
    let report = locomo_eval::run(&convs, &opts, emb.as_mut())?;
    a.common.finish(&report)
}

fn run_lme(a: &LmeArgs) -> Result<()> {
    let modes = a.common.modes()?;
    let data = longmemeval::load(&a.file)?;
    let opts = longmemeval_eval::LmeOptions {
        modes: modes.clone(),
        granularity: granularity(&a.granularity)?,
        limit: a.limit,
        roles: match a.roles.as_str() {
            "user" => longmemeval::Roles::User,
            "all" => longmemeval::Roles::All,
            other => bail!("--roles must be user or all, got {other:?}"),
        },
        params: a.common.params(),
        sweep: a.sweep,
        progress: !a.common.quiet,
        source: file_name(&a.file),
    };
    let mut emb = a
        .common
        .embedder(modes.iter().any(|m| m.needs_embeddings()) || a.sweep)?;
    let report = longmemeval_eval::run(&data, &opts, emb.as_mut())?;
    a.common.finish(&report)
}

fn run_arena(a: &ArenaArgs) -> Result<()> {
    let modes = a.common.modes()?;
    let bench = arena::generate(a.seed);
    if let Some(p) = &a.dump {
        let text = serde_json::to_string_pretty(&bench)?;
        std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
    }
    let mut emb = a
        .common
        .embedder(modes.iter().any(|m| m.needs_embeddings()) || a.sweep)?;
    let report = arena::run(&bench, &modes, a.common.params(), a.sweep, emb.as_mut())?;
    a.common.finish(&report)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match &cli.cmd {
        Cmd::Locomo(a) => run_locomo(a),
        Cmd::Longmemeval(a) => run_lme(a),
        Cmd::MemoryArena(a) => run_arena(a),
        Cmd::Harness(h) => Ok(clawhdf5_eval::harness::cli::run(h)?),
    }
}
