//! Byte unshuffle with SSE2, which every x86-64 CPU has (the fallback where AVX-512 is missing): sixteen
//! elements at a time, their byte planes woven back by unpack steps — bytes into 16-bit pairs, pairs into
//! 32-bit quads, quads into 64-bit elements.

use std::arch::x86_64::{
    __m128i, _mm_loadu_si128, _mm_storeu_si128, _mm_unpackhi_epi16, _mm_unpackhi_epi32,
    _mm_unpackhi_epi8, _mm_unpacklo_epi16, _mm_unpacklo_epi32, _mm_unpacklo_epi8,
};

/// Weaves the byte planes of `n` elements of `size` (2, 4 or 8) bytes in `data` back into elements in
/// `out` (as [`super::unshuffle_bytes`] does for whole elements).
pub(super) fn unshuffle_bytes(data: &[u8], size: usize, n: usize, out: &mut [u8]) {
    match size {
        2 => weave::<2>(data, n, out),
        4 => weave::<4>(data, n, out),
        8 => weave::<8>(data, n, out),
        _ => unreachable!("no SSE2 unshuffle for {size}-byte elements"),
    }
}

fn weave<const S: usize>(data: &[u8], n: usize, out: &mut [u8]) {
    assert!(data.len() >= n * S && out.len() >= n * S);
    let whole = n / 16 * 16;
    for i in (0..whole).step_by(16) {
        // SAFETY: SSE2 is part of the x86-64 baseline. Each load reads the 16 bytes at `b * n + i` of
        // plane `b < S`, inside `data` as `i + 16 <= n` and `data.len() >= S * n`; the stores write the
        // `16 * S` bytes from `i * S`, inside `out` as `out.len() >= S * n`.
        unsafe {
            let plane = |b: usize| _mm_loadu_si128(data.as_ptr().add(b * n + i).cast::<__m128i>());
            let dst = out.as_mut_ptr().add(i * S).cast::<__m128i>();
            match S {
                2 => {
                    let (p0, p1) = (plane(0), plane(1));
                    _mm_storeu_si128(dst, _mm_unpacklo_epi8(p0, p1));
                    _mm_storeu_si128(dst.add(1), _mm_unpackhi_epi8(p0, p1));
                }
                4 => {
                    let (lo01, hi01) = pairs(plane(0), plane(1));
                    let (lo23, hi23) = pairs(plane(2), plane(3));
                    _mm_storeu_si128(dst, _mm_unpacklo_epi16(lo01, lo23));
                    _mm_storeu_si128(dst.add(1), _mm_unpackhi_epi16(lo01, lo23));
                    _mm_storeu_si128(dst.add(2), _mm_unpacklo_epi16(hi01, hi23));
                    _mm_storeu_si128(dst.add(3), _mm_unpackhi_epi16(hi01, hi23));
                }
                _ => {
                    let (lo01, hi01) = pairs(plane(0), plane(1));
                    let (lo23, hi23) = pairs(plane(2), plane(3));
                    let (lo45, hi45) = pairs(plane(4), plane(5));
                    let (lo67, hi67) = pairs(plane(6), plane(7));
                    // Bytes 0-3 and 4-7 of elements 0-3, 4-7, 8-11 and 12-15.
                    let low = [
                        _mm_unpacklo_epi16(lo01, lo23),
                        _mm_unpackhi_epi16(lo01, lo23),
                        _mm_unpacklo_epi16(hi01, hi23),
                        _mm_unpackhi_epi16(hi01, hi23),
                    ];
                    let high = [
                        _mm_unpacklo_epi16(lo45, lo67),
                        _mm_unpackhi_epi16(lo45, lo67),
                        _mm_unpacklo_epi16(hi45, hi67),
                        _mm_unpackhi_epi16(hi45, hi67),
                    ];
                    for (q, (l, h)) in low.into_iter().zip(high).enumerate() {
                        _mm_storeu_si128(dst.add(2 * q), _mm_unpacklo_epi32(l, h));
                        _mm_storeu_si128(dst.add(2 * q + 1), _mm_unpackhi_epi32(l, h));
                    }
                }
            }
        }
    }
    for i in whole..n {
        for b in 0..S {
            out[i * S + b] = data[b * n + i];
        }
    }
}

/// Bytes of two planes interleaved: elements 0-7 and 8-15 of the pair.
#[inline(always)]
fn pairs(a: __m128i, b: __m128i) -> (__m128i, __m128i) {
    // SAFETY: SSE2 is part of the x86-64 baseline; unpacking touches no memory.
    unsafe { (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b)) }
}
