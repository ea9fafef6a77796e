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

/// A month a question names explicitly ("in March 2024"): [start, end) in ms.
pub fn month_window(question: &str) -> Option<(i64, i64)> {
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect();
    for (i, w) in words.iter().enumerate() {
        let Some(m) = MONTHS
            .iter()
            .position(|name| name.to_ascii_lowercase() == *w)
        else {
            continue;
        };
        let year = words
            .get(i + 1)
            .and_then(|y| y.parse::<i32>().ok())
            .filter(|y| (1900..3000).contains(y))?;
        let start = NaiveDate::from_ymd_opt(year, m as u32 + 1, 1)?;
        let end = if m == 11 {
            NaiveDate::from_ymd_opt(year + 1, 1, 1)?
        } else {
            NaiveDate::from_ymd_opt(year, m as u32 + 2, 1)?
        };
        return Some((
            ms(start.and_time(chrono::NaiveTime::MIN)),
            ms(end.and_time(chrono::NaiveTime::MIN)),
        ));
    }
    None
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
    }
}
