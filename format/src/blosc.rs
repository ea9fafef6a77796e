//! Decoding the Blosc plugin filter (registered id 32001; PyTables' and hdf5plugin's `blosc`): each chunk is
//! one Blosc (version 1 format) buffer.
//!
//! A buffer starts with a 16-byte header: format version, codec format version, flags, element size, then
//! (little-endian u32) the decoded size, the block size and the buffer's own size. Flags: 0x01 byte shuffle,
//! 0x02 the blocks follow uncompressed, 0x04 bit shuffle, 0x10 blocks not split, bits 5–7 the codec (0
//! BloscLZ, 1 LZ4, 2 Snappy, 3 zlib, 4 zstd; all decoded). Unless stored uncompressed, a table of each
//! block's start (i32, from the buffer's start) follows; a block is one stream, or one per byte of the element ("splits") when the
//! element is at most 16 bytes, the block holds at least 128 elements, it is not the short last block and
//! flag 0x10 is clear. Each stream is its size (i32) and the codec's output, or the bytes themselves when that
//! size equals the stream's decoded size. The shuffles are then undone over the whole block.

use crate::error::{corrupt, unsupported, Result};

/// Bytes of the header.
const HEADER: usize = 16;
/// Elements of at most this many bytes may be split into one stream per byte.
const MAX_SPLITS: usize = 16;
/// A block is split only when it holds at least this many elements.
const MIN_SPLIT_ELEMENTS: usize = 128;
/// BloscLZ's offset for far matches.
const MAX_DISTANCE: usize = 8191;

/// Decodes one Blosc buffer into at most `max_out` bytes.
pub fn decode(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let nbytes = decoded_size(data)?;
    if nbytes > max_out {
        return corrupt("blosc chunk decodes to more than the chunk size");
    }
    let mut out = vec![0u8; nbytes];
    decode_into(data, &mut out)?;
    Ok(out)
}

/// The decoded size a Blosc buffer's header states.
fn decoded_size(data: &[u8]) -> Result<usize> {
    let Some(h) = data.get(..HEADER) else {
        return corrupt("blosc chunk shorter than its header");
    };
    let (version, flags) = (h[0], h[2]);
    if version > 2 || flags & 0x05 == 0x05 {
        return unsupported("blosc2 chunk format (only Blosc 1 buffers are read)");
    }
    Ok(u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize)
}

/// Decodes one Blosc buffer into the start of `out`; returns the decoded size (an error when `out` is too
/// short for it).
pub fn decode_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    let nbytes = decoded_size(data)?;
    if nbytes > out.len() {
        return corrupt("blosc chunk decodes to more than the chunk size");
    }
    let out = &mut out[..nbytes];
    // `decoded_size` read the header.
    let h = &data[..HEADER];
    let le32 = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let (flags, typesize) = (h[2], (h[3] as usize).max(1));
    let blocksize = le32(&h[8..12]);
    if nbytes == 0 {
        return Ok(0);
    }
    if flags & 0x02 != 0 {
        return match data.get(HEADER..HEADER + nbytes) {
            Some(b) => {
                out.copy_from_slice(b);
                Ok(nbytes)
            }
            None => corrupt("blosc chunk shorter than its stored bytes"),
        };
    }
    if blocksize == 0 {
        return corrupt("blosc chunk with a block size of 0");
    }
    let codec = match flags >> 5 {
        0 => Codec::BloscLz,
        1 => Codec::Lz4,
        2 => Codec::Snappy,
        3 => Codec::Zlib,
        4 => Codec::Zstd,
        c => return unsupported(format!("blosc codec {c}")),
    };
    let nblocks = nbytes.div_ceil(blocksize);
    let Some(starts) = data.get(HEADER..HEADER + 4 * nblocks) else {
        return corrupt("blosc chunk shorter than its block table");
    };
    let mut tmp = Vec::new();
    for (j, start) in starts.chunks_exact(4).enumerate() {
        let at = j * blocksize;
        let bsize = blocksize.min(nbytes - at);
        let short_last = bsize < blocksize;
        let splits = if flags & 0x10 == 0
            && typesize <= MAX_SPLITS
            && bsize / typesize >= MIN_SPLIT_ELEMENTS
            && !short_last
        {
            typesize
        } else {
            1
        };
        let byte_shuffled = flags & 0x01 != 0 && typesize > 1;
        let bit_shuffled = flags & 0x04 != 0;
        let dest = &mut out[at..at + bsize];
        tmp.clear();
        tmp.resize(bsize, 0);
        let streams: &mut [u8] = if byte_shuffled || bit_shuffled {
            &mut tmp
        } else {
            dest
        };
        let mut pos = le32(start);
        let each = bsize / splits;
        for k in 0..splits {
            let Some(size) = data.get(pos..pos + 4) else {
                return corrupt("blosc block past the chunk's end");
            };
            let size = i32::from_le_bytes([size[0], size[1], size[2], size[3]]);
            let Ok(size) = usize::try_from(size) else {
                return corrupt("blosc stream with a negative size (a Blosc 2 run)");
            };
            pos += 4;
            let Some(body) = data.get(pos..pos + size) else {
                return corrupt("blosc stream past the chunk's end");
            };
            let target = &mut streams[k * each..(k + 1) * each];
            if size == each {
                target.copy_from_slice(body);
            } else {
                decompress(codec, body, target)?;
            }
            pos += size;
        }
        if byte_shuffled {
            crate::transpose::unshuffle_bytes(&tmp, typesize, dest);
        } else if bit_shuffled {
            let n = bsize / typesize;
            if n % 8 == 0 {
                let whole = n * typesize;
                crate::transpose::unshuffle_bits(&tmp[..whole], &mut dest[..whole], n, typesize);
                dest[whole..].copy_from_slice(&tmp[whole..]);
            } else {
                dest.copy_from_slice(&tmp);
            }
        }
    }
    Ok(nbytes)
}

/// Blocks we write hold at most this many bytes.
const ENCODE_BLOCK: usize = 64 * 1024;

/// Encodes `data` as one Blosc (version 1 format) buffer, as the Blosc filter's parameters ask: `params[2]`
/// the element size (else `elem`), `params[4]` the level (0–9; 0 stores the bytes), `params[5]` the shuffle
/// (0 none, otherwise a byte shuffle), `params[6]` the compressor (BloscLZ, LZ4, LZ4HC, Snappy, zlib, zstd;
/// every Blosc reader decodes the codec each buffer names). Blocks are never split; a buffer
/// that compression would not shrink is stored as its bytes.
pub fn encode(params: &[u32], data: &[u8], elem: usize) -> Result<Vec<u8>> {
    let get = |i: usize| params.get(i).copied();
    let (typesize, level) = typesize_and_level(params, elem);
    let shuffle = get(5).unwrap_or(1) != 0 && typesize > 1;
    // The filter names Blosc's compressor (0 BloscLZ, 1 LZ4, 2 LZ4HC, 3 Snappy, 4 zlib, 5 zstd); a buffer's
    // header names its stream format (0 BloscLZ, 1 LZ4 and LZ4HC, 2 Snappy, 3 zlib, 4 zstd).
    let (codec, code) = match get(6).unwrap_or(1) {
        0 => (Codec::BloscLz, 0u8),
        2 => (Codec::Lz4Hc, 1),
        3 => (Codec::Snappy, 2),
        4 => (Codec::Zlib, 3),
        5 => (Codec::Zstd, 4),
        _ => (Codec::Lz4, 1),
    };
    let nbytes = u32::try_from(data.len())
        .map_err(|_| crate::FormatError::Invalid("blosc buffer over 4 GiB".into()))?;
    let blocksize = (ENCODE_BLOCK / typesize * typesize).clamp(typesize, data.len().max(typesize));
    let stored = |flags: u8| {
        let mut out = header(
            flags | 0x02,
            typesize,
            nbytes,
            blocksize,
            HEADER + data.len(),
        );
        out.extend_from_slice(data);
        out
    };
    if level == 0 || data.is_empty() {
        return Ok(stored(0x10));
    }
    let flags = 0x10 | u8::from(shuffle) | (code << 5);
    let nblocks = data.len().div_ceil(blocksize);
    let mut out = header(flags, typesize, nbytes, blocksize, 0);
    out.resize(HEADER + 4 * nblocks, 0);
    let mut shuffled = Vec::new();
    for (j, block) in data.chunks(blocksize).enumerate() {
        let start = i32::try_from(out.len())
            .map_err(|_| crate::FormatError::Invalid("blosc buffer over 2 GiB".into()))?;
        out[HEADER + 4 * j..HEADER + 4 * j + 4].copy_from_slice(&start.to_le_bytes());
        let src = if shuffle {
            shuffled.resize(block.len(), 0);
            crate::transpose::shuffle_bytes(block, typesize, &mut shuffled);
            &shuffled[..]
        } else {
            block
        };
        let packed = compress(codec, level, src)?;
        let body = if packed.len() < src.len() {
            &packed[..]
        } else {
            src
        };
        out.extend_from_slice(&(body.len() as i32).to_le_bytes());
        out.extend_from_slice(body);
        if out.len() >= HEADER + data.len() {
            return Ok(stored(0x10));
        }
    }
    let total = out.len() as u32;
    out[12..16].copy_from_slice(&total.to_le_bytes());
    Ok(out)
}

/// The element size (`params[2]`, else `elem`; 1 to 255) and level (`params[4]`, 5 when absent; at most 9)
/// that Blosc's and Blosc2's client data ask for.
pub(crate) fn typesize_and_level(params: &[u32], elem: usize) -> (usize, u32) {
    let typesize = params
        .get(2)
        .copied()
        .filter(|&t| t > 0)
        .map_or(elem, |t| t as usize)
        .clamp(1, 255);
    (typesize, params.get(4).copied().unwrap_or(5).min(9))
}

/// A buffer's 16-byte header.
fn header(flags: u8, typesize: usize, nbytes: u32, blocksize: usize, total: usize) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER + nbytes as usize / 2);
    // Format version 2; each codec's own format version is 1.
    h.extend_from_slice(&[2, 1, flags, typesize as u8]);
    h.extend_from_slice(&nbytes.to_le_bytes());
    h.extend_from_slice(&(blocksize as u32).to_le_bytes());
    h.extend_from_slice(&(total as u32).to_le_bytes());
    h
}

/// Compresses one stream.
pub(crate) fn compress(codec: Codec, level: u32, src: &[u8]) -> Result<Vec<u8>> {
    Ok(match codec {
        Codec::Lz4 => lz4_flex::block::compress(src),
        Codec::Lz4Hc => crate::lz4hc_compress::compress(src, level),
        Codec::BloscLz => crate::blosclz_compress::compress(src),
        Codec::Snappy => snap::raw::Encoder::new()
            .compress_vec(src)
            .map_err(|e| crate::FormatError::Invalid(format!("blosc snappy: {e}")))?,
        Codec::Zlib => {
            use std::io::Write;
            let mut e =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
            e.write_all(src)?;
            e.finish()?
        }
        Codec::Zstd => crate::plugin_codecs::zstd(src, level as i32)?,
    })
}

/// The codec of a buffer's streams.
#[derive(Clone, Copy)]
pub(crate) enum Codec {
    BloscLz,
    Lz4,
    /// LZ4 streams, written from a deeper search.
    Lz4Hc,
    Snappy,
    Zlib,
    Zstd,
}

/// Decodes one stream into exactly `dest.len()` bytes.
pub(crate) fn decompress(codec: Codec, body: &[u8], dest: &mut [u8]) -> Result<()> {
    let want = dest.len();
    let got = match codec {
        Codec::BloscLz => return blosclz(body, dest),
        Codec::Lz4 | Codec::Lz4Hc => match lz4_flex::block::decompress_into(body, dest) {
            Ok(n) => return exact(n, want),
            Err(e) => return corrupt(format!("blosc lz4 stream: {e}")),
        },
        Codec::Snappy => {
            // The raw Snappy format: its decoded length first, checked before any byte is written.
            let n = snap::raw::decompress_len(body)
                .map_err(|e| crate::FormatError::Corrupt(format!("blosc snappy stream: {e}")))?;
            exact(n, want)?;
            return match snap::raw::Decoder::new().decompress(body, dest) {
                Ok(n) => exact(n, want),
                Err(e) => corrupt(format!("blosc snappy stream: {e}")),
            };
        }
        Codec::Zlib => crate::filters::inflate(body, want)?,
        Codec::Zstd => crate::plugin_codecs::unzstd(body, want)?,
    };
    exact(got.len(), want)?;
    dest.copy_from_slice(&got);
    Ok(())
}

fn exact(got: usize, want: usize) -> Result<()> {
    if got != want {
        return corrupt(format!("blosc stream decodes to {got} bytes, not {want}"));
    }
    Ok(())
}

/// BloscLZ: a control byte `c` (the first one's top three bits are a marker) is a literal run of `c + 1`
/// bytes when below 32; otherwise a match of `(c >> 5) + 2` bytes (7 means "and the following bytes, up to
/// the first that is not 255"), at distance `((c & 31) << 8) + next + 1`, or, when that next byte is 255 and
/// `c & 31` is 31, at distance `8191 + 1 + ` the two bytes after (big-endian).
fn blosclz(input: &[u8], dest: &mut [u8]) -> Result<()> {
    let bad = |what: &str| crate::FormatError::Corrupt(format!("blosclz stream: {what}"));
    let Some(&first) = input.first() else {
        return Err(bad("empty"));
    };
    let mut ip = 1;
    let mut op = 0;
    let mut ctrl = (first & 31) as usize;
    let byte = |ip: &mut usize| -> Result<usize> {
        let b = input.get(*ip).copied();
        *ip += 1;
        b.map(usize::from).ok_or_else(|| bad("cut short"))
    };
    loop {
        if ctrl >= 32 {
            let mut len = (ctrl >> 5) - 1;
            let ofs = (ctrl & 31) << 8;
            if len == 6 {
                loop {
                    let code = byte(&mut ip)?;
                    len += code;
                    if code != 255 {
                        break;
                    }
                }
            }
            let code = byte(&mut ip)?;
            let dist = if code == 255 && ofs == 31 << 8 {
                let far = (byte(&mut ip)? << 8) + byte(&mut ip)?;
                far + MAX_DISTANCE + 1
            } else {
                ofs + code + 1
            };
            let len = len + 3;
            if dist > op {
                return Err(bad("match before the start of the block"));
            }
            if op + len > dest.len() {
                return Err(bad("longer than its block"));
            }
            copy_match(dest, op, dist, len);
            op += len;
        } else {
            let n = ctrl + 1;
            let Some(run) = input.get(ip..ip + n) else {
                return Err(bad("literal run past its end"));
            };
            if op + n > dest.len() {
                return Err(bad("longer than its block"));
            }
            dest[op..op + n].copy_from_slice(run);
            op += n;
            ip += n;
        }
        match input.get(ip) {
            Some(&c) => {
                ctrl = c as usize;
                ip += 1;
            }
            None => break,
        }
    }
    exact(op, dest.len())
}

/// Copies `len` bytes from `dist` back to `op` within `buf`; an overlapping copy repeats the `dist` bytes
/// before `op`, done as whole non-overlapping copies of the pattern grown so far.
pub(crate) fn copy_match(buf: &mut [u8], op: usize, dist: usize, len: usize) {
    let start = op - dist;
    if dist == 1 {
        let b = buf[start];
        buf[op..op + len].fill(b);
        return;
    }
    let mut done = 0;
    while done < len {
        let n = (len - done).min(op + done - start);
        buf.copy_within(start..start + n, op + done);
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Floats with runs, over several blocks and a short last one.
    fn sample(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| ((i / 7) as f32 * 0.5).to_le_bytes())
            .collect()
    }

    #[test]
    fn encoded_buffers_decode_to_their_bytes() {
        for n in [0usize, 1, 5, 1000, 40_000] {
            let data = sample(n);
            for codec in [0u32, 1, 2, 3, 4, 5] {
                for shuffle in [0u32, 1, 2] {
                    for level in [0u32, 1, 5, 9] {
                        let params = [2, 2, 4, data.len() as u32, level, shuffle, codec];
                        let enc = encode(&params, &data, 4).unwrap();
                        assert_eq!(
                            decode(&enc, data.len()).unwrap(),
                            data,
                            "n {n} codec {codec} shuffle {shuffle} level {level}"
                        );
                        if level > 0 && n >= 1000 && enc[2] & 0x02 == 0 {
                            // The stream format the compressor code names.
                            let format = [0, 1, 1, 2, 3, 4][codec as usize];
                            assert_eq!(enc[2] >> 5, format, "codec {codec}");
                        }
                        if level > 0 && n >= 1000 {
                            assert!(enc.len() < data.len() / 2, "codec {codec}: {}", enc.len());
                        }
                    }
                }
            }
        }
        // Bytes that do not compress are stored as they are.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let enc = encode(&[2, 2, 1, 5000, 5, 0, 1], &noise, 1).unwrap();
        assert_eq!(enc[2] & 0x02, 0x02);
        assert_eq!(decode(&enc, 5000).unwrap(), noise);
    }

    #[test]
    fn blosclz_literals_matches_and_runs() {
        // "abc" (first byte carries the marker), a 4-byte match at distance 3 ("abca"), a 5-byte run of the last byte
        // ("a", distance 1), then "z".
        let stream = [
            (1 << 5) | 2,
            b'a',
            b'b',
            b'c',
            (2 << 5),
            2,
            (3 << 5),
            0,
            0,
            b'z',
        ];
        let mut out = vec![0u8; 13];
        blosclz(&stream, &mut out).unwrap();
        assert_eq!(&out, b"abcabcaaaaaaz");
        let mut short = vec![0u8; 12];
        assert!(blosclz(&stream, &mut short).is_err());
    }

    #[test]
    fn snappy_streams_decode_to_exactly_their_block() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 97) as u8).collect();
        let enc = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        let mut out = vec![0u8; data.len()];
        decompress(Codec::Snappy, &enc, &mut out).unwrap();
        assert_eq!(out, data);
        let mut short = vec![0u8; data.len() - 1];
        assert!(decompress(Codec::Snappy, &enc, &mut short).is_err());
        assert!(decompress(Codec::Snappy, &enc[..enc.len() / 2], &mut out).is_err());
    }

    #[test]
    fn stored_buffers_and_damage() {
        let mut b = vec![2, 1, 0x02, 4];
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&24u32.to_le_bytes());
        b.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(decode(&b, 8).unwrap(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(decode(&b, 7).is_err(), "bound");
        assert!(decode(&b[..20], 8).is_err(), "cut short");
        let mut compressed = b.clone();
        compressed[2] = 0;
        compressed[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert!(decode(&compressed, 8).is_err(), "block size 0");
        let mut v3 = b.clone();
        v3[0] = 3;
        assert!(decode(&v3, 8).is_err(), "blosc2");
    }

    #[test]
    fn random_buffers_never_panic() {
        let mut rng = crate::test_rng::TestRng::new(0x0f0f_1234_5678_9abc);
        let mut next = || rng.next();
        for _ in 0..20_000 {
            let len = 16 + (next() % 80) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            b[0] = 2;
            b[2] &= 0xf9 | (next() as u8 & 0x06);
            let n = (next() % 300) as u32;
            b[4..8].copy_from_slice(&n.to_le_bytes());
            b[8..12].copy_from_slice(&((next() % 300) as u32).to_le_bytes());
            let max = (next() % 400) as usize;
            if let Ok(out) = decode(&b, max) {
                assert!(out.len() <= max);
            }
        }
    }
}
