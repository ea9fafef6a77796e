//! Byte and bit transposes behind the shuffle (2), bitshuffle (32008), Blosc and Blosc2 filters: putting
//! byte planes or bit planes back into elements. AVX-512 kernels (VBMI byte permutes, GFNI bit-matrix
//! transposes) are picked at run time where the CPU has them, SSE2 byte unshuffles otherwise on x86-64; the
//! scalar versions here are the reference and the fallback.

#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod sse2;

/// Weaves `size` byte planes back into elements (the shuffle filter's decoding): plane `b` of `data` (its
/// `n = data.len() / size` bytes from `b * n`) gives byte `b` of every whole element. Bytes after the last
/// whole element are copied as they are. `out` is as long as `data`.
pub(crate) fn unshuffle_bytes(data: &[u8], size: usize, out: &mut [u8]) {
    let Some(n) = whole_elements(data, size, out) else {
        return;
    };
    #[cfg(target_arch = "x86_64")]
    if matches!(size, 2 | 4 | 8) && avx512::available() {
        // SAFETY: the CPU has the kernel's features (checked by `available`).
        unsafe { avx512::unshuffle_bytes(data, size, n, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if matches!(size, 2 | 4 | 8) {
        sse2::unshuffle_bytes(data, size, n, out);
        return;
    }
    unshuffle_bytes_scalar(data, size, n, out);
}

/// The whole elements of `size` bytes in `data` (as long as `out`), after copying the bytes past them to
/// `out`; `None`, with all of `data` copied, when there is nothing to regroup.
fn whole_elements(data: &[u8], size: usize, out: &mut [u8]) -> Option<usize> {
    assert_eq!(
        data.len(),
        out.len(),
        "regrouping into a buffer of another length"
    );
    if size <= 1 || data.len() < size {
        out.copy_from_slice(data);
        return None;
    }
    let n = data.len() / size;
    out[n * size..].copy_from_slice(&data[n * size..]);
    Some(n)
}

/// Splits elements into byte planes (the shuffle filter's encoding); the inverse of [`unshuffle_bytes`].
pub(crate) fn shuffle_bytes(data: &[u8], size: usize, out: &mut [u8]) {
    let Some(n) = whole_elements(data, size, out) else {
        return;
    };
    regroup_scalar(data, size, n, out, true);
}

/// [`unshuffle_bytes`] of the `n` whole elements, one byte at a time.
fn unshuffle_bytes_scalar(data: &[u8], size: usize, n: usize, out: &mut [u8]) {
    regroup_scalar(data, size, n, out, false);
}

/// The byte transpose of `n` whole elements of `size` bytes: with `to_planes`, byte `b` of each element goes
/// to plane `b` (the shuffle filter's encoding); otherwise the planes are woven back into elements.
fn regroup_scalar(data: &[u8], size: usize, n: usize, out: &mut [u8], to_planes: bool) {
    // Element by element in order on the element side, for the common sizes (a plane at a time touches
    // every element `size` times over).
    fn fixed<const S: usize>(data: &[u8], n: usize, out: &mut [u8], to_planes: bool) {
        if to_planes {
            let mut planes: Vec<&mut [u8]> = out[..n * S].chunks_exact_mut(n).collect();
            for (i, elem) in data[..n * S].chunks_exact(S).enumerate() {
                for (plane, &v) in planes.iter_mut().zip(elem) {
                    plane[i] = v;
                }
            }
        } else {
            let planes: [&[u8]; S] = std::array::from_fn(|b| &data[b * n..(b + 1) * n]);
            for (i, elem) in out[..n * S].chunks_exact_mut(S).enumerate() {
                for (dst, plane) in elem.iter_mut().zip(&planes) {
                    *dst = plane[i];
                }
            }
        }
    }
    match size {
        2 => fixed::<2>(data, n, out, to_planes),
        4 => fixed::<4>(data, n, out, to_planes),
        8 => fixed::<8>(data, n, out, to_planes),
        _ => {
            for b in 0..size {
                for i in 0..n {
                    let (plane, elem) = (b * n + i, i * size + b);
                    if to_planes {
                        out[plane] = data[elem];
                    } else {
                        out[elem] = data[plane];
                    }
                }
            }
        }
    }
}

/// Puts the bit planes of `count` elements of `elem` bytes (`count` a multiple of 8) back into elements:
/// plane `8 * j + k` (each `count / 8` bytes) holds bit `k` of byte `j` of every element, element `i` at bit
/// `i % 8` of the plane's byte `i / 8`. `planes` and `out` hold `count * elem` bytes.
pub(crate) fn unshuffle_bits(planes: &[u8], out: &mut [u8], count: usize, elem: usize) {
    assert!(
        count.is_multiple_of(8) && planes.len() == count * elem && out.len() == count * elem,
        "bit unshuffle of {count} elements of {elem} bytes"
    );
    #[cfg(target_arch = "x86_64")]
    if avx512::available() {
        // Bit planes to byte planes, then byte planes to elements.
        if elem == 1 {
            // SAFETY: the CPU has the kernel's features (checked by `available`).
            unsafe { avx512::bits_to_byte_planes(planes, count, elem, out) };
        } else {
            let mut bytes = vec![0u8; planes.len()];
            // SAFETY: as above.
            unsafe { avx512::bits_to_byte_planes(planes, count, elem, &mut bytes) };
            unshuffle_bytes(&bytes, elem, out);
        }
        return;
    }
    unshuffle_bits_scalar(planes, out, count, elem);
}

/// [`unshuffle_bits`] one 8x8 bit matrix at a time.
fn unshuffle_bits_scalar(planes: &[u8], out: &mut [u8], count: usize, elem: usize) {
    let row = count / 8;
    for j in 0..elem {
        let base = j * 8 * row;
        for q in 0..row {
            let bytes = transpose8(plane_word(planes, base, row, q)).to_le_bytes();
            for (t, b) in bytes.iter().enumerate() {
                out[(q * 8 + t) * elem + j] = *b;
            }
        }
    }
}

/// The bitshuffle transform, inverse of [`unshuffle_bits`]: the bit planes of `count` elements of `elem` bytes
/// (`count` a multiple of 8) into `out`, one 8x8 bit matrix at a time. `data` and `out` hold `count * elem` bytes.
pub(crate) fn shuffle_bits_into(data: &[u8], count: usize, elem: usize, out: &mut [u8]) {
    assert!(
        count.is_multiple_of(8) && data.len() == count * elem && out.len() == count * elem,
        "bit shuffle of {count} elements of {elem} bytes"
    );
    let row = count / 8;
    for j in 0..elem {
        let base = j * 8 * row;
        for q in 0..row {
            let mut x = 0u64;
            for t in 0..8 {
                x |= (data[(q * 8 + t) * elem + j] as u64) << (8 * t);
            }
            for (k, b) in transpose8(x).to_le_bytes().iter().enumerate() {
                out[base + k * row + q] = *b;
            }
        }
    }
}

/// Byte `q` of the eight planes of `row` bytes from `base`, plane `k` in byte `k`.
fn plane_word(planes: &[u8], base: usize, row: usize, q: usize) -> u64 {
    let mut x = 0u64;
    for k in 0..8 {
        x |= (planes[base + k * row + q] as u64) << (8 * k);
    }
    x
}

/// Transposes an 8x8 bit matrix held row by row in the bytes of `x` (bit `t` of byte `k` goes to bit `k` of
/// byte `t`), by swapping ever larger blocks across the diagonal.
fn transpose8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// The bitshuffle filter's transform, for tests: the bit planes of `count` elements (a multiple of 8).
#[cfg(test)]
pub(crate) fn shuffle_bits(data: &[u8], count: usize, elem: usize) -> Vec<u8> {
    let row = count / 8;
    let mut planes = vec![0u8; data.len()];
    for i in 0..count {
        for j in 0..elem {
            for k in 0..8 {
                if data[i * elem + j] >> k & 1 != 0 {
                    planes[(j * 8 + k) * row + i / 8] |= 1 << (i % 8);
                }
            }
        }
    }
    planes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::TestRng;

    fn random_bytes(rng: &mut TestRng, len: usize) -> Vec<u8> {
        (0..len).map(|_| rng.next() as u8).collect()
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_byte_unshuffle_matches_the_scalar_one() {
        let mut rng = TestRng::new(0x0005_eed0_f5e2);
        for size in [2usize, 4, 8] {
            for n in [0usize, 1, 15, 16, 17, 31, 33, 100, 1027] {
                let data = random_bytes(&mut rng, n * size);
                let (mut want, mut got) = (vec![0u8; data.len()], vec![0u8; data.len()]);
                unshuffle_bytes_scalar(&data, size, n, &mut want);
                sse2::unshuffle_bytes(&data, size, n, &mut got);
                assert_eq!(got, want, "{size} x {n}");
                let mut planes = vec![0u8; data.len()];
                shuffle_bytes(&want, size, &mut planes);
                assert_eq!(planes, data, "{size} x {n}");
            }
        }
    }

    #[test]
    fn bit_shuffle_matches_the_reference_and_unshuffles_back() {
        let mut rng = TestRng::new(0x0bad_cafe_1234_5678);
        for elem in [1usize, 2, 3, 4, 8, 16] {
            for count in [8usize, 16, 64, 1024] {
                let data = random_bytes(&mut rng, count * elem);
                let mut planes = vec![0u8; data.len()];
                shuffle_bits_into(&data, count, elem, &mut planes);
                assert_eq!(planes, shuffle_bits(&data, count, elem), "{elem} x {count}");
                let mut back = vec![0u8; data.len()];
                unshuffle_bits(&planes, &mut back, count, elem);
                assert_eq!(back, data, "{elem} x {count}");
            }
        }
    }

    #[test]
    fn the_bit_matrix_transpose_moves_each_bit_across_the_diagonal() {
        let mut rng = TestRng::new(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200 {
            let x = rng.next();
            let t = transpose8(x);
            for k in 0..8 {
                for b in 0..8 {
                    assert_eq!(x >> (8 * k + b) & 1, t >> (8 * b + k) & 1);
                }
            }
        }
    }

    #[test]
    fn byte_unshuffle_inverts_shuffle_for_every_size_and_length() {
        let mut rng = TestRng::new(0x1234_5678_9abc_def0);
        for size in 1..=17usize {
            for len in [
                0,
                1,
                63,
                64,
                127,
                128,
                129,
                511,
                512,
                513,
                1000,
                4096,
                4099,
                65536 + 7,
            ] {
                let len = len * size + len % 3;
                let data = random_bytes(&mut rng, len);
                let mut planes = vec![0u8; len];
                shuffle_bytes(&data, size, &mut planes);
                let n = len / size;
                if size > 1 && len >= size {
                    for b in 0..size {
                        for i in 0..n {
                            assert_eq!(planes[b * n + i], data[i * size + b]);
                        }
                    }
                }
                assert_eq!(planes[n * size..], data[n * size..], "tail kept");
                let mut back = vec![0u8; len];
                unshuffle_bytes(&planes, size, &mut back);
                assert_eq!(back, data, "size {size} len {len}");
                if size > 1 && len >= size {
                    let mut scalar = planes.clone();
                    unshuffle_bytes_scalar(&planes, size, n, &mut scalar);
                    assert_eq!(scalar, data, "scalar, size {size} len {len}");
                }
            }
        }
    }

    #[test]
    fn bit_unshuffle_matches_the_plane_definition() {
        let mut rng = TestRng::new(0x5eed_b175);
        for elem in [1usize, 2, 3, 4, 5, 8, 16] {
            for count in [8usize, 16, 56, 504, 512, 520, 1024, 1032, 2048 + 64 * 8 + 8] {
                let data = random_bytes(&mut rng, count * elem);
                let planes = shuffle_bits(&data, count, elem);
                let mut out = vec![0u8; data.len()];
                unshuffle_bits(&planes, &mut out, count, elem);
                assert_eq!(out, data, "elem {elem} count {count}");
                let mut scalar = vec![0u8; data.len()];
                unshuffle_bits_scalar(&planes, &mut scalar, count, elem);
                assert_eq!(scalar, data, "scalar, elem {elem} count {count}");
            }
        }
    }
}
