//! Decoding and encoding HDF5's scale-offset filter (id 6), which libhdf5 always carries and h5py applies with
//! `scaleoffset=`: integers packed losslessly as offsets from the chunk's minimum in the fewest bits that hold
//! them, or floats scaled by 10^D, rounded and packed the same way (lossy "D-scale").
//!
//! A stored chunk starts with a 21-byte header: the bit width `minbits` (4 bytes, little-endian), the byte
//! size of the minimum (one byte, 8 in practice), the minimum (that many bytes, little-endian: the integer's
//! two's-complement bits, or a float's own bits), zero padding; then every element's offset in `minbits` bits,
//! most significant bit first, packed without gaps. `minbits` equal to the element's full width means the
//! elements follow unpacked (little-endian); 0 means every offset is 0. With a fill value defined (the
//! default for h5py datasets), the all-ones offset stands for the fill value.
//!
//! The filter's client data (`cd_values`): 0 scale type (0 float D-scale, 1 float E-scale, 2 integer),
//! 1 scale factor (D, or the integer bit width asked for), 2 elements per chunk, 3 class (0 integer,
//! 1 float), 4 element size, 5 sign (1 signed), 6 byte order of the dataset (0 little, 1 big), 7 whether a
//! fill value is defined, 8.. the fill value's bytes, four per value, least significant first.

use crate::error::{corrupt, invalid, unsupported, Result};

/// Bytes before the packed offsets.
const HEADER: usize = 21;

/// Decodes one stored chunk `data` of the scale-offset filter with client data `cd`; `max_out` bounds the
/// decoded size (the chunk's nominal size).
pub fn decode(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    if cd.len() < 8 {
        return corrupt(format!(
            "scale-offset filter with {} parameters (needs at least 8)",
            cd.len()
        ));
    }
    let (scale_type, scale_factor) = (cd[0], cd[1] as i32);
    let n = cd[2] as usize;
    // cd[5], the sign, needs no case of its own: the minimum is stored sign-extended, so a wrapping add
    // truncated to the element's width gives signed and unsigned elements alike.
    let (float, size, big_endian) = (cd[3] == 1, cd[4] as usize, cd[6] == 1);
    let fill_defined = cd[7] == 1;
    if !matches!(size, 1 | 2 | 4 | 8) || (float && !matches!(size, 4 | 8)) {
        return unsupported(format!(
            "scale-offset filter on {size}-byte {}",
            if float { "floats" } else { "integers" }
        ));
    }
    let width = size * 8;
    match (float, scale_type) {
        (false, 2) => {
            // An integer chunk asked to keep every bit was stored as it came (no header).
            if scale_factor == width as i32 {
                if data.len() > max_out {
                    return corrupt("scale-offset chunk larger than the chunk size");
                }
                return Ok(data.to_vec());
            }
        }
        (true, 0) => {}
        (true, 1) => return unsupported("scale-offset filter's E-scale method (libhdf5 has none)"),
        _ => {
            return corrupt(format!(
                "scale-offset scale type {scale_type} for {}",
                if float { "floats" } else { "integers" }
            ))
        }
    }
    let out_len = n.checked_mul(size).filter(|&l| l <= max_out).map_or_else(
        || corrupt("scale-offset chunk larger than the chunk size"),
        Ok,
    )?;
    if data.len() < HEADER {
        return corrupt("scale-offset chunk shorter than its header");
    }
    let minbits = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    if minbits > width {
        return corrupt(format!(
            "scale-offset chunk packs {minbits} bits into {size}-byte elements"
        ));
    }
    let min_len = (data[4] as usize).min(8);
    let mut minval = 0u64;
    for (i, b) in data[5..5 + min_len].iter().enumerate() {
        minval |= (*b as u64) << (8 * i);
    }
    let payload = &data[HEADER..];
    let mut out = Vec::with_capacity(out_len);
    if minbits == width {
        let Some(raw) = payload.get(..out_len) else {
            return corrupt("scale-offset chunk shorter than its elements");
        };
        out.extend_from_slice(raw);
    } else {
        let needed = (n as u128 * minbits as u128).div_ceil(8);
        if (payload.len() as u128) < needed {
            return corrupt("scale-offset chunk shorter than its packed elements");
        }
        let all_ones = if minbits == 0 {
            0
        } else {
            u64::MAX >> (64 - minbits)
        };
        let fill = fill_defined.then(|| fill_value(cd, size)).transpose()?;
        let unscale = Unscale::new(minval, size, scale_factor);
        let value = |offset: u64| match fill {
            Some(f) if minbits > 0 && offset == all_ones => f,
            _ if float => unscale.bits(offset),
            _ => offset.wrapping_add(minval),
        };
        out.resize(out_len, 0);
        let packed = Packed {
            data: payload,
            bits: minbits as u32,
        };
        match size {
            1 => put_values::<1>(&mut out, &packed, value),
            2 => put_values::<2>(&mut out, &packed, value),
            4 => put_values::<4>(&mut out, &packed, value),
            _ => put_values::<8>(&mut out, &packed, value),
        }
    }
    if big_endian && size > 1 {
        for e in out.chunks_exact_mut(size) {
            e.reverse();
        }
    }
    Ok(out)
}

/// Encodes one chunk (`cd[2]` elements in the dataset's byte order) as libhdf5's scale-offset filter stores it:
/// integers losslessly as offsets from the chunk's minimum in the fewest bits (or as they are when the dataset
/// asks to keep every bit); floats D-scaled, `round((x - min) * 10^D)` in the element's precision, as lossy as
/// the dataset asked. Fill values (when defined) take the all-ones offset.
pub fn encode(cd: &[u32], data: &[u8]) -> Result<Vec<u8>> {
    if cd.len() < 8 {
        return invalid(format!(
            "scale-offset filter with {} parameters (needs at least 8)",
            cd.len()
        ));
    }
    let (scale_type, factor) = (cd[0], cd[1] as i32);
    let n = cd[2] as usize;
    let (float, size, signed, big_endian) = (cd[3] == 1, cd[4] as usize, cd[5] == 1, cd[6] == 1);
    if !matches!(size, 1 | 2 | 4 | 8) || (float && !matches!(size, 4 | 8)) {
        return unsupported(format!(
            "scale-offset filter on {size}-byte {}",
            if float { "floats" } else { "integers" }
        ));
    }
    if n.checked_mul(size) != Some(data.len()) {
        return invalid(format!(
            "scale-offset chunk of {} bytes, not {n} elements of {size}",
            data.len()
        ));
    }
    let width = size * 8;
    match (float, scale_type) {
        (false, 2) if factor == width as i32 => return Ok(data.to_vec()),
        (false, 2) | (true, 0) => {}
        _ => return unsupported(format!("writing scale-offset scale type {scale_type}")),
    }
    // Each element's bits, little-endian, in the low `width` bits.
    let raw: Vec<u64> = data
        .chunks_exact(size)
        .map(|e| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(e);
            if big_endian {
                b[..size].reverse();
            }
            u64::from_le_bytes(b)
        })
        .collect();
    let fill = if cd[7] == 1 {
        Some(fill_value(cd, size)?)
    } else {
        None
    };
    let kept = || raw.iter().copied().filter(|&v| Some(v) != fill);
    // `None` offsets are fill values.
    let (minval, offsets): (u64, Vec<Option<u64>>) = if float {
        let scale = |v: u64, min: u64| -> Result<u64> {
            let off = if size == 4 {
                let d = (f32::from_bits(v as u32) - f32::from_bits(min as u32))
                    * 10f32.powf(factor as f32);
                d.round_ties_even() as f64
            } else {
                ((f64::from_bits(v) - f64::from_bits(min)) * 10f64.powf(factor as f64))
                    .round_ties_even()
            };
            if !off.is_finite() || !(0.0..9.0e18).contains(&off) {
                return unsupported(
                    "scale-offset D-scale of a chunk whose values span too wide or are not finite",
                );
            }
            Ok(off as u64)
        };
        let as_f64 = |v: u64| {
            if size == 4 {
                f64::from(f32::from_bits(v as u32))
            } else {
                f64::from_bits(v)
            }
        };
        let min = kept()
            .min_by(|a, b| as_f64(*a).total_cmp(&as_f64(*b)))
            .unwrap_or(0);
        let offsets = raw
            .iter()
            .map(|&v| {
                if Some(v) == fill {
                    Ok(None)
                } else {
                    scale(v, min).map(Some)
                }
            })
            .collect::<Result<_>>()?;
        (min, offsets)
    } else {
        let value = |v: u64| -> i128 {
            if signed {
                i128::from(((v << (64 - width)) as i64) >> (64 - width))
            } else {
                i128::from(v)
            }
        };
        let min = kept().map(value).min().unwrap_or(0);
        let offsets = raw
            .iter()
            .map(|&v| (Some(v) != fill).then(|| (value(v) - min) as u64))
            .collect();
        (min as i64 as u64, offsets)
    };
    let max = offsets.iter().flatten().copied().max().unwrap_or(0);
    let bits_of = |x: u64| (64 - x.leading_zeros()) as usize;
    let minbits = if fill.is_some() {
        bits_of(max.saturating_add(1)).max(1)
    } else {
        bits_of(max)
    };
    let mut out = Vec::with_capacity(HEADER + (n * minbits.min(width)).div_ceil(8));
    out.extend_from_slice(&(minbits.min(width) as u32).to_le_bytes());
    out.push(8);
    out.extend_from_slice(&minval.to_le_bytes());
    out.resize(HEADER, 0);
    if minbits >= width {
        if float {
            return unsupported("scale-offset D-scale of a chunk whose values span too wide");
        }
        // Every bit kept: the elements follow as they are, little-endian.
        for v in &raw {
            out.extend_from_slice(&v.to_le_bytes()[..size]);
        }
        return Ok(out);
    }
    let all_ones = if minbits == 0 {
        0
    } else {
        u64::MAX >> (64 - minbits)
    };
    let (mut acc, mut held) = (0u128, 0usize);
    for off in offsets {
        acc = (acc << minbits) | u128::from(off.unwrap_or(all_ones));
        held += minbits;
        while held >= 8 {
            out.push((acc >> (held - 8)) as u8);
            held -= 8;
        }
        acc &= (1u128 << held) - 1;
    }
    if held > 0 {
        out.push((acc << (8 - held)) as u8);
    }
    Ok(out)
}

/// Offsets of `bits` bits each, packed most significant bit first from the start of `data`, which holds
/// them all (checked by the caller).
struct Packed<'a> {
    data: &'a [u8],
    bits: u32,
}

impl Packed<'_> {
    /// Offset `i`.
    #[inline]
    fn get(&self, i: usize) -> u64 {
        let k = self.bits;
        if k == 0 {
            return 0;
        }
        let at = i as u64 * k as u64;
        let (byte, shift) = ((at / 8) as usize, (at % 8) as u32);
        // Up to 64 bits from `byte` on (zeros past the end), then the bits below the first 64 if the
        // offset reaches past them (only for offsets of more than 57 bits).
        let word = self.word(byte);
        let high = (word << shift) >> (64 - k);
        if shift + k <= 64 {
            high
        } else {
            let rest = shift + k - 64;
            let next = self.data.get(byte + 8).copied().unwrap_or(0) as u64;
            high | (next >> (8 - rest))
        }
    }

    /// The eight bytes from `byte` on, big-endian, zero past the end of the data.
    #[inline]
    fn word(&self, byte: usize) -> u64 {
        if let Some(w) = self.data.get(byte..byte + 8) {
            let mut be = [0; 8];
            be.copy_from_slice(w);
            return u64::from_be_bytes(be);
        }
        let mut be = [0; 8];
        let tail = self.data.get(byte..).unwrap_or(&[]);
        be[..tail.len()].copy_from_slice(tail);
        u64::from_be_bytes(be)
    }
}

/// Fills `out`'s `S`-byte elements (little-endian) with `value` of each packed offset in turn.
fn put_values<const S: usize>(out: &mut [u8], packed: &Packed<'_>, value: impl Fn(u64) -> u64) {
    for (i, e) in out.chunks_exact_mut(S).enumerate() {
        let v = value(packed.get(i)).to_le_bytes();
        e.copy_from_slice(&v[..S]);
    }
}

/// The fill value's bytes (little-endian, the element's width) from client data entries 8 onward.
fn fill_value(cd: &[u32], size: usize) -> Result<u64> {
    let words = size.div_ceil(4);
    let Some(w) = cd.get(8..8 + words) else {
        return corrupt("scale-offset filter without its fill value parameters");
    };
    let mut v = 0u64;
    for (i, x) in w.iter().enumerate() {
        v |= (*x as u64) << (32 * i);
    }
    Ok(if size < 8 {
        v & (u64::MAX >> (64 - 8 * size))
    } else {
        v
    })
}

/// Turns D-scaled offsets back into floats: `offset / 10^D + min`, in the element's own precision (as
/// libhdf5 computes it), with `10^D` computed once.
struct Unscale {
    size: usize,
    min: u64,
    div32: f32,
    div64: f64,
}

impl Unscale {
    fn new(minval: u64, size: usize, d: i32) -> Unscale {
        Unscale {
            size,
            min: minval,
            div32: 10f32.powf(d as f32),
            div64: 10f64.powf(d as f64),
        }
    }

    /// The float's bits for `offset`.
    #[inline]
    fn bits(&self, offset: u64) -> u64 {
        if self.size == 4 {
            let min = f32::from_bits(self.min as u32);
            let v = (offset as u32 as i32) as f32 / self.div32 + min;
            v.to_bits() as u64
        } else {
            let min = f64::from_bits(self.min);
            let v = (offset as i64) as f64 / self.div64 + min;
            v.to_bits()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(minbits: u32, minval: u64) -> Vec<u8> {
        let mut h = minbits.to_le_bytes().to_vec();
        h.push(8);
        h.extend_from_slice(&minval.to_le_bytes());
        h.resize(HEADER, 0);
        h
    }

    fn cd(scale_type: u32, factor: u32, n: u32, float: bool, size: u32, signed: bool) -> Vec<u32> {
        vec![
            scale_type,
            factor,
            n,
            float as u32,
            size,
            signed as u32,
            0,
            0,
            0,
            0,
        ]
    }

    fn le_bytes(values: &[i64], size: usize, big: bool) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| {
                let mut b = v.to_le_bytes()[..size].to_vec();
                if big {
                    b.reverse();
                }
                b
            })
            .collect()
    }

    #[test]
    fn encoded_integer_chunks_decode_to_their_bytes() {
        let cases: Vec<Vec<i64>> = vec![
            vec![100, 105, 103, 107],
            vec![-3, -2, -1, 0, 7, -100],
            vec![5; 9],
            vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
            vec![i32::MIN as i64, i32::MAX as i64, 0],
            vec![1, 255, 17],
        ];
        for values in &cases {
            for (size, signed) in [(1, false), (2, true), (4, true), (8, true), (4, false)] {
                let fits = values.iter().all(|&v| {
                    let bits = size * 8;
                    if signed {
                        bits == 64 || (v >= -(1i64 << (bits - 1)) && v < (1i64 << (bits - 1)))
                    } else {
                        v >= 0 && (bits == 64 || v < (1i64 << bits))
                    }
                });
                if !fits {
                    continue;
                }
                for big in [false, true] {
                    for fill in [None, Some(values[0])] {
                        let mut p = cd(2, 0, values.len() as u32, false, size as u32, signed);
                        p[6] = big as u32;
                        if let Some(f) = fill {
                            p[7] = 1;
                            let bits = (f as u64) & (u64::MAX >> (64 - 8 * size));
                            p[8] = bits as u32;
                            p[9] = (bits >> 32) as u32;
                        }
                        let data = le_bytes(values, size, big);
                        let enc = encode(&p, &data).unwrap();
                        assert_eq!(
                            decode(&p, &enc, data.len()).unwrap(),
                            data,
                            "{values:?} size {size} signed {signed} big {big} fill {fill:?}"
                        );
                    }
                }
            }
        }
        // Keeping every bit stores the chunk as it is; a chunk of the wrong size is refused.
        let p = cd(2, 32, 2, false, 4, false);
        assert_eq!(
            encode(&p, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap(),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert!(encode(&cd(2, 0, 3, false, 4, false), &[0; 8]).is_err());
    }

    #[test]
    fn encoded_float_chunks_keep_d_decimal_digits() {
        let values = [1.5f64, 2.25, -3.125, 10.0, 0.001];
        for d in [0u32, 2, 3] {
            let tol = 0.5 / 10f64.powi(d as i32) + 1e-6;
            let p = cd(0, d, 5, true, 8, false);
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let out = decode(&p, &encode(&p, &data).unwrap(), 40).unwrap();
            for (c, want) in out.chunks(8).zip(values) {
                let got = f64::from_le_bytes(c.try_into().unwrap());
                assert!((got - want).abs() <= tol, "D {d}: {got} vs {want}");
            }
            let p = cd(0, d, 5, true, 4, false);
            let data: Vec<u8> = values
                .iter()
                .flat_map(|v| (*v as f32).to_le_bytes())
                .collect();
            let out = decode(&p, &encode(&p, &data).unwrap(), 20).unwrap();
            for (c, want) in out.chunks(4).zip(values) {
                let got = f32::from_le_bytes(c.try_into().unwrap()) as f64;
                assert!(
                    (got - want).abs() <= tol + 1e-5,
                    "f32 D {d}: {got} vs {want}"
                );
            }
        }
        let p = cd(0, 2, 1, true, 8, false);
        assert!(encode(&p, &f64::NAN.to_le_bytes()).is_err());
    }

    #[test]
    fn integers_unpack_as_offsets_from_the_minimum() {
        // Offsets 0, 5, 3, 7 in 3 bits: 000 101 011 111 -> 0001_0101 1111_0000.
        let mut chunk = header(3, 100);
        chunk.extend_from_slice(&[0b0001_0101, 0b1111_0000]);
        let out = decode(&cd(2, 0, 4, false, 2, false), &chunk, 8).unwrap();
        let v: Vec<u16> = out
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(v, [100, 105, 103, 107]);
    }

    #[test]
    fn signed_minimum_and_big_endian_output() {
        let mut chunk = header(2, (-3i64) as u64);
        chunk.push(0b00_01_10_11);
        let mut p = cd(2, 0, 4, false, 4, true);
        p[6] = 1;
        let out = decode(&p, &chunk, 16).unwrap();
        let v: Vec<i32> = out
            .chunks(4)
            .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(v, [-3, -2, -1, 0]);
    }

    #[test]
    fn the_all_ones_offset_is_the_fill_value() {
        let mut chunk = header(2, 10);
        chunk.push(0b11_00_01_11);
        let mut p = cd(2, 0, 4, false, 1, false);
        p[7] = 1;
        p[8] = 42;
        assert_eq!(decode(&p, &chunk, 4).unwrap(), [42, 10, 11, 42]);
    }

    #[test]
    fn d_scaled_floats_divide_by_ten_to_the_d() {
        let mut chunk = header(4, 1.5f64.to_bits());
        chunk.extend_from_slice(&[0x0f, 0x30]);
        let out = decode(&cd(0, 1, 3, true, 8, false), &chunk, 24).unwrap();
        let v: Vec<f64> = out
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(v, [1.5, 1.5 + 15.0 / 10.0, 1.5 + 3.0 / 10.0]);
    }

    #[test]
    fn zero_bits_and_full_width_chunks() {
        let chunk = header(0, 7);
        assert_eq!(
            decode(&cd(2, 0, 3, false, 1, false), &chunk, 3).unwrap(),
            [7, 7, 7]
        );
        let mut chunk = header(16, 0);
        chunk.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            decode(&cd(2, 0, 2, false, 2, false), &chunk, 4).unwrap(),
            [1, 2, 3, 4]
        );
        // An integer chunk asked to keep all its bits is stored as it came.
        assert_eq!(
            decode(&cd(2, 16, 2, false, 2, false), &[9, 8, 7, 6], 4).unwrap(),
            [9, 8, 7, 6]
        );
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let p = cd(2, 0, 4, false, 2, false);
        assert!(decode(&p, &[0; 10], 8).is_err(), "short header");
        assert!(decode(&p, &header(17, 0), 8).is_err(), "too many bits");
        assert!(decode(&p, &header(3, 0), 8).is_err(), "payload missing");
        assert!(
            decode(&cd(2, 0, 400, false, 2, false), &header(0, 0), 8).is_err(),
            "too many elements"
        );
        assert!(
            decode(&p[..5], &header(0, 0), 8).is_err(),
            "too few parameters"
        );
        assert!(
            decode(&cd(1, 2, 4, true, 4, false), &header(0, 0), 16).is_err(),
            "E-scale"
        );
        assert!(
            decode(&cd(2, 0, 4, false, 3, false), &header(0, 0), 16).is_err(),
            "odd size"
        );
        let mut fill = p.clone();
        fill[7] = 1;
        fill.truncate(8);
        let mut chunk = header(1, 0);
        chunk.push(0xf0);
        assert!(decode(&fill, &chunk, 8).is_err(), "fill value missing");
    }

    #[test]
    fn random_chunks_never_panic() {
        let mut rng = crate::test_rng::TestRng::new(0x9e37_79b9_7f4a_7c15);
        let mut next = || rng.next();
        for _ in 0..5_000 {
            let mut p: Vec<u32> = (0..10).map(|_| (next() % 10) as u32).collect();
            p[4] = [1, 2, 4, 8, 3][(next() % 5) as usize];
            let len = (next() % 64) as usize;
            let chunk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let max = (next() % 128) as usize;
            if let Ok(out) = decode(&p, &chunk, max) {
                assert!(out.len() <= max);
            }
        }
    }
}
