//! ZFP decompression (read only): the H5Z-ZFP filter (registered id 32013, what `hdf5plugin.Zfp` writes) and
//! the codec of Blosc2's ZFP modes.
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
//! stream header and H5Z-ZFP's client data. Blosc2's ZFP codecs take their parameters from the codec meta
//! (see `crate::blosc2`).
//!
//! Damaged input is an error (a stream that ends early, a header that does not parse); the decoded size is
//! checked against the caller's bound before anything is allocated.

mod bitreader;
mod block;
mod field;
mod header;
mod transform;

pub use header::decode_h5z;

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
