//! BloscLZ compression: streams Blosc's and Blosc2's BloscLZ decoders read, for chunks of datasets that name
//! BloscLZ as their codec (hdf5plugin's and PyTables' default).
//!
//! The stream format (read by `blosc::blosclz`): a control byte below 32 is a literal run of `c + 1` bytes (the
//! first instruction always is one); otherwise a match of `(c >> 5) + 2` bytes, 7 in the top bits meaning
//! "and the sum of the bytes that follow, up to the first that is not 255", at distance
//! `((c & 31) << 8) + next + 1` within 8,191 bytes, or, with `c & 31` of 31 and a next byte of 255,
//! `8192 + ` the two bytes after (big-endian) for matches up to 73,727 bytes back.
//!
//! A greedy LZ77 parse ([`crate::lz_parse`]); the caller stores a block that does not shrink as it is. The
//! stream always ends with a literal run: c-blosc's decoders stop at the end of the input before copying a
//! match.

/// The farthest a near match reaches (its distance minus one fits 13 bits, all ones being the far marker).
const NEAR: usize = 8191;
/// The farthest a far match reaches.
const FAR: usize = NEAR + 1 + 0xffff;
/// Literals one control byte carries.
const MAX_LITERALS: usize = 32;

/// The BloscLZ stream of `data` (not empty).
pub fn compress(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 32 + 2);
    // The first instruction must be a literal run, and so must the last: matches stop a byte short of the end.
    let limits = crate::lz_parse::Limits {
        max_distance: FAR,
        keep_tail: 1,
        match_at_start: false,
    };
    let rest = crate::lz_parse::greedy(data, &limits, |run, dist, len| {
        literals(&mut out, run);
        matched(&mut out, dist, len);
    });
    literals(&mut out, rest);
    out
}

/// Literal runs of up to 32 bytes each.
fn literals(out: &mut Vec<u8>, run: &[u8]) {
    for part in run.chunks(MAX_LITERALS) {
        out.push((part.len() - 1) as u8);
        out.extend_from_slice(part);
    }
}

/// A match of `len` bytes (at least 3) at `dist` bytes back (1 to [`FAR`]).
fn matched(out: &mut Vec<u8>, dist: usize, len: usize) {
    debug_assert!(len >= 3 && (1..=FAR).contains(&dist));
    let d = dist - 1;
    let hi = if dist <= NEAR { d >> 8 } else { 31 };
    // Lengths 3 to 8 in the control byte's top bits, longer ones as 7 and the rest in bytes after it.
    let code = (len - 2).min(7);
    out.push(((code << 5) | hi) as u8);
    if code == 7 {
        let mut rest = len - 9;
        while rest >= 255 {
            out.push(255);
            rest -= 255;
        }
        out.push(rest as u8);
    }
    if dist <= NEAR {
        out.push((d & 0xff) as u8);
    } else {
        let far = dist - NEAR - 1;
        out.extend_from_slice(&[255, (far >> 8) as u8, (far & 0xff) as u8]);
    }
}

#[cfg(test)]
mod tests {
    use super::compress;
    use crate::lz_parse::samples;

    fn round_trip(data: &[u8]) -> Vec<u8> {
        let s = compress(data);
        // The last instruction is a literal run: its control byte says how many bytes end the stream.
        let mut at = 0;
        let mut last_literal = false;
        while at < s.len() {
            let c = usize::from(s[at]) & if at == 0 { 31 } else { 255 };
            if c < 32 {
                at += c + 2;
                last_literal = true;
            } else {
                at += 2 + if c >> 5 == 7 {
                    s[at + 1..].iter().position(|&b| b != 255).unwrap() + 1
                } else {
                    0
                };
                if c & 31 == 31 && s[at - 1] == 255 {
                    at += 2;
                }
                last_literal = false;
            }
        }
        assert!(last_literal && at == s.len(), "ends with a match");
        let mut out = vec![0u8; data.len()];
        crate::blosc::decompress(crate::blosc::Codec::BloscLz, &s, &mut out).unwrap();
        assert_eq!(out, data);
        s
    }

    #[test]
    fn every_instruction_form_round_trips() {
        let mut rng = crate::test_rng::TestRng::new(0x0b10_5c12);
        for data in [
            &b"a"[..],
            b"abc",
            b"abcd",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ] {
            round_trip(data);
        }
        // Near and far matches of every length class, and the boundaries between them.
        let copies = [
            (100, 3),
            (8_191, 8),
            (8_192, 9),
            (8_193, 263),
            (73_727, 300),
            (50_000, 5_000),
        ];
        let far = samples::with_copies(&mut rng, 90_000, &copies, 40);
        round_trip(&far);
        let text = samples::text();
        assert!(round_trip(&text).len() < text.len() / 3);
        assert!(round_trip(&vec![7u8; 100_000]).len() < 1_000);
        let lens = [1, 2, 3, 4, 5, 31, 32, 33, 64, 300, 5_000];
        for v in samples::small_alphabets(&mut rng, &lens) {
            round_trip(&v);
        }
        let noise = &far[..90_000];
        assert!(round_trip(noise).len() <= noise.len() + noise.len() / 32 + 1);
    }
}
