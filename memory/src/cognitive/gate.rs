//! Decision gate: whether an exchange is worth saving and whether a user turn is worth a memory search.
//!
//! Trivial acknowledgements ("ok", "thanks!", "yes please") and content-free turns (punctuation, emoji, a
//! single short token) are skipped. The check works on bytes without allocating; it costs tens of
//! nanoseconds per call (see `cognitive-bench`).

/// Acknowledgements that carry nothing worth remembering, lower-case, punctuation stripped.
const TRIVIAL: &[&str] = &[
    "ok",
    "okay",
    "k",
    "kk",
    "yes",
    "yep",
    "yeah",
    "yup",
    "no",
    "nope",
    "nah",
    "sure",
    "fine",
    "cool",
    "nice",
    "great",
    "good",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "thanks a lot",
    "thank you so much",
    "many thanks",
    "got it",
    "gotcha",
    "alright",
    "all right",
    "right",
    "sounds good",
    "perfect",
    "awesome",
    "hi",
    "hello",
    "hey",
    "bye",
    "goodbye",
    "see you",
    "lol",
    "haha",
    "hmm",
    "ok thanks",
    "okay thanks",
    "ok thank you",
    "yes please",
    "no thanks",
    "will do",
    "understood",
    "i see",
    "makes sense",
    "done",
    "np",
    "no problem",
    "you're welcome",
    "youre welcome",
];

/// Longest entry of [`TRIVIAL`] in bytes; longer turns are never trivial.
const MAX_TRIVIAL_LEN: usize = 20;

/// Fewer alphanumeric characters than this makes a turn content-free.
const MIN_CONTENT_CHARS: usize = 3;

/// Whether `text` is an acknowledgement or carries no content.
pub fn is_trivial(text: &str) -> bool {
    let bytes = text.as_bytes();
    // Trim anything that is not a letter or digit at either end (spaces, punctuation, emoji bytes).
    let start = bytes.iter().position(|b| b.is_ascii_alphanumeric());
    let Some(start) = start else {
        // No ASCII letter or digit: content-free unless it holds non-ASCII letters (CJK, accented words...).
        return !text.chars().any(char::is_alphanumeric);
    };
    let end = bytes
        .iter()
        .rposition(|b| b.is_ascii_alphanumeric())
        .map_or(start, |e| e + 1);
    let core = &bytes[start..end];
    if core.len() > MAX_TRIVIAL_LEN {
        return false;
    }
    // Non-ASCII letters inside a short turn: treat as content (we only know English acknowledgements).
    if core.iter().any(|b| !b.is_ascii()) {
        return false;
    }
    let alnum = core.iter().filter(|b| b.is_ascii_alphanumeric()).count();
    if alnum < MIN_CONTENT_CHARS && !core.iter().all(u8::is_ascii_digit) {
        // "k", "ty", "?!" — but a bare number such as "42" can answer a question.
        return true;
    }
    // Compare against the list ignoring case and collapsing inner punctuation/spaces to single spaces.
    let mut buf = [0u8; MAX_TRIVIAL_LEN];
    let mut n = 0;
    let mut gap = false;
    for &b in core {
        if b.is_ascii_alphanumeric() || b == b'\'' {
            if gap && n > 0 {
                buf[n] = b' ';
                n += 1;
            }
            gap = false;
            buf[n] = b.to_ascii_lowercase();
            n += 1;
        } else {
            gap = true;
        }
    }
    let norm = &buf[..n];
    TRIVIAL.iter().any(|t| t.as_bytes() == norm)
}

/// Whether an exchange (user turn plus the agent's reply) should be saved at all.
pub fn should_save(user: &str, assistant: &str) -> bool {
    !is_trivial(user)
        || (!assistant.trim().is_empty() && !is_trivial(assistant) && !is_trivial_reply(assistant))
}

/// Agent replies that only acknowledge ("You're welcome!", "Glad I could help.").
fn is_trivial_reply(text: &str) -> bool {
    let t = text.trim().as_bytes();
    if t.len() > 40 {
        return false;
    }
    [
        "glad i could help",
        "happy to help",
        "anytime",
        "you're welcome",
        "no problem",
    ]
    .iter()
    .any(|p| t.len() >= p.len() && t[..p.len()].eq_ignore_ascii_case(p.as_bytes()))
}

/// Whether a user turn should trigger a memory search before answering.
pub fn should_search(user: &str) -> bool {
    !is_trivial(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_are_trivial() {
        for t in [
            "ok",
            "OK!",
            "  thanks ",
            "Thank you!!",
            "yes please",
            "k",
            "👍",
            "...",
            "",
            "Got it.",
            "ok, thanks",
        ] {
            assert!(is_trivial(t), "{t:?} should be trivial");
        }
    }

    #[test]
    fn content_is_not_trivial() {
        for t in [
            "I moved to Berlin",
            "42",
            "my dog is called Pixel",
            "ok so what did I say about Rust?",
            "東京に住んでいます",
            "Thanks, and please remember my flight is on Friday",
        ] {
            assert!(!is_trivial(t), "{t:?} should not be trivial");
        }
    }

    #[test]
    fn gate_decisions() {
        assert!(!should_save("thanks", "You're welcome!"));
        assert!(!should_save("ok", ""));
        assert!(should_save(
            "ok",
            "I booked the 9:40 train to Lyon for you."
        ));
        assert!(should_save("I prefer window seats", "Noted."));
        assert!(should_search("What's my sister's name?"));
        assert!(!should_search("cool"));
    }
}
