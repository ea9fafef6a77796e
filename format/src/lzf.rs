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

#[cfg(test)]
mod tests {
    use super::*;

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
