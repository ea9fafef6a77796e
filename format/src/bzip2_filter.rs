//! The bzip2 filter (registered id 307; written by PyTables, netCDF-4 and hdf5plugin): each chunk one bzip2
//! stream, decoded by `bzip2` (a pure-Rust port of libbzip2) into at most the chunk's size.

use crate::error::{corrupt, Result};
use bzip2::{Decompress, Status};
use std::io::Write;

/// Encodes one chunk as a bzip2 stream of `level` (1–9: blocks of 100–900 kB). A chunk smaller than that block
/// gets the smallest block that holds it — the same compression (only the header's block-size digit differs),
/// without setting up the compressor's state for a block it never fills (milliseconds a chunk at level 9).
pub fn encode(data: &[u8], level: u32) -> Result<Vec<u8>> {
    // libbzip2 fills a block of 100,000·level bytes less 19.
    let needed = (data.len() + 19).div_ceil(100_000).max(1) as u32;
    let mut e = bzip2::write::BzEncoder::new(
        Vec::with_capacity(data.len() / 2),
        bzip2::Compression::new(level.clamp(1, 9).min(needed)),
    );
    e.write_all(data)?;
    Ok(e.finish()?)
}

/// Decodes one chunk into a new buffer of at most `max_out` bytes.
pub fn decode(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let mut out = vec![0u8; max_out];
    let n = decode_into(data, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Decodes one chunk into the start of `out`; returns the bytes written. A stream that would write more
/// than `out` holds, ends early, or is damaged is an error.
pub fn decode_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    let mut d = Decompress::new(false);
    let cap = out.len();
    loop {
        let (read, written) = (d.total_in() as usize, d.total_out() as usize);
        let status = d
            .decompress(&data[read.min(data.len())..], &mut out[written.min(cap)..])
            .map_err(|e| crate::FormatError::Corrupt(format!("bzip2 chunk: {e}")))?;
        let (now_read, now_written) = (d.total_in() as usize, d.total_out() as usize);
        if status == Status::StreamEnd {
            return Ok(now_written);
        }
        if now_written == cap {
            // Full: the stream must end here, without a byte more.
            let mut probe = [0u8; 1];
            let more = d
                .decompress(&data[now_read.min(data.len())..], &mut probe)
                .map_err(|e| crate::FormatError::Corrupt(format!("bzip2 chunk: {e}")))?;
            if d.total_out() as usize > now_written {
                return corrupt("bzip2 chunk larger than the chunk size");
            }
            if more == Status::StreamEnd {
                return Ok(now_written);
            }
        }
        if now_read == read && now_written == written {
            return corrupt("bzip2 chunk ends before its stream does");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_chunks_decode_to_their_bytes() {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        for level in [1, 9] {
            let enc = encode(&data, level).unwrap();
            assert_eq!(decode(&enc, data.len()).unwrap(), data);
        }
    }
    use std::io::Write;

    fn compress(data: &[u8]) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(9));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn round_trips_and_refuses_what_does_not_fit() {
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 977) as u8)
            .collect();
        let enc = compress(&data);
        assert_eq!(decode(&enc, data.len()).unwrap(), data);
        let mut big = vec![0u8; data.len() + 7];
        assert_eq!(decode_into(&enc, &mut big).unwrap(), data.len());
        let e = decode(&enc, data.len() - 1).unwrap_err().to_string();
        assert!(e.contains("larger than the chunk size"), "{e}");
        for cut in [0, 1, 4, 10, enc.len() / 2, enc.len() - 1] {
            assert!(decode(&enc[..cut], data.len()).is_err(), "cut at {cut}");
        }
        let mut bad = enc.clone();
        bad[enc.len() / 2] ^= 0x55;
        assert!(decode(&bad, data.len()).is_err());
        assert_eq!(decode(&compress(b""), 0).unwrap(), b"");
    }
}
