//! Knowledge updates: recognise when a memory states something about the same subject as an earlier one
//! ("I live in Paris" → "I moved to Berlin"), so that the newer supersedes the older.
//!
//! A subject is (holder, attribute): the holder is the speaker ("Name:" prefix, "user:" or first person → the
//! user) or a named third person; the attribute comes from a fixed set of patterns (residence, employer, age,
//! car, partner) or from "my X is ..." (attribute X). Texts that match no pattern have no subject and never
//! supersede anything. English only.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// What a memory is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Subject {
    /// Whose fact it is ("user" or a lower-case name).
    pub holder: String,
    /// Which fact ("residence", "employer", "favorite color", ...).
    pub attribute: String,
}

/// First-person patterns: (phrase, attribute), each phrase after a space (a whole first word), in order of
/// precedence: the first that occurs anywhere in a text names its attribute.
const FIRST_PERSON: &[(&str, &str)] = &[
    (" i live in ", "residence"),
    (" i now live in ", "residence"),
    (" i'm living in ", "residence"),
    (" i am living in ", "residence"),
    (" i moved to ", "residence"),
    (" i've moved to ", "residence"),
    (" i have moved to ", "residence"),
    (" i relocated to ", "residence"),
    (" i'm based in ", "residence"),
    (" i am based in ", "residence"),
    (" i work at ", "employer"),
    (" i work for ", "employer"),
    (" i now work at ", "employer"),
    (" i now work for ", "employer"),
    (" i'm working at ", "employer"),
    (" i am working at ", "employer"),
    (" i joined ", "employer"),
    (" i got a job at ", "employer"),
    (" i drive a ", "car"),
    (" i drive an ", "car"),
    (" i'm married to ", "partner"),
    (" i am married to ", "partner"),
    (" i'm dating ", "partner"),
];

/// Third-person verbs: (phrase after the name, attribute), each phrase starting with a space.
const THIRD_PERSON: &[(&str, &str)] = &[
    (" lives in ", "residence"),
    (" moved to ", "residence"),
    (" relocated to ", "residence"),
    (" works at ", "employer"),
    (" works for ", "employer"),
    (" joined ", "employer"),
    (" drives a ", "car"),
    (" is married to ", "partner"),
];

/// The letters the phrases above start with (after their space).
const PHRASE_LETTERS: &[u8] = b"dijlmrwy";

/// The part of a text that states facts: the user's side of a combined exchange, without a speaker prefix.
/// Returns (holder, body).
fn holder_and_body(text: &str) -> (String, String) {
    let t = text.trim();
    let t = t.split("\nassistant:").next().unwrap_or(t);
    if let Some((head, rest)) = t.split_once(':') {
        let head = head.trim();
        let is_name = !head.is_empty()
            && head.len() <= 40
            && head.split_whitespace().count() <= 3
            && head
                .chars()
                .all(|c| c.is_alphabetic() || c == ' ' || c == '-' || c == '.');
        if is_name {
            let h = head.to_lowercase();
            let holder = if h == "user" || h == "me" {
                "user".to_string()
            } else {
                h
            };
            return (holder, rest.trim().to_lowercase());
        }
    }
    ("user".to_string(), t.to_lowercase())
}

/// The subject a memory states a fact about, if any.
pub fn subject_of(text: &str) -> Option<Subject> {
    let (holder, body) = holder_and_body(text);
    let padded = format!(" {body}");
    // Every phrase below starts with a space, so one pass over the spaces finds them all: the first-person
    // phrase listed first, where " my " first occurs, whether the age phrases occur, and each third-person
    // phrase's first occurrence.
    let mut first: Option<usize> = None;
    let mut my: Option<usize> = None;
    let (mut years_old, mut i_am) = (false, false);
    let mut third = [None; THIRD_PERSON.len()];
    let bytes = padded.as_bytes();
    for at in 0..bytes.len().saturating_sub(1) {
        let next = bytes[at + 1];
        // Only a space followed by a letter some phrase starts with.
        if bytes[at] != b' ' || !PHRASE_LETTERS.contains(&next) {
            continue;
        }
        let rest = &padded[at..];
        // The word "i" (then a space or an apostrophe), not "in" or "is".
        if next == b'i' && matches!(rest.as_bytes().get(2), Some(b' ' | b'\'')) {
            let bound = first.unwrap_or(FIRST_PERSON.len());
            if let Some(k) = FIRST_PERSON[..bound]
                .iter()
                .position(|(p, _)| rest.starts_with(p))
            {
                first = Some(k);
            }
            i_am |= rest.starts_with(" i'm ") || rest.starts_with(" i am ");
        }
        if my.is_none() && next == b'm' && rest.starts_with(" my ") {
            my = Some(at);
        }
        years_old |= next == b'y' && rest.starts_with(" years old");
        for (k, (p, _)) in THIRD_PERSON.iter().enumerate() {
            if third[k].is_none() && p.as_bytes()[1] == next && rest.starts_with(p) {
                third[k] = Some(at);
            }
        }
    }
    if let Some(k) = first {
        return Some(Subject {
            holder,
            attribute: FIRST_PERSON[k].1.to_string(),
        });
    }
    // "my favorite color is ...", "my sister's name is ..."
    if let Some(pos) = my {
        let rest = &padded[pos + 4..];
        if let Some(is_at) = rest.find(" is ").or_else(|| rest.find(" are ")) {
            let attr = rest[..is_at].trim();
            let words = attr.split_whitespace().count();
            if (1..=3).contains(&words)
                && attr
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == ' ' || c == '\'')
            {
                return Some(Subject {
                    holder,
                    attribute: attr.to_string(),
                });
            }
        }
    }
    // "I'm 34 years old", "I am 34"
    if years_old && i_am {
        return Some(Subject {
            holder,
            attribute: "age".into(),
        });
    }
    // "Alice lives in Rome": a capitalised name right before the verb, read from the original text.
    for ((_, attr), found) in THIRD_PERSON.iter().zip(third) {
        if let Some(pos) = found {
            let before = &padded[..pos];
            let name = before.split_whitespace().last().unwrap_or("");
            if name.is_empty()
                || matches!(
                    name,
                    "he" | "she" | "they" | "it" | "who" | "that" | "which"
                )
            {
                continue;
            }
            // Only when the original spelled it with a capital (a name, not "everyone lives in").
            // By characters: a name may start with a multi-byte letter ("Álvarez").
            let mut chars = name.chars();
            let capitalised: String = chars
                .next()
                .into_iter()
                .flat_map(char::to_uppercase)
                .chain(chars)
                .collect();
            let original_cap = text.contains(&capitalised);
            if original_cap {
                return Some(Subject {
                    holder: name.to_string(),
                    attribute: (*attr).to_string(),
                });
            }
        }
    }
    None
}

/// Latest record per (agent, subject).
#[derive(Clone, Debug, Default)]
pub struct SubjectIndex {
    latest: HashMap<(String, Subject), (u64, i64)>,
}

/// What to do after saving a memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateAction {
    /// Nothing: no subject, or the first memory about it.
    None,
    /// Mark record `old` superseded by record `new`.
    Supersede {
        /// The record to mark.
        old: u64,
        /// The record that replaces it.
        new: u64,
    },
}

impl SubjectIndex {
    /// Empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register record `id` (saved by `agent`, about time `time`) and say which record it supersedes (or
    /// is superseded by, when it reports something older than what is already known).
    pub fn observe(&mut self, agent: &str, id: u64, text: &str, time: i64) -> UpdateAction {
        let Some(subject) = subject_of(text) else {
            return UpdateAction::None;
        };
        let key = (agent.to_string(), subject);
        match self.latest.get(&key).copied() {
            None => {
                self.latest.insert(key, (id, time));
                UpdateAction::None
            }
            Some((old, _)) if old == id => UpdateAction::None,
            Some((old, old_time)) if time >= old_time => {
                self.latest.insert(key, (id, time));
                UpdateAction::Supersede { old, new: id }
            }
            Some((current, _)) => UpdateAction::Supersede {
                old: id,
                new: current,
            },
        }
    }

    /// The current record about a subject.
    pub fn current(&self, agent: &str, subject: &Subject) -> Option<u64> {
        self.latest
            .get(&(agent.to_string(), subject.clone()))
            .map(|x| x.0)
    }

    /// Forget a record (when it is forgotten in the store).
    pub fn remove(&mut self, id: u64) {
        self.latest.retain(|_, v| v.0 != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects() {
        let s = subject_of("I live in Paris").unwrap();
        assert_eq!(
            (s.holder.as_str(), s.attribute.as_str()),
            ("user", "residence")
        );
        assert_eq!(
            subject_of("Actually, I moved to Berlin last week").unwrap(),
            s
        );
        let s = subject_of("Evan: my favorite color is green").unwrap();
        assert_eq!(
            (s.holder.as_str(), s.attribute.as_str()),
            ("evan", "favorite color")
        );
        let s = subject_of("Alice works at Acme").unwrap();
        assert_eq!(
            (s.holder.as_str(), s.attribute.as_str()),
            ("alice", "employer")
        );
        assert_eq!(
            subject_of("user: I'm 34 years old\nassistant: noted")
                .unwrap()
                .attribute,
            "age"
        );
        assert!(subject_of("I love hiking").is_none());
        // The phrase listed first wins wherever it is in the text; a phrase must start a word.
        assert_eq!(
            subject_of("I work at Acme and I live in Rome")
                .unwrap()
                .attribute,
            "residence"
        );
        assert_eq!(
            subject_of("so I joined Acme, I drive a Fiat")
                .unwrap()
                .attribute,
            "employer"
        );
        assert!(subject_of("Hi live in peace").is_none());
        assert_eq!(subject_of("I am 34 years old").unwrap().attribute, "age");
        assert_eq!(
            subject_of("years old... I'm 7 years old")
                .unwrap()
                .attribute,
            "age"
        );
        assert!(
            subject_of("I'm happy, you are 30 years older").is_some_and(|s| s.attribute == "age")
        );
        assert!(subject_of("he is 30 years old").is_none());
        assert_eq!(
            subject_of("my dog is fine and my cat is old")
                .unwrap()
                .attribute,
            "dog"
        );
        assert!(FIRST_PERSON
            .iter()
            .all(|(p, _)| p.starts_with(" i ") || p.starts_with(" i'")));
        assert!(THIRD_PERSON.iter().all(|(p, _)| p.starts_with(' ')));
        let starts = FIRST_PERSON
            .iter()
            .chain(THIRD_PERSON)
            .map(|(p, _)| p.as_bytes()[1]);
        assert!(starts
            .chain([b'm', b'y'])
            .all(|c| PHRASE_LETTERS.contains(&c)));
        // Only a phrase's first occurrence counts, as before: "he" before it rules this one out.
        assert!(subject_of("then he moved to Oslo and Bob moved to Rome").is_none());
        let s = subject_of("They say he works at Acme; Bob lives in Rome").unwrap();
        assert_eq!(
            (s.holder.as_str(), s.attribute.as_str()),
            ("bob", "residence")
        );
        assert_eq!(subject_of("i live in Oslo").unwrap().attribute, "residence");
        assert!(subject_of("everyone lives in fear").is_none());
    }

    #[test]
    fn newer_supersedes_older() {
        let mut ix = SubjectIndex::new();
        assert_eq!(
            ix.observe("main", 1, "I live in Paris", 100),
            UpdateAction::None
        );
        assert_eq!(
            ix.observe("main", 2, "I moved to Berlin", 200),
            UpdateAction::Supersede { old: 1, new: 2 }
        );
        // Late news about an earlier time is itself superseded.
        assert_eq!(
            ix.observe("main", 3, "I live in Rome", 50),
            UpdateAction::Supersede { old: 3, new: 2 }
        );
        // Other agents keep their own facts.
        assert_eq!(
            ix.observe("other", 4, "I live in Oslo", 300),
            UpdateAction::None
        );
        let subj = subject_of("I live in x").unwrap();
        assert_eq!(ix.current("main", &subj), Some(2));
        ix.remove(2);
        assert_eq!(ix.current("main", &subj), None);
    }
}
