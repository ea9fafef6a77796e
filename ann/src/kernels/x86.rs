//! AVX2+FMA(+F16C) and AVX-512 (F + BW + VL, optionally VNNI) kernels for x86-64.
//!
//! The `unsafe fn`s require their target features; they are only reachable through the safe wrappers
//! in [`avx2_set`] / [`avx512_set`], which return `None` unless the running CPU has the features.

use super::{dot_rows_by_four, scalar, CodeRows, I8Query, KernelSet, SignRows};
use half::f16;
use std::arch::x86_64::*;

/// Kernel set for AVX2 + FMA + F16C, if the CPU supports it.
pub fn avx2_set() -> Option<KernelSet> {
    if is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
        && is_x86_feature_detected!("popcnt")
    {
        Some(KernelSet {
            name: "avx2+fma",
            dot_f32: |a, b| {
                // SAFETY: this set is only built after detecting avx2+fma+f16c.
                unsafe { dot_f32_avx2(a, b) }
            },
            l2_f32: |a, b| {
                // SAFETY: as above.
                unsafe { l2_f32_avx2(a, b) }
            },
            dot_f16: |a, b| {
                // SAFETY: as above.
                unsafe { f16_avx2::<false>(a, b) }
            },
            l2_f16: |a, b| {
                // SAFETY: as above.
                unsafe { f16_avx2::<true>(a, b) }
            },
            dot_f32_f16: |a, b| {
                // SAFETY: as above.
                unsafe { mixed_avx2::<false>(a, b) }
            },
            l2_f32_f16: |a, b| {
                // SAFETY: as above.
                unsafe { mixed_avx2::<true>(a, b) }
            },
            dot_i8: |a, b| {
                // SAFETY: as above.
                unsafe { i8_avx2::<false>(a, b) }
            },
            l2_i8: |a, b| {
                // SAFETY: as above.
                unsafe { i8_avx2::<true>(a, b) }
            },
            dot_u8i8: |a, b| {
                // SAFETY: as above.
                unsafe { u8i8_avx2(a, b) }
            },
            dot_u8i8_x4: |rows, b| {
                // SAFETY: as above.
                unsafe { u8i8_x4_avx2(rows, b) }
            },
            dot_u8i8_rows: |rows, ids, b, out| {
                // SAFETY: as above.
                unsafe { u8i8_rows_avx2(rows, ids, b, out) }
            },
            quantize_i8: |v, out| {
                // SAFETY: as above (AVX2 is among the detected features).
                unsafe { quantize_i8_avx2(v, out) }
            },
            sign_sums: |rows, ids, levels, out| {
                // SAFETY: as above.
                unsafe { sign_sums_avx2(rows, ids, levels, out) }
            },
            sign_planes: false,
            sign_bits: |v, out| {
                // SAFETY: as above.
                unsafe { sign_bits_avx2(v, out) }
            },
            f16_to_f32: |v, out| {
                // SAFETY: as above.
                unsafe { f16_to_f32_f16c(v, out) }
            },
        })
    } else {
        None
    }
}

/// Kernel set for AVX-512 F + BW + VL (+ F16C), if the CPU supports it (VL for the 256-bit masked loads).
pub fn avx512_set() -> Option<KernelSet> {
    if is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("f16c")
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("popcnt")
    {
        let planes = is_x86_feature_detected!("avx512vpopcntdq");
        Some(KernelSet {
            name: "avx512",
            dot_f32: |a, b| {
                // SAFETY: this set is only built after detecting avx512f+avx512bw+avx512vl.
                unsafe { f32_avx512::<false>(a, b) }
            },
            l2_f32: |a, b| {
                // SAFETY: as above.
                unsafe { f32_avx512::<true>(a, b) }
            },
            dot_f16: |a, b| {
                // SAFETY: as above.
                unsafe { f16_avx512::<false>(a, b) }
            },
            l2_f16: |a, b| {
                // SAFETY: as above.
                unsafe { f16_avx512::<true>(a, b) }
            },
            dot_f32_f16: |a, b| {
                // SAFETY: as above.
                unsafe { mixed_avx512::<false>(a, b) }
            },
            l2_f32_f16: |a, b| {
                // SAFETY: as above.
                unsafe { mixed_avx512::<true>(a, b) }
            },
            dot_i8: |a, b| {
                // SAFETY: as above.
                unsafe { i8_avx512::<false>(a, b) }
            },
            l2_i8: |a, b| {
                // SAFETY: as above.
                unsafe { i8_avx512::<true>(a, b) }
            },
            dot_u8i8: |a, b| {
                // SAFETY: as above.
                unsafe { u8i8_avx512(a, b) }
            },
            dot_u8i8_x4: |rows, b| {
                // SAFETY: as above.
                rows.map(|a| unsafe { u8i8_avx512(a, b) })
            },
            dot_u8i8_rows: |rows, ids, b, out| {
                // SAFETY: as above.
                dot_rows_by_four(
                    |r, b| r.map(|a| unsafe { u8i8_avx512(a, b) }),
                    rows,
                    ids,
                    b.codes(),
                    out,
                )
            },
            quantize_i8: |v, out| {
                // SAFETY: as above (AVX2 is among the detected features).
                unsafe { quantize_i8_avx2(v, out) }
            },
            sign_sums: if planes {
                |rows, ids, levels, out| {
                    // SAFETY: as above, and avx512vpopcntdq was detected above (`planes`).
                    unsafe { sign_sums_planes(rows, ids, levels, out) }
                }
            } else {
                |rows, ids, levels, out| {
                    // SAFETY: as above.
                    unsafe { sign_sums_avx512(rows, ids, levels, out) }
                }
            },
            sign_planes: planes,
            sign_bits: |v, out| {
                // SAFETY: as above.
                unsafe { sign_bits_avx512(v, out) }
            },
            f16_to_f32: |v, out| {
                // SAFETY: as above (F16C and AVX are among the detected features).
                unsafe { f16_to_f32_f16c(v, out) }
            },
        })
    } else {
        None
    }
}

/// AVX-512 set whose u8 x i8 dot product uses VNNI (`vpdpbusd`), if the CPU supports it.
pub fn avx512_vnni_set() -> Option<KernelSet> {
    let base = avx512_set()?;
    if !is_x86_feature_detected!("avx512vnni") {
        return None;
    }
    Some(KernelSet {
        name: "avx512+vnni",

        dot_u8i8: |a, b| {
            // SAFETY: built on the AVX-512 set (avx512f+avx512bw+avx512vl detected) after detecting avx512vnni.
            unsafe { u8i8_vnni(a, b) }
        },
        dot_u8i8_x4: |rows, b| {
            // SAFETY: as above.
            unsafe { u8i8_vnni_x4(rows, b) }
        },
        dot_u8i8_rows: |rows, ids, b, out| {
            // SAFETY: as above.
            unsafe { u8i8_vnni_rows(rows, ids, b, out) }
        },
        // Bit planes weighted by IFMA where the CPU has both (the AVX-512 set keeps the plain
        // planes kernel, so both stay tested on such a CPU).
        sign_sums: if base.sign_planes && is_x86_feature_detected!("avx512ifma") {
            |rows, ids, levels, out| {
                // SAFETY: as above; the base set sums bit planes only after detecting
                // avx512vpopcntdq, and avx512ifma was detected here.
                unsafe { sign_sums_planes_ifma(rows, ids, levels, out) }
            }
        } else {
            base.sign_sums
        },
        ..base
    })
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn hsum256(v: __m256) -> f32 {
    let lo = _mm256_castps256_ps128(v);
    let hi = _mm256_extractf128_ps::<1>(v);
    let s = _mm_add_ps(lo, hi);
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
    _mm_cvtss_f32(s)
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn hsum256_i32(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

#[target_feature(enable = "avx2,fma")]
unsafe fn dot_f32_avx2(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (j, acc_j) in acc.iter_mut().enumerate() {
            let x = _mm256_loadu_ps(pa.add(i + 8 * j));
            let y = _mm256_loadu_ps(pb.add(i + 8 * j));
            *acc_j = _mm256_fmadd_ps(x, y, *acc_j);
        }
        i += 32;
    }
    while i + 8 <= n {
        acc[0] = _mm256_fmadd_ps(
            _mm256_loadu_ps(pa.add(i)),
            _mm256_loadu_ps(pb.add(i)),
            acc[0],
        );
        i += 8;
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    hsum256(s) + scalar::dot_f32(&a[i..n], &b[i..n])
}

#[target_feature(enable = "avx2,fma")]
unsafe fn l2_f32_avx2(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (j, acc_j) in acc.iter_mut().enumerate() {
            let d = _mm256_sub_ps(
                _mm256_loadu_ps(pa.add(i + 8 * j)),
                _mm256_loadu_ps(pb.add(i + 8 * j)),
            );
            *acc_j = _mm256_fmadd_ps(d, d, *acc_j);
        }
        i += 32;
    }
    while i + 8 <= n {
        let d = _mm256_sub_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
        acc[0] = _mm256_fmadd_ps(d, d, acc[0]);
        i += 8;
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    hsum256(s) + scalar::l2_f32(&a[i..n], &b[i..n])
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16_avx2<const L2: bool>(a: &[f16], b: &[f16]) -> f32 {
    let n = a.len().min(b.len());
    // f16 is a transparent wrapper around u16 bits.
    let (pa, pb) = (a.as_ptr() as *const __m128i, b.as_ptr() as *const __m128i);
    let mut acc0 = _mm256_setzero_ps();
    let mut acc1 = _mm256_setzero_ps();
    let mut i = 0;
    while i + 16 <= n {
        let x0 = _mm256_cvtph_ps(_mm_loadu_si128(pa.add(i / 8)));
        let y0 = _mm256_cvtph_ps(_mm_loadu_si128(pb.add(i / 8)));
        let x1 = _mm256_cvtph_ps(_mm_loadu_si128(pa.add(i / 8 + 1)));
        let y1 = _mm256_cvtph_ps(_mm_loadu_si128(pb.add(i / 8 + 1)));
        if L2 {
            let d0 = _mm256_sub_ps(x0, y0);
            let d1 = _mm256_sub_ps(x1, y1);
            acc0 = _mm256_fmadd_ps(d0, d0, acc0);
            acc1 = _mm256_fmadd_ps(d1, d1, acc1);
        } else {
            acc0 = _mm256_fmadd_ps(x0, y0, acc0);
            acc1 = _mm256_fmadd_ps(x1, y1, acc1);
        }
        i += 16;
    }
    let s = hsum256(_mm256_add_ps(acc0, acc1));
    let tail = if L2 {
        scalar::l2_f16(&a[i..n], &b[i..n])
    } else {
        scalar::dot_f16(&a[i..n], &b[i..n])
    };
    s + tail
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn mixed_avx2<const L2: bool>(a: &[f32], b: &[f16]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr() as *const __m128i);
    let mut acc0 = _mm256_setzero_ps();
    let mut acc1 = _mm256_setzero_ps();
    let mut i = 0;
    while i + 16 <= n {
        let x0 = _mm256_loadu_ps(pa.add(i));
        let x1 = _mm256_loadu_ps(pa.add(i + 8));
        let y0 = _mm256_cvtph_ps(_mm_loadu_si128(pb.add(i / 8)));
        let y1 = _mm256_cvtph_ps(_mm_loadu_si128(pb.add(i / 8 + 1)));
        if L2 {
            let d0 = _mm256_sub_ps(x0, y0);
            let d1 = _mm256_sub_ps(x1, y1);
            acc0 = _mm256_fmadd_ps(d0, d0, acc0);
            acc1 = _mm256_fmadd_ps(d1, d1, acc1);
        } else {
            acc0 = _mm256_fmadd_ps(x0, y0, acc0);
            acc1 = _mm256_fmadd_ps(x1, y1, acc1);
        }
        i += 16;
    }
    let s = hsum256(_mm256_add_ps(acc0, acc1));
    let tail = if L2 {
        scalar::l2_f32_f16(&a[i..n], &b[i..n])
    } else {
        scalar::dot_f32_f16(&a[i..n], &b[i..n])
    };
    s + tail
}

#[target_feature(enable = "avx2")]
unsafe fn i8_avx2<const L2: bool>(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = _mm256_setzero_si256();
    let mut i = 0;
    while i + 16 <= n {
        let x = _mm256_cvtepi8_epi16(_mm_loadu_si128(pa.add(i) as *const __m128i));
        let y = _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i) as *const __m128i));
        let p = if L2 {
            let d = _mm256_sub_epi16(x, y);
            _mm256_madd_epi16(d, d)
        } else {
            _mm256_madd_epi16(x, y)
        };
        acc = _mm256_add_epi32(acc, p);
        i += 16;
    }
    let tail = if L2 {
        scalar::l2_i8(&a[i..n], &b[i..n])
    } else {
        scalar::dot_i8(&a[i..n], &b[i..n])
    };
    hsum256_i32(acc) + tail
}

#[target_feature(enable = "avx512f")]
unsafe fn f32_avx512<const L2: bool>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    while i + 64 <= n {
        for (j, acc_j) in acc.iter_mut().enumerate() {
            let x = _mm512_loadu_ps(pa.add(i + 16 * j));
            let y = _mm512_loadu_ps(pb.add(i + 16 * j));
            *acc_j = if L2 {
                let d = _mm512_sub_ps(x, y);
                _mm512_fmadd_ps(d, d, *acc_j)
            } else {
                _mm512_fmadd_ps(x, y, *acc_j)
            };
        }
        i += 64;
    }
    while i < n {
        let left = n - i;
        let mask: __mmask16 = if left >= 16 {
            0xFFFF
        } else {
            (1u16 << left) - 1
        };
        let x = _mm512_maskz_loadu_ps(mask, pa.add(i));
        let y = _mm512_maskz_loadu_ps(mask, pb.add(i));
        acc[1] = if L2 {
            let d = _mm512_sub_ps(x, y);
            _mm512_fmadd_ps(d, d, acc[1])
        } else {
            _mm512_fmadd_ps(x, y, acc[1])
        };
        i += 16;
    }
    _mm512_reduce_add_ps(_mm512_add_ps(
        _mm512_add_ps(acc[0], acc[1]),
        _mm512_add_ps(acc[2], acc[3]),
    ))
}

/// Loads 16 f16 values (the first `n` of them, zeros after) as f32 lanes. These helpers carry no target
/// features of their own: always inlined, their intrinsics compile in the AVX-512 (F + BW + VL) caller.
#[inline(always)]
unsafe fn load_f16x16(p: *const u16, n: usize) -> __m512 {
    if n >= 16 {
        _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
    } else {
        _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((1u16 << n) - 1, p as *const i16))
    }
}

/// Loads 16 f32 values (the first `n` of them, zeros after).
#[inline(always)]
unsafe fn load_f32x16(p: *const f32, n: usize) -> __m512 {
    if n >= 16 {
        _mm512_loadu_ps(p)
    } else {
        _mm512_maskz_loadu_ps((1u16 << n) - 1, p)
    }
}

/// f32 × f32 lanes into `acc`: a dot product, or for `L2` the squared difference.
#[inline(always)]
unsafe fn accumulate<const L2: bool>(acc: __m512, x: __m512, y: __m512) -> __m512 {
    if L2 {
        let d = _mm512_sub_ps(x, y);
        _mm512_fmadd_ps(d, d, acc)
    } else {
        _mm512_fmadd_ps(x, y, acc)
    }
}

/// Sums `accumulate` over `n` elements of two vectors read by `x` and `y` (16 lanes from an element
/// index, the first `m` of them when `m` < 16): 32 elements a step into two accumulators, a masked
/// step for the tail.
#[inline(always)]
unsafe fn sum_blocks<const L2: bool>(
    n: usize,
    x: impl Fn(usize, usize) -> __m512,
    y: impl Fn(usize, usize) -> __m512,
) -> f32 {
    let mut acc0 = _mm512_setzero_ps();
    let mut acc1 = _mm512_setzero_ps();
    let mut i = 0;
    while i + 32 <= n {
        acc0 = accumulate::<L2>(acc0, x(i, 16), y(i, 16));
        acc1 = accumulate::<L2>(acc1, x(i + 16, 16), y(i + 16, 16));
        i += 32;
    }
    while i < n {
        let m = n - i;
        acc0 = accumulate::<L2>(acc0, x(i, m), y(i, m));
        i += 16;
    }
    _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1))
}

/// f16 × f16, widened to f32.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn f16_avx512<const L2: bool>(a: &[f16], b: &[f16]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr() as *const u16, b.as_ptr() as *const u16);
    // SAFETY: `sum_blocks` asks for elements below `n`, the length both slices have.
    sum_blocks::<L2>(
        n,
        |i, m| unsafe { load_f16x16(pa.add(i), m) },
        |i, m| unsafe { load_f16x16(pb.add(i), m) },
    )
}

/// f32 × f16, the f16 side widened to f32.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn mixed_avx512<const L2: bool>(a: &[f32], b: &[f16]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr() as *const u16);
    // SAFETY: as in `f16_avx512`.
    sum_blocks::<L2>(
        n,
        |i, m| unsafe { load_f32x16(pa.add(i), m) },
        |i, m| unsafe { load_f16x16(pb.add(i), m) },
    )
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn i8_avx512<const L2: bool>(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc0 = _mm512_setzero_si512();
    let mut acc1 = _mm512_setzero_si512();
    let mut i = 0;
    while i < n {
        let left = n - i;
        let mask: __mmask32 = if left >= 32 {
            u32::MAX
        } else {
            (1u32 << left) - 1
        };
        let x = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(mask, pa.add(i)));
        let y = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(mask, pb.add(i)));
        let p = if L2 {
            let d = _mm512_sub_epi16(x, y);
            _mm512_madd_epi16(d, d)
        } else {
            _mm512_madd_epi16(x, y)
        };
        acc0 = _mm512_add_epi32(acc0, p);
        std::mem::swap(&mut acc0, &mut acc1);
        i += 32;
    }
    _mm512_reduce_add_epi32(_mm512_add_epi32(acc0, acc1))
}

#[target_feature(enable = "avx2")]
unsafe fn u8i8_avx2(a: &[u8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = _mm256_setzero_si256();
    let mut i = 0;
    while i + 16 <= n {
        let x = _mm256_cvtepu8_epi16(_mm_loadu_si128(pa.add(i) as *const __m128i));
        let y = _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i) as *const __m128i));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
        i += 16;
    }
    hsum256_i32(acc) + scalar::dot_u8i8(&a[i..n], &b[i..n])
}

/// What the sign-trick kernels need of the i8 vector `b` over its first `n32` codes (a multiple of
/// 32): `128 * sum(b[..n32])`, or `None` when a code is -128, which the trick cannot take (see
/// [`u8i8_signed_block`]).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn u8i8_query_avx2(b: &[i8], n32: usize) -> Option<i32> {
    debug_assert!(n32.is_multiple_of(32) && n32 <= b.len());
    let flip = _mm256_set1_epi8(i8::MIN);
    let zero = _mm256_setzero_si256();
    // Lanes that held a -128, and the running sums.
    let (mut minimum, mut sum) = (zero, zero);
    let pb = b.as_ptr();
    let mut i = 0;
    while i < n32 {
        let q = _mm256_loadu_si256(pb.add(i) as *const __m256i);
        minimum = _mm256_or_si256(minimum, _mm256_cmpeq_epi8(q, flip));
        // The codes offset by 128 are unsigned: their sums of eight, against zero.
        sum = _mm256_add_epi64(sum, _mm256_sad_epu8(_mm256_xor_si256(q, flip), zero));
        i += 32;
    }
    if _mm256_testz_si256(minimum, minimum) == 0 {
        return None;
    }
    let s = _mm_add_epi64(
        _mm256_castsi256_si128(sum),
        _mm256_extracti128_si256::<1>(sum),
    );
    let offset_sum = _mm_cvtsi128_si64(s) + _mm_extract_epi64::<1>(s);
    // sum(b) = sum(b + 128) - 128 n; |sum(b)| <= 128 n.
    Some((offset_sum - 128 * n32 as i64).wrapping_mul(128) as i32)
}

/// Raw sums over the first `n32` bytes (a multiple of 32) of each of the four rows with `b`,
/// as `sum(x * b)` where `x = row - 128`: `|x|` times `b` carrying `x`'s sign (`vpsignb`), pairs
/// summed by `vpmaddubsw` (unsigned times signed). With every code of `b` in [-127, 127] a pair is at
/// most 2 * 128 * 127 = 32,512, so the i16 sums never saturate and the result is exact.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn u8i8_signed_block(rows: [&[u8]; 4], b: &[i8], n32: usize) -> [i32; 4] {
    let flip = _mm256_set1_epi8(i8::MIN);
    let ones = _mm256_set1_epi16(1);
    let pb = b.as_ptr();
    let pr = rows.map(|r| r.as_ptr());
    let mut acc = [_mm256_setzero_si256(); 4];
    let mut i = 0;
    while i < n32 {
        let q = _mm256_loadu_si256(pb.add(i) as *const __m256i);
        for r in 0..4 {
            let x = _mm256_xor_si256(_mm256_loadu_si256(pr[r].add(i) as *const __m256i), flip);
            let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(q, x));
            acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(pairs, ones));
        }
        i += 32;
    }
    acc.map(|a| hsum256_i32(a))
}

/// [`scalar::dot_u8i8_x4`], the query's codes read once for the four rows: the sign trick of
/// [`u8i8_signed_block`] over whole blocks of 32 where `b` has no -128 (as
/// [`crate::quant::quantize_into`] makes it), the widening kernel otherwise; the tails in scalar code.
#[target_feature(enable = "avx2")]
unsafe fn u8i8_x4_avx2(rows: [&[u8]; 4], b: &[i8]) -> [i32; 4] {
    let shortest = rows.iter().map(|r| r.len()).min().unwrap_or(0);
    let n32 = shortest.min(b.len()) / 32 * 32;
    let Some(offset) = u8i8_query_avx2(b, n32) else {
        return rows.map(|a| u8i8_avx2(a, b));
    };
    let sums = u8i8_signed_block(rows, b, n32);
    std::array::from_fn(|r| {
        let tail = scalar::dot_u8i8(&rows[r][n32.min(rows[r].len())..], &b[n32..]);
        sums[r].wrapping_add(offset).wrapping_add(tail)
    })
}

/// [`scalar::dot_u8i8_rows`] with the sign trick (see [`u8i8_x4_avx2`]), the vector's sum and range
/// taken from `q` (worked out once per query, not per call).
#[target_feature(enable = "avx2")]
unsafe fn u8i8_rows_avx2(rows: CodeRows<'_>, ids: &[u32], q: I8Query<'_>, out: &mut [i32]) {
    let b = q.codes();
    // `q`'s sum covers all of `b`: rows of another length take the widening kernel, as does a -128.
    if !q.in_range() || b.len() != rows.dim {
        return dot_rows_by_four(|r, b| r.map(|a| u8i8_avx2(a, b)), rows, ids, b, out);
    }
    let n = b.len();
    let n32 = n / 32 * 32;
    // sum(row * b) = sum((row - 128) * b) + 128 * sum(b): the blocks give the first sum, the tail
    // its share, and `q` the last term.
    let signed_tail = |row: &[u8]| -> i32 {
        row[n32..n]
            .iter()
            .zip(&b[n32..n])
            .map(|(&x, &y)| (x as i32 - 128) * y as i32)
            .sum()
    };
    for (group, o) in ids.chunks(4).zip(out.chunks_mut(4)) {
        let row = |j: usize| rows.row(group[j.min(group.len() - 1)]);
        let four = [row(0), row(1), row(2), row(3)];
        let sums = u8i8_signed_block(four, b, n32);
        for (j, o) in o.iter_mut().enumerate() {
            *o = sums[j]
                .wrapping_add(signed_tail(four[j]))
                .wrapping_add(q.offset_sum());
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn u8i8_avx512(a: &[u8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = _mm512_setzero_si512();
    let mut i = 0;
    while i < n {
        let left = n - i;
        let mask: __mmask32 = if left >= 32 {
            u32::MAX
        } else {
            (1u32 << left) - 1
        };
        let x = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, pa.add(i) as *const i8));
        let y = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(mask, pb.add(i)));
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(x, y));
        i += 32;
    }
    _mm512_reduce_add_epi32(acc)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn u8i8_vnni(a: &[u8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc0 = _mm512_setzero_si512();
    let mut acc1 = _mm512_setzero_si512();
    let mut i = 0;
    while i < n {
        let left = n - i;
        let mask: __mmask64 = if left >= 64 {
            u64::MAX
        } else {
            (1u64 << left) - 1
        };
        let x = _mm512_maskz_loadu_epi8(mask, pa.add(i) as *const i8);
        let y = _mm512_maskz_loadu_epi8(mask, pb.add(i));
        acc0 = _mm512_dpbusd_epi32(acc0, x, y);
        std::mem::swap(&mut acc0, &mut acc1);
        i += 64;
    }
    _mm512_reduce_add_epi32(_mm512_add_epi32(acc0, acc1))
}

/// [`u8i8_vnni_x4`] over a list of rows, four at a time, within one call (inlined, so the vector's blocks
/// and the loop stay in registers rather than crossing a dispatch per group).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn u8i8_vnni_rows(rows: CodeRows<'_>, ids: &[u32], q: I8Query<'_>, out: &mut [i32]) {
    let b = q.codes();
    for (group, o) in ids.chunks(4).zip(out.chunks_mut(4)) {
        let row = |j: usize| rows.row(group[j.min(group.len() - 1)]);
        let d = u8i8_vnni_x4([row(0), row(1), row(2), row(3)], b);
        o.copy_from_slice(&d[..o.len()]);
    }
}

/// Four rows against one vector: each 64-byte block of the vector is loaded once and fed to the
/// four rows' `vpdpbusd`s; even and odd blocks go to separate accumulators, so eight independent
/// chains are in flight.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn u8i8_vnni_x4(rows: [&[u8]; 4], b: &[i8]) -> [i32; 4] {
    #[inline(always)]
    unsafe fn block(acc: &mut [__m512i; 4], p: &[*const i8; 4], pb: *const i8, i: usize) {
        let y = _mm512_loadu_si512(pb.add(i) as *const _);
        for (a, &pr) in acc.iter_mut().zip(p) {
            *a = _mm512_dpbusd_epi32(*a, _mm512_loadu_si512(pr.add(i) as *const _), y);
        }
    }
    #[inline(always)]
    unsafe fn tail(acc: &mut [__m512i; 4], p: &[*const i8; 4], pb: *const i8, i: usize, n: usize) {
        let mask: __mmask64 = (1u64 << (n - i)) - 1;
        let y = _mm512_maskz_loadu_epi8(mask, pb.add(i));
        for (a, &pr) in acc.iter_mut().zip(p) {
            *a = _mm512_dpbusd_epi32(*a, _mm512_maskz_loadu_epi8(mask, pr.add(i)), y);
        }
    }
    let n = rows.iter().fold(b.len(), |n, r| n.min(r.len()));
    let p = rows.map(|r| r.as_ptr() as *const i8);
    let pb = b.as_ptr();
    let mut even = [_mm512_setzero_si512(); 4];
    let mut odd = [_mm512_setzero_si512(); 4];
    let mut i = 0;
    while i + 128 <= n {
        block(&mut even, &p, pb, i);
        block(&mut odd, &p, pb, i + 64);
        i += 128;
    }
    if i + 64 <= n {
        block(&mut even, &p, pb, i);
        i += 64;
    }
    if i < n {
        tail(&mut odd, &p, pb, i, n);
    }
    let s: [__m512i; 4] = std::array::from_fn(|r| _mm512_add_epi32(even[r], odd[r]));
    sum_rows_x4(s)
}

/// The lane sums of four vectors, reduced together: unpacking pairs of rows and adding leaves each 128-bit
/// lane holding a partial sum of every row, so three adds of halves finish all four at once (one
/// `_mm512_reduce_add_epi32` per row costs four times the shuffles).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn sum_rows_x4(s: [__m512i; 4]) -> [i32; 4] {
    // Per 128-bit lane: [s0 + s0', s1 + s1', ...] of the lane's even and odd elements.
    let a = _mm512_add_epi32(
        _mm512_unpacklo_epi32(s[0], s[1]),
        _mm512_unpackhi_epi32(s[0], s[1]),
    );
    let b = _mm512_add_epi32(
        _mm512_unpacklo_epi32(s[2], s[3]),
        _mm512_unpackhi_epi32(s[2], s[3]),
    );
    // Per lane: one partial sum of each of the four rows, in row order.
    let c = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
    let d = _mm256_add_epi32(_mm512_castsi512_si256(c), _mm512_extracti64x4_epi64::<1>(c));
    let e = _mm_add_epi32(_mm256_castsi256_si128(d), _mm256_extracti128_si256::<1>(d));
    let mut out = [0i32; 4];
    _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, e);
    out
}

/// Hints the CPU to pull the cache line at `p` into L1.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    // SAFETY: prefetch is a hint; it never faults, even on invalid addresses. SSE is baseline on x86-64.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const i8) }
}

/// [`scalar::quantize_i8`] compiled for AVX2 (the same code, vectorised 8 wide).
#[target_feature(enable = "avx2")]
unsafe fn quantize_i8_avx2(v: &[f32], out: &mut [u8]) -> f32 {
    scalar::quantize_i8(v, out)
}

/// [`scalar::sign_sums_planes`] compiled for AVX2 with the POPCNT instruction, requesting rows 8 ids
/// ahead.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn sign_sums_avx2(rows: SignRows<'_>, ids: &[u32], levels: &[u8], out: &mut [u32]) {
    scalar::sign_sums_planes_with(rows, ids, levels, out, prefetch)
}

/// [`scalar::sign_sums`] with AVX-512 BW, four rows at a time: each code word is the byte mask that
/// selects the query's levels of its 64 dimensions, summed by `vpsadbw` into 64-bit lanes; the four
/// rows share one horizontal sum (see [`sign_rows_by_four`]).
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn sign_sums_avx512(rows: SignRows<'_>, ids: &[u32], levels: &[u8], out: &mut [u32]) {
    let words = rows.words.min(levels.len() / 64);
    let levels = &levels[..words * 64];
    // SAFETY: `sign_rows_by_four` passes the address of a row with `rows.words` (≥ `words`) words
    // inside `rows.data`.
    sign_rows_by_four(&rows, ids, out, |row| unsafe {
        sign_row_avx512(row, levels)
    });
}

/// Runs `row` (a row's sum in 64-bit lanes, given the address of its first word) over the rows of
/// `ids` four at a time, one horizontal sum per four rows ([`sum_sign_rows_x4`]), requesting rows 8
/// ids ahead: `out[i]` is row `ids[i]`'s sum, zero for a row outside `rows`. `row` is only called
/// with the address of a row whose `rows.words` words lie inside `rows.data`. The ids are checked
/// once per call when all of them are inside (the usual case), else one by one.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn sign_rows_by_four(
    rows: &SignRows<'_>,
    ids: &[u32],
    out: &mut [u32],
    row: impl Fn(*const u64) -> __m512i,
) {
    const SIGN_AHEAD: usize = 8;
    let n = ids.len().min(out.len());
    let (ids, out) = (&ids[..n], &mut out[..n]);
    let base = rows.data.as_ptr();
    // The last id whose row fits whole in `data` (none when `data` is shorter than a row).
    let last = rows
        .data
        .len()
        .checked_sub(rows.words)
        .map(|room| room / rows.stride.max(1));
    let all_inside =
        last.is_some_and(|last| ids.iter().copied().max().is_none_or(|m| m as usize <= last));
    let one = |id: u32| {
        if all_inside || rows.bits(id).is_some() {
            // The row lies inside `data` (checked above).
            row(base.wrapping_add(id as usize * rows.stride))
        } else {
            _mm512_setzero_si512()
        }
    };
    let mut outs = out.chunks_exact_mut(4);
    for (g, (group, o)) in ids.chunks_exact(4).zip(&mut outs).enumerate() {
        for &ahead in ids.iter().skip(4 * g + SIGN_AHEAD).take(4) {
            // A hint: the address need not be valid.
            prefetch(base.wrapping_add(ahead as usize * rows.stride));
        }
        let sums = [one(group[0]), one(group[1]), one(group[2]), one(group[3])];
        o.copy_from_slice(&sum_sign_rows_x4(sums));
    }
    let rest = ids.len() / 4 * 4;
    for (o, &id) in outs.into_remainder().iter_mut().zip(&ids[rest..]) {
        *o = _mm512_reduce_add_epi64(one(id)) as u32;
    }
}

/// The query's levels as bit planes for [`sign_sums_planes`]: word `w` of plane `p` holds bit `p` of
/// the levels of dimensions `64w..64w + 64` (`words` ≤ 8 words); with the number of planes in use.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn level_planes(levels: &[u8], words: usize) -> ([__m512i; 8], u32) {
    let mut planes = [[0u64; 8]; 8];
    let mut used = 0u8;
    for (w, lv) in levels.chunks_exact(64).take(words.min(8)).enumerate() {
        // SAFETY: the chunk holds 64 bytes.
        let lv = unsafe { _mm512_loadu_si512(lv.as_ptr() as *const _) };
        for (p, plane) in planes.iter_mut().enumerate() {
            plane[w] = _mm512_test_epi8_mask(lv, _mm512_set1_epi8((1u8 << p) as i8));
            used |= u8::from(plane[w] != 0) << p;
        }
    }
    // SAFETY: `[u64; 8]` and `__m512i` have the same size; the load is unaligned.
    let planes = planes.map(|p| unsafe { _mm512_loadu_si512(p.as_ptr() as *const _) });
    (planes, 8 - used.leading_zeros())
}

/// Defines a bit-plane kernel `$outer` (see [`sign_sums_planes`]) compiled with `$features`, and its
/// body for `NP` planes, `$inner`: per row, `$weigh` turns the popcounts of the row's words under each
/// plane (`$ones(p)` for plane `p < NP`, in 64-bit lanes) into the lanes' weighted sums. Rows of more
/// than 8 words go to [`sign_sums_avx512`]; a query whose levels use no plane sums to zero.
macro_rules! plane_kernel {
    ($(#[$doc:meta])* $outer:ident, $inner:ident, $features:literal, |$ones:ident| $weigh:block) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        unsafe fn $outer(rows: SignRows<'_>, ids: &[u32], levels: &[u8], out: &mut [u32]) {
            let words = rows.words.min(levels.len() / 64);
            if words > 8 {
                return sign_sums_avx512(rows, ids, levels, out);
            }
            let (planes, used) = level_planes(levels, words);
            let mask = ((1u16 << words) - 1) as __mmask8;
            match used {
                0 => out.iter_mut().for_each(|o| *o = 0),
                    1 => $inner::<1>(rows, ids, &planes, mask, out),
                    2 => $inner::<2>(rows, ids, &planes, mask, out),
                    3 => $inner::<3>(rows, ids, &planes, mask, out),
                    4 => $inner::<4>(rows, ids, &planes, mask, out),
                    5 => $inner::<5>(rows, ids, &planes, mask, out),
                    6 => $inner::<6>(rows, ids, &planes, mask, out),
                    7 => $inner::<7>(rows, ids, &planes, mask, out),
                    _ => $inner::<8>(rows, ids, &planes, mask, out),
            }
        }

        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn $inner<const NP: usize>(
            rows: SignRows<'_>,
            ids: &[u32],
            planes: &[__m512i; 8],
            mask: __mmask8,
            out: &mut [u32],
        ) {
            let row = |r: *const u64| -> __m512i {
                // SAFETY: `r` is a row of at least `words` words inside the codes
                // (`sign_rows_by_four`), and `mask` selects its first `words` words; masked-off words
                // are not read.
                let v = unsafe { _mm512_maskz_loadu_epi64(mask, r as *const _) };
                let $ones = |p: usize| _mm512_popcnt_epi64(_mm512_and_si512(v, planes[p]));
                $weigh
            };
            sign_rows_by_four(&rows, ids, out, row);
        }
    };
}

plane_kernel!(
    /// [`scalar::sign_sums`] with AVX-512 VPOPCNTDQ, for rows of up to 8 code words (d ≤ 512; longer
    /// rows go to [`sign_sums_avx512`]). The query's levels are split into bit planes
    /// ([`level_planes`]), so a row's sum is `Σ_p 2^p · popcount(row & plane p)`: per plane one AND and
    /// one popcount over all the row's words at once. Its cost grows with the planes the levels use:
    /// the sign pass quantises queries to 4 bits (see `crate::sign`), four planes, about half the
    /// byte-mask kernel's time a row.
    sign_sums_planes,
    sign_planes_n,
    "avx512f,avx512bw,avx512vpopcntdq",
    |ones| {
        // Highest plane first: double the sum so far, add the next plane's count.
        let mut acc = _mm512_setzero_si512();
        for p in (0..NP).rev() {
            acc = _mm512_add_epi64(_mm512_add_epi64(acc, acc), ones(p));
        }
        acc
    }
);

plane_kernel!(
    /// [`sign_sums_planes`] where the CPU has AVX-512 IFMA: each plane's popcount is weighted and added
    /// in one `vpmadd52luq` (instead of a doubling and an add), about 15 % less time a row.
    sign_sums_planes_ifma,
    sign_planes_ifma_n,
    "avx512f,avx512bw,avx512vpopcntdq,avx512ifma",
    |ones| {
        // Popcounts are at most 64 and weights at most 128: the 52-bit products are exact.
        let mut acc = ones(0);
        for p in 1..NP {
            acc = _mm512_madd52lo_epu64(acc, ones(p), _mm512_set1_epi64(1 << p));
        }
        acc
    }
);

/// One row of [`sign_sums_avx512`]: per 64-bit lane, the sum of the levels its code words select.
///
/// # Safety
/// `row` must point at `levels.len() / 64` readable words.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn sign_row_avx512(row: *const u64, levels: &[u8]) -> __m512i {
    let zero = _mm512_setzero_si512();
    let mut acc = zero;
    for (w, lv) in levels.chunks_exact(64).enumerate() {
        // SAFETY: the caller guarantees the row's words; the chunk holds 64 bytes.
        let (bits, lv) = unsafe { (*row.add(w), _mm512_loadu_si512(lv.as_ptr() as *const _)) };
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_mov_epi8(bits, lv), zero));
    }
    acc
}

/// Horizontal sums of four rows' 64-bit lanes in one reduction: rows 0 and 1 (and 2 and 3) share
/// lanes, one in the low 32 bits and one in the high (a row's sum, at most 255 a dimension, stays
/// below 2^32 for any dimension under 16 million, so the low half never carries into the high).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn sum_sign_rows_x4(s: [__m512i; 4]) -> [u32; 4] {
    let a = _mm512_add_epi64(s[0], _mm512_slli_epi64::<32>(s[1]));
    let b = _mm512_add_epi64(s[2], _mm512_slli_epi64::<32>(s[3]));
    // Per 128-bit lane: [a's two elements summed, b's two elements summed].
    let c = _mm512_add_epi64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
    let d = _mm256_add_epi64(_mm512_castsi512_si256(c), _mm512_extracti64x4_epi64::<1>(c));
    let e = _mm_add_epi64(_mm256_castsi256_si128(d), _mm256_extracti128_si256::<1>(d));
    let mut out = [0u32; 4];
    _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, e);
    out
}

/// [`scalar::f16_to_f32`] eight values an instruction (F16C), the tail one by one.
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_to_f32_f16c(v: &[f16], out: &mut [f32]) {
    let n = v.len().min(out.len());
    let (src, dst) = (v.as_ptr() as *const __m128i, out.as_mut_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, so the 8 halves read at v[i..] and the 8 floats written at out[i..]
        // lie inside both slices; unaligned loads and stores.
        unsafe {
            let h = _mm_loadu_si128(src.add(i / 8));
            _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    for (o, x) in out[i..n].iter_mut().zip(&v[i..n]) {
        *o = x.to_f32();
    }
}

/// [`scalar::sign_bits`] compiled for AVX2.
#[target_feature(enable = "avx2")]
unsafe fn sign_bits_avx2(v: &[f32], out: &mut [u64]) -> f32 {
    scalar::sign_bits(v, out)
}

/// [`scalar::sign_bits`] with AVX-512: a compare against zero gives 16 bits at once, and the
/// magnitudes add up in a vector register.
#[target_feature(enable = "avx512f")]
unsafe fn sign_bits_avx512(v: &[f32], out: &mut [u64]) -> f32 {
    let zero = _mm512_setzero_ps();
    let mut l1 = zero;
    for (w, chunk) in out.iter_mut().zip(v.chunks(64)) {
        let mut bits = 0u64;
        for (q, part) in chunk.chunks(16).enumerate() {
            let n = part.len();
            let mask: __mmask16 = if n == 16 { !0 } else { (1u16 << n) - 1 };
            // SAFETY: the masked load reads only the part's n values; lanes past them are zero,
            // which add no bits and no magnitude.
            let x = unsafe { _mm512_maskz_loadu_ps(mask, part.as_ptr()) };
            bits |= u64::from(_mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, zero)) << (16 * q);
            l1 = _mm512_add_ps(l1, _mm512_abs_ps(x));
        }
        *w = bits;
    }
    _mm512_reduce_add_ps(l1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn both_avx512_sign_kernels_equal_the_scalar_one_for_levels_of_every_width() {
        // The kernel set keeps one of the two (the bit-plane one where VPOPCNTDQ exists), so the
        // set-wide test in `kernels` reaches only that one on a given CPU: test both here.
        let bw = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw");
        let planes = bw && is_x86_feature_detected!("avx512vpopcntdq");
        if !bw {
            return;
        }
        let mut rng = SplitMix64::new(41);
        for words in [1usize, 6, 8, 9] {
            let stride = words + 2;
            let rows: Vec<u64> = (0..40 * stride).map(|_| rng.next_u64()).collect();
            let at = || SignRows {
                data: &rows,
                stride,
                words,
            };
            for top in [256u64, 200, 129, 128, 64, 16, 9, 2, 1] {
                let levels: Vec<u8> = (0..64 * words).map(|_| rng.below(top) as u8).collect();
                let ids: Vec<u32> = (0..23).map(|_| rng.below(43) as u32).collect();
                let mut want = vec![0u32; ids.len()];
                scalar::sign_sums(at(), &ids, &levels, &mut want);
                let mut got = vec![9u32; ids.len()];
                // SAFETY: avx512f and avx512bw were detected above.
                unsafe { sign_sums_avx512(at(), &ids, &levels, &mut got) };
                assert_eq!(got, want, "byte masks, words={words} top={top}");
                if planes {
                    let mut got = vec![9u32; ids.len()];
                    // SAFETY: avx512vpopcntdq was detected too.
                    unsafe { sign_sums_planes(at(), &ids, &levels, &mut got) };
                    assert_eq!(got, want, "bit planes, words={words} top={top}");
                }
                if planes && is_x86_feature_detected!("avx512ifma") {
                    let mut got = vec![9u32; ids.len()];
                    // SAFETY: avx512vpopcntdq and avx512ifma were detected.
                    unsafe { sign_sums_planes_ifma(at(), &ids, &levels, &mut got) };
                    assert_eq!(got, want, "bit planes by IFMA, words={words} top={top}");
                }
                let mut got = vec![9u32; ids.len()];
                scalar::sign_sums_planes(at(), &ids, &levels, &mut got);
                assert_eq!(got, want, "scalar bit planes, words={words} top={top}");
            }
        }
    }
}
