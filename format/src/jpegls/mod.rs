//! JPEG-LS (ITU-T T.87): what the FCIDECOMP filter (registered id 32018, EUMETSAT's CharLS filter,
//! `hdf5plugin.FciDecomp`) stores in each chunk. Decoding: lossless and near-lossless scans, 2- to 16-bit
//! samples, any number of components each in its own scan (interleave mode 0, which FCIDECOMP writes); line-
//! and sample-interleaved scans, mapping tables, restart intervals and point transforms are refused by name.
//! Encoding: FCIDECOMP's own streams (16-bit samples, lossless, 1 to 4 components).

mod bits;
mod context;
mod encode;
mod header;
mod scan;

use crate::error::{corrupt, unsupported, Result};
use header::{scan_end, Markers, Preset, Segment};

/// Decodes a JPEG-LS codestream into `max_out` bytes at most: samples of up to 8 bits as bytes, wider ones
/// as little-endian 16-bit words, component planes one after another (the layout of an FCIDECOMP chunk).
pub fn decode(stream: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let n = decode_with(stream, max_out, |len| {
        out = vec![0u8; len];
        &mut out[..]
    })?;
    debug_assert_eq!(n, out.len());
    Ok(out)
}

/// [`decode`] into the start of `out` (the frame must fit it); returns the bytes written.
pub fn decode_into(stream: &[u8], out: &mut [u8]) -> Result<usize> {
    let max = out.len();
    decode_with(stream, max, |len| &mut out[..len])
}

/// Decodes into the buffer `target` gives for the frame's size (at most `max_out`, checked first).
fn decode_with<'o>(
    stream: &[u8],
    max_out: usize,
    target: impl FnOnce(usize) -> &'o mut [u8],
) -> Result<usize> {
    let mut markers = Markers::new(stream)?;
    let mut target = Some(target);
    let mut out: &mut [u8] = &mut [];
    let mut frame = None;
    let mut preset = Preset::default();
    let mut coded: Vec<bool> = Vec::new();
    loop {
        match markers.next()? {
            Segment::Frame(f) => {
                if frame.is_some() {
                    return corrupt("JPEG-LS stream with two frame headers");
                }
                let sample_bytes = if f.precision <= 8 { 1 } else { 2 };
                let total = f
                    .rows
                    .checked_mul(f.cols)
                    .and_then(|n| n.checked_mul(f.components.len()))
                    .and_then(|n| n.checked_mul(sample_bytes));
                let Some(total) = total.filter(|&t| t <= max_out) else {
                    return corrupt(format!(
                        "JPEG-LS frame of {} × {} × {} samples does not fit the {max_out}-byte chunk",
                        f.rows,
                        f.cols,
                        f.components.len()
                    ));
                };
                if let Some(t) = target.take() {
                    out = t(total);
                }
                coded = vec![false; f.components.len()];
                frame = Some(f);
            }
            Segment::Preset(p) => preset = p,
            Segment::Scan(s, start) => {
                let Some(f) = &frame else {
                    return corrupt("JPEG-LS scan before the frame header");
                };
                if s.interleave != 0 || s.components.len() != 1 {
                    return unsupported(format!(
                        "JPEG-LS scans of {} interleaved components (mode {})",
                        s.components.len(),
                        s.interleave
                    ));
                }
                let Some(c) = f.components.iter().position(|&id| id == s.components[0]) else {
                    return corrupt("JPEG-LS scan of a component the frame lacks");
                };
                if coded[c] {
                    return corrupt("JPEG-LS component coded twice");
                }
                let params = context::Params::new(f.precision, s.near, preset)?;
                if params.maxval >= 1 << f.precision {
                    return corrupt("JPEG-LS MAXVAL above the sample precision");
                }
                let end = scan_end(stream, start);
                let mut bits = bits::ScanBits::new(&stream[start..end]);
                let wide = f.precision > 8;
                let plane = f.rows * f.cols * (1 + usize::from(wide));
                let dest = &mut out[c * plane..(c + 1) * plane];
                scan::decode_plane(&mut bits, &params, f.rows, f.cols, wide, dest)?;
                coded[c] = true;
                markers.seek(end);
            }
            Segment::End => break,
        }
    }
    if frame.is_none() {
        return corrupt("JPEG-LS stream without a frame header");
    }
    if coded.iter().any(|&c| !c) {
        return corrupt("JPEG-LS stream ends before every component was coded");
    }
    Ok(out.len())
}

/// The client data the FCIDECOMP filter records for a chunk of 16-bit samples of shape `dims`: `[rows,
/// cols]`, or `[components, rows, cols]` with 1 to 4 components.
pub fn fcidecomp_client_data(dims: &[u64]) -> Result<Vec<u32>> {
    let (n, rows, cols) = match *dims {
        [r, c] => (1, r, c),
        [n, r, c] if (1..=4).contains(&n) => (n, r, c),
        _ => {
            return crate::error::invalid(format!(
                "FCIDECOMP codes chunks of 2 dimensions, or 3 with 1 to 4 components first, not {dims:?}"
            ))
        }
    };
    if rows < 2 || cols < 2 || rows > 65535 || cols > 65535 {
        return crate::error::invalid(format!(
            "FCIDECOMP codes images of 2 to 65,535 lines and columns, not {rows} × {cols}"
        ));
    }
    let (n, rows, cols) = (n as u32, rows as u32, cols as u32);
    Ok(vec![2, n, rows, cols, 16, n, 0, 0, 0, 0, 0, 0, 0])
}

/// Encodes one chunk (16-bit little-endian samples, component planes in turn) as the FCIDECOMP filter does,
/// from the client data [`fcidecomp_client_data`] gives: lossless JPEG-LS with the default parameters
/// written out. A chunk the stream would not shrink is an error (the filter's too; the writer then stores
/// the chunk unfiltered, as libhdf5 does for an optional filter).
pub fn encode_fcidecomp(params: &[u32], chunk: &[u8]) -> Result<Vec<u8>> {
    let (n, rows, cols) = match params {
        [2, n, rows, cols, 16, ..] if (1..=4).contains(n) && *rows >= 2 && *cols >= 2 => {
            (*n as usize, *rows as usize, *cols as usize)
        }
        _ => return unsupported(format!("FCIDECOMP client data {params:?}")),
    };
    if rows > 65535 || cols > 65535 || chunk.len() != n * rows * cols * 2 {
        return corrupt(format!(
            "FCIDECOMP chunk of {} bytes for {n} × {rows} × {cols} 16-bit samples",
            chunk.len()
        ));
    }
    let p = context::Params::new(16, 0, Preset::default())?;
    let mut out = Vec::with_capacity(chunk.len() / 2);
    out.extend_from_slice(&[0xFF, 0xD8, 0xFF, 0xF7]);
    out.extend_from_slice(&(8 + 3 * n as u16).to_be_bytes());
    out.push(16);
    out.extend_from_slice(&(rows as u16).to_be_bytes());
    out.extend_from_slice(&(cols as u16).to_be_bytes());
    out.push(n as u8);
    for c in 1..=n as u8 {
        out.extend_from_slice(&[c, 0x11, 0]);
    }
    out.extend_from_slice(&[0xFF, 0xF8, 0, 13, 1]);
    for v in [p.maxval, p.t1, p.t2, p.t3, p.reset] {
        out.extend_from_slice(&(v as u16).to_be_bytes());
    }
    let plane_bytes = rows * cols * 2;
    for (c, plane) in chunk.chunks_exact(plane_bytes).enumerate() {
        out.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, c as u8 + 1, 0, 0, 0, 0]);
        let samples: Vec<u16> = plane
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        out = encode::encode_plane(out, &p, rows, cols, &samples);
        if out.len() >= chunk.len() {
            return unsupported("FCIDECOMP: a chunk JPEG-LS does not shrink");
        }
    }
    out.extend_from_slice(&[0xFF, 0xD9]);
    if out.len() >= chunk.len() {
        return unsupported("FCIDECOMP: a chunk JPEG-LS does not shrink");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FormatError;
    use crate::test_rng::hex;

    /// CharLS's lossless coding (through imagecodecs, SPIFF header included) of a 6 × 9 8-bit image.
    const SMALL: &str = "ffd8ffe800205350494646000200000100000006000000090a0806010000012c0000012cffe800080000\
        0001ffd8fff7000b080006000901011100ffda00080101000000000000016d0000018802d72e02afb97000000c800000a0000\
        031200006480660a002e400000190000001b1000001d35942644060cc000001d22fc911281b40901b59884c8123eb7089113\
        419800000c422e8ffd9";
    /// Its samples.
    const SMALL_SAMPLES: &str =
        "c80d1a27020f1c290411e62b0613202d0815222fd21724310c1926010e1bf003101d2a05121f2c07dc\
        212e091623300b1825c80d1a27";
    /// A 4 × 5 three-component image coded sample-interleaved (mode 2).
    const INTERLEAVED: &str = "ffd8ffe800205350494646000200000300000004000000050a0806010000012c0000012cffe8000800\
        000001ffd8fff70011080004000503011100021100031100ffda000c0301000200030000020040051255df9ffcffd9";

    #[test]
    fn a_charls_stream_decodes_to_its_samples() {
        let stream = hex(SMALL);
        assert_eq!(decode(&stream, 54).unwrap(), hex(SMALL_SAMPLES));
    }

    #[test]
    fn encoded_chunks_decode_to_their_samples() {
        let mut rng = crate::test_rng::TestRng::new(0x32018);
        for dims in [[1u64, 40, 37], [2, 9, 2], [3, 2, 64], [4, 20, 20]] {
            let cd = fcidecomp_client_data(&dims).unwrap();
            let n = (dims[0] * dims[1] * dims[2]) as usize;
            for kind in 0..4 {
                let chunk: Vec<u8> = (0..n)
                    .map(|i| match kind {
                        0 => 1000u16,
                        1 => (i % 37 * 11) as u16,
                        2 => 30000 + (rng.next() % 9) as u16,
                        _ => [0u16, 65535][i / 5 % 2],
                    })
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                match encode_fcidecomp(&cd, &chunk) {
                    Ok(stream) => assert_eq!(decode(&stream, chunk.len()).unwrap(), chunk),
                    Err(e) => assert!(matches!(e, FormatError::Unsupported(_)), "{e}"),
                }
            }
        }
        assert!(fcidecomp_client_data(&[1, 40]).is_err());
        assert!(fcidecomp_client_data(&[5, 4, 4]).is_err());
        assert!(fcidecomp_client_data(&[2, 2, 3, 3]).is_err());
    }

    #[test]
    fn streams_this_decoder_cannot_take_are_named_errors() {
        let e = decode(&hex(INTERLEAVED), 60).unwrap_err();
        assert!(matches!(e, FormatError::Unsupported(_)), "{e}");
        assert!(
            e.to_string().contains("3 interleaved components (mode 2)"),
            "{e}"
        );
        // A frame bigger than the chunk it claims to fill is refused before anything is allocated.
        let e = decode(&hex(SMALL), 53).unwrap_err();
        assert!(
            e.to_string().contains("does not fit the 53-byte chunk"),
            "{e}"
        );
        assert!(decode(b"not a stream", 54).is_err());
        // No EOI.
        let stream = hex(SMALL);
        assert!(decode(&stream[..stream.len() - 2], 54).is_err());
    }

    #[test]
    fn damaged_streams_are_errors_or_samples_never_panics() {
        let stream = hex(SMALL);
        for cut in 0..stream.len() {
            let _ = decode(&stream[..cut], 54);
        }
        for at in 0..stream.len() {
            for flip in [0x01u8, 0x10, 0x80, 0xFF] {
                let mut s = stream.clone();
                s[at] ^= flip;
                if let Ok(out) = decode(&s, 54) {
                    assert!(out.len() <= 54);
                }
            }
        }
    }
}
