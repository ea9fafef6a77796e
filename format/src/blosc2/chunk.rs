//! A Blosc2 chunk: its header, special values, streams, codecs and filters, decoded whole or block by block.
//!
//! A 16-byte header (format version, codec version, flags, element size, then little-endian i32:
//! decoded size, block size, the chunk's own size), extended to 32 bytes when flags has both 0x01 and 0x04:
//! six filter ids, the codec id, codec meta, six filter metas, a reserved byte and Blosc2 flags (bits 4–6: the
//! whole chunk is one special value: 1 zeros, 2 NaNs, 3 the value after the header repeated, 4 uninitialised;
//! 0x08 lazy; 0x01 a zstd dictionary). Flags 0x02: the data follows the header as it is. Flags bits 5–7: the
//! codec (0 BloscLZ, 1 LZ4/LZ4HC, 3 zlib, 4 zstd, 6 the extended header's codec id). Otherwise each block's
//! start (i32) follows the header; a block is one stream, or one per byte of the element unless flags 0x10 is
//! set or it is the short last block. A stream is its size (i32) and the codec's output; size 0 is a run of
//! zeros, a negative size `-v` with a token byte (bit 0) a run of the byte `v`, and a size equal to the
//! stream's decoded size the bytes as they are. The filters are undone in reverse slot order: byte shuffle,
//! bit shuffle (of the whole multiple of 8 elements; the rest as is), delta (XOR with the previous element in
//! the first block, with the first block elsewhere), byte delta (a running sum along each byte stream; the
//! first release's id 34 restarts it past each stream's last whole 16 bytes, as its encoder did), ndcell and
//! ndmean (a b2nd block's cells back in the block's order; they need the array's block shape) and the
//! precision and integer truncations (lossy, nothing to undo).
//! Format versions 1–2 without an extended header are Blosc 1 buffers, read by [`crate::blosc`].

use super::b2nd::next_index;
use crate::blosc::Codec;
use crate::error::{corrupt, unsupported, Result};

/// Bytes of a chunk's basic header.
const HEADER: usize = 16;
/// Bytes of a chunk's extended header.
pub(super) const EXT_HEADER: usize = 32;
/// The newest chunk format version read.
const MAX_VERSION: u8 = 5;
/// The byte shuffle filter (slot id).
pub(super) const SHUFFLE: u8 = 1;
/// The bit shuffle filter (slot id).
pub(super) const BITSHUFFLE: u8 = 2;
/// The delta filter (slot id).
pub(super) const DELTA: u8 = 3;
/// The precision truncation filter (slot id).
const TRUNC_PREC: u8 = 4;
/// Byte delta as first released (slot id): in each byte stream the part past its last whole 16 bytes restarts
/// its running sum at 0, as that release's SIMD code (every x86-64 and ARM64 build) wrote it.
pub(super) const BYTEDELTA_BUGGY: u8 = 34;
/// Byte delta (slot id): each byte stream a running sum.
pub(super) const BYTEDELTA: u8 = 35;
/// Integer truncation (slot id; lossy, nothing to undo).
const INT_TRUNC: u8 = 36;
/// N-dimensional cells (slot id): a b2nd block's elements grouped cell by cell.
pub(super) const NDCELL: u8 = 32;
/// N-dimensional cell means (slot id): cells grouped as ndcell groups them, each value its cell's mean (lossy).
pub(super) const NDMEAN: u8 = 33;

/// `nbytes` bytes of one special value: 1 zeros, 2 NaNs (of `typesize` 4 or 8), 3 `value` repeated,
/// 4 uninitialised (zeros).
pub(super) fn special(kind: u8, typesize: usize, nbytes: usize, value: &[u8]) -> Result<Vec<u8>> {
    let pattern: &[u8] = match kind {
        1 | 4 => return Ok(vec![0u8; nbytes]),
        2 if typesize == 4 => &[0x00, 0x00, 0xc0, 0x7f],
        2 if typesize == 8 => &[0, 0, 0, 0, 0, 0, 0xf8, 0x7f],
        2 => return corrupt(format!("blosc2 NaN chunk of {typesize}-byte elements")),
        3 => value,
        k => return unsupported(format!("blosc2 special chunk kind {k}")),
    };
    if pattern.is_empty() || !nbytes.is_multiple_of(pattern.len()) {
        return corrupt("blosc2 special chunk is not a whole number of elements");
    }
    Ok(pattern.repeat(nbytes / pattern.len()))
}

/// Name of a Blosc2 codec id (for messages).
fn codec_name(id: u8) -> &'static str {
    match id {
        3 => "lizard",
        32 => "ndlz",
        33 => "zfp_acc",
        34 => "zfp_prec",
        35 => "zfp_rate",
        36 => "openhtj2k",
        37 => "grok",
        _ => "unknown",
    }
}

/// A Blosc2 chunk's header, read and checked.
struct Header<'a> {
    /// The chunk, cut to its stated size.
    data: &'a [u8],
    /// Bytes of the header (basic or extended).
    header_len: usize,
    /// The basic header's flags.
    flags: u8,
    /// Bytes per element (at least 1).
    typesize: usize,
    /// Decoded bytes.
    nbytes: usize,
    /// Decoded bytes per block (the last block may be shorter).
    blocksize: usize,
    /// The filter slots.
    filters: [u8; 6],
    /// Each filter slot's meta byte (0 without an extended header).
    metas: [u8; 6],
    /// The extended header's codec id and codec meta (0 without it).
    codec_id: u8,
    codec_meta: u8,
    /// The extended header's Blosc2 flags (0 without it).
    b2flags: u8,
}

/// What a chunk holds after its header.
enum Body<'a> {
    /// One value throughout: its kind (as [`special`] takes) and the bytes after the header.
    Special(u8, &'a [u8]),
    /// The decoded bytes as they are.
    Stored(&'a [u8]),
    /// Compressed blocks.
    Blocks(Blocks<'a>),
}

/// The codec of a chunk's streams.
#[derive(Clone, Copy)]
enum Stream<'a> {
    /// One that Blosc 1 has too.
    Blosc(Codec),
    /// NDLZ, with its codec meta (the cells' side).
    Ndlz(u8),
    /// A ZFP mode (codec id and meta) on elements of `typesize` bytes in blocks of the b2nd array's block
    /// shape.
    Zfp((u8, u8), usize, &'a [u64]),
}

/// The NDLZ codec's id.
const NDLZ: u8 = 32;

/// How a chunk's compressed blocks are read.
struct Blocks<'a> {
    /// The codec of every stream.
    codec: Stream<'a>,
    /// The filters to undo, in the order they are undone, each with its meta byte.
    undo: Vec<(u8, u8)>,
    /// Each block's start (i32).
    starts: &'a [u8],
    /// The b2nd array's block shape, for the cell filters (absent outside a b2nd array).
    block_shape: Option<&'a [u64]>,
}

/// Buffers reused from block to block while filters are undone.
#[derive(Default)]
struct Scratch {
    /// The block as filtered so far.
    a: Vec<u8>,
    /// The block with one more filter undone.
    b: Vec<u8>,
}

/// A little-endian u32 at the start of `b` (at least 4 bytes).
fn le32(b: &[u8]) -> usize {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
}

impl<'a> Header<'a> {
    /// Reads a chunk's header, its decoded size at most `max_out`; None for a Blosc 1 buffer.
    fn parse(data: &'a [u8], max_out: usize) -> Result<Option<Self>> {
        let Some(h) = data.get(..HEADER) else {
            return corrupt("blosc2 chunk shorter than its header");
        };
        let (version, flags, typesize) = (h[0], h[2], usize::from(h[3]).max(1));
        let (nbytes, blocksize, cbytes) = (le32(&h[4..8]), le32(&h[8..12]), le32(&h[12..16]));
        let extended = flags & 0x05 == 0x05;
        if version == 0 || version > MAX_VERSION {
            return unsupported(format!("blosc2 chunk format version {version}"));
        }
        if !extended && version <= 2 {
            return Ok(None);
        }
        let header_len = if extended { EXT_HEADER } else { HEADER };
        let Some(data) = data.get(..cbytes).filter(|d| d.len() >= header_len) else {
            return corrupt("blosc2 chunk shorter than its stated size");
        };
        if nbytes > max_out || nbytes > i32::MAX as usize {
            return corrupt("blosc2 chunk decodes to more than the chunk size");
        }
        let (filters, metas, (codec_id, codec_meta), b2flags) = if extended {
            let mut f = [0u8; 6];
            f.copy_from_slice(&data[16..22]);
            let mut m = [0u8; 6];
            m.copy_from_slice(&data[24..30]);
            (f, m, (data[22], data[23]), data[31])
        } else {
            let mut f = [0u8; 6];
            f[5] = if flags & 0x01 != 0 {
                SHUFFLE
            } else if flags & 0x04 != 0 {
                BITSHUFFLE
            } else {
                0
            };
            f[4] = if flags & 0x08 != 0 { DELTA } else { 0 };
            (f, [0; 6], (0, 0), 0)
        };
        Ok(Some(Header {
            data,
            header_len,
            flags,
            typesize,
            nbytes,
            blocksize,
            filters,
            metas,
            codec_id,
            codec_meta,
            b2flags,
        }))
    }

    /// What the chunk holds: one special value, its bytes as they are, or compressed blocks (codec and
    /// filters checked).
    fn body(&self, block_shape: Option<&'a [u64]>) -> Result<Body<'a>> {
        let (data, flags, b2flags) = (self.data, self.flags, self.b2flags);
        let kind = (b2flags >> 4) & 0x07;
        if kind != 0 {
            let value = data.get(EXT_HEADER..EXT_HEADER + self.typesize);
            return Ok(Body::Special(kind, value.unwrap_or(&[])));
        }
        if b2flags & 0x08 != 0 {
            return unsupported("blosc2 lazy chunk");
        }
        if flags & 0x02 != 0 {
            return match data.get(self.header_len..self.header_len + self.nbytes) {
                Some(b) => Ok(Body::Stored(b)),
                None => corrupt("blosc2 chunk shorter than its stored bytes"),
            };
        }
        if self.nbytes == 0 {
            return Ok(Body::Stored(&[]));
        }
        if b2flags & 0x01 != 0 {
            return unsupported("blosc2 chunk compressed with a dictionary");
        }
        if b2flags & 0x80 != 0 {
            return unsupported("blosc2 instrumented chunk");
        }
        if self.blocksize == 0 {
            return corrupt("blosc2 chunk with a block size of 0");
        }
        let codec = match flags >> 5 {
            0 => Stream::Blosc(Codec::BloscLz),
            1 => Stream::Blosc(Codec::Lz4),
            3 => Stream::Blosc(Codec::Zlib),
            4 => Stream::Blosc(Codec::Zstd),
            6 => match self.codec_id {
                0 => Stream::Blosc(Codec::BloscLz),
                1 | 2 => Stream::Blosc(Codec::Lz4),
                4 => Stream::Blosc(Codec::Zlib),
                5 => Stream::Blosc(Codec::Zstd),
                NDLZ => Stream::Ndlz(self.codec_meta),
                c @ (super::zfp::ZFP_ACC | super::zfp::ZFP_PREC | super::zfp::ZFP_RATE) => {
                    let Some(shape) = block_shape else {
                        return unsupported(format!(
                            "blosc2 codec {c} ({}) outside a b2nd array",
                            codec_name(c)
                        ));
                    };
                    Stream::Zfp((c, self.codec_meta), self.typesize, shape)
                }
                c => return unsupported(format!("blosc2 codec {c} ({})", codec_name(c))),
            },
            2 => return unsupported("blosc2 codec format 2 (snappy)"),
            c => return unsupported(format!("blosc2 codec format {c}")),
        };
        // Byte shuffle of 1-byte elements and the truncations leave nothing to undo.
        let mut undo = Vec::new();
        for (&f, &meta) in self.filters.iter().zip(&self.metas).rev() {
            match f {
                0 | TRUNC_PREC | INT_TRUNC => {}
                SHUFFLE if self.typesize == 1 => {}
                SHUFFLE | BITSHUFFLE | DELTA | BYTEDELTA | BYTEDELTA_BUGGY => undo.push((f, meta)),
                NDCELL | NDMEAN if block_shape.is_some() => undo.push((f, meta)),
                NDCELL | NDMEAN => {
                    return unsupported(format!(
                        "blosc2 filter {f} ({}) outside a b2nd array",
                        if f == NDCELL { "ndcell" } else { "ndmean" }
                    ))
                }
                f => return unsupported(format!("blosc2 filter {f} (unknown)")),
            }
        }
        let nblocks = self.nbytes.div_ceil(self.blocksize);
        let Some(starts) = data.get(self.header_len..self.header_len + 4 * nblocks) else {
            return corrupt("blosc2 chunk shorter than its block table");
        };
        Ok(Body::Blocks(Blocks {
            codec,
            undo,
            starts,
            block_shape,
        }))
    }

    /// Decodes block `j` into `dest` (as long as that block); `dref` is block 0 decoded, for delta, absent
    /// for block 0 itself.
    fn block(
        &self,
        b: &Blocks<'_>,
        j: usize,
        dest: &mut [u8],
        dref: Option<&[u8]>,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let Some(start) = b.starts.get(4 * j..4 * j + 4) else {
            return corrupt("blosc2 block past the chunk's block table");
        };
        let bsize = dest.len();
        let streams = if self.flags & 0x10 != 0 || bsize < self.blocksize {
            1
        } else {
            self.typesize
        };
        if !bsize.is_multiple_of(streams) {
            return corrupt("blosc2 block is not a whole number of elements");
        }
        let Some((&last, rest)) = b.undo.split_last() else {
            return read_streams(self.data, le32(start), streams, b.codec, dest);
        };
        let Scratch { a, b: a2 } = scratch;
        a.clear();
        a.resize(bsize, 0);
        read_streams(self.data, le32(start), streams, b.codec, a)?;
        let undo = |f, src: &[u8], dst: &mut [u8]| match f {
            (NDCELL | NDMEAN, meta) => uncell(f.0, meta, src, dst, self.typesize, b.block_shape),
            _ => {
                unfilter(f, src, dst, dref, self.typesize);
                Ok(())
            }
        };
        for &f in rest {
            a2.clear();
            a2.resize(bsize, 0);
            undo(f, a, a2)?;
            std::mem::swap(a, a2);
        }
        undo(last, a, dest)
    }
}

/// Decodes one Blosc2 chunk into at most `max_out` bytes; `block_shape` is its b2nd array's, when it is one's.
pub(super) fn chunk(data: &[u8], max_out: usize, block_shape: Option<&[u64]>) -> Result<Vec<u8>> {
    chunk_prefix(data, max_out, block_shape, usize::MAX)
}

/// Like [`chunk`], but only the first `want` bytes are needed: the whole blocks (or elements, for a special
/// value) that cover them are decoded and no more, so the result holds at least `want.min(nbytes)` bytes and
/// at most one block beyond them. A block of more than 16 MiB past `want` is refused.
pub(super) fn chunk_prefix(
    data: &[u8],
    max_out: usize,
    block_shape: Option<&[u64]>,
    want: usize,
) -> Result<Vec<u8>> {
    let Some(h) = Header::parse(data, max_out)? else {
        return crate::blosc::decode(data, max_out.min(want.saturating_add(MAX_PAST_WANT)));
    };
    let b = match h.body(block_shape)? {
        Body::Special(kind, value) => {
            let unit = if value.is_empty() {
                h.typesize
            } else {
                value.len()
            };
            let n = if want >= h.nbytes {
                h.nbytes
            } else {
                want.div_ceil(unit).saturating_mul(unit).min(h.nbytes)
            };
            return special(kind, h.typesize, n, value);
        }
        Body::Stored(bytes) => return Ok(bytes[..bytes.len().min(want)].to_vec()),
        Body::Blocks(b) => b,
    };
    let blocks = b.starts.len() / 4;
    // The blocks that hold the first `want` bytes.
    let needed = if want >= h.nbytes || h.blocksize == 0 {
        blocks
    } else {
        want.div_ceil(h.blocksize).min(blocks)
    };
    let len = needed.saturating_mul(h.blocksize).min(h.nbytes);
    if want < h.nbytes && len > want.saturating_add(MAX_PAST_WANT) {
        return corrupt(format!(
            "blosc2 chunk in blocks of {} bytes: implausibly large",
            h.blocksize
        ));
    }
    let mut out = vec![0u8; len];
    let mut scratch = Scratch::default();
    for j in 0..needed {
        let at = j * h.blocksize;
        let (head, tail) = out.split_at_mut(at);
        let dref = (j > 0).then(|| &head[..h.blocksize]);
        let bsize = h.blocksize.min(len - at);
        h.block(&b, j, &mut tail[..bsize], dref, &mut scratch)?;
    }
    Ok(out)
}

/// How far past the bytes asked for a prefix decode may allocate (one block, or one row of a b2nd array).
pub(super) const MAX_PAST_WANT: usize = 16 << 20;

/// Decodes blocks `which` (ascending) of a chunk of `nbytes` bytes in blocks of `block_bytes` one at a time,
/// handing each (its number, its bytes) to `sink`: a few blocks are held, never the whole chunk.
pub(super) fn chunk_blocks(
    data: &[u8],
    nbytes: usize,
    (block_bytes, block_shape): (usize, Option<&[u64]>),
    which: impl Iterator<Item = usize>,
    mut sink: impl FnMut(usize, &[u8]),
) -> Result<()> {
    let Some(h) = Header::parse(data, nbytes)? else {
        return unsupported("b2nd chunk in the Blosc 1 format, padded beyond its array");
    };
    if h.nbytes != nbytes || block_bytes == 0 {
        return corrupt("b2nd chunk of the wrong size");
    }
    let b = match h.body(block_shape)? {
        Body::Special(kind, value) => {
            let one = special(kind, h.typesize, block_bytes, value)?;
            which.for_each(|j| sink(j, &one));
            return Ok(());
        }
        Body::Stored(bytes) => {
            for j in which {
                let at = j.saturating_mul(block_bytes);
                let Some(b) = bytes.get(at..at.saturating_add(block_bytes)) else {
                    return corrupt("b2nd block past its chunk's end");
                };
                sink(j, b);
            }
            return Ok(());
        }
        Body::Blocks(b) => b,
    };
    // Checked before any block is allocated: the caller bounds `block_bytes`.
    if h.blocksize != block_bytes {
        return corrupt(format!(
            "b2nd chunk in blocks of {} bytes where its array's blocks are {block_bytes}",
            h.blocksize
        ));
    }
    let mut scratch = Scratch::default();
    // Block 0 decoded, kept as delta's reference.
    let mut first: Option<Vec<u8>> = None;
    let mut buf = Vec::new();
    for j in which {
        if j >= b.starts.len() / 4 {
            return corrupt("b2nd block past its chunk's end");
        }
        if first.is_none() && (j == 0 || b.undo.iter().any(|&(f, _)| f == DELTA)) {
            let mut b0 = vec![0u8; block_bytes];
            h.block(&b, 0, &mut b0, None, &mut scratch)?;
            first = Some(b0);
        }
        if j == 0 {
            if let Some(b0) = &first {
                sink(0, b0);
            }
            continue;
        }
        buf.resize(block_bytes, 0);
        h.block(&b, j, &mut buf, first.as_deref(), &mut scratch)?;
        sink(j, &buf);
    }
    Ok(())
}

/// Decodes the `streams` streams of one block, starting at `pos` in the chunk, into `dest`.
fn read_streams(
    data: &[u8],
    mut pos: usize,
    streams: usize,
    codec: Stream<'_>,
    dest: &mut [u8],
) -> Result<()> {
    let each = dest.len() / streams;
    for target in dest.chunks_exact_mut(each.max(1)).take(streams) {
        let Some(size) = data.get(pos..pos + 4) else {
            return corrupt("blosc2 block past the chunk's end");
        };
        let size = i32::from_le_bytes([size[0], size[1], size[2], size[3]]);
        pos += 4;
        if size == 0 {
            target.fill(0);
            continue;
        }
        if size < 0 {
            let Some(&token) = data.get(pos) else {
                return corrupt("blosc2 stream past the chunk's end");
            };
            pos += 1;
            if token & 0x01 == 0 {
                return unsupported(format!("blosc2 stream token 0x{token:02x}"));
            }
            let Ok(value) = u8::try_from(-i64::from(size)) else {
                return corrupt("blosc2 run of a value that is not a byte");
            };
            target.fill(value);
            continue;
        }
        let size = size as usize;
        let Some(body) = data.get(pos..pos + size) else {
            return corrupt("blosc2 stream past the chunk's end");
        };
        if size == target.len() {
            target.copy_from_slice(body);
        } else {
            match codec {
                Stream::Blosc(c) => crate::blosc::decompress(c, body, target)?,
                Stream::Ndlz(meta) => super::ndlz::decompress(meta, body, target)?,
                Stream::Zfp(codec, typesize, shape) => {
                    super::zfp::decompress_block(codec, typesize, shape, body, target)?
                }
            }
        }
        pos += size;
    }
    Ok(())
}

/// Undoes ndcell or ndmean (`f`, cells of `meta` elements a side) on one block of a b2nd array of block shape
/// `shape`: the filtered block holds each cell's elements in turn (cells in C order, each cell's rows in C order;
/// the cells at the block's far edges cut short), put back in the block's C order. ndmean's cells are no larger
/// than the block in any dimension, and — as c-blosc2 lays them out — each cell starts at its index times the
/// first dimension's cell side.
fn uncell(
    f: u8,
    meta: u8,
    src: &[u8],
    dst: &mut [u8],
    typesize: usize,
    shape: Option<&[u64]>,
) -> Result<()> {
    let bad = |what: &str| corrupt(format!("blosc2 cell filter: {what}"));
    let Some(shape) = shape.filter(|s| !s.is_empty() && s.iter().all(|&d| d > 0)) else {
        return bad("no block shape");
    };
    let side = u64::from(meta);
    if side == 0 {
        return bad("cells of no elements");
    }
    let n = shape.len();
    let cell: Vec<u64> = shape
        .iter()
        .map(|&b| if f == NDMEAN { side.min(b) } else { side })
        .collect();
    let elems = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    if elems.and_then(|e| e.checked_mul(typesize as u64)) != Some(src.len() as u64)
        || dst.len() != src.len()
    {
        return bad("a block not of its shape");
    }
    let grid: Vec<u64> = shape
        .iter()
        .zip(&cell)
        .map(|(&b, &c)| b.div_ceil(c))
        .collect();
    // Elements from one index of each dimension to the next, in the block.
    let mut strides = vec![1u64; n];
    for d in (0..n - 1).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let mut at = 0usize;
    let mut ii = vec![0u64; n];
    loop {
        let orig: u64 = (0..n)
            .map(|d| ii[d] * cell[if f == NDMEAN { 0 } else { d }] * strides[d])
            .sum();
        let pad: Vec<u64> = (0..n)
            .map(|d| {
                if shape[d] % cell[d] != 0 && ii[d] == grid[d] - 1 {
                    shape[d] % cell[d]
                } else {
                    cell[d]
                }
            })
            .collect();
        let row = (pad[n - 1] as usize) * typesize;
        let mut kk = vec![0u64; n - 1];
        loop {
            let ind = orig + (0..n - 1).map(|d| kk[d] * strides[d]).sum::<u64>();
            let to = (ind as usize).checked_mul(typesize);
            let (Some(from), Some(to)) = (
                src.get(at..at + row),
                to.and_then(|t| dst.get_mut(t..t + row)),
            ) else {
                return bad("a cell outside its block");
            };
            to.copy_from_slice(from);
            at += row;
            if !next_index(&mut kk, &pad[..n - 1]) {
                break;
            }
        }
        if !next_index(&mut ii, &grid) {
            break;
        }
    }
    if at != src.len() {
        return bad("cells that do not fill their block");
    }
    Ok(())
}

/// Undoes filter `f` (with its meta byte) on one block, `src` into `dst` (as long); `dref` is the chunk's first
/// block (decoded), absent for the first block itself.
fn unfilter((f, meta): (u8, u8), src: &[u8], dst: &mut [u8], dref: Option<&[u8]>, typesize: usize) {
    match f {
        BYTEDELTA | BYTEDELTA_BUGGY => {
            // One stream per byte of the element (the meta's size, else the chunk's), one after another; the
            // bytes after the last whole stream stay as they are.
            let t = if meta == 0 {
                typesize
            } else {
                usize::from(meta)
            };
            let len = src.len() / t;
            for (k, (s, d)) in src
                .chunks_exact(len.max(1))
                .zip(dst.chunks_exact_mut(len.max(1)))
                .enumerate()
            {
                if k >= t || len == 0 {
                    break;
                }
                let restart = if f == BYTEDELTA_BUGGY && len >= 16 {
                    len / 16 * 16
                } else {
                    len
                };
                let mut sum = 0u8;
                for (i, (&x, y)) in s.iter().zip(d.iter_mut()).enumerate() {
                    if i == restart {
                        sum = 0;
                    }
                    sum = sum.wrapping_add(x);
                    *y = sum;
                }
            }
            let whole = len * t;
            dst[whole..].copy_from_slice(&src[whole..]);
        }
        SHUFFLE => crate::transpose::unshuffle_bytes(src, typesize, dst),
        BITSHUFFLE => {
            let n = src.len() / typesize;
            let whole = (n - n % 8) * typesize;
            crate::transpose::unshuffle_bits(&src[..whole], &mut dst[..whole], n - n % 8, typesize);
            dst[whole..].copy_from_slice(&src[whole..]);
        }
        DELTA => {
            dst.copy_from_slice(src);
            // XOR over elements of 1, 2, 4 or 8 bytes: byte by byte, `w` apart.
            let w = match typesize {
                1 | 2 | 4 | 8 => typesize,
                t if t % 8 == 0 => 8,
                _ => 1,
            };
            let n = dst.len() / w * w;
            match dref {
                None => {
                    for k in w..n {
                        dst[k] ^= dst[k - w];
                    }
                }
                Some(r) => {
                    for (d, r) in dst[..n].iter_mut().zip(r) {
                        *d ^= r;
                    }
                }
            }
        }
        _ => dst.copy_from_slice(src),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blosc2::decode;
    use crate::blosc2::test_util::{block, ext_chunk, stored};

    #[test]
    fn stored_chunks_and_damage() {
        let c = stored(&[1, 2, 3, 4, 5, 6, 7, 8], 4);
        assert_eq!(decode(&[], &c, 8).unwrap(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(decode(&[], &c, 7).is_err(), "bound");
        assert!(decode(&[], &c[..c.len() - 1], 8).is_err(), "cut short");
        assert!(decode(&[], &c[..20], 8).is_err(), "header cut short");
        let mut v6 = c.clone();
        v6[0] = 6;
        let e = decode(&[], &v6, 8).unwrap_err().to_string();
        assert!(e.contains("blosc2 chunk format version 6"), "{e}");
        let mut lazy = c.clone();
        lazy[31] = 0x08;
        assert!(decode(&[], &lazy, 8).is_err());
    }

    #[test]
    fn special_value_chunks() {
        let zeros = ext_chunk(0, 8, (24, 24), [0; 6], 0, 0x10, &[]);
        assert_eq!(decode(&[], &zeros, 24).unwrap(), [0u8; 24]);
        assert!(decode(&[], &zeros, 16).is_err(), "bound");
        let nan = ext_chunk(0, 8, (16, 16), [0; 6], 0, 0x20, &[]);
        let out = decode(&[], &nan, 16).unwrap();
        assert!(f64::from_le_bytes(out[8..].try_into().unwrap()).is_nan());
        let nan3 = ext_chunk(0, 3, (6, 6), [0; 6], 0, 0x20, &[]);
        assert!(decode(&[], &nan3, 6).is_err(), "NaNs of 3 bytes");
        let repeat = ext_chunk(0, 2, (6, 6), [0; 6], 0, 0x30, &[7, 9]);
        assert_eq!(decode(&[], &repeat, 6).unwrap(), [7, 9, 7, 9, 7, 9]);
        assert!(decode(&[], &repeat[..33], 6).is_err(), "value cut short");
        let uninit = ext_chunk(0, 1, (3, 3), [0; 6], 0, 0x40, &[]);
        assert_eq!(decode(&[], &uninit, 3).unwrap(), [0, 0, 0]);
        let odd = ext_chunk(0, 1, (3, 3), [0; 6], 0, 0x50, &[]);
        assert!(decode(&[], &odd, 3).is_err());
    }

    #[test]
    fn streams_runs_zeros_and_stored_bytes_then_shuffle() {
        // Two streams of 4 bytes (element size 2, split): the low bytes stored, the high bytes a run of 9.
        let mut s = 4i32.to_le_bytes().to_vec();
        s.extend_from_slice(&[1, 2, 3, 4]);
        s.extend_from_slice(&(-9i32).to_le_bytes());
        s.push(0x01);
        let shuffle = [SHUFFLE, 0, 0, 0, 0, 0];
        let c = ext_chunk(0, 2, (8, 8), shuffle, 0, 0, &block(&s));
        assert_eq!(decode(&[], &c, 8).unwrap(), [1, 9, 2, 9, 3, 9, 4, 9]);
        // A zero-sized stream is zeros.
        let mut z = 0i32.to_le_bytes().to_vec();
        z.extend_from_slice(&(-9i32).to_le_bytes());
        z.push(0x01);
        let c = ext_chunk(0, 2, (8, 8), [0; 6], 0, 0, &block(&z));
        assert_eq!(decode(&[], &c, 8).unwrap(), [0, 0, 0, 0, 9, 9, 9, 9]);
        // A token other than a byte run, a run of a value past 255, a missing token.
        let mut t = s.clone();
        *t.last_mut().unwrap() = 0x02;
        let e = decode(&[], &ext_chunk(0, 2, (8, 8), shuffle, 0, 0, &block(&t)), 8).unwrap_err();
        assert!(e.to_string().contains("token"), "{e}");
        let mut big = s.clone();
        big[8..12].copy_from_slice(&(-300i32).to_le_bytes());
        assert!(decode(
            &[],
            &ext_chunk(0, 2, (8, 8), shuffle, 0, 0, &block(&big)),
            8
        )
        .is_err());
        let cut = &s[..s.len() - 1];
        assert!(decode(&[], &ext_chunk(0, 2, (8, 8), shuffle, 0, 0, &block(cut)), 8).is_err());
    }

    #[test]
    fn delta_xors_the_first_block_in_itself_and_later_blocks_with_it() {
        // Element size 1, two blocks of 4 (not split), each one stored stream.
        let mut body = Vec::new();
        body.extend_from_slice(&((EXT_HEADER + 8) as u32).to_le_bytes());
        body.extend_from_slice(&((EXT_HEADER + 16) as u32).to_le_bytes());
        for bytes in [[1, 1, 1, 1], [1, 2, 3, 4]] {
            body.extend_from_slice(&4i32.to_le_bytes());
            body.extend_from_slice(&bytes);
        }
        let c = ext_chunk(0x10, 1, (8, 4), [DELTA, 0, 0, 0, 0, 0], 0, 0, &body);
        assert_eq!(decode(&[], &c, 8).unwrap(), [1, 0, 1, 0, 0, 2, 2, 4]);
        // Precision truncation leaves nothing to undo.
        let c = ext_chunk(
            0x10,
            1,
            (8, 4),
            [TRUNC_PREC, DELTA, 0, 0, 0, 0],
            0,
            0,
            &body,
        );
        assert_eq!(decode(&[], &c, 8).unwrap(), [1, 0, 1, 0, 0, 2, 2, 4]);
    }

    #[test]
    fn unknown_codecs_and_filters_are_named() {
        let s = block(&[4, 0, 0, 0, 1, 2, 3, 4]);
        // ZFP needs the b2nd array's block shape.
        let zfp = ext_chunk(0xc0, 4, (8, 8), [0; 6], 33, 0, &s);
        let e = decode(&[], &zfp, 8).unwrap_err().to_string();
        assert!(
            e.contains("blosc2 codec 33 (zfp_acc) outside a b2nd array"),
            "{e}"
        );
        let htj2k = ext_chunk(0xc0, 4, (8, 8), [0; 6], 36, 0, &s);
        let e = decode(&[], &htj2k, 8).unwrap_err().to_string();
        assert!(e.contains("blosc2 codec 36 (openhtj2k)"), "{e}");
        let ndcell = ext_chunk(0, 4, (8, 8), [SHUFFLE, 32, 0, 0, 0, 0], 0, 0, &s);
        let e = decode(&[], &ndcell, 8).unwrap_err().to_string();
        assert!(e.contains("blosc2 filter 32 (ndcell)"), "{e}");
    }

    #[test]
    fn cells_go_back_to_their_block_in_c_order() {
        // A 3x5 block of 1-byte elements in cells of 2x2: cells (0,0) (0,1) (0,2: 2x1) (1,0: 1x2) (1,1: 1x2)
        // (1,2: 1x1), each cell's rows in turn.
        let block: Vec<u8> = (0..15).collect();
        let cells = [0, 1, 5, 6, 2, 3, 7, 8, 4, 9, 10, 11, 12, 13, 14];
        let filtered: Vec<u8> = cells.iter().map(|&i| block[i]).collect();
        let mut out = vec![0u8; 15];
        uncell(NDCELL, 2, &filtered, &mut out, 1, Some(&[3, 5])).unwrap();
        assert_eq!(out, block);
        // ndmean lays out cells of a side within the block the same way.
        uncell(NDMEAN, 2, &filtered, &mut out, 1, Some(&[3, 5])).unwrap();
        assert_eq!(out, block);
        // Damage: no shape, a side of 0, a block not of its shape, a wrong element size — errors, no panic.
        assert!(uncell(NDCELL, 2, &filtered, &mut out, 1, None).is_err());
        assert!(uncell(NDCELL, 0, &filtered, &mut out, 1, Some(&[3, 5])).is_err());
        assert!(uncell(NDCELL, 2, &filtered, &mut out, 1, Some(&[4, 5])).is_err());
        assert!(uncell(NDCELL, 2, &filtered, &mut out, 3, Some(&[2, 5])).is_err());
        let mut rng = crate::test_rng::TestRng::new(0xce11);
        for _ in 0..2_000 {
            let shape: Vec<u64> = (0..1 + rng.next() % 3)
                .map(|_| 1 + rng.next() % 6)
                .collect();
            let n: u64 = shape.iter().product();
            let t = 1 + (rng.next() % 3) as usize;
            let src: Vec<u8> = (0..n as usize * t).map(|_| rng.next() as u8).collect();
            let mut dst = vec![0u8; src.len()];
            let side = (rng.next() % 8) as u8;
            let f = if rng.next().is_multiple_of(2) {
                NDCELL
            } else {
                NDMEAN
            };
            if side > 0 && f == NDMEAN {
                // Cells clipped to different sides overlap in c-blosc2's layout: no permutation, no panic.
                uncell(f, side, &src, &mut dst, t, Some(&shape)).unwrap();
            } else if side > 0 {
                // A permutation: every byte lands somewhere, once.
                uncell(f, side, &src, &mut dst, t, Some(&shape)).unwrap();
                let (mut a, mut b) = (src.clone(), dst.clone());
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "{shape:?} side {side} t {t}");
            } else {
                assert!(uncell(f, side, &src, &mut dst, t, Some(&shape)).is_err());
            }
        }
    }
}
