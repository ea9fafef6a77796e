//! zfp's stream header and the H5Z-ZFP filter's client data.
//!
//! The header (zfp's `ZFP_HEADER_FULL`), in the stream's bit order: the magic `z`, `f`, `p` and the codec
//! version (8 bits each; version 5 is read); 52 bits of field metadata (2 bits the type less one: int32,
//! int64, float, double; 2 bits the dimensions less one; then each size less one from x on, 48 bits for 1-D,
//! 24 each for 2-D, 16 for 3-D, 12 for 4-D); and the mode in 12 bits: below 2048 fixed rate (`mode + 1` bits
//! per block), below 2176 fixed precision (`mode - 2047` planes), 2176 reversible, up to 4094 fixed accuracy
//! (`minexp = mode - 3251`), and 4095 meaning 52 more bits follow: `minbits - 1`, `maxbits - 1` (15 bits
//! each), `maxprec - 1` (7) and `minexp + 16495` (15), the expert mode.
//!
//! H5Z-ZFP keeps no header in its chunks: client data 0 holds the zfp library's version (bits 16–31), its
//! codec (bits 12–15) and the filter's version; the rest are a little buffer (32-bit words, the writer's byte
//! order) holding the header zfp wrote for the chunk's shape, whose dimensions of size 1 are left out. A
//! chunk is the bare stream of that array.

use super::bitreader::BitReader;
use super::{decompress, Field, Params, Scalar, MAX_PREC};
use crate::error::{corrupt, unsupported, Result};

/// The zfp codec version read.
const CODEC: u64 = 5;
/// The largest 12-bit mode; 4095 says the mode continues.
const MODE_SHORT_MAX: u64 = 4094;

/// Reads a zfp header (magic, metadata, mode) at the start of `r`.
fn read_header(r: &mut BitReader<'_>) -> Result<(Field, Params)> {
    let magic = r.bits(24)?;
    if magic != u64::from_le_bytes([b'z', b'f', b'p', 0, 0, 0, 0, 0]) {
        return corrupt("zfp header without its magic");
    }
    let codec = r.bits(8)?;
    if codec != CODEC {
        return unsupported(format!("zfp codec version {codec}"));
    }
    let meta = r.bits(52)?;
    let field = field_of(meta);
    let mut mode = r.bits(12)?;
    if mode > MODE_SHORT_MAX {
        mode += r.bits(52)? << 12;
    }
    Ok((field, params_of(mode)?))
}

/// The array a header's 52 bits of metadata describe.
fn field_of(meta: u64) -> Field {
    let scalar = match meta & 3 {
        0 => Scalar::I32,
        1 => Scalar::I64,
        2 => Scalar::F32,
        _ => Scalar::F64,
    };
    let dims = ((meta >> 2) & 3) as u32 + 1;
    let mut rest = meta >> 4;
    let width = match dims {
        1 => 48,
        2 => 24,
        3 => 16,
        _ => 12,
    };
    let mut size = [1usize; 4];
    for s in size.iter_mut().take(dims as usize) {
        let v = rest & ((1u64 << width) - 1);
        rest >>= width;
        *s = usize::try_from(v).map_or(usize::MAX, |v| v.saturating_add(1));
    }
    Field { scalar, size, dims }
}

/// The parameters a header's mode gives (checked as zfp checks them).
fn params_of(mode: u64) -> Result<Params> {
    let p = match mode {
        0..=2047 => Params::rate(mode as u32 + 1),
        2048..=2175 => Params::precision(mode as u32 - 2047),
        2176 => Params::reversible_mode(),
        2177..=MODE_SHORT_MAX => Params::accuracy(mode as i32 - 3251),
        _ => {
            let m = mode >> 12;
            Params {
                minbits: (m & 0x7fff) as u32 + 1,
                maxbits: ((m >> 15) & 0x7fff) as u32 + 1,
                maxprec: ((m >> 30) & 0x7f) as u32 + 1,
                minexp: ((m >> 37) & 0x7fff) as i32 - 16495,
            }
        }
    };
    if p.minbits > p.maxbits || p.maxprec == 0 || p.maxprec > MAX_PREC {
        return corrupt(format!("zfp mode {mode:#x} out of range"));
    }
    Ok(p)
}

/// Decodes one chunk of the H5Z-ZFP filter (client data `cd`) into at most `max_out` bytes.
pub fn decode_h5z(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let (field, params, swap) = h5z_stream(cd)?;
    let len = chunk_bytes(&field, max_out)?;
    let mut out = vec![0u8; len];
    decode_stream((&field, &params, swap), data, &mut out)?;
    Ok(out)
}

/// Decodes one chunk of the H5Z-ZFP filter (client data `cd`) into the start of `out`; returns the bytes
/// written (the chunk's, at most `out.len()`).
pub fn decode_h5z_into(cd: &[u32], data: &[u8], out: &mut [u8]) -> Result<usize> {
    let (field, params, swap) = h5z_stream(cd)?;
    let len = chunk_bytes(&field, out.len())?;
    decode_stream((&field, &params, swap), data, &mut out[..len])?;
    Ok(len)
}

/// The array, parameters and byte order (swapped or not) that H5Z-ZFP's client data `cd` describe.
pub(crate) fn h5z_stream(cd: &[u32]) -> Result<(Field, Params, bool)> {
    let Some((&version, words)) = cd.split_first() else {
        return corrupt("zfp filter without client data");
    };
    // As H5Z-ZFP reads it: three hex digits of zfp's version before H5Z-ZFP 1.1, four since (naming the codec
    // from zfp 1.0.1 on).
    let zfp_version = match version >> 16 {
        v if v < 0x100 => v << 4,
        v => v,
    };
    let codec = match zfp_version {
        0..=0x4ff => 4,
        0x500..=0x1000 => 5,
        _ => (version >> 12) & 0xf,
    };
    if u64::from(codec) != CODEC {
        return unsupported(format!("zfp codec {codec} (zfp version {zfp_version:#x})"));
    }
    // The header as written on a little-endian machine, else (a big-endian writer's) with its words swapped.
    let le: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    match read_header(&mut BitReader::new(&le)) {
        Ok((f, p)) => Ok((f, p, false)),
        Err(e) => {
            let be: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
            match read_header(&mut BitReader::new(&be)) {
                Ok((f, p)) => Ok((f, p, true)),
                Err(_) => Err(e.context("zfp filter client data")),
            }
        }
    }
}

/// The decoded bytes of a chunk of array `field`, which must not exceed `max_out`.
fn chunk_bytes(field: &Field, max_out: usize) -> Result<usize> {
    match field.bytes().filter(|&n| n <= max_out) {
        Some(n) => Ok(n),
        None => corrupt(format!(
            "zfp chunk of {:?} values larger than the chunk's {max_out} bytes",
            &field.size[..field.dims as usize]
        )),
    }
}

/// Decodes the stream `data` into `out` (the array's size), its values byte-swapped when `swap` says the
/// writer was big-endian (libhdf5 expects the writer's byte order, which zfp does not keep).
fn decode_stream(
    (field, params, swap): (&Field, &Params, bool),
    data: &[u8],
    out: &mut [u8],
) -> Result<()> {
    decompress(params, field, data, out)?;
    if swap {
        for v in out.chunks_exact_mut(field.scalar.size()) {
            v.reverse();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_modes_map_as_zfp_maps_them() {
        assert_eq!(params_of(0).unwrap(), Params::rate(1));
        assert_eq!(params_of(255).unwrap(), Params::rate(256));
        assert_eq!(params_of(2048 + 19).unwrap(), Params::precision(20));
        assert!(params_of(2176).unwrap().reversible());
        assert_eq!(params_of(2177).unwrap(), Params::accuracy(-1074));
        assert_eq!(params_of(3251 - 10).unwrap().minexp, -10);
    }

    #[test]
    fn long_modes_carry_expert_parameters() {
        let (minbits, maxbits, maxprec, minexp) = (10u64, 300u64, 40u64, -20i64);
        let m = (minbits - 1)
            | (maxbits - 1) << 15
            | (maxprec - 1) << 30
            | ((minexp + 16495) as u64) << 37;
        let p = params_of(0xfff | m << 12).unwrap();
        assert_eq!(
            (p.minbits, p.maxbits, p.maxprec, p.minexp),
            (10, 300, 40, -20)
        );
        // minbits above maxbits, or more than 64 planes: refused as zfp refuses them.
        assert!(params_of(0xfff | (5 | 1 << 30) << 12).is_err());
        assert!(params_of(0xfff | (100u64 << 30) << 12).is_err());
    }

    #[test]
    fn metadata_gives_type_and_sizes() {
        // A 3-D double array of 5 x 6 x 7 (x first).
        let meta = 3 | 2 << 2 | 4 << 4 | 5 << 20 | 6 << 36;
        let f = field_of(meta);
        assert_eq!(f.scalar, Scalar::F64);
        assert_eq!((f.dims, f.size), (3, [5, 6, 7, 1]));
        let f = field_of(3 << 2 | 1 << 4 | 2 << 16 | 3 << 28 | 4 << 40);
        assert_eq!((f.scalar, f.dims, f.size), (Scalar::I32, 4, [2, 3, 4, 5]));
    }

    #[test]
    fn damaged_client_data_are_errors() {
        assert!(decode_h5z(&[], &[], 10).is_err());
        assert!(decode_h5z(&[0x1000_5111, 1, 2, 3, 4], &[], 100).is_err());
        let e = decode_h5z(&[0x0040_4111], &[], 100).unwrap_err();
        assert!(e.to_string().contains("zfp version"), "{e}");
    }
}
