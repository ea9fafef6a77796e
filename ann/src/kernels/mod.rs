//! Distance kernels over f32, f16 and i8, picked once at run time for the running CPU:
//! AVX-512 (F+BW) or AVX2+FMA+F16C on x86-64, NEON on aarch64, portable scalar code otherwise.
//!
//! All functions take equal-length slices; if the lengths differ only the common prefix is used.

use half::f16;
use std::sync::OnceLock;

pub mod scalar;

#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Sign-code rows as the kernels read them: rows of `stride` words in `data`, the first `words` of each
/// row its sign bits (see `crate::sign`).
#[derive(Debug, Clone, Copy)]
pub struct SignRows<'a> {
    /// The rows, back to back.
    pub data: &'a [u64],
    /// Words per row.
    pub stride: usize,
    /// Sign-bit words at the start of each row.
    pub words: usize,
}

impl<'a> SignRows<'a> {
    /// The sign bits of row `id`, if it lies within `data`.
    #[inline]
    pub fn bits(&self, id: u32) -> Option<&'a [u64]> {
        let start = id as usize * self.stride;
        self.data.get(start..start + self.words)
    }
}

/// Signature of [`scalar::sign_sums`]: rows, ids, levels, out.
pub type SignSums = fn(SignRows<'_>, &[u32], &[u8], &mut [u32]);

/// Offset int8 code rows as the kernels read them: row `id` is the `dim` bytes at `id * stride` in `data`.
#[derive(Debug, Clone, Copy)]
pub struct CodeRows<'a> {
    /// The rows, back to back.
    pub data: &'a [u8],
    /// Bytes from one row to the next.
    pub stride: usize,
    /// Bytes of each row that hold codes.
    pub dim: usize,
}

impl<'a> CodeRows<'a> {
    /// The codes of row `id`; panics if the row lies outside `data` (ids come from the index that holds it).
    #[inline]
    pub fn row(&self, id: u32) -> &'a [u8] {
        let start = id as usize * self.stride;
        &self.data[start..start + self.dim]
    }
}

/// An i8 vector as [`KernelSet::dot_u8i8_rows`] takes it: its codes, with `128 * sum(codes)` and whether
/// every code lies in [-127, 127] worked out once (kernels that score rows by their sign use both).
#[derive(Debug, Clone, Copy)]
pub struct I8Query<'a> {
    codes: &'a [i8],
    offset_sum: i32,
    in_range: bool,
}

impl<'a> I8Query<'a> {
    /// The vector `codes`, its sum and range worked out here.
    pub fn new(codes: &'a [i8]) -> Self {
        let sum = codes.iter().fold(0i32, |s, &c| s.wrapping_add(c as i32));
        Self {
            codes,
            offset_sum: sum.wrapping_mul(128),
            in_range: !codes.contains(&i8::MIN),
        }
    }

    /// The vector with `offset_sum` (`128 * sum(codes)`, wrapping) and `in_range` (no code is -128) as the
    /// caller worked them out for these codes.
    pub(crate) fn with_known(codes: &'a [i8], offset_sum: i32, in_range: bool) -> Self {
        debug_assert_eq!((offset_sum, in_range), {
            let q = Self::new(codes);
            (q.offset_sum, q.in_range)
        });
        Self {
            codes,
            offset_sum,
            in_range,
        }
    }

    /// The codes.
    pub fn codes(&self) -> &'a [i8] {
        self.codes
    }

    /// `128 * sum(codes)` (wrapping in i32).
    pub fn offset_sum(&self) -> i32 {
        self.offset_sum
    }

    /// Whether every code lies in [-127, 127].
    pub fn in_range(&self) -> bool {
        self.in_range
    }
}

/// Signature of [`scalar::dot_u8i8_rows`]: rows, ids, the vector, out.
pub type DotRows = fn(CodeRows<'_>, &[u32], I8Query<'_>, &mut [i32]);

/// [`KernelSet::dot_u8i8_rows`] through a four-row kernel: each group of four ids in one call (a short last
/// group repeats its last id and keeps only its own results).
#[inline]
pub fn dot_rows_by_four(
    x4: impl Fn([&[u8]; 4], &[i8]) -> [i32; 4],
    rows: CodeRows<'_>,
    ids: &[u32],
    b: &[i8],
    out: &mut [i32],
) {
    for (group, o) in ids.chunks(4).zip(out.chunks_mut(4)) {
        let row = |j: usize| rows.row(group[j.min(group.len() - 1)]);
        let d = x4([row(0), row(1), row(2), row(3)], b);
        o.copy_from_slice(&d[..o.len()]);
    }
}

/// One implementation of every kernel (function pointers, so dispatch costs one indirect call).
#[derive(Clone, Copy)]
pub struct KernelSet {
    /// Name of the instruction set ("avx512", "avx2+fma", "neon", "scalar").
    pub name: &'static str,
    /// Dot product of f32 vectors.
    pub dot_f32: fn(&[f32], &[f32]) -> f32,
    /// Squared L2 distance of f32 vectors.
    pub l2_f32: fn(&[f32], &[f32]) -> f32,
    /// Dot product of f16 vectors (f32 accumulation).
    pub dot_f16: fn(&[f16], &[f16]) -> f32,
    /// Squared L2 distance of f16 vectors (f32 accumulation).
    pub l2_f16: fn(&[f16], &[f16]) -> f32,
    /// Dot product of an f32 vector with an f16 vector (f32 accumulation).
    pub dot_f32_f16: fn(&[f32], &[f16]) -> f32,
    /// Squared L2 distance of an f32 vector to an f16 vector (f32 accumulation).
    pub l2_f32_f16: fn(&[f32], &[f16]) -> f32,
    /// Dot product of i8 vectors (exact i32).
    pub dot_i8: fn(&[i8], &[i8]) -> i32,
    /// Squared L2 distance of i8 vectors (exact i32).
    pub l2_i8: fn(&[i8], &[i8]) -> i32,
    /// Dot product of a u8 vector with an i8 vector (exact i32; VNNI `vpdpbusd` where available).
    pub dot_u8i8: fn(&[u8], &[i8]) -> i32,
    /// [`KernelSet::dot_u8i8`] of four u8 rows with one i8 vector (one pass over the vector: VNNI and
    /// AVX2 sets interleave the four rows, others call the one-row kernel four times).
    pub dot_u8i8_x4: fn([&[u8]; 4], &[i8]) -> [i32; 4],
    /// [`KernelSet::dot_u8i8`] of the rows `ids` names (in `out`, same length) with one i8 vector, in one
    /// call: the per-call cost of dispatch is paid once for the whole list.
    pub dot_u8i8_rows: DotRows,
    /// int8 quantisation of an f32 vector (see [`scalar::quantize_i8`]): codes into the slice, scale returned.
    pub quantize_i8: fn(&[f32], &mut [u8]) -> f32,
    /// Sign-code rows against a query's byte levels (see [`scalar::sign_sums`]).
    pub sign_sums: SignSums,
    /// Whether `sign_sums` counts bit planes with a vector popcount (AVX-512 VPOPCNTDQ): a fraction of
    /// the time a row of the other kernels, which the search planner costs sign-code passes by.
    pub sign_planes: bool,
    /// Sign bits and magnitude sum of f32 values (see [`scalar::sign_bits`]).
    pub sign_bits: fn(&[f32], &mut [u64]) -> f32,
    /// f16 values widened to f32 (`out` as long as the input; see [`scalar::f16_to_f32`]).
    pub f16_to_f32: fn(&[f16], &mut [f32]),
}

impl std::fmt::Debug for KernelSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelSet({})", self.name)
    }
}

/// The portable scalar kernel set.
pub fn scalar_set() -> KernelSet {
    KernelSet {
        name: "scalar",
        dot_f32: scalar::dot_f32,
        l2_f32: scalar::l2_f32,
        dot_f16: scalar::dot_f16,
        l2_f16: scalar::l2_f16,
        dot_f32_f16: scalar::dot_f32_f16,
        l2_f32_f16: scalar::l2_f32_f16,
        dot_i8: scalar::dot_i8,
        l2_i8: scalar::l2_i8,
        dot_u8i8: scalar::dot_u8i8,
        dot_u8i8_x4: scalar::dot_u8i8_x4,
        dot_u8i8_rows: scalar::dot_u8i8_rows,
        quantize_i8: scalar::quantize_i8,
        sign_sums: scalar::sign_sums_planes,
        sign_planes: false,
        sign_bits: scalar::sign_bits,
        f16_to_f32: scalar::f16_to_f32,
    }
}

/// Every kernel set the running CPU supports, best first (the last is always scalar).
pub fn available() -> Vec<KernelSet> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        v.extend(x86::avx512_vnni_set());
        v.extend(x86::avx512_set());
        v.extend(x86::avx2_set());
    }
    #[cfg(target_arch = "aarch64")]
    v.extend(neon::neon_set());
    v.push(scalar_set());
    v
}

static ACTIVE: OnceLock<KernelSet> = OnceLock::new();

/// The kernel set used by the free functions below (the best available; set
/// `CLAWHDF5_ANN_KERNELS=avx2+fma|scalar|...` to force another one, e.g. for benchmarks).
pub fn active() -> &'static KernelSet {
    ACTIVE.get_or_init(|| {
        let all = available();
        if let Ok(want) = std::env::var("CLAWHDF5_ANN_KERNELS") {
            if let Some(k) = all.iter().find(|k| k.name == want) {
                return *k;
            }
        }
        all[0]
    })
}

/// int8 quantisation of `v` into `out` (codes offset by +128); returns the scale.
#[inline]
pub fn quantize_i8(v: &[f32], out: &mut [u8]) -> f32 {
    (active().quantize_i8)(v, out)
}

/// Dot product of f32 vectors.
#[inline]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    (active().dot_f32)(a, b)
}

/// Squared L2 distance of f32 vectors.
#[inline]
pub fn l2_f32(a: &[f32], b: &[f32]) -> f32 {
    (active().l2_f32)(a, b)
}

/// Dot product of f16 vectors.
#[inline]
pub fn dot_f16(a: &[f16], b: &[f16]) -> f32 {
    (active().dot_f16)(a, b)
}

/// Squared L2 distance of f16 vectors.
#[inline]
pub fn l2_f16(a: &[f16], b: &[f16]) -> f32 {
    (active().l2_f16)(a, b)
}

/// Dot product of an f32 vector with an f16 vector.
#[inline]
pub fn dot_f32_f16(a: &[f32], b: &[f16]) -> f32 {
    (active().dot_f32_f16)(a, b)
}

/// Squared L2 distance of an f32 vector to an f16 vector.
#[inline]
pub fn l2_f32_f16(a: &[f32], b: &[f16]) -> f32 {
    (active().l2_f32_f16)(a, b)
}

/// Dot product of i8 vectors.
#[inline]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    (active().dot_i8)(a, b)
}

/// Squared L2 distance of i8 vectors.
#[inline]
pub fn l2_i8(a: &[i8], b: &[i8]) -> i32 {
    (active().l2_i8)(a, b)
}

/// Dot product of a u8 vector with an i8 vector.
#[inline]
pub fn dot_u8i8(a: &[u8], b: &[i8]) -> i32 {
    (active().dot_u8i8)(a, b)
}

/// Dot products of four u8 rows with one i8 vector.
#[inline]
pub fn dot_u8i8_x4(rows: [&[u8]; 4], b: &[i8]) -> [i32; 4] {
    (active().dot_u8i8_x4)(rows, b)
}

/// [`KernelSet::dot_u8i8_rows`] of the active set.
#[inline]
pub fn dot_u8i8_rows(rows: CodeRows<'_>, ids: &[u32], b: I8Query<'_>, out: &mut [i32]) {
    (active().dot_u8i8_rows)(rows, ids, b, out)
}

/// Sign-code rows against a query's byte levels (see [`scalar::sign_sums`]).
#[inline]
pub fn sign_sums(rows: SignRows<'_>, ids: &[u32], levels: &[u8], out: &mut [u32]) {
    (active().sign_sums)(rows, ids, levels, out)
}

/// Sign bits and magnitude sum of f32 values (see [`scalar::sign_bits`]).
#[inline]
pub fn sign_bits(v: &[f32], out: &mut [u64]) -> f32 {
    (active().sign_bits)(v, out)
}

/// f16 values widened to f32; `out` must be as long as `v`.
#[inline]
pub fn f16_to_f32(v: &[f16], out: &mut [f32]) {
    (active().f16_to_f32)(v, out)
}

/// Hints the CPU to fetch the memory at `p` (no-op where no stable prefetch intrinsic exists).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    x86::prefetch(p);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn close(a: f32, b: f32, scale: f32) -> bool {
        (a - b).abs() <= 1e-4 * scale.max(1.0)
    }

    #[test]
    fn every_set_matches_scalar_on_odd_lengths() {
        let mut rng = SplitMix64::new(99);
        let s = scalar_set();
        let sets = available();
        assert!(sets.len() >= 2 || cfg!(not(any(target_arch = "x86_64", target_arch = "aarch64"))));
        let mut lens: Vec<usize> = (0..40).map(|_| 1 + 2 * rng.below(600) as usize).collect();
        lens.extend([1, 3, 7, 15, 17, 31, 33, 63, 65, 383, 385, 1023]);
        for k in &sets {
            for &n in &lens {
                let a: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
                let b: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
                let scale: f32 = a
                    .iter()
                    .zip(&b)
                    .map(|(x, y)| (x * y).abs() + (x - y) * (x - y))
                    .sum();
                assert!(
                    close((k.dot_f32)(&a, &b), (s.dot_f32)(&a, &b), scale),
                    "{} dot_f32 n={n}",
                    k.name
                );
                assert!(
                    close((k.l2_f32)(&a, &b), (s.l2_f32)(&a, &b), scale),
                    "{} l2_f32 n={n}",
                    k.name
                );
                let (mut qa, mut qs) = (vec![0u8; n], vec![0u8; n]);
                assert_eq!(
                    (k.quantize_i8)(&a, &mut qa),
                    (s.quantize_i8)(&a, &mut qs),
                    "{} quantize_i8 scale n={n}",
                    k.name
                );
                assert_eq!(qa, qs, "{} quantize_i8 codes n={n}", k.name);
                let ha: Vec<f16> = a.iter().map(|&x| f16::from_f32(x)).collect();
                let hb: Vec<f16> = b.iter().map(|&x| f16::from_f32(x)).collect();
                assert!(
                    close((k.dot_f16)(&ha, &hb), (s.dot_f16)(&ha, &hb), scale),
                    "{} dot_f16 n={n}",
                    k.name
                );
                assert!(
                    close((k.l2_f16)(&ha, &hb), (s.l2_f16)(&ha, &hb), scale),
                    "{} l2_f16 n={n}",
                    k.name
                );
                assert!(
                    close((k.dot_f32_f16)(&a, &hb), (s.dot_f32_f16)(&a, &hb), scale),
                    "{} dot_f32_f16 n={n}",
                    k.name
                );
                assert!(
                    close((k.l2_f32_f16)(&a, &hb), (s.l2_f32_f16)(&a, &hb), scale),
                    "{} l2_f32_f16 n={n}",
                    k.name
                );
                let ia: Vec<i8> = (0..n)
                    .map(|_| (rng.below(256) as i32 - 128) as i8)
                    .collect();
                let ib: Vec<i8> = (0..n)
                    .map(|_| (rng.below(256) as i32 - 128) as i8)
                    .collect();
                assert_eq!(
                    (k.dot_i8)(&ia, &ib),
                    (s.dot_i8)(&ia, &ib),
                    "{} dot_i8 n={n}",
                    k.name
                );
                assert_eq!(
                    (k.l2_i8)(&ia, &ib),
                    (s.l2_i8)(&ia, &ib),
                    "{} l2_i8 n={n}",
                    k.name
                );
                let ua: Vec<u8> = ia.iter().map(|&x| (x as i32 + 128) as u8).collect();
                assert_eq!(
                    (k.dot_u8i8)(&ua, &ib),
                    (s.dot_u8i8)(&ua, &ib),
                    "{} dot_u8i8 n={n}",
                    k.name
                );
                let rows: Vec<Vec<u8>> = (0..4)
                    .map(|_| (0..n).map(|_| rng.below(256) as u8).collect())
                    .collect();
                let four = [&rows[0][..], &rows[1][..], &rows[2][..], &rows[3][..]];
                assert_eq!(
                    (k.dot_u8i8_x4)(four, &ib),
                    (s.dot_u8i8_x4)(four, &ib),
                    "{} dot_u8i8_x4 n={n}",
                    k.name
                );
                assert_eq!(
                    (s.dot_u8i8_x4)(four, &ib),
                    four.map(|r| (s.dot_u8i8)(r, &ib)),
                    "scalar dot_u8i8_x4 n={n}"
                );
                // Query codes as `quantize_into` makes them (no -128), which some kernels take a
                // faster way, and codes of the whole range.
                let qb: Vec<i8> = (0..n)
                    .map(|_| (rng.below(255) as i32 - 127) as i8)
                    .collect();
                assert_eq!(
                    (k.dot_u8i8_x4)(four, &qb),
                    (s.dot_u8i8_x4)(four, &qb),
                    "{} dot_u8i8_x4, codes in [-127, 127], n={n}",
                    k.name
                );
                // Rows `n` bytes long at a stride of a cache line or more, listed in any order, some
                // twice, in lists of every length around the kernels' groups of four.
                let stride = n.next_multiple_of(64).max(64);
                let table: Vec<u8> = (0..9 * stride).map(|_| rng.below(256) as u8).collect();
                let code_rows = CodeRows {
                    data: &table,
                    stride,
                    dim: n,
                };
                for len in 0..=11usize {
                    let ids: Vec<u32> = (0..len).map(|_| rng.below(9) as u32).collect();
                    for b in [&ib, &qb] {
                        let mut got = vec![7i32; len];
                        (k.dot_u8i8_rows)(code_rows, &ids, I8Query::new(b), &mut got);
                        let want: Vec<i32> = ids
                            .iter()
                            .map(|&id| (s.dot_u8i8)(code_rows.row(id), b))
                            .collect();
                        assert_eq!(got, want, "{} dot_u8i8_rows n={n} ids {ids:?}", k.name);
                    }
                }
            }
            // Extremes: -128 * -128 and 127 - (-128) must not overflow the i16 lanes.
            let lo = vec![-128i8; 333];
            let hi = vec![127i8; 333];
            assert_eq!((k.dot_i8)(&lo, &lo), 333 * 16384, "{}", k.name);
            assert_eq!(
                (k.dot_u8i8)(&[255u8; 333], &lo),
                -333 * 255 * 128,
                "{}",
                k.name
            );
            assert_eq!(
                (k.dot_u8i8_x4)(
                    [&[255u8; 333], &[0u8; 333], &[255u8; 333], &[1u8; 333]],
                    &lo
                ),
                [-333 * 255 * 128, 0, -333 * 255 * 128, -333 * 128],
                "{}",
                k.name
            );
            // The largest pairs the faster u8-by-i8 path meets: rows of 0 and 255 against -127 and
            // 127 (a row of 0 is -128 once the offset is removed).
            let low = vec![-127i8; 333];
            assert_eq!(
                (k.dot_u8i8_x4)(
                    [&[0u8; 333], &[255u8; 333], &[0u8; 333], &[128u8; 333]],
                    &low
                ),
                [0, -333 * 255 * 127, 0, -333 * 128 * 127],
                "{}",
                k.name
            );
            assert_eq!(
                (k.dot_u8i8_x4)([&[0u8; 333], &[255u8; 333], &[1u8; 333], &[0u8; 333]], &hi),
                [0, 333 * 255 * 127, 333 * 127, 0],
                "{}",
                k.name
            );
            assert_eq!((k.l2_i8)(&lo, &hi), 333 * 255 * 255, "{}", k.name);
            assert_eq!((k.dot_f32)(&[], &[]), 0.0);
            for words in [0usize, 1, 5, 6, 7, 8, 9, 17] {
                // Rows of `words + 2` words (bits, then two words the kernel must ignore), some
                // ids past the end (their sums are 0), lists of every length around the kernels'
                // pairs.
                let stride = words + 2;
                let rows: Vec<u64> = (0..9 * stride).map(|_| rng.next_u64()).collect();
                // Levels of 8 bits, 4 (as the sign pass makes them), 3, 1 and none.
                let top = [256, 16, 5, 2, 1][words % 5];
                let levels: Vec<u8> = (0..64 * words).map(|_| rng.below(top) as u8).collect();
                let naive = |id: u32| -> u32 {
                    if (id as usize + 1) * stride > rows.len() {
                        return 0;
                    }
                    let row = &rows[id as usize * stride..];
                    (0..words * 64)
                        .map(|b| ((row[b / 64] >> (b % 64)) & 1) as u32 * u32::from(levels[b]))
                        .sum()
                };
                for n in 0..12 {
                    let ids: Vec<u32> = (0..n).map(|_| rng.below(11) as u32).collect();
                    let mut got = vec![7u32; n];
                    let at = SignRows {
                        data: &rows,
                        stride,
                        words,
                    };
                    (k.sign_sums)(at, &ids, &levels, &mut got);
                    let want: Vec<u32> = ids.iter().map(|&id| naive(id)).collect();
                    assert_eq!(got, want, "{} sign_sums words={words} n={n}", k.name);
                }
                let ones = vec![!0u64; stride];
                let high = vec![255u8; 64 * words];
                let mut got = [0u32; 3];
                let all = SignRows {
                    data: &ones,
                    stride,
                    words,
                };
                (k.sign_sums)(all, &[0, 0, 0], &high, &mut got);
                assert_eq!(got, [255 * 64 * words as u32; 3], "{}", k.name);
                for len in [64 * words, (64 * words).saturating_sub(13)] {
                    // Levels as values around zero, with exact zeros and negative zeros (no bit).
                    let mut v: Vec<f32> = levels[..len].iter().map(|&l| l as f32 - 127.5).collect();
                    v.iter_mut().step_by(7).for_each(|x| *x = 0.0);
                    v.iter_mut().skip(3).step_by(11).for_each(|x| *x = -0.0);
                    let (mut got, mut want) = (vec![0u64; words], vec![0u64; words]);
                    let l1 = (k.sign_bits)(&v, &mut got);
                    let want_l1 = (s.sign_bits)(&v, &mut want);
                    assert_eq!(got, want, "{} sign_bits len={len}", k.name);
                    let naive_l1: f64 = v.iter().map(|x| f64::from(x.abs())).sum();
                    for x in [l1, want_l1] {
                        assert!((f64::from(x) - naive_l1).abs() < 1e-4 * naive_l1.max(1.0));
                    }
                }
            }
        }
    }

    #[test]
    fn every_set_widens_f16_like_scalar() {
        let s = scalar_set();
        let mut rng = crate::rng::SplitMix64::new(11);
        // Every bit pattern of a half once (subnormals, infinities, NaNs, signed zeros), then random
        // values at odd lengths.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for k in available() {
            let (mut got, mut want) = (vec![0f32; all.len()], vec![0f32; all.len()]);
            (k.f16_to_f32)(&all, &mut got);
            (s.f16_to_f32)(&all, &mut want);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.to_bits(), w.to_bits(), "{} f16 bits {i:#06x}", k.name);
            }
            for len in [0, 1, 7, 8, 9, 15, 17, 383, 384, 385] {
                let v: Vec<f16> = (0..len)
                    .map(|_| f16::from_f32((rng.next_f64() * 8.0 - 4.0) as f32))
                    .collect();
                let (mut got, mut want) = (vec![1f32; len], vec![2f32; len]);
                (k.f16_to_f32)(&v, &mut got);
                (s.f16_to_f32)(&v, &mut want);
                assert_eq!(got, want, "{} f16_to_f32 len={len}", k.name);
            }
        }
    }

    #[test]
    fn free_functions_use_active_set() {
        let a = [1.0f32, 2.0, 3.0];
        assert_eq!(dot_f32(&a, &a), 14.0);
        assert_eq!(l2_f32(&a, &[0.0; 3]), 14.0);
        assert_eq!(dot_i8(&[1, 2, 3], &[1, 2, 3]), 14);
        assert_eq!(l2_i8(&[1, 2, 3], &[0, 0, 0]), 14);
        let h: Vec<f16> = a.iter().map(|&x| f16::from_f32(x)).collect();
        assert_eq!(dot_f16(&h, &h), 14.0);
        assert_eq!(l2_f16(&h, &h), 0.0);
        assert_eq!(dot_f32_f16(&a, &h), 14.0);
        assert_eq!(l2_f32_f16(&a, &h), 0.0);
        assert!(!active().name.is_empty());
    }
}
