//! The record: one saved memory and everything the store knows about it.

use serde::{Deserialize, Serialize};

/// Where a memory came from; the re-ranker weighs authority by it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Source {
    /// A conversation turn or exchange.
    Conversation,
    /// The user correcting something ("actually, ...").
    UserCorrection,
    /// A document or workspace file.
    Document,
    /// Output of a tool call.
    Tool,
    /// The system or operator.
    System,
    /// Anything else, kept verbatim.
    Other(String),
}

impl Source {
    /// Parse a source name; unknown names are kept as `Other`.
    pub fn parse(s: &str) -> Source {
        match s.trim().to_ascii_lowercase().as_str() {
            "conversation" | "" => Source::Conversation,
            "user_correction" => Source::UserCorrection,
            "document" => Source::Document,
            "tool" => Source::Tool,
            "system" => Source::System,
            _ => Source::Other(s.trim().to_string()),
        }
    }

    /// The canonical name stored in the file.
    pub fn as_str(&self) -> &str {
        match self {
            Source::Conversation => "conversation",
            Source::UserCorrection => "user_correction",
            Source::Document => "document",
            Source::Tool => "tool",
            Source::System => "system",
            Source::Other(s) => s,
        }
    }
}

/// Consolidation tier of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Tier {
    /// Fresh, short-lived working memory.
    #[default]
    Working,
    /// Episodic memory of what happened.
    Episodic,
    /// Consolidated, long-lived knowledge.
    Semantic,
    /// Evicted from active search but kept.
    Archived,
}

impl Tier {
    /// Numeric code stored in the file.
    pub fn code(self) -> u8 {
        match self {
            Tier::Working => 0,
            Tier::Episodic => 1,
            Tier::Semantic => 2,
            Tier::Archived => 3,
        }
    }

    /// Decode a stored tier code.
    pub fn from_code(c: u8) -> Option<Tier> {
        Some(match c {
            0 => Tier::Working,
            1 => Tier::Episodic,
            2 => Tier::Semantic,
            3 => Tier::Archived,
            _ => return None,
        })
    }
}

/// A cited span of a workspace file a record was taken from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Path relative to the workspace, e.g. `memory/2026-05-01.md`.
    pub path: String,
    /// First line (1-based, inclusive).
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
}

/// One saved memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Stable id, unique within the store, never reused.
    pub id: u64,
    /// The memory's text.
    pub text: String,
    /// Where it came from.
    pub source: Source,
    /// Agent that saved it.
    pub agent: String,
    /// Session or conversation id ("" when none).
    pub session: String,
    /// Workspace span it was taken from, if any.
    pub origin: Option<Origin>,
    /// Free-form tags.
    pub tags: Vec<String>,
    /// When the remembered thing happened (ms since the Unix epoch), if known.
    pub event_time: Option<i64>,
    /// When the store received it (ms since the Unix epoch).
    pub created_at: i64,
    /// Importance in [0, 1].
    pub importance: f32,
    /// How often search returned it.
    pub access_count: u32,
    /// Last time search returned it (ms), 0 when never.
    pub last_access: i64,
    /// Consolidation tier.
    pub tier: Tier,
    /// Id of the record this one replaced, if any.
    pub supersedes: Option<u64>,
    /// Id of the record that replaced this one, if any.
    pub superseded_by: Option<u64>,
    /// Deleted (forgotten) records stay as tombstones until compaction.
    pub tombstone: bool,
    /// Embedding, when the store has an embedder.
    pub embedding: Option<Vec<f32>>,
}

impl Record {
    /// Heap bytes this record owns (text, agent, session, origin path, tags).
    pub fn heap_bytes(&self) -> usize {
        self.text.len()
            + self.agent.len()
            + self.session.len()
            + self.origin.as_ref().map_or(0, |o| o.path.len())
            + self.tags.iter().map(String::len).sum::<usize>()
    }

    /// Reads one byte per cache line of everything a search reads of this record (its fields and the
    /// strings they point to) and returns a sum of them, so that the reads are not optimised away.
    pub fn touch(&self) -> u64 {
        fn lines(s: &str) -> u64 {
            s.as_bytes().iter().step_by(64).map(|&b| b as u64).sum()
        }
        let origin = self.origin.as_ref().map_or(0, |o| lines(&o.path));
        let tags: u64 = self.tags.iter().map(|t| lines(t)).sum();
        self.id
            .wrapping_add(lines(&self.text))
            .wrapping_add(lines(&self.agent))
            .wrapping_add(lines(&self.session))
            .wrapping_add(origin)
            .wrapping_add(tags)
            .wrapping_add(self.tombstone as u64)
    }
}

/// What a caller hands to `save`: the text plus optional metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NewMemory {
    /// The text to remember (must not be empty).
    pub text: String,
    /// Source name (see [`Source::parse`]); conversation when absent.
    pub source: Option<String>,
    /// Agent id; the store's default agent when absent.
    pub agent: Option<String>,
    /// Session id.
    pub session: Option<String>,
    /// Workspace span.
    pub origin: Option<Origin>,
    /// Tags.
    pub tags: Vec<String>,
    /// Event time (ms since epoch).
    pub event_time: Option<i64>,
    /// Importance in [0, 1]; 0.5 when absent.
    pub importance: Option<f32>,
    /// Precomputed embedding (skips the store's embedder).
    pub embedding: Option<Vec<f32>>,
}

impl NewMemory {
    /// A memory with just a text.
    pub fn text(text: impl Into<String>) -> Self {
        NewMemory {
            text: text.into(),
            ..Default::default()
        }
    }
}

/// Current time in ms since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Format ms since epoch as RFC 3339 (UTC, milliseconds).
pub fn format_time(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        None => ms.to_string(),
    }
}

/// Parse RFC 3339, a plain date (YYYY-MM-DD) or integer ms since epoch.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return d
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_round_trip() {
        for s in [
            "conversation",
            "user_correction",
            "document",
            "tool",
            "system",
            "email",
        ] {
            assert_eq!(Source::parse(s).as_str(), s);
        }
    }

    #[test]
    fn tier_codes_round_trip() {
        for t in [
            Tier::Working,
            Tier::Episodic,
            Tier::Semantic,
            Tier::Archived,
        ] {
            assert_eq!(Tier::from_code(t.code()), Some(t));
        }
        assert_eq!(Tier::from_code(9), None);
    }

    #[test]
    fn times_parse_and_format() {
        assert_eq!(parse_time("0"), Some(0));
        assert_eq!(parse_time("1970-01-02"), Some(86_400_000));
        assert_eq!(parse_time("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(format_time(1000), "1970-01-01T00:00:01.000Z");
    }
}
