//! Splitting Markdown files into overlapping chunks of about 400 tokens (80 overlap), on line boundaries, the
//! way OpenClaw's memory-core does, so each chunk can be cited by path and line range.

/// Approximate characters per token for English prose (the estimate memory-core uses too).
const CHARS_PER_TOKEN: usize = 4;

/// One chunk of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    /// The chunk's text (its lines joined by '\n').
    pub text: String,
}

/// Split `text` into chunks of about `tokens` tokens overlapping by about `overlap` tokens. Blank chunks are
/// skipped; a single line longer than the budget becomes a chunk of its own.
pub fn chunk_lines(text: &str, tokens: usize, overlap: usize) -> Vec<Chunk> {
    let budget = tokens.max(1) * CHARS_PER_TOKEN;
    let overlap_chars = overlap.min(tokens.saturating_sub(1)) * CHARS_PER_TOKEN;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < lines.len() {
        let mut end = start;
        let mut size = 0usize;
        while end < lines.len() && (end == start || size + lines[end].len() < budget) {
            size += lines[end].len() + 1;
            end += 1;
        }
        let body = lines[start..end].join("\n");
        if !body.trim().is_empty() {
            out.push(Chunk {
                start_line: start as u32 + 1,
                end_line: end as u32,
                text: body,
            });
        }
        if end >= lines.len() {
            break;
        }
        // Step back over whole lines worth about `overlap` tokens, always moving forward.
        let mut back = end;
        let mut kept = 0usize;
        while back > start + 1 && kept + lines[back - 1].len() < overlap_chars {
            kept += lines[back - 1].len() + 1;
            back -= 1;
        }
        start = back.max(start + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_file_is_one_chunk() {
        let c = chunk_lines("# Notes\n\nDana likes tea.\n", 400, 80);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].start_line, c[0].end_line), (1, 3));
    }

    #[test]
    fn long_file_chunks_overlap_and_cover_everything() {
        let text: String = (1..=400)
            .map(|i| format!("line number {i} with some words in it\n"))
            .collect();
        let c = chunk_lines(&text, 100, 20);
        assert!(c.len() > 5);
        assert_eq!(c[0].start_line, 1);
        assert_eq!(c.last().unwrap().end_line, 400);
        for w in c.windows(2) {
            assert!(w[1].start_line <= w[0].end_line, "chunks overlap");
            assert!(w[1].start_line > w[0].start_line, "chunks advance");
        }
        for ch in &c {
            assert!(ch.text.len() <= 100 * CHARS_PER_TOKEN + 64);
        }
    }

    #[test]
    fn blank_and_empty_files_give_no_chunks() {
        assert!(chunk_lines("", 400, 80).is_empty());
        assert!(chunk_lines("\n\n   \n", 400, 80).is_empty());
    }

    #[test]
    fn overlong_line_is_its_own_chunk() {
        let long = "x".repeat(10_000);
        let c = chunk_lines(&format!("a\n{long}\nb"), 100, 20);
        assert!(c.iter().any(|ch| ch.text == long));
        assert_eq!(c.last().unwrap().end_line, 3);
    }
}
