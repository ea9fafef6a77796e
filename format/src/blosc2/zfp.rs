//! Blosc2's ZFP codecs (ids 33 fixed accuracy, 34 fixed precision, 35 fixed rate), decoded: each block of a
//! b2nd array is one bare zfp stream of the block's shape (its dimensions as the array's block shape gives
//! them, x the last), of floats (element size 4) or doubles (8). The stream's parameters come from the codec
//! meta as c-blosc2 derives them: accuracy a tolerance of 10 to the meta (a signed byte), precision the meta
//! plus 5, 7, 9 or 11 planes for 1 to 4 dimensions (at most 64), rate the meta as a percentage of the
//! element's bits per value.

use crate::error::{corrupt, unsupported, Result};
use crate::zfp::{decompress, Field, Params, Scalar, MIN_EXP};

/// The ZFP fixed-accuracy codec's id.
pub(super) const ZFP_ACC: u8 = 33;
/// The ZFP fixed-precision codec's id.
pub(super) const ZFP_PREC: u8 = 34;
/// The ZFP fixed-rate codec's id.
pub(super) const ZFP_RATE: u8 = 35;

/// Decodes one ZFP stream of codec `codec` (with its meta byte) into `dest`, a block of `block_shape` of
/// `typesize`-byte floats.
pub(super) fn decompress_block(
    (codec, meta): (u8, u8),
    typesize: usize,
    block_shape: &[u64],
    input: &[u8],
    dest: &mut [u8],
) -> Result<()> {
    let scalar = match typesize {
        4 => Scalar::F32,
        8 => Scalar::F64,
        t => return unsupported(format!("blosc2 zfp codec of {t}-byte elements")),
    };
    let dims = block_shape.len();
    if !(1..=4).contains(&dims) {
        return unsupported(format!("blosc2 zfp codec in {dims} dimensions"));
    }
    let mut size = [1usize; 4];
    for (s, &d) in size.iter_mut().zip(block_shape.iter().rev()) {
        *s = usize::try_from(d).unwrap_or(usize::MAX);
    }
    let field = Field {
        scalar,
        size,
        dims: dims as u32,
    };
    if field.bytes() != Some(dest.len()) {
        return corrupt("blosc2 zfp block not of its array's block shape");
    }
    decompress(
        &params(codec, meta, typesize, dims as u32),
        &field,
        input,
        dest,
    )
}

/// The zfp parameters c-blosc2 sets for `codec` and its meta, on `typesize`-byte floats in `dims` dimensions.
fn params(codec: u8, meta: u8, typesize: usize, dims: u32) -> Params {
    match codec {
        ZFP_ACC => {
            // zfp_stream_set_accuracy(10^meta): minexp = floor(log2(tolerance)), zfp's least for 0.
            let tolerance = 10f64.powi(i32::from(meta as i8));
            Params::accuracy(if tolerance > 0.0 {
                frexp_exponent(tolerance) - 1
            } else {
                MIN_EXP
            })
        }
        ZFP_PREC => Params::precision(u32::from(meta) + 3 + 2 * dims),
        _ => {
            // zfp_stream_set_rate(meta / 100 * bits per value, not aligned): bits per block rounded, at least
            // the sign and exponent.
            let rate = f64::from(meta) / 100.0 * typesize as f64 * 8.0;
            let n = f64::from(1u32 << (2 * dims));
            let bits = (n * rate + 0.5).floor() as u32;
            Params::rate(bits.max(if typesize == 4 { 9 } else { 12 }))
        }
    }
}

/// The exponent `frexp` gives a positive finite `x`: `x = m 2^e` with `0.5 <= m < 1`.
fn frexp_exponent(x: f64) -> i32 {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: the exponent of its leading bit.
        let mant = bits & ((1u64 << 52) - 1);
        -1022 - (mant.leading_zeros() as i32 - 12)
    } else {
        biased - 1022
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn codec_meta_gives_c_blosc2_parameters() {
        assert_eq!(params(ZFP_ACC, 0, 4, 2).minexp, 0);
        assert_eq!(params(ZFP_ACC, (-2i8) as u8, 4, 2).minexp, -7);
        assert_eq!(params(ZFP_ACC, 3, 8, 1).minexp, 9);
        assert_eq!(params(ZFP_PREC, 4, 4, 1).maxprec, 9);
        assert_eq!(params(ZFP_PREC, 4, 4, 4).maxprec, 15);
        assert_eq!(params(ZFP_PREC, 200, 8, 3).maxprec, 64);
        // 30% of 32 bits a value, 16 values a block: 153.6 bits, rounded.
        assert_eq!(params(ZFP_RATE, 30, 4, 2), Params::rate(154));
        assert_eq!(params(ZFP_RATE, 1, 8, 1), Params::rate(12));
        assert_eq!(frexp_exponent(1.0), 1);
        assert_eq!(frexp_exponent(0.75), 0);
        assert_eq!(frexp_exponent(f64::from_bits(1)), -1073);
    }

    /// An 8x8 f32 b2nd array in blocks of 4x8, ZFP_RATE with meta 40, as python-blosc2 wrote it, and the values
    /// python-blosc2 reads from it.
    pub(in crate::blosc2) fn rate_frame() -> (Vec<u8>, Vec<u8>) {
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        (
            hex(concat!(
                "9ea862326672616d6500d2000000a5cf0000000000000190a412005601d30000000000000100d300000000000000a0",
                "d200000004d200000080d200000100d10000d10001c2d8060000000000002328000000000000000093cd0011de0001",
                "a462326e64d20000006bdc0001c60000003597000292d30000000000000008d3000000000000000892d200000008d2",
                "0000000892d200000004d20000000800db000000033c66340501d5040001000080000000a000000000000000000023",
                "280000000000000000640000002800000038000000072d5605189801189801189801183083d5bae6a8c98001000",
                "0e0a0c52a000bbb000bbb000bbb000bc7b091b50aca1143020000000000000038000000036d11c08559c08559c085",
                "59c0853914199f14ef30fa7b0e00a020a6c20cc0c00cc0c00cc0c00ce081c189b4ae559830000000000000000005",
                "010708080000000800000028000000000000000001000000000000000000000000000000000000940193cd0006de",
                "0000dc0000ce00000023d80000000000000000000000000000000000",
            )),
            hex(concat!(
                "000080312449123e2549923eb76ddb3e2549123f6edb363fb76d5b3f0000803f2549923f4992a43f6edbb63f9224",
                "c93fb76ddb3fdbb6ed3f000000409224094025491240b76d1b4049922440dbb62d406edb3640000040409224494025",
                "495240b76d5b4049926440dbb66d406edb7640000080404992844092248940dbb68d40254992406edb9640b76d9b40",
                "0000a0404992a4409224a940dbb6ad402549b2406edbb640b76dbb400000c0404992c4409224c940dbb6cd402549d2",
                "406edbd640b76ddb400000e0404992e4409224e940dbb6ed402549f2406edbf640b76dfb4000000041254902414992",
                "04416edb064192240941b76d0b41dbb60d4100001041",
            )),
        )
    }

    #[test]
    fn a_python_blosc2_zfp_frame_decodes_to_its_values() {
        let (frame, want) = rate_frame();
        assert_eq!(super::super::decode(&[], &frame, want.len()).unwrap(), want);
    }

    #[test]
    fn wrong_shapes_and_types_are_refused() {
        let mut dest = [0u8; 64];
        assert!(decompress_block((ZFP_RATE, 50), 2, &[32], &[0; 8], &mut dest).is_err());
        assert!(decompress_block((ZFP_RATE, 50), 4, &[5], &[0; 8], &mut dest).is_err());
        assert!(
            decompress_block((ZFP_RATE, 50), 4, &[1, 1, 1, 1, 16], &[0; 8], &mut dest).is_err()
        );
        assert!(decompress_block((ZFP_PREC, 5), 4, &[4, 4], &[0; 1], &mut dest).is_ok());
        assert!(decompress_block((ZFP_PREC, 5), 4, &[4, 4], &[], &mut dest).is_err());
    }
}
