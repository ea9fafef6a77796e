//! Exact pre-ranking filters on record metadata.

use serde::{Deserialize, Serialize};

use crate::record::Record;

/// Restricts a search to records matching every given condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// Only this agent's records.
    pub agent: Option<String>,
    /// Only this session's records.
    pub session: Option<String>,
    /// Only records whose source is one of these.
    pub sources: Vec<String>,
    /// Only records carrying all of these tags.
    pub tags: Vec<String>,
    /// Only records whose event time (or, lacking one, ingest time) is at or after this (ms).
    pub time_from: Option<i64>,
    /// Only records whose event time (or ingest time) is before this (ms).
    pub time_to: Option<i64>,
    /// Also return records another record has superseded.
    pub include_superseded: bool,
}

impl Filter {
    /// True when the filter lets everything live through.
    pub fn is_empty(&self) -> bool {
        self.agent.is_none()
            && self.session.is_none()
            && self.sources.is_empty()
            && self.tags.is_empty()
            && self.time_from.is_none()
            && self.time_to.is_none()
    }

    /// Whether `r` passes. Tombstones never pass.
    pub fn matches(&self, r: &Record) -> bool {
        if r.tombstone {
            return false;
        }
        if !self.include_superseded && r.superseded_by.is_some() {
            return false;
        }
        if self.agent.as_deref().is_some_and(|a| a != r.agent) {
            return false;
        }
        if self.session.as_deref().is_some_and(|s| s != r.session) {
            return false;
        }
        if !self.sources.is_empty() && !self.sources.iter().any(|s| s == r.source.as_str()) {
            return false;
        }
        if !self.tags.iter().all(|t| r.tags.contains(t)) {
            return false;
        }
        let t = r.event_time.unwrap_or(r.created_at);
        if self.time_from.is_some_and(|from| t < from) || self.time_to.is_some_and(|to| t >= to) {
            return false;
        }
        true
    }
}
