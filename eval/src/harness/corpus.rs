//! Realistic record texts: LoCoMo conversation turns (speaker-prefixed, image captions included), paired into
//! distinct two-turn records so that any number of records can be made from the ~5,900 turns, plus LoCoMo
//! questions as query texts.

use std::path::{Path, PathBuf};

use super::error::{HarnessError, Result};
use crate::locomo::{self, Conversation};

/// The LoCoMo folder beside the repository (`../shared/datasets/locomo`).
pub fn default_locomo_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/datasets/locomo"
    ))
}

/// Load LoCoMo conversations, failing with a clear message when the folder is missing.
pub fn load_locomo(dir: &Path) -> Result<Vec<Conversation>> {
    if !dir.exists() {
        return Err(HarnessError::Input(format!(
            "the LoCoMo dataset is missing: {} does not exist (the harnesses take realistic record texts from \
             it; pass --locomo DIR pointing at the folder of LoCoMo conversation files)",
            dir.display()
        )));
    }
    Ok(locomo::load(dir)?)
}

/// One turn as a record text source.
#[derive(Clone, Debug)]
struct Line {
    text: String,
    session: String,
    time: Option<i64>,
}

/// A record made from the corpus.
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusRecord {
    /// The text (two turns).
    pub text: String,
    /// Session id of the first turn (`CONV/session_N`).
    pub session: String,
    /// The first turn's session date (ms), if parsable.
    pub event_time: Option<i64>,
}

/// Turn texts and question texts of a LoCoMo folder.
#[derive(Clone, Debug)]
pub struct Corpus {
    lines: Vec<Line>,
    questions: Vec<String>,
}

impl Corpus {
    /// Build from loaded conversations.
    pub fn new(convs: &[Conversation]) -> Result<Corpus> {
        let mut lines = Vec::new();
        let mut questions = Vec::new();
        for c in convs {
            for s in &c.sessions {
                for t in &s.turns {
                    let mut text = format!("{}: {}", t.speaker, t.text.trim());
                    if let Some(cap) = &t.caption {
                        text.push_str(&format!(" [shares a photo: {}]", cap.trim()));
                    }
                    lines.push(Line {
                        text,
                        session: format!("{}/session_{}", c.id, s.number),
                        time: s.time,
                    });
                }
            }
            questions.extend(c.questions.iter().map(|q| q.question.clone()));
        }
        if lines.len() < 2 || questions.is_empty() {
            return Err(HarnessError::Input(
                "the LoCoMo dataset holds too few turns or no questions".into(),
            ));
        }
        Ok(Corpus { lines, questions })
    }

    /// Load the LoCoMo folder `dir`.
    pub fn load(dir: &Path) -> Result<Corpus> {
        Corpus::new(&load_locomo(dir)?)
    }

    /// Number of distinct turns.
    pub fn turns(&self) -> usize {
        self.lines.len()
    }

    /// Most distinct records [`record`](Self::record) can make.
    pub fn capacity(&self) -> usize {
        self.lines.len() * (self.lines.len() - 1)
    }

    /// Record `i`: turn `i mod T` followed by the turn `1 + i / T` places later (wrapping), so the first `T`
    /// records are consecutive turns (an exchange) and later rounds pair each turn with a different partner.
    /// Distinct pairs for every `i < capacity()`.
    pub fn record(&self, i: usize) -> CorpusRecord {
        let t = self.lines.len();
        let (round, j) = (i / t, i % t);
        let partner = (j + 1 + round % (t - 1)) % t;
        let (a, b) = (&self.lines[j], &self.lines[partner]);
        CorpusRecord {
            text: format!("{} {}", a.text, b.text),
            session: a.session.clone(),
            event_time: a.time,
        }
    }

    /// The first `n` records; an error when the corpus cannot make that many distinct ones.
    pub fn records(&self, n: usize) -> Result<Vec<CorpusRecord>> {
        if n > self.capacity() {
            return Err(HarnessError::Option(format!(
                "{n} records asked, the corpus makes at most {} distinct ones",
                self.capacity()
            )));
        }
        Ok((0..n).map(|i| self.record(i)).collect())
    }

    /// Query text `i` (the LoCoMo questions, cycled).
    pub fn question(&self, i: usize) -> &str {
        &self.questions[i % self.questions.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locomo::{Question, Session, Turn};

    fn conv() -> Conversation {
        let turn = |i: usize| Turn {
            dia_id: format!("D1:{i}"),
            speaker: if i.is_multiple_of(2) { "Ann" } else { "Bob" }.into(),
            text: format!("turn number {i}"),
            caption: (i == 2).then(|| "a dog".to_string()),
        };
        Conversation {
            id: "c".into(),
            speaker_a: "Ann".into(),
            speaker_b: "Bob".into(),
            sessions: vec![Session {
                number: 1,
                date_time: "1:56 pm on 8 May, 2023".into(),
                time: Some(1),
                turns: (0..4).map(turn).collect(),
            }],
            questions: vec![Question {
                question: "what?".into(),
                answer: "x".into(),
                category: 1,
                evidence: vec![],
                unresolved: vec![],
            }],
        }
    }

    #[test]
    fn records_are_distinct_up_to_capacity() {
        let c = Corpus::new(&[conv()]).unwrap();
        assert_eq!(c.capacity(), 12);
        let all = c.records(12).unwrap();
        let set: std::collections::HashSet<_> = all.iter().map(|r| r.text.clone()).collect();
        assert_eq!(set.len(), 12);
        assert!(all[0]
            .text
            .starts_with("Ann: turn number 0 Bob: turn number 1"));
        assert!(all[1].text.contains("[shares a photo: a dog]"));
        assert!(c.records(13).is_err());
        assert_eq!(c.question(5), "what?");
    }

    #[test]
    fn missing_dataset_is_a_clear_error() {
        let e = Corpus::load(Path::new("/nonexistent/locomo")).unwrap_err();
        assert!(e.to_string().contains("LoCoMo dataset is missing"), "{e}");
    }
}
