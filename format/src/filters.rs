//! The filter pipeline on chunk data, both ways: deflate, shuffle, fletcher32, szip, lzf, lzo, bzip2, lz4, zstd,
//! bitshuffle, blosc, blosc2, N-bit, scale-offset, zfp and FCIDECOMP's JPEG-LS (others are reported by name).

use crate::checksum::fletcher32;
use crate::error::{corrupt, unsupported, Result};
use crate::messages::Filter;
use std::borrow::Cow;

pub const DEFLATE: u16 = 1;
pub const SHUFFLE: u16 = 2;
pub const FLETCHER32: u16 = 3;
/// libhdf5's szip filter (CCSDS adaptive entropy coding, as libaec writes it).
pub const SZIP: u16 = 4;
/// libhdf5's N-bit filter.
pub const NBIT: u16 = 5;
/// libhdf5's scale-offset filter.
pub const SCALEOFFSET: u16 = 6;
/// PyTables' LZO filter (registered id 305).
pub const LZO: u16 = 305;
/// The bzip2 filter (registered id 307; PyTables, netCDF-4, hdf5plugin).
pub const BZIP2: u16 = 307;
/// The Blosc plugin filter (registered id 32001; Blosc 1 buffers).
pub const BLOSC: u16 = 32001;
/// The LZ4 plugin filter (registered id 32004).
pub const LZ4: u16 = 32004;
/// The bitshuffle plugin filter (registered id 32008).
pub const BITSHUFFLE: u16 = 32008;
/// The zstd plugin filter (registered id 32015).
pub const ZSTD: u16 = 32015;
/// The Blosc2 plugin filter (registered id 32026; Blosc2 frames and chunks).
pub const BLOSC2: u16 = 32026;
/// h5py's LZF filter (registered id 32000).
pub const LZF: u16 = 32000;
/// The H5Z-ZFP plugin filter (registered id 32013; zfp streams).
pub const ZFP: u16 = 32013;
/// EUMETSAT's FCIDECOMP filter (registered id 32018; a JPEG-LS codestream per chunk).
pub const FCIDECOMP: u16 = 32018;

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
        32013 => "zfp",
        32015 => "zstd",
        32026 => "blosc2",
        // The rest of The HDF Group's registry of filter identifiers: named so that an error can say which
        // plugin a file needs.
        257 => "hzip",
        258 | 32014 => "fpzip",
        32002 => "MAFISC",
        32003 => "Snappy",
        32005 => "APAX",
        32006 => "CBF",
        32007 => "JPEG-XR",
        32009 => "SPDP",
        32010 => "LPC-Rice",
        32011 => "CCSDS-123",
        32012 => "JPEG-LS",
        32016 => "B3D",
        32017 => "SZ",
        32018 => "FCIDECOMP",
        32019 => "JPEG",
        32020 => "VBZ",
        32021 => "FAPEC",
        32022 => "BitGroom",
        32023 => "Granular BitRound",
        32024 => "SZ3",
        32025 => "Delta-Rice",
        32027 => "FLAC",
        32028 => "SPERR",
        32029 => "TERSE/PROLIX",
        32030 => "FFMPEG",
        256..=511 => "unregistered, testing range",
        32768.. => "unregistered, private range",
        _ => "unknown",
    }
}

/// How an error names filter `f`: its id, its registered name, and the name the file stores for it when that
/// says more (a plugin outside the registry).
pub fn describe(f: &Filter) -> String {
    let known = filter_name(f.id);
    let stored = f.name.trim_end_matches('\0').trim();
    if stored.is_empty() || stored.eq_ignore_ascii_case(known) || f.id < 256 {
        format!("filter {} ({known})", f.id)
    } else {
        format!("filter {} ({known}; stored name {stored:?})", f.id)
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
    let mut buf = Cow::Borrowed(data);
    for f in applied(filters, mask) {
        buf = stage(f, buf, elem, max_out)?;
    }
    Ok(buf.into_owned())
}

/// Whether [`decode_prefix`] can stop short of a whole chunk: the last filter undone is Blosc2 (which decodes
/// only the frame chunks, blocks and rows it is asked for) and every one before it only checks the stored
/// bytes (Fletcher-32).
pub fn decodes_prefix(filters: &[Filter], mask: u32) -> bool {
    let stages: Vec<&Filter> = applied(filters, mask).collect();
    matches!(stages.split_last(),
        Some((last, before)) if last.id == BLOSC2 && before.iter().all(|f| f.id == FLETCHER32))
}

/// Like [`decode`], but only the chunk's first `want` bytes are needed: where [`decodes_prefix`] holds, only
/// what covers them is decoded (at least `want` bytes come back, at most 16 MiB more); otherwise the whole
/// chunk, as [`decode`] does.
pub fn decode_prefix(
    filters: &[Filter],
    mask: u32,
    data: &[u8],
    elem: usize,
    max_out: usize,
    want: usize,
) -> Result<Vec<u8>> {
    if !decodes_prefix(filters, mask) {
        return decode(filters, mask, data, elem, max_out);
    }
    let stages: Vec<&Filter> = applied(filters, mask).collect();
    let Some((last, before)) = stages.split_last() else {
        return decode(filters, mask, data, elem, max_out);
    };
    let mut buf = Cow::Borrowed(data);
    for f in before {
        buf = stage(f, buf, elem, max_out)?;
    }
    crate::blosc2::decode_prefix(&last.params, &buf, max_out, want)
}

/// Undoes the pipeline on one stored chunk into `out`, which must come out exactly full (the chunk's
/// decoded size): the last filter undone writes straight into `out` where its decoder can, without a buffer
/// of its own. `mask` as for [`decode`].
pub fn decode_into(
    filters: &[Filter],
    mask: u32,
    data: &[u8],
    elem: usize,
    out: &mut [u8],
) -> Result<()> {
    let stages: Vec<&Filter> = applied(filters, mask).collect();
    let written = match stages.split_last() {
        None => {
            let n = data.len().min(out.len());
            out[..n].copy_from_slice(&data[..n]);
            n
        }
        Some((last, before)) => {
            let mut buf = Cow::Borrowed(data);
            for f in before {
                buf = stage(f, buf, elem, out.len())?;
            }
            stage_into(last, &buf, elem, out)?
        }
    };
    if written < out.len() {
        return corrupt("decoded chunk shorter than the chunk shape");
    }
    Ok(())
}

/// The filters `mask` does not skip, in the order they are undone (last applied first).
fn applied(filters: &[Filter], mask: u32) -> impl Iterator<Item = &Filter> {
    filters
        .iter()
        .enumerate()
        .rev()
        .filter(move |(i, _)| !(*i < 32 && mask & (1 << i) != 0))
        .map(|(_, f)| f)
}

/// Undoes filter `f` on `buf`, bounded by `max_out` bytes.
fn stage<'d>(f: &Filter, buf: Cow<'d, [u8]>, elem: usize, max_out: usize) -> Result<Cow<'d, [u8]>> {
    Ok(match f.id {
        DEFLATE => inflate(&buf, max_out)?.into(),
        LZF => crate::lzf::decompress(&buf, max_out)?.into(),
        LZO => unlzo(&buf, max_out)?.into(),
        BZIP2 => crate::bzip2_filter::decode(&buf, max_out)?.into(),
        LZ4 => crate::plugin_codecs::unlz4(&buf, max_out)?.into(),
        BLOSC => crate::blosc::decode(&buf, max_out)?.into(),
        BLOSC2 => crate::blosc2::decode(&f.params, &buf, max_out)?.into(),
        ZSTD => crate::plugin_codecs::unzstd(&buf, max_out)?.into(),
        BITSHUFFLE => crate::bitshuffle::decode(&f.params, &buf, max_out)?.into(),
        NBIT => crate::nbit::decode(&f.params, &buf, max_out)?.into(),
        SCALEOFFSET => crate::scaleoffset::decode(&f.params, &buf, max_out)?.into(),
        SZIP => crate::szip::decode(&f.params, &buf, max_out)?.into(),
        ZFP => crate::zfp::decode_h5z(&f.params, &buf, max_out)?.into(),
        FCIDECOMP => crate::jpegls::decode(&buf, max_out)?.into(),
        SHUFFLE => unshuffle(&buf, shuffle_size(f, elem)).into(),
        FLETCHER32 => {
            let n = check_fletcher32(&buf)?;
            match buf {
                Cow::Borrowed(b) => Cow::Borrowed(&b[..n]),
                Cow::Owned(mut v) => {
                    v.truncate(n);
                    v.into()
                }
            }
        }
        _ => return unsupported(describe(f)),
    })
}

/// Undoes filter `f` on `buf` into the start of `out` (bounded by its length); returns the bytes written.
/// Decoders that can write into a given buffer do; the others decode into their own, which is copied.
fn stage_into(f: &Filter, buf: &[u8], elem: usize, out: &mut [u8]) -> Result<usize> {
    match f.id {
        DEFLATE => inflate_into(buf, out),
        LZ4 => crate::plugin_codecs::unlz4_into(buf, out),
        BZIP2 => crate::bzip2_filter::decode_into(buf, out),
        ZSTD => crate::plugin_codecs::unzstd_into(buf, out),
        BLOSC => crate::blosc::decode_into(buf, out),
        BITSHUFFLE => crate::bitshuffle::decode_into(&f.params, buf, out),
        ZFP => crate::zfp::decode_h5z_into(&f.params, buf, out),
        FCIDECOMP => crate::jpegls::decode_into(buf, out),
        SHUFFLE if buf.len() == out.len() => {
            crate::transpose::unshuffle_bytes(buf, shuffle_size(f, elem), out);
            Ok(out.len())
        }
        _ => {
            let d = stage(f, Cow::Borrowed(buf), elem, out.len())?;
            let n = d.len().min(out.len());
            out[..n].copy_from_slice(&d[..n]);
            Ok(n)
        }
    }
}

/// The element size the shuffle filter regroups by (its parameter, else the datatype's).
fn shuffle_size(f: &Filter, elem: usize) -> usize {
    f.params.first().map(|&s| s as usize).unwrap_or(elem)
}

/// Checks the Fletcher-32 checksum at the end of `buf`; returns the length before it.
fn check_fletcher32(buf: &[u8]) -> Result<usize> {
    if buf.len() < 4 {
        return corrupt("fletcher32 chunk shorter than its checksum");
    }
    let n = buf.len() - 4;
    let stored = u32::from_le_bytes([buf[n], buf[n + 1], buf[n + 2], buf[n + 3]]);
    let sum = fletcher32(&buf[..n]);
    if sum != stored && sum.swap_bytes() != stored {
        return corrupt("fletcher32 checksum mismatch in chunk");
    }
    Ok(n)
}

/// Decodes a PyTables LZO chunk: an LZO1X stream, which PyTables follows with the Adler-32 of the decoded
/// bytes and their count (4 bytes each, in the writer's byte order; older versions wrote the checksum alone,
/// the oldest neither), checked when present.
fn unlzo(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let (out, used) = crate::lzo::decompress(data, max_out)?;
    let sum_matches = |b: &[u8]| {
        let sum = crate::checksum::adler32(&out);
        let b = [b[0], b[1], b[2], b[3]];
        sum == u32::from_le_bytes(b) || sum == u32::from_be_bytes(b)
    };
    match &data[used..] {
        [] => Ok(out),
        rest @ [_, _, _, _] if sum_matches(rest) => Ok(out),
        rest @ [_, _, _, _, a, b, c, d]
            if sum_matches(rest)
                && (u32::from_le_bytes([*a, *b, *c, *d]) as usize == out.len()
                    || u32::from_be_bytes([*a, *b, *c, *d]) as usize == out.len()) =>
        {
            Ok(out)
        }
        [_, _, _, _] | [_, _, _, _, _, _, _, _] => corrupt("lzo chunk checksum mismatch"),
        rest => corrupt(format!(
            "lzo chunk: {} bytes after the end of its stream",
            rest.len()
        )),
    }
}

/// Encodes a chunk as PyTables' LZO filter stores it (client data: level, the object's format version, its
/// kind): the LZO1X stream, then — as PyTables writes and expects for every object but tables older than
/// format version 2.0 — the Adler-32 of the chunk's bytes and their count, little-endian.
fn lzo(cd: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = crate::lzo_compress::compress(data);
    // PyTables' kinds: 0 a table, then arrays of several sorts. Without a kind, a version of 2.0 or later
    // asks for the trailer whatever the kind.
    let version = cd.get(1).copied().unwrap_or(10);
    let old_table = cd.get(2).is_none_or(|&kind| kind == 0) && version < 20;
    if !old_table {
        out.extend_from_slice(&crate::checksum::adler32(data).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    }
    out
}

/// Inflates a zlib stream into the start of `out`; returns the bytes written. A stream that decodes to
/// more than `out` holds is an error.
pub(crate) fn inflate_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    let mut z = flate2::Decompress::new(true);
    let err =
        |e: flate2::DecompressError| crate::FormatError::Corrupt(format!("deflate stream: {e}"));
    loop {
        let (read, wrote) = (z.total_in() as usize, z.total_out() as usize);
        let status = z
            .decompress(
                &data[read..],
                &mut out[wrote..],
                flate2::FlushDecompress::Finish,
            )
            .map_err(err)?;
        let (now_read, now_wrote) = (z.total_in() as usize, z.total_out() as usize);
        match status {
            flate2::Status::StreamEnd => return Ok(now_wrote),
            _ if now_wrote == out.len() => {
                // Full: the stream may still end here (its last block or checksum not read yet), or
                // hold more than the chunk.
                let mut spare = [0u8; 1];
                return match z
                    .decompress(
                        &data[now_read..],
                        &mut spare,
                        flate2::FlushDecompress::Finish,
                    )
                    .map_err(err)?
                {
                    flate2::Status::StreamEnd if z.total_out() as usize == out.len() => {
                        Ok(out.len())
                    }
                    _ if z.total_out() as usize > out.len() => {
                        corrupt("deflated chunk larger than the chunk size")
                    }
                    _ => corrupt("deflate stream: truncated"),
                };
            }
            _ if (now_read, now_wrote) == (read, wrote) || now_read >= data.len() => {
                return corrupt("deflate stream: truncated");
            }
            _ => {}
        }
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
pub fn encode(filters: &[Filter], data: &[u8], elem: usize, skip: u32) -> Result<(Vec<u8>, u32)> {
    let mut buf = data.to_vec();
    let mut mask = skip;
    for (i, f) in filters.iter().enumerate() {
        if i < 32 && skip & (1 << i) != 0 {
            continue;
        }
        buf = match f.id {
            // liblzf cannot shrink this chunk: h5py's filter fails here and libhdf5 skips it (optional).
            LZF => match crate::lzf::compress(&buf) {
                Some(packed) => packed,
                None if f.flags & 1 != 0 && i < 32 => {
                    mask |= 1 << i;
                    buf
                }
                None => buf_unchanged_error()?,
            },
            DEFLATE => {
                let level = f.params.first().copied().unwrap_or(6).min(9);
                crate::deflate::compress(&buf, level)?
            }
            SHUFFLE => shuffle(&buf, f.params.first().map(|&s| s as usize).unwrap_or(elem)),
            FLETCHER32 => {
                let sum = fletcher32(&buf);
                buf.extend_from_slice(&sum.to_le_bytes());
                buf
            }
            ZSTD => crate::plugin_codecs::zstd(&buf, f.params.first().map_or(3, |&l| l as i32))?,
            LZ4 => crate::plugin_codecs::lz4(&buf, f.params.first().map_or(0, |&b| b as usize)),
            BZIP2 => crate::bzip2_filter::encode(&buf, f.params.first().copied().unwrap_or(9))?,
            BLOSC => crate::blosc::encode(&f.params, &buf, elem)?,
            BLOSC2 => crate::blosc2::encode(&f.params, &buf, elem)?,
            BITSHUFFLE => crate::bitshuffle::encode(&f.params, &buf, elem)?,
            SCALEOFFSET => crate::scaleoffset::encode(&f.params, &buf)?,
            NBIT => crate::nbit::encode(&f.params, &buf)?,
            SZIP => crate::szip::encode(&f.params, &buf)?,
            LZO => lzo(&f.params, &buf),
            // H5Z-ZFP fails a chunk it cannot code (client data it did not set, as for chunks with no
            // dimension above 1), FCIDECOMP one JPEG-LS does not shrink: libhdf5 then skips an optional
            // filter, as we do.
            ZFP => skip_failed(
                crate::zfp::encode_h5z(&f.params, &buf),
                f,
                i,
                &mut mask,
                buf,
            )?,
            FCIDECOMP => skip_failed(
                crate::jpegls::encode_fcidecomp(&f.params, &buf),
                f,
                i,
                &mut mask,
                buf,
            )?,
            // A filter we cannot encode (another program's own, SZ): when the
            // dataset marks it optional — h5py, PyTables and libhdf5's H5Pset_szip/nbit all do — the chunk
            // is stored with that filter skipped and its mask bit set, as libhdf5 stores a chunk an optional
            // filter fails on; every reader takes it as it is. A mandatory one is refused.
            _ if f.flags & 1 != 0 && i < 32 => {
                mask |= 1 << i;
                buf
            }
            _ => return unsupported(format!("writing {}", describe(f))),
        };
    }
    Ok((buf, mask))
}

/// The chunk a filter coded, or, when the filter (the `i`th, optional) failed on it, the chunk as it was with
/// the filter's bit set in `mask`; a mandatory filter's failure is the write's.
fn skip_failed(
    coded: Result<Vec<u8>>,
    f: &Filter,
    i: usize,
    mask: &mut u32,
    chunk: Vec<u8>,
) -> Result<Vec<u8>> {
    match coded {
        Ok(packed) => Ok(packed),
        Err(_) if f.flags & 1 != 0 && i < 32 => {
            *mask |= 1 << i;
            Ok(chunk)
        }
        Err(e) => Err(e),
    }
}

/// A mandatory LZF filter on a chunk liblzf cannot shrink: libhdf5 would fail the write too.
fn buf_unchanged_error() -> Result<Vec<u8>> {
    unsupported("a chunk that a mandatory LZF filter cannot compress")
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
        let enc = encode(&f, &data, 4, 0).unwrap().0;
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

    /// `decode_into` a buffer of exactly the decoded size gives what `decode` gives; one byte more is an
    /// error, and so is one byte less for a stream that states or ends at its size (size-keeping filters,
    /// like `decode`, leave bytes past the chunk unread).
    fn check_into(f: &[Filter], mask: u32, stored: &[u8], elem: usize, want: &[u8]) {
        let sized = applied(f, mask).any(|f| f.id != SHUFFLE && f.id != FLETCHER32);
        assert_eq!(decode(f, mask, stored, elem, want.len()).unwrap(), want);
        let mut out = vec![0xAAu8; want.len()];
        decode_into(f, mask, stored, elem, &mut out).unwrap();
        assert_eq!(out, want);
        if sized && !want.is_empty() {
            let mut short = vec![0u8; want.len() - 1];
            assert!(
                decode_into(f, mask, stored, elem, &mut short).is_err(),
                "short buffer"
            );
        }
        let mut long = vec![0u8; want.len() + 1];
        assert!(
            decode_into(f, mask, stored, elem, &mut long).is_err(),
            "long buffer"
        );
    }

    fn filter(id: u16, params: Vec<u32>) -> Filter {
        Filter {
            id,
            flags: 0,
            name: String::new(),
            params,
        }
    }

    #[test]
    fn decoding_into_a_buffer_equals_decoding_into_a_new_one() {
        let data: Vec<u8> = (0..40_003u32)
            .flat_map(|x| (x / 3 * 7).to_le_bytes())
            .collect();
        for (deflate, shuffle, fletcher) in [
            (Some(6), false, false),
            (Some(1), true, false),
            (Some(9), true, true),
            (None, true, false),
            (None, false, true),
            (None, false, false),
        ] {
            let f = pipeline(deflate, shuffle, fletcher, 4);
            let enc = encode(&f, &data, 4, 0).unwrap().0;
            check_into(&f, 0, &enc, 4, &data);
        }
        // Filters the mask skips are not undone: deflate skipped leaves the shuffled bytes.
        let f = pipeline(Some(6), true, false, 4);
        let shuffled = shuffle(&data, 4);
        check_into(&f, 0b10, &shuffled, 4, &data);
        // LZ4 plugin chunks: a compressed block, then a stored one.
        let mut lz4 = (data.len() as u64).to_be_bytes().to_vec();
        lz4.extend_from_slice(&100_000u32.to_be_bytes());
        let block = lz4_flex::block::compress(&data[..100_000]);
        lz4.extend_from_slice(&(block.len() as u32).to_be_bytes());
        lz4.extend_from_slice(&block);
        lz4.extend_from_slice(&((data.len() - 100_000) as u32).to_be_bytes());
        lz4.extend_from_slice(&data[100_000..]);
        check_into(&[filter(LZ4, vec![])], 0, &lz4, 4, &data);
        // A zstd frame.
        let z = zstd::bulk::compress(&data, 3).unwrap();
        check_into(&[filter(ZSTD, vec![])], 0, &z, 4, &data);
        // Blosc, stored as is (flag 0x02): header, then the bytes.
        let mut blosc = vec![2, 1, 0x02, 4];
        blosc.extend_from_slice(&(data.len() as u32).to_le_bytes());
        blosc.extend_from_slice(&(data.len() as u32).to_le_bytes());
        blosc.extend_from_slice(&((data.len() + 16) as u32).to_le_bytes());
        blosc.extend_from_slice(&data);
        check_into(&[filter(BLOSC, vec![])], 0, &blosc, 4, &data);
    }

    #[test]
    fn inflating_into_a_buffer_checks_the_stream_fits_it_exactly() {
        let data: Vec<u8> = (0..70_000u32).map(|x| (x % 251) as u8).collect();
        let enc = encode(&pipeline(Some(6), false, false, 1), &data, 1, 0)
            .unwrap()
            .0;
        let mut out = vec![0u8; data.len()];
        assert_eq!(inflate_into(&enc, &mut out).unwrap(), data.len());
        assert_eq!(out, data);
        let mut big = vec![0u8; data.len() + 10];
        assert_eq!(
            inflate_into(&enc, &mut big).unwrap(),
            data.len(),
            "stops at the end"
        );
        let mut small = vec![0u8; data.len() - 1];
        let e = inflate_into(&enc, &mut small).unwrap_err().to_string();
        assert!(e.contains("larger than the chunk size"), "{e}");
        for cut in [0, 1, 2, enc.len() / 2, enc.len() - 4, enc.len() - 1] {
            assert!(inflate_into(&enc[..cut], &mut out).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn optional_filters_we_cannot_encode_are_skipped_and_masked() {
        let f = |id: u16, flags: u16| Filter {
            id,
            flags,
            name: String::new(),
            params: vec![],
        };
        // An unknown filter (optional) between shuffle and deflate: skipped, its mask bit set, the others
        // applied.
        let pipeline = [f(SHUFFLE, 0), f(511, 1), f(DEFLATE, 0)];
        let data: Vec<u8> = (0..4096u32).flat_map(|i| (i / 9).to_le_bytes()).collect();
        let (stored, mask) = encode(&pipeline, &data, 4, 0).unwrap();
        assert_eq!(mask, 0b010);
        check_into(&pipeline, mask, &stored, 4, &data);
        // The same filter mandatory: refused, naming it.
        let e = encode(&[f(511, 0)], &data, 4, 0).unwrap_err().to_string();
        assert!(
            e.contains("writing filter 511 (unregistered, testing range)"),
            "{e}"
        );
    }

    #[test]
    fn filters_we_cannot_decode_are_named_from_the_registry_or_the_file() {
        let f = |id: u16, name: &str| Filter {
            id,
            flags: 1,
            name: name.to_string(),
            params: vec![],
        };
        let err = |filter: Filter| {
            decode(&[filter], 0, &[1, 2, 3, 4], 4, 4)
                .unwrap_err()
                .to_string()
        };
        assert!(err(f(32017, "")).contains("filter 32017 (SZ)"));
        assert!(err(f(32024, "sz3")).contains("filter 32024 (SZ3)"));
        assert!(
            err(f(32028, "H5Z-SPERR")).contains("filter 32028 (SPERR; stored name \"H5Z-SPERR\")")
        );
        assert!(err(f(40000, "my codec\0"))
            .contains("filter 40000 (unregistered, private range; stored name \"my codec\")"));
        assert!(err(f(600, "")).contains("filter 600 (unknown)"));
        // A filter skipped by the chunk's mask is never asked to decode.
        assert_eq!(
            decode(&[f(32017, "")], 1, &[1, 2], 4, 4).unwrap(),
            vec![1, 2]
        );
    }

    #[test]
    fn zfp_chunks_are_encoded_and_those_it_cannot_code_skipped_where_optional() {
        let zfp = |flags: u16, params: Vec<u32>| Filter {
            id: ZFP,
            flags,
            name: String::new(),
            params,
        };
        let cd = crate::zfp::h5z_client_data(
            crate::zfp::ZfpMode::Reversible,
            crate::zfp::Scalar::F32,
            &[10, 1, 7],
        )
        .unwrap();
        let data: Vec<u8> = (0..70)
            .flat_map(|i| (i as f32 / 3.0).to_le_bytes())
            .collect();
        for flags in [0, 1] {
            let (stored, mask) = encode(&[zfp(flags, cd.clone())], &data, 4, 0).unwrap();
            assert_eq!(mask, 0);
            assert!(stored.len() < data.len());
            check_into(&[zfp(flags, cd.clone())], mask, &stored, 4, &data);
        }
        // The client data hdf5plugin leaves on a chunk of one value (H5Z-ZFP's set_local declined it): an
        // optional filter is skipped, a mandatory one refused.
        let generic = vec![1, 0, 0, 0x4020_0000, 0, 0];
        let (stored, mask) = encode(&[zfp(1, generic.clone())], &data[..4], 4, 0).unwrap();
        assert_eq!((stored.as_slice(), mask), (&data[..4], 1));
        let e = encode(&[zfp(0, generic)], &data[..4], 4, 0).unwrap_err();
        assert!(e.to_string().contains("zfp"), "{e}");
    }

    #[test]
    fn lzo_chunks_carry_pytables_trailer_by_kind_and_version() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        let lzo_filter = |params: Vec<u32>| Filter {
            id: LZO,
            flags: 1,
            name: String::new(),
            params,
        };
        for (params, trailer) in [
            (vec![1, 23, 2], true),
            (vec![1, 23, 0], true),
            (vec![1, 19, 0], false),
            (vec![1, 19, 3], true),
            (vec![], false),
        ] {
            let f = [lzo_filter(params.clone())];
            let (enc, mask) = encode(&f, &data, 4, 0).unwrap();
            assert_eq!(mask, 0);
            let (_, used) = crate::lzo::decompress(&enc, data.len()).unwrap();
            assert_eq!(enc.len() - used, if trailer { 8 } else { 0 }, "{params:?}");
            check_into(&f, 0, &enc, 4, &data);
            if trailer {
                // A damaged checksum or count is an error; a 4-byte checksum alone (older PyTables) reads.
                for at in [enc.len() - 8, enc.len() - 1] {
                    let mut bad = enc.clone();
                    bad[at] ^= 1;
                    assert!(
                        decode(&f, 0, &bad, 4, data.len()).is_err(),
                        "{params:?} {at}"
                    );
                }
                assert_eq!(
                    decode(&f, 0, &enc[..enc.len() - 4], 4, data.len()).unwrap(),
                    data
                );
            }
        }
    }

    #[test]
    fn unknown_filter_is_named() {
        let error = |id: u16| {
            let f = [Filter {
                id,
                flags: 0,
                name: String::new(),
                params: vec![],
            }];
            decode(&f, 0, b"abc", 1, 10).unwrap_err().to_string()
        };
        let e = error(307);
        assert!(e.contains("bzip2 chunk"), "{e}");
        let e = error(318);
        assert!(
            e.contains("filter 318 (unregistered, testing range)"),
            "{e}"
        );
    }
}
