//! The part of a long text the model can see. The model reads at most [`crate::MAX_SEQ_LEN`] tokens, but the
//! tokenizer encodes a whole text before truncating it, so a text of megabytes costs seconds and hundreds of
//! megabytes of memory for a vector that depends only on its start. [`visible_prefix`] cuts a text short
//! where that cannot change its truncated encoding.
//!
//! Why the cut is safe: BERT's pre-tokenizer splits the text on whitespace (`char::is_whitespace`) first, so
//! the words before a whitespace character are encoded the same with or without what follows; and a
//! whitespace-separated word holding a letter or digit yields at least one token (word pieces, or `[UNK]`),
//! since normalisation keeps letters and digits (lower-casing and stripping accents leave a base character).
//! After `tokens` such words the prefix already holds `tokens` tokens, as many as truncation keeps.

/// `text` cut after the whitespace-separated word that makes `tokens` words holding a letter or digit, or all
/// of `text` when it has fewer. Encoding the prefix and truncating to `tokens` tokens gives the same ids as
/// encoding the whole text and truncating.
pub(crate) fn visible_prefix(text: &str, tokens: usize) -> &str {
    // Short texts (nearly all of them) are returned without a scan: fewer bytes than `tokens` words need.
    if text.len() <= tokens.saturating_mul(2) {
        return text;
    }
    let mut counted = 0usize;
    let mut in_word = false;
    let mut word_counts = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word && word_counts {
                counted += 1;
                if counted >= tokens {
                    return &text[..i];
                }
            }
            in_word = false;
            word_counts = false;
        } else {
            in_word = true;
            word_counts |= c.is_alphanumeric();
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_and_texts_of_few_words_are_kept_whole() {
        assert_eq!(visible_prefix("", 4), "");
        assert_eq!(visible_prefix("one two", 4), "one two");
        assert_eq!(visible_prefix("a b c d", 4), "a b c d");
        // Long, but only three words.
        let long = format!("{} {} {}", "x".repeat(50), "y".repeat(50), "z".repeat(50));
        assert_eq!(visible_prefix(&long, 4), long);
    }

    #[test]
    fn the_cut_falls_after_the_counted_word_on_whitespace() {
        let text = "alpha beta\tgamma\ndelta epsilon zeta eta theta";
        assert_eq!(visible_prefix(text, 4), "alpha beta\tgamma\ndelta");
        // Words without a letter or digit are not counted (they might yield no token at all).
        let text = "alpha ... beta --- gamma \u{301}\u{301} delta epsilon zeta eta theta";
        assert_eq!(
            visible_prefix(text, 4),
            "alpha ... beta --- gamma \u{301}\u{301} delta"
        );
        // A CJK run with no spaces is one counted word here (the tokenizer makes a token of each character).
        let text = format!("{} {}", "東京".repeat(40), "word ".repeat(40));
        let cut = visible_prefix(&text, 4);
        assert_eq!(cut, format!("{} word word word", "東京".repeat(40)));
        // Never splits a character: cuts land on char boundaries by construction.
        assert!(text.is_char_boundary(cut.len()));
    }
}
