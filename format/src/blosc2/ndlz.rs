//! Blosc2's NDLZ codec (id 32), decoded: a 2-D block of bytes compressed cell by cell, with cells of 4x4
//! (codec meta 4) or 8x8 bytes (meta 8).
//!
//! A stream starts with the rank (1 byte, always 2) and the block's two sides (i32 each). The cells follow in
//! row-major order, the last row and column of cells cut to what is left of the block. Each cell starts with a
//! token:
//! * 0: the cell's bytes, row by row, as they are (the only token of a cut cell);
//! * 0x40: one byte, repeated over the whole cell;
//! * 0xc0: a u16 distance back from the token to an earlier literal cell's bytes, which this cell repeats.
//!
//! The other tokens take some rows from earlier in the stream (a u16 distance back from the token) and carry
//! the cell's remaining rows after it, in order. For 4x4 cells: 128–191 two rows `i`, `j` (128 alone: rows 2
//! and 3; otherwise `i` = bits 5–6 and `j` = bits 3–4 of the token less 128), 224–255 three rows (token >> 3:
//! 28 rows 1–3, 29 rows 0–2, 30 rows 0, 1, 3, 31 rows 0, 2, 3), and 40–63 four rows from two places (two
//! distances: rows 0 and `(token - 32) >> 3` from the first, the other two from the second). For 8x8 cells:
//! token >> 3 = 17, two rows from row `token & 7`; 21, three rows from row `token & 7`.

use crate::error::{corrupt, Result};

/// Decodes one NDLZ stream of cells `meta` bytes a side into exactly `dest.len()` bytes.
pub(super) fn decompress(meta: u8, input: &[u8], dest: &mut [u8]) -> Result<()> {
    let side = match meta {
        4 => 4usize,
        8 => 8,
        m => return corrupt(format!("blosc2 ndlz stream of cells {m} bytes a side")),
    };
    let head = input.get(..9).ok_or_else(|| {
        crate::FormatError::Corrupt("blosc2 ndlz stream shorter than its header".into())
    })?;
    if head[0] != 2 {
        return corrupt(format!("blosc2 ndlz stream of rank {}", head[0]));
    }
    let dim = |at: usize| i32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let (rows, cols) = (dim(1), dim(5));
    if rows < 0 || cols < 0 || (rows as u64) * (cols as u64) != dest.len() as u64 {
        return corrupt(format!(
            "blosc2 ndlz block of {rows}x{cols} bytes in a stream of {} bytes",
            dest.len()
        ));
    }
    let (rows, cols) = (rows as usize, cols as usize);
    let mut r = Reader { input, pos: 9 };
    let mut cell = vec![0u8; side * side];
    for cr in 0..rows.div_ceil(side) {
        for cc in 0..cols.div_ceil(side) {
            let h = side.min(rows - cr * side);
            let w = side.min(cols - cc * side);
            // The cell's bytes land in `cell` with rows `w` apart, as the stream stores a cut cell.
            let token_at = r.pos;
            let token = r.byte()?;
            match token {
                0 => cell[..h * w].copy_from_slice(r.take(h * w)?),
                0x40 => {
                    let v = r.byte()?;
                    cell.fill(v);
                }
                0xc0 => {
                    let from = r.back(token_at)?;
                    cell[..h * w].copy_from_slice(r.at(from, h * w)?);
                }
                _ if side == 4 => r.rows4(token, token_at, &mut cell)?,
                _ => r.rows8(token, token_at, &mut cell)?,
            }
            for i in 0..h {
                let at = (cr * side + i) * cols + cc * side;
                dest[at..at + w].copy_from_slice(&cell[i * w..i * w + w]);
            }
        }
    }
    Ok(())
}

/// A position in an NDLZ stream.
struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let b = self.at(self.pos, n)?;
        self.pos += n;
        Ok(b)
    }

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// `n` bytes of the stream at `at`.
    fn at(&self, at: usize, n: usize) -> Result<&'a [u8]> {
        at.checked_add(n)
            .and_then(|end| self.input.get(at..end))
            .ok_or_else(|| crate::FormatError::Corrupt("blosc2 ndlz stream cut short".into()))
    }

    /// Reads a u16 distance and returns the position it names, that far back from the token at `token_at`.
    fn back(&mut self, token_at: usize) -> Result<usize> {
        let d = self.take(2)?;
        let d = usize::from(u16::from_le_bytes([d[0], d[1]]));
        token_at.checked_sub(d).ok_or_else(|| {
            crate::FormatError::Corrupt("blosc2 ndlz reference before the stream".into())
        })
    }

    /// Rows `which` of a 4x4 or 8x8 `cell` from earlier in the stream (at `from`, in order), the other rows
    /// from the stream here.
    fn fill_rows(
        &mut self,
        cell: &mut [u8],
        side: usize,
        from: usize,
        which: &[usize],
    ) -> Result<()> {
        let earlier = self.at(from, which.len() * side)?;
        for (k, &row) in which.iter().enumerate() {
            cell[row * side..row * side + side]
                .copy_from_slice(&earlier[k * side..k * side + side]);
        }
        for row in (0..cell.len() / side).filter(|r| !which.contains(r)) {
            cell[row * side..row * side + side].copy_from_slice(self.take(side)?);
        }
        Ok(())
    }

    fn rows4(&mut self, token: u8, token_at: usize, cell: &mut [u8]) -> Result<()> {
        match token {
            128..=191 => {
                let (i, j) = if token == 128 {
                    (2, 3)
                } else {
                    let t = usize::from(token - 128);
                    (t >> 5, (t >> 3) & 3)
                };
                let from = self.back(token_at)?;
                if i >= j {
                    return corrupt(format!("blosc2 ndlz token {token}"));
                }
                self.fill_rows(cell, 4, from, &[i, j])
            }
            224..=255 => {
                let rows: [usize; 3] = match token >> 3 {
                    28 => [1, 2, 3],
                    29 => [0, 1, 2],
                    30 => [0, 1, 3],
                    _ => [0, 2, 3],
                };
                let from = self.back(token_at)?;
                self.fill_rows(cell, 4, from, &rows)
            }
            40..=63 => {
                let j = usize::from(token - 32) >> 3;
                let first = self.back(token_at)?;
                let second = self.back(token_at)?;
                let rest: Vec<usize> = (1..4).filter(|&r| r != j).collect();
                let a = self.at(first, 8)?;
                let b = self.at(second, 8)?;
                for (k, &row) in [0, j].iter().chain(&rest).enumerate() {
                    let src = if k < 2 {
                        &a[k * 4..k * 4 + 4]
                    } else {
                        &b[(k - 2) * 4..(k - 2) * 4 + 4]
                    };
                    cell[row * 4..row * 4 + 4].copy_from_slice(src);
                }
                Ok(())
            }
            _ => corrupt(format!("blosc2 ndlz token {token}")),
        }
    }

    fn rows8(&mut self, token: u8, token_at: usize, cell: &mut [u8]) -> Result<()> {
        let row = usize::from(token & 7);
        let n = match token >> 3 {
            17 => 2,
            21 => 3,
            _ => return corrupt(format!("blosc2 ndlz token {token}")),
        };
        if row + n > 8 {
            return corrupt(format!("blosc2 ndlz token {token}"));
        }
        let from = self.back(token_at)?;
        let which: Vec<usize> = (row..row + n).collect();
        self.fill_rows(cell, 8, from, &which)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(rows: i32, cols: i32) -> Vec<u8> {
        let mut s = vec![2];
        s.extend_from_slice(&rows.to_le_bytes());
        s.extend_from_slice(&cols.to_le_bytes());
        s
    }

    #[test]
    fn literal_repeated_and_matched_cells_fill_their_place() {
        // A 4x9 block: cells (0,0) literal, (0,1) one repeated byte, (0,2) cut to 4x1, literal.
        let mut s = header(4, 9);
        s.push(0);
        let lit_at = s.len();
        s.extend(0..16u8);
        s.extend([0x40, 7]);
        s.push(0);
        s.extend([100, 101, 102, 103]);
        let mut out = vec![0u8; 36];
        decompress(4, &s, &mut out).unwrap();
        for r in 0..4 {
            let row = &out[r * 9..r * 9 + 9];
            let base = 4 * r as u8;
            assert_eq!(
                row,
                [
                    base,
                    base + 1,
                    base + 2,
                    base + 3,
                    7,
                    7,
                    7,
                    7,
                    100 + r as u8
                ]
            );
        }
        // A 4x8 block whose second cell repeats the first (a distance back from its token).
        let mut s = header(4, 8);
        s.push(0);
        s.extend(0..16u8);
        let token_at = s.len();
        s.push(0xc0);
        s.extend(((token_at - lit_at) as u16).to_le_bytes());
        let mut out = vec![0u8; 32];
        decompress(4, &s, &mut out).unwrap();
        assert_eq!(&out[4..8], &out[..4]);
        assert_eq!(&out[28..32], &[12, 13, 14, 15]);
    }

    #[test]
    fn row_matches_take_rows_from_earlier_cells() {
        // Cell 1 takes rows 1 and 3 from cell 0's rows 0-1 (token 128 | 1 << 5 | 3 << 3), rows 0 and 2 here.
        let mut s = header(4, 8);
        s.push(0);
        let lit_at = s.len();
        s.extend(0..16u8);
        let token_at = s.len();
        s.push(128 | (1 << 5) | (3 << 3));
        s.extend(((token_at - lit_at) as u16).to_le_bytes());
        s.extend([50, 51, 52, 53, 60, 61, 62, 63]);
        let mut out = vec![0u8; 32];
        decompress(4, &s, &mut out).unwrap();
        let cell1: Vec<u8> = (0..4)
            .flat_map(|r| out[r * 8 + 4..r * 8 + 8].to_vec())
            .collect();
        assert_eq!(
            cell1,
            [50, 51, 52, 53, 0, 1, 2, 3, 60, 61, 62, 63, 4, 5, 6, 7]
        );
    }

    #[test]
    fn random_streams_never_panic() {
        let mut rng = crate::test_rng::TestRng::new(32);
        for n in 0..20_000 {
            let side = if n % 2 == 0 { 4 } else { 8 };
            let (rows, cols) = (1 + rng.next() % 20, 1 + rng.next() % 20);
            let mut s = header(rows as i32, cols as i32);
            // Tokens the decoder knows, mostly, with random operands.
            let tokens: &[u8] = if side == 4 {
                &[0, 0x40, 0xc0, 128, 136, 176, 232, 248, 40, 56, 7]
            } else {
                &[0, 0x40, 0xc0, 136, 143, 168, 173, 9]
            };
            for _ in 0..rng.next() % 40 {
                s.push(tokens[(rng.next() % tokens.len() as u64) as usize]);
                for _ in 0..rng.next() % 20 {
                    s.push(rng.next() as u8);
                }
            }
            let mut out = vec![0u8; (rows * cols) as usize];
            let _ = decompress(side as u8, &s, &mut out);
        }
    }

    #[test]
    fn damaged_streams_are_errors() {
        let mut out = vec![0u8; 16];
        assert!(decompress(4, &header(4, 4), &mut out).is_err(), "no cell");
        assert!(
            decompress(4, &header(4, 5), &mut out).is_err(),
            "wrong size"
        );
        assert!(decompress(5, &header(4, 4), &mut out).is_err(), "cell side");
        let mut s = header(4, 4);
        s.extend([0xc0, 50, 0]);
        assert!(
            decompress(4, &s, &mut out).is_err(),
            "reference before the stream"
        );
        let mut s = header(4, 4);
        s.push(0x13);
        assert!(decompress(4, &s, &mut out).is_err(), "unknown token");
        let mut s = header(8, 8);
        s.extend([21 << 3 | 6, 0, 0]);
        let mut out = vec![0u8; 64];
        assert!(decompress(8, &s, &mut out).is_err(), "rows past the cell");
    }
}
