//! One zfp block decoded: the embedded bit-plane coder (group tests and unary run lengths), integer blocks in
//! the lossy and reversible modes, and floating-point blocks (a common exponent, then integers converted back
//! by the block-floating-point transform, or in the reversible mode reinterpreted as they are).
//!
//! Bit counts follow the reference decoder's unsigned arithmetic: the budgets left after a block's header
//! are `minbits - bits` and `maxbits - bits`, wrapping where the header is longer, and a block shorter than
//! `minbits` is followed by padding that is skipped.

use super::bitreader::BitReader;
use super::transform::{inv_order, inv_xform, perm, rev_inv_xform, Coef};
use super::Params;
use crate::error::Result;

/// Decodes the bit planes of `data.len()` (at most 256) negabinary coefficients, at most `maxbits` bits and
/// `maxprec` planes from the most significant of the `T::BITS`; returns the bits read.
fn decode_ints<T: Coef>(
    r: &mut BitReader<'_>,
    maxbits: u32,
    maxprec: u32,
    data: &mut [u64],
) -> Result<u32> {
    let size = data.len();
    data.fill(0);
    let kmin = T::BITS.saturating_sub(maxprec);
    let mut bits = maxbits;
    let mut k = T::BITS;
    let mut n = 0usize;
    while bits > 0 && k > kmin {
        k -= 1;
        // The first n coefficients (those already significant) each have a bit in this plane.
        let m = n.min(bits as usize);
        bits -= m as u32;
        let mut i = 0;
        while i < m {
            let take = (m - i).min(56);
            let x = r.bits(take as u32)?;
            // Every coefficient's bit, set or not: a fixed count the compiler vectorises, no branch per bit.
            for (j, d) in data[i..i + take].iter_mut().enumerate() {
                *d |= ((x >> j) & 1) << k;
            }
            i += take;
        }
        // The rest: a group test (is any still to become significant?), then a unary run to the next one.
        while bits > 0 && n < size {
            bits -= 1;
            if r.bit()? == 0 {
                break;
            }
            while bits > 0 && n + 1 < size {
                bits -= 1;
                if r.bit()? != 0 {
                    break;
                }
                n += 1;
            }
            data[n] |= 1u64 << k;
            n += 1;
        }
    }
    Ok(maxbits - bits)
}

/// Decodes one integer block of `dims` dimensions in the lossy modes into `iblock`: the coefficients, then
/// the padding up to `minbits`, then the inverse transform. Returns the bits taken.
fn int_block<T: Coef>(
    r: &mut BitReader<'_>,
    (minbits, maxbits): (i32, u32),
    maxprec: u32,
    dims: u32,
    iblock: &mut [T],
) -> Result<u32> {
    let mut ublock = [0u64; 256];
    let ublock = &mut ublock[..iblock.len()];
    let mut bits = decode_ints::<T>(r, maxbits, maxprec, ublock)? as i32;
    if bits < minbits {
        r.skip((minbits - bits) as u64);
        bits = minbits;
    }
    inv_order(ublock, iblock, perm(dims));
    inv_xform(iblock, dims);
    Ok(bits as u32)
}

/// Decodes one integer block in the reversible mode: its precision, the coefficients, the padding up to
/// `minbits`, then the inverse reversible transform. Returns the bits taken.
fn rev_int_block<T: Coef>(
    r: &mut BitReader<'_>,
    (minbits, maxbits): (i32, u32),
    dims: u32,
    iblock: &mut [T],
) -> Result<u32> {
    let mut ublock = [0u64; 256];
    let ublock = &mut ublock[..iblock.len()];
    let prec = r.bits(T::PBITS)? as u32 + 1;
    let mut bits = T::PBITS as i32;
    bits = bits
        .wrapping_add(decode_ints::<T>(r, maxbits.wrapping_sub(T::PBITS), prec, ublock)? as i32);
    if bits < minbits {
        r.skip((minbits - bits) as u64);
        bits = minbits;
    }
    inv_order(ublock, iblock, perm(dims));
    rev_inv_xform(iblock, dims);
    Ok(bits as u32)
}

/// The budgets left to a block's integers after `bits` header bits: `(minbits, maxbits)` as the reference
/// passes them (its unsigned differences, the first read as signed).
pub(crate) fn budgets(p: &Params, bits: u32) -> (i32, u32) {
    (
        p.minbits.wrapping_sub(bits) as i32,
        p.maxbits.wrapping_sub(bits),
    )
}

/// Decodes one block of 32- or 64-bit integers (`T`) of `dims` dimensions into `out` (each value's bits).
pub(crate) fn decode_int<T: Coef>(
    r: &mut BitReader<'_>,
    p: &Params,
    dims: u32,
    out: &mut [u64],
) -> Result<()> {
    let mut iblock = [T::default(); 256];
    let iblock = &mut iblock[..out.len()];
    if p.reversible() {
        rev_int_block(r, budgets(p, 0), dims, iblock)?;
    } else {
        int_block(r, budgets(p, 0), p.maxprec, dims, iblock)?;
    }
    for (o, i) in out.iter_mut().zip(iblock.iter()) {
        *o = i.raw();
    }
    Ok(())
}

/// A floating-point type zfp codes: its integer type, exponent width and bias, and the conversions back.
pub(crate) trait Real {
    /// The integers its blocks are coded as.
    type I: Coef;
    /// Bits of a block's coded exponent.
    const EBITS: u32;
    /// The exponent's bias.
    const EBIAS: i32;
    /// The bits of `2^(emax - (BITS - 2)) * i`, computed as the reference does in this type.
    fn dequantize(i: Self::I, emax: i32) -> u64;
}

/// `2^e` as an f32, as `ldexpf(1, e)` rounds it (0 below the subnormals, infinity above the range).
pub(crate) fn pow2_f32(e: i32) -> f32 {
    match e {
        128.. => f32::INFINITY,
        -126..=127 => f32::from_bits(((e + 127) as u32) << 23),
        -149..=-127 => f32::from_bits(1u32 << (e + 149)),
        _ => 0.0,
    }
}

/// `2^e` as an f64, as `ldexp(1, e)` rounds it.
pub(crate) fn pow2_f64(e: i32) -> f64 {
    match e {
        1024.. => f64::INFINITY,
        -1022..=1023 => f64::from_bits(((e + 1023) as u64) << 52),
        -1074..=-1023 => f64::from_bits(1u64 << (e + 1074)),
        _ => 0.0,
    }
}

impl Real for f32 {
    type I = i32;
    const EBITS: u32 = 8;
    const EBIAS: i32 = 127;
    #[inline]
    fn dequantize(i: i32, emax: i32) -> u64 {
        u64::from((pow2_f32(emax - 30) * i as f32).to_bits())
    }
}

impl Real for f64 {
    type I = i64;
    const EBITS: u32 = 11;
    const EBIAS: i32 = 1023;
    #[inline]
    fn dequantize(i: i64, emax: i32) -> u64 {
        (pow2_f64(emax - 62) * i as f64).to_bits()
    }
}

/// The bit planes a block of common exponent `emax` keeps: zfp's `precision()`.
pub(crate) fn precision(emax: i32, maxprec: u32, minexp: i32, dims: u32) -> u32 {
    let planes = i64::from(emax) - i64::from(minexp) + 2 * i64::from(dims) + 2;
    (planes.max(0) as u64).min(u64::from(maxprec)) as u32
}

/// Decodes one block of floats (`F`) of `dims` dimensions into `out` (each value's bits).
pub(crate) fn decode_float<F: Real>(
    r: &mut BitReader<'_>,
    p: &Params,
    dims: u32,
    out: &mut [u64],
) -> Result<()> {
    let mut iblock = [F::I::default(); 256];
    let iblock = &mut iblock[..out.len()];
    let mut bits = 1u32;
    if r.bit()? == 0 {
        // All zeros, padded to minbits.
        out.fill(0);
        if p.minbits > bits {
            r.skip(u64::from(p.minbits - bits));
        }
        return Ok(());
    }
    if p.reversible() {
        bits += 1;
        if r.bit()? != 0 {
            // Integers reinterpreted as floats.
            rev_int_block(r, budgets(p, bits), dims, iblock)?;
            for (o, i) in out.iter_mut().zip(iblock.iter()) {
                *o = i.sign_magnitude();
            }
            return Ok(());
        }
        bits += F::EBITS;
        let emax = r.bits(F::EBITS)? as i32 - F::EBIAS;
        rev_int_block(r, budgets(p, bits), dims, iblock)?;
        if emax == -F::EBIAS {
            out.fill(0);
        } else {
            for (o, &i) in out.iter_mut().zip(iblock.iter()) {
                *o = F::dequantize(i, emax);
            }
        }
        return Ok(());
    }
    bits += F::EBITS;
    let emax = r.bits(F::EBITS)? as i32 - F::EBIAS;
    let maxprec = precision(emax, p.maxprec, p.minexp, dims);
    int_block(r, budgets(p, bits), maxprec, dims, iblock)?;
    for (o, &i) in out.iter_mut().zip(iblock.iter()) {
        *o = F::dequantize(i, emax);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes bits least significant first, for hand-made streams.
    #[derive(Default)]
    struct Writer {
        bytes: Vec<u8>,
        n: usize,
    }

    impl Writer {
        fn put(&mut self, value: u64, k: u32) -> &mut Self {
            for i in 0..k {
                if self.n.is_multiple_of(8) {
                    self.bytes.push(0);
                }
                *self.bytes.last_mut().unwrap() |= (((value >> i) & 1) as u8) << (self.n % 8);
                self.n += 1;
            }
            self
        }
    }

    /// The group-testing coder, written from its description, to check the decoder against.
    fn encode_ints(w: &mut Writer, data: &[u64], intprec: u32, maxprec: u32) {
        let size = data.len();
        let kmin = intprec.saturating_sub(maxprec);
        let mut n = 0;
        for k in (kmin..intprec).rev() {
            let plane: Vec<u64> = data.iter().map(|&d| (d >> k) & 1).collect();
            for &b in &plane[..n] {
                w.put(b, 1);
            }
            let mut i = n;
            while i < size {
                let any = plane[i..].contains(&1);
                w.put(u64::from(any), 1);
                if !any {
                    break;
                }
                while i + 1 < size && plane[i] == 0 {
                    w.put(0, 1);
                    i += 1;
                }
                if i + 1 < size {
                    w.put(1, 1);
                }
                i += 1;
                n = i;
            }
        }
    }

    #[test]
    fn bit_planes_decode_what_the_coder_wrote() {
        let mut rng = crate::test_rng::TestRng::new(0xb17);
        for size in [4usize, 16, 64, 256] {
            for _ in 0..50 {
                let data: Vec<u64> = (0..size)
                    .map(|_| {
                        let v = rng.next();
                        if v.is_multiple_of(3) {
                            0
                        } else {
                            v >> (v % 64) as u32 & 0xffff_ffff
                        }
                    })
                    .collect();
                let mut w = Writer::default();
                encode_ints(&mut w, &data, 32, 32);
                let mut r = BitReader::new(&w.bytes);
                let mut got = vec![0u64; size];
                let bits = decode_ints::<i32>(&mut r, u32::MAX, 32, &mut got).unwrap();
                assert_eq!(got, data);
                assert_eq!(bits as usize, w.n);
            }
        }
    }

    #[test]
    fn a_budget_stops_the_planes_exactly() {
        let data: Vec<u64> = (0..16).map(|i| (i * 2654435761u64) & 0xffff_ffff).collect();
        let mut w = Writer::default();
        encode_ints(&mut w, &data, 32, 32);
        for budget in [0u32, 1, 7, 40, 100] {
            let mut r = BitReader::new(&w.bytes);
            let mut got = vec![0u64; 16];
            let bits = decode_ints::<i32>(&mut r, budget, 32, &mut got).unwrap();
            assert_eq!(bits, budget.min(w.n as u32));
            assert_eq!(r.position(), u64::from(bits));
        }
        // Budgets that end on a whole plane decode that many planes exactly.
        let mut r = BitReader::new(&w.bytes);
        let mut got = vec![0u64; 16];
        decode_ints::<i32>(&mut r, u32::MAX, 3, &mut got).unwrap();
        for (g, d) in got.iter().zip(&data) {
            assert_eq!(*g, d & 0xe000_0000);
        }
    }

    #[test]
    fn zero_float_blocks_take_minbits() {
        let p = Params {
            minbits: 20,
            maxbits: 20,
            maxprec: 64,
            minexp: -1074,
        };
        let bytes = [0u8; 8];
        let mut r = BitReader::new(&bytes);
        let mut out = [1u64; 16];
        decode_float::<f32>(&mut r, &p, 2, &mut out).unwrap();
        assert_eq!(out, [0; 16]);
        assert_eq!(r.position(), 20);
    }

    #[test]
    fn powers_of_two_round_as_ldexp() {
        assert_eq!(pow2_f32(0), 1.0);
        assert_eq!(pow2_f32(-149), f32::from_bits(1));
        assert_eq!(pow2_f32(-150), 0.0);
        assert_eq!(pow2_f32(-127), f32::from_bits(1 << 22));
        assert_eq!(pow2_f32(128), f32::INFINITY);
        assert_eq!(pow2_f64(-1074), f64::from_bits(1));
        assert_eq!(pow2_f64(-1075), 0.0);
        assert_eq!(pow2_f64(1023), 2f64.powi(1023));
        assert_eq!(precision(10, 64, -1074, 3), 64);
        assert_eq!(precision(-20, 64, -10, 1), 0);
        assert_eq!(precision(0, 64, -10, 2), 16);
    }
}
