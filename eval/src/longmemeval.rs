//! LongMemEval (Wu et al., ICLR 2025): loading `longmemeval_s`, `_m` and `_oracle` (original and cleaned
//! releases share the schema) and turning a question's haystack into documents.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dates::parse_longmemeval;
use crate::error::{io_err, schema, EvalError, Result};
use crate::retrieval::Doc;

/// One turn of a haystack session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmeTurn {
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub content: String,
    /// True on the turns that hold the evidence.
    #[serde(default)]
    pub has_answer: bool,
}

/// One evaluation instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmeQuestion {
    /// Id; abstention questions end in `_abs`.
    pub question_id: String,
    /// single-session-user, multi-session, temporal-reasoning, knowledge-update, ...
    pub question_type: String,
    /// The question.
    pub question: String,
    /// The reference answer (a string or a number in the files).
    #[serde(default)]
    pub answer: Value,
    /// When the question is asked.
    pub question_date: String,
    /// Ids of the haystack sessions.
    pub haystack_session_ids: Vec<String>,
    /// Date of each haystack session.
    pub haystack_dates: Vec<String>,
    /// The haystack sessions' turns.
    pub haystack_sessions: Vec<Vec<LmeTurn>>,
    /// Ids of the sessions holding the evidence.
    pub answer_session_ids: Vec<String>,
}

impl LmeQuestion {
    /// True for the abstention questions (the answer is not in the haystack).
    pub fn is_abstention(&self) -> bool {
        self.question_id.ends_with("_abs")
    }

    /// True when at least one evidence turn was said by the user.
    pub fn has_user_evidence(&self) -> bool {
        self.haystack_sessions
            .iter()
            .flatten()
            .any(|t| t.has_answer && t.role == "user")
    }

    /// Share of the haystack sessions that are evidence sessions.
    pub fn evidence_density(&self) -> f64 {
        if self.haystack_session_ids.is_empty() {
            return 0.0;
        }
        let gold: HashSet<&str> = self.answer_session_ids.iter().map(String::as_str).collect();
        let hits = self
            .haystack_session_ids
            .iter()
            .filter(|s| gold.contains(s.as_str()))
            .count();
        hits as f64 / self.haystack_session_ids.len() as f64
    }
}

/// Load and check a LongMemEval file.
pub fn load(path: &Path) -> Result<Vec<LmeQuestion>> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let raw: Value = serde_json::from_str(&text).map_err(|source| EvalError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let list = raw
        .as_array()
        .ok_or_else(|| schema(path, "a LongMemEval file is a JSON array of questions"))?;
    let mut out = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let q: LmeQuestion = serde_json::from_value(v.clone())
            .map_err(|e| schema(path, format!("question [{i}]: {e}")))?;
        let n = q.haystack_session_ids.len();
        if q.haystack_dates.len() != n || q.haystack_sessions.len() != n {
            return Err(schema(
                path,
                format!(
                    "question {} has {} session ids, {} dates and {} sessions; they must match",
                    q.question_id,
                    n,
                    q.haystack_dates.len(),
                    q.haystack_sessions.len()
                ),
            ));
        }
        if parse_longmemeval(&q.question_date).is_none() {
            return Err(schema(
                path,
                format!(
                    "question {}: cannot parse question_date {:?}",
                    q.question_id, q.question_date
                ),
            ));
        }
        if let Some(d) = q
            .haystack_dates
            .iter()
            .find(|d| parse_longmemeval(d).is_none())
        {
            return Err(schema(
                path,
                format!(
                    "question {}: cannot parse haystack date {d:?}",
                    q.question_id
                ),
            ));
        }
        out.push(q);
    }
    Ok(out)
}

/// Which turns are indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Roles {
    /// Only the user's turns (as the official retrieval runs do).
    User,
    /// Both sides.
    All,
}

impl Roles {
    fn keeps(self, t: &LmeTurn) -> bool {
        self == Roles::All || t.role == "user"
    }
}

/// One document per haystack session, keyed by session id.
pub fn session_docs(q: &LmeQuestion, roles: Roles) -> Vec<Doc> {
    q.haystack_session_ids
        .iter()
        .zip(&q.haystack_sessions)
        .zip(&q.haystack_dates)
        .filter_map(|((id, turns), date)| {
            let text: Vec<&str> = turns
                .iter()
                .filter(|t| roles.keeps(t))
                .map(|t| t.content.as_str())
                .collect();
            let text = text.join("\n");
            (!text.trim().is_empty()).then(|| Doc {
                key: id.clone(),
                session: id.clone(),
                embed_text: text.clone(),
                text,
                event_time: parse_longmemeval(date),
                speaker: None,
                dated: false,
                told: None,
            })
        })
        .collect()
}

/// Key of turn `i` (0-based) of session `id`: `{id}_{i+1}`.
pub fn turn_key(session: &str, i: usize) -> String {
    format!("{session}_{}", i + 1)
}

/// Session id of a turn key.
pub fn session_of_turn(key: &str) -> Option<&str> {
    key.rsplit_once('_').map(|(s, _)| s)
}

/// One document per kept turn, keyed `{session}_{turn}`.
pub fn turn_docs(q: &LmeQuestion, roles: Roles) -> Vec<Doc> {
    let mut out = Vec::new();
    for ((id, turns), date) in q
        .haystack_session_ids
        .iter()
        .zip(&q.haystack_sessions)
        .zip(&q.haystack_dates)
    {
        for (i, t) in turns.iter().enumerate() {
            if roles.keeps(t) && !t.content.trim().is_empty() {
                out.push(Doc {
                    key: turn_key(id, i),
                    session: id.clone(),
                    text: t.content.clone(),
                    embed_text: t.content.clone(),
                    event_time: parse_longmemeval(date),
                    speaker: None,
                    dated: crate::dates::mentions_time(&t.content),
                    told: parse_longmemeval(date)
                        .and_then(|said| crate::dates::told_window(&t.content, said)),
                });
            }
        }
    }
    out
}

/// Keys of the evidence turns among the kept ones.
pub fn gold_turns(q: &LmeQuestion, roles: Roles) -> HashSet<String> {
    let mut out = HashSet::new();
    for (id, turns) in q.haystack_session_ids.iter().zip(&q.haystack_sessions) {
        for (i, t) in turns.iter().enumerate() {
            if t.has_answer && roles.keeps(t) {
                out.insert(turn_key(id, i));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn question() -> Value {
        json!({
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "What breed is my dog?",
            "answer": "a beagle",
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": ["s_a", "answer_x_1"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 02:21"],
            "haystack_sessions": [
                [{"role": "user", "content": "Plan a trip to Rome"}, {"role": "assistant", "content": "Sure"}],
                [{"role": "user", "content": "My beagle loves walks", "has_answer": true},
                 {"role": "assistant", "content": "Beagles are great", "has_answer": false}]
            ],
            "answer_session_ids": ["answer_x_1"]
        })
    }

    #[test]
    fn loads_and_builds_documents() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lme.json");
        std::fs::write(&p, json!([question()]).to_string()).unwrap();
        let qs = load(&p).unwrap();
        let q = &qs[0];
        assert!(!q.is_abstention());
        assert!(q.has_user_evidence());
        assert_eq!(q.evidence_density(), 0.5);
        let s = session_docs(q, Roles::User);
        assert_eq!(s[1].text, "My beagle loves walks");
        assert_eq!(
            session_docs(q, Roles::All)[1].text,
            "My beagle loves walks\nBeagles are great"
        );
        let t = turn_docs(q, Roles::User);
        assert_eq!(
            t.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
            vec!["s_a_1", "answer_x_1_1"]
        );
        assert_eq!(session_of_turn("answer_x_1_1"), Some("answer_x_1"));
        assert_eq!(
            gold_turns(q, Roles::User),
            ["answer_x_1_1".to_string()].into_iter().collect()
        );
        assert!(s[0].event_time < s[1].event_time);
    }

    #[test]
    fn schema_violations_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.json");
        let mut q = question();
        q["haystack_dates"] = json!(["2023/05/01 (Mon) 09:00"]);
        std::fs::write(&p, json!([q]).to_string()).unwrap();
        assert!(load(&p).unwrap_err().to_string().contains("must match"));
        let mut q = question();
        q.as_object_mut().unwrap().remove("question");
        std::fs::write(&p, json!([q]).to_string()).unwrap();
        assert!(load(&p).unwrap_err().to_string().contains("question [0]"));
        let mut q = question();
        q["question_date"] = json!("June");
        std::fs::write(&p, json!([q]).to_string()).unwrap();
        assert!(load(&p).unwrap_err().to_string().contains("question_date"));
        std::fs::write(&p, "{}").unwrap();
        assert!(load(&p).is_err());
    }
}
