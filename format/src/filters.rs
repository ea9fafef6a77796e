//! The filter pipeline on chunk data: deflate, shuffle, fletcher32, and on read szip, lzf, lzo, lz4, zstd,
//! bitshuffle, blosc, blosc2, N-bit and scale-offset (others are reported by name).

use crate::checksum::fletcher32;
use crate::error::{corrupt, unsupported, Result};
use crate::messages::Filter;
use std::io::Write;

pub const DEFLATE: u16 = 1;
pub const SHUFFLE: u16 = 2;
pub const FLETCHER32: u16 = 3;
/// libhdf5's szip filter (CCSDS adaptive entropy coding, as libaec writes it), read only.
pub const SZIP: u16 = 4;
/// libhdf5's N-bit filter, read only.
pub const NBIT: u16 = 5;
/// libhdf5's scale-offset filter, read only.
pub const SCALEOFFSET: u16 = 6;
/// PyTables' LZO filter (registered id 305), read only.
pub const LZO: u16 = 305;
/// The Blosc plugin filter (registered id 32001; Blosc 1 buffers), read only.
pub const BLOSC: u16 = 32001;
/// The LZ4 plugin filter (registered id 32004), read only.
pub const LZ4: u16 = 32004;
/// The bitshuffle plugin filter (registered id 32008), read only.
pub const BITSHUFFLE: u16 = 32008;
/// The zstd plugin filter (registered id 32015), read only.
pub const ZSTD: u16 = 32015;
/// The Blosc2 plugin filter (registered id 32026; Blosc2 frames and chunks), read only.
pub const BLOSC2: u16 = 32026;
/// h5py's LZF filter (registered id 32000), read only.
pub const LZF: u16 = 32000;

/// Name of a registered filter id (for messages).
pub fn filter_name(id: u16) -> &'static str {
    match id {
        1 => "deflate",
        2 => "shuffle",
        3 => "fletcher32",
        4 => "szip",
        5 => "nbit",
        6 => "scaleoffset",
        305 => "lzo",
        307 => "bzip2",
        32000 => "lzf",
        32001 => "blosc",
        32004 => "lz4",
        32008 => "bitshuffle",
        32015 => "zstd",
        32026 => "blosc2",
        _ => "unknown",
    }
}

/// Undoes the pipeline on one stored chunk. `mask` bit i set = filter i was skipped.
/// `max_out` bounds the decoded size (the chunk's nominal byte size).
pub fn decode(
    filters: &[Filter],
    mask: u32,
    data: &[u8],
    elem: usize,
    max_out: usize,
) -> Result<Vec<u8>> {
    let mut buf = std::borrow::Cow::Borrowed(data);
    for (i, f) in filters.iter().enumerate().rev() {
        if i < 32 && mask & (1 << i) != 0 {
            continue;
        }
        buf = match f.id {
            DEFLATE => inflate(&buf, max_out)?.into(),
            LZF => crate::lzf::decompress(&buf, max_out)?.into(),
            LZO => unlzo(&buf, max_out)?.into(),
            LZ4 => crate::plugin_codecs::unlz4(&buf, max_out)?.into(),
            BLOSC => crate::blosc::decode(&buf, max_out)?.into(),
            BLOSC2 => crate::blosc2::decode(&f.params, &buf, max_out)?.into(),
            ZSTD => crate::plugin_codecs::unzstd(&buf, max_out)?.into(),
            BITSHUFFLE => crate::bitshuffle::decode(&f.params, &buf, max_out)?.into(),
            NBIT => crate::nbit::decode(&f.params, &buf, max_out)?.into(),
            SCALEOFFSET => crate::scaleoffset::decode(&f.params, &buf, max_out)?.into(),
            SZIP => crate::szip::decode(&f.params, &buf, max_out)?.into(),
            SHUFFLE => {
                let size = f.params.first().map(|&s| s as usize).unwrap_or(elem);
                unshuffle(&buf, size).into()
            }
            FLETCHER32 => {
                if buf.len() < 4 {
                    return corrupt("fletcher32 chunk shorter than its checksum");
                }
                let n = buf.len() - 4;
                let stored = u32::from_le_bytes([buf[n], buf[n + 1], buf[n + 2], buf[n + 3]]);
                let sum = fletcher32(&buf[..n]);
                if sum != stored && sum.swap_bytes() != stored {
                    return corrupt("fletcher32 checksum mismatch in chunk");
                }
                match buf {
                    std::borrow::Cow::Borrowed(b) => std::borrow::Cow::Borrowed(&b[..n]),
                    std::borrow::Cow::Owned(mut v) => {
                        v.truncate(n);
                        v.into()
                    }
                }
            }
            id => {
                return unsupported(format!("filter {id} ({})", filter_name(id)));
            }
        };
    }
    Ok(buf.into_owned())
}

/// Decodes a PyTables LZO chunk: an LZO1X stream, which some PyTables versions follow with the Adler-32 of
/// the decoded bytes (4 bytes, in the writer's byte order), checked when present.
fn unlzo(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let (out, used) = crate::lzo::decompress(data, max_out)?;
    match &data[used..] {
        [] => Ok(out),
        &[a, b, c, d] => {
            let sum = crate::checksum::adler32(&out);
            if sum == u32::from_le_bytes([a, b, c, d]) || sum == u32::from_be_bytes([a, b, c, d]) {
                Ok(out)
            } else {
                corrupt("lzo chunk checksum mismatch")
            }
        }
        rest => corrupt(format!(
            "lzo chunk: {} bytes after the end of its stream",
            rest.len()
        )),
    }
}

/// Inflates a zlib stream straight into one buffer of at most `max_out` bytes.
pub(crate) fn inflate(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    // One spare byte tells an over-long stream from one that fills the chunk exactly.
    let mut out = Vec::with_capacity(max_out.saturating_add(1).min(64 << 20));
    let mut z = flate2::Decompress::new(true);
    loop {
        let before = (z.total_in(), out.len());
        let status = z
            .decompress_vec(
                &data[z.total_in() as usize..],
                &mut out,
                flate2::FlushDecompress::Finish,
            )
            .map_err(|e| crate::FormatError::Corrupt(format!("deflate stream: {e}")))?;
        if out.len() > max_out {
            return corrupt("deflated chunk larger than the chunk size");
        }
        match status {
            flate2::Status::StreamEnd => return Ok(out),
            // Grow by doubling: a corrupt chunk size must not turn into one huge allocation.
            _ if out.len() == out.capacity() => {
                out.reserve(out.capacity().max(1 << 16).min(max_out + 1 - out.len()))
            }
            _ if (z.total_in(), out.len()) == before || z.total_in() as usize >= data.len() => {
                return corrupt("deflate stream: truncated");
            }
            _ => {}
        }
    }
}

fn unshuffle(data: &[u8], size: usize) -> Vec<u8> {
    let mut out = vec![0u8; data.len()];
    crate::transpose::unshuffle_bytes(data, size, &mut out);
    out
}

fn shuffle(data: &[u8], size: usize) -> Vec<u8> {
    let mut out = vec![0u8; data.len()];
    crate::transpose::shuffle_bytes(data, size, &mut out);
    out
}

/// Applies the pipeline to one chunk.
pub fn encode(filters: &[Filter], data: &[u8], elem: usize) -> Result<Vec<u8>> {
    let mut buf = data.to_vec();
    for f in filters {
        buf = match f.id {
            DEFLATE => {
                let level = f.params.first().copied().unwrap_or(6).min(9);
                let mut e = flate2::write::ZlibEncoder::new(
                    Vec::with_capacity(buf.len() / 2),
                    flate2::Compression::new(level),
                );
                e.write_all(&buf)?;
                e.finish()?
            }
            SHUFFLE => shuffle(&buf, f.params.first().map(|&s| s as usize).unwrap_or(elem)),
            FLETCHER32 => {
                let sum = fletcher32(&buf);
                buf.extend_from_slice(&sum.to_le_bytes());
                buf
            }
            id => return unsupported(format!("writing filter {id} ({})", filter_name(id))),
        };
    }
    Ok(buf)
}

/// The pipeline the writer uses for the given options.
pub fn pipeline(deflate: Option<u32>, shuffle: bool, fletcher: bool, elem: usize) -> Vec<Filter> {
    let mut v = Vec::new();
    if shuffle {
        v.push(Filter {
            id: SHUFFLE,
            flags: 1,
            name: String::new(),
            params: vec![elem as u32],
        });
    }
    if let Some(level) = deflate {
        v.push(Filter {
            id: DEFLATE,
            flags: 1,
            name: String::new(),
            params: vec![level.min(9)],
        });
    }
    if fletcher {
        v.push(Filter {
            id: FLETCHER32,
            flags: 0,
            name: String::new(),
            params: vec![],
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_all_filters() {
        let f = pipeline(Some(4), true, true, 4);
        let data: Vec<u8> = (0..4003u32).flat_map(|x| (x * 7).to_le_bytes()).collect();
        let enc = encode(&f, &data, 4).unwrap();
        assert_eq!(decode(&f, 0, &enc, 4, data.len()).unwrap(), data);
    }

    #[test]
    fn shuffle_matches_the_byte_plane_definition_for_every_size() {
        for size in 1..=9usize {
            for len in [0, 1, size - 1, size, 3 * size + 1, 1000 * size + size / 2] {
                let data: Vec<u8> = (0..len).map(|i| (i * 31 + i / 7) as u8).collect();
                let n = len / size;
                // Plane b holds byte b of every whole element; the tail is kept as is.
                let mut want = Vec::with_capacity(len);
                if size > 1 && len >= size {
                    for b in 0..size {
                        want.extend((0..n).map(|i| data[i * size + b]));
                    }
                    want.extend_from_slice(&data[n * size..]);
                } else {
                    want.extend_from_slice(&data);
                }
                assert_eq!(shuffle(&data, size), want, "shuffle size {size} len {len}");
                assert_eq!(
                    unshuffle(&want, size),
                    data,
                    "unshuffle size {size} len {len}"
                );
            }
        }
    }

    #[test]
    fn unknown_filter_is_named() {
        let f = vec![Filter {
            id: 307,
            flags: 0,
            name: String::new(),
            params: vec![],
        }];
        let e = decode(&f, 0, b"abc", 1, 10).unwrap_err().to_string();
        assert!(e.contains("filter 307 (bzip2)"), "{e}");
    }
}
