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

/// Copies the elements at the Cartesian product of per-dimension index pairs
/// `(source index, destination index)` from `src` (shape `sshape`) into `dst` (shape `dshape`).
/// Consecutive pairs in the last dimension are copied as one run. Callers guarantee bounds.
pub fn copy_points(
    src: &[u8],
    sshape: &[u64],
    dst: &mut [u8],
    dshape: &[u64],
    pairs: &[Vec<(u64, u64)>],
    elem: usize,
) {
    let r = pairs.len();
    if pairs.iter().any(|p| p.is_empty()) {
        return;
    }
    if r == 0 {
        dst[..elem].copy_from_slice(&src[..elem]);
        return;
    }
    // Runs along the last dimension: (source start, destination start, length).
    let mut runs: Vec<(u64, u64, u64)> = vec![];
    for &(s, d) in &pairs[r - 1] {
        match runs.last_mut() {
            Some((rs, rd, n)) if *rs + *n == s && *rd + *n == d => *n += 1,
            _ => runs.push((s, d, 1)),
        }
    }
    let strides = |shape: &[u64]| {
        let mut st = vec![1u64; r];
        for i in (0..r - 1).rev() {
            st[i] = st[i + 1] * shape[i + 1];
        }
        st
    };
    let (ss, ds) = (strides(sshape), strides(dshape));
    let mut idx = vec![0usize; r - 1];
    loop {
        let (mut so, mut dof) = (0u64, 0u64);
        for i in 0..r - 1 {
            let (s, d) = pairs[i][idx[i]];
            so += s * ss[i];
            dof += d * ds[i];
        }
        for &(s, d, n) in &runs {
            let a = (so + s) as usize * elem;
            let b = (dof + d) as usize * elem;
            let len = n as usize * elem;
            dst[b..b + len].copy_from_slice(&src[a..a + len]);
        }
        let mut k = r - 1;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < pairs[k].len() {
                break;
            }
            idx[k] = 0;
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

    #[test]
    fn copies_strided_points() {
        let src: Vec<u8> = (0..20).collect(); // 4x5
        let mut dst = vec![0u8; 6]; // 2x3: rows 0 and 2, columns 1, 2 and 4
        let pairs = vec![vec![(0, 0), (2, 1)], vec![(1, 0), (2, 1), (4, 2)]];
        copy_points(&src, &[4, 5], &mut dst, &[2, 3], &pairs, 1);
        assert_eq!(dst, vec![1, 2, 4, 11, 12, 14]);
    }
}
