//! Unicode tokenizer for keyword search: accent folding, lower-casing, CJK bigrams, optional stop words and
//! Snowball stemming.

use serde::{Deserialize, Serialize};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::stem_cache::{StemCache, WordKey};

/// Tokenizer settings; persisted in the store's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerConfig {
    /// Reduce English words to their Snowball stem.
    pub stemming: bool,
    /// Drop common English function words.
    pub stop_words: bool,
}

impl Default for TokenizerConfig {
    fn default() -> Self {
        TokenizerConfig {
            stemming: true,
            stop_words: true,
        }
    }
}

impl TokenizerConfig {
    /// Short description stored in the file, e.g. `unicode-cjk-bigram+stem+stop`.
    pub fn describe(&self) -> String {
        let mut s = String::from("unicode-cjk-bigram");
        if self.stemming {
            s.push_str("+stem");
        }
        if self.stop_words {
            s.push_str("+stop");
        }
        s
    }

    /// Inverse of [`describe`](Self::describe); unknown descriptions give `None`.
    pub fn from_description(d: &str) -> Option<Self> {
        let mut parts = d.split('+');
        if parts.next()? != "unicode-cjk-bigram" {
            return None;
        }
        let mut cfg = TokenizerConfig {
            stemming: false,
            stop_words: false,
        };
        for p in parts {
            match p {
                "stem" => cfg.stemming = true,
                "stop" => cfg.stop_words = true,
                _ => return None,
            }
        }
        Some(cfg)
    }
}

/// Splits text into index terms.
pub struct Tokenizer {
    config: TokenizerConfig,
    stemmer: rust_stemmers::Stemmer,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("config", &self.config)
            .finish()
    }
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "he", "her", "his", "i", "if", "in", "into", "is", "it", "its", "me",
    "my", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who",
    "will", "with", "you", "your", "how", "about", "been", "would", "could", "should", "am", "any",
    "can", "just", "than", "too", "very", "him", "us",
];

/// True for Han ideographs, kana and Hangul: scripts written without spaces, which we index as character
/// bigrams (entity extraction also keeps them apart from Latin-script words).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x1100..=0x11FF    // Hangul Jamo
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0x20000..=0x2FFFF) // CJK Extensions B+
}

impl Tokenizer {
    /// A tokenizer with the given settings.
    pub fn new(config: TokenizerConfig) -> Self {
        Tokenizer {
            config,
            stemmer: rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &TokenizerConfig {
        &self.config
    }

    /// Index terms of `text`, in order, with repeats.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        self.terms(text).iter().map(str::to_string).collect()
    }

    /// [`Self::tokens`] packed in one buffer: two allocations for the whole text instead of one per term (what
    /// saves use, tokenising on every core).
    pub fn terms(&self, text: &str) -> Terms {
        let mut out = Terms::with_capacity(text.len());
        if text.is_ascii() {
            self.ascii_terms(text, &mut out);
        } else {
            self.mixed_terms(text, &mut out);
        }
        out
    }

    /// [`Self::terms`] of a text with some non-ASCII characters: cut at ASCII separators (which end words
    /// and CJK runs in the Unicode path, and which normalisation neither changes nor moves anything across),
    /// the pieces that are all ASCII take the ASCII path and only the others the Unicode one.
    fn mixed_terms(&self, text: &str, out: &mut Terms) {
        let bytes = text.as_bytes();
        let separator =
            |b: u8| b < 0x80 && BYTE_CLASS[usize::from(b)] & (WORD_START | APOSTROPHE) == 0;
        let mut i = 0;
        while i < bytes.len() {
            if separator(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            let mut ascii = true;
            while i < bytes.len() && !separator(bytes[i]) {
                ascii &= bytes[i] < 0x80;
                i += 1;
            }
            // Cut at ASCII bytes only, so each piece is whole characters.
            let Some(piece) = text.get(start..i) else {
                continue;
            };
            if ascii {
                self.ascii_terms(piece, out);
            } else {
                self.unicode_terms(piece, out);
            }
        }
    }

    fn unicode_terms(&self, text: &str, out: &mut Terms) {
        let mut word = String::new();
        let mut cjk_run: Vec<char> = Vec::new();
        for c in text.nfkd() {
            if is_combining_mark(c) {
                continue;
            }
            if is_cjk(c) {
                self.flush_word(&mut word, out);
                cjk_run.push(c);
            } else if c.is_alphanumeric() {
                flush_cjk(&mut cjk_run, out);
                word.extend(c.to_lowercase());
            } else if (c == '\'' || c == '’') && !word.is_empty() {
                // "don't" -> "dont"; possessive "alice's" -> "alice" (handled on flush)
                word.push('\'');
            } else {
                self.flush_word(&mut word, out);
                flush_cjk(&mut cjk_run, out);
            }
        }
        self.flush_word(&mut word, out);
        flush_cjk(&mut cjk_run, out);
    }

    /// [`Self::terms`] for ASCII text, where normalisation, accent folding and CJK cannot apply: the same
    /// terms, without the Unicode work. Words are found as spans of the text (a letter or digit, then
    /// letters, digits and apostrophes) and lower-cased into a buffer once each; the per-thread stem cache
    /// is borrowed once for the whole text.
    fn ascii_terms(&self, text: &str, out: &mut Terms) {
        let bytes = text.as_bytes();
        let mut word = String::with_capacity(32);
        with_stem_cache(|cache| {
            let mut i = 0;
            while i < bytes.len() {
                if BYTE_CLASS[usize::from(bytes[i])] & WORD_START == 0 {
                    i += 1;
                    continue;
                }
                let start = i;
                let mut seen = 0u8;
                // Up to MAX_WORD bytes, lower-cased, packed as the cache's key as they are read.
                let mut packed = [0u8; 16];
                while let Some(&c) = bytes.get(i) {
                    let class = BYTE_CLASS[usize::from(c)];
                    if class == 0 {
                        break;
                    }
                    seen |= class;
                    if let Some(b) = packed.get_mut(i - start) {
                        *b = c | (class & UPPER);
                    }
                    i += 1;
                }
                let len = i - start;
                let digit = seen & DIGIT != 0;
                let apostrophe = seen & APOSTROPHE != 0;
                if !apostrophe {
                    if let Some(key) = WordKey::from_packed(packed, len) {
                        // Letters and digits only: the packed bytes are the whole word.
                        let w = &packed[..len];
                        if self.config.stemming && !digit {
                            self.stem_keyed(cache, key, w, out);
                        } else {
                            let w = std::str::from_utf8(w).unwrap_or_default();
                            if !(self.config.stop_words && is_stop_word(w)) {
                                out.push(w);
                            }
                        }
                        continue;
                    }
                }
                word.clear();
                word.extend(
                    bytes[start..i]
                        .iter()
                        .map(|&c| char::from(c.to_ascii_lowercase())),
                );
                if apostrophe {
                    // "alice's" -> "alice"; "don't" -> "dont".
                    if word.ends_with("'s") {
                        word.truncate(word.len() - 2);
                    }
                    word.retain(|c| c != '\'');
                    if word.is_empty() {
                        continue;
                    }
                }
                let w = word.as_str();
                if self.config.stemming && !digit {
                    self.stem_cached(cache, w, out);
                } else if !(self.config.stop_words && is_stop_word(w)) {
                    out.push(w);
                }
            }
        });
    }

    /// Ends the word being read: drops a possessive "'s" and apostrophes, skips stop words, stems.
    fn flush_word(&self, word: &mut String, out: &mut Terms) {
        if word.is_empty() {
            return;
        }
        if word.contains('\'') {
            if word.ends_with("'s") {
                word.truncate(word.len() - 2);
            }
            word.retain(|c| c != '\'');
        }
        if word.is_empty() {
            return;
        }
        if self.config.stemming && word.bytes().all(|c| c.is_ascii_alphabetic()) {
            // One lookup answers both questions for the common case.
            self.stem_into(word, out);
        } else if !(self.config.stop_words && is_stop_word(word)) {
            out.push(word);
        }
        word.clear();
    }

    /// Appends the Snowball stem of an ASCII word unless it is a stop word this tokenizer drops (see
    /// [`Self::stem_cached`]).
    fn stem_into(&self, w: &str, out: &mut Terms) {
        with_stem_cache(|cache| self.stem_cached(cache, w, out));
    }

    /// [`Self::stem_into`] with the thread's cache of answers already borrowed: words repeat, and most of a
    /// text's words were seen before.
    fn stem_cached(&self, cache: &mut StemCache, w: &str, out: &mut Terms) {
        match WordKey::new(w.as_bytes()) {
            Some(key) => self.stem_keyed(cache, key, w.as_bytes(), out),
            None => {
                // Too long for the cache: stemmed each time (rare).
                if !(self.config.stop_words && is_stop_word(w)) {
                    out.push(&self.stemmer.stem(w));
                }
            }
        }
    }

    /// [`Self::stem_cached`] for a word whose cache key is known.
    fn stem_keyed(&self, cache: &mut StemCache, key: WordKey, w: &[u8], out: &mut Terms) {
        let drop_stop = self.config.stop_words;
        if let Some((stem, stop)) = cache.get(key) {
            if !(drop_stop && stop) {
                out.push_ascii(stem);
            }
            return;
        }
        let Ok(w) = std::str::from_utf8(w) else {
            return;
        };
        let stop = is_stop_word(w);
        let stem = self.stemmer.stem(w);
        if !(drop_stop && stop) {
            out.push(&stem);
        }
        cache.insert(key, &stem, stop);
    }
}

/// [`BYTE_CLASS`] bits: a byte that can start a word (letter or digit).
const WORD_START: u8 = 1;
/// An upper-case letter; also the bit that lower-cases it.
const UPPER: u8 = 0x20;
/// A digit.
const DIGIT: u8 = 2;
/// An apostrophe (inside a word, not a start).
const APOSTROPHE: u8 = 4;

/// What each byte is to the ASCII word scanner: 0 ends a word; otherwise the bits above.
const BYTE_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_lowercase() {
            WORD_START
        } else if c.is_ascii_uppercase() {
            WORD_START | UPPER
        } else if c.is_ascii_digit() {
            WORD_START | DIGIT
        } else if c == b'\'' {
            APOSTROPHE
        } else {
            0
        };
        b += 1;
    }
    t
};

/// Runs `f` with this thread's [`StemCache`].
fn with_stem_cache<R>(f: impl FnOnce(&mut StemCache) -> R) -> R {
    thread_local! {
        static STEMS: std::cell::RefCell<StemCache> = std::cell::RefCell::new(StemCache::default());
    }
    STEMS.with(|cell| f(&mut cell.borrow_mut()))
}

/// A text's index terms, in order, packed in one string buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Terms {
    buf: String,
    /// End offset of each term in `buf`.
    ends: Vec<u32>,
}

impl Terms {
    fn with_capacity(text_len: usize) -> Terms {
        Terms {
            buf: String::with_capacity(text_len),
            ends: Vec::with_capacity(text_len / 6),
        }
    }

    fn push(&mut self, term: &str) {
        self.buf.push_str(term);
        self.ends.push(self.buf.len() as u32);
    }

    /// [`Self::push`] for an ASCII term held as bytes (a cached stem; each byte is taken as the character
    /// of that number, which for ASCII is the byte itself).
    fn push_ascii(&mut self, term: &[u8]) {
        self.buf.reserve(term.len());
        for &b in term {
            self.buf.push(char::from(b));
        }
        self.ends.push(self.buf.len() as u32);
    }

    /// Number of terms (with repeats).
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no terms.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The terms in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let t = &self.buf[start..end as usize];
            start = end as usize;
            t
        })
    }
}

/// Whether `w` is one of [`STOP_WORDS`].
fn is_stop_word(w: &str) -> bool {
    type Set = std::collections::HashSet<&'static str, ahash::RandomState>;
    static SET: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
        .contains(w)
}

fn flush_cjk(run: &mut Vec<char>, out: &mut Terms) {
    let mut pair = String::new();
    match run.len() {
        0 => {}
        1 => {
            pair.push(run[0]);
            out.push(&pair);
        }
        _ => {
            for w in run.windows(2) {
                pair.clear();
                pair.extend(w);
                out.push(&pair);
            }
        }
    }
    run.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> Tokenizer {
        Tokenizer::new(TokenizerConfig {
            stemming: false,
            stop_words: false,
        })
    }

    #[test]
    fn folds_accents_and_case() {
        assert_eq!(
            plain().tokens("Café RÉSUMÉ naïve"),
            vec!["cafe", "resume", "naive"]
        );
    }

    #[test]
    fn cjk_becomes_bigrams() {
        assert_eq!(
            plain().tokens("東京タワー"),
            vec!["東京", "京タ", "タワ", "ワー"]
        );
        assert_eq!(plain().tokens("我 喜欢"), vec!["我", "喜欢"]);
        assert_eq!(plain().tokens("hello世界"), vec!["hello", "世界"]);
    }

    #[test]
    fn stems_and_drops_stop_words() {
        let t = Tokenizer::new(TokenizerConfig::default());
        assert_eq!(
            t.tokens("The runners were running to Paris"),
            vec!["runner", "run", "pari"]
        );
        assert_eq!(
            t.tokens("Alice's dog doesn't bark"),
            vec!["alic", "dog", "doesnt", "bark"]
        );
    }

    #[test]
    fn ascii_fast_path_gives_the_unicode_path_terms() {
        let texts = [
            "Alice's cat didn't EAT the 3 fish-cakes; it's Bob's (2022) job!",
            "  running runners ran -- O'Neil's 'quoted' words' end'",
            "",
            "''' x'y 12ab AB12 the and of",
            "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
        ];
        same_terms_as_the_unicode_path(&texts, Tokenizer::ascii_terms);
    }

    /// Under both settings, `path` gives each text the terms the Unicode path gives it, and so do
    /// [`Tokenizer::terms`] and [`Tokenizer::tokens`].
    fn same_terms_as_the_unicode_path(texts: &[&str], path: fn(&Tokenizer, &str, &mut Terms)) {
        for cfg in [
            TokenizerConfig::default(),
            TokenizerConfig {
                stemming: false,
                stop_words: false,
            },
        ] {
            let t = Tokenizer::new(cfg);
            for &text in texts {
                let (mut fast, mut unicode) = (Terms::default(), Terms::default());
                path(&t, text, &mut fast);
                t.unicode_terms(text, &mut unicode);
                assert_eq!(fast, unicode, "{text:?}");
                assert_eq!(t.terms(text), unicode);
                let v: Vec<&str> = unicode.iter().collect();
                assert_eq!(t.tokens(text), v);
                assert_eq!(unicode.len(), v.len());
            }
        }
    }

    #[test]
    fn mixed_texts_give_the_unicode_path_terms() {
        let texts = [
            "Caroline’s café—naïve RÉSUMÉ; 東京タワー in 2022! don’t it's",
            "ﬁne ﬂowers… ＡＢＣ１２３ x\u{301}y e\u{301}te\u{301} 'quoted’ ’lead",
            "hello世界 我 喜欢 Größe straße Ωmega",
            "🙂 emoji 🙂🙂 next",
        ];
        same_terms_as_the_unicode_path(&texts, Tokenizer::mixed_terms);
    }

    proptest::proptest! {
        /// A word's term is its Snowball stem whether or not the cache holds it yet, at any length (the
        /// cache keeps words of up to 15 bytes; longer ones are stemmed each time).
        #[test]
        fn cached_stems_are_the_stemmers(words in proptest::collection::vec("[a-zA-Z]{1,20}", 1..40)) {
            let t = Tokenizer::new(TokenizerConfig { stemming: true, stop_words: false });
            let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
            let text = words.join(" ");
            let want: Vec<String> = words
                .iter()
                .map(|w| stemmer.stem(&w.to_ascii_lowercase()).into_owned())
                .collect();
            proptest::prop_assert_eq!(t.tokens(&text), want.clone());
            proptest::prop_assert_eq!(t.tokens(&text), want);
        }
    }

    /// Whether `path` gives `text` the same terms as the Unicode path, under these settings.
    fn path_matches_unicode(
        text: &str,
        stemming: bool,
        stop_words: bool,
        path: fn(&Tokenizer, &str, &mut Terms),
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let t = Tokenizer::new(TokenizerConfig {
            stemming,
            stop_words,
        });
        let (mut fast, mut unicode) = (Terms::default(), Terms::default());
        path(&t, text, &mut fast);
        t.unicode_terms(text, &mut unicode);
        proptest::prop_assert_eq!(fast, unicode);
        Ok(())
    }

    proptest::proptest! {
        /// Any text mixing ASCII with accented, compatibility, CJK and combining characters gives the
        /// same terms cut into pieces as through the Unicode path whole.
        #[test]
        fn mixed_path_matches_the_unicode_path(
            text in "[a-zA-Z0-9' .,;:!?()\\-éÉüßøΩж’‘ﬁＡ１東京タワー한\u{301}\u{308}…]{0,60}",
            stemming: bool,
            stop_words: bool,
        ) {
            path_matches_unicode(&text, stemming, stop_words, Tokenizer::mixed_terms)?;
        }

        /// Any ASCII text, apostrophes, digits and capitals among its words, gives the same terms through
        /// the fast path as through the Unicode path, under every setting.
        #[test]
        fn ascii_fast_path_matches_the_unicode_path_on_any_ascii(
            text in "[a-zA-Z0-9' .,;:!?()\\-]{0,80}",
            stemming: bool,
            stop_words: bool,
        ) {
            path_matches_unicode(&text, stemming, stop_words, Tokenizer::ascii_terms)?;
        }
    }

    #[test]
    fn empty_and_punctuation_only() {
        assert!(plain().tokens("").is_empty());
        assert!(plain().tokens("  ... !!! ").is_empty());
    }

    #[test]
    fn config_description_round_trips() {
        for stemming in [false, true] {
            for stop_words in [false, true] {
                let c = TokenizerConfig {
                    stemming,
                    stop_words,
                };
                assert_eq!(TokenizerConfig::from_description(&c.describe()), Some(c));
            }
        }
        assert_eq!(TokenizerConfig::from_description("whitespace"), None);
    }
}
