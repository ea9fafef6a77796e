//! zfp's block coefficients: the negabinary mapping, the coefficient orders of 1-D to 4-D blocks, and the inverse
//! decorrelating transforms (the lossy lifting transform and the reversible one), in two's-complement integers
//! of the block's width that wrap as the reference decoder's do.

/// A block coefficient: zfp's `Int` of 32 or 64 bits.
pub(crate) trait Coef: Copy + Default {
    /// Bits of the integer (zfp's `intprec`).
    const BITS: u32;
    /// Bits that hold a reversible block's precision less one.
    const PBITS: u32;
    /// The negabinary number `u` (its low `BITS` bits) as a two's-complement integer.
    fn from_negabinary(u: u64) -> Self;
    /// Wrapping sum.
    fn add(self, o: Self) -> Self;
    /// Wrapping difference.
    fn sub(self, o: Self) -> Self;
    /// Arithmetic shift right by one.
    fn half(self) -> Self;
    /// Shift left by one, wrapping.
    fn dbl(self) -> Self;
    /// The integer's bits, zero-extended.
    fn raw(self) -> u64;
    /// As a sign-magnitude number (its bits reinterpreted as a float by the reversible mode).
    fn sign_magnitude(self) -> u64;
}

macro_rules! coef {
    ($t:ty, $u:ty, $pbits:expr, $nbmask:expr, $tcmask:expr) => {
        impl Coef for $t {
            const BITS: u32 = <$t>::BITS;
            const PBITS: u32 = $pbits;
            #[inline]
            fn from_negabinary(u: u64) -> Self {
                ((u as $u ^ $nbmask).wrapping_sub($nbmask)) as $t
            }
            #[inline]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline]
            fn half(self) -> Self {
                self >> 1
            }
            #[inline]
            fn dbl(self) -> Self {
                self.wrapping_shl(1)
            }
            #[inline]
            fn raw(self) -> u64 {
                self as $u as u64
            }
            #[inline]
            fn sign_magnitude(self) -> u64 {
                if self < 0 {
                    (self as $u ^ $tcmask) as u64
                } else {
                    self as $u as u64
                }
            }
        }
    };
}

coef!(i32, u32, 5, 0xaaaa_aaaa_u32, 0x7fff_ffff_u32);
coef!(
    i64,
    u64,
    6,
    0xaaaa_aaaa_aaaa_aaaa_u64,
    0x7fff_ffff_ffff_ffff_u64
);

/// The order in which a 4x4 block's coefficients are coded (index `i + 4 j`).
const PERM_2: [u8; 16] = [0, 1, 4, 5, 2, 8, 6, 9, 3, 12, 10, 7, 13, 11, 14, 15];

/// The order of a 4x4x4 block's coefficients (index `i + 4 j + 16 k`).
const PERM_3: [u8; 64] = [
    0, 1, 4, 16, 20, 17, 5, 2, 8, 32, 21, 6, 18, 24, 9, 33, 36, 3, 12, 48, 22, 25, 37, 40, 34, 10,
    7, 19, 28, 13, 49, 52, 41, 38, 26, 23, 29, 53, 11, 35, 44, 14, 50, 56, 42, 27, 39, 45, 30, 54,
    57, 60, 51, 15, 43, 46, 58, 61, 55, 31, 62, 59, 47, 63,
];

/// The order of a 4x4x4x4 block's coefficients (index `i + 4 j + 16 k + 64 l`).
const PERM_4: [u8; 256] = [
    0, 1, 4, 16, 64, 5, 80, 17, 68, 65, 20, 2, 8, 32, 128, 84, 81, 69, 21, 6, 18, 66, 24, 72, 9,
    96, 33, 36, 129, 132, 144, 3, 12, 48, 192, 85, 82, 70, 22, 73, 25, 88, 37, 100, 97, 148, 145,
    133, 10, 160, 34, 136, 130, 40, 7, 19, 67, 28, 76, 13, 112, 49, 52, 193, 196, 208, 86, 89, 101,
    149, 161, 137, 41, 134, 38, 164, 26, 152, 146, 104, 98, 74, 83, 71, 23, 77, 29, 92, 53, 116,
    113, 212, 209, 197, 11, 35, 131, 44, 140, 14, 176, 50, 56, 194, 200, 224, 90, 165, 102, 153,
    150, 105, 168, 162, 138, 42, 87, 93, 117, 213, 27, 75, 99, 39, 135, 147, 108, 45, 141, 156, 30,
    78, 177, 180, 54, 114, 120, 57, 198, 210, 216, 201, 225, 228, 15, 240, 51, 204, 195, 60, 169,
    166, 154, 106, 91, 103, 151, 109, 157, 94, 181, 118, 121, 214, 217, 229, 163, 139, 43, 142, 46,
    172, 58, 184, 178, 232, 226, 202, 241, 205, 61, 199, 55, 244, 31, 220, 211, 124, 115, 79, 170,
    167, 155, 107, 158, 110, 173, 122, 185, 182, 233, 230, 218, 95, 245, 119, 221, 215, 125, 242,
    206, 62, 203, 59, 248, 47, 236, 227, 188, 179, 143, 171, 174, 186, 234, 246, 222, 126, 219,
    123, 249, 111, 237, 231, 189, 183, 159, 252, 243, 207, 63, 175, 250, 187, 238, 235, 190, 253,
    247, 223, 127, 254, 251, 239, 191, 255,
];

/// The coded order of a block of `dims` dimensions (1 to 4): coded coefficient `i` is block index `perm[i]`.
pub(crate) fn perm(dims: u32) -> &'static [u8] {
    match dims {
        1 => &[0, 1, 2, 3],
        2 => &PERM_2,
        3 => &PERM_3,
        _ => &PERM_4,
    }
}

/// Puts the decoded negabinary coefficients `ublock` (coded order) into `iblock` in block order.
pub(crate) fn inv_order<T: Coef>(ublock: &[u64], iblock: &mut [T], perm: &[u8]) {
    for (&u, &p) in ublock.iter().zip(perm) {
        if let Some(slot) = iblock.get_mut(usize::from(p)) {
            *slot = T::from_negabinary(u);
        }
    }
}

/// The inverse of zfp's lifting step on the four values at `b`, `b + s`, `b + 2 s`, `b + 3 s`.
#[inline]
fn inv_lift<T: Coef>(p: &mut [T], b: usize, s: usize) {
    let (mut x, mut y, mut z, mut w) = (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]);
    y = y.add(w.half());
    w = w.sub(y.half());
    y = y.add(w);
    w = w.dbl().sub(y);
    z = z.add(x);
    x = x.dbl().sub(z);
    y = y.add(z);
    z = z.dbl().sub(y);
    w = w.add(x);
    x = x.dbl().sub(w);
    (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]) = (x, y, z, w);
}

/// The inverse of the reversible (Lorenzo) step on the four values at `b` and on by `s`.
#[inline]
fn rev_inv_lift<T: Coef>(p: &mut [T], b: usize, s: usize) {
    let (x, mut y, mut z, mut w) = (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]);
    w = w.add(z);
    z = z.add(y);
    w = w.add(z);
    y = y.add(x);
    z = z.add(y);
    w = w.add(z);
    (p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]) = (x, y, z, w);
}

/// Applies `lift` along every line of a block of `4^dims` values, the last dimension first and x last.
fn along_lines<T: Coef>(p: &mut [T], dims: u32, lift: fn(&mut [T], usize, usize)) {
    let n = 1usize << (2 * dims);
    if p.len() < n {
        return;
    }
    for d in (0..dims).rev() {
        let s = 1usize << (2 * d);
        for b in (0..n).filter(|&b| (b / s).is_multiple_of(4)) {
            lift(p, b, s);
        }
    }
}

/// The inverse decorrelating transform of a block of `dims` dimensions (lossy modes).
pub(crate) fn inv_xform<T: Coef>(p: &mut [T], dims: u32) {
    along_lines(p, dims, inv_lift);
}

/// The inverse reversible transform of a block of `dims` dimensions (lossless mode).
pub(crate) fn rev_inv_xform<T: Coef>(p: &mut [T], dims: u32) {
    along_lines(p, dims, rev_inv_lift);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forward lifting step (zfp's encoder), to check the inverse against.
    fn fwd_lift(v: [i64; 4]) -> [i64; 4] {
        let [mut x, mut y, mut z, mut w] = v;
        x += w;
        x >>= 1;
        w -= x;
        z += y;
        z >>= 1;
        y -= z;
        x += z;
        x >>= 1;
        z -= x;
        w += y;
        w >>= 1;
        y -= w;
        w += y >> 1;
        y -= w >> 1;
        [x, y, z, w]
    }

    /// The inverse lifting step written from its matrix: `1/4 * (4 6 -4 -1; 4 2 4 5; 4 -2 4 -5; 4 -6 -4 1)`,
    /// exact on values the forward step's shifts lose nothing of.
    fn inverse_by_matrix(v: [i64; 4]) -> [i64; 4] {
        let [x, y, z, w] = v;
        [
            (4 * x + 6 * y - 4 * z - w) / 4,
            (4 * x + 2 * y + 4 * z + 5 * w) / 4,
            (4 * x - 2 * y + 4 * z - 5 * w) / 4,
            (4 * x - 6 * y - 4 * z + w) / 4,
        ]
    }

    #[test]
    fn inverse_lift_matches_its_matrix_and_undoes_the_forward_step() {
        let mut rng = crate::test_rng::TestRng::new(0x2f9);
        for _ in 0..2000 {
            // Multiples of 16: no bit is shifted out, so the steps are the exact linear maps.
            let v: [i64; 4] = std::array::from_fn(|_| ((rng.next() % 2001) as i64 - 1000) * 16);
            let f = fwd_lift(v);
            let mut p = f;
            inv_lift(&mut p, 0, 1);
            assert_eq!(p, v);
            assert_eq!(inverse_by_matrix(f), v);
            let mut q: [i32; 4] = f.map(|x| x as i32);
            inv_lift(&mut q, 0, 1);
            assert_eq!(q.map(i64::from), v);
        }
    }

    #[test]
    fn reversible_lift_is_the_pascal_matrix() {
        let mut rng = crate::test_rng::TestRng::new(0x77);
        for _ in 0..500 {
            let v: [i64; 4] = std::array::from_fn(|_| rng.next() as i64 >> 8);
            let mut p = v;
            rev_inv_lift(&mut p, 0, 1);
            let [x, y, z, w] = v;
            assert_eq!(
                p,
                [
                    x,
                    x.wrapping_add(y),
                    x.wrapping_add(2 * y).wrapping_add(z),
                    x.wrapping_add(3 * y).wrapping_add(3 * z).wrapping_add(w)
                ]
            );
        }
    }

    /// The transform of a block line by line as the reference nests its loops: dimension by dimension from
    /// the last, each line through the scalar step.
    fn by_lines(p: &mut [i64], dims: u32) {
        let n = 1usize << (2 * dims);
        for d in (0..dims).rev() {
            let s = 1usize << (2 * d);
            for b in 0..n {
                if (b / s).is_multiple_of(4) {
                    let v = inverse_by_matrix([p[b], p[b + s], p[b + 2 * s], p[b + 3 * s]]);
                    for (i, x) in v.into_iter().enumerate() {
                        p[b + i * s] = x;
                    }
                }
            }
        }
    }

    #[test]
    fn block_transform_equals_a_straightforward_one() {
        let mut rng = crate::test_rng::TestRng::new(0x5eed);
        for dims in 1..=4u32 {
            let n = 1usize << (2 * dims);
            // Values divisible by 4^dims: every step along every dimension is exact.
            let v: Vec<i64> = (0..n)
                .map(|_| ((rng.next() % 201) as i64 - 100) << (4 * dims))
                .collect();
            let mut fast = v.clone();
            inv_xform(&mut fast, dims);
            let mut slow = v.clone();
            by_lines(&mut slow, dims);
            assert_eq!(fast, slow, "dims {dims}");
        }
    }

    #[test]
    fn permutations_cover_each_block_once() {
        for dims in 1..=4 {
            let p = perm(dims);
            let mut seen = vec![false; 1 << (2 * dims)];
            assert_eq!(p.len(), seen.len());
            for &i in p {
                assert!(!seen[usize::from(i)]);
                seen[usize::from(i)] = true;
            }
            // Coefficients are coded by increasing total degree.
            let degree = |i: u8| (0..dims).map(|d| (i >> (2 * d)) & 3).sum::<u8>();
            assert!(p.windows(2).all(|w| degree(w[0]) <= degree(w[1])), "{dims}");
        }
    }

    #[test]
    fn negabinary_round_trips() {
        for x in [
            0i32,
            1,
            -1,
            2,
            -2,
            12345,
            -98765,
            i32::MAX / 2,
            i32::MIN / 2,
        ] {
            let u = (x as u32).wrapping_add(0xaaaa_aaaa) ^ 0xaaaa_aaaa;
            assert_eq!(i32::from_negabinary(u64::from(u)), x);
        }
        for x in [0i64, 5, -5, 1 << 40, -(1 << 50)] {
            let u = (x as u64).wrapping_add(0xaaaa_aaaa_aaaa_aaaa) ^ 0xaaaa_aaaa_aaaa_aaaa;
            assert_eq!(i64::from_negabinary(u), x);
        }
        assert_eq!((-4i32).sign_magnitude(), 0x8000_0003);
        assert_eq!(3i64.sign_magnitude(), 3);
    }
}
