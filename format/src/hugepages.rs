//! Transparent-huge-page advice for large fresh result buffers: a 64 MiB read into a new `Vec`
//! otherwise pays one page fault per 4 KiB page, which costs more than copying the data.

/// Buffers at least this large get the advice.
pub const HUGE_BUFFER_BYTES: usize = 4 << 20;

const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back the 2 MiB-aligned part of `buf` with huge pages (Linux; a no-op
/// elsewhere or when the advice is refused). Call before first touching a fresh buffer.
pub fn advise(buf: &mut [u8]) {
    advise_range(buf.as_mut_ptr() as usize, buf.len());
}

/// [`advise`] for the spare capacity of `buf` (reserved, not yet written), where a writer is about to
/// build a large output.
pub fn advise_spare(buf: &mut Vec<u8>) {
    let spare = buf.spare_capacity_mut();
    advise_range(spare.as_mut_ptr() as usize, spare.len());
}

/// [`advise`] for the `len` bytes at address `start`, which must lie inside one allocation the
/// caller holds mutably.
fn advise_range(start: usize, len: usize) {
    if len < HUGE_BUFFER_BYTES {
        return;
    }
    let lo = start.div_ceil(HUGE_PAGE) * HUGE_PAGE;
    let hi = (start + len) / HUGE_PAGE * HUGE_PAGE;
    if hi <= lo {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: madvise on whole pages [lo, hi) that lie inside [start, start + len), part of a
        // live allocation the caller holds mutably (`advise`, `advise_spare`); MADV_HUGEPAGE is
        // advice about how to back the (anonymous, mmap-allocated) range and changes neither its
        // contents nor its validity. A failure is ignored.
        let _ = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn advice_keeps_contents() {
        let mut v = vec![7u8; 9 << 20];
        super::advise(&mut v);
        assert!(v.iter().all(|&b| b == 7));
        let mut small = vec![1u8; 10];
        super::advise(&mut small);
        assert_eq!(small, vec![1u8; 10]);
        let mut growing: Vec<u8> = Vec::with_capacity(9 << 20);
        growing.push(3);
        super::advise_spare(&mut growing);
        growing.resize(9 << 20, 5);
        assert_eq!(growing[0], 3);
        assert!(growing[1..].iter().all(|&b| b == 5));
    }
}
