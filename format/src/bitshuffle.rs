//! Decoding and encoding the bitshuffle plugin filter (registered id 32008): each block of elements is stored as its bit
//! planes (bit `k` of byte `j` of every element, element `i` at bit `i % 8` of byte `i / 8` of plane
//! `8 * j + k`), optionally LZ4- or zstd-compressed block by block.
//!
//! Client data: 0–1 version, 2 element size, 3 block size in elements (0: the default), 4 compression (0 none,
//! 2 LZ4, 3 zstd). A compressed chunk starts with its decoded size (8 bytes, big-endian) and block size in
//! bytes (4 bytes, big-endian); each block is then its compressed size (4 bytes, big-endian) and the
//! compressed planes. Blocks hold a multiple of 8 elements; the last one is shorter, and the elements past
//! the last multiple of 8 are stored as they are after it.

use crate::error::{corrupt, invalid, unsupported, Result};

/// Elements per block come in multiples of this.
const MULT: usize = 8;

/// How each block's planes are stored.
#[derive(Clone, Copy)]
enum Codec {
    None,
    Lz4,
    Zstd,
}

/// Decodes one bitshuffle-filtered chunk (client data `cd`) into at most `max_out` bytes.
pub fn decode(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let total = Layout::read(cd, data)?.total;
    if total > max_out {
        return corrupt("bitshuffle chunk decodes to more than the chunk size");
    }
    let mut out = vec![0u8; total];
    decode_into(cd, data, &mut out)?;
    Ok(out)
}

/// How a chunk is laid out: its codec, element size, decoded size, block size in elements and where its
/// first block starts.
struct Layout {
    codec: Codec,
    elem: usize,
    total: usize,
    block: usize,
    pos: usize,
}

impl Layout {
    fn read(cd: &[u32], data: &[u8]) -> Result<Layout> {
        let Some(&elem) = cd.get(2) else {
            return corrupt("bitshuffle filter without its element size");
        };
        let elem = elem as usize;
        if elem == 0 || elem > 1 << 16 {
            return corrupt(format!("bitshuffle element size {elem}"));
        }
        let codec = match cd.get(4).copied().unwrap_or(0) {
            0 => Codec::None,
            2 => Codec::Lz4,
            3 => Codec::Zstd,
            c => return unsupported(format!("bitshuffle compression {c}")),
        };
        let (total, mut block, pos) = match codec {
            Codec::None => (data.len(), cd.get(3).copied().unwrap_or(0) as usize, 0),
            Codec::Lz4 | Codec::Zstd => {
                let Some(h) = data.get(..12) else {
                    return corrupt("bitshuffle chunk shorter than its header");
                };
                let total = u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
                let block_bytes = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
                (
                    usize::try_from(total).unwrap_or(usize::MAX),
                    block_bytes / elem,
                    12,
                )
            }
        };
        if total % elem != 0 {
            return corrupt("bitshuffle chunk is not a whole number of elements");
        }
        if block == 0 {
            block = default_block(elem);
        }
        if block % MULT != 0 {
            return corrupt(format!(
                "bitshuffle block of {block} elements (not a multiple of 8)"
            ));
        }
        Ok(Layout {
            codec,
            elem,
            total,
            block,
            pos,
        })
    }
}

/// Decodes one bitshuffle-filtered chunk into the start of `out`; returns the decoded size (an error when
/// `out` is too short for it).
pub fn decode_into(cd: &[u32], data: &[u8], out: &mut [u8]) -> Result<usize> {
    let Layout {
        codec,
        elem,
        total,
        block,
        mut pos,
    } = Layout::read(cd, data)?;
    if total > out.len() {
        return corrupt("bitshuffle chunk decodes to more than the chunk size");
    }
    let out = &mut out[..total];
    let n = total / elem;
    let mut planes = Vec::new();
    for (done, count) in blocks(n, block) {
        let bytes = count * elem;
        let stored = match codec {
            Codec::None => {
                let Some(b) = data.get(pos..pos + bytes) else {
                    return corrupt("bitshuffle chunk cut short");
                };
                pos += bytes;
                b
            }
            Codec::Lz4 | Codec::Zstd => {
                let Some(len) = data.get(pos..pos + 4) else {
                    return corrupt("bitshuffle chunk cut short");
                };
                let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
                pos += 4;
                let Some(body) = data.get(pos..pos + len) else {
                    return corrupt("bitshuffle block past the chunk's end");
                };
                pos += len;
                planes.clear();
                planes.resize(bytes, 0);
                decompress_block(codec, body, &mut planes)?;
                &planes[..]
            }
        };
        crate::transpose::unshuffle_bits(
            stored,
            &mut out[done * elem..done * elem + bytes],
            count,
            elem,
        );
    }
    // The last elements (fewer than 8) follow as they are.
    let done = n - n % MULT;
    let rest = (n - done) * elem;
    let Some(tail) = data.get(pos..pos + rest) else {
        return corrupt("bitshuffle chunk cut short");
    };
    out[done * elem..].copy_from_slice(tail);
    Ok(total)
}

/// Encodes one chunk as the bitshuffle filter with client data `cd` stores it: element size `cd[2]` (else
/// `elem`), block size `cd[3]` in elements (0: the default), compression `cd[4]` (none, LZ4, or zstd at level
/// `cd[5]`, 3 when absent). Each compressed block is stored compressed, as bitshuffle stores it.
pub fn encode(cd: &[u32], data: &[u8], elem: usize) -> Result<Vec<u8>> {
    let elem = cd.get(2).map_or(elem, |&e| e as usize);
    if elem == 0 || elem > 1 << 16 {
        return invalid(format!("bitshuffle element size {elem}"));
    }
    if !data.len().is_multiple_of(elem) {
        return invalid("bitshuffle chunk is not a whole number of elements");
    }
    let codec = match cd.get(4).copied().unwrap_or(0) {
        0 => Codec::None,
        2 => Codec::Lz4,
        3 => Codec::Zstd,
        c => return unsupported(format!("writing bitshuffle compression {c}")),
    };
    let level = cd.get(5).map_or(3, |&l| l.clamp(1, 22) as i32);
    let mut block = cd.get(3).copied().unwrap_or(0) as usize;
    if block == 0 {
        block = default_block(elem);
    }
    if !block.is_multiple_of(MULT) {
        return invalid(format!(
            "bitshuffle block of {block} elements (not a multiple of 8)"
        ));
    }
    let mut out = Vec::with_capacity(data.len() + 16);
    if !matches!(codec, Codec::None) {
        out.extend_from_slice(&(data.len() as u64).to_be_bytes());
        let block_bytes = u32::try_from(block * elem)
            .map_err(|_| crate::error::FormatError::Invalid("bitshuffle block too large".into()))?;
        out.extend_from_slice(&block_bytes.to_be_bytes());
    }
    let n = data.len() / elem;
    let mut planes = vec![0u8; block.min(n) * elem];
    for (done, count) in blocks(n, block) {
        let bytes = count * elem;
        let p = &mut planes[..bytes];
        crate::transpose::shuffle_bits_into(
            &data[done * elem..done * elem + bytes],
            count,
            elem,
            p,
        );
        let packed = match codec {
            Codec::None => {
                out.extend_from_slice(p);
                continue;
            }
            Codec::Lz4 => lz4_flex::block::compress(p),
            Codec::Zstd => crate::plugin_codecs::zstd(p, level)?,
        };
        out.extend_from_slice(&(packed.len() as u32).to_be_bytes());
        out.extend_from_slice(&packed);
    }
    // The last elements (fewer than 8) follow as they are.
    out.extend_from_slice(&data[(n - n % MULT) * elem..]);
    Ok(out)
}

/// The blocks of `n` elements in blocks of `block` (a multiple of 8): `(first element, count)` each, the last
/// one shorter and a multiple of 8; the elements after the last block (fewer than 8) are stored as they are.
fn blocks(n: usize, block: usize) -> impl Iterator<Item = (usize, usize)> {
    let whole = n - n % MULT;
    (0..whole)
        .step_by(block.max(MULT))
        .map(move |start| (start, block.min(whole - start)))
}

/// The block size bitshuffle picks when none is given: about 8 KiB of elements, a multiple of 8.
fn default_block(elem: usize) -> usize {
    ((8192 / elem) / MULT * MULT).max(128)
}

fn decompress_block(codec: Codec, body: &[u8], dest: &mut [u8]) -> Result<()> {
    let want = dest.len();
    match codec {
        Codec::Lz4 => match lz4_flex::block::decompress_into(body, dest) {
            Ok(n) if n == want => Ok(()),
            Ok(n) => corrupt(format!("bitshuffle block decodes to {n} bytes, not {want}")),
            Err(e) => corrupt(format!("bitshuffle block: {e}")),
        },
        Codec::Zstd => {
            let got = crate::plugin_codecs::unzstd(body, want)?;
            if got.len() != want {
                return corrupt(format!(
                    "bitshuffle block decodes to {} bytes, not {want}",
                    got.len()
                ));
            }
            dest.copy_from_slice(&got);
            Ok(())
        }
        Codec::None => {
            dest.copy_from_slice(body);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncompressed_blocks_with_a_short_last_block_and_a_tail() {
        // 2-byte elements, blocks of 16: 43 elements = 16 + 16 + 8 shuffled, then 3 as they are.
        let data: Vec<u8> = (0..86u32).map(|i| (i * 37 % 256) as u8).collect();
        let mut stored = Vec::new();
        for (start, count) in [(0, 16), (16, 16), (32, 8)] {
            stored.extend(crate::transpose::shuffle_bits(
                &data[start * 2..(start + count) * 2],
                count,
                2,
            ));
        }
        stored.extend_from_slice(&data[80..]);
        let cd = [0, 3, 2, 16, 0];
        assert_eq!(decode(&cd, &stored, 86).unwrap(), data);
        assert!(decode(&cd, &stored[..85], 86).is_err(), "half an element");
    }

    #[test]
    fn encoded_chunks_decode_to_their_bytes() {
        let mut rng = crate::test_rng::TestRng::new(0x7777_0000_1111_2222);
        for elem in [1u32, 2, 4, 8, 12] {
            for len in [0usize, 5, 8, 100, 1000, 4099] {
                let data: Vec<u8> = (0..len * elem as usize)
                    .map(|i| (i / 7) as u8 ^ (rng.next() as u8 & 3))
                    .collect();
                for (block, comp) in [(0, 0), (0, 2), (16, 2), (0, 3), (64, 0), (8, 3)] {
                    let cd = [0, 4, elem, block, comp, 5];
                    let enc = encode(&cd, &data, elem as usize).unwrap();
                    assert_eq!(
                        decode(&cd, &enc, data.len()).unwrap(),
                        data,
                        "elem {elem}, {len} elements, block {block}, compression {comp}"
                    );
                }
            }
        }
        assert!(encode(&[0, 4, 4, 12, 2], &[0; 64], 4).is_err(), "block");
        assert!(
            encode(&[0, 4, 4, 0, 2], &[0; 63], 4).is_err(),
            "partial element"
        );
        assert!(
            encode(&[0, 4, 4, 0, 9], &[0; 64], 4).is_err(),
            "compression"
        );
    }

    #[test]
    fn damaged_chunks_are_errors() {
        assert!(decode(&[0, 3], &[0; 16], 16).is_err(), "no element size");
        assert!(decode(&[0, 3, 0], &[0; 16], 16).is_err(), "element size 0");
        assert!(
            decode(&[0, 3, 4, 12, 0], &[0; 96], 96).is_err(),
            "block not a multiple of 8"
        );
        assert!(
            decode(&[0, 3, 4, 0, 9], &[0; 16], 16).is_err(),
            "unknown compression"
        );
        let mut lz4 = 64u64.to_be_bytes().to_vec();
        lz4.extend_from_slice(&64u32.to_be_bytes());
        assert!(
            decode(&[0, 3, 4, 0, 2], &lz4, 64).is_err(),
            "blocks missing"
        );
        assert!(
            decode(&[0, 3, 4, 0, 2], &lz4, 32).is_err(),
            "larger than the chunk"
        );
    }

    #[test]
    fn random_chunks_never_panic() {
        let mut rng = crate::test_rng::TestRng::new(0x5555_1234_abcd_9876);
        let mut next = || rng.next();
        for _ in 0..5_000 {
            let cd = [
                0,
                3,
                [1, 2, 4, 8][(next() % 4) as usize],
                [0, 8, 16][(next() % 3) as usize],
                [0, 2, 3][(next() % 3) as usize],
            ];
            let len = (next() % 96) as usize;
            let s: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let max = (next() % 256) as usize;
            if let Ok(out) = decode(&cd, &s, max) {
                assert!(out.len() <= max);
            }
        }
    }
}
