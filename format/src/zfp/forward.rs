//! zfp's forward block transforms, the encoder's side of `transform`: the decorrelating lifting transform
//! (lossy modes), the reversible one, and the mapping of a block's integers to negabinary in coded order.
//! They wrap as the reference encoder's two's-complement arithmetic does.

use super::transform::Coef;

/// A coefficient the encoder can transform: the operations the forward steps need besides [`Coef`]'s.
pub(crate) trait FwdCoef: Coef {
    /// The integer in negabinary (its low `BITS` bits).
    fn to_negabinary(self) -> u64;
}

macro_rules! fwd_coef {
    ($t:ty, $u:ty, $nbmask:expr) => {
        impl FwdCoef for $t {
            #[inline]
            fn to_negabinary(self) -> u64 {
                ((self as $u).wrapping_add($nbmask) ^ $nbmask) as u64
            }
        }
    };
}

fwd_coef!(i32, u32, 0xaaaa_aaaa_u32);
fwd_coef!(i64, u64, 0xaaaa_aaaa_aaaa_aaaa_u64);

/// zfp's forward lifting step on the four values at `b`, `b + s`, `b + 2 s`, `b + 3 s`.
#[inline]
fn fwd_lift<T: Coef>(p: &mut [T], b: usize, s: usize) {
    let (mut x, mut y, mut z, mut w) = (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]);
    x = x.add(w).half();
    w = w.sub(x);
    z = z.add(y).half();
    y = y.sub(z);
    x = x.add(z).half();
    z = z.sub(x);
    w = w.add(y).half();
    y = y.sub(w);
    w = w.add(y.half());
    y = y.sub(w.half());
    (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]) = (x, y, z, w);
}

/// The forward reversible (Lorenzo) step on the four values at `b` and on by `s`.
#[inline]
fn rev_fwd_lift<T: Coef>(p: &mut [T], b: usize, s: usize) {
    let (x, mut y, mut z, mut w) = (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]);
    w = w.sub(z);
    z = z.sub(y);
    y = y.sub(x);
    w = w.sub(z);
    z = z.sub(y);
    w = w.sub(z);
    (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]) = (x, y, z, w);
}

/// Applies `lift` along every line of a block of `4^dims` values, x first and the last dimension last (the
/// inverse transforms' reverse order).
fn along_lines<T: Coef>(p: &mut [T], dims: u32, lift: fn(&mut [T], usize, usize)) {
    let n = 1usize << (2 * dims);
    if p.len() < n {
        return;
    }
    for d in 0..dims {
        let s = 1usize << (2 * d);
        for b in (0..n).filter(|&b| (b / s).is_multiple_of(4)) {
            lift(p, b, s);
        }
    }
}

/// The forward decorrelating transform of a block of `dims` dimensions (lossy modes).
pub(crate) fn fwd_xform<T: Coef>(p: &mut [T], dims: u32) {
    along_lines(p, dims, fwd_lift);
}

/// The forward reversible transform of a block of `dims` dimensions (lossless mode).
pub(crate) fn rev_fwd_xform<T: Coef>(p: &mut [T], dims: u32) {
    along_lines(p, dims, rev_fwd_lift);
}

/// Puts the block's integers `iblock` into `ublock` in coded order (`perm`), as negabinary numbers.
pub(crate) fn fwd_order<T: FwdCoef>(iblock: &[T], ublock: &mut [u64], perm: &[u8]) {
    for (u, &p) in ublock.iter_mut().zip(perm) {
        *u = iblock.get(usize::from(p)).map_or(0, |v| v.to_negabinary());
    }
}

#[cfg(test)]
mod tests {
    use super::super::transform::{inv_order, inv_xform, perm, rev_inv_xform};
    use super::*;
    use crate::test_rng::TestRng;

    #[test]
    fn the_reversible_transform_is_undone_exactly() {
        let mut rng = TestRng::new(0x0f01);
        for dims in 1..=4u32 {
            let n = 1usize << (2 * dims);
            for _ in 0..50 {
                let v: Vec<i64> = (0..n).map(|_| rng.next() as i64).collect();
                let mut p = v.clone();
                rev_fwd_xform(&mut p, dims);
                rev_inv_xform(&mut p, dims);
                assert_eq!(p, v);
                let v32: Vec<i32> = v.iter().map(|&x| x as i32).collect();
                let mut q = v32.clone();
                rev_fwd_xform(&mut q, dims);
                rev_inv_xform(&mut q, dims);
                assert_eq!(q, v32);
            }
        }
    }

    #[test]
    fn the_lossy_transform_is_undone_within_a_few_units() {
        let mut rng = TestRng::new(0x0f02);
        for dims in 1..=4u32 {
            let n = 1usize << (2 * dims);
            for _ in 0..50 {
                // Values within zfp's headroom (|x| < 2^30 for 32 bits).
                let v: Vec<i32> = (0..n).map(|_| (rng.next() as i32) >> 3).collect();
                let mut p = v.clone();
                fwd_xform(&mut p, dims);
                inv_xform(&mut p, dims);
                for (a, b) in p.iter().zip(&v) {
                    assert!(
                        (i64::from(*a) - i64::from(*b)).abs() <= 1 << (2 * dims),
                        "{a} {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn negabinary_order_is_undone() {
        let mut rng = TestRng::new(0x0f03);
        for dims in 1..=4u32 {
            let n = 1usize << (2 * dims);
            let v: Vec<i64> = (0..n).map(|_| rng.next() as i64).collect();
            let mut u = vec![0u64; n];
            fwd_order(&v, &mut u, perm(dims));
            let mut back = vec![0i64; n];
            inv_order(&u, &mut back, perm(dims));
            assert_eq!(back, v);
        }
    }
}
