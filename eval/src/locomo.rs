//! LoCoMo (Maharana et al., ACL 2024): loading the conversations and questions, and the text each turn or
//! session is indexed with.
//!
//! Accepted layouts: one conversation per file with the conversation's keys at the top level (as in
//! `shared/datasets/locomo/`), one sample object with a `conversation` member, or the original `locomo10.json`
//! (an array of samples).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::dates::{day_label, parse_locomo};
use crate::error::{io_err, schema, EvalError, Result};
use crate::retrieval::Doc;

/// Names of the question categories, by number.
pub fn category_name(c: u8) -> &'static str {
    match c {
        1 => "multi-hop",
        2 => "temporal",
        3 => "open-domain",
        4 => "single-hop",
        5 => "adversarial",
        _ => "unknown",
    }
}

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// Normalised turn id, `D{session}:{turn}`.
    pub dia_id: String,
    /// Who said it.
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// Caption of a shared image, if any.
    pub caption: Option<String>,
}

/// One session of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// Session number (the N of `session_N`).
    pub number: u32,
    /// The session's time as written in the file.
    pub date_time: String,
    /// The same, parsed (ms since epoch).
    pub time: Option<i64>,
    /// Turns in order.
    pub turns: Vec<Turn>,
}

/// One question with its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    /// The question.
    pub question: String,
    /// The answer (or the adversarial answer for category 5), as text.
    pub answer: String,
    /// Category 1–5.
    pub category: u8,
    /// Evidence turn ids that name a turn of the conversation (normalised).
    pub evidence: Vec<String>,
    /// Evidence entries that name no turn of the conversation, verbatim.
    pub unresolved: Vec<String>,
}

/// One conversation with its questions.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// Sample id (file stem or `sample_id`).
    pub id: String,
    /// First speaker.
    pub speaker_a: String,
    /// Second speaker.
    pub speaker_b: String,
    /// Sessions in number order.
    pub sessions: Vec<Session>,
    /// Questions in file order.
    pub questions: Vec<Question>,
}

impl Conversation {
    /// Number of turns over all sessions.
    pub fn turn_count(&self) -> usize {
        self.sessions.iter().map(|s| s.turns.len()).sum()
    }
}

/// Normalise a turn id: `D30:05` -> `D30:5`, `D:11:26` -> `D11:26`. `None` when it is not two numbers.
pub fn normalize_dia_id(raw: &str) -> Option<String> {
    let s = raw.trim();
    let s = s.strip_prefix('D').or_else(|| s.strip_prefix('d'))?;
    let nums: Vec<u32> = s
        .split(':')
        .filter(|p| !p.is_empty())
        .map(|p| p.trim().parse::<u32>())
        .collect::<std::result::Result<_, _>>()
        .ok()?;
    match nums.as_slice() {
        [a, b] => Some(format!("D{a}:{b}")),
        _ => None,
    }
}

/// Session id of a normalised turn id (`D12:3` -> `D12`).
pub fn session_of(dia_id: &str) -> Option<&str> {
    dia_id.split_once(':').map(|(s, _)| s)
}

/// Load every `*.json` conversation file of `dir` (sorted by name), or a single file.
pub fn load(path: &Path) -> Result<Vec<Conversation>> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io_err(path))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        v.sort();
        v
    } else {
        vec![path.to_path_buf()]
    };
    if files.is_empty() {
        return Err(EvalError::InvalidInput(format!(
            "{} holds no .json file",
            path.display()
        )));
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(io_err(&f))?;
        let v: Value = serde_json::from_str(&text).map_err(|source| EvalError::Json {
            path: f.clone(),
            source,
        })?;
        let stem = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match v {
            Value::Array(samples) => {
                for (i, s) in samples.iter().enumerate() {
                    out.push(parse_sample(&f, s, &format!("{stem}#{i}"))?);
                }
            }
            other => out.push(parse_sample(&f, &other, &stem)?),
        }
    }
    Ok(out)
}

fn str_field<'a>(
    path: &Path,
    obj: &'a serde_json::Map<String, Value>,
    key: &str,
    ctx: &str,
) -> Result<&'a str> {
    obj.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| schema(path, format!("{ctx}: missing string field {key:?}")))
}

/// Parse one sample (a conversation and its questions).
pub fn parse_sample(path: &Path, v: &Value, default_id: &str) -> Result<Conversation> {
    let top = v
        .as_object()
        .ok_or_else(|| schema(path, "a LoCoMo sample must be a JSON object"))?;
    let conv = match top.get("conversation") {
        Some(c) => c
            .as_object()
            .ok_or_else(|| schema(path, "\"conversation\" must be an object"))?,
        None => top,
    };
    let id = top
        .get("sample_id")
        .and_then(Value::as_str)
        .unwrap_or(default_id)
        .to_string();
    let speaker_a = str_field(path, conv, "speaker_a", "conversation")?.to_string();
    let speaker_b = str_field(path, conv, "speaker_b", "conversation")?.to_string();
    let mut sessions: BTreeMap<u32, Session> = BTreeMap::new();
    for (key, val) in conv {
        let Some(n) = key
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let list = val
            .as_array()
            .ok_or_else(|| schema(path, format!("{key} must be a list of turns")))?;
        let date_key = format!("session_{n}_date_time");
        let date_time = str_field(path, conv, &date_key, key)?.to_string();
        let time = parse_locomo(&date_time);
        let mut turns = Vec::with_capacity(list.len());
        for (i, t) in list.iter().enumerate() {
            let ctx = format!("{key}[{i}]");
            let o = t
                .as_object()
                .ok_or_else(|| schema(path, format!("{ctx} must be an object")))?;
            let raw_id = str_field(path, o, "dia_id", &ctx)?;
            let dia_id = normalize_dia_id(raw_id).ok_or_else(|| {
                schema(
                    path,
                    format!("{ctx}: dia_id {raw_id:?} is not of the form D<session>:<turn>"),
                )
            })?;
            turns.push(Turn {
                dia_id,
                speaker: str_field(path, o, "speaker", &ctx)?.to_string(),
                text: o
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                caption: o
                    .get("blip_caption")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .filter(|c| !c.trim().is_empty()),
            });
        }
        sessions.insert(
            n,
            Session {
                number: n,
                date_time,
                time,
                turns,
            },
        );
    }
    if sessions.is_empty() {
        return Err(schema(path, "the conversation has no session_N list"));
    }
    let known: HashSet<&str> = sessions
        .values()
        .flat_map(|s| s.turns.iter().map(|t| t.dia_id.as_str()))
        .collect();
    let qa = top
        .get("qa")
        .and_then(Value::as_array)
        .ok_or_else(|| schema(path, "missing list \"qa\""))?;
    let mut questions = Vec::with_capacity(qa.len());
    for (i, q) in qa.iter().enumerate() {
        let ctx = format!("qa[{i}]");
        let o = q
            .as_object()
            .ok_or_else(|| schema(path, format!("{ctx} must be an object")))?;
        let question = str_field(path, o, "question", &ctx)?.to_string();
        let category = o
            .get("category")
            .and_then(Value::as_u64)
            .filter(|c| (1..=5).contains(c))
            .ok_or_else(|| schema(path, format!("{ctx}: category must be 1..5")))?
            as u8;
        let answer = match o.get("answer").or_else(|| o.get("adversarial_answer")) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let raw = o
            .get("evidence")
            .and_then(Value::as_array)
            .ok_or_else(|| schema(path, format!("{ctx}: missing list \"evidence\"")))?;
        let mut evidence = Vec::new();
        let mut unresolved = Vec::new();
        for e in raw {
            let e = e
                .as_str()
                .ok_or_else(|| schema(path, format!("{ctx}: evidence entries must be strings")))?;
            // Some entries hold several ids ("D8:6; D9:17", "D9:1 D4:4").
            for part in e.split([';', ',', ' ']).filter(|p| !p.trim().is_empty()) {
                match normalize_dia_id(part) {
                    Some(id) if known.contains(id.as_str()) => {
                        if !evidence.contains(&id) {
                            evidence.push(id)
                        }
                    }
                    _ => unresolved.push(part.trim().to_string()),
                }
            }
        }
        questions.push(Question {
            question,
            answer,
            category,
            evidence,
            unresolved,
        });
    }
    Ok(Conversation {
        id,
        speaker_a,
        speaker_b,
        sessions: sessions.into_values().collect(),
        questions,
    })
}

/// How a turn is written into the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TurnText {
    /// Prefix the speaker's name.
    pub speaker: bool,
    /// Prefix the session's date.
    pub date: bool,
    /// Also include this many turns before and after (same session).
    pub neighbours: usize,
    /// Write the turn itself this many times (at least once), so its own words outweigh its neighbours'.
    pub repeat: usize,
}

fn turn_line(t: &Turn, speaker: bool) -> String {
    let mut s = String::new();
    if speaker {
        s.push_str(&t.speaker);
        s.push_str(": ");
    }
    s.push_str(t.text.trim());
    if let Some(c) = &t.caption {
        s.push_str(" [shares a photo: ");
        s.push_str(c.trim());
        s.push(']');
    }
    s
}

fn turn_doc_text(session: &Session, i: usize, style: TurnText) -> String {
    let mut parts = Vec::new();
    if style.date {
        if let Some(t) = session.time {
            parts.push(format!("({})", day_label(t)));
        }
    }
    let from = i.saturating_sub(style.neighbours);
    let to = (i + style.neighbours + 1).min(session.turns.len());
    // The turn itself first, so it also leads a truncated embedding input; then its context in order.
    let own = turn_line(&session.turns[i], style.speaker);
    for _ in 0..style.repeat.max(1) {
        parts.push(own.clone());
    }
    for (j, t) in session.turns.iter().enumerate().take(to).skip(from) {
        if j != i {
            parts.push(turn_line(t, style.speaker));
        }
    }
    parts.join("\n")
}

/// One document per turn: key `D<s>:<t>`, session `D<s>`, the session's time as event time.
pub fn turn_docs(c: &Conversation, index: TurnText, embed: TurnText) -> Vec<Doc> {
    let mut out = Vec::with_capacity(c.turn_count());
    for s in &c.sessions {
        for (i, t) in s.turns.iter().enumerate() {
            out.push(Doc {
                key: t.dia_id.clone(),
                session: format!("D{}", s.number),
                text: turn_doc_text(s, i, index),
                embed_text: turn_doc_text(s, i, embed),
                event_time: s.time,
                speaker: Some(t.speaker.clone()),
                dated: crate::dates::mentions_time(&t.text),
                told: s
                    .time
                    .and_then(|said| crate::dates::told_window(&t.text, said)),
            });
        }
    }
    out
}

/// One document per session: all its turns, with speaker names and the session's date.
pub fn session_docs(c: &Conversation) -> Vec<Doc> {
    c.sessions
        .iter()
        .map(|s| {
            let mut text = String::new();
            if let Some(t) = s.time {
                text.push_str(&format!("({})\n", day_label(t)));
            }
            let lines: Vec<String> = s.turns.iter().map(|t| turn_line(t, true)).collect();
            text.push_str(&lines.join("\n"));
            Doc {
                key: format!("D{}", s.number),
                session: format!("D{}", s.number),
                embed_text: text.clone(),
                text,
                event_time: s.time,
                speaker: None,
                dated: false,
                told: None,
            }
        })
        .collect()
}

/// Statistics of a loaded dataset, printed beside every result.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DatasetStats {
    /// Conversations loaded.
    pub conversations: usize,
    /// Sessions over all conversations.
    pub sessions: usize,
    /// Turns over all conversations.
    pub turns: usize,
    /// Questions per category.
    pub questions_per_category: BTreeMap<u8, usize>,
    /// Questions of categories 1–4 without any resolvable evidence turn (they score 0).
    pub questions_without_evidence: usize,
    /// Evidence entries naming no turn of their conversation, verbatim.
    pub unresolved_evidence: Vec<String>,
}

/// Count what was loaded.
pub fn stats(convs: &[Conversation]) -> DatasetStats {
    let mut per_cat = BTreeMap::new();
    let mut without = 0;
    let mut unresolved = Vec::new();
    for c in convs {
        for q in &c.questions {
            *per_cat.entry(q.category).or_insert(0) += 1;
            if q.category <= 4 && q.evidence.is_empty() {
                without += 1;
            }
            for u in &q.unresolved {
                unresolved.push(format!("{}: {u}", c.id));
            }
        }
    }
    DatasetStats {
        conversations: convs.len(),
        sessions: convs.iter().map(|c| c.sessions.len()).sum(),
        turns: convs.iter().map(Conversation::turn_count).sum(),
        questions_per_category: per_cat,
        questions_without_evidence: without,
        unresolved_evidence: unresolved,
    }
}

/// Map of turn id to session id, for rolling up.
pub fn turn_sessions(c: &Conversation) -> HashMap<String, String> {
    c.sessions
        .iter()
        .flat_map(|s| {
            s.turns
                .iter()
                .map(move |t| (t.dia_id.clone(), format!("D{}", s.number)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "Look at my painting!",
                 "img_url": ["http://x"], "blip_caption": "a photo of a sunrise painting", "query": "sunrise"},
                {"speaker": "Caroline", "dia_id": "D1:3", "text": "Lovely."}
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": "Melanie", "dia_id": "D2:01", "text": "We camped at the beach."}
            ],
            "session_3_date_time": "9:00 am on 1 July, 2023",
            "qa": [
                {"question": "When did Caroline go to the support group?", "answer": "7 May 2023",
                 "evidence": ["D1:1"], "category": 2},
                {"question": "What did Melanie paint?", "answer": 2022, "evidence": ["D1:2; D2:1"], "category": 1},
                {"question": "What did Caroline paint?", "adversarial_answer": "a sunrise",
                 "evidence": ["D:1:2", "D9:9", "D"], "category": 5}
            ]
        })
    }

    #[test]
    fn parses_flat_and_nested_layouts() {
        let p = Path::new("x.json");
        let flat = parse_sample(p, &sample(), "26").unwrap();
        assert_eq!(flat.id, "26");
        assert_eq!(
            flat.sessions.len(),
            2,
            "a date without turns is not a session"
        );
        assert_eq!(flat.turn_count(), 4);
        assert_eq!(flat.sessions[1].turns[0].dia_id, "D2:1");
        assert_eq!(
            flat.sessions[0].turns[1].caption.as_deref(),
            Some("a photo of a sunrise painting")
        );
        let mut q = sample();
        let qa = q.as_object_mut().unwrap().remove("qa").unwrap();
        let nested = json!({"sample_id": "conv-26", "conversation": q, "qa": qa});
        let n = parse_sample(p, &nested, "x").unwrap();
        assert_eq!(n.id, "conv-26");
        assert_eq!(n.sessions, flat.sessions);
    }

    #[test]
    fn evidence_is_normalised_and_bad_ids_reported() {
        let c = parse_sample(Path::new("x.json"), &sample(), "26").unwrap();
        assert_eq!(c.questions[1].evidence, vec!["D1:2", "D2:1"]);
        assert_eq!(c.questions[1].answer, "2022");
        assert_eq!(c.questions[2].evidence, vec!["D1:2"]);
        assert_eq!(c.questions[2].unresolved, vec!["D9:9", "D"]);
        assert_eq!(c.questions[2].answer, "a sunrise");
        let st = stats(&[c]);
        assert_eq!(st.questions_per_category[&5], 1);
        assert_eq!(st.unresolved_evidence.len(), 2);
        assert_eq!(st.questions_without_evidence, 0);
    }

    #[test]
    fn dia_id_normalisation() {
        assert_eq!(normalize_dia_id("D30:05").as_deref(), Some("D30:5"));
        assert_eq!(normalize_dia_id("D:11:26").as_deref(), Some("D11:26"));
        assert_eq!(normalize_dia_id("D"), None);
        assert_eq!(normalize_dia_id("X1:2"), None);
        assert_eq!(session_of("D12:3"), Some("D12"));
    }

    #[test]
    fn schema_errors_name_the_problem() {
        let p = Path::new("bad.json");
        let err = parse_sample(p, &json!({"speaker_a": "A"}), "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("speaker_b"), "{err}");
        let mut s = sample();
        s["qa"][0]["category"] = json!(9);
        let err = parse_sample(p, &s, "x").unwrap_err().to_string();
        assert!(err.contains("qa[0]") && err.contains("category"), "{err}");
        let mut s = sample();
        s["session_1"][0]["dia_id"] = json!("turn one");
        assert!(parse_sample(p, &s, "x")
            .unwrap_err()
            .to_string()
            .contains("dia_id"));
    }

    #[test]
    fn turn_text_styles() {
        let c = parse_sample(Path::new("x.json"), &sample(), "26").unwrap();
        let plain = TurnText {
            speaker: false,
            date: false,
            neighbours: 0,
            repeat: 1,
        };
        let rich = TurnText {
            speaker: true,
            date: true,
            neighbours: 1,
            repeat: 1,
        };
        let docs = turn_docs(&c, rich, plain);
        assert_eq!(docs.len(), 4);
        assert_eq!(docs[1].key, "D1:2");
        assert_eq!(docs[1].session, "D1");
        assert_eq!(
            docs[1].text,
            "(8 May 2023)\nMelanie: Look at my painting! [shares a photo: a photo of a sunrise painting]\n\
             Caroline: I went to a support group yesterday.\nCaroline: Lovely."
        );
        assert_eq!(
            docs[1].embed_text,
            "Look at my painting! [shares a photo: a photo of a sunrise painting]"
        );
        let s = session_docs(&c);
        assert_eq!(s.len(), 2);
        assert!(s[1].text.starts_with("(27 June 2023)\nMelanie: We camped"));
        assert_eq!(turn_sessions(&c)["D2:1"], "D2");
    }

    #[test]
    fn loads_a_directory_and_rejects_garbage() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), sample().to_string()).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        assert_eq!(load(dir.path()).unwrap().len(), 1);
        std::fs::write(dir.path().join("b.json"), "{not json").unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("b.json") && err.contains("JSON"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        assert!(load(empty.path()).is_err());
    }
}
