//! LZF decompression: the token format of liblzf, which h5py's built-in `lzf` filter (id 32000) stores each
//! chunk in, with no header of its own.
//!
//! A stream is a sequence of tokens, each starting with a control byte `c`:
//! - `c < 32`: a literal run; the next `c + 1` bytes are copied to the output.
//! - otherwise a back reference: length `c >> 5` (7 means "7 plus the next byte"), plus 2; distance
//!   `((c & 31) << 8) + next byte + 1` back from the end of the output. A copy may overlap its own output
//!   (a run of one repeated byte is a distance of 1).

use crate::error::{corrupt, Result};

/// Decodes `input` into at most `max_out` bytes. A token that reads past the input, refers before the start of
/// the output or would grow it beyond `max_out` is an error, so damaged data cannot make a large allocation.
pub fn decompress(input: &[u8], max_out: usize) -> Result<Vec<u8>> {
    // The output is at most ~132 times the input (a 3-byte token expands to 264 bytes).
    let mut out = Vec::with_capacity(max_out.min(input.len().saturating_mul(8)));
    let mut i = 0;
    let byte = |i: usize| -> Result<usize> {
        match input.get(i) {
            Some(&b) => Ok(b as usize),
            None => corrupt("lzf chunk: back reference cut short"),
        }
    };
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            let Some(run) = input.get(i..i + n) else {
                return corrupt("lzf chunk: literal run past its end");
            };
            if out.len() + n > max_out {
                return corrupt("lzf chunk decodes to more than the chunk size");
            }
            out.extend_from_slice(run);
            i += n;
            continue;
        }
        let mut len = ctrl >> 5;
        if len == 7 {
            len += byte(i)?;
            i += 1;
        }
        let back = ((ctrl & 31) << 8) + byte(i)? + 1;
        i += 1;
        len += 2;
        if back > out.len() {
            return corrupt("lzf chunk: back reference before the start of the data");
        }
        if out.len() + len > max_out {
            return corrupt("lzf chunk decodes to more than the chunk size");
        }
        let start = out.len() - back;
        if back >= len {
            out.extend_from_within(start..start + len);
        } else {
            // Overlapping: each byte copied may be one this same reference wrote.
            for k in start..start + len {
                let b = out[k];
                out.push(b);
            }
        }
    }
    Ok(out)
}

/// Longest match a back reference encodes.
const MAX_MATCH: usize = 264;
/// Farthest a back reference reaches.
const MAX_OFFSET: usize = 8192;
/// Bits of the match finder's hash.
const HASH_BITS: u32 = 14;

/// Compresses `input` as liblzf does (literal runs of at most 32 bytes, back references of 3–264 bytes up to
/// 8 KiB back, found through a hash of the next three bytes); `None` when the result would not be smaller
/// (the filter is then skipped for the chunk, as h5py's LZF filter fails and libhdf5 skips it).
pub fn compress(input: &[u8]) -> Option<Vec<u8>> {
    let n = input.len();
    let mut out = Vec::with_capacity(n);
    let mut table = vec![usize::MAX; 1 << HASH_BITS];
    let hash = |i: usize| {
        let v = u32::from(input[i]) << 16 | u32::from(input[i + 1]) << 8 | u32::from(input[i + 2]);
        (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
    };
    let mut lit = 0;
    let mut i = 0;
    while i + 2 < n {
        let h = hash(i);
        let r = table[h];
        table[h] = i;
        if r != usize::MAX && i - r <= MAX_OFFSET && input[r..r + 3] == input[i..i + 3] {
            let max = MAX_MATCH.min(n - i);
            let mut len = 3;
            while len < max && input[r + len] == input[i + len] {
                len += 1;
            }
            literals(&mut out, &input[lit..i]);
            let off = i - r - 1;
            let l = len - 2;
            if l < 7 {
                out.push(((l << 5) | (off >> 8)) as u8);
            } else {
                out.push(((7 << 5) | (off >> 8)) as u8);
                out.push((l - 7) as u8);
            }
            out.push(off as u8);
            i += len;
            lit = i;
        } else {
            i += 1;
        }
        if out.len() >= n {
            return None;
        }
    }
    literals(&mut out, &input[lit..]);
    (out.len() < n).then_some(out)
}

/// Literal runs of at most 32 bytes, each after its count less one.
fn literals(out: &mut Vec<u8>, bytes: &[u8]) {
    for run in bytes.chunks(32) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_chunks_decode_to_their_bytes() {
        let runs: Vec<u8> = (0..20_000u32).map(|i| (i / 50) as u8).collect();
        let text: Vec<u8> = b"the memory of the agent, the memory of the user; ".repeat(300);
        let long: Vec<u8> = vec![7; 5000];
        for data in [&runs, &text, &long] {
            let enc = compress(data).expect("compressible");
            assert!(enc.len() < data.len() / 3);
            assert_eq!(decompress(&enc, data.len()).unwrap(), *data);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..4000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        assert!(compress(&noise).is_none());
        assert!(compress(&[]).is_none());
    }

    #[test]
    fn literals_and_back_references_decode() {
        // "abc" literal, then a back reference of length 6 at distance 3: "abcabc".
        let stream = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(decompress(&stream, 100).unwrap(), b"abcabcabc");
    }

    #[test]
    fn a_run_of_one_byte_overlaps_its_own_output() {
        // "x", then length 7 + 10 + 2 = 19 at distance 1.
        let stream = [0, b'x', (7 << 5), 10, 0];
        assert_eq!(decompress(&stream, 100).unwrap(), vec![b'x'; 20]);
    }

    #[test]
    fn long_distances_use_the_high_bits_of_the_control_byte() {
        let lit: Vec<u8> = (0..=255u8).cycle().take(300).collect();
        let mut stream = Vec::new();
        for block in lit.chunks(32) {
            stream.push(block.len() as u8 - 1);
            stream.extend_from_slice(block);
        }
        // Length 3 + 2 = 5 at distance 300: ((1 << 8) + 43) + 1.
        stream.extend_from_slice(&[(3 << 5) | 1, 43]);
        let out = decompress(&stream, 1000).unwrap();
        assert_eq!(&out[..300], &lit[..]);
        assert_eq!(&out[300..], &lit[..5]);
    }

    #[test]
    fn damaged_streams_are_errors() {
        for (stream, max) in [
            (&[5, b'a'][..], 100),                  // literal run cut short
            (&[0, b'a', (1 << 5)][..], 100),        // reference without its distance byte
            (&[0, b'a', (7 << 5)][..], 100),        // long reference without its length byte
            (&[0, b'a', (1 << 5), 5][..], 100),     // reference before the start
            (&[0, b'a', (7 << 5), 255, 0][..], 50), // grows past the bound
            (&[3, 1, 2, 3, 4][..], 3),              // literal past the bound
        ] {
            assert!(decompress(stream, max).is_err(), "{stream:?}");
        }
        assert!(decompress(&[], 10).unwrap().is_empty());
    }

    #[test]
    fn random_bytes_never_panic_or_exceed_the_bound() {
        let mut rng = crate::test_rng::TestRng::new(0x2545_f491_4f6c_dd1d);
        let mut next = || rng.next();
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            let stream: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let max = (next() % 512) as usize;
            if let Ok(out) = decompress(&stream, max) {
                assert!(out.len() <= max);
            }
        }
    }
}
