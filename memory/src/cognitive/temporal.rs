//! Time: an index of records by the time they are about, and temporal hints parsed from text.
//!
//! The index orders (time, id) pairs, where time is a record's event time or, lacking one, when it was saved;
//! it is derived from the records and rebuilt when a store is opened. Hints ("last week", "in May 2023",
//! "3 days ago", "before June 2022", "the first time", "most recently") are resolved against a reference
//! time — the time of the question, or for a conversation its own session date — into a time range and/or
//! an ordering. The same parser resolves relative event times in saved text ("yesterday" said in a session
//! dated 18 May 2023 means 17 May 2023).

use std::collections::BTreeSet;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime};
use serde::{Deserialize, Serialize};

pub use super::rerank::TimeOrder;

const DAY_MS: i64 = 86_400_000;

/// Records ordered by the time they are about.
#[derive(Clone, Debug, Default)]
pub struct TemporalIndex {
    by_time: BTreeSet<(i64, u64)>,
}

impl TemporalIndex {
    /// Empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of indexed records.
    pub fn len(&self) -> usize {
        self.by_time.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.by_time.is_empty()
    }

    /// Index record `id` at `time` (ms).
    pub fn insert(&mut self, id: u64, time: i64) {
        self.by_time.insert((time, id));
    }

    /// Remove record `id` indexed at `time`.
    pub fn remove(&mut self, id: u64, time: i64) {
        self.by_time.remove(&(time, id));
    }

    /// Ids with `from <= time < to`, oldest first.
    pub fn range(&self, from: i64, to: i64) -> Vec<u64> {
        if from >= to {
            return Vec::new();
        }
        self.by_time
            .range((from, 0)..(to, 0))
            .map(|&(_, id)| id)
            .collect()
    }

    /// The `n` most recent ids, newest first.
    pub fn latest(&self, n: usize) -> Vec<u64> {
        self.by_time
            .iter()
            .rev()
            .take(n)
            .map(|&(_, id)| id)
            .collect()
    }

    /// The `n` oldest ids, oldest first.
    pub fn earliest(&self, n: usize) -> Vec<u64> {
        self.by_time.iter().take(n).map(|&(_, id)| id).collect()
    }

    /// The `n` ids just before `t` (time < t), newest first.
    pub fn before(&self, t: i64, n: usize) -> Vec<u64> {
        self.by_time
            .range(..(t, 0))
            .rev()
            .take(n)
            .map(|&(_, id)| id)
            .collect()
    }

    /// The `n` ids at or after `t`, oldest first.
    pub fn after(&self, t: i64, n: usize) -> Vec<u64> {
        self.by_time
            .range((t, 0)..)
            .take(n)
            .map(|&(_, id)| id)
            .collect()
    }
}

/// What a text says about time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TemporalHint {
    /// Time range `[from, to)` in ms; either end may be open.
    pub from: Option<i64>,
    /// End of the range (exclusive).
    pub to: Option<i64>,
    /// Earliest or latest occurrence asked for.
    pub order: Option<TimeOrder>,
    /// The text with the temporal phrases removed (the original when nothing else would remain).
    pub residual: String,
    /// The phrases that were recognised.
    pub phrases: Vec<String>,
}

impl TemporalHint {
    /// Whether the text carried any temporal information.
    pub fn is_empty(&self) -> bool {
        self.from.is_none() && self.to.is_none() && self.order.is_none()
    }
}

const MONTHS: [&str; 12] = [
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
];

fn month_of(w: &str) -> Option<u32> {
    if let Some(i) = MONTHS.iter().position(|m| *m == w) {
        return Some(i as u32 + 1);
    }
    if w.len() >= 3 && w != "mar" && w != "may" {
        // Abbreviations: jan, feb, apr, jun, jul, aug, sep, sept, oct, nov, dec.
        let i = MONTHS
            .iter()
            .position(|m| m.starts_with(w) && (w.len() == 3 || w == "sept"))?;
        return Some(i as u32 + 1);
    }
    None
}

fn number_of(w: &str) -> Option<i64> {
    if let Ok(n) = w.parse::<i64>() {
        return Some(n);
    }
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    match w {
        "a" | "an" => Some(1),
        "a couple" | "couple" => Some(2),
        "few" | "several" => Some(3),
        _ => WORDS.iter().position(|x| *x == w).map(|i| i as i64 + 1),
    }
}

fn day_of(w: &str) -> Option<u32> {
    let d = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &w[d.len()..];
    if !(suffix.is_empty() || matches!(suffix, "st" | "nd" | "rd" | "th")) {
        return None;
    }
    d.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
}

fn year_of(w: &str) -> Option<i32> {
    if w.len() != 4 {
        return None;
    }
    w.parse::<i32>().ok().filter(|y| (1900..=2200).contains(y))
}

fn ms(d: NaiveDate) -> i64 {
    d.and_time(NaiveTime::MIN).and_utc().timestamp_millis()
}

fn date_of(ms: i64) -> NaiveDate {
    chrono::DateTime::from_timestamp_millis(ms).map_or(NaiveDate::MIN, |t| t.date_naive())
}

fn month_start(y: i32, m: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, 1)
}

fn month_range(y: i32, m: u32) -> Option<(i64, i64)> {
    let start = month_start(y, m)?;
    let next = if m == 12 {
        month_start(y + 1, 1)?
    } else {
        month_start(y, m + 1)?
    };
    Some((ms(start), ms(next)))
}

fn year_range(y: i32) -> Option<(i64, i64)> {
    Some((ms(month_start(y, 1)?), ms(month_start(y + 1, 1)?)))
}

fn add_months(y: i32, m: u32, delta: i32) -> (i32, u32) {
    let total = y * 12 + (m as i32 - 1) + delta;
    (total.div_euclid(12), total.rem_euclid(12) as u32 + 1)
}

/// Lower-cased words of a text, with their byte spans in the original.
fn words(text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let part = c.is_alphanumeric() || c == '-' || c == '\'';
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((text[s..i].to_lowercase(), s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((text[s..].to_lowercase(), s, text.len()));
    }
    out
}

/// A date mentioned at word `i`: "18 May 2023", "May 18, 2023", "May 2023", "2023-05-18", "2023", "May"
/// (the latest May not after the reference). Returns the range and how many words it used.
fn date_at(
    w: &[(String, usize, usize)],
    i: usize,
    reference: NaiveDate,
) -> Option<((i64, i64), usize)> {
    let word = |k: usize| w.get(k).map(|x| x.0.as_str());
    let first = word(i)?;
    // ISO date.
    if let Ok(d) = NaiveDate::parse_from_str(first, "%Y-%m-%d") {
        return Some(((ms(d), ms(d) + DAY_MS), 1));
    }
    // 18 May 2023 / 18th of May, 2023 / 18 May
    if let Some(day) = day_of(first) {
        let mut j = i + 1;
        if word(j) == Some("of") {
            j += 1;
        }
        if let Some(m) = word(j).and_then(month_of) {
            let (y, used) = match word(j + 1).and_then(year_of) {
                Some(y) => (y, j + 2 - i),
                None => (latest_year_for(m, day, reference), j + 1 - i),
            };
            let d = NaiveDate::from_ymd_opt(y, m, day)?;
            return Some(((ms(d), ms(d) + DAY_MS), used));
        }
    }
    if let Some(m) = month_of(first) {
        // May 18, 2023 / May 18
        if let Some(day) = word(i + 1).and_then(day_of) {
            let (y, used) = match word(i + 2).and_then(year_of) {
                Some(y) => (y, 3),
                None => (latest_year_for(m, day, reference), 2),
            };
            let d = NaiveDate::from_ymd_opt(y, m, day)?;
            return Some(((ms(d), ms(d) + DAY_MS), used));
        }
        // May 2023 / May of 2023
        let (yw, used) = if word(i + 1) == Some("of") {
            (i + 2, 3)
        } else {
            (i + 1, 2)
        };
        if let Some(y) = word(yw).and_then(year_of) {
            return month_range(y, m).map(|r| (r, used));
        }
        let y = latest_year_for(m, 1, reference);
        return month_range(y, m).map(|r| (r, 1));
    }
    if let Some(y) = year_of(first) {
        return year_range(y).map(|r| (r, 1));
    }
    None
}

/// The latest year in which month `m`, day `d` is not after `reference`.
fn latest_year_for(m: u32, d: u32, reference: NaiveDate) -> i32 {
    let y = reference.year();
    if (m, d) <= (reference.month(), reference.day()) {
        y
    } else {
        y - 1
    }
}

/// Words that introduce a date ("in May", "during 2022"); a bare month name is only a date after one of
/// these or next to a number ("may" and "march" are also verbs).
const DATE_PREPS: &[&str] = &[
    "in", "during", "on", "of", "since", "from", "by", "until", "around", "early", "late", "mid",
];

fn unit_days(w: &str) -> Option<&'static str> {
    match w.trim_end_matches('s') {
        "day" => Some("day"),
        "week" => Some("week"),
        "month" => Some("month"),
        "year" => Some("year"),
        _ => None,
    }
}

/// Range of "N units ago" relative to `r`.
fn ago(n: i64, unit: &str, r: NaiveDate) -> Option<(i64, i64)> {
    match unit {
        "day" => {
            let d = r - Duration::days(n);
            Some((ms(d), ms(d) + DAY_MS))
        }
        "week" => {
            let ws = week_start(r) - Duration::days(7 * n);
            Some((ms(ws), ms(ws) + 7 * DAY_MS))
        }
        "month" => {
            let (y, m) = add_months(r.year(), r.month(), -(n as i32));
            month_range(y, m)
        }
        "year" => year_range(r.year() - n as i32),
        _ => None,
    }
}

fn week_start(d: NaiveDate) -> NaiveDate {
    d - Duration::days(d.weekday().num_days_from_monday() as i64)
}

/// Parse the temporal hints of `text` relative to `reference_ms`.
pub fn parse_hint(text: &str, reference_ms: i64) -> TemporalHint {
    let w = words(text);
    let r = date_of(reference_ms);
    let mut used = vec![false; w.len()];
    let mut hint = TemporalHint::default();
    let set_range = |hint: &mut TemporalHint, (from, to): (i64, i64)| {
        // Several ranges: keep their intersection (or the latest one when they do not overlap).
        let f = hint.from.map_or(from, |x| x.max(from));
        let t = hint.to.map_or(to, |x| x.min(to));
        if f < t {
            hint.from = Some(f);
            hint.to = Some(t);
        } else {
            hint.from = Some(from);
            hint.to = Some(to);
        }
    };
    let word = |k: usize| w.get(k).map(|x| x.0.as_str());
    let mut i = 0;
    while i < w.len() {
        let cur = w[i].0.as_str();
        let mut span = 0usize;
        match (cur, word(i + 1), word(i + 2)) {
            ("today", ..) | ("tonight", ..) => {
                set_range(&mut hint, (ms(r), ms(r) + DAY_MS));
                span = 1;
            }
            ("yesterday", ..) => {
                set_range(&mut hint, (ms(r) - DAY_MS, ms(r)));
                span = 1;
            }
            ("last" | "past" | "previous", Some(u), _)
                if unit_days(u).is_some() && !u.ends_with('s') =>
            {
                if let Some(rg) = ago(1, unit_days(u).unwrap_or("day"), r) {
                    set_range(&mut hint, rg);
                }
                span = 2;
            }
            ("this", Some(u), _) if unit_days(u).is_some() && !u.ends_with('s') => {
                if let Some(rg) = ago(0, unit_days(u).unwrap_or("day"), r) {
                    set_range(&mut hint, rg);
                }
                span = 2;
            }
            // "the last 3 weeks", "past two months", "last few days"
            ("last" | "past", Some(n), Some(u))
                if number_of(n).is_some() && unit_days(u).is_some() =>
            {
                let n = number_of(n).unwrap_or(1);
                let from = match unit_days(u).unwrap_or("day") {
                    "day" => ms(r) - n * DAY_MS,
                    "week" => ms(r) - 7 * n * DAY_MS,
                    "month" => {
                        let (y, m) = add_months(r.year(), r.month(), -(n as i32));
                        month_start(y, m).map_or(ms(r), ms)
                    }
                    _ => month_start(r.year() - n as i32, r.month()).map_or(ms(r), ms),
                };
                set_range(&mut hint, (from, ms(r) + DAY_MS));
                span = 3;
            }
            (n, Some(u), Some("ago")) if number_of(n).is_some() && unit_days(u).is_some() => {
                if let Some(rg) = ago(number_of(n).unwrap_or(1), unit_days(u).unwrap_or("day"), r) {
                    set_range(&mut hint, rg);
                }
                span = 3;
            }
            ("before" | "after" | "since" | "until", Some(_), _) => {
                if let Some((rg, n)) = date_at(&w, i + 1, r) {
                    if cur == "before" || cur == "until" {
                        hint.to = Some(hint.to.map_or(rg.0, |t| t.min(rg.0)));
                    } else {
                        let from = if cur == "after" { rg.1 } else { rg.0 };
                        hint.from = Some(hint.from.map_or(from, |f| f.max(from)));
                    }
                    span = 1 + n;
                }
            }
            ("first", Some("time"), _) => {
                hint.order = Some(TimeOrder::Earliest);
                span = 2;
            }
            ("originally" | "initially" | "earliest", ..) => {
                hint.order = Some(TimeOrder::Earliest);
                span = 1;
            }
            ("most", Some("recently" | "recent"), _) => {
                hint.order = Some(TimeOrder::Latest);
                span = 2;
            }
            ("last", Some("time"), _) => {
                hint.order = Some(TimeOrder::Latest);
                span = 2;
            }
            ("latest" | "lately" | "recently" | "currently" | "nowadays", ..) => {
                hint.order = Some(TimeOrder::Latest);
                span = 1;
            }
            _ => {
                let after_prep = i > 0 && DATE_PREPS.contains(&w[i - 1].0.as_str());
                let numeric_next =
                    word(i + 1).is_some_and(|n| day_of(n).is_some() || year_of(n).is_some());
                let is_month = month_of(cur).is_some();
                let is_day_then_month = day_of(cur).is_some()
                    && (word(i + 1).and_then(month_of).is_some()
                        || (word(i + 1) == Some("of") && word(i + 2).and_then(month_of).is_some()));
                let is_iso = NaiveDate::parse_from_str(cur, "%Y-%m-%d").is_ok();
                let is_year = year_of(cur).is_some() && after_prep;
                if (is_month && (after_prep || numeric_next))
                    || is_day_then_month
                    || is_iso
                    || is_year
                {
                    if let Some((rg, n)) = date_at(&w, i, r) {
                        set_range(&mut hint, rg);
                        span = n;
                        if after_prep {
                            used[i - 1] = true;
                        }
                    }
                }
            }
        }
        if span > 0 {
            let end = (i + span).min(w.len());
            hint.phrases.push(text[w[i].1..w[end - 1].2].to_string());
            for u in used.iter_mut().take(end).skip(i) {
                *u = true;
            }
            i = end;
        } else {
            i += 1;
        }
    }
    // Drop a preposition left dangling before a consumed phrase ("in the last week", "on the first time").
    for k in (0..w.len()).rev() {
        if !used[k]
            && matches!(w[k].0.as_str(), "the" | "in" | "on" | "during" | "for")
            && used.get(k + 1).copied().unwrap_or(false)
        {
            used[k] = true;
        }
    }
    if !used.iter().any(|u| *u) {
        hint.residual = text.to_string();
        return hint;
    }
    let residual: Vec<&str> = w
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(x, _)| &text[x.1..x.2])
        .collect();
    hint.residual = if residual.iter().any(|x| x.chars().count() > 2) {
        residual.join(" ")
    } else {
        text.to_string()
    };
    hint
}

/// Resolve a relative time mentioned in a saved text ("yesterday", "last week", "two days ago") against the
/// time of the conversation it was said in. `None` when the text names no time.
pub fn resolve_event_time(text: &str, said_at_ms: i64) -> Option<i64> {
    let h = parse_hint(text, said_at_ms);
    match (h.from, h.to) {
        (Some(f), Some(_)) => Some(f),
        _ => None,
    }
}

/// Parse a conversation timestamp such as LoCoMo's "1:47 pm on 18 May, 2023" (also RFC 3339 or
/// YYYY-MM-DD) into ms since the epoch.
pub fn parse_conversation_date(s: &str) -> Option<i64> {
    if let Some(t) = crate::record::parse_time(s) {
        return Some(t);
    }
    let s = s.trim();
    let (time_part, date_part) = match s.split_once(" on ") {
        Some((t, d)) => (Some(t.trim()), d.trim()),
        None => (None, s),
    };
    let w = words(date_part);
    let far_future = NaiveDate::from_ymd_opt(9999, 12, 31)?;
    let ((from, to), _) = date_at(&w, 0, far_future)?;
    if to - from != DAY_MS {
        return None;
    }
    let date = date_of(from);
    let time = time_part
        .and_then(|t| NaiveTime::parse_from_str(&t.to_uppercase(), "%I:%M %p").ok())
        .unwrap_or(NaiveTime::MIN);
    Some(NaiveDateTime::new(date, time).and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> i64 {
        ms(NaiveDate::from_ymd_opt(y, m, d).unwrap())
    }

    // Thursday 18 May 2023, 13:47.
    const REF: i64 = 1_684_417_620_000;

    #[test]
    fn index_queries() {
        let mut ix = TemporalIndex::new();
        for (id, t) in [(1, 30), (2, 10), (3, 20), (4, 40)] {
            ix.insert(id, t);
        }
        assert_eq!(ix.range(10, 30), vec![2, 3]);
        assert_eq!(ix.latest(2), vec![4, 1]);
        assert_eq!(ix.earliest(1), vec![2]);
        assert_eq!(ix.before(30, 5), vec![3, 2]);
        assert_eq!(ix.after(30, 5), vec![1, 4]);
        ix.remove(1, 30);
        assert_eq!(ix.len(), 3);
        assert!(ix.range(5, 5).is_empty());
    }

    #[test]
    fn relative_ranges() {
        let h = parse_hint("what did I eat yesterday?", REF);
        assert_eq!(
            (h.from, h.to),
            (Some(day(2023, 5, 17)), Some(day(2023, 5, 18)))
        );
        assert_eq!(h.residual, "what did I eat");
        let h = parse_hint("meetings last week", REF);
        assert_eq!(
            (h.from, h.to),
            (Some(day(2023, 5, 8)), Some(day(2023, 5, 15)))
        );
        let h = parse_hint("what happened last month", REF);
        assert_eq!(
            (h.from, h.to),
            (Some(day(2023, 4, 1)), Some(day(2023, 5, 1)))
        );
        let h = parse_hint("two weeks ago I ran", REF);
        assert_eq!(h.from, Some(day(2023, 5, 1)));
        let h = parse_hint("runs in the last 3 days", REF);
        assert_eq!(h.from, Some(REF - REF % DAY_MS - 3 * DAY_MS));
        assert_eq!(h.residual, "runs");
    }

    #[test]
    fn absolute_dates() {
        let h = parse_hint("What did Evan do in May 2023?", REF);
        assert_eq!(
            (h.from, h.to),
            (Some(day(2023, 5, 1)), Some(day(2023, 6, 1)))
        );
        assert_eq!(h.residual, "What did Evan do");
        let h = parse_hint("trip on 18 May, 2023", REF);
        assert_eq!(
            (h.from, h.to),
            (Some(day(2023, 5, 18)), Some(day(2023, 5, 19)))
        );
        let h = parse_hint("concert on July 4, 2022", REF);
        assert_eq!(h.from, Some(day(2022, 7, 4)));
        let h = parse_hint("books read in 2022", REF);
        assert_eq!(
            (h.from, h.to),
            (Some(day(2022, 1, 1)), Some(day(2023, 1, 1)))
        );
        let h = parse_hint("the trip in June", REF);
        assert_eq!(
            h.from,
            Some(day(2022, 6, 1)),
            "latest June not after the reference"
        );
        let h = parse_hint("before March 2023", REF);
        assert_eq!((h.from, h.to), (None, Some(day(2023, 3, 1))));
        let h = parse_hint("anything after 2023-05-01", REF);
        assert_eq!(h.from, Some(day(2023, 5, 2)));
    }

    #[test]
    fn modal_verbs_are_not_months() {
        let h = parse_hint("May I ask what you march for?", REF);
        assert!(h.is_empty(), "{h:?}");
        assert_eq!(h.residual, "May I ask what you march for?");
    }

    #[test]
    fn ordering_hints() {
        assert_eq!(
            parse_hint("the first time I went hiking", REF).order,
            Some(TimeOrder::Earliest)
        );
        assert_eq!(
            parse_hint("where did I go most recently", REF).order,
            Some(TimeOrder::Latest)
        );
        let h = parse_hint("what was the last time we talked about rust", REF);
        assert_eq!(h.order, Some(TimeOrder::Latest));
        assert!(!h.residual.contains("time"));
    }

    #[test]
    fn event_times_relative_to_the_session() {
        assert_eq!(
            resolve_event_time("I went to the museum yesterday", REF),
            Some(day(2023, 5, 17))
        );
        assert_eq!(resolve_event_time("I love museums", REF), None);
    }

    #[test]
    fn conversation_dates() {
        assert_eq!(
            parse_conversation_date("1:47 pm on 18 May, 2023"),
            Some(REF)
        );
        assert_eq!(
            parse_conversation_date("2023-05-18"),
            Some(day(2023, 5, 18))
        );
        assert_eq!(parse_conversation_date("sometime"), None);
    }
}
