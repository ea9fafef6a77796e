//! Save strategies: which parts of an exchange become memories.
//!
//! * [`SaveStrategy::EveryExchange`] saves every exchange the gate lets through (user turn, agent turn, both
//!   as two records, or one combined record).
//! * [`SaveStrategy::OnSemanticShift`] skips an exchange whose sketch is too similar to one of the last few
//!   saved exchanges.
//! * [`SaveStrategy::OnUserCorrection`] saves only turns in which the user corrects something.
//!
//! Whatever the strategy, a user turn carrying a correction cue is saved with source `user_correction`,
//! which the re-ranker treats as the most authoritative.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::gate;
use super::sketch::{dot, sketch};

/// Which turns of an exchange are saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExchangeParts {
    /// Only the user's turn.
    UserTurn,
    /// Only the agent's turn.
    AgentTurn,
    /// Both, as two records.
    Both,
    /// Both, as one record `user: ... / assistant: ...`.
    Combined,
}

/// When an exchange is saved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SaveStrategy {
    /// Every exchange that passes the gate.
    EveryExchange(ExchangeParts),
    /// Only exchanges whose similarity to each of the last `window` saved ones is below `max_similarity`.
    OnSemanticShift {
        /// What to save when the exchange is new enough.
        parts: ExchangeParts,
        /// Similarity (cosine of term sketches, 0..1) at or above which an exchange counts as a repeat.
        max_similarity: f32,
        /// How many recent saved exchanges to compare against.
        window: usize,
    },
    /// Only user turns that correct something ("actually ...", "I meant ...").
    OnUserCorrection,
}

impl Default for SaveStrategy {
    fn default() -> Self {
        SaveStrategy::EveryExchange(ExchangeParts::Combined)
    }
}

/// What a strategy remembers between exchanges (persisted by `AgentMemory`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyState {
    /// Sketches of the most recent saved exchanges, oldest first.
    pub recent: VecDeque<Vec<f32>>,
    /// Exchanges seen.
    pub seen: u64,
    /// Exchanges skipped (by the gate or the strategy).
    pub skipped: u64,
}

/// One record a strategy wants saved.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedSave {
    /// The text to save.
    pub text: String,
    /// Source name (`conversation` or `user_correction`).
    pub source: &'static str,
}

/// Phrases with which users correct earlier statements.
const CORRECTION_CUES: &[&str] = &[
    "actually",
    "i meant",
    "i mean ",
    "correction",
    "that's wrong",
    "that is wrong",
    "that's not right",
    "that's not correct",
    "not what i said",
    "let me correct",
    "to clarify",
    "i misspoke",
    "scratch that",
];

/// Whether a user turn corrects something said earlier.
pub fn is_correction(user: &str) -> bool {
    let lower = user.trim().to_lowercase();
    if lower.starts_with("no, ") || lower.starts_with("no it") || lower.starts_with("wrong") {
        return true;
    }
    CORRECTION_CUES.iter().any(|c| lower.contains(c))
}

/// Decide what to save for one exchange and update the strategy state.
pub fn plan(
    strategy: &SaveStrategy,
    state: &mut StrategyState,
    user: &str,
    assistant: &str,
) -> Vec<PlannedSave> {
    state.seen += 1;
    if !gate::should_save(user, assistant) {
        state.skipped += 1;
        return Vec::new();
    }
    let correction = is_correction(user);
    let user_source = if correction {
        "user_correction"
    } else {
        "conversation"
    };
    let parts = match strategy {
        SaveStrategy::EveryExchange(p) => *p,
        SaveStrategy::OnSemanticShift {
            parts,
            max_similarity,
            window,
        } => {
            let s = sketch(&format!("{user} {assistant}"));
            // A correction is always saved: it is new information by definition.
            let repeat = !correction && state.recent.iter().any(|r| dot(r, &s) >= *max_similarity);
            if repeat {
                state.skipped += 1;
                return Vec::new();
            }
            state.recent.push_back(s);
            while state.recent.len() > (*window).max(1) {
                state.recent.pop_front();
            }
            *parts
        }
        SaveStrategy::OnUserCorrection => {
            if !correction {
                state.skipped += 1;
                return Vec::new();
            }
            return vec![PlannedSave {
                text: user.trim().to_string(),
                source: "user_correction",
            }];
        }
    };
    let user_t = user.trim();
    let agent_t = assistant.trim();
    let mut out = Vec::new();
    let mut push = |text: String, source: &'static str| {
        if !text.trim().is_empty() {
            out.push(PlannedSave { text, source });
        }
    };
    match parts {
        ExchangeParts::UserTurn => push(user_t.to_string(), user_source),
        ExchangeParts::AgentTurn => push(agent_t.to_string(), "conversation"),
        ExchangeParts::Both => {
            if !gate::is_trivial(user_t) {
                push(user_t.to_string(), user_source);
            }
            if !gate::is_trivial(agent_t) {
                push(agent_t.to_string(), "conversation");
            }
        }
        ExchangeParts::Combined => {
            let text = match (user_t.is_empty(), agent_t.is_empty()) {
                (false, false) => format!("user: {user_t}\nassistant: {agent_t}"),
                (false, true) => format!("user: {user_t}"),
                _ => format!("assistant: {agent_t}"),
            };
            push(text, user_source);
        }
    }
    if out.is_empty() {
        state.skipped += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exchange_parts() {
        let mut st = StrategyState::default();
        let both = SaveStrategy::EveryExchange(ExchangeParts::Both);
        let p = plan(&both, &mut st, "My sister is called Ana", "Nice name!");
        assert_eq!(p.len(), 2);
        let comb = SaveStrategy::EveryExchange(ExchangeParts::Combined);
        let p = plan(&comb, &mut st, "My sister is called Ana", "Noted.");
        assert_eq!(p.len(), 1);
        assert!(p[0].text.starts_with("user: My sister"));
        let p = plan(&comb, &mut st, "thanks", "You're welcome!");
        assert!(p.is_empty());
        assert_eq!(st.skipped, 1);
    }

    #[test]
    fn semantic_shift_skips_repeats() {
        let mut st = StrategyState::default();
        let s = SaveStrategy::OnSemanticShift {
            parts: ExchangeParts::UserTurn,
            max_similarity: 0.8,
            window: 4,
        };
        assert_eq!(plan(&s, &mut st, "I love hiking in the Alps", "").len(), 1);
        assert!(plan(&s, &mut st, "I love hiking in the Alps!", "").is_empty());
        assert_eq!(plan(&s, &mut st, "My car is a blue Prius", "").len(), 1);
        assert_eq!(st.recent.len(), 2);
    }

    #[test]
    fn corrections_are_marked() {
        assert!(is_correction("Actually, I live in Berlin now"));
        assert!(is_correction("No, I meant Tuesday"));
        assert!(!is_correction("I live in Berlin"));
        let mut st = StrategyState::default();
        let p = plan(
            &SaveStrategy::OnUserCorrection,
            &mut st,
            "I live in Paris",
            "ok",
        );
        assert!(p.is_empty());
        let p = plan(
            &SaveStrategy::OnUserCorrection,
            &mut st,
            "Actually I live in Berlin",
            "Updated.",
        );
        assert_eq!(p[0].source, "user_correction");
        let p = plan(
            &SaveStrategy::EveryExchange(ExchangeParts::Combined),
            &mut st,
            "I meant the 9:40 train",
            "Got it",
        );
        assert_eq!(p[0].source, "user_correction");
    }
}
