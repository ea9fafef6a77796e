//! Large buffers backed by transparent huge pages where the kernel offers them.
//!
//! A fresh 4 KiB page costs a fault and a zeroing on first touch; a store opened with 100K rows touches
//! about 50 MiB of int8 codes and graph lists this way. Asking for 2 MiB pages (`MADV_HUGEPAGE`) before the
//! first touch turns 512 faults into one. It is advice only: where the kernel declines (THP off, other
//! systems) nothing changes but the speed. (`clawhdf5-format` gives the same advice to its large read
//! buffers in its own `hugepages` module: the two crates do not depend on each other.)

/// Buffers smaller than this are left alone (a huge page must fit inside, aligned, with room to spare).
pub const MIN_BYTES: usize = 4 << 20;

const HUGE: usize = 2 << 20;

/// Advises the kernel to back the whole 2 MiB-aligned pages inside `buf` with huge pages. Call it on a
/// freshly allocated, still untouched buffer of at least [`MIN_BYTES`]; smaller ones are ignored.
pub fn advise_huge<T>(buf: &mut [T]) {
    let bytes = std::mem::size_of_val(buf);
    if bytes < MIN_BYTES {
        return;
    }
    let start = buf.as_mut_ptr() as usize;
    let first = start.next_multiple_of(HUGE);
    let end = (start + bytes) / HUGE * HUGE;
    if end > first {
        advise(first, end - first);
    }
}

#[cfg(target_os = "linux")]
fn advise(addr: usize, len: usize) {
    // SAFETY: [addr, addr + len) lies inside a live allocation this process owns (the caller's `&mut`
    // slice), and MADV_HUGEPAGE only changes how the kernel backs those pages, never their contents or
    // mapping; a refusal (EINVAL where THP is compiled out) is ignored.
    unsafe {
        libc::madvise(addr as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_addr: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advised_buffers_keep_their_contents() {
        for len in [
            0usize,
            1000,
            MIN_BYTES - 1,
            MIN_BYTES,
            3 * MIN_BYTES + 12_345,
        ] {
            let mut v = vec![0u8; len];
            advise_huge(&mut v);
            v.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
            assert!(
                v.iter().enumerate().all(|(i, &b)| b == i as u8),
                "len {len}"
            );
        }
    }
}
