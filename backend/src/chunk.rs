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
/// skipped; a single line longer than the budget is cut into pieces of its own (each citing that line), so
/// no chunk is much longer than the budget however long a line is.
pub fn chunk_lines(text: &str, tokens: usize, overlap: usize) -> Vec<Chunk> {
    Chunks::new(text, tokens, overlap).collect()
}

/// The chunks of one text, made one at a time as [`chunk_lines`] describes, so that a large file's chunks
/// need not all be held at once.
pub struct Chunks<'a> {
    lines: Vec<&'a str>,
    budget: usize,
    overlap_chars: usize,
    /// The next line a chunk starts at.
    start: usize,
    /// Pieces of an overlong line not yet handed out.
    pieces: std::vec::IntoIter<Chunk>,
}

impl<'a> Chunks<'a> {
    /// Chunks of about `tokens` tokens of `text`, overlapping by about `overlap` tokens.
    pub fn new(text: &'a str, tokens: usize, overlap: usize) -> Self {
        Chunks {
            lines: text.lines().collect(),
            budget: tokens.max(1) * CHARS_PER_TOKEN,
            overlap_chars: overlap.min(tokens.saturating_sub(1)) * CHARS_PER_TOKEN,
            start: 0,
            pieces: Vec::new().into_iter(),
        }
    }

    /// The chunk starting at line `self.start` (None when it is blank), moving `self.start` on.
    fn next_span(&mut self) -> Option<Chunk> {
        let (lines, budget, start) = (&self.lines, self.budget, self.start);
        if lines[start].len() > budget {
            let mut out = Vec::new();
            line_pieces(
                lines[start],
                start as u32 + 1,
                budget,
                self.overlap_chars,
                &mut out,
            );
            self.pieces = out.into_iter();
            self.start += 1;
            return None;
        }
        let mut end = start;
        let mut size = 0usize;
        while end < lines.len()
            && lines[end].len() <= budget
            && (end == start || size + lines[end].len() < budget)
        {
            size += lines[end].len() + 1;
            end += 1;
        }
        let body = lines[start..end].join("\n");
        let chunk = (!body.trim().is_empty()).then(|| Chunk {
            start_line: start as u32 + 1,
            end_line: end as u32,
            text: body,
        });
        self.start = if end >= lines.len() {
            lines.len()
        } else if lines[end].len() > budget {
            // The next line is cut into pieces of its own; stepping back would only repeat these lines.
            end
        } else {
            // Step back over whole lines worth about `overlap` tokens, always moving forward.
            let mut back = end;
            let mut kept = 0usize;
            while back > start + 1 && kept + lines[back - 1].len() < self.overlap_chars {
                kept += lines[back - 1].len() + 1;
                back -= 1;
            }
            back.max(start + 1)
        };
        chunk
    }
}

impl Iterator for Chunks<'_> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        loop {
            if let Some(piece) = self.pieces.next() {
                return Some(piece);
            }
            if self.start >= self.lines.len() {
                return None;
            }
            if let Some(chunk) = self.next_span() {
                return Some(chunk);
            }
        }
    }
}

/// Cut one line longer than `budget` bytes into pieces of at most `budget` bytes, each ending at whitespace
/// where there is some in its second half, consecutive pieces sharing about `overlap` bytes.
fn line_pieces(line: &str, number: u32, budget: usize, overlap: usize, out: &mut Vec<Chunk>) {
    let mut from = 0;
    while from < line.len() {
        let mut to = line.floor_char_boundary(from + budget);
        if to < line.len() {
            if let Some(ws) = line[from..to].rfind(char::is_whitespace) {
                if ws > budget / 2 {
                    to = from + ws;
                }
            }
        }
        if to <= from {
            // A budget smaller than one character: take that character.
            to = line.ceil_char_boundary(from + 1);
        }
        let piece = &line[from..to];
        if !piece.trim().is_empty() {
            out.push(Chunk {
                start_line: number,
                end_line: number,
                text: piece.to_string(),
            });
        }
        if to >= line.len() {
            break;
        }
        from = line
            .floor_char_boundary(to.saturating_sub(overlap))
            .max(from + 1);
        from = line.ceil_char_boundary(from);
    }
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
    fn an_overlong_line_is_cut_into_pieces_that_cite_it() {
        let long: String = (0..3_000).map(|i| format!("w{i} ")).collect();
        let c = chunk_lines(&format!("a\n{long}\nb"), 100, 20);
        let pieces: Vec<&Chunk> = c.iter().filter(|ch| ch.start_line == 2).collect();
        assert!(pieces.len() > 10);
        let mut at = 0usize;
        for p in &pieces {
            assert_eq!(p.end_line, 2);
            assert!(p.text.len() <= 100 * CHARS_PER_TOKEN, "{}", p.text.len());
            // In order, overlapping or touching the piece before, covering the whole line.
            let pos = long[at.saturating_sub(100 * CHARS_PER_TOKEN)..]
                .find(p.text.as_str())
                .map(|i| i + at.saturating_sub(100 * CHARS_PER_TOKEN))
                .unwrap();
            assert!(pos <= at, "a gap before byte {pos}");
            at = pos + p.text.len();
        }
        assert!(at >= long.trim_end().len());
        assert_eq!((c[0].start_line, c[0].text.as_str()), (1, "a"));
        assert_eq!(
            c.iter().filter(|ch| ch.start_line == 1).count(),
            1,
            "line 1 is not repeated"
        );
        assert_eq!(
            (c.last().unwrap().end_line, c.last().unwrap().text.as_str()),
            (3, "b")
        );
        // Multi-byte text and no whitespace at all: cut at character boundaries.
        let cjk = "記憶".repeat(5_000);
        let c = chunk_lines(&cjk, 100, 20);
        assert!(c.len() > 10);
        assert!(c
            .iter()
            .all(|ch| ch.text.len() <= 400 && !ch.text.is_empty()));
        // A tiny budget still moves forward.
        assert_eq!(chunk_lines("abcdef", 0, 0).len(), 2);
    }
}
