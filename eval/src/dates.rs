//! Date formats of the benchmarks (LoCoMo's "1:56 pm on 8 May, 2023", LongMemEval's "2023/05/20 (Sat) 02:21")
//! and dates written in questions ("in May 2023").

use chrono::{Datelike, NaiveDate, NaiveDateTime};

/// Milliseconds since the Unix epoch of a naive UTC date-time.
fn ms(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_millis()
}

/// Parse a LoCoMo session time such as `1:56 pm on 8 May, 2023` (also `10:37 am on 27 June, 2023`).
pub fn parse_locomo(s: &str) -> Option<i64> {
    let s = s.trim();
    let (time, date) = s.split_once(" on ")?;
    let date = date.replace(',', "");
    let d = NaiveDate::parse_from_str(date.trim(), "%d %B %Y").ok()?;
    let time = time.trim().to_ascii_uppercase();
    let t = chrono::NaiveTime::parse_from_str(&time, "%I:%M %p").ok()?;
    Some(ms(d.and_time(t)))
}

/// Parse a LongMemEval time such as `2023/05/20 (Sat) 02:21` (the weekday is ignored).
pub fn parse_longmemeval(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, rest) = s.split_once(' ').unwrap_or((s, ""));
    let d = NaiveDate::parse_from_str(date, "%Y/%m/%d").ok()?;
    let time = rest.rsplit(' ').next().unwrap_or("").trim();
    let t = if time.is_empty() {
        chrono::NaiveTime::MIN
    } else {
        chrono::NaiveTime::parse_from_str(time, "%H:%M").ok()?
    };
    Some(ms(d.and_time(t)))
}

/// Words and phrases that date what a sentence says ("yesterday", "last week", "in 2022", "two years ago").
const TIME_WORDS: [&str; 26] = [
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "ago",
    "recently",
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
    "week",
    "weeks",
    "weekend",
    "month",
    "months",
    "year",
    "years",
    "since",
];

/// True when a text dates something it says: a time word ("yesterday", "last week", "in May", "years ago")
/// or a year (1900-2099).
pub fn mentions_time(text: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .any(|w| {
            let lw = w.to_ascii_lowercase();
            TIME_WORDS.contains(&lw.as_str())
                || (lw.len() == 4
                    && (lw.starts_with("19") || lw.starts_with("20"))
                    && lw.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// True when a question asks when something happened or how long it lasted.
pub fn asks_when(question: &str) -> bool {
    let q = question.trim_start().to_ascii_lowercase();
    q.starts_with("when ") || q.starts_with("how long") || q.contains(" when ")
}

/// A human-readable date (`8 May 2023`) for indexing next to a turn's text.
pub fn day_label(ms_since_epoch: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms_since_epoch) {
        Some(t) => format!("{} {} {}", t.day(), month_name(t.month()), t.year()),
        None => String::new(),
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn month_name(m: u32) -> &'static str {
    MONTHS
        .get(m.saturating_sub(1) as usize)
        .copied()
        .unwrap_or("")
}

/// A month a question names explicitly ("in March 2024"): [start, end) in ms. A named day ("on 9 May,
/// 2023") counts as its month here; [`day_window`] tells the day.
pub fn month_window(question: &str) -> Option<(i64, i64)> {
    let words = lower_words(question);
    for (i, w) in words.iter().enumerate() {
        let Some(m) = month_number(w) else {
            continue;
        };
        // "March 2024", "March 5, 2024" or "5 March 2024".
        let year = [1, 2]
            .iter()
            .filter_map(|o| words.get(i + o))
            .find_map(|y| year_of(y));
        let Some(year) = year else {
            continue;
        };
        return month_bounds(year, m);
    }
    None
}

/// A day a question names explicitly ("on 9 May, 2023", "on October 13, 2023", "8th December 2023"): that
/// day, [start, end) in ms.
pub fn day_window(question: &str) -> Option<(i64, i64)> {
    let words = lower_words(question);
    for (i, w) in words.iter().enumerate() {
        let Some(m) = month_number(w) else {
            continue;
        };
        // "October 13, 2023" or "13 October, 2023" / "13th October 2023".
        let after = words
            .get(i + 1)
            .and_then(|d| day_of(d))
            .zip(words.get(i + 2).and_then(|y| year_of(y)));
        let before = i
            .checked_sub(1)
            .and_then(|j| words.get(j))
            .and_then(|d| day_of(d))
            .zip(words.get(i + 1).and_then(|y| year_of(y)));
        if let Some((day, year)) = after.or(before) {
            let d = NaiveDate::from_ymd_opt(year, m, day)?;
            let start = ms(d.and_time(chrono::NaiveTime::MIN));
            return Some((start, start + DAY_MS));
        }
    }
    None
}

/// When what a sentence says happened, resolved against the time it was said (`said`, ms): "yesterday",
/// "last night", "last week(end)", "the other day", "a few days ago", "last month", "last year", "N days /
/// weeks / months ago". [start, end) in ms; `None` when it names no such time (what it says happened around
/// `said`).
pub fn told_window(text: &str, said: i64) -> Option<(i64, i64)> {
    let words = lower_words(text);
    let day0 = said - said.rem_euclid(DAY_MS);
    let days = |from: i64, to: i64| Some((day0 - from * DAY_MS, day0 - to * DAY_MS));
    for (i, w) in words.iter().enumerate() {
        let prev = i
            .checked_sub(1)
            .and_then(|j| words.get(j))
            .map(String::as_str);
        let next = words.get(i + 1).map(String::as_str);
        match (prev, w.as_str(), next) {
            (_, "yesterday", _) | (Some("last"), "night", _) => return days(1, 0),
            (Some("last"), "week" | "weekend", _) | (Some("other"), "day", _) => return days(9, 0),
            (Some("last"), "month", _) => {
                let t = chrono::DateTime::from_timestamp_millis(said)?;
                let (y, m) = if t.month() == 1 {
                    (t.year() - 1, 12)
                } else {
                    (t.year(), t.month() - 1)
                };
                return month_bounds(y, m);
            }
            (Some("last"), "year", _) => {
                let t = chrono::DateTime::from_timestamp_millis(said)?;
                let a = NaiveDate::from_ymd_opt(t.year() - 1, 1, 1)?;
                let b = NaiveDate::from_ymd_opt(t.year(), 1, 1)?;
                return Some((
                    ms(a.and_time(chrono::NaiveTime::MIN)),
                    ms(b.and_time(chrono::NaiveTime::MIN)),
                ));
            }
            (Some(n), "days" | "weeks" | "months", Some("ago")) => {
                let n = match n {
                    "few" | "couple" => 3,
                    "two" => 2,
                    "three" => 3,
                    "four" => 4,
                    "five" => 5,
                    _ => n.parse::<i64>().ok().filter(|n| (1..100).contains(n))?,
                };
                let unit = match w.as_str() {
                    "days" => 1,
                    "weeks" => 7,
                    _ => 30,
                };
                // The named distance, give or take half a unit (at least a day).
                let slack = (unit / 2).max(1);
                return days(n * unit + slack, (n * unit - slack).max(0));
            }
            _ => {}
        }
    }
    None
}

const DAY_MS: i64 = 86_400_000;

fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect()
}

/// 1-12 for a month's name.
fn month_number(w: &str) -> Option<u32> {
    MONTHS
        .iter()
        .position(|name| name.eq_ignore_ascii_case(w))
        .map(|m| m as u32 + 1)
}

fn year_of(w: &str) -> Option<i32> {
    w.parse::<i32>().ok().filter(|y| (1900..3000).contains(y))
}

/// A day of the month, "9" or "9th".
fn day_of(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let rest = &w[digits.len()..];
    if !rest.is_empty() && !["st", "nd", "rd", "th"].contains(&rest) {
        return None;
    }
    digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
}

/// [start of month `m` of `year`, start of the next month) in ms.
fn month_bounds(year: i32, m: u32) -> Option<(i64, i64)> {
    let start = NaiveDate::from_ymd_opt(year, m, 1)?;
    let end = if m == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, m + 1, 1)?
    };
    Some((
        ms(start.and_time(chrono::NaiveTime::MIN)),
        ms(end.and_time(chrono::NaiveTime::MIN)),
    ))
}

#[cfg(test)]
mod tests {

    #[test]
    fn time_mentions_and_when_questions() {
        assert!(mentions_time("I went there last week"));
        assert!(mentions_time("We met in 2022."));
        assert!(mentions_time("Two years ago, in May"));
        assert!(!mentions_time("I love painting sunsets"));
        assert!(!mentions_time("Room 2500 is free"));
        assert!(asks_when(
            "When did Caroline go to the LGBTQ support group?"
        ));
        assert!(asks_when("How long has Nate had his turtles?"));
        assert!(!asks_when("What did Melanie paint?"));
    }

    use super::*;

    #[test]
    fn locomo_times() {
        let t = parse_locomo("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(day_label(t), "8 May 2023");
        let morning = parse_locomo("10:37 am on 27 June, 2023").unwrap();
        assert_eq!(day_label(morning), "27 June 2023");
        assert_eq!(
            parse_locomo("12:00 pm on 1 January, 2020").unwrap() % 86_400_000,
            12 * 3_600_000
        );
        assert!(parse_locomo("yesterday").is_none());
        assert!(parse_locomo("1:56 pm on 31 February, 2023").is_none());
    }

    #[test]
    fn longmemeval_times() {
        let t = parse_longmemeval("2023/05/20 (Sat) 02:21").unwrap();
        assert_eq!(day_label(t), "20 May 2023");
        assert_eq!(t % 86_400_000, (2 * 60 + 21) * 60_000);
        assert!(parse_longmemeval("2023/05/20").is_some());
        assert!(parse_longmemeval("May 20").is_none());
    }

    #[test]
    fn month_named_in_a_question() {
        let (a, b) = month_window("Where did I travel in March 2024?").unwrap();
        assert_eq!(day_label(a), "1 March 2024");
        assert_eq!(day_label(b), "1 April 2024");
        let (_, b) = month_window("what happened in december 2023").unwrap();
        assert_eq!(day_label(b), "1 January 2024");
        assert!(month_window("Where did I travel in March?").is_none());
        assert!(month_window("no dates here").is_none());
        let (a, _) = month_window("What did Melanie show on October 13, 2023?").unwrap();
        assert_eq!(day_label(a), "1 October 2023");
        assert!(month_window("May I ask in March? In May 2023.").is_some());
    }

    #[test]
    fn day_named_in_a_question() {
        for q in [
            "What did Gina find on 1 February, 2023?",
            "What painting did Melanie show on February 1, 2023?",
            "What book did Tim finish on 1st February 2023?",
        ] {
            let (a, b) = day_window(q).unwrap();
            assert_eq!(day_label(a), "1 February 2023", "{q}");
            assert_eq!(b - a, DAY_MS);
        }
        assert!(day_window("What happened in February 2023?").is_none());
        assert!(day_window("Room 12 in May").is_none());
    }

    #[test]
    fn relative_times_resolved() {
        let said = parse_locomo("8:16 pm on 5 December, 2023").unwrap();
        let (a, b) = told_window("I went to a meeting yesterday.", said).unwrap();
        assert_eq!(
            (day_label(a), day_label(b)),
            ("4 December 2023".into(), "5 December 2023".into())
        );
        let (a, b) = told_window("We took a road trip last month", said).unwrap();
        assert_eq!(
            (day_label(a), day_label(b)),
            ("1 November 2023".into(), "1 December 2023".into())
        );
        let (a, b) = told_window("Last week I threw a party", said).unwrap();
        assert!(a < said - 7 * DAY_MS && b <= said);
        let (a, b) = told_window("I got them 2 weeks ago", said).unwrap();
        assert!(a <= said - 14 * DAY_MS && b >= said - 14 * DAY_MS && b < said);
        assert!(told_window("I love painting", said).is_none());
        let jan = parse_locomo("1:00 pm on 10 January, 2023").unwrap();
        let (a, _) = told_window("last month was cold", jan).unwrap();
        assert_eq!(day_label(a), "1 December 2022");
    }
}
