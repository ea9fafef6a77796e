//! Decoders of the registered plugin filters that h5py users add through `hdf5plugin`: zstd (id 32015), each
//! chunk one Zstandard frame (decoded by libzstd), and LZ4 (id 32004), the HDF Group's framing of LZ4 blocks.

use crate::error::{corrupt, Result};

/// Decodes one zstd-filtered chunk (a Zstandard frame) into at most `max_out` bytes.
pub fn unzstd(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    // The frame header usually states the decoded size: the buffer is made that size (within the bound)
    // and libzstd writes into it, failing rather than writing past it.
    let size = zstd_size(data, max_out)?.unwrap_or(max_out);
    let mut out = vec![0u8; size];
    let n = unzstd_into(data, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// The decoded size a Zstandard frame states, if it does (an error if above `max_out`).
fn zstd_size(data: &[u8], max_out: usize) -> Result<Option<usize>> {
    match zstd::zstd_safe::get_frame_content_size(data) {
        Ok(Some(n)) => usize::try_from(n)
            .ok()
            .filter(|&n| n <= max_out)
            .map_or_else(
                || corrupt("zstd chunk decodes to more than the chunk size"),
                |n| Ok(Some(n)),
            ),
        Ok(None) => Ok(None),
        Err(_) => corrupt("zstd chunk: not a Zstandard frame"),
    }
}

/// Decodes one zstd-filtered chunk into the start of `out`; returns the decoded size (an error when `out`
/// is too short for it).
pub fn unzstd_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    zstd_size(data, out.len())?;
    zstd::bulk::decompress_to_buffer(data, out)
        .map_err(|e| crate::FormatError::Corrupt(format!("zstd chunk: {e}")))
}

/// Decodes one LZ4-filtered chunk: the decoded size (8 bytes, big-endian), the block size (4 bytes), then per
/// block its stored size (4 bytes) and the block, LZ4-compressed unless its stored size equals its decoded
/// size (then kept as it was).
pub fn unlz4(data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let mut out = vec![0u8; lz4_size(data, max_out)?];
    unlz4_into(data, &mut out)?;
    Ok(out)
}

/// The decoded size an LZ4-filtered chunk states (an error if above `max_out`).
fn lz4_size(data: &[u8], max_out: usize) -> Result<usize> {
    let Some(head) = data.get(..8) else {
        return corrupt("lz4 chunk shorter than its header");
    };
    let total = u64::from_be_bytes(head.try_into().unwrap_or([0; 8]));
    usize::try_from(total)
        .ok()
        .filter(|&t| t <= max_out)
        .map_or_else(
            || corrupt("lz4 chunk decodes to more than the chunk size"),
            Ok,
        )
}

/// Decodes one LZ4-filtered chunk into the start of `out`; returns the decoded size (an error when `out` is
/// too short for it).
pub fn unlz4_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    let be32 = |at: usize| -> Result<usize> {
        match data.get(at..at + 4) {
            Some(b) => Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize),
            None => corrupt("lz4 chunk cut short"),
        }
    };
    let total = lz4_size(data, out.len())?;
    let block = be32(8)?;
    if block == 0 && total > 0 {
        return corrupt("lz4 chunk with a block size of 0");
    }
    let (mut pos, mut done) = (12, 0);
    while done < total {
        let want = block.min(total - done);
        let stored = be32(pos)?;
        pos += 4;
        let Some(body) = data.get(pos..pos + stored) else {
            return corrupt("lz4 chunk: block past its end");
        };
        let dest = &mut out[done..done + want];
        if stored == want {
            dest.copy_from_slice(body);
        } else {
            match lz4_flex::block::decompress_into(body, dest) {
                Ok(n) if n == want => {}
                Ok(n) => {
                    return corrupt(format!(
                        "lz4 chunk: a block decodes to {n} bytes, not {want}"
                    ))
                }
                Err(e) => return corrupt(format!("lz4 chunk: {e}")),
            }
        }
        pos += stored;
        done += want;
    }
    Ok(total)
}

/// Encodes one chunk for the zstd filter: a Zstandard frame at `level`.
pub fn zstd(data: &[u8], level: i32) -> Result<Vec<u8>> {
    zstd::bulk::compress(data, level).map_err(|e| crate::FormatError::Invalid(format!("zstd: {e}")))
}

/// Encodes one chunk for the LZ4 filter: the decoded size, the block size, then each block of at most
/// `block` bytes (0: one block) LZ4-compressed, or as it was when that is not smaller.
pub fn lz4(data: &[u8], block: usize) -> Vec<u8> {
    let block = if block == 0 { data.len().max(1) } else { block };
    let mut out = Vec::with_capacity(12 + data.len() / 2);
    out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    out.extend_from_slice(&(block.min(u32::MAX as usize) as u32).to_be_bytes());
    for b in data.chunks(block) {
        let packed = lz4_flex::block::compress(b);
        let body = if packed.len() < b.len() {
            &packed[..]
        } else {
            b
        };
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_and_lz4_chunks_decode_to_their_bytes() {
        let data: Vec<u8> = (0..70_000u32).map(|i| (i / 300) as u8).collect();
        for block in [0usize, 1000, 65_536] {
            let enc = lz4(&data, block);
            assert!(enc.len() < data.len() / 4);
            assert_eq!(unlz4(&enc, data.len()).unwrap(), data);
        }
        assert_eq!(unlz4(&lz4(&[], 0), 0).unwrap(), Vec::<u8>::new());
        let enc = zstd(&data, 3).unwrap();
        assert_eq!(unzstd(&enc, data.len()).unwrap(), data);
    }

    #[test]
    fn lz4_stored_and_compressed_blocks() {
        // 10 bytes in blocks of 6: a stored block of 6, then a compressed block of 4 (one literal-only
        // sequence: token 0x40 = 4 literals, no match).
        let mut c = 10u64.to_be_bytes().to_vec();
        c.extend_from_slice(&6u32.to_be_bytes());
        c.extend_from_slice(&6u32.to_be_bytes());
        c.extend_from_slice(b"abcdef");
        c.extend_from_slice(&5u32.to_be_bytes());
        c.extend_from_slice(&[0x40, b'g', b'h', b'i', b'j']);
        assert_eq!(unlz4(&c, 10).unwrap(), b"abcdefghij");
        assert!(unlz4(&c, 9).is_err(), "bound");
        assert!(unlz4(&c[..c.len() - 1], 10).is_err(), "cut short");
        let mut zero = 10u64.to_be_bytes().to_vec();
        zero.extend_from_slice(&0u32.to_be_bytes());
        assert!(unlz4(&zero, 10).is_err(), "block size 0");
    }

    #[test]
    fn zstd_rejects_garbage_and_random_bytes_never_panic() {
        assert!(unzstd(b"not a frame", 100).is_err());
        let mut rng = crate::test_rng::TestRng::new(0x1234_5678_9abc_def1);
        let mut next = || rng.next();
        for _ in 0..5_000 {
            let len = (next() % 96) as usize;
            let mut s: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if next() % 2 == 0 && s.len() >= 4 {
                s[..4].copy_from_slice(&[0x28, 0xb5, 0x2f, 0xfd]);
            }
            let max = (next() % 512) as usize;
            if let Ok(out) = unzstd(&s, max) {
                assert!(out.len() <= max);
            }
            if let Ok(out) = unlz4(&s, max) {
                assert!(out.len() <= max);
            }
        }
    }
}
