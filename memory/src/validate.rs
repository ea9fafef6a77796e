//! What a memory may hold, checked before anything is logged: a field out of bounds is an
//! [`MemoryError::InvalidInput`] naming it, and nothing is saved or changed. Records already in a file or
//! log are never checked again (replay keeps what was acknowledged).

use crate::error::{MemoryError, Result};
use crate::record::{NewMemory, Origin, Tier};
use crate::wal::RecordChange;

/// Longest text, in bytes after trimming.
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// Most tags on one memory.
pub const MAX_TAGS: usize = 256;
/// Longest tag, session, source or agent name, in bytes.
pub const MAX_LABEL_BYTES: usize = 1024;
/// Longest origin path, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Earliest event time, in ms since the Unix epoch: 0001-01-01T00:00:00Z.
pub const MIN_EVENT_MS: i64 = -62_135_596_800_000;
/// Latest event time, in ms since the Unix epoch: 9999-12-31T23:59:59.999Z.
pub const MAX_EVENT_MS: i64 = 253_402_300_799_999;

fn invalid(msg: String) -> MemoryError {
    MemoryError::InvalidInput(msg)
}

/// The trimmed text, if it is neither empty nor longer than [`MAX_TEXT_BYTES`] and holds no NUL.
pub fn text(text: &str) -> Result<&str> {
    let t = text.trim();
    if t.is_empty() {
        return Err(invalid("a memory's text must not be empty".into()));
    }
    if t.len() > MAX_TEXT_BYTES {
        return Err(invalid(format!(
            "a memory's text is limited to 1 MiB, got {} bytes",
            t.len()
        )));
    }
    no_nul("a memory's text", t)?;
    Ok(t)
}

/// Refuse a NUL character: the file stores strings as HDF5 strings, which libhdf5's readers (h5py among them)
/// cut short at the first NUL, so the value would not read back whole.
fn no_nul(what: &str, v: &str) -> Result<()> {
    match v.find('\0') {
        Some(at) => Err(invalid(format!(
            "{what} contains a NUL character (U+0000) at byte {at}, which HDF5 readers such as h5py would cut it at"
        ))),
        None => Ok(()),
    }
}

/// Importance must be a number in [0, 1].
pub fn importance(x: f32) -> Result<()> {
    if (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        Err(invalid(format!("importance {x} is outside [0, 1]")))
    }
}

/// An event time (ms since the Unix epoch) within years 1 to 9999, the dates it can be written back as.
pub fn event_time(ms: i64) -> Result<()> {
    if (MIN_EVENT_MS..=MAX_EVENT_MS).contains(&ms) {
        Ok(())
    } else {
        Err(invalid(format!(
            "event_time {ms} ms is outside years 1 to 9999 ({MIN_EVENT_MS} to {MAX_EVENT_MS} ms)"
        )))
    }
}

/// A name-like field (`what` says which) of at most [`MAX_LABEL_BYTES`].
fn label(what: &str, v: &str) -> Result<()> {
    if v.len() > MAX_LABEL_BYTES {
        return Err(invalid(format!(
            "{what} is limited to {MAX_LABEL_BYTES} bytes, got {}",
            v.len()
        )));
    }
    no_nul(what, v)
}

/// At most [`MAX_TAGS`] tags, none empty (or blank) and none longer than [`MAX_LABEL_BYTES`].
pub fn tags(tags: &[String]) -> Result<()> {
    if tags.len() > MAX_TAGS {
        return Err(invalid(format!(
            "a memory has at most {MAX_TAGS} tags, got {}",
            tags.len()
        )));
    }
    for (i, t) in tags.iter().enumerate() {
        if t.trim().is_empty() {
            return Err(invalid(format!("tag {i} is empty")));
        }
        label(&format!("tag {i}"), t)?;
    }
    Ok(())
}

/// A workspace span: a path, and lines counted from 1 with the last not before the first.
pub fn origin(o: &Origin) -> Result<()> {
    if o.path.trim().is_empty() {
        return Err(invalid("an origin needs a path".into()));
    }
    if o.path.len() > MAX_PATH_BYTES {
        return Err(invalid(format!(
            "an origin path is limited to {MAX_PATH_BYTES} bytes, got {}",
            o.path.len()
        )));
    }
    no_nul("an origin path", &o.path)?;
    if o.start_line == 0 {
        return Err(invalid(
            "origin lines are counted from 1, got start_line 0".into(),
        ));
    }
    if o.end_line < o.start_line {
        return Err(invalid(format!(
            "origin end_line {} is before start_line {}",
            o.end_line, o.start_line
        )));
    }
    Ok(())
}

/// Every field of a new memory but its embedding (the store checks that against its dimension).
pub fn new_memory(m: &NewMemory) -> Result<()> {
    text(&m.text)?;
    if let Some(x) = m.importance {
        importance(x)?;
    }
    if let Some(ms) = m.event_time {
        event_time(ms)?;
    }
    for (what, v) in [
        ("source", &m.source),
        ("agent", &m.agent),
        ("session", &m.session),
    ] {
        if let Some(v) = v {
            label(what, v)?;
        }
    }
    if let Some(o) = &m.origin {
        origin(o)?;
    }
    tags(&m.tags)
}

/// A change to a stored record.
pub fn change(c: &RecordChange) -> Result<()> {
    match c {
        RecordChange::Text { text: t, .. } => text(t).map(|_| ()),
        RecordChange::Tags(t) => tags(t),
        RecordChange::Importance(x) => importance(*x),
        RecordChange::Tier(code) => match Tier::from_code(*code) {
            Some(_) => Ok(()),
            None => Err(invalid(format!("unknown tier code {code}"))),
        },
        RecordChange::SupersededBy(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<()>) -> String {
        r.expect_err("should be refused").to_string()
    }

    #[test]
    fn each_bad_field_is_named() {
        let ok = NewMemory::text("the cat is called Miso");
        assert!(new_memory(&ok).is_ok());
        let with = |f: &dyn Fn(&mut NewMemory)| {
            let mut m = ok.clone();
            f(&mut m);
            err(new_memory(&m))
        };
        assert!(with(&|m| m.text = "  ".into()).contains("empty"));
        assert!(with(&|m| m.text = "x".repeat(MAX_TEXT_BYTES + 1)).contains("1 MiB"));
        assert!(with(&|m| m.importance = Some(f32::NAN)).contains("importance"));
        assert!(with(&|m| m.importance = Some(1.5)).contains("importance"));
        assert!(with(&|m| m.session = Some("s".repeat(MAX_LABEL_BYTES + 1))).contains("session"));
        assert!(with(&|m| m.tags = vec!["a".into(); MAX_TAGS + 1]).contains("tags"));
        assert!(with(&|m| m.event_time = Some(-99_999_999_999_999_999)).contains("event_time"));
        assert!(with(&|m| m.event_time = Some(MAX_EVENT_MS + 1)).contains("event_time"));
        assert!(with(&|m| m.tags = vec!["ok".into(), " ".into()]).contains("tag 1"));
        assert!(
            with(&|m| m.text = "before\0after".into()).contains("NUL character (U+0000) at byte 6")
        );
        assert!(with(&|m| m.session = Some("s\0".into())).contains("session contains a NUL"));
        assert!(with(&|m| m.tags = vec!["a\0b".into()]).contains("tag 0 contains a NUL"));
        let span = |path: &str, start_line, end_line| Origin {
            path: path.into(),
            start_line,
            end_line,
        };
        assert!(with(&|m| m.origin = Some(span("memory/a.md", 10, 2))).contains("before"));
        assert!(with(&|m| m.origin = Some(span("memory/a.md", 0, 2))).contains("from 1"));
        assert!(with(&|m| m.origin = Some(span("", 1, 2))).contains("path"));
        let mut fine = ok.clone();
        fine.origin = Some(span("memory/a.md", 3, 3));
        fine.tags = vec!["a".into(); MAX_TAGS];
        assert!(new_memory(&fine).is_ok());
        for edge in [MIN_EVENT_MS, 0, MAX_EVENT_MS] {
            fine.event_time = Some(edge);
            assert!(new_memory(&fine).is_ok());
        }
    }

    #[test]
    fn event_time_bounds_are_the_first_and_last_writable_instants() {
        use crate::record::{format_time, parse_time};
        assert_eq!(format_time(MIN_EVENT_MS), "0001-01-01T00:00:00.000Z");
        assert_eq!(format_time(MAX_EVENT_MS), "9999-12-31T23:59:59.999Z");
        for ms in [MIN_EVENT_MS, MAX_EVENT_MS] {
            assert_eq!(parse_time(&format_time(ms)), Some(ms));
        }
    }

    #[test]
    fn changes_are_held_to_the_same_bounds() {
        assert!(err(change(&RecordChange::Importance(-0.1))).contains("importance"));
        assert!(err(change(&RecordChange::Tier(200))).contains("tier"));
        assert!(err(change(&RecordChange::Tags(vec![String::new()]))).contains("tag 0"));
        let long = RecordChange::Text {
            text: "x".repeat(MAX_TEXT_BYTES + 1),
            embedding: None,
        };
        assert!(err(change(&long)).contains("1 MiB"));
        assert!(change(&RecordChange::Tier(Tier::Working.code())).is_ok());
        assert!(change(&RecordChange::SupersededBy(7)).is_ok());
    }
}
