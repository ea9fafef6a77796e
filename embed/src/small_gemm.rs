//! Matrix multiply for a few rows (one short query: a dozen tokens) against weights packed as f16.
//!
//! With so few rows the work is streaming the weights, not arithmetic: a general GEMM repacks all
//! 42 MB of f32 weights for every call, and after an idle moment they have left the CPU caches. Here
//! each weight matrix is packed once, at load, into f16 panels of [`NR`] columns laid out k-major
//! (21 MB for the model, which fits a 32 MB last-level cache), and each panel is streamed once per call
//! while its column block of every row accumulates in registers. Products and sums are f32; only the
//! weights are rounded to f16, which moves all-MiniLM-L6-v2's embeddings by a cosine of under 1e-6.
//!
//! CPUs with AVX-512 BF16 take [`crate::bf16_gemm`] instead, which halves the arithmetic.

use half::f16;
use rayon::prelude::*;

/// Columns per packed panel: two 512-bit or four 256-bit registers of f32.
pub const NR: usize = 32;

/// A `k × n` row-major f32 matrix packed as f16: panel `p` holds columns `p·NR ..` for every row of k, NR
/// values a row (the last panel zero-padded).
pub struct PackedF16 {
    k: usize,
    n: usize,
    data: Vec<u16>,
}

impl PackedF16 {
    /// Packs `b` (`k × n`, row-major).
    pub fn pack(b: &[f32], k: usize, n: usize) -> PackedF16 {
        assert!(b.len() >= k * n, "matrix too short to pack");
        let panels = n.div_ceil(NR);
        let mut data = vec![0u16; panels * k * NR];
        for (p, panel) in data.chunks_exact_mut(k * NR).enumerate() {
            let c0 = p * NR;
            let width = NR.min(n - c0);
            for (kk, dst) in panel.chunks_exact_mut(NR).enumerate() {
                let src = &b[kk * n + c0..kk * n + c0 + width];
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = f16::from_f32(s).to_bits();
                }
            }
        }
        PackedF16 { k, n, data }
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
        &self.data[p * self.k * NR..(p + 1) * self.k * NR]
    }
}

/// `out[m×n] += a[m×k] · w` for a packed `w`. `parallel` > 1 splits the column panels over that many tasks
/// of the current rayon pool.
pub fn matmul_acc_packed(a: &[f32], w: &PackedF16, out: &mut [f32], m: usize, parallel: usize) {
    let (k, n) = (w.k, w.n);
    assert!(a.len() >= m * k, "matmul lhs too short");
    assert!(out.len() >= m * n, "matmul dst too short");
    if m == 0 || n == 0 {
        return;
    }
    let kernel = Kernel::detect();
    split_panels(m, n, parallel, out, &|p, part, ldo, c_base| {
        run_panel_into(kernel, a, m, k, w, p, part, ldo, c_base)
    });
}

/// Adds one column panel's products into a part of the output: `(panel, part, ldo, c_base)`.
pub(crate) type PanelRun<'a> = dyn Fn(usize, &mut [f32], usize, usize) + Sync + 'a;

/// Runs `run(p, part, ldo, c_base)` for every column panel `p` of an `m × n` product accumulated
/// into `out`: `run` adds panel `p`'s columns into `part` (row stride `ldo`, column 0 = matrix
/// column `c_base`). With `parallel` > 1 the panels are split into that many runs on the current
/// rayon pool, each writing its own columns, which are then added into `out`.
pub(crate) fn split_panels(m: usize, n: usize, parallel: usize, out: &mut [f32], run: &PanelRun) {
    let panels = n.div_ceil(NR);
    let tasks = parallel.clamp(1, panels.max(1));
    if tasks == 1 {
        for p in 0..panels {
            run(p, out, n, 0);
        }
        return;
    }
    let per = panels.div_ceil(tasks);
    let parts: Vec<(usize, Vec<f32>)> = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let (p0, p1) = (t * per, ((t + 1) * per).min(panels));
            let c0 = p0 * NR;
            let width = (p1 * NR).min(n).saturating_sub(c0);
            let mut part = vec![0.0f32; m * width];
            for p in p0..p1 {
                run(p, &mut part, width, c0);
            }
            (c0, part)
        })
        .collect();
    for (c0, part) in parts {
        let width = part.len() / m;
        if width == 0 {
            continue;
        }
        for r in 0..m {
            let dst = &mut out[r * n + c0..r * n + c0 + width];
            for (d, s) in dst.iter_mut().zip(&part[r * width..(r + 1) * width]) {
                *d += s;
            }
        }
    }
}

/// One panel's columns of every row, accumulated into `out` (row stride `n`).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn run_panel(
    kernel: Kernel,
    a: &[f32],
    m: usize,
    k: usize,
    w: &PackedF16,
    p: usize,
    out: &mut [f32],
    n: usize,
) {
    run_panel_into(kernel, a, m, k, w, p, out, n, 0);
}

/// Like [`run_panel`], into `out` whose row stride is `ldo` and whose column 0 is matrix column `c_base`.
#[allow(clippy::too_many_arguments)]
fn run_panel_into(
    kernel: Kernel,
    a: &[f32],
    m: usize,
    k: usize,
    w: &PackedF16,
    p: usize,
    out: &mut [f32],
    ldo: usize,
    c_base: usize,
) {
    let c0 = p * NR;
    let panel = w.panel(p);
    row_tiles(
        m,
        NR.min(w.n - c0),
        c0 - c_base,
        ldo,
        out,
        |r0, rows, acc| kernel.tile(&a[r0 * k..(r0 + rows) * k], rows, k, panel, acc),
    );
}

/// Runs `tile(r0, rows, acc)` for the rows of one panel in tiles of up to [`MR_MAX`] rows (`acc`:
/// `rows × NR`, zeroed), then adds each tile's first `width` columns into `out` from column `col`
/// on (row stride `ldo`).
pub(crate) fn row_tiles(
    m: usize,
    width: usize,
    col: usize,
    ldo: usize,
    out: &mut [f32],
    mut tile: impl FnMut(usize, usize, &mut [f32]),
) {
    let mut acc = [0.0f32; NR * MR_MAX];
    let mut r0 = 0;
    while r0 < m {
        let rows = MR_MAX.min(m - r0);
        let acc = &mut acc[..rows * NR];
        acc.fill(0.0);
        tile(r0, rows, acc);
        for r in 0..rows {
            let dst = &mut out[(r0 + r) * ldo + col..][..width];
            for (d, s) in dst.iter_mut().zip(&acc[r * NR..r * NR + width]) {
                *d += s;
            }
        }
        r0 += rows;
    }
}

/// Rows one register tile covers.
pub(crate) const MR_MAX: usize = 8;

/// `by_rows!(rows, f(args..))` calls `f::<R>(args..)` with the const `R` equal to `rows` (1 to
/// [`MR_MAX`]; more take `MR_MAX`), so that a tile's accumulators are a fixed-size array in registers.
macro_rules! by_rows {
    ($rows:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $rows {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            6 => $f::<6>($($arg),*),
            7 => $f::<7>($($arg),*),
            _ => $f::<8>($($arg),*),
        }
    };
}
pub(crate) use by_rows;

/// Which tile kernel this CPU runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kernel {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Scalar,
}

impl Kernel {
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Kernel::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                return Kernel::Avx2;
            }
        }
        Kernel::Scalar
    }

    /// `acc[rows × NR] = a[rows × k] · panel[k × NR]` (`rows ≤ MR_MAX`, `acc` zeroed).
    fn tile(self, a: &[f32], rows: usize, k: usize, panel: &[u16], acc: &mut [f32]) {
        assert!(rows <= MR_MAX && a.len() >= rows * k && panel.len() >= k * NR);
        assert!(acc.len() >= rows * NR);
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                // SAFETY: the CPU has AVX-512F (checked in `detect`); the asserts above bound every
                // index the kernel reads or writes.
                unsafe { x86::tile_avx512(a, rows, k, panel, acc) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => {
                // SAFETY: the CPU has AVX2, FMA and F16C (checked in `detect`); the asserts above bound
                // every index the kernel reads or writes.
                unsafe { x86::tile_avx2(a, rows, k, panel, acc) }
            }
            Kernel::Scalar => tile_scalar(a, rows, k, panel, acc),
        }
    }
}

fn tile_scalar(a: &[f32], rows: usize, k: usize, panel: &[u16], acc: &mut [f32]) {
    let mut b = [0.0f32; NR];
    for kk in 0..k {
        for (x, &h) in b.iter_mut().zip(&panel[kk * NR..(kk + 1) * NR]) {
            *x = f16::from_bits(h).to_f32();
        }
        for r in 0..rows {
            let x = a[r * k + kk];
            for (o, &y) in acc[r * NR..(r + 1) * NR].iter_mut().zip(&b) {
                *o += x * y;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::NR;
    use std::arch::x86_64::*;

    /// Dispatches to a tile of exactly `rows` rows, so its accumulators stay in registers.
    ///
    /// # Safety
    /// The CPU must support AVX-512F; `a` holds `rows × k`, `panel` `k × NR` and `acc` `rows × NR` values.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn tile_avx512(a: &[f32], rows: usize, k: usize, panel: &[u16], acc: &mut [f32]) {
        // SAFETY (for every arm): the caller's contract, passed on unchanged.
        unsafe { super::by_rows!(rows, t512(a, k, panel, acc)) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn t512<const R: usize>(a: &[f32], k: usize, panel: &[u16], acc: &mut [f32]) {
        let mut c = [[_mm512_setzero_ps(); 2]; R];
        let pa = a.as_ptr();
        let pw = panel.as_ptr();
        for kk in 0..k {
            // SAFETY: kk < k, so the NR = 32 halves at kk·NR lie inside `panel` (k·NR long), and
            // r·k + kk < R·k ≤ a.len(); unaligned loads are used throughout.
            unsafe {
                let w = pw.add(kk * NR);
                let b0 = _mm512_cvtph_ps(_mm256_loadu_si256(w as *const __m256i));
                let b1 = _mm512_cvtph_ps(_mm256_loadu_si256(w.add(16) as *const __m256i));
                for (r, cr) in c.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*pa.add(r * k + kk));
                    cr[0] = _mm512_fmadd_ps(x, b0, cr[0]);
                    cr[1] = _mm512_fmadd_ps(x, b1, cr[1]);
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

    /// Like [`tile_avx512`] on AVX2 + FMA + F16C, two rows at a time (four 256-bit registers a row).
    ///
    /// # Safety
    /// The CPU must support AVX2, FMA and F16C; sizes as for [`tile_avx512`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn tile_avx2(a: &[f32], rows: usize, k: usize, panel: &[u16], acc: &mut [f32]) {
        let mut r0 = 0;
        while r0 < rows {
            let take = 2.min(rows - r0);
            let (ar, cr) = (
                &a[r0 * k..(r0 + take) * k],
                &mut acc[r0 * NR..(r0 + take) * NR],
            );
            // SAFETY: the caller's contract, restricted to rows r0..r0 + take.
            unsafe {
                if take == 2 {
                    t256::<2>(ar, k, panel, cr)
                } else {
                    t256::<1>(ar, k, panel, cr)
                }
            }
            r0 += take;
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn t256<const R: usize>(a: &[f32], k: usize, panel: &[u16], acc: &mut [f32]) {
        let mut c = [[_mm256_setzero_ps(); 4]; R];
        let pa = a.as_ptr();
        let pw = panel.as_ptr();
        for kk in 0..k {
            // SAFETY: as in `t512`: every load lies inside `panel` and `a`.
            unsafe {
                let w = pw.add(kk * NR);
                let b = [
                    _mm256_cvtph_ps(_mm_loadu_si128(w as *const __m128i)),
                    _mm256_cvtph_ps(_mm_loadu_si128(w.add(8) as *const __m128i)),
                    _mm256_cvtph_ps(_mm_loadu_si128(w.add(16) as *const __m128i)),
                    _mm256_cvtph_ps(_mm_loadu_si128(w.add(24) as *const __m128i)),
                ];
                for (r, cr) in c.iter_mut().enumerate() {
                    let x = _mm256_set1_ps(*pa.add(r * k + kk));
                    for (acc_v, &bv) in cr.iter_mut().zip(&b) {
                        *acc_v = _mm256_fmadd_ps(x, bv, *acc_v);
                    }
                }
            }
        }
        let po = acc.as_mut_ptr();
        for (r, cr) in c.iter().enumerate() {
            for (j, v) in cr.iter().enumerate() {
                // SAFETY: r < R and j < 4, so the 8 values at r·NR + 8j lie inside acc (R·NR long).
                unsafe { _mm256_storeu_ps(po.add(r * NR + 8 * j), *v) };
            }
        }
    }
}

/// Shared by this module's and [`crate::bf16_gemm`]'s tests: odd-shaped multiplies and an f64
/// reference.
#[cfg(test)]
pub(crate) mod test_cases {
    /// One `out[m×n] += a[m×k] · b[k×n]` to check, with `out` starting at `init`.
    pub(crate) struct Case {
        pub m: usize,
        pub k: usize,
        pub n: usize,
        pub a: Vec<f32>,
        pub b: Vec<f32>,
        pub init: Vec<f32>,
    }

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    /// Shapes around the tile sizes (rows past 8, columns past 32, odd inner lengths), filled
    /// from `seed`.
    pub(crate) fn odd_shapes(mut seed: u64) -> Vec<Case> {
        let shapes = [
            (1, 1, 1),
            (1, 7, 33),
            (3, 19, 32),
            (8, 64, 64),
            (9, 31, 70),
            (13, 384, 96),
            (17, 5, 100),
            (17, 6, 100),
        ];
        shapes
            .iter()
            .map(|&(m, k, n)| Case {
                m,
                k,
                n,
                a: (0..m * k).map(|_| lcg(&mut seed)).collect(),
                b: (0..k * n).map(|_| lcg(&mut seed)).collect(),
                init: (0..m * n).map(|_| lcg(&mut seed)).collect(),
            })
            .collect()
    }

    /// `init + round_a(a) · round_b(b)`, summed in f64.
    pub(crate) fn reference(
        c: &Case,
        round_a: fn(f32) -> f32,
        round_b: fn(f32) -> f32,
    ) -> Vec<f32> {
        let mut out = c.init.clone();
        for i in 0..c.m {
            for j in 0..c.n {
                let mut s = 0.0f64;
                for kk in 0..c.k {
                    s += f64::from(round_a(c.a[i * c.k + kk]))
                        * f64::from(round_b(c.b[kk * c.n + j]));
                }
                out[i * c.n + j] += s as f32;
            }
        }
        out
    }

    /// Every value within 1e-4 (relative) of the reference.
    pub(crate) fn assert_close(got: &[f32], want: &[f32], what: &str) {
        for (i, (g, e)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
                "{what} at {i}: {g} vs {e}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_cases::{assert_close, odd_shapes, reference};
    use super::*;

    #[test]
    fn every_kernel_matches_the_reference_on_odd_shapes() {
        for c in odd_shapes(3) {
            let (m, k, n) = (c.m, c.k, c.n);
            let want = reference(&c, |x| x, |x| f16::from_f32(x).to_f32());
            let w = PackedF16::pack(&c.b, k, n);
            let mut kernels = vec![Kernel::Scalar];
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    kernels.push(Kernel::Avx512);
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("f16c")
                {
                    kernels.push(Kernel::Avx2);
                }
            }
            for kernel in kernels {
                let mut got = c.init.clone();
                for p in 0..n.div_ceil(NR) {
                    run_panel(kernel, &c.a, m, k, &w, p, &mut got, n);
                }
                assert_close(&got, &want, &format!("{kernel:?} {m}x{k}x{n}"));
            }
            for parallel in [1, 2, 3] {
                let mut got = c.init.clone();
                matmul_acc_packed(&c.a, &w, &mut got, m, parallel);
                assert_close(&got, &want, &format!("parallel {parallel} {m}x{k}x{n}"));
            }
        }
    }
}
