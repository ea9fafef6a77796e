//! Encoding one HDF5 chunk as the Blosc2 filter stores it: a contiguous frame of one Blosc2 chunk.
//!
//! The frame is the one c-blosc2 writes for a plain super-chunk (no b2nd metalayer), which every version of
//! the filter decodes whatever the dataset's rank: the header (format version 2, 64-bit chunk offsets), the
//! chunk, an index chunk holding the chunk's offset (stored), and an empty trailer. The chunk has the extended
//! header; its blocks are never split into per-byte streams (flag 0x10), each block is one stream, kept as
//! its bytes where the codec does not shrink it, and a chunk that compression would not shrink is stored.
//!
//! Client data as the filter defines it: 1 the block size in bytes (0: ours, 256 KiB), 2 the element size,
//! 4 the level (0 stores the bytes), 5 the filter (0 none, 1 byte shuffle, 2 bit shuffle) and 6 the codec
//! (0 BloscLZ, 1 LZ4, 2 LZ4HC, 4 zlib, 5 zstd). LZ4HC streams are LZ4 streams from a deeper search; any other
//! codec the filter may name is written as LZ4, and any other filter as a byte shuffle: each chunk names the codec and filter its
//! blocks went through, and every Blosc2 reader undoes those.

use super::chunk::{BITSHUFFLE, EXT_HEADER, SHUFFLE};
use crate::blosc::{compress, Codec};
use crate::error::{invalid, Result};

/// Bytes of a block when the client data does not fix them.
const DEFAULT_BLOCK: usize = 256 * 1024;
/// Bytes of the frame's header (no metalayers).
const FRAME_HEADER: usize = 97;
/// The frame's trailer: format 1, no variable-length metalayers, its own length (35), no fingerprint.
#[rustfmt::skip]
const TRAILER: [u8; 35] = [
    0x94, 0x01, 0x93, 0xcd, 0x00, 0x06, 0xde, 0x00, 0x00, 0xdc, 0x00, 0x00, 0xce, 0x00, 0x00, 0x00, 0x23,
    0xd8, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// What one chunk is encoded with.
struct Params {
    /// Bytes per element (1–255).
    typesize: usize,
    /// Compression level (0–9).
    level: u32,
    /// The filter slot applied (0 none).
    filter: u8,
    /// The codec the streams are written in.
    codec: Codec,
    /// The codec's Blosc2 id (in the extended header and the frame's header).
    codec_id: u8,
    /// The codec's stream format (bits 5–7 of the chunk's flags).
    format: u8,
    /// Bytes per block.
    blocksize: usize,
}

impl Params {
    /// The parameters client data `cd` asks for, for `len` bytes of `elem`-byte elements.
    fn new(cd: &[u32], len: usize, elem: usize) -> Self {
        let get = |i: usize| cd.get(i).copied();
        let (typesize, level) = crate::blosc::typesize_and_level(cd, elem);
        let filter = match get(5).unwrap_or(1) {
            0 => 0,
            2 if typesize > 1 || len >= 8 => BITSHUFFLE,
            _ if typesize > 1 => SHUFFLE,
            _ => 0,
        };
        let (codec, codec_id, format) = match get(6).unwrap_or(0) {
            0 => (Codec::BloscLz, 0, 0),
            2 => (Codec::Lz4Hc, 2, 1),
            4 => (Codec::Zlib, 4, 3),
            5 => (Codec::Zstd, 5, 4),
            _ => (Codec::Lz4, 1, 1),
        };
        let asked = get(1).map_or(0, |b| b as usize);
        let block = if asked == 0 { DEFAULT_BLOCK } else { asked };
        // Whole elements, at least one, and no more than the chunk holds.
        let blocksize = (block / typesize * typesize)
            .max(typesize)
            .min(len.max(typesize));
        Params {
            typesize,
            level,
            filter,
            codec,
            codec_id,
            format,
            blocksize,
        }
    }

    /// The filter slots as the chunk and the frame record them.
    fn slots(&self) -> [u8; 6] {
        [0, 0, 0, 0, 0, self.filter]
    }

    /// Applies the filter to one block.
    fn filter_block(&self, block: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.resize(block.len(), 0);
        let t = self.typesize;
        match self.filter {
            SHUFFLE => crate::transpose::shuffle_bytes(block, t, out),
            BITSHUFFLE => {
                // The whole multiple of 8 elements is bit-shuffled; the rest follows as it is.
                let n = block.len() / t;
                let whole = (n - n % 8) * t;
                crate::transpose::shuffle_bits_into(
                    &block[..whole],
                    n - n % 8,
                    t,
                    &mut out[..whole],
                );
                out[whole..].copy_from_slice(&block[whole..]);
            }
            _ => out.copy_from_slice(block),
        }
    }
}

/// Encodes one chunk (`data`, elements of `elem` bytes) as a Blosc2 frame, as client data `cd` asks.
pub fn encode(cd: &[u32], data: &[u8], elem: usize) -> Result<Vec<u8>> {
    if data.len() > i32::MAX as usize - 2 * EXT_HEADER {
        return invalid("a blosc2 chunk of 2 GiB or more");
    }
    let p = Params::new(cd, data.len(), elem);
    let chunk = chunk(&p, data)?;
    Ok(frame(&p, data.len(), &chunk))
}

/// A chunk's extended header: element size, flags, filter slots, codec id, then the decoded size, the block
/// size and the chunk's own size.
struct ChunkHeader {
    typesize: usize,
    flags: u8,
    slots: [u8; 6],
    codec_id: u8,
}

impl ChunkHeader {
    /// The header's bytes, with room reserved for `capacity` bytes of chunk.
    fn bytes(&self, nbytes: usize, blocksize: usize, cbytes: usize, capacity: usize) -> Vec<u8> {
        let mut h = Vec::with_capacity(capacity);
        h.extend_from_slice(&[5, 1, self.flags | 0x05, self.typesize as u8]);
        for v in [nbytes, blocksize, cbytes] {
            h.extend_from_slice(&(v as u32).to_le_bytes());
        }
        h.extend_from_slice(&self.slots);
        h.extend_from_slice(&[self.codec_id, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        h
    }
}

/// `data` kept as it is (flags 0x02), elements of `typesize` bytes.
fn stored(typesize: usize, data: &[u8]) -> Vec<u8> {
    let n = data.len();
    let h = ChunkHeader {
        typesize,
        flags: 0x02 | 0x10,
        slots: [0; 6],
        codec_id: 0,
    };
    let mut c = h.bytes(n, n, EXT_HEADER + n, EXT_HEADER + n);
    c.extend_from_slice(data);
    c
}

/// One Blosc2 chunk of `data`.
fn chunk(p: &Params, data: &[u8]) -> Result<Vec<u8>> {
    if p.level == 0 || data.is_empty() {
        return Ok(stored(p.typesize, data));
    }
    let nblocks = data.len().div_ceil(p.blocksize);
    let header = ChunkHeader {
        typesize: p.typesize,
        flags: 0x10 | (p.format << 5),
        slots: p.slots(),
        codec_id: p.codec_id,
    };
    let mut out = header.bytes(data.len(), p.blocksize, 0, data.len() / 2);
    out.resize(EXT_HEADER + 4 * nblocks, 0);
    let mut filtered = Vec::new();
    for (j, block) in data.chunks(p.blocksize).enumerate() {
        let start = out.len() as u32;
        out[EXT_HEADER + 4 * j..EXT_HEADER + 4 * j + 4].copy_from_slice(&start.to_le_bytes());
        p.filter_block(block, &mut filtered);
        let packed = compress(p.codec, p.level, &filtered)?;
        // A stream as long as its block holds the block's bytes.
        let body = if packed.len() < filtered.len() {
            &packed[..]
        } else {
            &filtered[..]
        };
        out.extend_from_slice(&(body.len() as i32).to_le_bytes());
        out.extend_from_slice(body);
        if out.len() >= EXT_HEADER + data.len() {
            return Ok(stored(p.typesize, data));
        }
    }
    let cbytes = out.len() as u32;
    out[12..16].copy_from_slice(&cbytes.to_le_bytes());
    Ok(out)
}

/// A contiguous frame holding `chunk` (which decodes to `nbytes`).
fn frame(p: &Params, nbytes: usize, chunk: &[u8]) -> Vec<u8> {
    // The index: the one chunk starts where the chunks do.
    let index = stored(8, &0i64.to_le_bytes());
    let total = FRAME_HEADER + chunk.len() + index.len() + TRAILER.len();
    let mut f = Vec::with_capacity(total);
    f.extend_from_slice(&[0x9e, 0xa8]);
    f.extend_from_slice(b"b2frame\0");
    f.push(0xd2);
    f.extend_from_slice(&(FRAME_HEADER as u32).to_be_bytes());
    f.push(0xcf);
    f.extend_from_slice(&(total as u64).to_be_bytes());
    // Flags: format 2 with 64-bit offsets, a contiguous frame, level and codec, and c-blosc2's reserved byte.
    let codec_flags = ((p.level as u8) << 4) | p.codec_id;
    f.extend_from_slice(&[0xa4, 0x12, 0x00, codec_flags, 0x03]);
    for v in [nbytes as i64, chunk.len() as i64] {
        f.push(0xd3);
        f.extend_from_slice(&v.to_be_bytes());
    }
    for v in [p.typesize, p.blocksize, nbytes] {
        f.push(0xd2);
        f.extend_from_slice(&(v as u32).to_be_bytes());
    }
    // Threads for compression and decompression, no user metadata.
    f.extend_from_slice(&[0xd1, 0, 0, 0xd1, 0, 1, 0xc2]);
    // The filter pipeline: six slots, then the codec and its meta; then the slots' metas.
    f.extend_from_slice(&[0xd8, 6]);
    f.extend_from_slice(&p.slots());
    f.extend_from_slice(&[p.codec_id, 0]);
    f.extend_from_slice(&[0; 8]);
    // No metalayers.
    f.extend_from_slice(&[0x93, 0xcd, 0x00, 0x07, 0xde, 0x00, 0x00, 0xdc, 0x00, 0x00]);
    debug_assert_eq!(f.len(), FRAME_HEADER);
    f.extend_from_slice(chunk);
    f.extend_from_slice(&index);
    f.extend_from_slice(&TRAILER);
    f
}

#[cfg(test)]
mod tests {
    use super::encode;

    /// Bytes of `n` elements of `t` bytes that compress somewhat: a slow ramp with a little noise.
    fn sample(n: usize, t: usize, seed: u64) -> Vec<u8> {
        let mut rng = crate::test_rng::TestRng::new(seed);
        (0..n * t)
            .map(|i| {
                let e = i / t;
                if i % t == 0 {
                    (rng.next() % 4) as u8
                } else {
                    e.checked_shr(8 * (i % t - 1) as u32).unwrap_or(0) as u8
                }
            })
            .collect()
    }

    #[test]
    fn every_codec_filter_and_block_size_decodes_to_its_bytes() {
        for codec in [0u32, 1, 2, 4, 5, 9] {
            for filter in [0u32, 1, 2, 7] {
                for (t, n) in [
                    (1, 0),
                    (1, 5),
                    (4, 1000),
                    (8, 20_001),
                    (3, 777),
                    (16, 9),
                    (2, 70_000),
                ] {
                    for (block, level) in [(0u32, 5u32), (100, 9), (4096, 1), (0, 0)] {
                        let data = sample(n, t, u64::from(codec * 7 + filter) + n as u64);
                        let cd = [1, block, t as u32, data.len() as u32, level, filter, codec];
                        let enc = encode(&cd, &data, t).unwrap();
                        let got = super::super::decode(&cd, &enc, data.len()).unwrap();
                        let what =
                            format!("codec {codec} filter {filter} t {t} n {n} block {block}");
                        assert_eq!(got, data, "{what}");
                        // Shuffled, the ramp's planes compress (unless stored on purpose).
                        if level > 0
                            && block != 100
                            && n * t > 4096
                            && t > 1
                            && matches!(filter, 1 | 2)
                        {
                            assert!(enc.len() < data.len(), "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn incompressible_chunks_are_stored_and_empty_client_data_means_defaults() {
        let mut rng = crate::test_rng::TestRng::new(7);
        let noise: Vec<u8> = (0..10_000).map(|_| rng.next() as u8).collect();
        let enc = encode(&[], &noise, 4).unwrap();
        assert!(enc.len() <= noise.len() + 97 + 32 + 40 + 35);
        assert_eq!(super::super::decode(&[], &enc, noise.len()).unwrap(), noise);
    }
}
