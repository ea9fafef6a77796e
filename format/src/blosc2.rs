//! Decoding the Blosc2 plugin filter (registered id 32026; hdf5plugin's and PyTables' `blosc2`).
//!
//! The filter stores each HDF5 chunk as a Blosc2 *contiguous frame* (a super-chunk serialised in one buffer);
//! a bare Blosc2 chunk is read as well. Client data: 0 filter revision, 1 block size, 2 element size, 3 chunk
//! size in bytes, 4 compression level, 5 filter, 6 codec, and for chunks of more than one dimension 7 the rank
//! and 8… the chunk's dimensions; only the rank and dimensions are used here, to check a b2nd array's shape.
//!
//! **Frame.** A msgpack header at fixed places: the magic `b2frame\0` at 2, the header's size (i32, big-endian)
//! at 11, the frame's size (u64) at 16, flags at 25–28 (bits 4–5 of the first: the size of the chunk offsets,
//! 1 = 64-bit; the low four bits of the second: the frame type, 0 = contiguous), the decoded and the
//! compressed sizes of the data (i64) at 30 and 39, the element size at 48, the chunk size at 58, and from 87
//! the metalayers: a map of names to offsets of `bin32` values. The chunks follow the header; after them (at
//! header size + compressed size) an index chunk holds each chunk's offset (i64, from the end of the header),
//! or, when the offset's top bit is set, a chunk of one special value (low three bits: 1 zeros, 2 NaNs,
//! 4 uninitialised) that is not stored. Without a `b2nd` (or older `caterva`) metalayer the chunks' bytes are
//! the data, one after another.
//!
//! **b2nd.** The `b2nd` metalayer (msgpack: version, rank, shape as i64s, chunk shape and block shape as i32s,
//! …) makes the frame an n-dimensional array: its chunks cover the shape in C order, each chunk padded up to a
//! multiple of the block shape, its blocks in C order of the block grid and each block in C order; the values
//! are moved back into the C order of the shape (hdf5plugin writes the HDF5 chunk as a b2nd array of one chunk
//! whose blocks may be smaller than it).
//!
//! **Chunk.** A 16-byte header (format version, codec version, flags, element size, then little-endian i32:
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
//! the first block, with the first block elsewhere) and precision truncation (lossy, nothing to undo).
//! Format versions 1–2 without an extended header are Blosc 1 buffers, read by [`crate::blosc`].
//!
//! Every read is bounds-checked and a damaged buffer is an error. Decoded sizes are bounded by the HDF5
//! chunk's size: a b2nd chunk padded to whole blocks (or with a chunk shape beyond the array's) to more than
//! that is decoded one block at a time, each block moved to its place before the next, its blocks no larger
//! than the HDF5 chunk or 16 MiB.
//! Not read (named in an Unsupported error): codecs other than BloscLZ, LZ4, LZ4HC, zlib and zstd (such as
//! ZFP, NDLZ, OpenHTJ2K), filters other than the four above (such as bytedelta), zstd dictionaries, lazy
//! chunks, sparse frames and chunk offsets of other than 64 bits.

use crate::blosc::Codec;
use crate::error::{corrupt, unsupported, Result};

/// Bytes of a chunk's basic header.
const HEADER: usize = 16;
/// Bytes of a chunk's extended header.
const EXT_HEADER: usize = 32;
/// The newest chunk format version read.
const MAX_VERSION: u8 = 5;
/// Where a frame's metalayers start (the fixed part of its header ends there).
const FRAME_METALAYERS: usize = 87;
/// A b2nd array's most dimensions (c-blosc2's limit).
const MAX_DIMS: usize = 8;
/// The filters a chunk may name (slot ids).
const SHUFFLE: u8 = 1;
const BITSHUFFLE: u8 = 2;
const DELTA: u8 = 3;
const TRUNC_PREC: u8 = 4;

/// Decodes one Blosc2-filtered chunk (client data `cd`) into at most `max_out` bytes.
pub fn decode(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    if data.len() >= 10 && data[0] & 0xf0 == 0x90 && data[1] == 0xa8 && &data[2..10] == b"b2frame\0"
    {
        frame(cd, data, max_out)
    } else {
        chunk(data, max_out)
    }
}

/// A msgpack reader over a frame's header, every read bounds-checked.
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8], at: usize) -> Self {
        Cursor { data, at }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let Some(b) = self
            .at
            .checked_add(n)
            .and_then(|end| self.data.get(self.at..end))
        else {
            return corrupt("blosc2 frame header cut short");
        };
        self.at += n;
        Ok(b)
    }

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// A big-endian unsigned integer of `n` bytes (at most 8).
    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b)))
    }

    /// A msgpack integer of any width.
    fn int(&mut self) -> Result<i64> {
        let m = self.byte()?;
        let v = match m {
            0x00..=0x7f => i64::from(m),
            0xe0..=0xff => i64::from(m as i8),
            0xcc => self.be(1)? as i64,
            0xcd => self.be(2)? as i64,
            0xce => self.be(4)? as i64,
            0xcf => i64::try_from(self.be(8)?).unwrap_or(-1),
            0xd0 => i64::from(self.be(1)? as u8 as i8),
            0xd1 => i64::from(self.be(2)? as u16 as i16),
            0xd2 => i64::from(self.be(4)? as u32 as i32),
            0xd3 => self.be(8)? as i64,
            _ => return corrupt(format!("blosc2 frame header: 0x{m:02x} is not an integer")),
        };
        Ok(v)
    }

    /// A msgpack integer that must be at least `min`.
    fn count(&mut self, min: i64) -> Result<u64> {
        let v = self.int()?;
        if v < min {
            return corrupt(format!(
                "blosc2 frame header: {v} where at least {min} belongs"
            ));
        }
        Ok(v as u64)
    }

    /// The length of a msgpack array.
    fn array(&mut self) -> Result<usize> {
        let m = self.byte()?;
        match m {
            0x90..=0x9f => Ok(usize::from(m & 0x0f)),
            0xdc => Ok(self.be(2)? as usize),
            0xdd => Ok(self.be(4)? as usize),
            _ => corrupt(format!("blosc2 frame header: 0x{m:02x} is not an array")),
        }
    }

    /// The number of entries of a msgpack map.
    fn map(&mut self) -> Result<usize> {
        let m = self.byte()?;
        match m {
            0x80..=0x8f => Ok(usize::from(m & 0x0f)),
            0xde => Ok(self.be(2)? as usize),
            0xdf => Ok(self.be(4)? as usize),
            _ => corrupt(format!("blosc2 frame header: 0x{m:02x} is not a map")),
        }
    }

    /// A msgpack string's bytes.
    fn str(&mut self) -> Result<&'a [u8]> {
        let m = self.byte()?;
        let n = match m {
            0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            _ => return corrupt(format!("blosc2 frame header: 0x{m:02x} is not a string")),
        };
        self.take(n)
    }

    /// The value of the fixed-width field whose msgpack marker is at `at`.
    fn field(data: &'a [u8], at: usize, marker: u8, n: usize) -> Result<u64> {
        let mut c = Cursor::new(data, at);
        if c.byte()? != marker {
            return corrupt(format!(
                "blosc2 frame header: no 0x{marker:02x} at byte {at}"
            ));
        }
        c.be(n)
    }
}

/// The shape of a b2nd array: its dimensions, its chunks' and its blocks'.
struct Nd {
    shape: Vec<u64>,
    chunks: Vec<u64>,
    blocks: Vec<u64>,
}

impl Nd {
    /// Each chunk's shape padded up to whole blocks.
    fn ext(&self) -> Vec<u64> {
        self.chunks
            .iter()
            .zip(&self.blocks)
            .map(|(&c, &b)| c.div_ceil(b) * b)
            .collect()
    }
}

/// Reads the `b2nd` (or `caterva`) metalayer of a frame's header (`header`, the frame's first bytes), if any.
fn metalayer(header: &[u8]) -> Result<Option<Nd>> {
    if header.len() <= FRAME_METALAYERS {
        return Ok(None);
    }
    let mut c = Cursor::new(header, FRAME_METALAYERS);
    if c.array()? < 2 {
        return corrupt("blosc2 frame metalayers: too short a list");
    }
    c.int()?;
    let entries = c.map()?;
    let mut found = None;
    for _ in 0..entries {
        let name = c.str()?;
        let offset = c.int()?;
        if name == b"b2nd" || name == b"caterva" {
            found = Some(offset);
        }
    }
    let Some(offset) = found else {
        return Ok(None);
    };
    let Ok(offset) = usize::try_from(offset) else {
        return corrupt("blosc2 frame: negative metalayer offset");
    };
    let mut c = Cursor::new(header, offset);
    if c.byte()? != 0xc6 {
        return corrupt("blosc2 frame: b2nd metalayer is not binary");
    }
    let len = c.be(4)? as usize;
    let mut c = Cursor::new(c.take(len)?, 0);
    if c.array()? < 5 {
        return corrupt("blosc2 b2nd metalayer: too few entries");
    }
    c.int()?;
    let ndim = c.count(0)? as usize;
    if ndim > MAX_DIMS {
        return unsupported(format!("b2nd array of {ndim} dimensions"));
    }
    let mut dims = |min: i64| -> Result<Vec<u64>> {
        if c.array()? != ndim {
            return corrupt("blosc2 b2nd metalayer: a shape of the wrong rank");
        }
        (0..ndim).map(|_| c.count(min)).collect()
    };
    let shape = dims(0)?;
    let chunks = dims(1)?;
    let blocks = dims(1)?;
    Ok(Some(Nd {
        shape,
        chunks,
        blocks,
    }))
}

/// Decodes a contiguous frame: its chunks one after another, or its b2nd array in C order.
fn frame(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let header_size = Cursor::field(data, 10, 0xd2, 4)? as usize;
    let frame_size = Cursor::field(data, 15, 0xcf, 8)?;
    let Some(frame) = usize::try_from(frame_size).ok().and_then(|n| data.get(..n)) else {
        return corrupt("blosc2 frame shorter than its stated size");
    };
    let flags = Cursor::field(frame, 24, 0xa4, 4)?;
    let (general, frame_type) = ((flags >> 24) as u8, (flags >> 16) as u8);
    if (general >> 4) & 3 != 1 {
        let bits = 32 << ((general >> 4) & 3);
        return unsupported(format!("blosc2 frame with {bits}-bit chunk offsets"));
    }
    if frame_type & 0x0f != 0 {
        return unsupported("blosc2 sparse frame");
    }
    let size = |at: usize| -> Result<usize> {
        let v = Cursor::field(frame, at, 0xd3, 8)? as i64;
        usize::try_from(v).map_or_else(|_| corrupt("blosc2 frame: negative size"), Ok)
    };
    let (total, compressed) = (size(29)?, size(38)?);
    let typesize = Cursor::field(frame, 47, 0xd2, 4)? as u32 as usize;
    let chunk_size = Cursor::field(frame, 57, 0xd2, 4)? as u32 as usize;
    if header_size < FRAME_METALAYERS || header_size > frame.len() || chunk_size > i32::MAX as usize
    {
        return corrupt("blosc2 frame: bad header size");
    }
    let nd = metalayer(&frame[..header_size])?;
    if nd.is_none() && total > max_out {
        return corrupt("blosc2 frame decodes to more than the chunk size");
    }
    // The chunk offsets: a Blosc2 chunk of i64s after the data chunks.
    let nchunks = if total == 0 {
        0
    } else if chunk_size > 0 {
        total.div_ceil(chunk_size)
    } else {
        frame.len()
    };
    let Some(index) = header_size
        .checked_add(compressed)
        .and_then(|at| frame.get(at..))
    else {
        return corrupt("blosc2 frame: chunk index past its end");
    };
    let offsets = if nchunks == 0 {
        Vec::new()
    } else {
        // Every chunk holds at least one of the output's bytes (a b2nd chunk at least one element).
        chunk(index, nchunks.min(max_out.max(1)).saturating_mul(8))?
    };
    if offsets.len() % 8 != 0 || (chunk_size > 0 && offsets.len() / 8 != nchunks) {
        return corrupt("blosc2 frame: chunk index of the wrong size");
    }
    let chunks = &frame[header_size..];
    // Chunk `i`: its bytes, or the kind of its special value.
    let locate = |i: usize| -> Result<Piece<'_>> {
        let o = &offsets[i * 8..i * 8 + 8];
        let off = i64::from_le_bytes([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]]);
        if off >= 0 {
            let Some(c) = usize::try_from(off).ok().and_then(|o| chunks.get(o..)) else {
                return corrupt("blosc2 frame: chunk past its end");
            };
            return Ok(Piece::Chunk(c));
        }
        Ok(Piece::Special(o[7] & 0x07))
    };
    // Chunk `i` decoded to `nbytes` bytes.
    let get = |i: usize, nbytes: usize| -> Result<Vec<u8>> {
        match locate(i)? {
            Piece::Chunk(c) => chunk(c, nbytes),
            Piece::Special(kind) => special(kind, typesize, nbytes, &[]),
        }
    };
    let Some(nd) = nd else {
        // Plain frame: the chunks' bytes in order.
        let n = offsets.len() / 8;
        let mut out = Vec::new();
        for i in 0..n {
            let left = total - out.len().min(total);
            let want = if chunk_size > 0 {
                chunk_size.min(left)
            } else {
                left
            };
            let c = get(i, want)?;
            if n == 1 {
                out = c;
            } else {
                out.extend_from_slice(&c);
            }
        }
        if out.len() != total {
            return corrupt("blosc2 frame: chunks do not add up to its size");
        }
        return Ok(out);
    };
    b2nd(
        cd,
        &nd,
        chunk_size,
        typesize,
        offsets.len() / 8,
        max_out,
        locate,
    )
}

/// A frame's chunk: its bytes (from its start to the frame's end), or a special value not stored (its kind).
enum Piece<'a> {
    Chunk(&'a [u8]),
    Special(u8),
}

/// Gathers a b2nd array (`nchunks` chunks, each found by `locate(i)`) into C order: each chunk decoded whole
/// when padded to no more than `max_out` bytes, else block by block.
fn b2nd<'a>(
    cd: &[u32],
    nd: &Nd,
    chunk_size: usize,
    typesize: usize,
    nchunks: usize,
    max_out: usize,
    locate: impl Fn(usize) -> Result<Piece<'a>>,
) -> Result<Vec<u8>> {
    let ndim = nd.shape.len();
    if let Some(&rank) = cd.get(7) {
        let dims = cd.get(8..8 + ndim);
        let same = dims.is_some_and(|d| d.iter().zip(&nd.shape).all(|(&a, &b)| u64::from(a) == b));
        if rank as usize != ndim || !same {
            return corrupt("b2nd array's shape differs from the filter's chunk shape");
        }
    }
    if nd.blocks.iter().zip(&nd.chunks).any(|(b, c)| b > c) {
        return corrupt("b2nd blocks larger than their chunks");
    }
    let ext = nd.ext();
    let prod = |v: &[u64]| v.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
    let too_big = || crate::FormatError::Corrupt("b2nd array larger than the HDF5 chunk".into());
    let ext_elems = prod(&ext).ok_or_else(too_big)?;
    // The element size: the chunk size over its elements, else the frame's element size.
    let item = match usize::try_from(ext_elems) {
        Ok(e) if e > 0 && chunk_size > 0 && chunk_size.is_multiple_of(e) => chunk_size / e,
        _ => typesize.max(1),
    };
    let elems = prod(&nd.shape).ok_or_else(too_big)?;
    let out_len = usize::try_from(elems)
        .ok()
        .and_then(|e| e.checked_mul(item))
        .filter(|&n| n <= max_out)
        .ok_or_else(too_big)?;
    // A chunk (padded to whole blocks) may exceed the array: only its blocks are held at once then.
    let chunk_bytes = usize::try_from(ext_elems)
        .ok()
        .and_then(|e| e.checked_mul(item))
        .ok_or_else(too_big)?;
    let grid: Vec<u64> = nd
        .shape
        .iter()
        .zip(&nd.chunks)
        .map(|(&s, &c)| s.div_ceil(c))
        .collect();
    let grid_chunks = prod(&grid).ok_or_else(too_big)?;
    if grid_chunks != nchunks as u64 {
        return corrupt(format!(
            "b2nd array of {grid_chunks} chunks in a frame of {nchunks}"
        ));
    }
    if out_len == 0 {
        return Ok(Vec::new());
    }
    let layout = Layout::new(nd, &ext, item);
    // Blocks are no larger than their chunk, so neither product overflows.
    let block_bytes = layout.block_elems as usize * item;
    if chunk_bytes > max_out {
        return blockwise(
            &layout,
            &grid,
            chunk_bytes,
            typesize,
            max_out,
            out_len,
            locate,
        );
    }
    let whole = |i: usize| -> Result<Vec<u8>> {
        let c = match locate(i)? {
            Piece::Chunk(c) => chunk(c, chunk_bytes)?,
            Piece::Special(kind) => special(kind, typesize, chunk_bytes, &[])?,
        };
        if c.len() != chunk_bytes {
            return corrupt("b2nd chunk of the wrong size");
        }
        Ok(c)
    };
    if nchunks == 1 && nd.blocks == nd.chunks && nd.chunks == nd.shape {
        return whole(0);
    }
    let mut out = vec![0u8; out_len];
    let mut cidx = vec![0u64; ndim];
    for i in 0..nchunks {
        let buf = whole(i)?;
        for j in layout.wanted(&cidx) {
            if let Some(b) = buf.get(j * block_bytes..(j + 1) * block_bytes) {
                layout.scatter(&cidx, j, b, &mut out);
            }
        }
        next_index(&mut cidx, &grid);
    }
    Ok(out)
}

/// The largest b2nd block read when chunks are decoded block by block, unless the output is larger.
const MAX_BLOCK: usize = 16 << 20;

/// Gathers a b2nd array whose padded chunks (`chunk_bytes` each) exceed `max_out`, one block at a time.
fn blockwise<'a>(
    layout: &Layout<'_>,
    grid: &[u64],
    chunk_bytes: usize,
    typesize: usize,
    max_out: usize,
    out_len: usize,
    locate: impl Fn(usize) -> Result<Piece<'a>>,
) -> Result<Vec<u8>> {
    let block_bytes = layout.block_elems as usize * layout.item;
    if block_bytes > max_out.max(MAX_BLOCK) {
        return unsupported(format!(
            "b2nd blocks of {block_bytes} bytes, larger than their array"
        ));
    }
    let nchunks = grid.iter().product::<u64>() as usize;
    let mut out = vec![0u8; out_len];
    let mut cidx = vec![0u64; grid.len()];
    for i in 0..nchunks {
        let mut sink = |j: usize, b: &[u8]| layout.scatter(&cidx, j, b, &mut out);
        match locate(i)? {
            Piece::Chunk(c) => {
                chunk_blocks(c, chunk_bytes, block_bytes, layout.wanted(&cidx), &mut sink)?
            }
            Piece::Special(kind) => {
                let one = special(kind, typesize, block_bytes, &[])?;
                layout.wanted(&cidx).for_each(|j| sink(j, &one));
            }
        }
        next_index(&mut cidx, grid);
    }
    Ok(out)
}

/// Where the blocks of a b2nd array's chunks go: the block grid of a padded chunk and the array's strides.
struct Layout<'n> {
    nd: &'n Nd,
    /// Bytes per element.
    item: usize,
    /// Blocks per padded chunk in each dimension.
    block_grid: Vec<u64>,
    /// Elements per block.
    block_elems: u64,
    /// Elements between consecutive indices of each dimension of the array.
    stride: Vec<u64>,
}

impl<'n> Layout<'n> {
    /// The layout of `nd`, its chunks padded to `ext`, of `item`-byte elements.
    fn new(nd: &'n Nd, ext: &[u64], item: usize) -> Self {
        let ndim = nd.shape.len();
        let mut stride = vec![1u64; ndim];
        for d in (0..ndim.saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * nd.shape[d + 1];
        }
        Layout {
            nd,
            item,
            block_grid: ext.iter().zip(&nd.blocks).map(|(&e, &b)| e / b).collect(),
            block_elems: nd.blocks.iter().product(),
            stride,
        }
    }

    /// The numbers of the blocks of the chunk at grid index `cidx` that hold some of the array (a box of its
    /// block grid), ascending.
    fn wanted(&self, cidx: &[u64]) -> impl Iterator<Item = usize> {
        let nd = self.nd;
        let span: Vec<u64> = (0..cidx.len())
            .map(|d| {
                let left = nd.shape[d].saturating_sub(cidx[d] * nd.chunks[d]);
                nd.chunks[d].min(left).div_ceil(nd.blocks[d])
            })
            .collect();
        let grid = self.block_grid.clone();
        let mut idx = vec![0u64; span.len()];
        let mut done = span.contains(&0);
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let n = idx.iter().zip(&grid).fold(0u64, |a, (&i, &g)| a * g + i);
            done = !next_index(&mut idx, &span);
            Some(n as usize)
        })
    }

    /// Moves the values of block `blockno` (`block`, in C order) of the chunk at grid index `cidx` to their
    /// places in `out` (the array in C order), leaving out the padding.
    fn scatter(&self, cidx: &[u64], blockno: usize, block: &[u8], out: &mut [u8]) {
        let (nd, item) = (self.nd, self.item);
        let ndim = nd.shape.len();
        if ndim == 0 {
            let n = item.min(block.len()).min(out.len());
            out[..n].copy_from_slice(&block[..n]);
            return;
        }
        let last = ndim - 1;
        // This block's index in the block grid, its first element within the chunk and within the array.
        let mut bidx = vec![0u64; ndim];
        let mut rest = blockno as u64;
        for d in (0..ndim).rev() {
            bidx[d] = rest % self.block_grid[d].max(1);
            rest /= self.block_grid[d].max(1);
        }
        let within: Vec<u64> = (0..ndim).map(|d| bidx[d] * nd.blocks[d]).collect();
        let start: Vec<u64> = (0..ndim)
            .map(|d| {
                cidx[d]
                    .saturating_mul(nd.chunks[d])
                    .saturating_add(within[d])
            })
            .collect();
        if rest != 0 || (0..ndim).any(|d| within[d] >= nd.chunks[d] || start[d] >= nd.shape[d]) {
            return;
        }
        let row_len = nd.blocks[last];
        let len = row_len
            .min(nd.chunks[last] - within[last])
            .min(nd.shape[last] - start[last]) as usize;
        let rows_shape = &nd.blocks[..last];
        let mut ridx = vec![0u64; last];
        let mut row = 0u64;
        loop {
            let ok = (0..last)
                .all(|d| within[d] + ridx[d] < nd.chunks[d] && start[d] + ridx[d] < nd.shape[d]);
            if ok {
                let src = (row * row_len) as usize * item;
                let dst: u64 = (0..ndim)
                    .map(|d| (start[d] + ridx.get(d).copied().unwrap_or(0)) * self.stride[d])
                    .sum();
                let dst = dst as usize * item;
                if let (Some(s), Some(o)) = (
                    block.get(src..src + len * item),
                    out.get_mut(dst..dst + len * item),
                ) {
                    o.copy_from_slice(s);
                }
            }
            row += 1;
            if !next_index(&mut ridx, rows_shape) {
                break;
            }
        }
    }
}

/// Steps a C-order multi-index within `dims`; false (and the index back at zero) after the last one.
fn next_index(idx: &mut [u64], dims: &[u64]) -> bool {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

/// `nbytes` bytes of one special value: 1 zeros, 2 NaNs (of `typesize` 4 or 8), 3 `value` repeated,
/// 4 uninitialised (zeros).
fn special(kind: u8, typesize: usize, nbytes: usize, value: &[u8]) -> Result<Vec<u8>> {
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

/// Name of a Blosc2 filter id (for messages).
fn filter_name(id: u8) -> &'static str {
    match id {
        32 => "ndcell",
        33 => "ndmean",
        34 | 35 => "bytedelta",
        36 => "int_trunc",
        _ => "unknown",
    }
}

/// A Blosc2 chunk's header, read and checked.
struct Header<'a> {
    /// The chunk, cut to its stated size.
    data: &'a [u8],
    /// Bytes of the header (basic or extended).
    header_len: usize,
    flags: u8,
    typesize: usize,
    /// Decoded bytes.
    nbytes: usize,
    /// Decoded bytes per block (the last block may be shorter).
    blocksize: usize,
    /// The filter slots.
    filters: [u8; 6],
    /// The extended header's codec id and flags (0 without it).
    codec_id: u8,
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

/// How a chunk's compressed blocks are read.
struct Blocks<'a> {
    codec: Codec,
    /// The filters to undo, in the order they are undone.
    undo: Vec<u8>,
    /// Each block's start (i32).
    starts: &'a [u8],
}

/// Buffers reused from block to block while filters are undone.
#[derive(Default)]
struct Scratch {
    a: Vec<u8>,
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
        let (filters, codec_id, b2flags) = if extended {
            let mut f = [0u8; 6];
            f.copy_from_slice(&data[16..22]);
            (f, data[22], data[31])
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
            (f, 0, 0)
        };
        Ok(Some(Header {
            data,
            header_len,
            flags,
            typesize,
            nbytes,
            blocksize,
            filters,
            codec_id,
            b2flags,
        }))
    }

    /// What the chunk holds: one special value, its bytes as they are, or compressed blocks (codec and
    /// filters checked).
    fn body(&self) -> Result<Body<'a>> {
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
            0 => Codec::BloscLz,
            1 => Codec::Lz4,
            3 => Codec::Zlib,
            4 => Codec::Zstd,
            6 => match self.codec_id {
                0 => Codec::BloscLz,
                1 | 2 => Codec::Lz4,
                4 => Codec::Zlib,
                5 => Codec::Zstd,
                c => return unsupported(format!("blosc2 codec {c} ({})", codec_name(c))),
            },
            2 => return unsupported("blosc2 codec format 2 (snappy)"),
            c => return unsupported(format!("blosc2 codec format {c}")),
        };
        // Byte shuffle of 1-byte elements and precision truncation leave nothing to undo.
        let mut undo = Vec::new();
        for &f in self.filters.iter().rev() {
            match f {
                0 | TRUNC_PREC => {}
                SHUFFLE if self.typesize == 1 => {}
                SHUFFLE | BITSHUFFLE | DELTA => undo.push(f),
                f => return unsupported(format!("blosc2 filter {f} ({})", filter_name(f))),
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
        for &f in rest {
            a2.clear();
            a2.resize(bsize, 0);
            unfilter(f, a, a2, dref, self.typesize);
            std::mem::swap(a, a2);
        }
        unfilter(last, a, dest, dref, self.typesize);
        Ok(())
    }
}

/// Decodes one Blosc2 chunk into at most `max_out` bytes.
fn chunk(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let Some(h) = Header::parse(data, max_out)? else {
        return crate::blosc::decode(data, max_out);
    };
    let b = match h.body()? {
        Body::Special(kind, value) => return special(kind, h.typesize, h.nbytes, value),
        Body::Stored(bytes) => return Ok(bytes.to_vec()),
        Body::Blocks(b) => b,
    };
    let mut out = vec![0u8; h.nbytes];
    let mut scratch = Scratch::default();
    for j in 0..b.starts.len() / 4 {
        let at = j * h.blocksize;
        let (head, tail) = out.split_at_mut(at);
        let dref = (j > 0).then(|| &head[..h.blocksize]);
        let bsize = h.blocksize.min(h.nbytes - at);
        h.block(&b, j, &mut tail[..bsize], dref, &mut scratch)?;
    }
    Ok(out)
}

/// Decodes blocks `which` (ascending) of a chunk of `nbytes` bytes in blocks of `block_bytes` one at a time,
/// handing each (its number, its bytes) to `sink`: a few blocks are held, never the whole chunk.
fn chunk_blocks(
    data: &[u8],
    nbytes: usize,
    block_bytes: usize,
    which: impl Iterator<Item = usize>,
    mut sink: impl FnMut(usize, &[u8]),
) -> Result<()> {
    let Some(h) = Header::parse(data, nbytes)? else {
        return unsupported("b2nd chunk in the Blosc 1 format, padded beyond its array");
    };
    if h.nbytes != nbytes || block_bytes == 0 {
        return corrupt("b2nd chunk of the wrong size");
    }
    let b = match h.body()? {
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
        if first.is_none() && (j == 0 || b.undo.contains(&DELTA)) {
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
    codec: Codec,
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
            crate::blosc::decompress(codec, body, target)?;
        }
        pos += size;
    }
    Ok(())
}

/// Undoes filter `f` on one block, `src` into `dst` (as long); `dref` is the chunk's first block (decoded),
/// absent for the first block itself.
fn unfilter(f: u8, src: &[u8], dst: &mut [u8], dref: Option<&[u8]>, typesize: usize) {
    match f {
        SHUFFLE => crate::filters::unshuffle_into(src, typesize, dst),
        BITSHUFFLE => {
            let n = src.len() / typesize;
            let whole = (n - n % 8) * typesize;
            dst[..whole].fill(0);
            crate::bitshuffle::unshuffle_block(
                &src[..whole],
                &mut dst[..whole],
                n - n % 8,
                typesize,
            );
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

    /// A chunk with an extended header: `flags` (0x05 added), `b2flags`, the filter slots and codec id, then
    /// `body` (block starts and streams, or stored bytes); the chunk's size is filled in.
    fn ext_chunk(
        flags: u8,
        typesize: u8,
        (nbytes, blocksize): (usize, usize),
        filters: [u8; 6],
        codec: u8,
        b2flags: u8,
        body: &[u8],
    ) -> Vec<u8> {
        let mut c = vec![5, 1, flags | 0x05, typesize];
        c.extend_from_slice(&(nbytes as u32).to_le_bytes());
        c.extend_from_slice(&(blocksize as u32).to_le_bytes());
        c.extend_from_slice(&((EXT_HEADER + body.len()) as u32).to_le_bytes());
        c.extend_from_slice(&filters);
        c.extend_from_slice(&[codec, 0, 0, 0, 0, 0, 0, 0, 0, b2flags]);
        c.extend_from_slice(body);
        c
    }

    /// `bytes` kept as they are (flags 0x02).
    fn stored(bytes: &[u8], typesize: u8) -> Vec<u8> {
        ext_chunk(
            0x02,
            typesize,
            (bytes.len(), bytes.len()),
            [0; 6],
            0,
            0,
            bytes,
        )
    }

    /// A contiguous frame of `chunks` (None: a chunk of zeros not stored), optionally with a b2nd metalayer
    /// (shape, chunk shape, block shape).
    fn frame(
        chunks: &[Option<Vec<u8>>],
        total: usize,
        chunk_size: usize,
        typesize: u32,
        nd: Option<(&[i64], &[i32], &[i32])>,
    ) -> Vec<u8> {
        let mut meta = Vec::new();
        if let Some((shape, cshape, bshape)) = nd {
            let n = shape.len() as u8;
            meta.extend_from_slice(&[0x97, 0, n, 0x90 | n]);
            for &s in shape {
                meta.push(0xd3);
                meta.extend_from_slice(&s.to_be_bytes());
            }
            for dims in [cshape, bshape] {
                meta.push(0x90 | n);
                for &d in dims {
                    meta.push(0xd2);
                    meta.extend_from_slice(&d.to_be_bytes());
                }
            }
            meta.extend_from_slice(&[0, 0xa3, b'|', b'u', b'1']);
        }
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for c in chunks {
            match c {
                Some(c) => {
                    offsets.extend_from_slice(&(data.len() as i64).to_le_bytes());
                    data.extend_from_slice(c);
                }
                None => offsets.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x81]),
            }
        }
        let index = stored(&offsets, 8);
        let mut h = vec![0x9e, 0xa8];
        h.extend_from_slice(b"b2frame\0");
        h.extend_from_slice(&[0xd2, 0, 0, 0, 0, 0xcf, 0, 0, 0, 0, 0, 0, 0, 0]);
        h.extend_from_slice(&[0xa4, 0x12, 0, 0, 0, 0xd3]);
        h.extend_from_slice(&(total as i64).to_be_bytes());
        h.push(0xd3);
        h.extend_from_slice(&(data.len() as i64).to_be_bytes());
        for v in [typesize, chunk_size as u32, chunk_size as u32] {
            h.push(0xd2);
            h.extend_from_slice(&v.to_be_bytes());
        }
        h.extend_from_slice(&[0xd1, 0, 0, 0xd1, 0, 0, 0xc2, 0xd8, 6]);
        h.extend_from_slice(&[0; 16]);
        assert_eq!(h.len(), FRAME_METALAYERS);
        if meta.is_empty() {
            h.extend_from_slice(&[0x93, 0xcd, 0, 0, 0xde, 0, 0, 0xdc, 0, 0]);
        } else {
            h.extend_from_slice(&[0x93, 0xcd, 0, 0, 0xde, 0, 1, 0xa4]);
            h.extend_from_slice(b"b2nd");
            let at = (h.len() + 5 + 3) as u32;
            h.push(0xd2);
            h.extend_from_slice(&at.to_be_bytes());
            h.extend_from_slice(&[0xdc, 0, 1, 0xc6]);
            h.extend_from_slice(&(meta.len() as u32).to_be_bytes());
            h.extend_from_slice(&meta);
        }
        let header_size = h.len() as u32;
        h[11..15].copy_from_slice(&header_size.to_be_bytes());
        h.extend_from_slice(&data);
        h.extend_from_slice(&index);
        let size = h.len() as u64;
        h[16..24].copy_from_slice(&size.to_be_bytes());
        h
    }

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

    /// One block of `streams` (each its size, then its token or bytes), the block's start first.
    fn block(streams: &[u8]) -> Vec<u8> {
        let mut b = ((EXT_HEADER + 4) as u32).to_le_bytes().to_vec();
        b.extend_from_slice(streams);
        b
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
        let zfp = ext_chunk(0xc0, 4, (8, 8), [0; 6], 33, 0, &s);
        let e = decode(&[], &zfp, 8).unwrap_err().to_string();
        assert!(e.contains("blosc2 codec 33 (zfp_acc)"), "{e}");
        let bytedelta = ext_chunk(0, 4, (8, 8), [SHUFFLE, 35, 0, 0, 0, 0], 0, 0, &s);
        let e = decode(&[], &bytedelta, 8).unwrap_err().to_string();
        assert!(e.contains("blosc2 filter 35 (bytedelta)"), "{e}");
    }

    #[test]
    fn plain_frames_join_their_chunks() {
        let f = frame(
            &[
                Some(stored(&[1, 2, 3, 4], 1)),
                None,
                Some(stored(&[5, 6], 1)),
            ],
            10,
            4,
            1,
            None,
        );
        assert_eq!(decode(&[], &f, 10).unwrap(), [1, 2, 3, 4, 0, 0, 0, 0, 5, 6]);
        assert!(decode(&[], &f, 9).is_err(), "bound");
        assert!(decode(&[], &f[..f.len() - 1], 10).is_err(), "cut short");
        let mut bad = f.clone();
        bad[25] = 0x22;
        let e = decode(&[], &bad, 10).unwrap_err().to_string();
        assert!(e.contains("128-bit chunk offsets"), "{e}");
    }

    /// The chunk of a b2nd array of `u8`s `value(row, col)` with chunk shape `c` and block shape `b`, at chunk
    /// row `ci`, in block order (padding 0xee).
    fn b2nd_chunk(shape: [usize; 2], c: [usize; 2], b: [usize; 2], ci: usize) -> Vec<u8> {
        b2nd_chunk_at(shape, c, b, [ci, 0])
    }

    /// As [`b2nd_chunk`], the chunk at chunk grid index `ci`.
    fn b2nd_chunk_at(shape: [usize; 2], c: [usize; 2], b: [usize; 2], ci: [usize; 2]) -> Vec<u8> {
        let ext = [c[0].div_ceil(b[0]) * b[0], c[1].div_ceil(b[1]) * b[1]];
        let mut out = Vec::new();
        for br in 0..ext[0] / b[0] {
            for bc in 0..ext[1] / b[1] {
                for r in 0..b[0] {
                    for k in 0..b[1] {
                        let (wr, wc) = (br * b[0] + r, bc * b[1] + k);
                        let (row, col) = (ci[0] * c[0] + wr, ci[1] * c[1] + wc);
                        let inside = wr < c[0] && wc < c[1] && row < shape[0] && col < shape[1];
                        out.push(if inside { (row * 10 + col) as u8 } else { 0xee });
                    }
                }
            }
        }
        out
    }

    /// `bytes` compressed in blocks of `blocksize` (not split), each block one stream kept as it is, with the
    /// filter slots `filters`.
    fn blocked(bytes: &[u8], typesize: u8, blocksize: usize, filters: [u8; 6]) -> Vec<u8> {
        let nblocks = bytes.len().div_ceil(blocksize);
        let mut table = Vec::new();
        let mut streams = Vec::new();
        for b in bytes.chunks(blocksize) {
            let at = EXT_HEADER + 4 * nblocks + streams.len();
            table.extend_from_slice(&(at as u32).to_le_bytes());
            streams.extend_from_slice(&(b.len() as i32).to_le_bytes());
            streams.extend_from_slice(b);
        }
        table.extend_from_slice(&streams);
        let sizes = (bytes.len(), blocksize);
        ext_chunk(0x10, typesize, sizes, filters, 0, 0, &table)
    }

    /// The values `r * 10 + c` of a `rows` x `cols` array of `u8`s, in C order.
    fn grid_values(rows: usize, cols: usize) -> Vec<u8> {
        (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r * 10 + c) as u8))
            .collect()
    }

    #[test]
    fn b2nd_chunks_larger_than_their_array_are_read_block_by_block() {
        // One chunk of 64x64 in blocks of 32x64 over a 3x5 array: 4096 bytes padded, 15 wanted.
        let chunk = b2nd_chunk([3, 5], [64, 64], [32, 64], 0);
        assert_eq!(chunk.len(), 4096);
        let nd = Some((&[3i64, 5][..], &[64i32, 64][..], &[32i32, 64][..]));
        let want = grid_values(3, 5);
        for c in [stored(&chunk, 1), blocked(&chunk, 1, 2048, [0; 6])] {
            let f = frame(&[Some(c)], 4096, 4096, 1, nd);
            assert_eq!(decode(&[], &f, 15).unwrap(), want, "block by block");
            assert_eq!(decode(&[], &f, 4096).unwrap(), want, "whole");
        }
        // Blocks differing from the chunk's own are refused.
        let f = frame(&[Some(blocked(&chunk, 1, 1024, [0; 6]))], 4096, 4096, 1, nd);
        assert!(decode(&[], &f, 15).is_err());
        // A 5x5 array in four chunks of 4x4 (blocks of 3x3, padded to 6x6): every chunk read block by block.
        let (shape, c, b) = ([5, 5], [4, 4], [3, 3]);
        let chunks: Vec<_> = [[0, 0], [0, 1], [1, 0], [1, 1]]
            .iter()
            .map(|&ci| Some(blocked(&b2nd_chunk_at(shape, c, b, ci), 1, 9, [0; 6])))
            .collect();
        let nd = Some((&[5i64, 5][..], &[4i32, 4][..], &[3i32, 3][..]));
        let f = frame(&chunks, 4 * 36, 36, 1, nd);
        assert_eq!(decode(&[], &f, 25).unwrap(), grid_values(5, 5));
        assert_eq!(decode(&[], &f, 36).unwrap(), grid_values(5, 5), "whole");
    }

    #[test]
    fn b2nd_chunks_padded_far_beyond_the_output_hold_one_block() {
        // A 4-element array in one chunk of 64 MiB not stored (zeros), in blocks of 1 MiB: read block by block.
        let nd = |block: &'static [i32]| Some((&[4i64][..], &[1i32 << 26][..], block));
        let f = frame(&[None], 1 << 26, 1 << 26, 1, nd(&[1 << 20]));
        assert_eq!(decode(&[], &f, 4).unwrap(), [0u8; 4]);
        // Blocks of 32 MiB are more than the output or the block bound allows.
        let f = frame(&[None], 1 << 26, 1 << 26, 1, nd(&[1 << 25]));
        let e = decode(&[], &f, 4).unwrap_err();
        assert!(matches!(e, crate::FormatError::Unsupported(_)), "{e}");
        assert!(
            e.to_string().contains("b2nd blocks of 33554432 bytes"),
            "{e}"
        );
        // A compressed chunk claiming 16 MiB in 4096 blocks of 4 KiB, all one zero stream: only the blocks
        // wanted are decoded, each no larger than a block.
        let (nbytes, bs) = (1usize << 24, 4096usize);
        let nblocks = nbytes / bs;
        let stream = (EXT_HEADER + 4 * nblocks) as u32;
        let mut body: Vec<u8> = (0..nblocks).flat_map(|_| stream.to_le_bytes()).collect();
        body.extend_from_slice(&0i32.to_le_bytes());
        let c = ext_chunk(0x10, 1, (nbytes, bs), [0; 6], 0, 0, &body);
        let mut seen = Vec::new();
        chunk_blocks(&c, nbytes, bs, [0, 7, nblocks - 1].into_iter(), |j, b| {
            seen.push((j, b.len(), b.iter().all(|&v| v == 0)));
        })
        .unwrap();
        assert_eq!(
            seen,
            [(0, bs, true), (7, bs, true), (nblocks - 1, bs, true)]
        );
        assert!(chunk_blocks(&c, nbytes, bs, [nblocks].into_iter(), |_, _| {}).is_err());
        let e = chunk_blocks(&c, nbytes, 2 * bs, [0].into_iter(), |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("blocks of 4096 bytes"), "{e}");
        let nd = Some((&[3i64][..], &[1i32 << 24][..], &[4096i32][..]));
        let f = frame(&[Some(c)], nbytes, nbytes, 1, nd);
        for max in [3, 1000, 1 << 20] {
            let out = decode(&[], &f, max).unwrap();
            assert_eq!(out, [0u8; 3]);
            assert!(out.len() <= max);
        }
    }

    #[test]
    fn delta_and_shuffle_read_block_by_block_equal_the_whole_chunk() {
        // A 3x5 array of 2-byte elements in one chunk of blocks of 2x2 (padded to 4x6: 48 bytes, 30 wanted).
        let mut rng = crate::test_rng::TestRng::new(0xde17a);
        let raw: Vec<u8> = (0..48).map(|_| rng.next() as u8).collect();
        let c = blocked(&raw, 2, 8, [SHUFFLE, DELTA, 0, 0, 0, 0]);
        let decoded = chunk(&c, 48).unwrap();
        let nd = Some((&[3i64, 5][..], &[3i32, 5][..], &[2i32, 2][..]));
        let f = frame(&[Some(c)], 48, 48, 2, nd);
        let whole = decode(&[], &f, 48).unwrap();
        let blockwise = decode(&[], &f, 30).unwrap();
        assert_eq!(blockwise, whole);
        // Element (r, k) is element (r % 2) * 2 + k % 2 of block (r / 2) * 3 + k / 2.
        let want: Vec<u8> = (0..3)
            .flat_map(|r| (0..5).map(move |k| (r, k)))
            .flat_map(|(r, k)| {
                let at = (((r / 2) * 3 + k / 2) * 4 + (r % 2) * 2 + k % 2) * 2;
                decoded[at..at + 2].to_vec()
            })
            .collect();
        assert_eq!(whole, want);
    }

    #[test]
    fn b2nd_blocks_and_chunks_are_put_back_in_c_order() {
        // One chunk of 3x5 in blocks of 2x2 (padded to 4x6).
        let chunk = b2nd_chunk([3, 5], [3, 5], [2, 2], 0);
        let nd = Some((&[3i64, 5][..], &[3i32, 5][..], &[2i32, 2][..]));
        let f = frame(&[Some(stored(&chunk, 1))], 24, 24, 1, nd);
        let want: Vec<u8> = (0..3)
            .flat_map(|r| (0..5).map(move |c| (r * 10 + c) as u8))
            .collect();
        let cd = [1, 0, 1, 15, 5, 1, 0, 2, 3, 5];
        assert_eq!(decode(&cd, &f, 15).unwrap(), want);
        assert_eq!(
            decode(&cd[..7], &f, 15).unwrap(),
            want,
            "no chunk shape in cd"
        );
        assert!(decode(&cd, &f, 14).is_err(), "bound");
        let other = [1, 0, 1, 15, 5, 1, 0, 2, 3, 6];
        assert!(decode(&other, &f, 18).is_err(), "shape differs from cd");
        // Two chunks of 3x5 over a 5x5 array: the second padded beyond the array's rows.
        let chunks: Vec<_> = (0..2)
            .map(|i| Some(stored(&b2nd_chunk([5, 5], [3, 5], [2, 2], i), 1)))
            .collect();
        let nd = Some((&[5i64, 5][..], &[3i32, 5][..], &[2i32, 2][..]));
        let f = frame(&chunks, 48, 24, 1, nd);
        let want: Vec<u8> = (0..5)
            .flat_map(|r| (0..5).map(move |c| (r * 10 + c) as u8))
            .collect();
        assert_eq!(decode(&[], &f, 25).unwrap(), want);
        let one = frame(&chunks[..1], 24, 24, 1, nd);
        assert!(decode(&[], &one, 25).is_err(), "a chunk missing");
        // Blocks equal to the chunk and the array: the chunk is the array.
        let same = frame(
            &[Some(stored(&want, 1))],
            25,
            25,
            1,
            Some((&[5, 5], &[5, 5], &[5, 5])),
        );
        assert_eq!(decode(&[], &same, 25).unwrap(), want);
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
            // Read block by block when `max` is under 48.
            frame(
                &[Some(blocked(&[7; 48], 2, 8, [SHUFFLE, DELTA, 0, 0, 0, 0]))],
                48,
                48,
                2,
                Some((&[3, 5], &[3, 5], &[2, 2])),
            ),
        ];
        let mut rng = crate::test_rng::TestRng::new(0x2026_b105_c2f0_0d5e);
        let mut next = || rng.next();
        for _ in 0..30_000 {
            let mut b = samples[(next() % 4) as usize].clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % b.len();
                b[at] = next() as u8;
            }
            if next() % 4 == 0 {
                b.truncate((next() as usize) % (b.len() + 1));
            }
            let max = (next() % 64) as usize;
            if let Ok(out) = decode(&[], &b, max) {
                assert!(out.len() <= max);
            }
        }
    }
}
