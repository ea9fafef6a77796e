//! Knowledge graph: entities with aliases and the records that mention them, typed timestamped weighted
//! relations, an adjacency index (CSR) cached until the next change, BFS and spreading activation.
//!
//! The graph is filled by rule-based extraction ([`extract`]) from every saved record and persisted by
//! `AgentMemory` as the store extension `cognitive_graph` (postcard). It remembers the highest record id it
//! has read (`covered_id`), so records saved after the last persisted state are re-read on open.

pub mod extract;
pub mod resolve;
pub mod traverse;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub use extract::EntityKind;
use traverse::Csr;

/// One entity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Dense id (index in the graph).
    pub id: u32,
    /// Canonical name (first spelling seen).
    pub name: String,
    /// Kind.
    pub kind: EntityKind,
    /// Other spellings resolved to this entity.
    pub aliases: Vec<String>,
    /// Ids of records mentioning it, in save order.
    pub mentions: Vec<u64>,
    /// Time of the first and last mention (ms).
    pub first_seen: i64,
    /// Time of the last mention (ms).
    pub last_seen: i64,
}

/// A typed relation between two entities.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EdgeRecord {
    /// Subject entity.
    pub from: u32,
    /// Object entity.
    pub to: u32,
    /// Type: works_at, lives_in, visited, uses, related_to or co_occurs.
    pub kind: String,
    /// How often it was seen.
    pub weight: f32,
    /// Time first seen (ms).
    pub first_seen: i64,
    /// Time last seen (ms).
    pub last_seen: i64,
    /// Record that last evidenced it.
    pub record: u64,
}

/// The persisted part of a graph.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphState {
    /// Entities by id.
    pub entities: Vec<Entity>,
    /// Relations.
    pub relations: Vec<EdgeRecord>,
    /// Highest record id already extracted.
    pub covered_id: u64,
}

/// The knowledge graph with its lookup tables and cached adjacency.
#[derive(Debug, Default)]
pub struct Graph {
    state: GraphState,
    /// Normalised name or alias -> entity.
    by_name: crate::FastMap<String, u32>,
    /// The same names by first character and length, for resolving names that are not in `by_name`.
    fuzzy: resolve::NameBuckets,
    /// (from, to, kind) -> relation index.
    edge_index: EdgeIndex,
    /// Adjacency, built on first traversal after a change.
    csr: OnceLock<Csr>,
    /// Changes since the last time the state was persisted.
    dirty: bool,
}

/// Relations by (from, to, kind), each kind named by a number, so that finding a relation neither allocates
/// its kind's name nor hashes it.
#[derive(Debug, Default)]
struct EdgeIndex {
    kinds: crate::FastMap<String, u32>,
    at: crate::FastMap<(u32, u32, u32), usize>,
}

impl EdgeIndex {
    /// The index of `relations`.
    fn of(relations: &[EdgeRecord]) -> Self {
        let mut ix = EdgeIndex::default();
        for (i, r) in relations.iter().enumerate() {
            ix.insert(r.from, r.to, &r.kind, i);
        }
        ix
    }

    /// Where the relation (from, to, kind) is in the relations, if there.
    fn get(&self, from: u32, to: u32, kind: &str) -> Option<usize> {
        let k = *self.kinds.get(kind)?;
        self.at.get(&(from, to, k)).copied()
    }

    /// Record that the relation (from, to, kind) is at `i`.
    fn insert(&mut self, from: u32, to: u32, kind: &str, i: usize) {
        let k = match self.kinds.get(kind) {
            Some(&k) => k,
            None => {
                let k = self.kinds.len() as u32;
                self.kinds.insert(kind.to_string(), k);
                k
            }
        };
        self.at.insert((from, to, k), i);
    }
}

/// Normalised lookup key of a name: lower case, accents removed ("José" and "Jose" are one key).
pub fn normalise(name: &str) -> String {
    extract::fold(name.trim())
}

impl Graph {
    /// Empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuild a graph from persisted state.
    pub fn from_state(state: GraphState) -> Self {
        let mut g = Graph {
            state,
            ..Default::default()
        };
        for e in &g.state.entities {
            for name in std::iter::once(&e.name).chain(&e.aliases) {
                let key = normalise(name);
                g.fuzzy.insert(&key, e.id);
                g.by_name.insert(key, e.id);
            }
        }
        g.edge_index = EdgeIndex::of(&g.state.relations);
        g
    }

    /// Encode for persistence.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(&self.state).unwrap_or_default()
    }

    /// Decode persisted bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        postcard::from_bytes::<GraphState>(bytes)
            .map(Graph::from_state)
            .map_err(|e| format!("graph state does not decode: {e}"))
    }

    /// Whether the graph changed since [`mark_clean`](Self::mark_clean).
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Note that the current state has been persisted.
    pub fn mark_clean(&mut self) {
        self.dirty = false;
    }

    /// Highest record id already extracted.
    pub fn covered_id(&self) -> u64 {
        self.state.covered_id
    }

    /// All entities.
    pub fn entities(&self) -> &[Entity] {
        &self.state.entities
    }

    /// All relations.
    pub fn relations(&self) -> &[EdgeRecord] {
        &self.state.relations
    }

    /// Entity by id.
    pub fn entity(&self, id: u32) -> Option<&Entity> {
        self.state.entities.get(id as usize)
    }

    /// Exact lookup of a name or alias.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.by_name.get(&normalise(name)).copied()
    }

    /// Resolve a name to an existing entity: exact name or alias, else the closest name of the same kind within
    /// the edit-distance tolerance of [`resolve::same_entity`].
    pub fn resolve(&self, name: &str, kind: EntityKind) -> Option<u32> {
        let key = normalise(name);
        if let Some(&id) = self.by_name.get(&key) {
            return Some(id);
        }
        let tol = resolve::tolerance(key.chars().count());
        if tol == 0 {
            return None;
        }
        self.fuzzy
            .candidates(&key, tol)
            .filter(|&id| self.state.entities[id as usize].kind == kind)
            .min()
    }

    fn add_entity(&mut self, name: &str, kind: EntityKind, time: i64) -> u32 {
        let id = self.state.entities.len() as u32;
        self.state.entities.push(Entity {
            id,
            name: name.to_string(),
            kind,
            aliases: Vec::new(),
            mentions: Vec::new(),
            first_seen: time,
            last_seen: time,
        });
        let key = normalise(name);
        self.fuzzy.insert(&key, id);
        self.by_name.insert(key, id);
        self.csr = OnceLock::new();
        id
    }

    /// Add `alias` as another name of entity `id`.
    pub fn add_alias(&mut self, id: u32, alias: &str) {
        let key = normalise(alias);
        if self.by_name.contains_key(&key) || id as usize >= self.state.entities.len() {
            return;
        }
        self.fuzzy.insert(&key, id);
        self.by_name.insert(key, id);
        self.state.entities[id as usize]
            .aliases
            .push(alias.trim().to_string());
        self.dirty = true;
    }

    fn add_edge(&mut self, from: u32, to: u32, kind: &str, time: i64, record: u64) {
        if from == to {
            return;
        }
        match self.edge_index.get(from, to, kind) {
            Some(i) => {
                let e = &mut self.state.relations[i];
                e.weight += 1.0;
                e.first_seen = e.first_seen.min(time);
                e.last_seen = e.last_seen.max(time);
                e.record = record;
            }
            None => {
                self.edge_index
                    .insert(from, to, kind, self.state.relations.len());
                self.state.relations.push(EdgeRecord {
                    from,
                    to,
                    kind: kind.to_string(),
                    weight: 1.0,
                    first_seen: time,
                    last_seen: time,
                    record,
                });
            }
        }
        self.csr = OnceLock::new();
    }

    /// Extract entities and relations from a saved record's text and add them. Returns the entity ids it
    /// mentions. Records at or below `covered_id` are ignored (already read).
    pub fn ingest(&mut self, record_id: u64, text: &str, time: i64) -> Vec<u32> {
        if record_id <= self.state.covered_id {
            return Vec::new();
        }
        self.state.covered_id = record_id;
        self.dirty = true;
        let ex = extract::extract(text);
        let mut ids: Vec<Option<u32>> = Vec::with_capacity(ex.mentions.len());
        for m in &ex.mentions {
            let id = match self.resolve(&m.name, m.kind) {
                Some(id) => {
                    if self.find(&m.name).is_none() {
                        self.add_alias(id, &m.name);
                    }
                    Some(id)
                }
                None if m.tentative => None,
                None => Some(self.add_entity(&m.name, m.kind, time)),
            };
            if let Some(id) = id {
                let e = &mut self.state.entities[id as usize];
                if e.mentions.last() != Some(&record_id) {
                    e.mentions.push(record_id);
                }
                e.first_seen = e.first_seen.min(time);
                e.last_seen = e.last_seen.max(time);
            }
            ids.push(id);
        }
        for r in &ex.relations {
            if let (Some(Some(a)), Some(Some(b))) = (ids.get(r.from), ids.get(r.to)) {
                self.add_edge(*a, *b, r.kind, time, record_id);
            }
        }
        let mut distinct: Vec<u32> = ids.into_iter().flatten().collect();
        distinct.sort_unstable();
        distinct.dedup();
        for (k, &a) in distinct.iter().enumerate() {
            for &b in &distinct[k + 1..] {
                self.add_edge(a, b, "co_occurs", time, record_id);
            }
        }
        distinct
    }

    /// Entities named in a free text (a query): every word and word pair looked up by name or alias.
    pub fn entities_in(&self, text: &str) -> Vec<u32> {
        let words: Vec<String> = text
            .split(|c: char| {
                !(c.is_alphanumeric() || c == '\'' || c == '+' || c == '#' || c == '.' || c == '-')
            })
            .map(|w| {
                normalise(
                    w.trim_matches(|c| c == '.' || c == '\'')
                        .trim_end_matches("'s"),
                )
            })
            .filter(|w| !w.is_empty())
            .collect();
        let mut out = Vec::new();
        // CJK runs have no spaces: the names extraction can find inside them are looked up by substring.
        if !text.is_ascii() {
            for m in extract::extract(text).mentions {
                if let Some(&id) = self.by_name.get(&normalise(&m.name)) {
                    out.push(id);
                }
            }
        }
        for (i, w) in words.iter().enumerate() {
            if let Some(next) = words.get(i + 1) {
                if let Some(&id) = self.by_name.get(&format!("{w} {next}")) {
                    out.push(id);
                }
            }
            if let Some(&id) = self.by_name.get(w) {
                out.push(id);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The adjacency index, rebuilt only after a change.
    pub fn adjacency(&self) -> &Csr {
        self.csr.get_or_init(|| {
            Csr::build(
                self.state.entities.len(),
                self.state
                    .relations
                    .iter()
                    .map(|r| (r.from, r.to, r.weight)),
            )
        })
    }

    /// Entities within `hops` of `start`, with hop counts, nearest first.
    pub fn bfs(&self, start: u32, hops: u32) -> Vec<(u32, u32)> {
        self.adjacency().bfs(start, hops)
    }

    /// Spreading activation from seed entities (activation 1 each); see [`Csr::spread`].
    pub fn spread(&self, seeds: &[u32], steps: u32, decay: f32, threshold: f32) -> Vec<(u32, f32)> {
        let s: Vec<(u32, f32)> = seeds.iter().map(|&id| (id, 1.0)).collect();
        self.adjacency().spread(&s, steps, decay, threshold)
    }

    /// Relations touching entity `id`.
    pub fn relations_of(&self, id: u32) -> Vec<&EdgeRecord> {
        self.state
            .relations
            .iter()
            .filter(|r| r.from == id || r.to == id)
            .collect()
    }

    /// Drop a forgotten record from the mention lists (relations keep their weights: they were observed).
    pub fn forget_record(&mut self, record_id: u64) {
        for e in &mut self.state.entities {
            if let Some(p) = e.mentions.iter().position(|&m| m == record_id) {
                e.mentions.remove(p);
                self.dirty = true;
            }
        }
        // A relation the forgotten record evidenced last moves to the newest record still mentioning both
        // of its entities, one sighting lighter; with no such record left it goes, so a forgotten fact cannot
        // come back through the graph.
        let mentions = |id: u32| -> &[u64] {
            self.state
                .entities
                .get(id as usize)
                .map_or(&[][..], |e| e.mentions.as_slice())
        };
        let mut keep = Vec::with_capacity(self.state.relations.len());
        let mut changed = false;
        for r in &self.state.relations {
            if r.record != record_id {
                keep.push(r.clone());
                continue;
            }
            changed = true;
            let (a, b) = (mentions(r.from), mentions(r.to));
            if let Some(&newest) = a.iter().filter(|m| b.contains(m)).max() {
                let mut r = r.clone();
                r.record = newest;
                r.weight = (r.weight - 1.0).max(1.0);
                keep.push(r);
            }
        }
        if changed {
            self.state.relations = keep;
            self.edge_index = EdgeIndex::of(&self.state.relations);
            self.csr = OnceLock::new();
            self.dirty = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_a_record_drops_the_relations_only_it_evidenced() {
        let mut g = Graph::new();
        g.ingest(1, "Then Alice moved to Berlin.", 10);
        g.ingest(2, "Later Alice works at Acme Corp.", 20);
        g.ingest(3, "So Alice works at Acme Corp again.", 30);
        let alice = g.find("alice").unwrap();
        let kinds = |g: &Graph| -> Vec<String> {
            let mut k: Vec<String> = g
                .relations_of(alice)
                .into_iter()
                .map(|r| r.kind.clone())
                .collect();
            k.sort();
            k
        };
        assert!(kinds(&g).contains(&"lives_in".to_string()));
        g.forget_record(1);
        assert!(
            !kinds(&g).contains(&"lives_in".to_string()),
            "{:?}",
            kinds(&g)
        );
        let acme = g.find("acme corp").unwrap();
        let works = |g: &Graph| {
            g.relations_of(alice)
                .into_iter()
                .find(|r| r.to == acme && r.kind == "works_at")
                .cloned()
        };
        assert_eq!(works(&g).unwrap().record, 3);
        g.forget_record(3);
        let w = works(&g).expect("record 2 still evidences it");
        assert_eq!(w.record, 2);
        assert_eq!(w.weight, 1.0);
        g.forget_record(2);
        assert!(works(&g).is_none());
        // Survives persistence.
        let back = Graph::from_bytes(&g.to_bytes()).unwrap();
        assert!(back.relations_of(alice).is_empty());
    }

    #[test]
    fn ingest_resolves_and_links() {
        let mut g = Graph::new();
        g.ingest(1, "Then Alice moved to Berlin and works at Acme Corp.", 10);
        g.ingest(2, "Later Alicee visited Paris with Bob.", 20);
        let alice = g.find("alice").unwrap();
        assert_eq!(g.find("Alicee"), Some(alice), "typo resolved as alias");
        assert_eq!(g.entity(alice).unwrap().mentions, vec![1, 2]);
        let berlin = g.find("berlin").unwrap();
        let lives: Vec<_> = g
            .relations_of(alice)
            .into_iter()
            .filter(|r| r.kind == "lives_in")
            .collect();
        assert_eq!(lives[0].to, berlin);
        // Paris is two hops from Berlin through Alice.
        let paris = g.find("paris").unwrap();
        let reach = g.bfs(berlin, 2);
        assert!(reach.contains(&(alice, 1)));
        assert!(reach.contains(&(paris, 2)));
        // Re-ingesting an old record changes nothing.
        assert!(g.ingest(1, "Zed", 30).is_empty());
    }

    #[test]
    fn cache_is_invalidated() {
        let mut g = Graph::new();
        g.ingest(1, "So Alice met Bob.", 0);
        let before = g.adjacency().targets.len();
        assert!(before > 0);
        g.ingest(2, "So Bob met Carol.", 0);
        let carol = g.find("carol").unwrap();
        assert!(g.adjacency().targets.len() > before);
        assert!(!g.adjacency().neighbours(carol).0.is_empty());
    }

    #[test]
    fn round_trip_and_query_entities() {
        let mut g = Graph::new();
        g.ingest(5, "Then Alice joined Acme Corp in New York.", 0);
        let h = Graph::from_bytes(&g.to_bytes()).unwrap();
        assert_eq!(h.covered_id(), 5);
        assert_eq!(h.entities().len(), g.entities().len());
        let q = h.entities_in("where does alice's company sit in new york?");
        assert!(q.contains(&h.find("alice").unwrap()));
        assert!(q.contains(&h.find("new york").unwrap()));
        assert!(Graph::from_bytes(b"\xff\xff").is_err());
    }
}
