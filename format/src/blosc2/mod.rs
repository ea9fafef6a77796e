//! Decoding and encoding the Blosc2 plugin filter (registered id 32026; hdf5plugin's and PyTables' `blosc2`).
//!
//! The filter stores each HDF5 chunk as a Blosc2 *contiguous frame* (a super-chunk serialised in one buffer);
//! a bare Blosc2 chunk is read as well. Client data: 0 filter revision, 1 block size, 2 element size, 3 chunk
//! size in bytes, 4 compression level, 5 filter, 6 codec, and for chunks of more than one dimension 7 the rank
//! and 8… the chunk's dimensions; only the rank and dimensions are used here, to check a b2nd array's shape.
//!
//! The parts: `frame` reads a contiguous frame (its header, metalayers and chunk index), `b2nd` gathers a
//! b2nd array's chunks into C order, `chunk` decodes one Blosc2 chunk, and `encode` writes a chunk as a frame.
//!
//! Every read is bounds-checked and a damaged buffer is an error. Decoded sizes are bounded by the HDF5
//! chunk's size: a b2nd chunk padded to whole blocks (or with a chunk shape beyond the array's) to more than
//! that is decoded one block at a time, each block moved to its place before the next, its blocks no larger
//! than the HDF5 chunk or 16 MiB.
//! `zfp` reads the ZFP codecs' streams (in b2nd arrays, whose block shape they need).
//! Not read (named in an Unsupported error): codecs other than BloscLZ, LZ4, LZ4HC, zlib, zstd, NDLZ and ZFP (such
//! as OpenHTJ2K), filters other than byte shuffle, bit shuffle, delta, byte delta, the precision and
//! integer truncations and (in b2nd arrays) ndcell and ndmean, zstd dictionaries, lazy chunks, sparse frames and
//! chunk offsets of other than 64 bits.

use crate::error::Result;
use chunk::{chunk, chunk_prefix};
pub use encode::encode;
use frame::{frame, frame_prefix};

mod b2nd;
mod chunk;
mod encode;
mod frame;
mod ndlz;
#[cfg(test)]
mod test_util;
mod zfp;

/// Decodes one Blosc2-filtered chunk (client data `cd`) into at most `max_out` bytes.
pub fn decode(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    if is_frame(data) {
        frame(cd, data, max_out)
    } else {
        chunk(data, max_out, None)
    }
}

/// Decodes the first `want` bytes (at least; C order) of a Blosc2-filtered chunk of at most `max_out` bytes,
/// decoding only the frame chunks, blocks and array rows that hold them: the part of a chunk that lies within
/// its dataset's extent, when the writer sized chunks far beyond it (PyTables sizes them by the CPU's cache,
/// hundreds of MiB). Allocates at most 16 MiB more than `want`; a stream that would need more is an error.
pub fn decode_prefix(cd: &[u32], data: &[u8], max_out: usize, want: usize) -> Result<Vec<u8>> {
    if is_frame(data) {
        frame_prefix(cd, data, max_out, want)
    } else {
        chunk_prefix(data, max_out, None, want)
    }
}

fn is_frame(data: &[u8]) -> bool {
    data.len() >= 10 && data[0] & 0xf0 == 0x90 && data[1] == 0xa8 && &data[2..10] == b"b2frame\0"
}

#[cfg(test)]
mod tests {
    use super::chunk::{BITSHUFFLE, BYTEDELTA, BYTEDELTA_BUGGY, DELTA, SHUFFLE};
    use super::decode;
    use super::test_util::{b2nd_chunk, block, blocked, ext_chunk, frame, stored};

    /// Every prefix decode returns at least the bytes asked for (or all there are) and they equal the whole
    /// decode's: blocked chunks (delta referring to block 0), special and stored chunks, plain frames of several
    /// chunks, b2nd arrays of several chunk rows and columns.
    #[test]
    fn prefixes_equal_the_whole_decode() {
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 7 % 251) as u8).collect();
        let chunks: Vec<_> = (0..4)
            .map(|i| Some(stored(&b2nd_chunk([8, 6], [2, 6], [1, 3], i), 1)))
            .collect();
        let grid: Vec<_> = (0..4)
            .map(|i| {
                Some(stored(
                    &super::test_util::b2nd_chunk_at([7, 6], [4, 3], [2, 3], [i / 2, i % 2]),
                    1,
                ))
            })
            .collect();
        let samples = [
            blocked(&bytes, 4, 32, [SHUFFLE, DELTA, 0, 0, 0, 0]),
            blocked(&bytes, 1, 48, [0; 6]),
            stored(&bytes, 2),
            frame(
                &[
                    Some(stored(&bytes[..64], 1)),
                    None,
                    Some(blocked(&bytes[..64], 2, 16, [0; 6])),
                ],
                192,
                64,
                1,
                None,
            ),
            frame(&chunks, 48, 12, 1, Some((&[8, 6], &[2, 6], &[1, 3]))),
            frame(&grid, 42, 12, 1, Some((&[7, 6], &[4, 3], &[2, 3]))),
        ];
        for (n, s) in samples.iter().enumerate() {
            let whole = decode(&[], s, 1 << 20).unwrap();
            for want in 0..=whole.len() + 3 {
                let part = super::decode_prefix(&[], s, 1 << 20, want).unwrap();
                let need = want.min(whole.len());
                assert!(
                    part.len() >= need,
                    "sample {n}, want {want}: {} bytes",
                    part.len()
                );
                assert!(part.len() <= whole.len());
                assert_eq!(part[..need], whole[..need], "sample {n}, want {want}");
            }
        }
    }

    #[test]
    fn random_damage_never_panics() {
        let chunks: Vec<_> = (0..2)
            .map(|i| Some(stored(&b2nd_chunk([5, 5], [3, 5], [2, 2], i), 1)))
            .collect();
        let nd = Some((&[5i64, 5][..], &[3i32, 5][..], &[2i32, 2][..]));
        let mut s = 4i32.to_le_bytes().to_vec();
        s.extend_from_slice(&[1, 2, 3, 4]);
        s.extend_from_slice(&(-9i32).to_le_bytes());
        s.push(0x01);
        let samples = [
            frame(&chunks, 48, 24, 1, nd),
            frame(&[Some(stored(&[1, 2, 3], 1)), None], 6, 3, 1, None),
            ext_chunk(
                0,
                2,
                (8, 8),
                [SHUFFLE, BITSHUFFLE, DELTA, 0, 0, 0],
                0,
                0,
                &block(&s),
            ),
            // Byte delta (both releases) after a shuffle, over streams longer than 16 bytes.
            blocked(&[3; 96], 4, 64, [SHUFFLE, BYTEDELTA, 0, 0, 0, 0]),
            blocked(&[9; 96], 2, 96, [BYTEDELTA_BUGGY, 0, 0, 0, 0, 0]),
            // Read block by block when `max` is under 48.
            frame(
                &[Some(blocked(&[7; 48], 2, 8, [SHUFFLE, DELTA, 0, 0, 0, 0]))],
                48,
                48,
                2,
                Some((&[3, 5], &[3, 5], &[2, 2])),
            ),
            // python-blosc2's ZFP (fixed rate) in a b2nd frame.
            super::zfp::tests::rate_frame().0,
        ];
        let mut rng = crate::test_rng::TestRng::new(0x2026_b105_c2f0_0d5e);
        let mut next = || rng.next();
        for _ in 0..30_000 {
            let mut b = samples[(next() % samples.len() as u64) as usize].clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % b.len();
                b[at] = next() as u8;
            }
            if next() % 4 == 0 {
                b.truncate((next() as usize) % (b.len() + 1));
            }
            let max = (next() % 320) as usize;
            if let Ok(out) = decode(&[], &b, max) {
                assert!(out.len() <= max);
            }
            let want = (next() % 64) as usize;
            if let Ok(out) = super::decode_prefix(&[], &b, max, want) {
                assert!(out.len() <= max);
            }
        }
    }
}
