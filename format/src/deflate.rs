//! Deflate (zlib stream) compression of chunks with one compressor kept per thread: setting up a
//! compressor allocates and clears its window and hash tables, which cost as much as compressing a small
//! chunk, so a write of many small chunks resets a kept one instead.

use std::cell::RefCell;

use flate2::{Compress, Compression, FlushCompress, Status};

use crate::error::{FormatError, Result};

thread_local! {
    /// This thread's compressor and the level it was made for.
    static KEPT: RefCell<Option<(u32, Compress)>> = const { RefCell::new(None) };
}

/// `data` as a zlib stream at `level` (0–9), the bytes HDF5's deflate filter stores.
pub fn compress(data: &[u8], level: u32) -> Result<Vec<u8>> {
    KEPT.with(|kept| {
        // A compressor in use further up this thread's stack (not expected) leaves this call a fresh one.
        let Ok(mut kept) = kept.try_borrow_mut() else {
            return run(&mut Compress::new(Compression::new(level), true), data);
        };
        match kept.as_mut() {
            Some((l, c)) if *l == level => c.reset(),
            _ => *kept = None,
        }
        let (_, c) =
            kept.get_or_insert_with(|| (level, Compress::new(Compression::new(level), true)));
        run(c, data)
    })
}

/// Compresses `data` with `c` (fresh or reset) to the end of the stream.
fn run(c: &mut Compress, data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    loop {
        let read = c.total_in() as usize;
        let status = c
            .compress_vec(&data[read..], &mut out, FlushCompress::Finish)
            .map_err(|e| FormatError::Invalid(format!("deflate: {e}")))?;
        match status {
            Status::StreamEnd => return Ok(out),
            // Out of room (or no progress until there is more): grow the output and go on.
            Status::Ok | Status::BufError => out.reserve(out.capacity().max(64)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn inflate(z: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(z)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn round_trips_and_repeats_itself() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for (len, level) in [
            (0, 4),
            (1, 4),
            (1000, 1),
            (70_000, 9),
            (5000, 4),
            (300_000, 0),
        ] {
            let data: Vec<u8> = (0..len)
                .map(|i| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    if i % 3 == 0 {
                        rng as u8
                    } else {
                        (i / 7) as u8
                    }
                })
                .collect();
            let z = compress(&data, level).unwrap();
            assert_eq!(inflate(&z), data, "len {len} level {level}");
            // The kept compressor, reset, gives the same bytes again, as does a fresh one on another thread.
            assert_eq!(compress(&data, level).unwrap(), z);
            let again = std::thread::scope(|s| s.spawn(|| compress(&data, level).unwrap()).join());
            assert_eq!(again.unwrap(), z);
        }
    }
}
