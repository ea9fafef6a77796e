//! ZFP compression and decompression: the H5Z-ZFP filter (registered id 32013, what `hdf5plugin.Zfp` writes),
//! read and written, and the codec of Blosc2's ZFP modes, read.
//!
//! A zfp stream codes an array of 32- or 64-bit integers or floats of 1 to 4 dimensions in blocks of 4^d
//! values, block after block in raster order (x fastest); a block at an edge the array does not fill is coded
//! whole and only its values inside the array are kept. Each block is a bit stream (bits least significant
//! first within each byte): for floats a nonzero flag and a common exponent, then the block's integers after
//! the decorrelating transform, in negabinary, coded bit plane by bit plane with group tests. The stream's
//! parameters (`minbits`, `maxbits`, `maxprec`, `minexp`) are the mode: fixed rate (every block exactly
//! `maxbits` bits), fixed precision (`maxprec` planes), fixed accuracy (planes down to `minexp`), expert (any
//! of these) or reversible (lossless; `minexp` below zfp's least).
//!
//! The parts: `bitreader` reads the bits, `transform` undoes the negabinary mapping, the coefficient order
//! and the transforms, `block` decodes a block, `field` walks the array's blocks, and `header` reads zfp's
//! stream header and H5Z-ZFP's client data. Writing is their inverse: `bitwriter` writes the bits, `forward`
//! holds the forward transforms, `encode` encodes a block, `compress` walks the array's blocks (padding those
//! an edge cuts as zfp pads them), `mode` turns a [`ZfpMode`] into zfp's parameters and `h5z_write` writes
//! H5Z-ZFP's client data and chunks (zfp 1.0's streams bit for bit). Blosc2's ZFP codecs take their parameters from the codec meta
//! (see `crate::blosc2`).
//!
//! Damaged input is an error (a stream that ends early, a header that does not parse); the decoded size is
//! checked against the caller's bound before anything is allocated.

mod bitreader;
mod bitwriter;
mod block;
mod compress;
mod encode;
mod field;
mod forward;
mod h5z_write;
mod header;
mod mode;
mod transform;

pub use h5z_write::encode_h5z;
pub use header::{decode_h5z, decode_h5z_into};
pub use mode::ZfpMode;

pub(crate) use h5z_write::h5z_client_data;

pub(crate) use field::decompress;

/// zfp's least `minexp` (the exponent of the smallest subnormal double); below it a stream is reversible.
pub(crate) const MIN_EXP: i32 = -1074;
/// zfp's most bits per block.
pub(crate) const MAX_BITS: u32 = 16658;
/// zfp's most bit planes.
pub(crate) const MAX_PREC: u32 = 64;

/// The scalar type of a zfp array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// 32-bit two's-complement integers.
    I32,
    /// 64-bit two's-complement integers.
    I64,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
}

impl Scalar {
    /// Bytes per value.
    pub(crate) fn size(self) -> usize {
        match self {
            Scalar::I32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::F64 => 8,
        }
    }
}

/// A zfp stream's compression parameters (its mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    /// Least bits per block (the rest padding).
    pub(crate) minbits: u32,
    /// Most bits per block.
    pub(crate) maxbits: u32,
    /// Most bit planes per block.
    pub(crate) maxprec: u32,
    /// The smallest exponent kept (fixed accuracy); below [`MIN_EXP`] the stream is reversible.
    pub(crate) minexp: i32,
}

impl Params {
    /// Whether the stream is lossless (zfp's reversible mode).
    pub(crate) fn reversible(&self) -> bool {
        self.minexp < MIN_EXP
    }

    /// Fixed rate: every block exactly `bits` bits.
    pub(crate) fn rate(bits: u32) -> Self {
        Params {
            minbits: bits,
            maxbits: bits,
            maxprec: MAX_PREC,
            minexp: MIN_EXP,
        }
    }

    /// Fixed precision: `prec` bit planes (0 meaning all).
    pub(crate) fn precision(prec: u32) -> Self {
        Params {
            minbits: 1,
            maxbits: MAX_BITS,
            maxprec: if prec == 0 {
                MAX_PREC
            } else {
                prec.min(MAX_PREC)
            },
            minexp: MIN_EXP,
        }
    }

    /// Fixed accuracy: planes down to exponent `minexp`.
    pub(crate) fn accuracy(minexp: i32) -> Self {
        Params {
            minbits: 1,
            maxbits: MAX_BITS,
            maxprec: MAX_PREC,
            minexp,
        }
    }

    /// Reversible (lossless).
    pub(crate) fn reversible_mode() -> Self {
        Params::accuracy(MIN_EXP - 1)
    }
}

/// A zfp array's type and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    /// Its values' type.
    pub(crate) scalar: Scalar,
    /// Its sizes, x (the fastest varying) first; `dims` of them are used, the rest 1.
    pub(crate) size: [usize; 4],
    /// Its dimensions, 1 to 4.
    pub(crate) dims: u32,
}

impl Field {
    /// Values in the array, if the count fits a usize.
    pub(crate) fn values(&self) -> Option<usize> {
        self.size.iter().try_fold(1usize, |a, &n| a.checked_mul(n))
    }

    /// Decoded bytes, if the count fits a usize.
    pub(crate) fn bytes(&self) -> Option<usize> {
        self.values()?.checked_mul(self.scalar.size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::{hex, TestRng};

    /// A 6x7 float chunk at rate 8 and a 9-value int32 chunk at precision 20, as hdf5plugin (H5Z-ZFP 1.1,
    /// zfp 1.0) wrote them: client data, stored chunk, and the values h5py read.
    fn samples() -> [(Vec<u32>, Vec<u8>, Vec<u8>); 2] {
        [
            (
                vec![269504785, 91252346, 1342177382, 133169152],
                hex("0d051080080128123c98de610909bd530d092223108e02dc815c6189aa1fb1ea0d6d08ac4023444c0a4da01009934d930d090ac4e214b16692244881a4d81240"),
                hex("000050bf0080c84100c03f4200a0874200c0a7420040bf420040c6420020c7420060b64200a09b4200c06d4200801b4200006a41000026c100400ac200c060c200a095c200e0b4c200c0c3c20040c7c20040c1c20060aac200208ec200c04fc20080dec1000018c00000a741008031420080834200c0a4420040bb420000c74200f0c5420050b84200b09f42008079420000254200008a410000f4c00040ffc100e059c2001093c2"),
            ),
            (
                vec![269504785, 91252346, 128, 2167406592],
                hex("0000000080010060"),
                hex("000000000000000000000000000000000010000000100000001000000010000000100000"),
            ),
        ]
    }

    #[test]
    fn hdf5plugin_chunks_decode_to_h5py_values() {
        for (cd, chunk, want) in samples() {
            assert_eq!(decode_h5z(&cd, &chunk, want.len()).unwrap(), want);
            // A bound below the chunk's size is refused before decoding.
            assert!(decode_h5z(&cd, &chunk, want.len() - 1).is_err());
        }
        // The float chunk truncated: an error, not a panic.
        let [(cd, chunk, want), _] = samples();
        let e = decode_h5z(&cd, &chunk[..40], want.len()).unwrap_err();
        assert!(e.to_string().contains("ends before"), "{e}");
    }

    #[test]
    fn a_big_endian_writers_client_data_give_big_endian_values() {
        for (cd, chunk, want) in samples() {
            let swapped: Vec<u32> = cd.iter().map(|w| w.swap_bytes()).collect();
            // The version word is read as a number either way.
            let cd: Vec<u32> = std::iter::once(cd[0])
                .chain(swapped[1..].iter().copied())
                .collect();
            let got = decode_h5z(&cd, &chunk, want.len()).unwrap();
            let want: Vec<u8> = want
                .chunks(4)
                .flat_map(|v| v.iter().rev().copied())
                .collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn unsupported_versions_are_named() {
        let [(mut cd, chunk, want), _] = samples();
        // Header codec version 6.
        cd[1] = (cd[1] & 0x00ff_ffff) | 6 << 24;
        let e = decode_h5z(&cd, &chunk, want.len()).unwrap_err();
        assert!(
            matches!(e, crate::FormatError::Unsupported(_))
                && e.to_string().contains("codec version 6"),
            "{e}"
        );
    }

    #[test]
    fn random_damage_never_panics() {
        let mut rng = TestRng::new(0x2f_0013);
        let samples = samples();
        for _ in 0..20_000 {
            let (cd, chunk, want) = &samples[(rng.next() % 2) as usize];
            let (mut cd, mut chunk) = (cd.clone(), chunk.clone());
            for _ in 0..1 + rng.next() % 3 {
                if rng.next().is_multiple_of(3) {
                    let i = (rng.next() % cd.len() as u64) as usize;
                    cd[i] ^= 1 << (rng.next() % 32);
                } else if !chunk.is_empty() {
                    let i = (rng.next() % chunk.len() as u64) as usize;
                    chunk[i] = rng.next() as u8;
                }
            }
            if rng.next().is_multiple_of(4) {
                chunk.truncate((rng.next() % (chunk.len() as u64 + 1)) as usize);
            }
            let max = want.len() + (rng.next() % 64) as usize;
            if let Ok(out) = decode_h5z(&cd, &chunk, max) {
                assert!(out.len() <= max);
            }
        }
    }

    #[test]
    fn random_streams_in_every_mode_never_panic() {
        let mut rng = TestRng::new(0x7a_f9);
        let scalars = [Scalar::I32, Scalar::I64, Scalar::F32, Scalar::F64];
        for _ in 0..3000 {
            let scalar = scalars[(rng.next() % 4) as usize];
            let dims = 1 + (rng.next() % 4) as u32;
            let mut size = [1usize; 4];
            for s in size.iter_mut().take(dims as usize) {
                *s = 1 + (rng.next() % 9) as usize;
            }
            let field = Field { scalar, size, dims };
            let p = match rng.next() % 5 {
                0 => Params::rate(1 + (rng.next() % 300) as u32),
                1 => Params::precision((rng.next() % 65) as u32),
                2 => Params::accuracy((rng.next() % 100) as i32 - 80),
                3 => Params::reversible_mode(),
                // Expert: budgets below the header's bits wrap as zfp's unsigned arithmetic does.
                _ => {
                    let minbits = (rng.next() % 40) as u32;
                    Params {
                        minbits,
                        maxbits: minbits + (rng.next() % 40) as u32,
                        maxprec: 1 + (rng.next() % 64) as u32,
                        minexp: (rng.next() % 2000) as i32 - 1100,
                    }
                }
            };
            let stream: Vec<u8> = (0..rng.next() % 600).map(|_| rng.next() as u8).collect();
            let mut out = vec![0u8; field.bytes().unwrap()];
            let _ = decompress(&p, &field, &stream, &mut out);
        }
    }
}
