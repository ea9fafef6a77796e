//! A whole zfp array decoded: its blocks in raster order (x fastest), each block's values inside the array put
//! at their places (little-endian), those a partial block has beyond the array's edges dropped.

use super::bitreader::BitReader;
use super::block::{decode_float, decode_int};
use super::{Field, Params, Scalar};
use crate::error::{corrupt, Result};

/// Decodes the zfp stream `data` of array `field` with parameters `p` into `out`, which must be exactly the
/// array's size in bytes.
pub(crate) fn decompress(p: &Params, field: &Field, data: &[u8], out: &mut [u8]) -> Result<()> {
    if field.bytes() != Some(out.len()) {
        return corrupt(format!(
            "zfp array of {:?} {:?} values where {} bytes are expected",
            &field.size[..field.dims as usize],
            field.scalar,
            out.len()
        ));
    }
    if !(1..=4).contains(&field.dims) || field.size.contains(&0) {
        return Ok(());
    }
    let dims = field.dims;
    let [nx, ny, nz, nw] = field.size;
    let width = field.scalar.size();
    let n = 1usize << (2 * dims);
    let mut r = BitReader::new(data);
    let mut block = [0u64; 256];
    let block = &mut block[..n];
    for w in (0..nw).step_by(4) {
        for z in (0..nz).step_by(4) {
            for y in (0..ny).step_by(4) {
                for x in (0..nx).step_by(4) {
                    match field.scalar {
                        Scalar::I32 => decode_int::<i32>(&mut r, p, dims, block)?,
                        Scalar::I64 => decode_int::<i64>(&mut r, p, dims, block)?,
                        Scalar::F32 => decode_float::<f32>(&mut r, p, dims, block)?,
                        Scalar::F64 => decode_float::<f64>(&mut r, p, dims, block)?,
                    }
                    let at = [x, y, z, w];
                    scatter(block, dims, out, at, field.size, width);
                }
            }
        }
    }
    Ok(())
}

/// Puts a decoded block of `dims` dimensions (values in x-fastest order, 4 along each dimension) whose first
/// value is at `at` into the array `out` of sizes `size`, `width` bytes a value, leaving out what lies beyond
/// the array.
fn scatter(
    block: &[u64],
    dims: u32,
    out: &mut [u8],
    at: [usize; 4],
    size: [usize; 4],
    width: usize,
) {
    let [nx, ny, nz, _] = size;
    let lim = |d: usize| size[d].saturating_sub(at[d]).min(4);
    let side = |d: u32| if d < dims { 4 } else { 1 };
    let (sx, sy, sz) = (side(0), side(1), side(2));
    for l in 0..lim(3) {
        for k in 0..lim(2) {
            for j in 0..lim(1) {
                let row = ((at[3] + l) * nz + at[2] + k) * ny + at[1] + j;
                let start = (row * nx + at[0]) * width;
                let src = ((l * sz + k) * sy + j) * sx;
                let values = block.iter().skip(src).take(lim(0));
                for (to, v) in out[start..].chunks_exact_mut(width).zip(values) {
                    to.copy_from_slice(&v.to_le_bytes()[..width]);
                }
            }
        }
    }
}
