//! NEON kernels for aarch64 (NEON is baseline on aarch64, so no run-time check is needed).
//! i8 uses widening multiply-accumulate (`smull` + `sadalp`); the SDOT instruction is not used because
//! its intrinsic is not yet stable in Rust. f16 is widened to f32 in blocks via `half`.

use super::{dot_rows_by_four, scalar, KernelSet};
use half::f16;
use half::slice::HalfFloatSliceExt;
use std::arch::aarch64::*;

/// The NEON kernel set.
pub fn neon_set() -> Option<KernelSet> {
    if std::arch::is_aarch64_feature_detected!("neon") {
        Some(KernelSet {
            name: "neon",
            dot_f32: |a, b| {
                // SAFETY: only built after detecting neon.
                unsafe { f32_neon::<false>(a, b) }
            },
            l2_f32: |a, b| {
                // SAFETY: as above.
                unsafe { f32_neon::<true>(a, b) }
            },
            dot_f16: |a, b| f16_blocks::<false>(a, b),
            l2_f16: |a, b| f16_blocks::<true>(a, b),
            dot_f32_f16: |a, b| mixed_blocks::<false>(a, b),
            l2_f32_f16: |a, b| mixed_blocks::<true>(a, b),
            dot_i8: |a, b| {
                // SAFETY: as above.
                unsafe { i8_neon::<false>(a, b) }
            },
            l2_i8: |a, b| {
                // SAFETY: as above.
                unsafe { i8_neon::<true>(a, b) }
            },
            dot_u8i8: |a, b| {
                // SAFETY: as above.
                unsafe { u8i8_neon(a, b) }
            },
            dot_u8i8_x4: |rows, b| {
                // SAFETY: as above.
                rows.map(|a| unsafe { u8i8_neon(a, b) })
            },
            dot_u8i8_rows: |rows, ids, b, out| {
                // SAFETY: as above.
                dot_rows_by_four(
                    |r, b| r.map(|a| unsafe { u8i8_neon(a, b) }),
                    rows,
                    ids,
                    b.codes(),
                    out,
                )
            },
            quantize_i8: scalar::quantize_i8,
            sign_sums: scalar::sign_sums_planes,
            sign_planes: false,
            sign_bits: scalar::sign_bits,
            f16_to_f32: scalar::f16_to_f32,
        })
    } else {
        None
    }
}

#[target_feature(enable = "neon")]
unsafe fn f32_neon<const L2: bool>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [vdupq_n_f32(0.0); 4];
    let mut i = 0;
    while i + 16 <= n {
        for (j, acc_j) in acc.iter_mut().enumerate() {
            let x = vld1q_f32(pa.add(i + 4 * j));
            let y = vld1q_f32(pb.add(i + 4 * j));
            *acc_j = if L2 {
                let d = vsubq_f32(x, y);
                vfmaq_f32(*acc_j, d, d)
            } else {
                vfmaq_f32(*acc_j, x, y)
            };
        }
        i += 16;
    }
    let s = vaddvq_f32(vaddq_f32(
        vaddq_f32(acc[0], acc[1]),
        vaddq_f32(acc[2], acc[3]),
    ));
    let tail = if L2 {
        scalar::l2_f32(&a[i..n], &b[i..n])
    } else {
        scalar::dot_f32(&a[i..n], &b[i..n])
    };
    s + tail
}

fn f16_blocks<const L2: bool>(a: &[f16], b: &[f16]) -> f32 {
    let mut xa = [0.0f32; 64];
    let mut xb = [0.0f32; 64];
    let mut s = 0.0;
    for (ca, cb) in a.chunks(64).zip(b.chunks(64)) {
        let m = ca.len().min(cb.len());
        ca[..m].convert_to_f32_slice(&mut xa[..m]);
        cb[..m].convert_to_f32_slice(&mut xb[..m]);
        // SAFETY: neon is baseline on aarch64.
        s += unsafe { f32_neon::<L2>(&xa[..m], &xb[..m]) };
    }
    s
}

fn mixed_blocks<const L2: bool>(a: &[f32], b: &[f16]) -> f32 {
    let mut xb = [0.0f32; 64];
    let mut s = 0.0;
    for (ca, cb) in a.chunks(64).zip(b.chunks(64)) {
        let m = ca.len().min(cb.len());
        cb[..m].convert_to_f32_slice(&mut xb[..m]);
        // SAFETY: neon is baseline on aarch64.
        s += unsafe { f32_neon::<L2>(&ca[..m], &xb[..m]) };
    }
    s
}

#[target_feature(enable = "neon")]
unsafe fn i8_neon<const L2: bool>(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = vdupq_n_s32(0);
    let mut i = 0;
    while i + 16 <= n {
        let x = vld1q_s8(pa.add(i));
        let y = vld1q_s8(pb.add(i));
        if L2 {
            let dl = vsubl_s8(vget_low_s8(x), vget_low_s8(y));
            let dh = vsubl_high_s8(x, y);
            acc = vmlal_s16(acc, vget_low_s16(dl), vget_low_s16(dl));
            acc = vmlal_high_s16(acc, dl, dl);
            acc = vmlal_s16(acc, vget_low_s16(dh), vget_low_s16(dh));
            acc = vmlal_high_s16(acc, dh, dh);
        } else {
            let pl = vmull_s8(vget_low_s8(x), vget_low_s8(y));
            let ph = vmull_high_s8(x, y);
            acc = vpadalq_s16(acc, pl);
            acc = vpadalq_s16(acc, ph);
        }
        i += 16;
    }
    let tail = if L2 {
        scalar::l2_i8(&a[i..n], &b[i..n])
    } else {
        scalar::dot_i8(&a[i..n], &b[i..n])
    };
    vaddvq_s32(acc) + tail
}

#[target_feature(enable = "neon")]
unsafe fn u8i8_neon(a: &[u8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = vdupq_n_s32(0);
    let mut i = 0;
    while i + 16 <= n {
        let x = vld1q_u8(pa.add(i));
        let y = vld1q_s8(pb.add(i));
        // u8 values fit in i16, so widen both sides to i16 and multiply-accumulate into i32.
        let xl = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(x)));
        let xh = vreinterpretq_s16_u16(vmovl_high_u8(x));
        let yl = vmovl_s8(vget_low_s8(y));
        let yh = vmovl_high_s8(y);
        acc = vmlal_s16(acc, vget_low_s16(xl), vget_low_s16(yl));
        acc = vmlal_high_s16(acc, xl, yl);
        acc = vmlal_s16(acc, vget_low_s16(xh), vget_low_s16(yh));
        acc = vmlal_high_s16(acc, xh, yh);
        i += 16;
    }
    vaddvq_s32(acc) + scalar::dot_u8i8(&a[i..n], &b[i..n])
}
