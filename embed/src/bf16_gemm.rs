//! Matrix multiply for a few rows (one or two short queries) with AVX-512 BF16 dot products.
//!
//! The f16 path ([`crate::small_gemm`]) converts each weight to f32 and does one fused multiply-add
//! per weight and row; with a query's dozen rows that arithmetic, not memory, is what a forward pass
//! waits on. `vdpbf16ps` multiplies pairs of bf16 values and adds both products to an f32 lane, so
//! one instruction does the work of two multiply-adds and needs no conversion of the weights. The
//! weights are packed once, at load, into panels of [`NR`] columns holding, for each pair of inner
//! indices, the two weights of every column side by side; the rows of the left operand are rounded
//! to bf16 per call. Sums stay f32.
//!
//! Only for CPUs with AVX-512 BF16 ([`available`]); elsewhere the f16 path runs.

use crate::small_gemm::{row_tiles, split_panels, NR};

/// Whether this CPU runs the bf16 kernel.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A `k × n` row-major f32 matrix packed as bf16 pairs: panel `p` holds columns `p·NR ..`; for each
/// pair of rows `2j, 2j+1` of the matrix it stores, column by column, the two values (the last
/// panel and an odd last row zero-padded).
pub struct PackedBf16 {
    k: usize,
    n: usize,
    /// Row pairs: `k` rounded up to even, halved.
    pairs: usize,
    data: Vec<u16>,
}

/// Rounds to the nearest bf16 (ties to even), as the hardware conversion does.
fn bf16_bits(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}

impl PackedBf16 {
    /// Packs `b` (`k × n`, row-major).
    pub fn pack(b: &[f32], k: usize, n: usize) -> PackedBf16 {
        assert!(b.len() >= k * n, "matrix too short to pack");
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(NR);
        let panel_len = pairs * NR * 2;
        let mut data = vec![0u16; panels * panel_len];
        for (p, panel) in data.chunks_exact_mut(panel_len).enumerate() {
            let c0 = p * NR;
            let width = NR.min(n - c0);
            for (j, dst) in panel.chunks_exact_mut(NR * 2).enumerate() {
                for c in 0..width {
                    for half in 0..2 {
                        let kk = 2 * j + half;
                        if kk < k {
                            dst[2 * c + half] = bf16_bits(b[kk * n + c0 + c]);
                        }
                    }
                }
            }
        }
        PackedBf16 { k, n, pairs, data }
    }

    /// Rows of the unpacked matrix (the inner dimension of a multiply).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns of the unpacked matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    fn panel(&self, p: usize) -> &[u16] {
        let len = self.pairs * NR * 2;
        &self.data[p * len..(p + 1) * len]
    }
}

/// `out[m×n] += a[m×k] · w`, with `a` rounded to bf16. `parallel` > 1 splits the column panels over
/// that many tasks of the current rayon pool. Falls back to a scalar loop (same rounding) on CPUs
/// without AVX-512 BF16, which callers avoid by checking [`available`].
pub fn matmul_acc_bf16(a: &[f32], w: &PackedBf16, out: &mut [f32], m: usize, parallel: usize) {
    let (k, n) = (w.k, w.n);
    assert!(a.len() >= m * k, "matmul lhs too short");
    assert!(out.len() >= m * n, "matmul dst too short");
    if m == 0 || n == 0 {
        return;
    }
    // The left operand as bf16 rows of `2·pairs` values (an odd k padded with a zero).
    let kp = 2 * w.pairs;
    let fast = available();
    let mut a16 = vec![0u16; m * kp];
    for r in 0..m {
        round_row(fast, &a[r * k..(r + 1) * k], &mut a16[r * kp..r * kp + k]);
    }
    split_panels(m, n, parallel, out, &|p, part, ldo, c_base| {
        run_panel(fast, &a16, m, w, p, part, ldo, c_base)
    });
}

/// `dst[i] = bf16(src[i])`; `fast` (from [`available`]) picks the AVX-512 BF16 conversion.
fn round_row(fast: bool, src: &[f32], dst: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    if fast {
        // SAFETY: `fast` means AVX-512F and BF16 were detected; the function reads `src` and
        // writes `dst` up to the shorter of the two.
        unsafe { x86::round_row(src, dst) };
        return;
    }
    let _ = fast;
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = bf16_bits(s);
    }
}

/// Panel `p`'s columns of every row, accumulated into `out` (row stride `ldo`, whose column 0 is
/// matrix column `c_base`).
#[allow(clippy::too_many_arguments)]
fn run_panel(
    fast: bool,
    a16: &[u16],
    m: usize,
    w: &PackedBf16,
    p: usize,
    out: &mut [f32],
    ldo: usize,
    c_base: usize,
) {
    let c0 = p * NR;
    let panel = w.panel(p);
    let kp = 2 * w.pairs;
    row_tiles(
        m,
        NR.min(w.n - c0),
        c0 - c_base,
        ldo,
        out,
        |r0, rows, acc| {
            let a_rows = &a16[r0 * kp..(r0 + rows) * kp];
            assert!(a_rows.len() >= rows * kp && panel.len() >= w.pairs * NR * 2);
            #[cfg(target_arch = "x86_64")]
            if fast {
                // SAFETY: `fast` means AVX-512F + BF16 were detected; the assert above and
                // `acc.len() == rows·NR` bound every index the kernel touches.
                unsafe { x86::tile(a_rows, rows, w.pairs, panel, acc) };
                return;
            }
            let _ = fast;
            tile_scalar(a_rows, rows, w.pairs, panel, acc);
        },
    );
}

fn tile_scalar(a16: &[u16], rows: usize, pairs: usize, panel: &[u16], acc: &mut [f32]) {
    let f = |bits: u16| f32::from_bits(u32::from(bits) << 16);
    let kp = 2 * pairs;
    for j in 0..pairs {
        let wp = &panel[j * NR * 2..(j + 1) * NR * 2];
        for r in 0..rows {
            let (x0, x1) = (f(a16[r * kp + 2 * j]), f(a16[r * kp + 2 * j + 1]));
            for c in 0..NR {
                acc[r * NR + c] += x0 * f(wp[2 * c]) + x1 * f(wp[2 * c + 1]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::NR;
    use std::arch::x86_64::*;

    /// `dst[i] = bf16(src[i])`, 16 at a time.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX-512 BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn round_row(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: i + 16 ≤ n bounds both the load and the store.
            unsafe {
                let v = _mm512_loadu_ps(src.as_ptr().add(i));
                let h: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(v));
                _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, h);
            }
            i += 16;
        }
        for j in i..n {
            dst[j] = super::bf16_bits(src[j]);
        }
    }

    /// `acc[rows × NR] = a[rows × 2·pairs] · panel` (`rows ≤ 8`, `acc` zeroed), through a tile
    /// of exactly `rows` rows so that its accumulators stay in registers.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX-512 BF16; `a` holds `rows × 2·pairs` values,
    /// `panel` `pairs × 2·NR` and `acc` `rows × NR`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn tile(a: &[u16], rows: usize, pairs: usize, panel: &[u16], acc: &mut [f32]) {
        // SAFETY (for every arm): the caller's contract, passed on unchanged.
        unsafe { crate::small_gemm::by_rows!(rows, t(a, pairs, panel, acc)) }
    }

    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn t<const R: usize>(a: &[u16], pairs: usize, panel: &[u16], acc: &mut [f32]) {
        let mut c = [[_mm512_setzero_ps(); 2]; R];
        let kp = 2 * pairs;
        let pa = a.as_ptr() as *const u8;
        let pw = panel.as_ptr();
        for j in 0..pairs {
            // SAFETY: j < pairs, so the 2·NR = 64 values at j·2·NR lie inside `panel`, and the
            // two values at r·kp + 2j (r < R) inside `a`; all loads are unaligned.
            unsafe {
                let w = pw.add(j * NR * 2);
                let w0: __m512bh = std::mem::transmute(_mm512_loadu_si512(w as *const _));
                let w1: __m512bh = std::mem::transmute(_mm512_loadu_si512(w.add(32) as *const _));
                for (r, cr) in c.iter_mut().enumerate() {
                    let pair = (pa.add(2 * (r * kp + 2 * j)) as *const i32).read_unaligned();
                    let x: __m512bh = std::mem::transmute(_mm512_set1_epi32(pair));
                    cr[0] = _mm512_dpbf16_ps(cr[0], x, w0);
                    cr[1] = _mm512_dpbf16_ps(cr[1], x, w1);
                }
            }
        }
        let po = acc.as_mut_ptr();
        for (r, cr) in c.iter().enumerate() {
            // SAFETY: r < R and acc holds R·NR values.
            unsafe {
                _mm512_storeu_ps(po.add(r * NR), cr[0]);
                _mm512_storeu_ps(po.add(r * NR + 16), cr[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::small_gemm::test_cases::{assert_close, odd_shapes, reference};

    fn round(x: f32) -> f32 {
        half::bf16::from_f32(x).to_f32()
    }

    #[test]
    fn kernel_and_fallback_match_the_reference_on_odd_shapes() {
        for c in odd_shapes(5) {
            let (m, k, n) = (c.m, c.k, c.n);
            let want = reference(&c, round, round);
            let w = PackedBf16::pack(&c.b, k, n);
            let kp = 2 * w.pairs;
            let mut a16 = vec![0u16; m * kp];
            for r in 0..m {
                round_row(
                    available(),
                    &c.a[r * k..(r + 1) * k],
                    &mut a16[r * kp..r * kp + k],
                );
            }
            for fast in [false, available()] {
                let mut got = c.init.clone();
                for p in 0..n.div_ceil(NR) {
                    run_panel(fast, &a16, m, &w, p, &mut got, n, 0);
                }
                assert_close(&got, &want, &format!("fast={fast} {m}x{k}x{n}"));
            }
            for parallel in [1, 2, 3] {
                let mut got = c.init.clone();
                matmul_acc_bf16(&c.a, &w, &mut got, m, parallel);
                assert_close(&got, &want, &format!("parallel {parallel} {m}x{k}x{n}"));
            }
        }
    }
}
