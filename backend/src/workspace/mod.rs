//! OpenClaw's workspace: which files are its memory files (`MEMORY.md`, `USER.md`, `memory/*.md`, extra
//! paths), indexing them ([`sync`]), and reading line ranges back.

mod sync;

pub use sync::{sync, sync_counts, SyncReport};

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::error::BackendError;

/// The memory files of a workspace, and what could not be looked at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Workspace-relative paths, sorted.
    pub files: Vec<String>,
    /// Folders that could not be listed and names that are not UTF-8, each as "path: why".
    pub skipped: Vec<String>,
    /// The folders that could not be listed: what was indexed from them before is kept.
    pub unlisted: Vec<String>,
}

/// The memory files: `MEMORY.md`, `USER.md`, `memory/**/*.md`, plus `extra` (files or directories of `.md`
/// files, relative to the workspace). A folder that cannot be listed, or a name that is not UTF-8 (it could
/// not be cited), is skipped and named in [`Listing::skipped`].
pub fn memory_files(workspace: &Path, extra: &[String]) -> Result<Listing, BackendError> {
    let mut out = Listing::default();
    for name in ["MEMORY.md", "memory.md", "USER.md"] {
        if workspace.join(name).is_file() {
            out.files.push(name.to_string());
        }
    }
    let mut dirs = vec!["memory".to_string()];
    for e in extra {
        let rel = relative_inside(e)?;
        let full = workspace.join(&rel);
        if full.is_file() {
            out.files.push(rel);
        } else if full.is_dir() {
            dirs.push(rel);
        }
    }
    for d in dirs {
        collect_md(workspace, &d, &mut out, 0);
    }
    out.files.sort();
    out.files.dedup();
    Ok(out)
}

fn collect_md(workspace: &Path, rel: &str, out: &mut Listing, depth: usize) {
    let full = workspace.join(rel);
    if depth > 8 || !full.is_dir() {
        return;
    }
    let rd = match std::fs::read_dir(&full) {
        Ok(rd) => rd,
        Err(e) => {
            out.skipped.push(format!("{rel}: {e}"));
            out.unlisted.push(rel.to_string());
            return;
        }
    };
    for entry in rd {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                out.skipped.push(format!("{rel}: {e}"));
                continue;
            }
        };
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            let lossy = entry.file_name().to_string_lossy().into_owned();
            if lossy.ends_with(".md") || entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.skipped
                    .push(format!("{rel}/{lossy}: the name is not UTF-8"));
            }
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let child = format!("{rel}/{name}");
        match entry.file_type() {
            Ok(ft) if ft.is_dir() => collect_md(workspace, &child, out, depth + 1),
            Ok(ft) if ft.is_file() && name.ends_with(".md") => out.files.push(child),
            Ok(_) => {}
            Err(e) => out.skipped.push(format!("{child}: {e}")),
        }
    }
}

/// A workspace-relative path with no `..`, no root and no prefix, normalised to '/' separators.
pub fn relative_inside(p: &str) -> Result<String, BackendError> {
    let path = Path::new(p);
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => {
                return Err(BackendError::Invalid(format!(
                    "path {p:?} is outside the workspace (only relative paths without '..' are allowed)"
                )))
            }
        }
    }
    if parts.is_empty() {
        return Err(BackendError::Invalid("empty path".into()));
    }
    Ok(parts.join("/"))
}

/// The date in a daily-note name like `memory/2026-05-01.md`, as ms since epoch.
pub(crate) fn date_of(rel: &str) -> Option<i64> {
    let stem = Path::new(rel).file_stem()?.to_str()?;
    clawhdf5_memory::parse_time(stem.get(..10)?)
}

/// Lines read back from a workspace file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileSlice {
    /// Workspace-relative path.
    pub path: String,
    /// The lines, joined by '\n'.
    pub text: String,
    /// First line returned (1-based).
    pub from: u32,
    /// Number of lines returned.
    pub lines: u32,
    /// True when the file continues past the returned lines.
    pub truncated: bool,
    /// Line to ask for next, when truncated.
    pub next_from: Option<u32>,
}

/// Most lines returned by one read.
pub const MAX_READ_LINES: u32 = 2000;

/// Most bytes of text returned by one read: a window of a huge file, or of a file with a huge line, is cut
/// here (with `truncated` and `next_from` set) rather than read whole into memory.
pub const MAX_READ_BYTES: usize = 1 << 20;

/// Read `lines` lines from line `from` (1-based) of a workspace file; refuses paths that leave the workspace,
/// through `..` or through a symbolic link, and a `from` or `lines` of 0. Only the lines asked for are held in
/// memory (at most [`MAX_READ_LINES`] lines and [`MAX_READ_BYTES`] bytes); bytes that are not UTF-8 come back
/// as U+FFFD.
pub fn read_lines(
    workspace: &Path,
    rel: &str,
    from: Option<u32>,
    lines: Option<u32>,
) -> Result<FileSlice, BackendError> {
    if from == Some(0) {
        return Err(BackendError::Invalid(
            "from is a 1-based line number: 0 is not a line".into(),
        ));
    }
    if lines == Some(0) {
        return Err(BackendError::Invalid(
            "lines must be at least 1 (got 0)".into(),
        ));
    }
    let rel = relative_inside(rel)?;
    let root = workspace
        .canonicalize()
        .map_err(|source| BackendError::Io {
            path: workspace.display().to_string(),
            source,
        })?;
    let full: PathBuf = root.join(&rel);
    let real = full
        .canonicalize()
        .map_err(|_| BackendError::NotFound(format!("{rel} does not exist in the workspace")))?;
    if !real.starts_with(&root) {
        return Err(BackendError::Invalid(format!(
            "{rel} resolves outside the workspace"
        )));
    }
    if !real.is_file() {
        return Err(BackendError::NotFound(format!("{rel} is not a file")));
    }
    let io = |source| BackendError::Io {
        path: rel.clone(),
        source,
    };
    let from = from.unwrap_or(1);
    let want = lines.unwrap_or(MAX_READ_LINES).min(MAX_READ_LINES);
    let window = read_window(
        std::io::BufReader::new(std::fs::File::open(&real).map_err(io)?),
        from,
        want,
    )
    .map_err(io)?;
    Ok(FileSlice {
        path: rel,
        text: window.text,
        from,
        lines: window.lines,
        truncated: window.more,
        next_from: window
            .more
            .then_some(from.saturating_add(window.lines.max(1))),
    })
}

/// Lines read by [`read_window`].
struct Window {
    text: String,
    lines: u32,
    /// The file goes on past them, or the one line returned was cut.
    more: bool,
}

/// Up to `want` lines from line `from` (1-based) of `r`, split as `str::lines` splits (a trailing `\r` is
/// dropped) and joined by `\n`, stopping before a line that would take the text past [`MAX_READ_BYTES`]; a
/// first line longer than that comes back cut to it (the rest of that line is skipped). Lines skipped or
/// not returned are never held in memory.
fn read_window(mut r: impl std::io::BufRead, from: u32, want: u32) -> std::io::Result<Window> {
    use std::io::{BufRead, Read};
    for _ in 1..from {
        if r.skip_until(b'\n')? == 0 {
            break;
        }
    }
    let mut out: Vec<u8> = Vec::new();
    let mut line = Vec::new();
    let mut lines = 0u32;
    // A first line cut at the limit: the window is incomplete even when the file ends with it.
    let mut cut = false;
    while lines < want {
        line.clear();
        let room = MAX_READ_BYTES.saturating_sub(out.len() + usize::from(lines > 0));
        // One byte past the room tells a line that does not fit from one that fills it exactly.
        let n = r
            .by_ref()
            .take(room as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        if line.len() > room {
            if lines > 0 {
                // Left for the next read, which starts at this line.
                return Ok(Window {
                    text: String::from_utf8_lossy(&out).into_owned(),
                    lines,
                    more: true,
                });
            }
            line.truncate(room);
            r.skip_until(b'\n')?;
            cut = true;
        }
        if lines > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(&line);
        lines += 1;
    }
    let more = cut || !r.fill_buf()?.is_empty();
    Ok(Window {
        text: String::from_utf8_lossy(&out).into_owned(),
        lines,
        more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_confined() {
        assert_eq!(
            relative_inside("memory/./2026-01-01.md").unwrap(),
            "memory/2026-01-01.md"
        );
        for bad in ["../etc/passwd", "/etc/passwd", "memory/../../x", ""] {
            assert!(relative_inside(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn daily_note_dates() {
        assert!(date_of("memory/2026-05-01.md").is_some());
        assert!(date_of("MEMORY.md").is_none());
    }

    /// The window `str::lines` gives: (text, lines, more).
    fn lines_window(text: &str, from: u32, want: u32) -> (String, u32, bool) {
        let all: Vec<&str> = text.lines().collect();
        let start = (from as usize - 1).min(all.len());
        let end = (start + want as usize).min(all.len());
        (
            all[start..end].join("\n"),
            (end - start) as u32,
            end < all.len(),
        )
    }

    #[test]
    fn windows_split_lines_as_str_lines_does() {
        let texts = [
            "",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "\n\n\n",
            "a\n\nb\n\n",
            "x\ry\nz",
            "é\n中\n🙂",
        ];
        for text in texts {
            for from in 1..=6 {
                for want in 1..=5 {
                    let w = read_window(text.as_bytes(), from, want).unwrap();
                    assert_eq!(
                        (w.text, w.lines, w.more),
                        lines_window(text, from, want),
                        "{text:?} from {from} want {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_window_stops_at_the_byte_limit_and_the_next_read_goes_on() {
        // Lines of 100 KiB: ten fit under the limit with their separators, the eleventh does not.
        let line = "y".repeat(100 << 10);
        let text = vec![line.as_str(); 15].join("\n");
        let w = read_window(text.as_bytes(), 1, 2000).unwrap();
        assert_eq!((w.lines, w.more), (10, true));
        assert!(w.text.len() <= MAX_READ_BYTES);
        let w = read_window(text.as_bytes(), 11, 2000).unwrap();
        assert_eq!((w.lines, w.more), (5, false));
        // One line longer than the limit comes back cut, and says so even as the file's last.
        let long = "z".repeat(3 << 20);
        for text in [long.clone(), format!("{long}\nnext")] {
            let w = read_window(text.as_bytes(), 1, 5).unwrap();
            assert_eq!((w.text.len(), w.lines, w.more), (MAX_READ_BYTES, 1, true));
        }
        let w = read_window(format!("{long}\nnext").as_bytes(), 2, 5).unwrap();
        assert_eq!((w.text.as_str(), w.lines, w.more), ("next", 1, false));
    }

    #[test]
    fn zero_from_or_lines_and_bad_bytes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.md"), b"ok\n\xff\xfe bad\nlast").unwrap();
        for (from, lines) in [(Some(0), None), (None, Some(0))] {
            let e = read_lines(dir.path(), "n.md", from, lines).unwrap_err();
            assert!(matches!(e, BackendError::Invalid(_)), "{e}");
        }
        let s = read_lines(dir.path(), "n.md", Some(2), Some(1)).unwrap();
        assert_eq!(s.text, "\u{fffd}\u{fffd} bad");
        assert_eq!((s.truncated, s.next_from), (true, Some(3)));
        let s = read_lines(dir.path(), "n.md", Some(9), None).unwrap();
        assert_eq!((s.text.as_str(), s.lines, s.truncated), ("", 0, false));
    }

    #[test]
    fn read_lines_windows_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "a\nb\nc\nd\n").unwrap();
        let s = read_lines(dir.path(), "MEMORY.md", Some(2), Some(2)).unwrap();
        assert_eq!(s.text, "b\nc");
        assert!(s.truncated);
        assert_eq!(s.next_from, Some(4));
        assert!(read_lines(dir.path(), "../x", None, None).is_err());
        assert!(matches!(
            read_lines(dir.path(), "nope.md", None, None),
            Err(BackendError::NotFound(_))
        ));
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("secret.md"), "s").unwrap();
            std::os::unix::fs::symlink(
                outside.path().join("secret.md"),
                dir.path().join("link.md"),
            )
            .unwrap();
            assert!(matches!(
                read_lines(dir.path(), "link.md", None, None),
                Err(BackendError::Invalid(_))
            ));
        }
    }
}
