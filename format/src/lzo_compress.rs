//! LZO1X compression: streams that liblzo's `lzo1x_decompress_safe` (and [`crate::lzo::decompress`]) decode,
//! for rows appended to PyTables' `lzo` datasets (filter 305).
//!
//! A greedy LZ77 parse ([`crate::lz_parse`]), matches reaching up to 49,151 bytes back, each written in the
//! shortest form that holds it (the instruction set is described in [`crate::lzo`]): 3 to 8
//! bytes within 2,048 as M2, within 16,384 as M3, farther as M4. Up to three literals after a match ride in
//! its low two bits; longer runs get an instruction of their own. The 2-byte and far 3-byte M1 forms are
//! never written.

/// The farthest a match may reach back (M4's limit).
const MAX_DISTANCE: usize = 49_151;
/// The instruction that ends a stream.
const END: [u8; 3] = [0x11, 0, 0];

/// The LZO1X stream of `data`.
pub fn compress(data: &[u8]) -> Vec<u8> {
    let mut w = Writer {
        out: Vec::with_capacity(data.len() / 2 + 16),
        patch: None,
    };
    let limits = crate::lz_parse::Limits {
        max_distance: MAX_DISTANCE,
        keep_tail: 0,
        match_at_start: true,
    };
    let rest = crate::lz_parse::greedy(data, &limits, |literals, dist, len| {
        w.literals(literals);
        w.matched(dist, len);
    });
    w.literals(rest);
    w.out.extend_from_slice(&END);
    w.out
}

/// The stream written so far.
struct Writer {
    out: Vec<u8>,
    /// Where the last match keeps its count of trailing literals (two low bits), if one was written.
    patch: Option<usize>,
}

impl Writer {
    /// A run of literals: in the last match's low bits when 1 to 3 follow a match, else an instruction.
    fn literals(&mut self, run: &[u8]) {
        let n = run.len();
        if n == 0 {
            return;
        }
        match self.patch {
            Some(at) if n <= 3 => self.out[at] |= n as u8,
            // The first instruction of a stream: a byte of `n + 17`.
            None if self.out.is_empty() && n <= 238 => self.out.push(n as u8 + 17),
            _ => {
                // After a match with no trailing literals (or at the start): `n - 3` in four bits, or 0 and
                // a long length.
                if n - 3 <= 15 {
                    self.out.push((n - 3) as u8);
                } else {
                    self.out.push(0);
                    self.long_length(n - 3 - 15);
                }
            }
        }
        self.out.extend_from_slice(run);
        self.patch = None;
    }

    /// A match of `len` bytes (at least 3) at `dist` bytes back (1 to [`MAX_DISTANCE`]).
    fn matched(&mut self, dist: usize, len: usize) {
        debug_assert!(len >= 3 && (1..=MAX_DISTANCE).contains(&dist));
        if len <= 8 && dist <= 2048 {
            let d = dist - 1;
            self.patch = Some(self.out.len());
            self.out.push((((len - 1) << 5) | ((d & 7) << 2)) as u8);
            self.out.push((d >> 3) as u8);
            return;
        }
        let (d, field_bits, base) = if dist <= 16_384 {
            (dist - 1, 32u8, 31)
        } else {
            let d = dist - 16_384;
            (d & 0x3fff, 16u8 | ((d >> 11) & 8) as u8, 7)
        };
        if len - 2 <= base {
            self.out.push(field_bits | (len - 2) as u8);
        } else {
            self.out.push(field_bits);
            self.long_length(len - 2 - base);
        }
        self.patch = Some(self.out.len());
        self.out.extend_from_slice(&((d << 2) as u16).to_le_bytes());
    }

    /// A long length `v` (at least 1): a zero byte per 255, then the rest (1 to 255).
    fn long_length(&mut self, mut v: usize) {
        while v > 255 {
            self.out.push(0);
            v -= 255;
        }
        self.out.push(v as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::compress;
    use crate::lz_parse::samples;
    use crate::lzo::decompress;

    fn round_trip(data: &[u8]) -> Vec<u8> {
        let s = compress(data);
        let (out, used) = decompress(&s, data.len()).unwrap();
        assert_eq!(out, data);
        assert_eq!(used, s.len());
        s
    }

    #[test]
    fn every_instruction_form_round_trips() {
        let mut rng = crate::test_rng::TestRng::new(0x1a20_0c0d_e511);
        round_trip(b"");
        round_trip(b"a");
        round_trip(b"abc");
        // A long first literal run (over 238 bytes), then far matches of every length.
        let copies = [
            (2_000, 5),
            (20_000, 3),
            (40_000, 40),
            (16_384, 9),
            (16_385, 300),
            (49_151, 4),
        ];
        let far = samples::with_copies(&mut rng, 60_000, &copies, 30);
        round_trip(&far);
        // Runs, text, zeros and small alphabets: short and long matches with 0 to 3 and more literals between.
        let text = samples::text();
        assert!(round_trip(&text).len() < text.len() / 3);
        assert!(round_trip(&vec![0u8; 200_000]).len() < 1_000);
        let lens = [1, 2, 3, 4, 5, 17, 18, 19, 300, 5_000];
        for v in samples::small_alphabets(&mut rng, &lens) {
            round_trip(&v);
        }
        let noise = &far[..60_000];
        // Incompressible: grows by little.
        assert!(round_trip(noise).len() < noise.len() + noise.len() / 64 + 20);
    }
}
