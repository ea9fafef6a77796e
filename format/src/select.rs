//! Copying n-dimensional boxes of elements between row-major buffers.

/// Copies the box `count` from `src` (shape `sshape`, box origin `sstart`) into `dst`
/// (shape `dshape`, origin `dstart`). Elements are `elem` bytes. Callers guarantee bounds.
#[allow(clippy::too_many_arguments)]
pub fn copy_box(
    src: &[u8],
    sshape: &[u64],
    sstart: &[u64],
    dst: &mut [u8],
    dshape: &[u64],
    dstart: &[u64],
    count: &[u64],
    elem: usize,
) {
    let r = count.len();
    if count.contains(&0) {
        return;
    }
    if r == 0 {
        dst[..elem].copy_from_slice(&src[..elem]);
        return;
    }
    let strides = |shape: &[u64]| {
        let mut s = vec![1u64; r];
        for i in (0..r.saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1];
        }
        s
    };
    let ss = strides(sshape);
    let ds = strides(dshape);
    let run = count[r - 1] as usize * elem;
    let mut idx = vec![0u64; r.saturating_sub(1)];
    loop {
        let mut so = sstart[r - 1];
        let mut dof = dstart[r - 1];
        for i in 0..r - 1 {
            so += (sstart[i] + idx[i]) * ss[i];
            dof += (dstart[i] + idx[i]) * ds[i];
        }
        let so = so as usize * elem;
        let dof = dof as usize * elem;
        dst[dof..dof + run].copy_from_slice(&src[so..so + run]);
        // Advance the outer index.
        let mut d = r - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < count[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_a_window() {
        let src: Vec<u8> = (0..20).collect(); // 4x5
        let mut dst = vec![0u8; 6]; // 2x3
        copy_box(
            &src,
            &[4, 5],
            &[1, 1],
            &mut dst,
            &[2, 3],
            &[0, 0],
            &[2, 3],
            1,
        );
        assert_eq!(dst, vec![6, 7, 8, 11, 12, 13]);
    }
}
