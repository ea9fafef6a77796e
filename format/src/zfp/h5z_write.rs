//! The H5Z-ZFP filter written: the client data its `set_local` records for a chunk shape, type and mode (its
//! version word, then zfp's full header for the chunk in 32-bit words), and chunks encoded as that header
//! says (the bare stream, padded to a byte, as H5Z-ZFP's zfp with byte-sized stream words writes it).

use super::bitwriter::BitWriter;
use super::compress::compress;
use super::header::h5z_stream;
use super::mode::ZfpMode;
use super::{Field, Params, Scalar, MAX_BITS, MAX_PREC, MIN_EXP};
use crate::error::{invalid, Result};

/// The version word hdf5plugin's H5Z-ZFP (1.1, zfp 1.0.1, codec 5) records: zfp's version in bits 16–31, its
/// codec in bits 12–15, the filter's version below.
pub(crate) const H5Z_VERSION_WORD: u32 = 0x1010_5111;

/// zfp's largest short (12-bit) mode.
const MODE_SHORT_MAX: u64 = 4094;

/// zfp's `zfp_stream_mode`: the 12-bit code of a common mode, else the 64-bit expert form.
fn mode_word(p: &Params) -> u64 {
    let default =
        p.minbits == 1 && p.maxbits == MAX_BITS && p.maxprec == MAX_PREC && p.minexp == MIN_EXP;
    let wide = p.minbits <= 1 && p.maxbits >= MAX_BITS;
    if !default {
        if p.minbits == p.maxbits
            && (1..=MAX_BITS).contains(&p.maxbits)
            && p.maxprec >= MAX_PREC
            && p.minexp == MIN_EXP
        {
            if p.maxbits <= 2048 {
                return u64::from(p.maxbits - 1);
            }
        } else if wide && (1..=MAX_PREC).contains(&p.maxprec) && p.minexp == MIN_EXP {
            return u64::from(p.maxprec - 1) + 2048;
        } else if wide && p.maxprec >= MAX_PREC && p.minexp >= MIN_EXP {
            if p.minexp <= 843 {
                return (p.minexp - MIN_EXP) as u64 + 2177;
            }
        } else if wide && p.maxprec >= MAX_PREC {
            return 2176;
        }
    }
    let minbits = u64::from(p.minbits.clamp(1, 0x8000) - 1);
    let maxbits = u64::from(p.maxbits.clamp(1, 0x8000) - 1);
    let maxprec = u64::from(p.maxprec.clamp(1, 0x80) - 1);
    let minexp = (p.minexp.saturating_add(16495)).clamp(0, 0x7fff) as u64;
    ((((minexp << 7 | maxprec) << 15 | maxbits) << 15 | minbits) << 12) | 0xfff
}

/// zfp's 52 bits of field metadata: type, dimensions, and each size less one (x first), or an error when a
/// size does not fit its field.
fn meta_word(field: &Field) -> Result<u64> {
    let width = match field.dims {
        1 => 48,
        2 => 24,
        3 => 16,
        4 => 12,
        d => return invalid(format!("zfp array of {d} dimensions (1 to 4)")),
    };
    let mut meta = 0u64;
    for &s in field.size[..field.dims as usize].iter().rev() {
        let s = s as u64;
        if s == 0 || s > 1u64 << width {
            return invalid(format!(
                "zfp chunk dimension {s} does not fit zfp's {width}-bit sizes of a {}-D array",
                field.dims
            ));
        }
        meta = meta << width | (s - 1);
    }
    let scalar = match field.scalar {
        Scalar::I32 => 0,
        Scalar::I64 => 1,
        Scalar::F32 => 2,
        Scalar::F64 => 3,
    };
    Ok(meta << 4 | u64::from(field.dims - 1) << 2 | scalar)
}

/// zfp's full header (magic, codec, metadata, mode) for array `field` with parameters `p`, as 32-bit words
/// (the header's bytes, little-endian, the last word padded with zeros).
fn header_words(field: &Field, p: &Params) -> Result<Vec<u32>> {
    let mut w = BitWriter::with_capacity(24);
    w.bits(u64::from_le_bytes([b'z', b'f', b'p', 0, 0, 0, 0, 0]), 24);
    w.bits(5, 8);
    w.bits(meta_word(field)?, 52);
    let mode = mode_word(p);
    w.bits(mode, if mode > MODE_SHORT_MAX { 64 } else { 12 });
    let bytes = w.finish();
    Ok(bytes
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect())
}

/// The array zfp codes for a chunk of shape `chunk` (slowest dimension first) of `scalar`: its dimensions of
/// size 1 left out, x the fastest, as H5Z-ZFP sees it; an error when more than four remain or none does.
fn chunk_field(chunk: &[u64], scalar: Scalar) -> Result<Field> {
    let used: Vec<u64> = chunk.iter().copied().filter(|&d| d > 1).collect();
    if used.is_empty() || used.len() > 4 {
        return invalid(format!(
            "zfp needs a chunk with 1 to 4 dimensions larger than 1; chunk {chunk:?} has {}",
            used.len()
        ));
    }
    let mut size = [1usize; 4];
    for (s, &d) in size.iter_mut().zip(used.iter().rev()) {
        *s = usize::try_from(d).unwrap_or(usize::MAX);
    }
    Ok(Field {
        scalar,
        size,
        dims: used.len() as u32,
    })
}

/// The client data H5Z-ZFP's `set_local` records for chunks of shape `chunk` (slowest first) of `scalar`
/// compressed in `mode`, or an Invalid error naming what it would refuse.
pub(crate) fn h5z_client_data(mode: ZfpMode, scalar: Scalar, chunk: &[u64]) -> Result<Vec<u32>> {
    let field = chunk_field(chunk, scalar)?;
    let params = mode.params(scalar, field.dims)?;
    let mut cd = vec![H5Z_VERSION_WORD];
    cd.extend(header_words(&field, &params)?);
    Ok(cd)
}

/// Encodes one chunk (its values little-endian) through the H5Z-ZFP filter with client data `cd`.
pub fn encode_h5z(cd: &[u32], data: &[u8]) -> Result<Vec<u8>> {
    let (field, params, swap) = h5z_stream(cd)?;
    if field.bytes() != Some(data.len()) {
        return invalid(format!(
            "zfp chunk of {} bytes where the filter's client data describe {:?} {:?} values",
            data.len(),
            &field.size[..field.dims as usize],
            field.scalar
        ));
    }
    if swap {
        // A big-endian writer's client data: its chunks hold big-endian values.
        let le: Vec<u8> = data
            .chunks_exact(field.scalar.size())
            .flat_map(|v| v.iter().rev().copied())
            .collect();
        return compress(&params, &field, &le);
    }
    compress(&params, &field, data)
}

#[cfg(test)]
mod tests {
    use super::super::header::decode_h5z;
    use super::*;
    use crate::test_rng::{hex, TestRng};

    /// A mode, type, chunk shape, client data and stored chunk.
    type Sample = (ZfpMode, Scalar, Vec<u64>, Vec<u32>, Vec<u8>);

    /// Chunks hdf5plugin (H5Z-ZFP 1.1, zfp 1.0) wrote for `np.arange(n)` in the chunk's shape and type: the
    /// mode, type, chunk shape, client data and stored chunk.
    fn samples() -> Vec<Sample> {
        vec![
            (
                ZfpMode::Rate(8.0),
                Scalar::F32,
                vec![6, 7],
                vec![0x10105111, 0x570667a, 0x50000066, 0x7f00000],
                hex("096d5190010000000000000000000000096d11b06a14500400090000000000000b2d10120c40000000000000000000000b2d180240e014914002000000000000"),
            ),
            (
                ZfpMode::Precision(64),
                Scalar::F64,
                vec![5],
                vec![0x10105111, 0x570667a, 0x43, 0xfff00000, 0xe0888000, 0x787af],
                hex("0368a70000000000000000000000000000000000000000000028400b000000000000000000000000000000"),
            ),
            (
                ZfpMode::Reversible,
                Scalar::I32,
                vec![3, 1, 5],
                vec![0x10105111, 0x570667a, 0x20000044, 0x88000000],
                hex("1f00008000021000080000037d000000020840002800000804"),
            ),
            (
                ZfpMode::Accuracy(1e-3),
                Scalar::F64,
                vec![10],
                vec![0x10105111, 0x570667a, 0x93, 0xca900000],
                hex("0368a7000000002840ab0b0000008003b46015000000000000"),
            ),
        ]
    }

    /// `0, 1, 2, ...` as `n` little-endian values of `scalar`.
    fn arange(scalar: Scalar, n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| match scalar {
                Scalar::I32 => (i as i32).to_le_bytes().to_vec(),
                Scalar::I64 => (i as i64).to_le_bytes().to_vec(),
                Scalar::F32 => (i as f32).to_le_bytes().to_vec(),
                Scalar::F64 => (i as f64).to_le_bytes().to_vec(),
            })
            .collect()
    }

    #[test]
    fn client_data_and_chunks_equal_hdf5plugins() {
        for (mode, scalar, chunk, cd, stored) in samples() {
            assert_eq!(
                h5z_client_data(mode, scalar, &chunk).unwrap(),
                cd,
                "{mode:?}"
            );
            let n = chunk.iter().product::<u64>() as usize;
            assert_eq!(
                encode_h5z(&cd, &arange(scalar, n)).unwrap(),
                stored,
                "{mode:?}"
            );
        }
    }

    #[test]
    fn mode_words_round_trip_through_the_header_reader() {
        let field = Field {
            scalar: Scalar::F64,
            size: [5, 6, 7, 1],
            dims: 3,
        };
        let modes = [
            ZfpMode::Rate(1.0),
            ZfpMode::Rate(32.0),
            ZfpMode::Rate(60.0),
            ZfpMode::Precision(1),
            ZfpMode::Precision(63),
            ZfpMode::Precision(64),
            ZfpMode::Accuracy(1e-300),
            ZfpMode::Accuracy(1e250),
            ZfpMode::Accuracy(5e-324),
            ZfpMode::Reversible,
            ZfpMode::Expert {
                minbits: 0,
                maxbits: 900,
                maxprec: 20,
                minexp: -30,
            },
        ];
        for mode in modes {
            let p = mode.params(field.scalar, field.dims).unwrap();
            let mut cd = vec![H5Z_VERSION_WORD];
            cd.extend(header_words(&field, &p).unwrap());
            let (f, q, swap) = h5z_stream(&cd).unwrap();
            assert_eq!((f, swap), (field, false));
            // minbits 0 is recorded (as zfp records it) as 1.
            assert_eq!(
                q,
                Params {
                    minbits: p.minbits.max(1),
                    ..p
                },
                "{mode:?}"
            );
        }
    }

    #[test]
    fn chunk_shapes_zfp_cannot_take_are_named() {
        for chunk in [&[1u64, 1][..], &[2, 2, 2, 2, 2]] {
            let e = h5z_client_data(ZfpMode::Reversible, Scalar::F32, chunk).unwrap_err();
            assert!(
                e.to_string().contains("1 to 4 dimensions larger than 1"),
                "{e}"
            );
        }
        let e =
            h5z_client_data(ZfpMode::Reversible, Scalar::F32, &[5000, 1, 5000, 2, 2]).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
        // A chunk of the wrong size for the client data.
        let cd = h5z_client_data(ZfpMode::Reversible, Scalar::F32, &[4, 4]).unwrap();
        assert!(encode_h5z(&cd, &[0u8; 60]).is_err());
    }

    /// Random values of `scalar`: smooth, noisy, or any bits (NaN, infinities, subnormals among them).
    fn values(rng: &mut TestRng, scalar: Scalar, n: usize, kind: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(n * scalar.size());
        for i in 0..n {
            let smooth = (i as f64 / 7.0).sin() * 1000.0 + i as f64;
            let noisy = (rng.next() as i64 >> 20) as f64 / 1024.0;
            let x = if kind == 0 { smooth } else { noisy };
            let any = rng.next();
            match (scalar, kind) {
                (Scalar::F32, 2) => out.extend_from_slice(&(any as u32).to_le_bytes()),
                (Scalar::F64, 2) => out.extend_from_slice(&any.to_le_bytes()),
                (Scalar::I32, 2) => out.extend_from_slice(&(any as u32).to_le_bytes()),
                (Scalar::I64, 2) => out.extend_from_slice(&any.to_le_bytes()),
                (Scalar::F32, _) => out.extend_from_slice(&(x as f32).to_le_bytes()),
                (Scalar::F64, _) => out.extend_from_slice(&x.to_le_bytes()),
                (Scalar::I32, _) => out.extend_from_slice(&((x as i32) >> 2).to_le_bytes()),
                (Scalar::I64, _) => out.extend_from_slice(&((x * 1e6) as i64).to_le_bytes()),
            }
        }
        out
    }

    fn as_f64(scalar: Scalar, b: &[u8]) -> f64 {
        match scalar {
            Scalar::F32 => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
            Scalar::F64 => f64::from_le_bytes(b.try_into().unwrap()),
            Scalar::I32 => f64::from(i32::from_le_bytes(b.try_into().unwrap())),
            Scalar::I64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
        }
    }

    #[test]
    fn every_mode_type_and_rank_decodes_to_what_the_mode_promises() {
        let mut rng = TestRng::new(0x2f_e2c);
        let scalars = [Scalar::I32, Scalar::I64, Scalar::F32, Scalar::F64];
        for round in 0..400 {
            let scalar = scalars[round % 4];
            let rank = 1 + (round / 4) % 4;
            let chunk: Vec<u64> = (0..rank).map(|_| 2 + rng.next() % 9).collect();
            let n = chunk.iter().product::<u64>() as usize;
            let kind = rng.next() % 3;
            let float = matches!(scalar, Scalar::F32 | Scalar::F64);
            let mode = match (round / 16) % 5 {
                0 => ZfpMode::Reversible,
                1 => ZfpMode::Rate(1.0 + (rng.next() % 400) as f64 / 10.0),
                2 => ZfpMode::Precision(1 + (rng.next() % 64) as u32),
                3 if float && kind != 2 => {
                    ZfpMode::Accuracy(10f64.powi((rng.next() % 8) as i32 - 6))
                }
                _ => ZfpMode::Expert {
                    minbits: (rng.next() % 200) as u32,
                    maxbits: 200 + (rng.next() % 2000) as u32,
                    maxprec: 1 + (rng.next() % 64) as u32,
                    minexp: (rng.next() % 60) as i32 - 40,
                },
            };
            let data = values(&mut rng, scalar, n, kind);
            let cd = h5z_client_data(mode, scalar, &chunk).unwrap();
            let (field, p, _) = h5z_stream(&cd).unwrap();
            let stream = encode_h5z(&cd, &data).unwrap();
            let back = decode_h5z(&cd, &stream, data.len()).unwrap();
            let blocks: usize = field.size[..field.dims as usize]
                .iter()
                .map(|s| s.div_ceil(4))
                .product();
            let what = format!("{mode:?} {scalar:?} {chunk:?} kind {kind}");
            match mode {
                ZfpMode::Reversible => assert_eq!(back, data, "{what}"),
                ZfpMode::Rate(_) => {
                    assert_eq!(
                        stream.len(),
                        (blocks * p.maxbits as usize).div_ceil(8),
                        "{what}"
                    )
                }
                ZfpMode::Accuracy(tol) => {
                    let w = scalar.size();
                    let top = data
                        .chunks(w)
                        .map(|a| as_f64(scalar, a).abs())
                        .fold(0.0, f64::max);
                    for (a, b) in data.chunks(w).zip(back.chunks(w)) {
                        let (a, b) = (as_f64(scalar, a), as_f64(scalar, b));
                        // Within the tolerance, or where it is below the type's resolution at the block's
                        // largest value, a few of those units.
                        let eps = if w == 4 {
                            f64::from(f32::EPSILON)
                        } else {
                            f64::EPSILON
                        };
                        assert!((a - b).abs() <= tol.max(top * eps * 8.0), "{what}: {a} {b}");
                    }
                }
                _ => {}
            }
        }
    }
}
