//! Numeric kernels of the BERT forward pass: matrix multiply (via the `gemm` crate), layer norm,
//! exact-erf GELU, softmax and small dot products. All operate on row-major `f32` slices.

use std::sync::OnceLock;

/// True when the CPU has AVX2 and FMA (checked once).
fn has_avx2_fma() -> bool {
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Defines a kernel whose body is compiled twice: once for the baseline target and once with
/// AVX2+FMA enabled (so the plain loops in it are auto-vectorised 8 lanes wide); the AVX2 copy
/// is chosen at run time when the CPU supports it. Helpers called from the body must be
/// `#[inline(always)]` so that they are compiled into both copies.
macro_rules! simd_kernel {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        #[inline(never)]
        pub fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($arg: $ty),*) {
                    body($($arg),*)
                }
                if has_avx2_fma() {
                    // SAFETY: `avx2` only differs from `body` in being compiled for AVX2+FMA,
                    // and the CPU was checked to support both.
                    unsafe { avx2($($arg),*) };
                    return;
                }
            }
            body($($arg),*)
        }
    };
}

/// `out[m×n] += a[m×k] · b[k×n]` (row-major, contiguous). `out` usually holds a bias or residual
/// already, so bias addition and residual connections are fused into the multiply.
///
/// `parallel` > 1 lets the gemm crate split the work over that many threads of the current rayon pool.
pub fn matmul_acc(
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
    m: usize,
    k: usize,
    n: usize,
    parallel: usize,
) {
    assert!(a.len() >= m * k, "matmul lhs too short");
    assert!(b.len() >= k * n, "matmul rhs too short");
    assert!(out.len() >= m * n, "matmul dst too short");
    if m == 0 || n == 0 {
        return;
    }
    let par = if parallel > 1 {
        gemm::Parallelism::Rayon(parallel)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: the asserts above guarantee that every element addressed by (m, n, k) with the given
    // row-major strides lies inside the three slices; `out` is a unique borrow that does not alias
    // `a` or `b`. The gemm crate's SIMD kernels only touch those elements.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            true,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            1.0f32,
            1.0f32,
            false,
            false,
            false,
            par,
        );
    }
}

/// Fills every row of `out` (width `bias.len()`) with `bias`.
pub fn fill_rows(out: &mut [f32], bias: &[f32]) {
    for row in out.chunks_exact_mut(bias.len()) {
        row.copy_from_slice(bias);
    }
}

/// Adds `bias` to every row of `out` (width `bias.len()`).
pub fn add_rows(out: &mut [f32], bias: &[f32]) {
    for row in out.chunks_exact_mut(bias.len()) {
        for (o, b) in row.iter_mut().zip(bias) {
            *o += b;
        }
    }
}

simd_kernel! {
/// In-place layer normalisation of each row (width `gamma.len()`), as `torch.nn.LayerNorm`.
pub fn layer_norm_rows(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    for row in x.chunks_exact_mut(width) {
        let mean = sum(row) / width as f32;
        let mut var = 0.0f32;
        let mut acc = [0.0f32; 8];
        let chunks = row.chunks_exact(8);
        let tail = chunks.remainder();
        for c in chunks {
            for i in 0..8 {
                let d = c[i] - mean;
                acc[i] += d * d;
            }
        }
        for v in tail {
            var += (v - mean) * (v - mean);
        }
        var += acc.iter().sum::<f32>();
        let inv = 1.0 / (var / width as f32 + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}
}

#[inline(always)]
fn sum(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Dot product of two equally long slices, accumulated in 8 lanes (vectorises well).
#[cfg(test)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// In-place softmax of one row.
#[inline(always)]
pub fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for v in row.iter_mut() {
        *v = exp_nonpositive(*v - max);
    }
    let total = sum(row);
    let inv = 1.0 / total;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// `e^x` for `x <= 0` (relative error about 2e-7; results below 1e-38 flush to 0). Branch-free so
/// softmax loops vectorise: `x = n·ln2 + r` with `|r| <= ln2/2`, a degree-6 polynomial for `e^r`,
/// and `2^n` built in the exponent bits.
#[inline(always)]
pub fn exp_nonpositive(x: f32) -> f32 {
    let x = x.clamp(-87.0, 0.0);
    let n = (x * std::f32::consts::LOG2_E).round();
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let mut p = 1.0f32 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

/// The error function, as a rational approximation accurate to about 1e-7 (float rounding) on all
/// of ℝ; inputs beyond ±4 saturate at ±1 as in single precision. Branch-free so loops vectorise.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 - 2.101_024e-6;
    p = p * x2 - 5.692_506_4e-5;
    p = p * x2 - 7.349_906_3e-4;
    p = p * x2 - 2.954_6e-3;
    p = p * x2 - 1.609_603_3e-2;
    let mut q = -1.456_607_2e-5f32;
    q = q * x2 - 2.133_740_6e-4;
    q = q * x2 - 1.682_827e-3;
    q = q * x2 - 7.373_329_2e-3;
    q = q * x2 - 1.426_473_9e-2;
    x * p / q
}

simd_kernel! {
/// In-place exact (erf-based) GELU, as BERT's `hidden_act = "gelu"`.
pub fn gelu_inplace(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}
}

/// A read-only matrix view: element `(r, c)` is `data[r * rs + c * cs]`.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// Backing storage.
    pub data: &'a [f32],
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Distance between rows.
    pub rs: usize,
    /// Distance between columns.
    pub cs: usize,
}

/// Number of elements from the first to the last element of a `rows × cols` strided matrix.
fn span(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * rs + (cols - 1) * cs + 1
    }
}

/// `out = scale · a · b` for strided views; `out` is written with row stride `out_rs` and column
/// stride 1 (elements in between are left alone).
pub fn matmul_view(a: View, b: View, scale: f32, out: &mut [f32], out_rs: usize) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(k, b.rows, "matmul inner dimensions differ");
    assert!(
        a.data.len() >= span(m, k, a.rs, a.cs),
        "matmul lhs view out of bounds"
    );
    assert!(
        b.data.len() >= span(k, n, b.rs, b.cs),
        "matmul rhs view out of bounds"
    );
    assert!(
        out.len() >= span(m, n, out_rs, 1),
        "matmul dst view out of bounds"
    );
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: the asserts above keep every addressed element inside its slice; `out` is a unique
    // borrow disjoint from `a` and `b`. With read_dst = false the kernel only writes `out`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            out_rs as isize,
            false,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            0.0f32,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

simd_kernel! {
/// In-place softmax of each row of width `width`.
pub fn softmax_rows(x: &mut [f32], width: usize) {
    for row in x.chunks_exact_mut(width) {
        softmax(row);
    }
}
}

/// Multi-head self-attention of each packed sequence on its own: for every head,
/// `ctx = softmax(Q·Kᵀ/√d)·V`, reading Q, K and V from the fused `qkv` rows
/// (`[q | k | v]`, each `hidden` wide) and writing `ctx` rows `hidden` wide. `scores` is scratch.
pub fn attention(
    qkv: &[f32],
    ctx: &mut [f32],
    seq_lens: &[usize],
    hidden: usize,
    heads: usize,
    scores: &mut Vec<f32>,
) {
    let d = hidden / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let stride = 3 * hidden;
    let mut start = 0;
    for &n in seq_lens {
        scores.resize(n * n, 0.0);
        let rows = &qkv[start * stride..(start + n) * stride];
        for head in 0..heads {
            let q = View {
                data: &rows[head * d..],
                rows: n,
                cols: d,
                rs: stride,
                cs: 1,
            };
            let kt = View {
                data: &rows[hidden + head * d..],
                rows: d,
                cols: n,
                rs: 1,
                cs: stride,
            };
            matmul_view(q, kt, scale, scores, n);
            softmax_rows(scores, n);
            let p = View {
                data: scores,
                rows: n,
                cols: n,
                rs: n,
                cs: 1,
            };
            let v = View {
                data: &rows[2 * hidden + head * d..],
                rows: n,
                cols: d,
                rs: stride,
                cs: 1,
            };
            matmul_view(p, v, 1.0, &mut ctx[start * hidden + head * d..], hidden);
        }
        start += n;
    }
}

/// [`attention`] with the heads of each sequence shared among the current rayon pool's threads: each head is
/// computed into a buffer of its own, then copied into its columns of `ctx`.
pub fn attention_by_heads(
    qkv: &[f32],
    ctx: &mut [f32],
    seq_lens: &[usize],
    hidden: usize,
    heads: usize,
) {
    use rayon::prelude::*;
    let d = hidden / heads.max(1);
    let stride = 3 * hidden;
    let mut start = 0;
    for &n in seq_lens {
        let rows = &qkv[start * stride..(start + n) * stride];
        let out: Vec<Vec<f32>> = (0..heads)
            .into_par_iter()
            .map(|head| {
                // One head alone: its q, k and v columns, as `attention` reads them.
                let mut one = vec![0.0f32; n * 3 * d];
                for (r, row) in rows.chunks_exact(stride).enumerate() {
                    for (part, dst) in one[r * 3 * d..(r + 1) * 3 * d]
                        .chunks_exact_mut(d)
                        .enumerate()
                    {
                        let at = part * hidden + head * d;
                        dst.copy_from_slice(&row[at..at + d]);
                    }
                }
                let mut head_ctx = vec![0.0f32; n * d];
                attention(&one, &mut head_ctx, &[n], d, 1, &mut Vec::new());
                head_ctx
            })
            .collect();
        for (head, head_ctx) in out.iter().enumerate() {
            for (r, src) in head_ctx.chunks_exact(d).enumerate() {
                let at = (start + r) * hidden + head * d;
                ctx[at..at + d].copy_from_slice(src);
            }
        }
        start += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 from its Maclaurin series; accurate to ~1e-9 for |x| <= 4.
    fn erf_ref(x: f64) -> f64 {
        let mut term = x;
        let mut total = x;
        let mut n = 0.0f64;
        loop {
            n += 1.0;
            term *= -x * x / n;
            let add = term / (2.0 * n + 1.0);
            total += add;
            if add.abs() < 1e-17 {
                break;
            }
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_matches_series() {
        let mut worst = 0.0f64;
        for i in -4000..=4000 {
            let x = i as f64 / 1000.0;
            let err = (erf(x as f32) as f64 - erf_ref(x)).abs();
            worst = worst.max(err);
        }
        assert!(worst < 5e-7, "worst erf error {worst}");
        assert!((erf(10.0) - 1.0).abs() < 2e-7);
        assert!((erf(-10.0) + 1.0).abs() < 2e-7);
    }

    #[test]
    fn exp_matches_std() {
        for i in 0..=90_000 {
            let x = -(i as f32) / 1000.0;
            let (got, want) = (exp_nonpositive(x), x.exp());
            assert!(
                (got - want).abs() <= 4e-7 * want + 2e-38,
                "{x}: {got} vs {want}"
            );
        }
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), exp_nonpositive(-87.0));
        assert!((exp_nonpositive(0.0) - 1.0).abs() < 1e-7);
    }

    #[test]
    fn matmul_matches_naive() {
        let (m, k, n) = (7, 13, 5);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let mut out = vec![1.0f32; m * n];
        matmul_acc(&a, &b, &mut out, m, k, n, 1);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = 1.0 + (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum::<f32>();
                assert!((out[i * n + j] - want).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn layer_norm_and_softmax() {
        let mut x = vec![1.0f32, 2.0, 3.0, 4.0];
        layer_norm_rows(&mut x, &[1.0; 4], &[0.0; 4], 1e-12);
        let mean: f32 = x.iter().sum::<f32>() / 4.0;
        let var: f32 = x.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-5);
        let mut s = vec![1.0f32, 1.0, 1000.0];
        softmax(&mut s);
        assert!((s[2] - 1.0).abs() < 1e-6 && s[0] < 1e-6);
        assert!((dot(&[1.0; 11], &[2.0; 11]) - 22.0).abs() < 1e-6);
    }

    /// Attention through gemm against a direct evaluation of softmax(QKᵀ/√d)·V.
    #[test]
    fn attention_by_heads_matches_attention() {
        let (hidden, heads) = (24, 3);
        let lens = [7usize, 1, 70];
        let total: usize = lens.iter().sum();
        let qkv: Vec<f32> = (0..total * 3 * hidden)
            .map(|i| ((i * 31 % 29) as f32 - 14.0) * 0.05)
            .collect();
        let mut want = vec![0.0f32; total * hidden];
        attention(&qkv, &mut want, &lens, hidden, heads, &mut Vec::new());
        let mut got = vec![1.0f32; total * hidden];
        attention_by_heads(&qkv, &mut got, &lens, hidden, heads);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-6, "{g} vs {w}");
        }
    }

    #[test]
    fn attention_matches_naive() {
        let (hidden, heads) = (8, 2);
        let d = hidden / heads;
        let lens = [3usize, 1, 5];
        let total: usize = lens.iter().sum();
        let qkv: Vec<f32> = (0..total * 3 * hidden)
            .map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.1)
            .collect();
        let mut ctx = vec![0.0f32; total * hidden];
        attention(&qkv, &mut ctx, &lens, hidden, heads, &mut Vec::new());
        let mut start = 0;
        for &n in &lens {
            for h in 0..heads {
                for i in 0..n {
                    let q = |c: usize| qkv[(start + i) * 3 * hidden + h * d + c];
                    let k = |j: usize, c: usize| qkv[(start + j) * 3 * hidden + hidden + h * d + c];
                    let v =
                        |j: usize, c: usize| qkv[(start + j) * 3 * hidden + 2 * hidden + h * d + c];
                    let mut s: Vec<f32> = (0..n)
                        .map(|j| (0..d).map(|c| q(c) * k(j, c)).sum::<f32>() / (d as f32).sqrt())
                        .collect();
                    let m = s.iter().copied().fold(f32::MIN, f32::max);
                    let z: f32 = s.iter().map(|x| (x - m).exp()).sum();
                    for x in s.iter_mut() {
                        *x = (*x - m).exp() / z;
                    }
                    for c in 0..d {
                        let want: f32 = (0..n).map(|j| s[j] * v(j, c)).sum();
                        let got = ctx[(start + i) * hidden + h * d + c];
                        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
                    }
                }
            }
            start += n;
        }
    }
}
