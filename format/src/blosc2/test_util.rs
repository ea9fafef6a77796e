//! Hand-built Blosc2 chunks and frames for the tests.

use super::chunk::EXT_HEADER;
use super::frame::FRAME_METALAYERS;

/// A chunk with an extended header: `flags` (0x05 added), `b2flags`, the filter slots and codec id, then
/// `body` (block starts and streams, or stored bytes); the chunk's size is filled in.
pub(super) fn ext_chunk(
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
pub(super) fn stored(bytes: &[u8], typesize: u8) -> Vec<u8> {
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
pub(super) fn frame(
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

/// One block of `streams` (each its size, then its token or bytes), the block's start first.
pub(super) fn block(streams: &[u8]) -> Vec<u8> {
    let mut b = ((EXT_HEADER + 4) as u32).to_le_bytes().to_vec();
    b.extend_from_slice(streams);
    b
}

/// The chunk of a b2nd array of `u8`s `value(row, col)` with chunk shape `c` and block shape `b`, at chunk
/// row `ci`, in block order (padding 0xee).
pub(super) fn b2nd_chunk(shape: [usize; 2], c: [usize; 2], b: [usize; 2], ci: usize) -> Vec<u8> {
    b2nd_chunk_at(shape, c, b, [ci, 0])
}

/// As [`b2nd_chunk`], the chunk at chunk grid index `ci`.
pub(super) fn b2nd_chunk_at(
    shape: [usize; 2],
    c: [usize; 2],
    b: [usize; 2],
    ci: [usize; 2],
) -> Vec<u8> {
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
pub(super) fn blocked(bytes: &[u8], typesize: u8, blocksize: usize, filters: [u8; 6]) -> Vec<u8> {
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
