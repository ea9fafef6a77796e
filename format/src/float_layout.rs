//! Floats of any HDF5 bit layout other than IEEE binary16/32/64: bfloat16 and the FP8 types HDF5 2.0
//! predefines, x87 80-bit extended and IEEE 128-bit floats (numpy's `longdouble` as h5py writes it), or any
//! layout a writer defines, decoded the way libhdf5 converts them to native floats (IEEE rules: an all-ones
//! exponent is infinity or NaN, a zero exponent a subnormal). Layouts whose every value is an f32 read as f32,
//! those whose every value is an f64 as f64, wider ones as f64 rounded to nearest (ties to even), overflowing to
//! infinity, as a conversion to `double` gives them. Values are encoded into any such layout by the same rules
//! (rounded to nearest, ties to even; a value of the largest finite exponent that rounds past it saturates at
//! the largest finite value, as libhdf5 converts it, and larger ones are infinite), so rows can be appended to
//! other programs' datasets of these types.

use crate::array::Data;
use crate::datatype::Datatype;
use crate::error::{unsupported, Result};

/// Where the fields of one float layout sit, checked to lie inside its element.
#[derive(Clone, Copy, Debug)]
struct Layout {
    size: usize,
    be: bool,
    sign_loc: u32,
    exp_loc: u32,
    exp_size: u32,
    mant_loc: u32,
    mant_size: u32,
    bias: i64,
    /// The mantissa's leading bit is stored (x87 extended), not implied (IEEE).
    explicit: bool,
}

impl Layout {
    fn of(dt: &Datatype) -> Result<Layout> {
        let Datatype::Float {
            size,
            be,
            sign_loc,
            exp_loc,
            exp_size,
            mant_loc,
            mant_size,
            bias,
            norm,
        } = dt
        else {
            return unsupported(format!("{} is not a float", dt.describe()));
        };
        let l = Layout {
            size: *size,
            be: *be,
            sign_loc: u32::from(*sign_loc),
            exp_loc: u32::from(*exp_loc),
            exp_size: u32::from(*exp_size),
            mant_loc: u32::from(*mant_loc),
            mant_size: u32::from(*mant_size),
            bias: i64::from(*bias),
            // On disk: 0 no normalisation, 1 leading bit stored and set, 2 leading bit implied.
            explicit: *norm != 2,
        };
        let bits = (*size as u32).saturating_mul(8);
        if *size == 0 {
            return unsupported("float of 0 bytes");
        }
        if *norm > 2 {
            return unsupported(format!("float normalisation {norm}"));
        }
        // Up to 16 bytes the element is one u128; wider ones are narrowed first (see `narrowed`).
        let max_mantissa = if *size <= 16 { 120 } else { 255 };
        let inside = |loc: u32, len: u32| loc.checked_add(len).is_some_and(|end| end <= bits);
        if !(1..=30).contains(&l.exp_size)
            || !(1..=max_mantissa).contains(&l.mant_size)
            || !inside(l.exp_loc, l.exp_size)
            || !inside(l.mant_loc, l.mant_size)
            || l.sign_loc >= bits
        {
            return unsupported(format!(
                "float of {size} bytes with sign at bit {sign_loc}, exponent {exp_size} bits at {exp_loc}, \
                 mantissa {mant_size} bits at {mant_loc}"
            ));
        }
        Ok(l)
    }

    /// A layout wider than 16 bytes (its fields within the first 32, as the 8-bit field positions of a float
    /// type put them) as a 16-byte one with the same sign, exponent and bias and the mantissa's top bits; with
    /// how many low mantissa bits it drops. Dropped bits fold into the last kept one (round to odd), so values
    /// round to f64 as the full layout's would: at least 97 bits are kept, far more than f64's 53 plus 2.
    fn narrowed(&self) -> (Layout, u32) {
        let kept = self.mant_size.min(127 - self.exp_size);
        let n = Layout {
            size: 16,
            be: false,
            sign_loc: 127,
            exp_loc: kept,
            exp_size: self.exp_size,
            mant_loc: 0,
            mant_size: kept,
            bias: self.bias,
            explicit: self.explicit,
        };
        (n, self.mant_size - kept)
    }

    /// The element `c` of a layout wider than 16 bytes as a word of its [`narrowed`](Self::narrowed) layout
    /// `n`, which drops `dropped` mantissa bits.
    fn narrow_word(&self, c: &[u8], n: &Layout, dropped: u32) -> u128 {
        let mut le = [0u8; 32];
        if self.be {
            for (d, s) in le.iter_mut().zip(c.iter().rev()) {
                *d = *s;
            }
        } else {
            for (d, s) in le.iter_mut().zip(c) {
                *d = *s;
            }
        }
        let word = U256::from_le(&le);
        let mant = word.field(self.mant_loc, self.mant_size);
        let mut kept = mant.shr(dropped).lo;
        if mant.field(0, dropped) != U256::ZERO {
            kept |= 1;
        }
        let e = word.field(self.exp_loc, self.exp_size).lo;
        let sign = word.field(self.sign_loc, 1).lo;
        kept | (e << n.exp_loc) | (sign << 127)
    }

    /// The `size` bytes (in the layout's byte order) of a word of the [`narrowed`](Self::narrowed) layout `n`,
    /// which drops `dropped` mantissa bits.
    fn widened_bytes(&self, w: u128, n: &Layout, dropped: u32) -> Vec<u8> {
        let mant = w & ((1u128 << n.mant_size) - 1);
        let e = (w >> n.exp_loc) & ((1u128 << n.exp_size) - 1);
        let word = U256 { lo: mant, hi: 0 }
            .shl(self.mant_loc + dropped)
            .or(U256 { lo: e, hi: 0 }.shl(self.exp_loc))
            .or(U256 {
                lo: w >> 127,
                hi: 0,
            }
            .shl(self.sign_loc));
        let mut out = word.to_le().to_vec();
        out.resize(self.size, 0);
        if self.be {
            out.reverse();
        }
        out
    }

    /// Bits of precision: the stored mantissa, plus the implied leading bit.
    fn precision(&self) -> u32 {
        self.mant_size + u32::from(!self.explicit)
    }

    /// Power of two of the mantissa's last bit in a subnormal (zero exponent) value.
    fn subnormal_scale(&self) -> i64 {
        1 - self.bias - i64::from(self.precision()) + 1
    }

    /// Unbiased exponent of the largest finite value and of the smallest subnormal's last bit.
    fn range(&self) -> (i64, i64) {
        let max = (1i64 << self.exp_size) - 2 - self.bias;
        (max, self.subnormal_scale())
    }

    /// Whether every value of the layout is an f32 exactly (else an f64, when [`fits_f64`](Self::fits_f64)).
    fn fits_f32(&self) -> bool {
        let (max, min) = self.range();
        self.precision() <= 24 && max <= 127 && min >= -149
    }

    /// The element's bits as one integer (bit 0 the least significant of the value).
    fn word(&self, c: &[u8]) -> u128 {
        let mut v = 0u128;
        if self.be {
            for b in c {
                v = (v << 8) | u128::from(*b);
            }
        } else {
            for b in c.iter().rev() {
                v = (v << 8) | u128::from(*b);
            }
        }
        v
    }

    /// The value of one element: exact when the layout's values are all f64 values, else rounded to nearest.
    fn value(&self, w: u128) -> f64 {
        let field = |loc: u32, len: u32| (w >> loc) & ((1u128 << len) - 1);
        let e = field(self.exp_loc, self.exp_size) as i64;
        let m = field(self.mant_loc, self.mant_size);
        let emax = (1i64 << self.exp_size) - 1;
        let ms = self.mant_size;
        let mag = if e == emax {
            // A stored leading bit is not part of the fraction that tells infinity from NaN.
            let fraction = if self.explicit {
                m & ((1u128 << (ms - 1)) - 1)
            } else {
                m
            };
            if fraction == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else {
            let scale = self.subnormal_scale();
            match (e, self.explicit) {
                (0, _) => scaled(m, scale),
                (_, true) => scaled(m, scale + e - 1),
                (_, false) => scaled(m | (1u128 << ms), scale + e - 1),
            }
        };
        if (w >> self.sign_loc) & 1 == 1 {
            -mag
        } else {
            mag
        }
    }
}

impl Layout {
    /// The element bits of `v` in this layout.
    fn bits_of(&self, v: f64) -> u128 {
        let ms = self.mant_size;
        let emax = (1u128 << self.exp_size) - 1;
        // The stored leading bit of an explicit layout is set in every normal value, infinity and NaN.
        let lead = if self.explicit { 1u128 << (ms - 1) } else { 0 };
        let (e, m) = if v.is_nan() {
            // A quiet NaN: the fraction's top bit.
            let top = if self.explicit && ms >= 2 {
                1u128 << (ms - 2)
            } else {
                1u128 << (ms - 1)
            };
            (emax, lead | top)
        } else if v.is_infinite() {
            (emax, lead)
        } else {
            self.finite(v.abs()).unwrap_or((emax, lead))
        };
        let sign = u128::from(v.is_sign_negative() && !v.is_nan());
        (sign << self.sign_loc) | (e << self.exp_loc) | (m << self.mant_loc)
    }

    /// Exponent and mantissa fields of finite `v` ≥ 0, rounded to nearest (ties to even); `None` when it
    /// rounds past the largest finite value.
    fn finite(&self, v: f64) -> Option<(u128, u128)> {
        if v == 0.0 {
            return Some((0, 0));
        }
        // v = big × 2^k with `big` an integer of at most 53 bits.
        let bits = v.to_bits();
        let (exp, frac) = ((bits >> 52) as i64, bits & ((1u64 << 52) - 1));
        let (big, k) = if exp == 0 {
            (frac, -1074i64)
        } else {
            (frac | (1u64 << 52), exp - 1075)
        };
        let p = i64::from(self.precision());
        let scale = self.subnormal_scale();
        // The power of two of the result's last bit: `p` bits below the value's top bit, or the subnormal step.
        let top = k + 63 - i64::from(big.leading_zeros());
        let mut last = (top - p + 1).max(scale);
        let mut q = shift_round(u128::from(big), k - last);
        let carried = q >> p != 0;
        if carried {
            // Rounded up to the next power of two.
            q >>= 1;
            last += 1;
        }
        if q == 0 {
            return Some((0, 0));
        }
        let normal = q >> (p - 1) != 0;
        let e = if normal { last - scale + 1 } else { 0 };
        let emax = (1i64 << self.exp_size) - 1;
        if e >= emax {
            // A value whose own exponent is the largest finite one stays finite when rounding would carry it
            // past: the largest finite value, as libhdf5's conversion gives it. Larger values are infinite.
            if carried && e - 1 < emax {
                let all = (1u128 << self.mant_size) - 1;
                return Some(((emax - 1) as u128, all));
            }
            return None;
        }
        let m = if normal && !self.explicit {
            q & ((1u128 << self.mant_size) - 1)
        } else {
            q
        };
        Some((e as u128, m))
    }
}

/// `m` × 2^`by` rounded to an integer, ties to even (`m` below 2^53, so a left shift stays under 2^128 for the
/// layouts' at most 121 bits of precision).
fn shift_round(m: u128, by: i64) -> u128 {
    if by >= 0 {
        return m << by.min(127);
    }
    let shift = -by;
    if shift > 64 {
        return 0;
    }
    let q = m >> shift;
    let rest = m & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    q + u128::from(rest > half || (rest == half && q & 1 == 1))
}

/// A 256-bit unsigned integer: the first 32 bytes of a float element wider than 16.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct U256 {
    lo: u128,
    hi: u128,
}

impl U256 {
    const ZERO: U256 = U256 { lo: 0, hi: 0 };

    fn from_le(b: &[u8; 32]) -> U256 {
        let mut lo = [0u8; 16];
        let mut hi = [0u8; 16];
        lo.copy_from_slice(&b[..16]);
        hi.copy_from_slice(&b[16..]);
        U256 {
            lo: u128::from_le_bytes(lo),
            hi: u128::from_le_bytes(hi),
        }
    }

    fn to_le(self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[..16].copy_from_slice(&self.lo.to_le_bytes());
        b[16..].copy_from_slice(&self.hi.to_le_bytes());
        b
    }

    fn shr(self, s: u32) -> U256 {
        match s {
            0 => self,
            1..=127 => U256 {
                lo: (self.lo >> s) | (self.hi << (128 - s)),
                hi: self.hi >> s,
            },
            128..=255 => U256 {
                lo: self.hi >> (s - 128),
                hi: 0,
            },
            _ => U256::ZERO,
        }
    }

    fn shl(self, s: u32) -> U256 {
        match s {
            0 => self,
            1..=127 => U256 {
                lo: self.lo << s,
                hi: (self.hi << s) | (self.lo >> (128 - s)),
            },
            128..=255 => U256 {
                lo: 0,
                hi: self.lo << (s - 128),
            },
            _ => U256::ZERO,
        }
    }

    fn or(self, o: U256) -> U256 {
        U256 {
            lo: self.lo | o.lo,
            hi: self.hi | o.hi,
        }
    }

    /// Bits `loc..loc + len` (len ≤ 256), as the low bits of the result.
    fn field(self, loc: u32, len: u32) -> U256 {
        let v = self.shr(loc);
        match len {
            0 => U256::ZERO,
            1..=127 => U256 {
                lo: v.lo & ((1u128 << len) - 1),
                hi: 0,
            },
            128 => U256 { lo: v.lo, hi: 0 },
            129..=255 => U256 {
                lo: v.lo,
                hi: v.hi & ((1u128 << (len - 128)) - 1),
            },
            _ => v,
        }
    }
}

/// Encodes `values` as elements of the float type `dt` (any layout: IEEE or not, either byte order).
pub fn encode(dt: &Datatype, values: &[f64]) -> Result<Vec<u8>> {
    let l = Layout::of(dt)?;
    let mut out = Vec::with_capacity(values.len() * l.size);
    if l.size > 16 {
        let (n, dropped) = l.narrowed();
        for &v in values {
            out.extend(l.widened_bytes(n.bits_of(v), &n, dropped));
        }
        return Ok(out);
    }
    for &v in values {
        let le = l.bits_of(v).to_le_bytes();
        let bytes = &le[..l.size];
        if l.be {
            out.extend(bytes.iter().rev());
        } else {
            out.extend_from_slice(bytes);
        }
    }
    Ok(out)
}

/// `m` × 2^`k` as the nearest f64 (ties to even), infinity beyond f64's range.
fn scaled(m: u128, k: i64) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let bits = 128 - i64::from(m.leading_zeros());
    // The power of two of the result's last bit: 53 bits of precision, or f64's subnormal step.
    let last = (k + bits - 53).max(-1074);
    let (mut m, mut k) = (m, k);
    if last > k {
        let shift = last - k;
        m = if shift > 128 {
            // Below half of f64's smallest step.
            0
        } else {
            let (q, rest) = if shift == 128 {
                (0, m)
            } else {
                (m >> shift, m & ((1u128 << shift) - 1))
            };
            let half = 1u128 << (shift - 1);
            q + u128::from(rest > half || (rest == half && q & 1 == 1))
        };
        k = last;
    }
    if k + 128 - i64::from(m.leading_zeros()) > 1024 {
        return f64::INFINITY;
    }
    // `m` now has at most 54 bits (53, or 2^53 after rounding up) and `k` ≥ -1074: an exact product.
    m as f64 * pow2(k)
}

/// 2^k exactly for k in f64's range (subnormal powers included); saturating outside it.
fn pow2(k: i64) -> f64 {
    if k > 1023 {
        f64::INFINITY
    } else if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else if k >= -1074 {
        f64::from_bits(1u64 << (k + 1074))
    } else {
        0.0
    }
}

/// Decodes elements of the float type `dt` (any layout but IEEE's, which callers take faster paths for)
/// into f32 when every value of the layout is one exactly, else f64 (rounded when the layout is wider).
pub fn decode(dt: &Datatype, raw: &[u8]) -> Result<Data> {
    let l = Layout::of(dt)?;
    let elems = raw.chunks_exact(l.size);
    if l.size > 16 {
        let (n, dropped) = l.narrowed();
        let values = elems.map(|c| n.value(l.narrow_word(c, &n, dropped)));
        return Ok(if l.fits_f32() {
            Data::F32(values.map(|v| v as f32).collect())
        } else {
            Data::F64(values.collect())
        });
    }
    if l.fits_f32() {
        if l.size == 2
            && (l.sign_loc, l.exp_loc, l.exp_size, l.mant_loc, l.mant_size) == (15, 7, 8, 0, 7)
            && l.bias == 127
        {
            // bfloat16: the high half of an f32.
            return Ok(Data::F32(
                elems
                    .map(|c| f32::from_bits((l.word(c) as u32) << 16))
                    .collect(),
            ));
        }
        Ok(Data::F32(
            elems.map(|c| l.value(l.word(c)) as f32).collect(),
        ))
    } else {
        Ok(Data::F64(elems.map(|c| l.value(l.word(c))).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(size: usize, sign: u8, eloc: u8, esize: u8, msize: u8, bias: u32) -> Datatype {
        Datatype::Float {
            size,
            be: false,
            sign_loc: sign,
            exp_loc: eloc,
            exp_size: esize,
            mant_loc: 0,
            mant_size: msize,
            bias,
            norm: 2,
        }
    }

    fn f32s(dt: &Datatype, raw: &[u8]) -> Vec<f32> {
        match decode(dt, raw).unwrap() {
            Data::F32(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ieee_layouts_through_the_generic_path_equal_the_native_ones() {
        // The generic decoder, forced onto IEEE binary16 and binary32 bit patterns, agrees with `half` and
        // Rust's own f32 on every binary16 and a spread of binary32 patterns (NaN compared as NaN).
        let h = float(2, 15, 10, 5, 10, 15);
        let l = Layout::of(&h).unwrap();
        for bits in 0..=u16::MAX {
            let want = half::f16::from_bits(bits).to_f64();
            let got = l.value(u128::from(bits));
            assert!(got == want || (got.is_nan() && want.is_nan()), "{bits:#x}");
        }
        let s = float(4, 31, 23, 8, 23, 127);
        let l = Layout::of(&s).unwrap();
        let mut x = 0x9e37_79b9u32;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            for bits in [x, x & 0x807f_ffff, x | 0x7f80_0000, x & 0x8000_00ff] {
                let want = f32::from_bits(bits);
                let got = l.value(u128::from(bits)) as f32;
                assert!(got == want || (got.is_nan() && want.is_nan()), "{bits:#x}");
            }
        }
    }

    /// Random f64 values spread over every magnitude a small float meets: normal, subnormal, overflowing,
    /// exact ties, signed zeros and the specials.
    fn spread(n: usize) -> Vec<f64> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut out = vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.0,
            -1.5,
            f64::MAX,
            f64::MIN_POSITIVE,
        ];
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let exp = (x % 120) as i32 - 60;
            let m = f64::from_bits((x >> 12) | 0x3ff0_0000_0000_0000);
            out.push(if x & 1 == 1 { -m } else { m } * 2f64.powi(exp));
            // A tie in a layout of 7, 10 or 23 fraction bits: a halfway bit and nothing below it.
            let keep = [7u32, 10, 23][(x >> 40) as usize % 3];
            let tie = f64::from_bits((x & !((1u64 << (52 - keep)) - 1)) | (1u64 << (51 - keep)));
            out.push(tie);
        }
        out
    }

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn encoding_rounds_as_ieee_conversions_do() {
        // The generic encoder on IEEE binary16 and binary32 layouts gives what `half` and Rust's `as f32` give.
        let h = float(2, 15, 10, 5, 10, 15);
        let s = float(4, 31, 23, 8, 23, 127);
        let bf = float(2, 15, 7, 8, 7, 127);
        for v in spread(200_000) {
            if v.is_nan() {
                // Payloads differ by converter; NaN staying NaN is checked below.
                continue;
            }
            // IEEE overflows to infinity where a value of the largest exponent rounds past it; we saturate.
            let ieee = |want: f64, max: f64, top: f64| {
                if want.is_infinite() && v.abs() < top {
                    max.copysign(v)
                } else {
                    want
                }
            };
            let got = encode(&s, &[v]).unwrap();
            let want = ieee(f64::from(v as f32), f64::from(f32::MAX), 2f64.powi(128)) as f32;
            assert_eq!(got, want.to_le_bytes(), "f32 of {v:e}");
            // `half` takes an f64 to binary16 or bfloat16 through f32 (rounding twice): compared where f32 is
            // exact, so that its one rounding is the one that counts.
            let v = f64::from(v as f32);
            let got = encode(&h, &[v]).unwrap();
            let want = ieee(half::f16::from_f32(v as f32).to_f64(), 65504.0, 65536.0);
            assert_eq!(got, half::f16::from_f64(want).to_le_bytes(), "f16 of {v:e}");
            let got = encode(&bf, &[v]).unwrap();
            let bf_max = 3.3895313892515355e38;
            let want = ieee(
                half::bf16::from_f32(v as f32).to_f64(),
                bf_max,
                2f64.powi(128),
            );
            assert_eq!(
                got,
                half::bf16::from_f64(want).to_le_bytes(),
                "bf16 of {v:e}"
            );
        }
        // Every value of the small layouts comes back to its own bits (NaN aside).
        for dt in [
            float(1, 7, 3, 4, 3, 7),
            float(1, 7, 2, 5, 2, 15),
            bf.clone(),
        ] {
            let l = Layout::of(&dt).unwrap();
            for bits in 0..(1u128 << (8 * l.size)) {
                let v = l.value(bits);
                if !v.is_nan() {
                    assert_eq!(l.bits_of(v), bits, "{bits:#x}: {v:e}");
                }
            }
        }
        // NaN stays NaN; beyond the largest finite E4M3 (240) values round to infinity, or down to it.
        let e4m3 = float(1, 7, 3, 4, 3, 7);
        let back = |v: f64| match decode(&e4m3, &encode(&e4m3, &[v]).unwrap()).unwrap() {
            Data::F32(x) => x[0],
            other => panic!("{other:?}"),
        };
        assert!(back(f64::NAN).is_nan());
        assert_eq!(back(247.9), 240.0);
        assert_eq!(back(255.9), 240.0);
        assert_eq!(back(256.0), f32::INFINITY);
        assert_eq!(back(-1e9), f32::NEG_INFINITY);
        assert_eq!(back(2f64.powi(-10)), 0.0);
        assert_eq!(back(2f64.powi(-10) * 1.01), 2f32.powi(-9));
    }

    #[test]
    fn fp8_and_bfloat16_follow_ieee_rules() {
        // E4M3 as HDF5 2.0 defines it: 0x78 is infinity, 0x77 the largest finite value (240).
        let e4m3 = float(1, 7, 3, 4, 3, 7);
        let v = f32s(&e4m3, &[0x00, 0x01, 0x08, 0x77, 0x78, 0x79, 0x80, 0xf8]);
        assert_eq!(&v[..5], &[0.0, 0.001953125, 0.015625, 240.0, f32::INFINITY]);
        assert!(v[5].is_nan());
        assert!(v[6] == 0.0 && v[6].is_sign_negative());
        assert_eq!(v[7], f32::NEG_INFINITY);
        let e5m2 = float(1, 7, 2, 5, 2, 15);
        assert_eq!(
            f32s(&e5m2, &[0x01, 0x7b, 0x7c]),
            vec![2f32.powi(-16), 57344.0, f32::INFINITY]
        );
        let bf16 = float(2, 15, 7, 8, 7, 127);
        let v = f32s(&bf16, &[0x80, 0x3f, 0x01, 0x00, 0x80, 0xff]);
        assert_eq!(v, vec![1.0, f32::from_bits(0x0001_0000), f32::NEG_INFINITY]);
        // The same big-endian.
        let mut be = bf16.clone();
        if let Datatype::Float { be: b, .. } = &mut be {
            *b = true;
        }
        assert_eq!(f32s(&be, &[0x3f, 0x80]), vec![1.0]);
    }

    #[test]
    fn wide_layouts_decode_to_f64_and_impossible_ones_are_refused() {
        // A 24-bit float with a 9-bit exponent: f32 cannot hold its range.
        let t = float(3, 23, 14, 9, 14, 255);
        match decode(&t, &[0x01, 0x00, 0x00]).unwrap() {
            Data::F64(v) => assert_eq!(v, vec![2f64.powi(-268)]),
            other => panic!("{other:?}"),
        }
        // Fields outside the element.
        assert!(decode(&float(2, 15, 10, 8, 10, 15), &[0, 0]).is_err());
        assert!(decode(&float(17, 136, 112, 15, 112, 16383), &[0; 17]).is_err());
        // Wider than 16 bytes: binary128's fields in 17 bytes read as binary128 (1.5, then -2 with a
        // mantissa bit past f64's that rounds away), and a 20-byte layout with a 140-bit mantissa.
        let q17 = float(17, 127, 112, 15, 112, 16383);
        let mut raw = [0u8; 34];
        raw[..16].copy_from_slice(&((16383u128 << 112) | (1u128 << 111)).to_le_bytes());
        raw[17..33].copy_from_slice(&((1u128 << 127) | (16384u128 << 112) | 1).to_le_bytes());
        assert_eq!(decode(&q17, &raw).unwrap(), Data::F64(vec![1.5, -2.0]));
        let w20 = float(20, 159, 140, 19, 140, 262143);
        let one_third = U256 { lo: 0, hi: 0 }.or(U256 { lo: 262141, hi: 0 }.shl(140));
        // 1/3 = 0.0101..., the mantissa's 140 bits all 0101...
        let fraction = U256 {
            lo: u128::MAX / 3,
            hi: (1u128 << 12) / 3,
        };
        let mut le = one_third.or(fraction.field(0, 140)).to_le().to_vec();
        le.truncate(20);
        match decode(&w20, &le).unwrap() {
            Data::F64(v) => assert_eq!(v, vec![1.0 / 3.0]),
            other => panic!("{other:?}"),
        }
        let back = encode(&w20, &[1.0 / 3.0, -0.0, f64::INFINITY]).unwrap();
        assert_eq!(back.len(), 60);
        match decode(&w20, &back).unwrap() {
            Data::F64(v) => {
                assert_eq!(&v[..1], &[1.0 / 3.0]);
                assert!(v[1] == 0.0 && v[1].is_sign_negative() && v[2] == f64::INFINITY);
            }
            other => panic!("{other:?}"),
        }
    }

    /// x87 extended precision as numpy's `longdouble` is stored: 16 bytes, 80 used, the leading bit stored.
    fn x87() -> Datatype {
        Datatype::Float {
            size: 16,
            be: false,
            sign_loc: 79,
            exp_loc: 64,
            exp_size: 15,
            mant_loc: 0,
            mant_size: 64,
            bias: 16383,
            norm: 0,
        }
    }

    fn x87_bytes(sign: bool, exp: u16, mant: u64) -> [u8; 16] {
        let w = u128::from(mant) | (u128::from(exp) << 64) | (u128::from(sign) << 79);
        w.to_le_bytes()
    }

    #[test]
    fn x87_and_binary128_hold_every_f64_exactly() {
        let quad = Datatype::Float {
            size: 16,
            be: true,
            sign_loc: 127,
            exp_loc: 112,
            exp_size: 15,
            mant_loc: 0,
            mant_size: 112,
            bias: 16383,
            norm: 2,
        };
        for dt in [x87(), quad] {
            let values: Vec<f64> = spread(20_000)
                .into_iter()
                .chain([5e-324, -2.2250738585072014e-308 / 3.0, f64::NAN])
                .collect();
            let raw = encode(&dt, &values).unwrap();
            let back = f64s(&dt, &raw);
            for (v, b) in values.iter().zip(&back) {
                assert!(same(*v, *b), "{v:e} came back as {b:e}");
            }
        }
        // x87's stored leading bit: 1.0 is 0x3fff:8000000000000000, infinity 0x7fff:8000000000000000.
        assert_eq!(
            encode(&x87(), &[1.0]).unwrap(),
            x87_bytes(false, 0x3fff, 1 << 63)
        );
        assert_eq!(
            encode(&x87(), &[f64::NEG_INFINITY]).unwrap(),
            x87_bytes(true, 0x7fff, 1 << 63)
        );
    }

    fn f64s(dt: &Datatype, raw: &[u8]) -> Vec<f64> {
        match decode(dt, raw).unwrap() {
            Data::F64(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn extended_and_quad_precision_round_to_the_nearest_f64() {
        let top = 1u64 << 63;
        let cases: Vec<([u8; 16], f64)> = vec![
            (x87_bytes(false, 16383, top | (1 << 62)), 1.5),
            (x87_bytes(true, 16384, top), -2.0),
            (x87_bytes(false, 16383, top | 1 << 3), 1.0), // 1 + 2^-60 rounds down
            // 1 + 2^-53 is a tie between 1 and 1 + 2^-52: to even (1); a bit more rounds up.
            (x87_bytes(false, 16383, top | 1 << 10), 1.0),
            (
                x87_bytes(false, 16383, top | 1 << 10 | 1),
                1.0 + 2f64.powi(-52),
            ),
            (x87_bytes(false, 0x7ffe, top), f64::INFINITY), // 2^16383
            (x87_bytes(false, 0, 1), 0.0),                  // 2^-16445
            (x87_bytes(false, 16383 - 1074, top), f64::from_bits(1)),
            (x87_bytes(false, 0, 0), 0.0),
            (x87_bytes(false, 0x7fff, top), f64::INFINITY),
        ];
        let raw: Vec<u8> = cases.iter().flat_map(|(b, _)| b.iter().copied()).collect();
        let got = f64s(&x87(), &raw);
        for ((_, want), got) in cases.iter().zip(&got) {
            assert_eq!(got.to_bits(), want.to_bits(), "{want}");
        }
        assert!(f64s(&x87(), &x87_bytes(false, 0x7fff, top | 1))[0].is_nan());
        // IEEE binary128, the leading bit implied.
        let quad = float(16, 127, 112, 15, 112, 16383);
        let one_and_half = (16383u128 << 112) | (1u128 << 111);
        let third = f64s(
            &quad,
            &((16381u128 << 112) | 0x5555_5555_5555_5555_5555_5555_5555u128).to_le_bytes(),
        );
        assert_eq!(f64s(&quad, &one_and_half.to_le_bytes()), vec![1.5]);
        assert_eq!(third, vec![1.0 / 3.0]);
    }
}
