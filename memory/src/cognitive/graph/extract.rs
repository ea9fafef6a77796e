//! Rule-based entity and relation extraction from saved text.
//!
//! * Technologies, places: small gazetteers (plus "moved to X", "live in X", "trip to X" for places).
//! * Organisations: capitalised phrases ending in a company/institution word, or after "work at", "joined".
//! * Dates: absolute dates ("18 May 2023", "May 2023", "2023-05-18").
//! * People: other capitalised words and phrases inside a sentence, or a "Name:" speaker prefix. A
//!   capitalised word that starts a sentence is only reported as `tentative` (it may be "Yeah" or "Sounds").
//!
//! Relations: typed by the verb between two mentions (works_at, lives_in, visited, uses, related_to), and
//! `co_occurs` between all mentions of one text.
//!
//! The rules are English ones. Other Latin-script text works as far as capitalisation does (accented names such
//! as "José Álvarez" are names; gazetteer look-ups ignore accents, so "Zürich" is Zurich). CJK text is split
//! from Latin script, so names, technologies and ISO dates written inside it are found; CJK dates
//! ("2023年5月18日", "2023년 5월") and a small list of CJK place names are recognised; CJK person names are not
//! (nothing marks them). It misses lower-case names.

use crate::tokenize::is_cjk;
use serde::{Deserialize, Serialize};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Kind of an entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntityKind {
    /// A person.
    Person,
    /// A company, institution or group.
    Organisation,
    /// A place.
    Place,
    /// An absolute date.
    Date,
    /// A technology (language, tool, platform).
    Technology,
}

/// One entity mention in a text.
#[derive(Clone, Debug, PartialEq)]
pub struct Mention {
    /// The name as written.
    pub name: String,
    /// Its kind.
    pub kind: EntityKind,
    /// Byte span in the text.
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
    /// True when only weak evidence supports it (sentence-initial capital); kept only if the entity is known.
    pub tentative: bool,
}

/// A typed relation between two mentions (indexes into the mention list).
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    /// Subject mention.
    pub from: usize,
    /// Object mention.
    pub to: usize,
    /// Relation type.
    pub kind: &'static str,
}

/// What extraction found in a text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extraction {
    /// Entity mentions in text order.
    pub mentions: Vec<Mention>,
    /// Typed relations.
    pub relations: Vec<Relation>,
}

const TECH: &[&str] = &[
    "python",
    "javascript",
    "typescript",
    "kotlin",
    "scala",
    "haskell",
    "golang",
    "c++",
    "c#",
    "php",
    "perl",
    "kubernetes",
    "docker",
    "postgres",
    "postgresql",
    "mysql",
    "sqlite",
    "redis",
    "mongodb",
    "kafka",
    "linux",
    "windows",
    "macos",
    "android",
    "ios",
    "aws",
    "azure",
    "gcp",
    "tensorflow",
    "pytorch",
    "numpy",
    "pandas",
    "hdf5",
    "git",
    "github",
    "gitlab",
    "vscode",
    "vim",
    "emacs",
    "excel",
    "photoshop",
    "figma",
    "chatgpt",
    "openai",
    "llama",
    "node.js",
    "nodejs",
    "django",
    "flask",
    "spark",
    "hadoop",
    "terraform",
    "ansible",
    "webassembly",
    "wasm",
    "graphql",
    "elasticsearch",
    "jupyter",
    "matlab",
    "unity",
    "blender",
    "arduino",
    "raspberry pi",
];

/// Technology names that are also ordinary words: only when capitalised.
const TECH_CAPITAL_ONLY: &[&str] = &[
    "rust", "go", "swift", "java", "ruby", "react", "vue", "angular", "spring", "rails", "dart",
    "julia",
];

const PLACES: &[&str] = &[
    "berlin",
    "paris",
    "london",
    "madrid",
    "rome",
    "lisbon",
    "vienna",
    "prague",
    "amsterdam",
    "brussels",
    "zurich",
    "geneva",
    "munich",
    "hamburg",
    "lyon",
    "barcelona",
    "dublin",
    "oslo",
    "stockholm",
    "copenhagen",
    "helsinki",
    "warsaw",
    "budapest",
    "athens",
    "istanbul",
    "moscow",
    "tokyo",
    "kyoto",
    "osaka",
    "seoul",
    "beijing",
    "shanghai",
    "hong kong",
    "singapore",
    "bangkok",
    "delhi",
    "mumbai",
    "sydney",
    "melbourne",
    "auckland",
    "toronto",
    "vancouver",
    "montreal",
    "new york",
    "boston",
    "chicago",
    "seattle",
    "san francisco",
    "los angeles",
    "austin",
    "denver",
    "miami",
    "mexico city",
    "rio",
    "buenos aires",
    "cairo",
    "nairobi",
    "cape town",
    "dubai",
    "germany",
    "france",
    "spain",
    "italy",
    "portugal",
    "austria",
    "switzerland",
    "netherlands",
    "belgium",
    "ireland",
    "norway",
    "sweden",
    "denmark",
    "finland",
    "poland",
    "greece",
    "turkey",
    "russia",
    "japan",
    "korea",
    "china",
    "india",
    "thailand",
    "vietnam",
    "australia",
    "canada",
    "mexico",
    "brazil",
    "argentina",
    "egypt",
    "kenya",
    "england",
    "scotland",
    "wales",
    "europe",
    "asia",
    "africa",
    "america",
    "usa",
    "uk",
    "california",
    "texas",
    "florida",
    "hawaii",
    "alaska",
    "bavaria",
    "rockies",
    "alps",
    // Native spellings (matched without accents: "München" is "munchen").
    "munchen",
    "koln",
    "wien",
    "roma",
    "milan",
    "milano",
    "florence",
    "firenze",
    "venice",
    "venezia",
    "naples",
    "napoli",
    "lisboa",
    "porto",
    "seville",
    "sevilla",
    "valencia",
    "praha",
    "warszawa",
    "krakow",
    "geneve",
    "goteborg",
    "malmo",
    "reykjavik",
    "sao paulo",
    "bogota",
    "lima",
    "santiago",
    "quebec",
];

/// Place names written in CJK script, found by substring (no spaces separate words in CJK text).
const CJK_PLACES: &[&str] = &[
    "東京",
    "东京",
    "京都",
    "大阪",
    "北京",
    "上海",
    "香港",
    "台北",
    "深圳",
    "广州",
    "廣州",
    "서울",
    "부산",
    "日本",
    "中国",
    "中國",
    "韩国",
    "韓国",
    "한국",
    "美国",
    "美國",
    "德国",
    "ドイツ",
    "法国",
    "フランス",
    "英国",
    "イギリス",
    "柏林",
    "巴黎",
    "伦敦",
    "倫敦",
    "ロンドン",
    "パリ",
    "ベルリン",
    "ソウル",
];

const ORG_SUFFIX: &[&str] = &[
    "inc",
    "corp",
    "corporation",
    "ltd",
    "llc",
    "gmbh",
    "company",
    "co",
    "university",
    "college",
    "institute",
    "bank",
    "foundation",
    "labs",
    "group",
    "agency",
    "school",
    "hospital",
    "club",
    "society",
    "association",
    "ministry",
    "department",
    "council",
    "church",
    "museum",
    "studio",
    "studios",
    "center",
    "centre",
];

/// Capitalised words that are not names (sentence starters, pronouns, days, months, interjections).
const NOT_NAMES: &[&str] = &[
    "i",
    "i'm",
    "i've",
    "i'll",
    "i'd",
    "a",
    "an",
    "the",
    "this",
    "that",
    "these",
    "those",
    "it",
    "it's",
    "he",
    "she",
    "we",
    "they",
    "you",
    "my",
    "your",
    "our",
    "their",
    "his",
    "her",
    "hey",
    "hi",
    "hello",
    "yeah",
    "yes",
    "no",
    "ok",
    "okay",
    "oh",
    "wow",
    "thanks",
    "thank",
    "sure",
    "so",
    "and",
    "but",
    "or",
    "if",
    "when",
    "what",
    "where",
    "who",
    "why",
    "how",
    "which",
    "do",
    "did",
    "does",
    "is",
    "are",
    "was",
    "were",
    "have",
    "has",
    "had",
    "can",
    "could",
    "would",
    "should",
    "will",
    "just",
    "also",
    "well",
    "great",
    "good",
    "nice",
    "cool",
    "sounds",
    "that's",
    "there",
    "here",
    "let",
    "let's",
    "maybe",
    "not",
    "all",
    "any",
    "some",
    "one",
    "my",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "today",
    "yesterday",
    "tomorrow",
    "user",
    "assistant",
    "haha",
    "lol",
    "congrats",
    "awesome",
    "amazing",
    "definitely",
    "absolutely",
    "really",
    "totally",
    "please",
    "sorry",
    "actually",
    "anyway",
    "btw",
    "by",
    "in",
    "on",
    "at",
    "for",
    "from",
    "to",
    "with",
    "about",
    "after",
    "before",
    "as",
    "of",
    "ah",
    "aw",
    "omg",
    "love",
    "glad",
    "happy",
    "exactly",
    "right",
    "true",
    "agreed",
    "same",
    "me",
    "mine",
    "then",
    "later",
    "now",
    "tonight",
    "since",
    "while",
    "once",
    "still",
    "first",
    "next",
    "finally",
    "last",
    "recently",
    "every",
    "each",
    "both",
    "many",
    "most",
    "much",
    "more",
    "very",
    "too",
    "even",
    "only",
    "never",
    "always",
    "sometimes",
    "often",
    "usually",
    "perhaps",
    "probably",
    "hopefully",
    "unfortunately",
    "luckily",
    "honestly",
    "basically",
    "seriously",
    "wait",
    "look",
    "see",
    "remember",
    "guess",
    "speaking",
    "talking",
    "thinking",
    "anyway",
    "besides",
    "plus",
    "lately",
    "currently",
    "sadly",
    "fortunately",
    "interesting",
];

/// Verbs that type a relation: (phrase, relation kind, object kinds accepted).
const RELATION_CUES: &[(&str, &str, &[EntityKind])] = &[
    (
        " works at ",
        "works_at",
        &[EntityKind::Organisation, EntityKind::Person],
    ),
    (
        " work at ",
        "works_at",
        &[EntityKind::Organisation, EntityKind::Person],
    ),
    (
        " working at ",
        "works_at",
        &[EntityKind::Organisation, EntityKind::Person],
    ),
    (
        " works for ",
        "works_at",
        &[EntityKind::Organisation, EntityKind::Person],
    ),
    (
        " work for ",
        "works_at",
        &[EntityKind::Organisation, EntityKind::Person],
    ),
    (" joined ", "works_at", &[EntityKind::Organisation]),
    (
        " lives in ",
        "lives_in",
        &[EntityKind::Place, EntityKind::Person],
    ),
    (
        " live in ",
        "lives_in",
        &[EntityKind::Place, EntityKind::Person],
    ),
    (
        " living in ",
        "lives_in",
        &[EntityKind::Place, EntityKind::Person],
    ),
    (
        " moved to ",
        "lives_in",
        &[EntityKind::Place, EntityKind::Person],
    ),
    (
        " based in ",
        "lives_in",
        &[EntityKind::Place, EntityKind::Person],
    ),
    (
        " visited ",
        "visited",
        &[EntityKind::Place, EntityKind::Person],
    ),
    (
        " trip to ",
        "visited",
        &[EntityKind::Place, EntityKind::Person],
    ),
    (
        " went to ",
        "visited",
        &[EntityKind::Place, EntityKind::Organisation],
    ),
    (" flew to ", "visited", &[EntityKind::Place]),
    (" traveled to ", "visited", &[EntityKind::Place]),
    (" travelled to ", "visited", &[EntityKind::Place]),
    (" uses ", "uses", &[EntityKind::Technology]),
    (" use ", "uses", &[EntityKind::Technology]),
    (" using ", "uses", &[EntityKind::Technology]),
    (" written in ", "uses", &[EntityKind::Technology]),
    (" coding in ", "uses", &[EntityKind::Technology]),
    (" learning ", "uses", &[EntityKind::Technology]),
    (" friend ", "related_to", &[EntityKind::Person]),
    (" sister ", "related_to", &[EntityKind::Person]),
    (" brother ", "related_to", &[EntityKind::Person]),
    (" married ", "related_to", &[EntityKind::Person]),
    (" met ", "related_to", &[EntityKind::Person]),
];

/// Words before a capitalised phrase that make it a place.
const PLACE_CONTEXT: &[&str] = &["in", "to", "from", "near", "visited", "visiting"];

struct Word<'a> {
    text: &'a str,
    lower: String,
    /// Lower case without accents, for gazetteer look-ups.
    folded: String,
    start: usize,
    end: usize,
    sentence_start: bool,
    /// One CJK character (Han, kana, Hangul).
    cjk: bool,
}

/// Lower case with accents removed ("Zürich" -> "zurich").
pub fn fold(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    s.nfd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

fn tokenize(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut pending_boundary = true;
    let mut prev: Option<char> = None;
    let bytes = text.as_bytes();
    let mut push = |s: usize, i: usize, pending: &mut bool| {
        let w = text[s..i].trim_end_matches('\'');
        if w.is_empty() {
            return;
        }
        let lower = w.to_lowercase();
        out.push(Word {
            text: w,
            folded: fold(&lower),
            lower,
            start: s,
            end: s + w.len(),
            sentence_start: *pending,
            cjk: w.chars().next().is_some_and(is_cjk),
        });
        *pending = false;
    };
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        let next_digit = bytes.get(i + 1).is_some_and(|b| b.is_ascii_digit());
        let part = c.is_alphanumeric()
            || c == '\''
            || c == '+'
            || c == '#'
            || (c == '.'
                && start.is_some()
                && bytes.get(i + 1).is_some_and(|b| b.is_ascii_alphanumeric()))
            // "2023-05-18" is one word.
            || (c == '-' && start.is_some() && prev.is_some_and(|p| p.is_ascii_digit()) && next_digit);
        if is_cjk(c) {
            // CJK is written without spaces: each character is a word of its own ("用Python写" is three
            // words: 用, Python, 写), and multi-character names are matched on the text itself.
            if let Some(s) = start.take() {
                push(s, i, &mut pending_boundary);
            }
            push(i, i + c.len_utf8(), &mut pending_boundary);
            prev = Some(c);
            continue;
        }
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push(s, i, &mut pending_boundary);
                start = None;
            }
            _ => {}
        }
        if !part
            && matches!(
                c,
                '.' | '!' | '?' | ':' | '\n' | '"' | '(' | '。' | '！' | '？' | '：' | '「' | '『'
            )
        {
            pending_boundary = true;
        }
        prev = Some(c);
    }
    out
}

fn capitalised(w: &str) -> bool {
    w.chars().next().is_some_and(char::is_uppercase)
}

/// Extract entities and relations from `text`.
pub fn extract(text: &str) -> Extraction {
    let words = tokenize(text);
    let mut mentions: Vec<Mention> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        // Two-word gazetteer entries ("new york", "raspberry pi").
        if let Some(next) = words.get(i + 1) {
            let pair = format!("{} {}", w.folded, next.folded);
            let kind = if PLACES.contains(&pair.as_str()) {
                Some(EntityKind::Place)
            } else if TECH.contains(&pair.as_str()) {
                Some(EntityKind::Technology)
            } else {
                None
            };
            if let Some(kind) = kind {
                mentions.push(Mention {
                    name: text[w.start..next.end].to_string(),
                    kind,
                    start: w.start,
                    end: next.end,
                    tentative: false,
                });
                i += 2;
                continue;
            }
        }
        if TECH.contains(&w.folded.as_str())
            || (TECH_CAPITAL_ONLY.contains(&w.folded.as_str())
                && capitalised(w.text)
                && !w.sentence_start)
        {
            mentions.push(Mention {
                name: w.text.to_string(),
                kind: EntityKind::Technology,
                start: w.start,
                end: w.end,
                tentative: false,
            });
            i += 1;
            continue;
        }
        if PLACES.contains(&w.folded.as_str()) && capitalised(w.text) {
            mentions.push(Mention {
                name: w.text.to_string(),
                kind: EntityKind::Place,
                start: w.start,
                end: w.end,
                tentative: false,
            });
            i += 1;
            continue;
        }
        // Absolute dates.
        if let Some(len) = date_len(&words, i) {
            let end = words[i + len - 1].end;
            mentions.push(Mention {
                name: text[w.start..end].to_string(),
                kind: EntityKind::Date,
                start: w.start,
                end,
                tentative: false,
            });
            i += len;
            continue;
        }
        if w.cjk {
            i += 1;
            continue;
        }
        // Capitalised phrases (allowing "of" inside: "University of Toronto").
        if capitalised(w.text) && !NOT_NAMES.contains(&w.lower.as_str()) {
            let mut j = i + 1;
            while j < words.len() {
                let x = &words[j];
                if x.sentence_start {
                    break;
                }
                if capitalised(x.text) && !NOT_NAMES.contains(&x.lower.as_str()) {
                    j += 1;
                } else if x.lower == "of"
                    && words
                        .get(j + 1)
                        .is_some_and(|y| capitalised(y.text) && !y.sentence_start)
                {
                    j += 2;
                } else {
                    break;
                }
            }
            let last = &words[j - 1];
            let name = text[w.start..last.end].trim_end_matches("'s").to_string();
            let prev = i.checked_sub(1).map(|p| words[p].lower.as_str());
            let org_word = j - i > 1
                && words[i..j]
                    .iter()
                    .any(|x| ORG_SUFFIX.contains(&x.lower.as_str()));
            let work_context = prev.is_some_and(|p| matches!(p, "at" | "for" | "joined"))
                && lower_before_is_work(&words, i);
            let kind = if org_word || work_context {
                EntityKind::Organisation
            } else if prev.is_some_and(|p| PLACE_CONTEXT.contains(&p))
                && i >= 2
                && is_place_verb(&words, i)
            {
                EntityKind::Place
            } else if w.text.len() > 1
                && w.text
                    .chars()
                    .all(|c| c.is_uppercase() || c.is_ascii_digit())
            {
                EntityKind::Organisation
            } else {
                EntityKind::Person
            };
            // "Evan: I went..." — a speaker prefix is a confident person mention.
            let speaker = i == 0 && j == 1 && text[last.end..].starts_with(':');
            mentions.push(Mention {
                name,
                kind,
                start: w.start,
                end: last.end,
                tentative: w.sentence_start && j - i == 1 && !speaker,
            });
            i = j;
            continue;
        }
        i += 1;
    }
    if !text.is_ascii() {
        // No spaces and no capitals in CJK: only known place names can be picked out of it.
        for &place in CJK_PLACES {
            let mut from = 0;
            while let Some(pos) = text[from..].find(place) {
                let start = from + pos;
                from = start + place.len();
                if mentions.iter().any(|m| m.start < from && start < m.end) {
                    continue;
                }
                mentions.push(Mention {
                    name: place.to_string(),
                    kind: EntityKind::Place,
                    start,
                    end: start + place.len(),
                    tentative: false,
                });
            }
        }
    }
    mentions.sort_by_key(|m| m.start);
    let relations = relations(text, &mentions);
    Extraction {
        mentions,
        relations,
    }
}

fn lower_before_is_work(words: &[Word<'_>], i: usize) -> bool {
    let p = words[i - 1].lower.as_str();
    if p == "joined" {
        return true;
    }
    i >= 2
        && matches!(
            words[i - 2].lower.as_str(),
            "work" | "works" | "worked" | "working" | "job" | "intern" | "employed"
        )
}

fn is_place_verb(words: &[Word<'_>], i: usize) -> bool {
    let p = words[i - 1].lower.as_str();
    let pp = words[i - 2].lower.as_str();
    matches!(p, "visited" | "visiting")
        || matches!(
            pp,
            "live"
                | "lives"
                | "lived"
                | "living"
                | "moved"
                | "move"
                | "trip"
                | "travel"
                | "traveled"
                | "travelled"
                | "flew"
                | "born"
                | "went"
                | "go"
                | "going"
                | "come"
                | "comes"
                | "came"
                | "based"
                | "stay"
                | "stayed"
                | "vacation"
                | "holiday"
        )
}

/// Length in words of an absolute date starting at word `i`.
fn date_len(words: &[Word<'_>], i: usize) -> Option<usize> {
    let month = |k: usize| {
        words.get(k).is_some_and(|w| {
            matches!(
                w.lower.as_str(),
                "january"
                    | "february"
                    | "march"
                    | "april"
                    | "may"
                    | "june"
                    | "july"
                    | "august"
                    | "september"
                    | "october"
                    | "november"
                    | "december"
            )
        })
    };
    let num = |k: usize, lo: u32, hi: u32| {
        words
            .get(k)
            .and_then(|w| {
                w.lower
                    .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                    .parse::<u32>()
                    .ok()
            })
            .is_some_and(|n| (lo..=hi).contains(&n))
    };
    let w = &words[i];
    if chrono::NaiveDate::parse_from_str(&w.lower, "%Y-%m-%d").is_ok() {
        return Some(1);
    }
    // CJK: [2023 年] 5 月 [18 日] (Korean 년 월 일), at least a month.
    let unit = |k: usize, units: &[&str]| words.get(k).is_some_and(|w| units.contains(&w.text));
    let mut k = i;
    if num(k, 1900, 2200) && unit(k + 1, &["年", "년"]) {
        k += 2;
    }
    if num(k, 1, 12) && unit(k + 1, &["月", "월"]) {
        k += 2;
        if num(k, 1, 31) && unit(k + 1, &["日", "일"]) {
            k += 2;
        }
        return Some(k - i);
    }
    if num(i, 1, 31) && month(i + 1) {
        return Some(if num(i + 2, 1900, 2200) { 3 } else { 2 });
    }
    if month(i) && capitalised(w.text) {
        if num(i + 1, 1, 31) {
            return Some(if num(i + 2, 1900, 2200) { 3 } else { 2 });
        }
        if num(i + 1, 1900, 2200) {
            return Some(2);
        }
    }
    None
}

fn relations(text: &str, mentions: &[Mention]) -> Vec<Relation> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    if lower.len() != text.len() {
        // Lower-casing changed byte offsets (rare scripts); typed relations need aligned spans.
        return out;
    }
    for &(cue, kind, objects) in RELATION_CUES {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(cue) {
            let at = from + pos;
            from = at + cue.len();
            let subj = mentions
                .iter()
                .rposition(|m| m.end <= at && m.kind == EntityKind::Person);
            let obj = mentions
                .iter()
                .position(|m| m.start >= at + cue.len() - 1 && objects.contains(&m.kind));
            if let (Some(s), Some(o)) = (subj, obj) {
                // The object must follow the cue closely (within a few words).
                if mentions[o].start - (at + cue.len() - 1) <= 24 && s != o {
                    out.push(Relation {
                        from: s,
                        to: o,
                        kind,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(e: &Extraction, kind: EntityKind) -> Vec<String> {
        e.mentions
            .iter()
            .filter(|m| m.kind == kind && !m.tentative)
            .map(|m| m.name.clone())
            .collect()
    }

    #[test]
    fn kinds() {
        let e = extract("Yesterday Alice Smith moved to Berlin and joined Acme Corp, where she uses Kubernetes and Rust.");
        assert_eq!(names(&e, EntityKind::Person), vec!["Alice Smith"]);
        assert_eq!(names(&e, EntityKind::Place), vec!["Berlin"]);
        assert_eq!(names(&e, EntityKind::Organisation), vec!["Acme Corp"]);
        assert_eq!(
            names(&e, EntityKind::Technology),
            vec!["Kubernetes", "Rust"]
        );
        let kinds: Vec<&str> = e.relations.iter().map(|r| r.kind).collect();
        assert!(kinds.contains(&"lives_in"));
        assert!(kinds.contains(&"works_at"));
        assert!(kinds.contains(&"uses"));
    }

    #[test]
    fn dates_and_orgs() {
        let e = extract(
            "Bob started at the University of Toronto on 18 May 2023 and met Carol in March 2024.",
        );
        assert_eq!(
            names(&e, EntityKind::Date),
            vec!["18 May 2023", "March 2024"]
        );
        assert_eq!(
            names(&e, EntityKind::Organisation),
            vec!["University of Toronto"]
        );
        assert!(names(&e, EntityKind::Person).contains(&"Carol".to_string()));
    }

    #[test]
    fn sentence_starters_are_tentative() {
        let e = extract("Sounds great! Caroline said the LGBTQ group was fun.");
        assert!(e.mentions.iter().all(|m| m.name != "Sounds"));
        let caroline = e.mentions.iter().find(|m| m.name == "Caroline").unwrap();
        assert!(caroline.tentative);
        let e = extract("Evan: I just got back from a trip with my family in my new Prius.");
        let evan = e.mentions.iter().find(|m| m.name == "Evan").unwrap();
        assert!(!evan.tentative && evan.kind == EntityKind::Person);
    }

    #[test]
    fn accented_latin_names_and_places() {
        let e = extract(
            "José Álvarez moved to Zürich and later worked at Universität Wien in München.",
        );
        assert_eq!(names(&e, EntityKind::Person), vec!["José Álvarez"]);
        assert_eq!(names(&e, EntityKind::Place), vec!["Zürich", "München"]);
        assert!(e.relations.iter().any(|r| r.kind == "lives_in"
            && e.mentions[r.from].name == "José Álvarez"
            && e.mentions[r.to].name == "Zürich"));
        let e = extract("Ça va? Françoise et Søren sont à São Paulo depuis le 3 mai.");
        assert!(names(&e, EntityKind::Person).contains(&"Søren".to_string()));
        assert!(names(&e, EntityKind::Place).contains(&"São Paulo".to_string()));
        assert_eq!(fold("ZÜRICH"), "zurich");
    }

    #[test]
    fn cjk_text_yields_dates_technologies_places_and_latin_names() {
        let e = extract("我在2023年5月18日开始用Python和Kubernetes，和Alice一起搬到了东京。");
        assert_eq!(names(&e, EntityKind::Date), vec!["2023年5月18日"]);
        assert_eq!(
            names(&e, EntityKind::Technology),
            vec!["Python", "Kubernetes"]
        );
        assert_eq!(names(&e, EntityKind::Person), vec!["Alice"]);
        assert_eq!(names(&e, EntityKind::Place), vec!["东京"]);
        let e = extract("2024-03-02に東京でRustの勉強会。서울에서 2023년 5월에 만났다.");
        assert_eq!(
            names(&e, EntityKind::Date),
            vec!["2024-03-02", "2023년 5월"]
        );
        assert!(names(&e, EntityKind::Place).contains(&"東京".to_string()));
        assert!(names(&e, EntityKind::Place).contains(&"서울".to_string()));
        assert_eq!(names(&e, EntityKind::Technology), vec!["Rust"]);
    }

    #[test]
    fn any_text_extracts_without_panicking() {
        for t in [
            "",
            "。。。",
            "ＡＢＣ　全角",
            "🙂 Ünïcödé 𠜎𠜱 ٱلْعَرَبِيَّة עברית ไทย",
            "İstanbul'da İ̇ ß ẞ",
            "1-2-3 --5 2023-13-45 年月日 5月 31日 0月",
            "Dr. A.B. C++ C# node.js .NET ...",
        ] {
            let e = extract(t);
            for m in &e.mentions {
                // Spans are byte offsets into the original text.
                assert_eq!(t[m.start..m.end].trim_end_matches("'s"), m.name, "{t}");
            }
        }
    }

    #[test]
    fn lowercase_rust_is_not_a_language() {
        let e = extract("There is rust on my bike and I want to go home");
        assert!(names(&e, EntityKind::Technology).is_empty());
    }
}
