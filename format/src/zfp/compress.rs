//! A whole array zfp-encoded: its blocks in raster order (x fastest), each gathered from the array's
//! little-endian values; a block the array's edge cuts is padded as zfp pads it (along each dimension with
//! `n < 4` values: `n = 1` repeats the first, `n = 2` gives `a b b a`, `n = 3` gives `a b c a`).

use super::bitwriter::BitWriter;
use super::encode::{encode_float, encode_int};
use super::{Field, Params, Scalar};
use crate::error::{invalid, Result};

/// Encodes `data`, the little-endian values of array `field`, with parameters `p`: the bare zfp stream, its
/// last byte padded with zeros.
pub(crate) fn compress(p: &Params, field: &Field, data: &[u8]) -> Result<Vec<u8>> {
    if field.bytes() != Some(data.len()) {
        return invalid(format!(
            "zfp array of {:?} {:?} values given {} bytes",
            &field.size[..field.dims as usize],
            field.scalar,
            data.len()
        ));
    }
    if !(1..=4).contains(&field.dims) || field.size.contains(&0) {
        return Ok(Vec::new());
    }
    let dims = field.dims;
    let [nx, ny, nz, nw] = field.size;
    let n = 1usize << (2 * dims);
    let mut w = BitWriter::with_capacity(data.len() / 2);
    let mut raw = [0u64; 256];
    let raw = &mut raw[..n];
    for l in (0..nw).step_by(4) {
        for k in (0..nz).step_by(4) {
            for j in (0..ny).step_by(4) {
                for i in (0..nx).step_by(4) {
                    gather(data, field, [i, j, k, l], raw);
                    encode_raw(&mut w, p, field.scalar, dims, raw);
                }
            }
        }
    }
    Ok(w.finish())
}

/// Encodes one block given as its values' bits.
fn encode_raw(w: &mut BitWriter, p: &Params, scalar: Scalar, dims: u32, raw: &[u64]) {
    match scalar {
        Scalar::I32 => {
            let mut b = [0i32; 256];
            let b = &mut b[..raw.len()];
            for (v, &r) in b.iter_mut().zip(raw) {
                *v = r as u32 as i32;
            }
            encode_int(w, p, dims, b);
        }
        Scalar::I64 => {
            let mut b = [0i64; 256];
            let b = &mut b[..raw.len()];
            for (v, &r) in b.iter_mut().zip(raw) {
                *v = r as i64;
            }
            encode_int(w, p, dims, b);
        }
        Scalar::F32 => {
            let mut b = [0f32; 256];
            let b = &mut b[..raw.len()];
            for (v, &r) in b.iter_mut().zip(raw) {
                *v = f32::from_bits(r as u32);
            }
            encode_float(w, p, dims, b);
        }
        Scalar::F64 => {
            let mut b = [0f64; 256];
            let b = &mut b[..raw.len()];
            for (v, &r) in b.iter_mut().zip(raw) {
                *v = f64::from_bits(r);
            }
            encode_float(w, p, dims, b);
        }
    }
}

/// Where value `i` (0 to 3) of a block's line comes from when the array leaves `n` (1 to 4) values there.
fn padded(n: usize, i: usize) -> usize {
    match (n, i) {
        (_, i) if i < n => i,
        (2, 2) => 1,
        _ => 0,
    }
}

/// Reads the block whose first value is at `at` (x first) into `raw` (x fastest), padding past the edges.
fn gather(data: &[u8], field: &Field, at: [usize; 4], raw: &mut [u64]) {
    let size = field.size;
    let width = field.scalar.size();
    let side = |d: u32| if d < field.dims { 4 } else { 1 };
    let left = |d: usize| size[d].saturating_sub(at[d]).min(4);
    let src = |d: usize, i: usize| at[d] + padded(left(d), i);
    let mut out = raw.iter_mut();
    for l in 0..side(3) {
        for k in 0..side(2) {
            for j in 0..side(1) {
                let row = ((src(3, l) * size[2] + src(2, k)) * size[1] + src(1, j)) * size[0];
                for i in 0..side(0) {
                    let at = (row + src(0, i)) * width;
                    let mut le = [0u8; 8];
                    if let Some(v) = data.get(at..at + width) {
                        le[..width].copy_from_slice(v);
                    }
                    if let Some(o) = out.next() {
                        *o = u64::from_le_bytes(le);
                    }
                }
            }
        }
    }
}
