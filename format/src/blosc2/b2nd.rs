//! A b2nd array: its chunks' blocks gathered into the C order of its shape, whole or block by block.
//!
//! The `b2nd` metalayer (msgpack: version, rank, shape as i64s, chunk shape and block shape as i32s,
//! …) makes the frame an n-dimensional array: its chunks cover the shape in C order, each chunk padded up to a
//! multiple of the block shape, its blocks in C order of the block grid and each block in C order; the values
//! are moved back into the C order of the shape (hdf5plugin writes the HDF5 chunk as a b2nd array of one chunk
//! whose blocks may be smaller than it).

use super::chunk::{chunk, chunk_blocks, special};
use super::frame::Piece;
use crate::error::{corrupt, unsupported, Result};

/// The shape of a b2nd array: its dimensions, its chunks' and its blocks'.
pub(super) struct Nd {
    /// The array's dimensions.
    pub(super) shape: Vec<u64>,
    /// Each chunk's dimensions.
    pub(super) chunks: Vec<u64>,
    /// Each block's dimensions.
    pub(super) blocks: Vec<u64>,
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

    /// Chunks along each dimension.
    fn grid(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunks)
            .map(|(&s, &c)| s.div_ceil(c))
            .collect()
    }
}

/// Refuses a b2nd array whose shape differs from the one the filter's client data `cd` give (when they give one).
pub(super) fn check_shape(cd: &[u32], nd: &Nd) -> Result<()> {
    let ndim = nd.shape.len();
    if let Some(&rank) = cd.get(7) {
        let dims = cd.get(8..8 + ndim);
        let same = dims.is_some_and(|d| d.iter().zip(&nd.shape).all(|(&a, &b)| u64::from(a) == b));
        if rank as usize != ndim || !same {
            return corrupt("b2nd array's shape differs from the filter's chunk shape");
        }
    }
    Ok(())
}

/// The element size: a chunk's bytes over its elements (padded to whole blocks), else the frame's element size.
fn item_size(ext_elems: u64, chunk_size: usize, typesize: usize) -> usize {
    match usize::try_from(ext_elems) {
        Ok(e) if e > 0 && chunk_size > 0 && chunk_size.is_multiple_of(e) => chunk_size / e,
        _ => typesize.max(1),
    }
}

/// Gathers a b2nd array (`nchunks` chunks, each found by `locate(i)`) into C order: each chunk decoded whole
/// when padded to no more than `max_out` bytes, else block by block.
pub(super) fn b2nd<'a>(
    cd: &[u32],
    nd: &Nd,
    chunk_size: usize,
    typesize: usize,
    nchunks: usize,
    max_out: usize,
    locate: impl Fn(usize) -> Result<Piece<'a>>,
) -> Result<Vec<u8>> {
    let ndim = nd.shape.len();
    check_shape(cd, nd)?;
    if nd.blocks.iter().zip(&nd.chunks).any(|(b, c)| b > c) {
        return corrupt("b2nd blocks larger than their chunks");
    }
    let ext = nd.ext();
    let prod = |v: &[u64]| v.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
    let too_big = || crate::FormatError::Corrupt("b2nd array larger than the HDF5 chunk".into());
    let ext_elems = prod(&ext).ok_or_else(too_big)?;
    let item = item_size(ext_elems, chunk_size, typesize);
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
    let grid = nd.grid();
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
            Piece::Chunk(c) => chunk(c, chunk_bytes, Some(&nd.blocks))?,
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

/// The first rows of a b2nd array (in chunks of `chunk_size` bytes, `nchunks` of them) that hold its first
/// `want` bytes in C order: the array cut after them, and how many of the frame's first chunks hold them (the
/// first dimension varies slowest). None when the array cannot be cut (a scalar, an inconsistent frame).
pub(super) fn prefix_cut(
    nd: &Nd,
    chunk_size: usize,
    typesize: usize,
    nchunks: usize,
    want: usize,
) -> Option<(Nd, usize)> {
    let ndim = nd.shape.len();
    if ndim == 0 || nd.chunks.len() != ndim || nd.chunks.contains(&0) {
        return None;
    }
    let grid = nd.grid();
    if grid.iter().try_fold(1u64, |a, &b| a.checked_mul(b)) != Some(nchunks as u64) {
        return None;
    }
    let ext_elems = nd.ext().iter().try_fold(1u64, |a, &b| a.checked_mul(b))?;
    let item = item_size(ext_elems, chunk_size, typesize);
    let row_bytes = nd.shape[1..]
        .iter()
        .try_fold(item as u64, |a, &b| a.checked_mul(b))
        .filter(|&r| r > 0)?;
    let rows = (want as u64).div_ceil(row_bytes).min(nd.shape[0]);
    let per_row: u64 = grid[1..].iter().product();
    let kept = rows.div_ceil(nd.chunks[0]).checked_mul(per_row)?;
    let cut = Nd {
        shape: std::iter::once(rows)
            .chain(nd.shape[1..].iter().copied())
            .collect(),
        chunks: nd.chunks.clone(),
        blocks: nd.blocks.clone(),
    };
    Some((cut, usize::try_from(kept).ok()?.min(nchunks)))
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
                let blocks = (block_bytes, Some(&layout.nd.blocks[..]));
                chunk_blocks(c, chunk_bytes, blocks, layout.wanted(&cidx), &mut sink)?
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
pub(super) fn next_index(idx: &mut [u64], dims: &[u64]) -> bool {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

#[cfg(test)]
mod tests {
    use crate::blosc2::chunk::{chunk, chunk_blocks, DELTA, EXT_HEADER, SHUFFLE};
    use crate::blosc2::decode;
    use crate::blosc2::test_util::{b2nd_chunk, b2nd_chunk_at, blocked, ext_chunk, frame, stored};

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
        chunk_blocks(
            &c,
            nbytes,
            (bs, None),
            [0, 7, nblocks - 1].into_iter(),
            |j, b| {
                seen.push((j, b.len(), b.iter().all(|&v| v == 0)));
            },
        )
        .unwrap();
        assert_eq!(
            seen,
            [(0, bs, true), (7, bs, true), (nblocks - 1, bs, true)]
        );
        assert!(chunk_blocks(&c, nbytes, (bs, None), [nblocks].into_iter(), |_, _| {}).is_err());
        let e = chunk_blocks(&c, nbytes, (2 * bs, None), [0].into_iter(), |_, _| {}).unwrap_err();
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
        let decoded = chunk(&c, 48, None).unwrap();
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
}
