//! Sessions: one entry per conversation with its time span, size, salient terms and a summary, and
//! session-level retrieval ("which conversation was it?").
//!
//! Summaries are given by the caller (e.g. an LLM's summary) or, until one is given, built extractively:
//! the session's most informative record followed by its top terms. Persisted by `AgentMemory` as the
//! store extension `cognitive_sessions`.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::record::Record;
use crate::tokenize::{Tokenizer, TokenizerConfig};

/// What is known about one session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Session id.
    pub id: String,
    /// Time of its first record (event time or save time, ms).
    pub first_time: i64,
    /// Time of its last record (ms).
    pub last_time: i64,
    /// Records saved in it.
    pub records: u32,
    /// Summary text.
    pub summary: String,
    /// True when the caller set the summary (it is then never rebuilt).
    pub manual_summary: bool,
    /// Term counts (stemmed).
    pub terms: HashMap<String, u32>,
    /// Id and term-weight of the most informative record so far (the extractive summary's lead).
    pub lead: Option<(u64, f32)>,
}

/// A session found by [`Sessions::rank`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionHit {
    /// Session id.
    pub session: String,
    /// Score (higher is better).
    pub score: f32,
    /// Its summary.
    pub summary: String,
    /// Its time span (ms).
    pub first_time: i64,
    /// End of its time span (ms).
    pub last_time: i64,
    /// Best matching record in it, if a record matched.
    pub best_record: Option<u64>,
}

/// The persisted part of the session table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Sessions by id.
    pub sessions: BTreeMap<String, SessionInfo>,
    /// Highest record id already counted.
    pub covered_id: u64,
}

/// Session table.
#[derive(Debug)]
pub struct Sessions {
    /// Persisted state.
    pub state: SessionState,
    tokenizer: Tokenizer,
    dirty: bool,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::new(SessionState::default())
    }
}

impl Sessions {
    /// A table from persisted state.
    pub fn new(state: SessionState) -> Self {
        Sessions {
            state,
            tokenizer: Tokenizer::new(TokenizerConfig::default()),
            dirty: false,
        }
    }

    /// Whether it changed since it was last persisted.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Note that the current state has been persisted.
    pub fn mark_clean(&mut self) {
        self.dirty = false;
    }

    /// Count a saved record into its session (records without a session are ignored).
    pub fn observe(&mut self, r: &Record) {
        if r.id <= self.state.covered_id {
            return;
        }
        self.state.covered_id = r.id;
        if r.session.is_empty() {
            return;
        }
        self.dirty = true;
        let t = r.event_time.unwrap_or(r.created_at);
        let toks = self.tokenizer.tokens(&r.text);
        let e = self
            .state
            .sessions
            .entry(r.session.clone())
            .or_insert_with(|| SessionInfo {
                id: r.session.clone(),
                first_time: t,
                last_time: t,
                ..Default::default()
            });
        e.first_time = e.first_time.min(t);
        e.last_time = e.last_time.max(t);
        e.records += 1;
        let mut distinct: Vec<&String> = toks.iter().collect();
        distinct.sort();
        distinct.dedup();
        let weight = distinct.len() as f32;
        for tok in toks {
            *e.terms.entry(tok).or_insert(0) += 1;
        }
        if e.lead.is_none_or(|(_, w)| weight > w) {
            e.lead = Some((r.id, weight));
            if !e.manual_summary {
                e.summary = r.text.chars().take(240).collect();
            }
        }
    }

    /// Set a session's summary (kept until set again).
    pub fn set_summary(&mut self, session: &str, summary: &str) {
        let e = self
            .state
            .sessions
            .entry(session.to_string())
            .or_insert_with(|| SessionInfo {
                id: session.to_string(),
                ..Default::default()
            });
        e.summary = summary.trim().to_string();
        e.manual_summary = true;
        self.dirty = true;
    }

    /// The session's entry.
    pub fn get(&self, session: &str) -> Option<&SessionInfo> {
        self.state.sessions.get(session)
    }

    /// Top `n` terms of a session, most frequent first.
    pub fn top_terms(&self, session: &str, n: usize) -> Vec<String> {
        let Some(e) = self.state.sessions.get(session) else {
            return Vec::new();
        };
        let mut t: Vec<(&String, &u32)> = e.terms.iter().collect();
        t.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        t.into_iter().take(n).map(|x| x.0.clone()).collect()
    }

    /// Rank sessions for a query, combining record-level hits (`(session, record id, score)` from a store
    /// search, best first) with the share of query terms found in each session's summary and terms.
    pub fn rank(
        &self,
        query: &str,
        record_hits: &[(String, u64, f32)],
        k: usize,
    ) -> Vec<SessionHit> {
        let q = self.tokenizer.tokens(query);
        let mut scores: HashMap<&str, (f32, Option<u64>, usize)> = HashMap::new();
        for (s, id, score) in record_hits {
            let Some(info) = self.state.sessions.get(s) else {
                continue;
            };
            let e = scores.entry(info.id.as_str()).or_insert((0.0, None, 0));
            // The best record counts fully, further ones with diminishing weight.
            e.0 += score / (1.0 + e.2 as f32);
            e.2 += 1;
            if e.1.is_none() {
                e.1 = Some(*id);
            }
        }
        if !q.is_empty() {
            for info in self.state.sessions.values() {
                let summary_toks = self.tokenizer.tokens(&info.summary);
                let found = q
                    .iter()
                    .filter(|t| info.terms.contains_key(*t) || summary_toks.contains(t))
                    .count();
                if found > 0 {
                    let e = scores.entry(info.id.as_str()).or_insert((0.0, None, 0));
                    e.0 += 0.5 * found as f32 / q.len() as f32;
                }
            }
        }
        let mut out: Vec<SessionHit> = scores
            .into_iter()
            .filter_map(|(s, (score, best, _))| {
                let info = self.state.sessions.get(s)?;
                Some(SessionHit {
                    session: s.to_string(),
                    score,
                    summary: info.summary.clone(),
                    first_time: info.first_time,
                    last_time: info.last_time,
                    best_record: best,
                })
            })
            .collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.session.cmp(&b.session)));
        out.truncate(k);
        out
    }

    /// Encode for persistence.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(&self.state).unwrap_or_default()
    }

    /// Decode persisted bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        postcard::from_bytes::<SessionState>(bytes)
            .map(Sessions::new)
            .map_err(|e| format!("session state does not decode: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Source, Tier};

    fn rec(id: u64, session: &str, text: &str, t: i64) -> Record {
        Record {
            id,
            text: text.into(),
            source: Source::Conversation,
            agent: "main".into(),
            session: session.into(),
            origin: None,
            tags: vec![],
            event_time: Some(t),
            created_at: t,
            importance: 0.5,
            access_count: 0,
            last_access: 0,
            tier: Tier::Working,
            supersedes: None,
            superseded_by: None,
            tombstone: false,
            embedding: None,
        }
    }

    #[test]
    fn sessions_summarise_and_rank() {
        let mut s = Sessions::default();
        s.observe(&rec(1, "s1", "hi", 10));
        s.observe(&rec(
            2,
            "s1",
            "we planned the hiking trip to the Alps with tents",
            20,
        ));
        s.observe(&rec(3, "s2", "tax return questions about deductions", 30));
        s.observe(&rec(3, "s2", "counted twice?", 30));
        let info = s.get("s1").unwrap();
        assert_eq!((info.first_time, info.last_time, info.records), (10, 20, 2));
        assert!(info.summary.contains("hiking"));
        assert_eq!(s.get("s2").unwrap().records, 1);
        let hits = s.rank("which conversation was about hiking?", &[], 5);
        assert_eq!(hits[0].session, "s1");
        s.set_summary("s2", "Taxes and deductions for 2023");
        let hits = s.rank("taxes", &[("s2".into(), 3, 1.0)], 5);
        assert_eq!(hits[0].session, "s2");
        assert_eq!(hits[0].best_record, Some(3));
        let back = Sessions::from_bytes(&s.to_bytes()).unwrap();
        assert_eq!(back.state, s.state);
        assert_eq!(s.top_terms("s1", 1).len(), 1);
    }
}
