//! How a durable (every-save) log's frames reach the disk. On Linux the writer opens the log a second time
//! with `O_DIRECT | O_DSYNC` and writes whole 4 KiB blocks: the log's last, partial block is written again
//! with the new frames after it and zeros to the block's end, and the write is on disk when it returns — no
//! page-cache writeback and no separate `fdatasync`. Where the file system refuses direct I/O (tmpfs on older
//! kernels, other systems) it writes at the log's end and calls `fdatasync`, as the log always did.
//!
//! The file grows [`PREALLOC`] bytes of written zeros at a time, past the frames being written, in one write
//! of its own (direct and synchronous too), so that the next frames' writes overwrite blocks the file already
//! has and commit no new size or allocation (only a write that crosses the zeros' end allocates its own). A
//! write of a quarter of that or more (a large batch) skips the zeros and extends the file itself: writing
//! them would cost about as much as the batch, for the sake of later writes that may never come.
//!
//! Writing a block again is safe: its earlier bytes are the same in the old and the new copy, so a crash
//! mid-write can only tear the new frames, which recovery then cuts off.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{OWN_ALLOCATION, PREALLOC};

/// The unit of a direct write: offsets, lengths and the buffer's address are multiples of it.
const BLOCK: usize = 4096;

/// Zeros a log grows by (this writer's direct writes, and the appender's buffered ones in `wal.rs`), aligned
/// for direct writes; in `.bss`, so it costs no memory until read, and then only the kernel's zero page.
#[repr(align(4096))]
pub(super) struct Zeros(pub(super) [u8; PREALLOC as usize]);
pub(super) static ZEROS: Zeros = Zeros([0; PREALLOC as usize]);

/// A scratch buffer bigger than this is released after the write that needed it (a large batch).
const KEEP_SCRATCH: usize = 4 << 20;

/// Appends frames at the end of a log and makes them durable, one write at a time.
pub(super) struct SyncWriter {
    /// A plain handle: the fallback's writes and `fdatasync`.
    plain: File,
    /// The `O_DIRECT | O_DSYNC` handle, while the file system takes direct writes.
    direct: Option<File>,
    /// Where the log ends: the next frame goes here.
    end: u64,
    /// The file's length: `end` plus zeros written ahead.
    allocated: u64,
    /// The log's bytes from the start of the block holding `end` up to `end` (written again with the next
    /// frames).
    tail: Vec<u8>,
    /// Room for one write's blocks, with spare bytes so that an aligned window fits.
    scratch: Vec<u8>,
    /// Why a write failed: what it carried may be partly on disk, so nothing is written after it.
    failed: Option<String>,
}

impl SyncWriter {
    /// A writer for the log at `path` whose frames end at `end` in a file `allocated` bytes long (zeros
    /// after `end`); `file` is an open, writable handle on it.
    pub(super) fn open(
        path: &Path,
        file: File,
        end: u64,
        allocated: u64,
    ) -> io::Result<SyncWriter> {
        let start = end - end % BLOCK as u64;
        let mut tail = vec![0u8; (end - start) as usize];
        file.read_exact_at(&mut tail, start)?;
        Ok(SyncWriter {
            plain: file,
            direct: open_direct(path),
            end,
            allocated: allocated.max(end),
            tail,
            scratch: Vec::new(),
            failed: None,
        })
    }

    /// Append `bytes` at the log's end and return once they are on disk.
    pub(super) fn write_durably(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(reason) = &self.failed {
            return Err(io::Error::other(format!(
                "an earlier log write failed ({reason})"
            )));
        }
        let res = self.write_inner(bytes);
        match &res {
            Ok(()) => self.advance(bytes),
            Err(e) => self.failed = Some(e.to_string()),
        }
        res
    }

    fn write_inner(&mut self, bytes: &[u8]) -> io::Result<()> {
        let new_end = self.end + bytes.len() as u64;
        // A large write allocates its own blocks (one more journal commit within its synchronous write);
        // zeros written first would cost as much as the write again. Small writes share the zeros.
        if new_end > self.allocated && bytes.len() < OWN_ALLOCATION {
            self.grow(new_end);
        }
        if self.direct.is_some() {
            match self.write_direct(bytes) {
                Ok(()) => return Ok(()),
                // The file system took the open but not the write (alignment, or no direct I/O after all):
                // nothing was written, so the same bytes go the plain way from now on.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.direct = None,
                Err(e) => return Err(e),
            }
        }
        self.plain.write_all_at(bytes, self.end)?;
        self.plain.sync_data()
    }

    /// One direct write of the blocks from the tail's start through `bytes`, zeros after them.
    fn write_direct(&mut self, bytes: &[u8]) -> io::Result<()> {
        let Some(file) = &self.direct else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let data = self.tail.len() + bytes.len();
        let blocks = data.div_ceil(BLOCK) * BLOCK;
        if self.scratch.len() < blocks + BLOCK {
            self.scratch = vec![0u8; blocks + BLOCK];
        }
        let skip = self.scratch.as_ptr().align_offset(BLOCK);
        let window = self
            .scratch
            .get_mut(skip..skip + blocks)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        let (head, rest) = window.split_at_mut(self.tail.len());
        head.copy_from_slice(&self.tail);
        let (body, zeros) = rest.split_at_mut(bytes.len());
        body.copy_from_slice(bytes);
        zeros.fill(0);
        let start = self.end - self.tail.len() as u64;
        let res = file.write_all_at(window, start);
        if self.scratch.len() > KEEP_SCRATCH {
            self.scratch = Vec::new();
        }
        res
    }

    /// Extend the file with zeros to the next multiple of [`PREALLOC`] at or past `upto`, the end of the
    /// frames about to be written. The zeros start at the first block after `upto` (the frames' own write
    /// covers the blocks up to it: writing zeros there first would write a large batch twice) or at the
    /// block holding the file's end, whichever is later: never over a frame. If that fails (a full disk),
    /// the file keeps what it got and the frames' write extends it as far as it needs.
    fn grow(&mut self, upto: u64) {
        let block = BLOCK as u64;
        let target = upto.div_ceil(PREALLOC) * PREALLOC;
        let from = upto
            .next_multiple_of(block)
            .max(self.allocated - self.allocated % block);
        let mut at = from;
        while at < target {
            let zeros = &ZEROS.0[..(target - at).min(PREALLOC) as usize];
            let direct = match &self.direct {
                Some(file) => file.write_all_at(zeros, at),
                None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
            };
            if let Err(e) = direct {
                if self.direct.is_some() && e.raw_os_error() != Some(libc::EINVAL) {
                    return;
                }
                // The plain way: the frames' `fdatasync` makes these zeros durable with them.
                self.direct = None;
                if self.plain.write_all_at(zeros, at).is_err() {
                    return;
                }
            }
            at += zeros.len() as u64;
            self.allocated = self.allocated.max(at);
        }
    }

    /// Move the end past `bytes` (just written) and keep the new partial block's bytes.
    fn advance(&mut self, bytes: &[u8]) {
        let new_end = self.end + bytes.len() as u64;
        let keep = (new_end % BLOCK as u64) as usize;
        if keep <= bytes.len() {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        } else {
            // Still inside the same block: the old tail, then all of `bytes`.
            self.tail.extend_from_slice(bytes);
        }
        self.end = new_end;
        self.allocated = self.allocated.max(new_end);
    }
}

/// The log opened again for direct, synchronous writes; `None` where the system or file system refuses.
fn open_direct(path: &Path) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
            .open(path)
            .ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer_at(dir: &tempfile::TempDir, initial: &[u8]) -> (std::path::PathBuf, SyncWriter) {
        let p = dir.path().join("w.log");
        std::fs::write(&p, initial).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let w = SyncWriter::open(&p, f, initial.len() as u64, initial.len() as u64).unwrap();
        (p, w)
    }

    #[test]
    fn writes_across_block_boundaries_land_in_order_with_zeros_after() {
        for direct in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let (p, mut w) = writer_at(&dir, b"HEADER");
            if !direct {
                // The fallback a file system without direct I/O gets.
                w.direct = None;
            }
            appends_land_in_order(&p, &mut w);
        }
    }

    fn appends_land_in_order(p: &Path, w: &mut SyncWriter) {
        let mut want = b"HEADER".to_vec();
        // Lengths that stay inside a block, end exactly on one, and span several.
        for (i, n) in [10usize, 4080, 1, 5000, 8192, 3, 4095]
            .into_iter()
            .enumerate()
        {
            let chunk: Vec<u8> = (0..n).map(|j| (i * 31 + j % 251 + 1) as u8).collect();
            w.write_durably(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            let got = std::fs::read(p).unwrap();
            assert_eq!(&got[..want.len()], &want[..], "after write {i}");
            assert!(got[want.len()..].iter().all(|&b| b == 0));
        }
        assert_eq!(w.end, want.len() as u64);
    }

    #[test]
    fn a_writer_opened_mid_block_keeps_the_bytes_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let initial: Vec<u8> = (0..6000u32).map(|i| (i % 200 + 1) as u8).collect();
        let (p, mut w) = writer_at(&dir, &initial);
        w.write_durably(b"more").unwrap();
        let got = std::fs::read(&p).unwrap();
        assert_eq!(&got[..6000], &initial[..]);
        assert_eq!(&got[6000..6004], b"more");
    }

    #[test]
    fn the_file_grows_by_whole_preallocations_of_zeros_that_never_cover_a_frame() {
        for direct in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("w.log");
            // Frames end at 5,000 bytes; zeros follow to 9,000 (a file cut back after a torn tail, say).
            let mut initial: Vec<u8> = (0..5000u32).map(|i| (i % 200 + 1) as u8).collect();
            initial.resize(9000, 0);
            std::fs::write(&p, &initial).unwrap();
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&p)
                .unwrap();
            let mut w = SyncWriter::open(&p, f, 5000, 9000).unwrap();
            if !direct {
                w.direct = None;
            }
            // Inside the zeros the file has: no growth.
            w.write_durably(b"next").unwrap();
            assert_eq!(std::fs::metadata(&p).unwrap().len(), 9000);
            // Past them: the file grows to a whole preallocation.
            let more = vec![9u8; 6000];
            w.write_durably(&more).unwrap();
            let got = std::fs::read(&p).unwrap();
            assert_eq!(got.len() as u64, PREALLOC);
            assert_eq!(&got[..5000], &initial[..5000]);
            assert_eq!(&got[5000..5004], b"next");
            assert_eq!(&got[5004..11_004], &more[..]);
            assert!(got[11_004..].iter().all(|&b| b == 0));
            // A large write past the preallocation extends the file itself, with no zeros first (a direct
            // write ends on a whole block).
            let big = vec![7u8; PREALLOC as usize];
            w.write_durably(&big).unwrap();
            let got = std::fs::read(&p).unwrap();
            let end = 11_004 + big.len();
            let len = if w.direct.is_some() {
                end.next_multiple_of(BLOCK)
            } else {
                end
            };
            assert_eq!(got.len(), len);
            assert_eq!(&got[11_004..end], &big[..]);
            assert!(got[end..].iter().all(|&b| b == 0));
            // The next small write grows the file by zeros to a whole preallocation again.
            w.write_durably(b"tail").unwrap();
            let got = std::fs::read(&p).unwrap();
            assert_eq!(got.len() as u64, 2 * PREALLOC);
            assert_eq!(&got[11_004..end], &big[..]);
            assert_eq!(&got[end..end + 4], b"tail");
            assert!(got[end + 4..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn after_a_failed_write_nothing_more_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (_, mut w) = writer_at(&dir, b"x");
        w.failed = Some("disk gone".into());
        let e = w.write_durably(b"y").unwrap_err();
        assert!(e.to_string().contains("disk gone"));
        assert_eq!(w.end, 1);
    }
}
