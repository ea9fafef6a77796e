//! The cognitive layer: what makes a store an agent's memory rather than a vector store.
//!
//! [`AgentMemory`] owns a [`Store`] and is what callers use instead of it:
//!
//! * `observe_exchange` runs the decision [`gate`] and the save [`strategy`] on a conversation turn;
//! * `save` adds knowledge-update detection ([`updates`]: a newer memory about the same subject supersedes the
//!   older one, which is kept), entity extraction into the [`graph`], the [`temporal`] index (with relative
//!   times resolved against the conversation's date) and the [`sessions`] table;
//! * `recall_for_turn` runs the decision gate on a user turn before searching for it;
//! * `search` parses temporal hints into a time filter and an ordering, expands the query through the
//!   entities it names (spreading activation over the graph), re-ranks a larger pool ([`rerank`]) and drops
//!   weak results ([`confidence`]);
//! * `consolidate` moves records between tiers incrementally ([`consolidation`]);
//! * an [`ephemeral`] scratchpad can be promoted into the store, and [`multimodal`] media memories have
//!   per-modality indexes.
//!
//! State that cannot be derived from the records is persisted through the store's extensions (logged in its
//! write-ahead log, written under `/extensions` in the HDF5 file): `cognitive_graph`, `cognitive_sessions`,
//! `cognitive_state` (strategy and consolidation progress), `cognitive_media_NNNN` (media entries) and
//! `cognitive_media_graph_<modality>` (their HNSW graphs). Per-record state (tier,
//! importance, superseded-by) goes through [`RecordChange`]. The temporal and subject indexes are rebuilt
//! from the records on open.

pub mod confidence;
pub mod consolidation;
pub mod ephemeral;
pub mod gate;
pub mod graph;
pub mod multimodal;
pub mod rerank;
pub mod sessions;
pub mod sketch;
pub mod strategy;
pub mod temporal;
pub mod updates;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{MemoryError, Result};
use crate::record::{NewMemory, Record, Tier};
use crate::search::{SearchHit, SearchMode, SearchQuery};
use crate::store::{SaveOutcome, Store, StoreOptions};
use crate::wal::RecordChange;

use confidence::ConfidenceConfig;
use consolidation::{Change, ConsolidationConfig, ConsolidationState, Consolidator, CycleReport};
use ephemeral::EphemeralStore;
use graph::Graph;
use multimodal::{MediaEntry, MediaHit, MediaIndex, Modality};
use rerank::{Ranked, RerankConfig};
use sessions::{SessionHit, Sessions};
use strategy::{SaveStrategy, StrategyState};
use temporal::{TemporalHint, TemporalIndex};
use updates::{SubjectIndex, UpdateAction};

/// Extension holding the knowledge graph.
pub const EXT_GRAPH: &str = "cognitive_graph";
/// Extension holding the session table.
pub const EXT_SESSIONS: &str = "cognitive_sessions";
/// Extension holding strategy and consolidation progress.
pub const EXT_STATE: &str = "cognitive_state";

/// How search expands a query through the graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpansionConfig {
    /// Expand at all.
    pub enabled: bool,
    /// Most related entities added to the query.
    pub max_entities: usize,
    /// Weight of results found only through the expansion, relative to direct results.
    pub weight: f32,
    /// Spreading-activation steps.
    pub steps: u32,
    /// Activation kept per step.
    pub decay: f32,
    /// Least activation an entity needs to be used.
    pub threshold: f32,
}

impl Default for ExpansionConfig {
    fn default() -> Self {
        ExpansionConfig {
            enabled: true,
            max_entities: 3,
            weight: 0.3,
            steps: 2,
            decay: 0.5,
            threshold: 0.05,
        }
    }
}

/// Settings of the cognitive layer (not persisted: they are the caller's policy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CognitiveConfig {
    /// Which parts of an exchange are saved.
    pub strategy: SaveStrategy,
    /// Re-ranker weights.
    pub rerank: RerankConfig,
    /// Confidence rejection.
    pub confidence: ConfidenceConfig,
    /// Consolidation thresholds.
    pub consolidation: ConsolidationConfig,
    /// Graph query expansion.
    pub expansion: ExpansionConfig,
    /// Detect knowledge updates on save.
    pub knowledge_updates: bool,
    /// Extract entities into the graph on save.
    pub extract_entities: bool,
    /// Parse temporal hints in queries.
    pub temporal_hints: bool,
    /// Resolve "yesterday", "last week"... in saved text against the memory's event time.
    pub resolve_relative_times: bool,
    /// Candidates fetched from the store before re-ranking (at least 4 × k).
    pub search_pool: usize,
    /// Include Archived records in search.
    pub search_archived: bool,
    /// Persist the strategy state after this many saves, and the graph and sessions (which the records rebuild
    /// at open) then too once the saves since they were last persisted pay 64 bytes each for their size; all of
    /// it on flush, checkpoint and close.
    pub persist_every: u32,
    /// Capacity of the ephemeral scratchpad.
    pub ephemeral_capacity: usize,
    /// Default time-to-live of scratchpad entries (ms).
    pub ephemeral_ttl_ms: Option<i64>,
}

impl Default for CognitiveConfig {
    fn default() -> Self {
        CognitiveConfig {
            strategy: SaveStrategy::default(),
            rerank: RerankConfig::default(),
            confidence: ConfidenceConfig::default(),
            consolidation: ConsolidationConfig::default(),
            expansion: ExpansionConfig::default(),
            knowledge_updates: true,
            extract_entities: true,
            temporal_hints: true,
            resolve_relative_times: true,
            search_pool: 50,
            search_archived: false,
            persist_every: 64,
            ephemeral_capacity: 1024,
            ephemeral_ttl_ms: Some(3_600_000),
        }
    }
}

/// What one search works out once (query vector, graph expansion) and ranks under one filter or two (the
/// time range, then without it).
struct Plan<'a> {
    text: &'a str,
    text_vec: Option<Vec<f32>>,
    /// The expanded text, the mode it is searched in, and its vector when that mode is vector-only.
    expansion: Option<(String, SearchMode, Option<Vec<f32>>)>,
    pool: usize,
    order: Option<temporal::TimeOrder>,
    reference_time: i64,
}

/// The answer to a search.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recall {
    /// Confident results, best first; empty means "I don't know".
    pub hits: Vec<Ranked>,
    /// Candidates dropped by confidence rejection.
    pub rejected: usize,
    /// Temporal information found in the query.
    pub hint: TemporalHint,
    /// Whether the hint's time range restricted the search (false when it matched nothing and was relaxed).
    pub time_filter_applied: bool,
    /// Entities the query was expanded with.
    pub expanded_with: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct PersistedState {
    strategy: StrategyState,
    consolidation: ConsolidationState,
}

/// An agent's memory: a [`Store`] plus the cognitive layer.
#[derive(Debug)]
pub struct AgentMemory {
    store: Store,
    cfg: CognitiveConfig,
    graph: Graph,
    temporal: TemporalIndex,
    sessions: Sessions,
    subjects: SubjectIndex,
    strategy: StrategyState,
    consolidator: Consolidator,
    media: MediaIndex,
    ephemeral: EphemeralStore,
    state_dirty: bool,
    saves_since_flush: u32,
    /// Saves since the graph and the sessions were last logged.
    saves_since_derived: u64,
    /// Bytes the graph and the sessions took when they were last logged.
    derived_bytes: u64,
}

/// Between checkpoints the graph and the sessions, which grow with the store, are logged whole only once the
/// saves since they were last logged could pay this many bytes each for them. Logging them every
/// [`CognitiveConfig::persist_every`] saves made a save's cost grow with the store (at 100K LoCoMo turns the
/// log carried far more graph than records, and saves slowed from about 7,000 to 2,700 a second). What is not
/// logged is rebuilt from the records at the next open (see `rebuild_derived`), and every checkpoint carries
/// them up to date.
const DERIVED_BYTES_PER_SAVE: u64 = 64;

fn corrupt(store: &Store, what: &str, reason: String) -> MemoryError {
    MemoryError::Corrupt {
        path: store.path().to_path_buf(),
        reason: format!("extension {what}: {reason}"),
    }
}

impl AgentMemory {
    /// Open (or create) the store at `path` and restore the cognitive state persisted in it.
    pub fn open(path: &Path, opts: StoreOptions, cfg: CognitiveConfig) -> Result<AgentMemory> {
        let store = Store::open_with(path, opts)?;
        AgentMemory::from_store(store, cfg)
    }

    /// Wrap an open store.
    pub fn from_store(store: Store, cfg: CognitiveConfig) -> Result<AgentMemory> {
        let graph = match store.extension(EXT_GRAPH) {
            Some(b) => Graph::from_bytes(b).map_err(|e| corrupt(&store, EXT_GRAPH, e))?,
            None => Graph::new(),
        };
        let sessions = match store.extension(EXT_SESSIONS) {
            Some(b) => Sessions::from_bytes(b).map_err(|e| corrupt(&store, EXT_SESSIONS, e))?,
            None => Sessions::default(),
        };
        let state: PersistedState = match store.extension(EXT_STATE) {
            Some(b) => {
                serde_json::from_slice(b).map_err(|e| corrupt(&store, EXT_STATE, e.to_string()))?
            }
            None => PersistedState::default(),
        };
        let mut media = MediaIndex::new();
        for c in 0.. {
            let name = multimodal::chunk_name(c);
            let Some(b) = store.extension(&name) else {
                break;
            };
            media.load_chunk(b).map_err(|e| corrupt(&store, &name, e))?;
        }
        media
            .finish_load(|m| store.extension(&multimodal::graph_name(m)))
            .map_err(|e| corrupt(&store, "cognitive_media_graph", e))?;
        let ephemeral = EphemeralStore::new(cfg.ephemeral_capacity, cfg.ephemeral_ttl_ms);
        let mut m = AgentMemory {
            store,
            graph,
            temporal: TemporalIndex::new(),
            sessions,
            subjects: SubjectIndex::new(),
            strategy: state.strategy,
            consolidator: Consolidator::new(state.consolidation),
            media,
            ephemeral,
            state_dirty: false,
            saves_since_flush: 0,
            saves_since_derived: 0,
            derived_bytes: 0,
            cfg,
        };
        m.rebuild_derived();
        Ok(m)
    }

    /// Rebuild what is derived from the records, and catch the graph and sessions up with records saved
    /// after their state was last persisted.
    fn rebuild_derived(&mut self) {
        let records = self.store.records();
        for r in records.iter().filter(|r| !r.tombstone) {
            self.temporal.insert(r.id, rerank::record_time(r));
            if self.is_current(r) {
                // Rebuild only: the supersessions were already recorded.
                let _ = self
                    .subjects
                    .observe(&r.agent, r.id, &r.text, rerank::record_time(r));
            }
            if self.cfg.extract_entities && r.id > self.graph.covered_id() {
                self.graph.ingest(r.id, &r.text, rerank::record_time(r));
            }
            if r.id > self.sessions.state.covered_id {
                self.sessions.observe(r);
            }
        }
    }

    /// The underlying store (read-only: changes go through this layer).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The settings.
    pub fn config(&self) -> &CognitiveConfig {
        &self.cfg
    }

    /// Replace the settings.
    pub fn set_config(&mut self, cfg: CognitiveConfig) {
        self.cfg = cfg;
    }

    /// The knowledge graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The temporal index.
    pub fn timeline(&self) -> &TemporalIndex {
        &self.temporal
    }

    /// The session table.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The media index.
    pub fn media(&self) -> &MediaIndex {
        &self.media
    }

    /// Strategy counters (exchanges seen and skipped).
    pub fn strategy_state(&self) -> &StrategyState {
        &self.strategy
    }

    /// Consolidation progress.
    pub fn consolidation_state(&self) -> &ConsolidationState {
        &self.consolidator.state
    }

    /// The ephemeral scratchpad.
    pub fn ephemeral(&mut self) -> &mut EphemeralStore {
        &mut self.ephemeral
    }

    /// Run the gate and the save strategy on one exchange and save what they select, with the exchange's
    /// `session` and `time` (ms, the conversation's own clock).
    pub fn observe_exchange(
        &mut self,
        user: &str,
        assistant: &str,
        session: &str,
        time: i64,
    ) -> Result<Vec<SaveOutcome>> {
        let planned = strategy::plan(&self.cfg.strategy, &mut self.strategy, user, assistant);
        self.state_dirty = true;
        let mut out = Vec::with_capacity(planned.len());
        for p in planned {
            out.push(self.save(NewMemory {
                text: p.text,
                source: Some(p.source.to_string()),
                session: (!session.is_empty()).then(|| session.to_string()),
                event_time: Some(time),
                ..Default::default()
            })?);
        }
        Ok(out)
    }

    /// Save a memory through the cognitive layer (knowledge updates, graph, time, sessions).
    pub fn save(&mut self, m: NewMemory) -> Result<SaveOutcome> {
        let (outcome, ticket) = self.save_deferred(m)?;
        if let Some(t) = ticket {
            t.wait()?;
        }
        self.checkpoint_if_due()?;
        Ok(outcome)
    }

    /// [`Self::save`] without waiting for durability: returns the ticket to wait on outside any lock, so
    /// concurrent saves share one fsync (group commit); then call [`Self::checkpoint_if_due`].
    pub fn save_deferred(
        &mut self,
        mut m: NewMemory,
    ) -> Result<(SaveOutcome, Option<crate::wal::DurableTicket>)> {
        self.resolve_time(&mut m);
        let saved = self.store.save_deferred(m)?;
        self.after_save(saved)
    }

    /// What [`Self::save_prepared`] needs to prepare a save ahead of this memory's lock (see
    /// [`Store::save_kit`]).
    pub fn save_kit(&self) -> crate::SaveKit {
        self.store.save_kit()
    }

    /// [`Self::save_deferred`] for a memory whose text work was done ahead by a [`crate::SaveKit`].
    pub fn save_prepared(
        &mut self,
        mut p: crate::PreparedSave,
    ) -> Result<(SaveOutcome, Option<crate::wal::DurableTicket>)> {
        self.resolve_time(&mut p.memory);
        let saved = self.store.save_prepared(p)?;
        self.after_save(saved)
    }

    /// A relative time in the text ("yesterday") moves the event time back from when it was said.
    fn resolve_time(&self, m: &mut NewMemory) {
        if self.cfg.resolve_relative_times {
            if let Some(said) = m.event_time {
                if let Some(t) = temporal::resolve_event_time(&m.text, said) {
                    if t <= said {
                        m.event_time = Some(t);
                    }
                }
            }
        }
    }

    /// The layer's own bookkeeping after the store saved a memory: time index, entity graph, sessions,
    /// knowledge updates, periodic persistence; returns the ticket covering all it logged.
    fn after_save(
        &mut self,
        (outcome, mut ticket): (SaveOutcome, Option<crate::wal::DurableTicket>),
    ) -> Result<(SaveOutcome, Option<crate::wal::DurableTicket>)> {
        if outcome.deduplicated {
            return Ok((outcome, ticket));
        }
        let Some(r) = self.record(outcome.id) else {
            return Ok((outcome, ticket));
        };
        // What this save logs after the record (a supersede, extension state) is logged later, so the last
        // ticket covers it all; nothing here waits for the disk or checkpoints.
        let time = rerank::record_time(&r);
        self.temporal.insert(r.id, time);
        if self.cfg.extract_entities {
            self.graph.ingest(r.id, &r.text, time);
        }
        self.sessions.observe(&r);
        if self.cfg.knowledge_updates {
            if let UpdateAction::Supersede { old, new } =
                self.subjects.observe(&r.agent, r.id, &r.text, time)
            {
                ticket = Some(
                    self.store
                        .update_deferred(old, RecordChange::SupersededBy(new))?,
                );
            }
        }
        self.saves_since_flush += 1;
        self.saves_since_derived += 1;
        if self.saves_since_flush >= self.cfg.persist_every.max(1) {
            let derived = self.saves_since_derived * DERIVED_BYTES_PER_SAVE >= self.derived_bytes;
            match self.flush_deferred_parts(derived) {
                Ok(Some(t)) => ticket = Some(t),
                Ok(None) | Err(MemoryError::ReadOnly(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((outcome, ticket))
    }

    /// Whether [`Self::checkpoint_if_due`] would checkpoint now (see [`Store::checkpoint_due`]).
    pub fn checkpoint_due(&self) -> bool {
        self.store.checkpoint_due()
    }

    /// Checkpoint the store when its log has outgrown `auto_checkpoint_bytes`, with every piece of the layer's
    /// state up to date in it.
    pub fn checkpoint_if_due(&mut self) -> Result<()> {
        if self.store.checkpoint_due() {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// A record by id without its embedding.
    fn record(&self, id: u64) -> Option<Record> {
        let mut r = self.store.get(id)?;
        r.embedding = None;
        Some(r)
    }

    /// Forget a record (tombstone it) and drop it from the layer's indexes.
    pub fn forget(&mut self, id: u64) -> Result<bool> {
        let Some(r) = self.record(id) else {
            return Ok(false);
        };
        if !self.store.forget(id)? {
            return Ok(false);
        }
        self.temporal.remove(id, rerank::record_time(&r));
        self.subjects.remove(id);
        self.graph.forget_record(id);
        self.consolidator.invalidate();
        // The versions it superseded are current again (searches skip the forgotten link; see
        // `current_version`): put them back in the subject index so the next update supersedes them.
        let previous: Vec<(String, u64, String, i64)> = self
            .store
            .records()
            .iter()
            .filter(|x| !x.tombstone && x.superseded_by == Some(id))
            .map(|x| {
                (
                    x.agent.clone(),
                    x.id,
                    x.text.clone(),
                    rerank::record_time(x),
                )
            })
            .collect();
        for (agent, pid, text, time) in previous {
            let _ = self.subjects.observe(&agent, pid, &text, time);
        }
        Ok(true)
    }

    /// Whether a record is the current version of what it states: not superseded, or superseded only by
    /// versions that were forgotten since.
    fn is_current(&self, r: &Record) -> bool {
        r.superseded_by.is_none() || self.current_version(r).is_some_and(|c| c.id == r.id)
    }

    /// Every version of the fact a record states (same holder and attribute, same agent), oldest first,
    /// superseded ones included; just the record itself when it states no recognised subject.
    pub fn history(&self, id: u64) -> Vec<Record> {
        let Some(r) = self.record(id) else {
            return Vec::new();
        };
        let Some(subject) = updates::subject_of(&r.text) else {
            return vec![r];
        };
        let mut out: Vec<Record> = self
            .store
            .records()
            .iter()
            .filter(|x| {
                !x.tombstone
                    && x.agent == r.agent
                    && updates::subject_of(&x.text).as_ref() == Some(&subject)
            })
            .cloned()
            .collect();
        out.sort_by_key(|x| (rerank::record_time(x), x.id));
        out
    }

    /// Store candidates for `text`, with the store's calibrated (absolute) scores. Superseded records are
    /// replaced by their current successor (same scores) unless the filter asks for superseded records;
    /// Archived records are dropped unless configured otherwise.
    fn candidates(
        &self,
        mode: SearchMode,
        text: &str,
        pool: usize,
        filter: &crate::filter::Filter,
        embedding: Option<Vec<f32>>,
    ) -> Result<Vec<SearchHit>> {
        let mut inner = filter.clone();
        inner.include_superseded = true;
        let base = SearchQuery {
            text: text.to_string(),
            k: pool,
            mode,
            filter: inner,
            min_score: None,
            embedding,
        };
        let raw = self.store.search_candidates(&base)?;
        let mut seen = std::collections::HashSet::new();
        let mut hits = Vec::with_capacity(raw.len());
        for mut h in raw {
            // The newer version of a fact answers for the older one; asked for history, both are returned.
            // A record whose successors were all forgotten is current again.
            let (superseded, successor) = match h.record.superseded_by {
                None => (false, None),
                Some(_) => match self.current_version(&h.record) {
                    Some(c) if c.id == h.record.id => (false, None),
                    other => (true, other.filter(|s| filter.matches(s))),
                },
            };
            let mut group = Vec::with_capacity(2);
            match successor {
                Some(succ) if filter.include_superseded => {
                    let mut next = h.clone();
                    next.record = succ;
                    group.push(h);
                    group.push(next);
                }
                Some(succ) => {
                    h.record = succ;
                    group.push(h);
                }
                None if superseded && !filter.include_superseded => {}
                None => group.push(h),
            }
            for h in group {
                if !self.cfg.search_archived && h.record.tier == Tier::Archived {
                    continue;
                }
                if seen.insert(h.record.id) {
                    hits.push(h);
                }
            }
        }
        Ok(hits)
    }

    /// The live record at the end of a record's superseded-by chain; a forgotten (or missing) link ends the
    /// chain at the last live version before it, which may be `r` itself. `None` for a chain too long to be
    /// sound (over 64 links: a cycle).
    fn current_version(&self, r: &Record) -> Option<Record> {
        let Some(mut cur) = r.superseded_by else {
            return Some(r.clone());
        };
        let mut last_live = r.clone();
        for _ in 0..64 {
            let Some(next) = self.record(cur).filter(|x| !x.tombstone) else {
                return Some(last_live);
            };
            match next.superseded_by {
                Some(n) if n != cur => {
                    cur = n;
                    last_live = next;
                }
                _ => return Some(next),
            }
        }
        None
    }

    /// Entities related to those named in `text` (graph spreading activation), which the search adds to the
    /// query; empty when expansion is off or finds nothing new.
    fn expansion_of(&self, text: &str) -> Vec<String> {
        if !self.cfg.expansion.enabled || self.graph.entities().is_empty() {
            return Vec::new();
        }
        let e = &self.cfg.expansion;
        let seeds = self.graph.entities_in(text);
        if seeds.is_empty() {
            return Vec::new();
        }
        self.graph
            .spread(&seeds, e.steps, e.decay, e.threshold)
            .into_iter()
            .filter_map(|(id, _)| self.graph.entity(id).map(|x| x.name.clone()))
            .filter(|n| !text.to_lowercase().contains(&n.to_lowercase()))
            .take(e.max_entities)
            .collect()
    }

    /// Search with temporal hints, graph expansion, re-ranking and confidence rejection. `reference_time` is
    /// "now" for relative hints and recency (ms).
    pub fn search(&self, q: &SearchQuery, reference_time: i64) -> Result<Recall> {
        let hint = if self.cfg.temporal_hints {
            temporal::parse_hint(&q.text, reference_time)
        } else {
            TemporalHint {
                residual: q.text.clone(),
                ..Default::default()
            }
        };
        let mut recall = Recall {
            hits: Vec::new(),
            rejected: 0,
            hint,
            time_filter_applied: false,
            expanded_with: Vec::new(),
        };
        if q.k == 0 {
            return Ok(recall);
        }
        let text = recall.hint.residual.clone();
        let pool = self.cfg.search_pool.max(q.k.saturating_mul(4));
        let mut filter = q.filter.clone();
        if recall.hint.from.is_some() || recall.hint.to.is_some() {
            if let Some(f) = recall.hint.from {
                filter.time_from = Some(filter.time_from.map_or(f, |x| x.max(f)));
            }
            if let Some(t) = recall.hint.to {
                filter.time_to = Some(filter.time_to.map_or(t, |x| x.min(t)));
            }
            recall.time_filter_applied = true;
        }
        // The graph expansion adds the names of related entities, which the keyword stage finds by name; so the
        // expanded text is searched by keywords only (by vectors only in vector-only mode). Its own vector would
        // cost a second forward pass and mostly bring back the query's vector candidates: on LoCoMo through the
        // OpenClaw gateway, embedding it changed recall@5 by nothing (87.3 % both ways, 1,535 questions).
        let related = self.expansion_of(&text);
        let expanded = (!related.is_empty()).then(|| format!("{text} {}", related.join(" ")));
        let expansion_mode = match q.mode {
            SearchMode::Vector => SearchMode::Vector,
            _ => SearchMode::Keyword,
        };
        let (text_vec, expanded_vec) = match (&q.embedding, &expanded) {
            (Some(e), _) => (
                Some(e.clone()),
                (expansion_mode == SearchMode::Vector).then(|| e.clone()),
            ),
            (None, Some(x)) if expansion_mode == SearchMode::Vector => {
                // Both texts in one forward pass.
                match self.store.embed_queries(&[&text, x], q.mode)? {
                    Some(mut v) if v.len() == 2 => {
                        let b = v.pop();
                        (v.pop(), b)
                    }
                    _ => (None, None),
                }
            }
            _ => (
                self.store
                    .embed_queries(&[&text], q.mode)?
                    .and_then(|mut v| v.pop()),
                None,
            ),
        };
        let plan = Plan {
            text: &text,
            text_vec,
            expansion: expanded.map(|x| (x, expansion_mode, expanded_vec)),
            pool,
            order: recall.hint.order,
            reference_time,
        };
        let ranked = |filter: &crate::filter::Filter| self.ranked_candidates(q, &plan, filter);
        let (mut kept, rejected) = if recall.time_filter_applied {
            let (kept, weak) = confidence::split(ranked(&filter)?, &self.cfg.confidence);
            if kept.is_empty() {
                // Nothing in the time range is confident. A date in a question often names the day something
                // was said, so the range's own candidates (if any) still come first, in the re-ranker's order; the rest of
                // the answer is what the search finds without the range.
                let (relaxed, rejected) =
                    confidence::reject(ranked(&q.filter)?, &self.cfg.confidence);
                let in_range: std::collections::HashSet<u64> =
                    weak.iter().map(|r| r.record.id).collect();
                recall.time_filter_applied = false;
                let mut out = weak;
                out.truncate(q.k);
                out.extend(
                    relaxed
                        .into_iter()
                        .filter(|r| !in_range.contains(&r.record.id)),
                );
                (out, rejected)
            } else {
                let rejected = weak.len();
                (kept, rejected)
            }
        } else {
            confidence::reject(ranked(&filter)?, &self.cfg.confidence)
        };
        if plan.expansion.is_some() {
            recall.expanded_with = related;
        }
        if let Some(min) = q.min_score {
            // The store's calibrated score is absolute, so a threshold means the same on every query (the
            // re-ranked score is relative to the query's best candidate and would always keep the top one).
            kept.retain(|r| r.retrieval_score >= min);
        }
        kept.truncate(q.k);
        let returned: Vec<u64> = kept.iter().map(|h| h.record.id).collect();
        self.store.record_access(&returned)?;
        recall.rejected = rejected;
        recall.hits = kept;
        Ok(recall)
    }

    /// The plan's candidates (the text's, then its graph expansion's, weighted down) under `filter`, re-ranked,
    /// best first.
    fn ranked_candidates(
        &self,
        q: &SearchQuery,
        plan: &Plan<'_>,
        filter: &crate::filter::Filter,
    ) -> Result<Vec<rerank::Ranked>> {
        let mut hits =
            self.candidates(q.mode, plan.text, plan.pool, filter, plan.text_vec.clone())?;
        if let Some((expanded, mode, vector)) = &plan.expansion {
            let weight = self.cfg.expansion.weight;
            let seen: std::collections::HashSet<u64> = hits.iter().map(|h| h.record.id).collect();
            for mut h in self.candidates(*mode, expanded, plan.pool, filter, vector.clone())? {
                if !seen.contains(&h.record.id) {
                    h.score *= weight;
                    hits.push(h);
                }
            }
        }
        Ok(rerank::rerank(
            hits,
            &self.cfg.rerank,
            plan.reference_time,
            plan.order,
        ))
    }

    /// Automatic recall for a user turn: the decision gate skips turns with nothing to look up ("ok",
    /// "thanks!", an emoji), answering `None` without touching the store; any other turn is searched as
    /// [`Self::search`] would (`q.text` is the turn; `q` carries k, mode, filter and embedding).
    pub fn recall_for_turn(&self, q: &SearchQuery, reference_time: i64) -> Result<Option<Recall>> {
        if !gate::should_search(&q.text) {
            return Ok(None);
        }
        self.search(q, reference_time).map(Some)
    }

    /// Which sessions (conversations) a query is about, best first.
    pub fn search_sessions(&self, query: &str, k: usize) -> Result<Vec<SessionHit>> {
        let mut q = SearchQuery::new(query, self.cfg.search_pool.max(k.saturating_mul(4)));
        q.mode = SearchMode::Keyword;
        let hits: Vec<(String, u64, f32)> = self
            .store
            .search(&q)?
            .into_iter()
            .filter(|h| !h.record.session.is_empty())
            .map(|h| (h.record.session, h.record.id, h.score))
            .collect();
        Ok(self.sessions.rank(query, &hits, k))
    }

    /// Set a session's summary (persisted now).
    pub fn set_session_summary(&mut self, session: &str, summary: &str) -> Result<()> {
        if session.is_empty() {
            return Err(MemoryError::InvalidInput(
                "a session id must not be empty".into(),
            ));
        }
        self.sessions.set_summary(session, summary);
        self.store
            .put_extension(EXT_SESSIONS, self.sessions.to_bytes())?;
        self.sessions.mark_clean();
        Ok(())
    }

    /// Run one incremental consolidation cycle at time `now` (ms) and persist its progress.
    pub fn consolidate(&mut self, now: i64) -> Result<CycleReport> {
        let (changes, report) =
            self.consolidator
                .cycle(self.store.records(), now, &self.cfg.consolidation);
        // One log write and one fsync for the whole cycle.
        let batch = changes
            .into_iter()
            .map(|c| match c {
                Change::Tier(id, t) => (id, RecordChange::Tier(t.code())),
                Change::Importance(id, x) => (id, RecordChange::Importance(x)),
            })
            .collect();
        self.store.update_many(batch)?;
        self.state_dirty = true;
        self.flush()?;
        Ok(report)
    }

    /// Save a media memory: `memory.text` is the caption; `embeddings` holds one vector per modality space.
    pub fn save_media(
        &mut self,
        mut memory: NewMemory,
        kind: Modality,
        uri: &str,
        mime: Option<&str>,
        embeddings: Vec<(Modality, Vec<f32>)>,
    ) -> Result<SaveOutcome> {
        let mut entry = MediaEntry {
            record_id: 0,
            kind,
            uri: uri.to_string(),
            mime: mime.map(str::to_string),
            caption: memory.text.trim().to_string(),
            embeddings,
        };
        self.media
            .validate(&entry)
            .map_err(MemoryError::InvalidInput)?;
        let tag = format!("media:{}", format!("{kind:?}").to_lowercase());
        if !memory.tags.contains(&tag) {
            memory.tags.push(tag);
        }
        let outcome = self.save(memory)?;
        if self.media.get(outcome.id).is_some() {
            return Ok(outcome);
        }
        entry.record_id = outcome.id;
        self.media.add(entry).map_err(MemoryError::InvalidInput)?;
        for (name, bytes) in self.media.take_dirty_chunks() {
            self.store.put_extension(&name, bytes)?;
        }
        Ok(outcome)
    }

    /// Media nearest to a query embedding: in one modality space, or across every space of that dimension
    /// when `space` is `None`. Forgotten records are skipped.
    pub fn search_media(
        &self,
        space: Option<Modality>,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(MediaHit, Record)>> {
        let fetch = k.saturating_mul(2).max(k.saturating_add(4));
        let hits = match space {
            Some(s) => self.media.search(s, query, fetch),
            None => self.media.search_all(query, fetch),
        }
        .map_err(MemoryError::InvalidInput)?;
        Ok(hits
            .into_iter()
            .filter_map(|h| {
                let r = self.record(h.record_id)?;
                (!r.tombstone).then_some((h, r))
            })
            .take(k)
            .collect())
    }

    /// Move a scratchpad entry into the durable store (through `save`, so updates and the graph apply).
    /// `template` supplies metadata (source, session, tags...); its text is replaced by the entry's value.
    pub fn promote_ephemeral(
        &mut self,
        key: &str,
        now: i64,
        template: NewMemory,
    ) -> Result<Option<SaveOutcome>> {
        self.ephemeral.purge_expired(now);
        let Some(e) = self.ephemeral.remove(key) else {
            return Ok(None);
        };
        let m = NewMemory {
            text: e.value,
            embedding: template.embedding.clone().or(e.embedding),
            event_time: template.event_time.or(Some(e.stored_at)),
            ..template
        };
        self.save(m).map(Some)
    }

    /// Persist every changed piece of cognitive state through the store's extensions. A read-only store
    /// persists nothing (its derived state is rebuilt on every open).
    pub fn flush(&mut self) -> Result<()> {
        match self.flush_inner() {
            Err(MemoryError::ReadOnly(_)) => Ok(()),
            other => other,
        }
    }

    fn flush_inner(&mut self) -> Result<()> {
        if let Some(t) = self.flush_deferred()? {
            t.wait()?;
        }
        self.store.checkpoint_if_due()
    }

    /// Log every dirty piece of persisted state without waiting for the disk; returns the last ticket.
    fn flush_deferred(&mut self) -> Result<Option<crate::wal::DurableTicket>> {
        self.flush_deferred_parts(true)
    }

    /// [`Self::flush_deferred`], leaving out the graph and the sessions unless `derived` (the records rebuild
    /// them at the next open).
    fn flush_deferred_parts(&mut self, derived: bool) -> Result<Option<crate::wal::DurableTicket>> {
        let mut last = None;
        if derived {
            let mut bytes = 0u64;
            if self.graph.is_dirty() {
                let blob = self.graph.to_bytes();
                bytes += blob.len() as u64;
                last = Some(self.store.put_extension_deferred(EXT_GRAPH, blob)?);
                self.graph.mark_clean();
            }
            if self.sessions.is_dirty() {
                let blob = self.sessions.to_bytes();
                bytes += blob.len() as u64;
                last = Some(self.store.put_extension_deferred(EXT_SESSIONS, blob)?);
                self.sessions.mark_clean();
            }
            if bytes > 0 {
                self.derived_bytes = bytes;
            }
            self.saves_since_derived = 0;
        }
        if self.state_dirty {
            let st = PersistedState {
                strategy: self.strategy.clone(),
                consolidation: self.consolidator.state.clone(),
            };
            let bytes =
                serde_json::to_vec(&st).map_err(|e| MemoryError::InvalidInput(e.to_string()))?;
            last = Some(self.store.put_extension_deferred(EXT_STATE, bytes)?);
            self.state_dirty = false;
        }
        for (name, bytes) in self.media.take_dirty_chunks() {
            last = Some(self.store.put_extension_deferred(&name, bytes)?);
        }
        self.saves_since_flush = 0;
        Ok(last)
    }

    /// The persisted state of a store extension (see [`Store::extension`]).
    pub fn extension(&self, name: &str) -> Option<&[u8]> {
        self.store.extension(name)
    }

    /// Replace a store extension's persisted state (see [`Store::put_extension`]).
    pub fn put_extension(&mut self, name: &str, payload: Vec<u8>) -> Result<()> {
        self.store.put_extension(name, payload)
    }

    /// Write the media indexes' HNSW graphs that changed. Only on checkpoint and close: a graph is rewritten
    /// whole, and one left behind by a crash is rebuilt from the media entries on open.
    fn persist_media_graphs(&mut self) -> Result<()> {
        for (name, bytes) in self.media.take_dirty_graphs() {
            match self.store.put_extension(&name, bytes) {
                Err(MemoryError::ReadOnly(_)) => return Ok(()),
                other => other?,
            }
        }
        Ok(())
    }

    /// Persist the cognitive state (media graphs included) and fold the log into the HDF5 file.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.flush()?;
        self.persist_media_graphs()?;
        self.store.checkpoint()
    }

    /// Persist everything and close the store.
    pub fn close(mut self) -> Result<()> {
        self.flush()?;
        self.persist_media_graphs()?;
        self.store.close()
    }
}
