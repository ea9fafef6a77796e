//! Portable reference kernels; every SIMD kernel is tested against these.

use half::f16;

/// Dot product.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    // Four partial sums let the compiler vectorise and keep rounding close to the SIMD kernels.
    let mut s = [0.0f32; 4];
    let n = a.len().min(b.len());
    let (ca, cb) = (a[..n].chunks_exact(4), b[..n].chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for j in 0..4 {
            s[j] += x[j] * y[j];
        }
    }
    let mut t = (s[0] + s[1]) + (s[2] + s[3]);
    for (x, y) in ra.iter().zip(rb) {
        t += x * y;
    }
    t
}

/// Squared Euclidean distance.
pub fn l2_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut s = [0.0f32; 4];
    let n = a.len().min(b.len());
    let (ca, cb) = (a[..n].chunks_exact(4), b[..n].chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for j in 0..4 {
            let d = x[j] - y[j];
            s[j] += d * d;
        }
    }
    let mut t = (s[0] + s[1]) + (s[2] + s[3]);
    for (x, y) in ra.iter().zip(rb) {
        let d = x - y;
        t += d * d;
    }
    t
}

/// Dot product of half-precision vectors, accumulated in f32.
pub fn dot_f16(a: &[f16], b: &[f16]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x.to_f32() * y.to_f32()).sum()
}

/// Squared Euclidean distance of half-precision vectors, accumulated in f32.
pub fn l2_f16(a: &[f16], b: &[f16]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let d = x.to_f32() - y.to_f32();
            d * d
        })
        .sum()
}

/// Dot product of an f32 vector with a half-precision vector, accumulated in f32.
pub fn dot_f32_f16(a: &[f32], b: &[f16]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y.to_f32()).sum()
}

/// Squared Euclidean distance of an f32 vector to a half-precision vector, accumulated in f32.
pub fn l2_f32_f16(a: &[f32], b: &[f16]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let d = x - y.to_f32();
            d * d
        })
        .sum()
}

/// Dot product of int8 vectors (exact in i32 for lengths below 131,000).
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

/// Squared Euclidean distance of int8 vectors (exact in i32 for lengths below 33,000).
pub fn l2_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x as i32 - y as i32;
            d * d
        })
        .sum()
}

/// Dot product of a u8 vector with an i8 vector (exact in i32 for lengths below 66,000).
pub fn dot_u8i8(a: &[u8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

/// [`dot_u8i8`] of four rows with one vector.
pub fn dot_u8i8_x4(rows: [&[u8]; 4], b: &[i8]) -> [i32; 4] {
    rows.map(|a| dot_u8i8(a, b))
}

/// [`dot_u8i8`] of each row `ids` names with one vector, into `out` (same length).
pub fn dot_u8i8_rows(
    rows: super::CodeRows<'_>,
    ids: &[u32],
    b: super::I8Query<'_>,
    out: &mut [i32],
) {
    super::dot_rows_by_four(dot_u8i8_x4, rows, ids, b.codes(), out)
}

/// Quantises `v` to int8 codes stored offset by +128 in `out`, scaled so the largest magnitude maps to 127
/// (rounding to nearest, ties to even); returns the scale (`max / 127`, 0 for a zero or non-finite vector).
#[inline(always)]
pub fn quantize_i8(v: &[f32], out: &mut [u8]) -> f32 {
    use crate::quant::OFFSET;
    // Eight running maxima, so the reduction vectorises.
    let mut lanes = [0.0f32; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for (m, x) in lanes.iter_mut().zip(c) {
            *m = m.max(x.abs());
        }
    }
    let max = chunks
        .remainder()
        .iter()
        .chain(&lanes)
        .fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.iter_mut().for_each(|c| *c = OFFSET as u8);
        return 0.0;
    }
    let inv = 127.0 / max;
    // Rounded to nearest (ties to even) by adding 1.5·2²³, whose unit in the last place is 1, and reading
    // the integer back from the bits: branch-free, so it vectorises (a saturating `as` cast did not). A NaN
    // element codes as 0.
    const MAGIC: f32 = 12_582_912.0;
    const MAGIC_BITS: i32 = 0x4B40_0000;
    for (c, x) in out.iter_mut().zip(v) {
        let y = x * inv;
        let y = if y.is_nan() {
            0.0
        } else {
            y.clamp(-127.0, 127.0)
        };
        *c = ((y + MAGIC).to_bits() as i32 - MAGIC_BITS + OFFSET) as u8;
    }
    max / 127.0
}

/// Sign-code kernel over a list of rows: for each `ids[i]`, `out[i]` is the sum of `levels[b]` over the
/// set bits `b` of that row (0 for a row outside `rows`). `levels` holds at least `64 * rows.words`
/// bytes (see `crate::sign`).
#[inline(always)]
pub fn sign_sums(rows: super::SignRows<'_>, ids: &[u32], levels: &[u8], out: &mut [u32]) {
    for (o, &id) in out.iter_mut().zip(ids) {
        *o = rows.bits(id).map_or(0, |row| {
            row.iter()
                .zip(levels.chunks_exact(64))
                .map(|(&w, lv)| {
                    lv.iter()
                        .enumerate()
                        .map(|(b, &l)| u32::from(l) & 0u32.wrapping_sub(((w >> b) & 1) as u32))
                        .sum::<u32>()
                })
                .sum()
        });
    }
}

/// [`sign_sums`] by bit planes, for kernel sets without a vector popcount: the query's levels are split
/// into planes (bit `b` of plane `p` of word `w` is bit `p` of level `64w + b`), so a row's sum is
/// `Σ_w Σ_p 2^p · popcount(row[w] & plane[w][p])`, one AND and one popcount a word and plane instead of
/// one operation a dimension. The sign pass quantises queries to 4 bits (see `crate::sign`): four
/// planes. Same results as [`sign_sums`].
#[inline(always)]
pub fn sign_sums_planes(rows: super::SignRows<'_>, ids: &[u32], levels: &[u8], out: &mut [u32]) {
    sign_sums_planes_with(rows, ids, levels, out, |_| {})
}

/// [`sign_sums_planes`], calling `fetch` with the first word of the row 8 ids ahead of the one it sums
/// (a place for a prefetch hint; the pointer may lie outside the rows).
#[inline(always)]
pub(crate) fn sign_sums_planes_with(
    rows: super::SignRows<'_>,
    ids: &[u32],
    levels: &[u8],
    out: &mut [u32],
    fetch: impl Fn(*const u64),
) {
    let words = rows.words.min(levels.len() / 64);
    let mut planes = vec![[0u64; 8]; words];
    let mut used = 0u8;
    for (plane, lv) in planes.iter_mut().zip(levels.chunks_exact(64)) {
        // Eight levels at a time: bit `p` of each of their bytes, gathered into one byte by a multiply
        // (the bits sit 8 apart, so the partial products never overlap).
        for (c, eight) in lv.chunks_exact(8).enumerate() {
            let x = u64::from_le_bytes([
                eight[0], eight[1], eight[2], eight[3], eight[4], eight[5], eight[6], eight[7],
            ]);
            used |= eight.iter().fold(0, |a, &l| a | l);
            for (p, bits) in plane.iter_mut().enumerate() {
                let gathered =
                    ((x >> p) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56;
                *bits |= gathered << (8 * c);
            }
        }
    }
    match 8 - used.leading_zeros() {
        0 => out.iter_mut().for_each(|o| *o = 0),
        1 => sign_planes_n::<1>(rows, ids, &planes, out, fetch),
        2 => sign_planes_n::<2>(rows, ids, &planes, out, fetch),
        3 => sign_planes_n::<3>(rows, ids, &planes, out, fetch),
        4 => sign_planes_n::<4>(rows, ids, &planes, out, fetch),
        _ => sign_planes_n::<8>(rows, ids, &planes, out, fetch),
    }
}

/// [`sign_sums_planes`] with the first `NP` planes (the others are zero).
#[inline(always)]
fn sign_planes_n<const NP: usize>(
    rows: super::SignRows<'_>,
    ids: &[u32],
    planes: &[[u64; 8]],
    out: &mut [u32],
    fetch: impl Fn(*const u64),
) {
    const AHEAD: usize = 8;
    for (i, (o, &id)) in out.iter_mut().zip(ids).enumerate() {
        if let Some(&ahead) = ids.get(i + AHEAD) {
            fetch(
                rows.data
                    .as_ptr()
                    .wrapping_add(ahead as usize * rows.stride),
            );
        }
        *o = rows.bits(id).map_or(0, |row| {
            // One count per plane over all the words, weighted once at the end.
            let mut counts = [0u32; NP];
            for (&bits, plane) in row.iter().zip(planes) {
                for (c, &pl) in counts.iter_mut().zip(plane) {
                    *c += (bits & pl).count_ones();
                }
            }
            counts.iter().enumerate().map(|(p, &c)| c << p).sum()
        });
    }
}

/// f16 values widened to f32; `out` must be as long as `v` (checked in debug builds; otherwise the
/// shorter of the two lengths is converted).
pub fn f16_to_f32(v: &[f16], out: &mut [f32]) {
    debug_assert_eq!(v.len(), out.len());
    for (o, x) in out.iter_mut().zip(v) {
        *o = x.to_f32();
    }
}

/// Sign bits of f32 values: bit `i % 64` of `out[i / 64]` is set where `v[i]` is above zero; returns
/// `|v|₁`, the sum of the values' magnitudes. `out` holds `v.len() / 64` words rounded up.
#[inline(always)]
pub fn sign_bits(v: &[f32], out: &mut [u64]) -> f32 {
    let mut l1 = 0.0f32;
    for (w, chunk) in out.iter_mut().zip(v.chunks(64)) {
        let mut bits = 0u64;
        for (b, &x) in chunk.iter().enumerate() {
            bits |= u64::from(x > 0.0) << b;
            l1 += x.abs();
        }
        *w = bits;
    }
    l1
}
