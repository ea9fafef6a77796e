//! LZO1X decompression: the stream format of liblzo's `lzo1x` compressors, which PyTables' `lzo` filter
//! (registered id 305) stores each chunk in, some PyTables versions followed by a 4-byte Adler-32 of the
//! decoded bytes.
//!
//! The stream is a sequence of instructions. A first byte above 17 is a literal run of `byte - 17` bytes.
//! Then each instruction byte `t`, where `S` (its low two bits, or those of the distance that follows) is the
//! number of literal bytes copied right after a match:
//! - `t >= 64`: a match of `(t >> 5) + 1` bytes (3 to 8) at distance `((t >> 2) & 7) + (next << 3) + 1`.
//! - `32..=63`: a match of `(t & 31) + 2` bytes (0 means a long length) at distance `(LE16 >> 2) + 1`.
//! - `16..=31`: a match of `(t & 7) + 2` bytes at distance `((t & 8) << 11) + (LE16 >> 2) + 16384`; a
//!   distance of exactly 16384 ends the stream.
//! - `0..=15`: depends on what came before. After a match with `S == 0`, a literal run of `t + 3` bytes
//!   (0 means a long length); after a match with `S` of 1 to 3, a 2-byte match at distance
//!   `(t >> 2) + (next << 2) + 1`; after a literal run of 4 or more, a 3-byte match at distance
//!   `(t >> 2) + (next << 2) + 2049`.
//!
//! A long length is the sum of 255 for each zero byte that follows, the first non-zero byte, and a base
//! (15, 31 or 7 by instruction).

use crate::error::{corrupt, Result};

/// The decoded bytes of `input` (at most `max_out`) and how many input bytes the stream took, its end marker
/// included. Reading past the input, a match reaching before the output's start, output beyond `max_out`
/// or a missing end marker are errors.
pub fn decompress(input: &[u8], max_out: usize) -> Result<(Vec<u8>, usize)> {
    let mut d = Decoder {
        input,
        pos: 0,
        out: Vec::with_capacity(max_out.min(input.len().saturating_mul(4))),
        max_out,
    };
    // Literals the previous instruction copied: 0 after a match that copied none (or at the start), 1 to 3
    // after a match's trailing literals, 4 after a literal run of four or more.
    let mut state = 0;
    if let Some(&first) = input.first() {
        if first > 17 {
            d.pos = 1;
            let n = first as usize - 17;
            d.literals(n)?;
            state = n.min(4);
        }
    }
    loop {
        let t = d.byte()? as usize;
        let trailing = if t >= 64 {
            let h = d.byte()? as usize;
            d.copy(((t >> 2) & 7) + (h << 3) + 1, (t >> 5) + 1)?;
            t & 3
        } else if t >= 32 {
            let len = d.length(t & 31, 31)? + 2;
            let (lo, dist) = d.distance16()?;
            d.copy(dist + 1, len)?;
            lo & 3
        } else if t >= 16 {
            let len = d.length(t & 7, 7)? + 2;
            let (lo, dist) = d.distance16()?;
            let dist = ((t & 8) << 11) + dist;
            if dist == 0 {
                return Ok((d.out, d.pos));
            }
            d.copy(dist + 16384, len)?;
            lo & 3
        } else if state == 0 {
            let n = d.length(t, 15)? + 3;
            d.literals(n)?;
            state = 4;
            continue;
        } else {
            let h = d.byte()? as usize;
            let (base, len) = if state == 4 { (2049, 3) } else { (1, 2) };
            d.copy((t >> 2) + (h << 2) + base, len)?;
            t & 3
        };
        d.literals(trailing)?;
        state = trailing;
    }
}

/// The input read so far and the output written.
struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    max_out: usize,
}

impl Decoder<'_> {
    fn byte(&mut self) -> Result<u8> {
        let Some(&b) = self.input.get(self.pos) else {
            return corrupt("lzo chunk ends before its end marker");
        };
        self.pos += 1;
        Ok(b)
    }

    /// An instruction's length field `field`, or when that is 0 the long length that follows it.
    fn length(&mut self, field: usize, base: usize) -> Result<usize> {
        match field {
            0 => self.long_length(base),
            n => Ok(n),
        }
    }

    /// A long length: 255 per zero byte, then the first non-zero byte, plus `base`.
    fn long_length(&mut self, base: usize) -> Result<usize> {
        let mut n = base;
        loop {
            match self.byte()? {
                0 => n += 255,
                b => return Ok(n + b as usize),
            }
            if n > self.max_out {
                return corrupt("lzo chunk decodes to more than the chunk size");
            }
        }
    }

    /// A little-endian 16-bit distance field: its low byte and its value shifted right by 2.
    fn distance16(&mut self) -> Result<(usize, usize)> {
        let lo = self.byte()? as usize;
        let hi = self.byte()? as usize;
        Ok((lo, (lo | (hi << 8)) >> 2))
    }

    fn room(&self, n: usize) -> Result<()> {
        if self.out.len() + n > self.max_out {
            return corrupt("lzo chunk decodes to more than the chunk size");
        }
        Ok(())
    }

    fn literals(&mut self, n: usize) -> Result<()> {
        self.room(n)?;
        let Some(run) = self.input.get(self.pos..self.pos + n) else {
            return corrupt("lzo chunk: literal run past its end");
        };
        self.out.extend_from_slice(run);
        self.pos += n;
        Ok(())
    }

    fn copy(&mut self, dist: usize, len: usize) -> Result<()> {
        if dist > self.out.len() {
            return corrupt("lzo chunk: match before the start of the data");
        }
        self.room(len)?;
        let start = self.out.len() - dist;
        if dist >= len {
            self.out.extend_from_within(start..start + len);
        } else {
            // Overlapping: each byte copied may be one this same match wrote.
            for k in start..start + len {
                let b = self.out[k];
                self.out.push(b);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: [u8; 3] = [0x11, 0, 0];

    fn stream(parts: &[&[u8]]) -> Vec<u8> {
        let mut s: Vec<u8> = parts.concat();
        s.extend_from_slice(&END);
        s
    }

    #[test]
    fn a_first_literal_run_then_the_end_marker() {
        let s = stream(&[&[17 + 5], b"hello"]);
        assert_eq!(decompress(&s, 100).unwrap(), (b"hello".to_vec(), s.len()));
    }

    #[test]
    fn matches_of_every_kind() {
        let s = stream(&[
            // "abcd" as the first literal run.
            &[17 + 4],
            b"abcd",
            // 0b010_011_01: 3 bytes at distance 3 + 1 = 4, then one literal ("x").
            &[0b0100_1101, 0],
            b"x",
            // After one literal, 0..15 is a 2-byte match: distance (4 >> 2) + 1 = 2, no literals.
            &[4, 0],
            // 32 | 2: 4 bytes at distance (16 >> 2) + 1 = 5, no literals.
            &[32 | 2, 16, 0],
            // After a match with no literals, 0..15 is a literal run: 1 + 3 bytes.
            &[1],
            b"wxyz",
        ]);
        let (out, used) = decompress(&s, 100).unwrap();
        assert_eq!(out, b"abcdabcxcxbcxcwxyz");
        assert_eq!(used, s.len());
    }

    #[test]
    fn after_a_long_literal_run_a_short_code_is_a_far_3_byte_match() {
        // A literal run of 2,100 bytes, then 0..15 means 3 bytes at distance (t >> 2) + (h << 2) + 2049.
        let lit: Vec<u8> = (0..2_100u32).map(|i| (i % 253) as u8).collect();
        let mut s = vec![0u8];
        s.extend(std::iter::repeat_n(0u8, 8)); // 8 * 255 = 2,040
        s.push(42); // 2,040 + 15 + 42 + 3 = 2,100
        s.extend_from_slice(&lit);
        s.extend_from_slice(&[(2 << 2) | 1, 1, b'!']); // distance 2 + 4 + 2049 = 2055, one literal
        s.extend_from_slice(&END);
        let (out, _) = decompress(&s, 10_000).unwrap();
        assert_eq!(&out[..2_100], &lit[..]);
        assert_eq!(&out[2_100..2_103], &lit[2_100 - 2_055..2_100 - 2_055 + 3]);
        assert_eq!(out[2_103], b'!');
    }

    #[test]
    fn overlapping_and_long_matches() {
        // "a", then M3 with a long length: t = 32 (length 0 → long), bytes 0, 5 → 31 + 255 + 5 + 2 = 293 at
        // distance 1.
        let s = stream(&[&[17 + 1], b"a", &[32, 0, 5, 0, 0]]);
        let (out, used) = decompress(&s, 1000).unwrap();
        assert_eq!(out, vec![b'a'; 294]);
        assert_eq!(used, s.len());
    }

    #[test]
    fn far_matches_use_the_m4_form() {
        let lit: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        // A long literal run of the 20,000 bytes: 0, then 78 zero bytes (78 * 255 = 19,890), then 92:
        // 19,890 + 15 + 92 + 3 = 20,000.
        let mut s = vec![0u8];
        s.extend(std::iter::repeat_n(0u8, 78));
        s.push(92);
        s.extend_from_slice(&lit);
        // M4: 5 bytes (t & 7 = 3) at distance 16384 + 100 = 16484 (LE16 = 100 << 2).
        s.extend_from_slice(&[16 | 3, (100 << 2) as u8, ((100 << 2) >> 8) as u8]);
        s.extend_from_slice(&END);
        let (out, _) = decompress(&s, 30_000).unwrap();
        assert_eq!(&out[..20_000], &lit[..]);
        assert_eq!(&out[20_000..], &lit[20_000 - 16_484..20_000 - 16_484 + 5]);
    }

    #[test]
    fn damaged_streams_are_errors() {
        for (s, max) in [
            (&b""[..], 10),
            (&[17 + 5, b'a'][..], 10),              // literal run cut short
            (&[17 + 1, b'a', 0b0100_0000][..], 10), // match without its distance byte
            (&[17 + 1, b'a', 0b0100_1100, 9][..], 100), // match before the start
            (&[17 + 1, b'a', 32, 0, 200, 0, 0, 0x11, 0, 0][..], 50), // grows past the bound
            (&[17 + 3, 1, 2, 3][..], 10),           // no end marker
        ] {
            assert!(decompress(s, max).is_err(), "{s:?}");
        }
    }

    #[test]
    fn random_bytes_never_panic_or_exceed_the_bound() {
        let mut rng = crate::test_rng::TestRng::new(0x0123_4567_89ab_cdef);
        let mut next = || rng.next();
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            let s: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let max = (next() % 512) as usize;
            if let Ok((out, used)) = decompress(&s, max) {
                assert!(out.len() <= max && used <= s.len());
            }
        }
    }
}
