//! One zfp block encoded, the exact inverse of `block`: the embedded bit-plane coder (group tests and unary
//! run lengths), integer blocks in the lossy and reversible modes, and floating-point blocks (a common
//! exponent and the block-floating-point conversion, or in the reversible mode the conversion when it loses
//! nothing, else the values' bits reinterpreted as integers).
//!
//! Bit counts follow the reference encoder's unsigned arithmetic, as the decoder's do: the budgets left after
//! a block's header are `minbits - bits` and `maxbits - bits`, and a block shorter than `minbits` is padded
//! with zeros.

use super::bitwriter::BitWriter;
use super::block::{budgets, pow2_f32, pow2_f64, precision, Real};
use super::forward::{fwd_order, fwd_xform, rev_fwd_xform, FwdCoef};
use super::transform::perm;
use super::Params;

/// Codes the bit planes of `data.len()` (at most 256) negabinary coefficients of `intprec` bits, at most
/// `maxbits` bits and `maxprec` planes from the most significant; returns the bits written.
fn encode_ints(w: &mut BitWriter, maxbits: u32, maxprec: u32, data: &[u64], intprec: u32) -> u32 {
    let size = data.len();
    let kmin = intprec.saturating_sub(maxprec);
    let mut bits = maxbits;
    let mut k = intprec;
    let mut n = 0usize;
    while bits > 0 && k > kmin {
        k -= 1;
        // The first n coefficients (those already significant) each send their bit of this plane.
        let m = n.min(bits as usize);
        bits -= m as u32;
        for group in data[..m].chunks(64) {
            let word = group
                .iter()
                .enumerate()
                .fold(0u64, |a, (i, &d)| a | ((d >> k) & 1) << i);
            w.bits(word, group.len() as u32);
        }
        // The rest: a group test (is any still to become significant?), then a unary run to the next one.
        let mut ones = data[n..].iter().filter(|&&d| (d >> k) & 1 != 0).count();
        while bits > 0 && n < size {
            bits -= 1;
            if w.bit(u64::from(ones > 0)) == 0 {
                break;
            }
            while bits > 0 && n + 1 < size {
                bits -= 1;
                if w.bit(data[n] >> k) != 0 {
                    break;
                }
                n += 1;
            }
            ones = ones.saturating_sub(1);
            n += 1;
        }
    }
    maxbits - bits
}

/// Encodes one integer block of `dims` dimensions in the lossy modes: the forward transform, the
/// coefficients, then padding up to `minbits`. Returns the bits written.
fn encode_iblock<T: FwdCoef>(
    w: &mut BitWriter,
    (minbits, maxbits): (i32, u32),
    maxprec: u32,
    dims: u32,
    iblock: &mut [T],
) -> u32 {
    fwd_xform(iblock, dims);
    let mut ublock = [0u64; 256];
    let ublock = &mut ublock[..iblock.len()];
    fwd_order(iblock, ublock, perm(dims));
    let mut bits = encode_ints(w, maxbits, maxprec, ublock, T::BITS) as i32;
    if bits < minbits {
        w.pad((minbits - bits) as u64);
        bits = minbits;
    }
    bits as u32
}

/// Encodes one integer block in the reversible mode: the forward reversible transform, the precision the
/// coefficients need (down to their lowest set bit, at most `maxprec`), the coefficients, the padding up to
/// `minbits`. Returns the bits written.
fn rev_encode_iblock<T: FwdCoef>(
    w: &mut BitWriter,
    (minbits, maxbits): (i32, u32),
    maxprec: u32,
    dims: u32,
    iblock: &mut [T],
) -> u32 {
    rev_fwd_xform(iblock, dims);
    let mut ublock = [0u64; 256];
    let ublock = &mut ublock[..iblock.len()];
    fwd_order(iblock, ublock, perm(dims));
    let all = ublock.iter().fold(0u64, |a, &u| a | u);
    let need = if all == 0 {
        0
    } else {
        T::BITS - all.trailing_zeros()
    };
    let prec = need.min(maxprec).max(1);
    w.bits(u64::from(prec - 1), T::PBITS);
    let mut bits = (T::PBITS as i32).wrapping_add(encode_ints(
        w,
        maxbits.wrapping_sub(T::PBITS),
        prec,
        ublock,
        T::BITS,
    ) as i32);
    if bits < minbits {
        w.pad((minbits - bits) as u64);
        bits = minbits;
    }
    bits as u32
}

/// Encodes one block of 32- or 64-bit integers (`T`) of `dims` dimensions.
pub(crate) fn encode_int<T: FwdCoef>(w: &mut BitWriter, p: &Params, dims: u32, block: &mut [T]) {
    if p.reversible() {
        rev_encode_iblock(w, budgets(p, 0), p.maxprec, dims, block);
    } else {
        encode_iblock(w, budgets(p, 0), p.maxprec, dims, block);
    }
}

/// A floating-point type zfp encodes: the encoder's side of [`Real`].
pub(crate) trait FwdReal: Real + Copy {
    /// Positive zero.
    const ZERO: Self;
    /// The value's bits, zero-extended.
    fn raw(self) -> u64;
    /// The magnitude.
    fn magnitude(self) -> Self;
    /// Whether `self < o` (false when either is NaN).
    fn less(self, o: Self) -> bool;
    /// zfp's `exponent()` of a magnitude: `frexp`'s exponent (0 for infinity, as glibc gives), at least the
    /// least normal exponent; `-EBIAS` for zero.
    fn exponent(self) -> i32;
    /// `(I)(2^(BITS - 2 - emax) * self)`, the product in this type and converted as x86-64 converts
    /// (truncating; out of range or NaN giving the integer's least value).
    fn quantize(self, emax: i32) -> Self::I;
    /// The value's bits as a two's-complement integer of its sign and magnitude (the reversible mode's
    /// reinterpretation).
    fn reinterpret(self) -> Self::I;
}

/// 2^31, the bound of an i32.
const TWO_31: f32 = 2_147_483_648.0;
/// 2^63, the bound of an i64.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

impl FwdReal for f32 {
    const ZERO: Self = 0.0;
    fn raw(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn magnitude(self) -> Self {
        self.abs()
    }
    fn less(self, o: Self) -> bool {
        self < o
    }
    fn exponent(self) -> i32 {
        if self > 0.0 {
            let biased = ((self.to_bits() >> 23) & 0xff) as i32;
            match biased {
                0xff => 0,
                _ => (biased - 126).max(1 - Self::EBIAS),
            }
        } else {
            -Self::EBIAS
        }
    }
    fn quantize(self, emax: i32) -> i32 {
        let v = pow2_f32(30 - emax) * self;
        if v.is_nan() || !(-TWO_31..TWO_31).contains(&v) {
            i32::MIN
        } else {
            v as i32
        }
    }
    fn reinterpret(self) -> i32 {
        let i = self.to_bits() as i32;
        if i < 0 {
            i ^ 0x7fff_ffff
        } else {
            i
        }
    }
}

impl FwdReal for f64 {
    const ZERO: Self = 0.0;
    fn raw(self) -> u64 {
        self.to_bits()
    }
    fn magnitude(self) -> Self {
        self.abs()
    }
    fn less(self, o: Self) -> bool {
        self < o
    }
    fn exponent(self) -> i32 {
        if self > 0.0 {
            let biased = ((self.to_bits() >> 52) & 0x7ff) as i32;
            match biased {
                0x7ff => 0,
                _ => (biased - 1022).max(1 - Self::EBIAS),
            }
        } else {
            -Self::EBIAS
        }
    }
    fn quantize(self, emax: i32) -> i64 {
        let v = pow2_f64(62 - emax) * self;
        if v.is_nan() || !(-TWO_63..TWO_63).contains(&v) {
            i64::MIN
        } else {
            v as i64
        }
    }
    fn reinterpret(self) -> i64 {
        let i = self.to_bits() as i64;
        if i < 0 {
            i ^ 0x7fff_ffff_ffff_ffff
        } else {
            i
        }
    }
}

/// The common exponent of a block: that of its largest magnitude, found as the reference finds it (from
/// zero, so NaNs are passed over).
fn exponent_block<F: FwdReal>(block: &[F]) -> i32 {
    let mut max = F::ZERO;
    for &v in block {
        let f = v.magnitude();
        if max.less(f) {
            max = f;
        }
    }
    max.exponent()
}

/// Encodes one block of floats (`F`) of `dims` dimensions.
pub(crate) fn encode_float<F: FwdReal>(w: &mut BitWriter, p: &Params, dims: u32, block: &[F])
where
    F::I: FwdCoef,
{
    let mut iblock = [F::I::default(); 256];
    let iblock = &mut iblock[..block.len()];
    let emax = exponent_block(block);
    if p.reversible() {
        return rev_encode_float(w, p, dims, block, emax, iblock);
    }
    let maxprec = precision(emax, p.maxprec, p.minexp, dims);
    let e = if maxprec > 0 { emax + F::EBIAS } else { 0 };
    if e == 0 {
        zero_block(w, p);
        return;
    }
    // A one (the block is coded) and the biased exponent.
    let bits = 1 + F::EBITS;
    w.bits(2 * e as u64 + 1, bits);
    for (i, &v) in iblock.iter_mut().zip(block) {
        *i = v.quantize(emax);
    }
    encode_iblock(w, budgets(p, bits), maxprec, dims, iblock);
}

/// A block coded as zero: one zero bit, padded to `minbits`.
fn zero_block(w: &mut BitWriter, p: &Params) {
    w.bit(0);
    if p.minbits > 1 {
        w.pad(u64::from(p.minbits - 1));
    }
}

/// Encodes a block of floats in the reversible mode: through the block-floating-point conversion where it
/// gives every value back bit for bit (bits `1`, `0`, then the exponent), else as the values' bits (`1`, `1`).
fn rev_encode_float<F: FwdReal>(
    w: &mut BitWriter,
    p: &Params,
    dims: u32,
    block: &[F],
    emax: i32,
    iblock: &mut [F::I],
) where
    F::I: FwdCoef,
{
    let zero = emax == -F::EBIAS;
    for (i, &v) in iblock.iter_mut().zip(block) {
        *i = if zero {
            F::I::default()
        } else {
            v.quantize(emax)
        };
    }
    let exact = iblock.iter().zip(block).all(|(&i, &v)| {
        let back = if zero { 0 } else { F::dequantize(i, emax) };
        back == v.raw()
    });
    let bits = if exact {
        let e = emax + F::EBIAS;
        if e == 0 {
            zero_block(w, p);
            return;
        }
        w.bits(1, 2);
        w.bits(e as u64, F::EBITS);
        2 + F::EBITS
    } else {
        for (i, &v) in iblock.iter_mut().zip(block) {
            *i = v.reinterpret();
        }
        w.bits(3, 2);
        2
    };
    rev_encode_iblock(w, budgets(p, bits), p.maxprec, dims, iblock);
}
