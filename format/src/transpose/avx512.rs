//! AVX-512 kernels for the transposes: 64 bytes of each of `S` planes are woven into `S` registers of
//! whole elements by a tree of two-register byte permutes (VBMI `vpermt2b`), and 8x8 bit matrices are
//! transposed eight at a time by a GF(2) affine transform (GFNI).

use std::arch::x86_64::*;
use std::sync::OnceLock;

/// Whether the CPU runs these kernels (AVX-512 F/BW/VBMI and GFNI).
pub(super) fn available() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vbmi")
            && is_x86_feature_detected!("gfni")
    })
}

/// Byte indices of one permute: for each output byte, the byte of the first (0–63) or second (64–127)
/// register it comes from.
type Index = [u8; 64];

/// The permutes that weave `S` planes of 64 bytes (register `b` holding plane `b`) into `S` registers of
/// whole elements. Level `l` (1 ..= log2 S) turns registers holding `2^(l-1)` planes × `64 >> (l-1)`
/// columns into registers holding `2^l` planes × `64 >> l` columns; a register at level `l` is numbered
/// `group * 2^l + block` (planes `group * 2^l ..`, columns `block * (64 >> l) ..`) and made from registers
/// `2 * group` and `2 * group + 1` of the level below (their column block `block / 2`). Inside a register,
/// byte `plane * columns + column` holds that plane's column, except at the last level, where `last`
/// places them. `index[l - 1][block % 2]` is the permute of level `l`.
struct Weave {
    index: Vec<[Index; 2]>,
}

impl Weave {
    fn new(planes: usize, last: impl Fn(usize, usize) -> usize) -> Weave {
        let levels = planes.trailing_zeros() as usize;
        let mut index = Vec::with_capacity(levels);
        for l in 1..=levels {
            let (half, cols, below_cols) = (1usize << (l - 1), 64 >> l, 64 >> (l - 1));
            let mut pair = [[0u8; 64]; 2];
            for (parity, idx) in pair.iter_mut().enumerate() {
                for plane in 0..2 * half {
                    for col in 0..cols {
                        let pos = if l == levels {
                            last(plane, col)
                        } else {
                            plane * cols + col
                        };
                        let (from_second, below_plane) = (plane >= half, plane % half);
                        let below_col = parity * cols + col;
                        let src = below_plane * below_cols + below_col;
                        idx[pos] = (src + 64 * from_second as usize) as u8;
                    }
                }
            }
            index.push(pair);
        }
        Weave { index }
    }
}

/// Byte unshuffle: element `c * (64 / S) + column` of a 64-element group at bytes `S * column + plane` of
/// register `c`.
fn byte_weave(planes: usize) -> &'static Weave {
    static W: [OnceLock<Weave>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = planes.trailing_zeros() as usize - 1;
    W[slot].get_or_init(|| Weave::new(planes, |plane, col| col * planes + plane))
}

/// Bit unshuffle: each 64-bit lane holds byte `q` of the eight bit planes, plane `k` in byte `7 - k` (the
/// row order the GF(2) affine transform reads its matrix in).
fn bit_weave() -> &'static Weave {
    static W: OnceLock<Weave> = OnceLock::new();
    W.get_or_init(|| Weave::new(8, |plane, col| col * 8 + (7 - plane)))
}

/// Runs the weave's `L` levels over `S = 2^L` registers (constant bounds, so the loops unroll and the
/// registers stay in registers).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn weave<const S: usize, const L: usize>(
    rows: [__m512i; S],
    index: &[[__m512i; 2]; L],
) -> [__m512i; S] {
    let mut cur = rows;
    for (l, idx) in index.iter().enumerate() {
        let l = l + 1;
        let half = 1usize << (l - 1);
        let mut next = cur;
        for group in 0..S >> l {
            for block in 0..1usize << l {
                let a = cur[2 * group * half + block / 2];
                let b = cur[(2 * group + 1) * half + block / 2];
                next[(group << l) + block] = _mm512_permutex2var_epi8(a, idx[block % 2], b);
            }
        }
        cur = next;
    }
    cur
}

/// The weave's `L` levels of permutes in registers.
#[inline]
#[target_feature(enable = "avx512f")]
fn load_index<const L: usize>(w: &Weave) -> [[__m512i; 2]; L] {
    assert_eq!(
        w.index.len(),
        L,
        "a weave of {} levels, not {L}",
        w.index.len()
    );
    std::array::from_fn(|l| {
        // SAFETY: each index is 64 readable bytes; the load is unaligned.
        w.index[l].map(|i| unsafe { _mm512_loadu_si512(i.as_ptr().cast()) })
    })
}

/// Unshuffles the `n` whole elements of `size` (2, 4 or 8) bytes from `data` (planes of `n` bytes) into
/// `out`; the bytes after them are the caller's.
///
/// # Safety
/// The CPU must have the features [`available`] checks.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(super) unsafe fn unshuffle_bytes(data: &[u8], size: usize, n: usize, out: &mut [u8]) {
    match size {
        2 => unshuffle_fixed::<2, 1>(data, n, out),
        4 => unshuffle_fixed::<4, 2>(data, n, out),
        8 => unshuffle_fixed::<8, 3>(data, n, out),
        _ => unreachable!("no AVX-512 unshuffle for {size}-byte elements"),
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn unshuffle_fixed<const S: usize, const L: usize>(data: &[u8], n: usize, out: &mut [u8]) {
    assert!(data.len() >= n * S && out.len() >= n * S);
    let index = load_index::<L>(byte_weave(S));
    let mut e = 0;
    while e + 64 <= n {
        let rows: [__m512i; S] = std::array::from_fn(|b| {
            // SAFETY: plane `b` is `data[b * n .. (b + 1) * n]` and `e + 64 <= n`, so the 64 bytes read
            // lie inside `data` (asserted above).
            unsafe { _mm512_loadu_si512(data.as_ptr().add(b * n + e).cast()) }
        });
        let woven = weave(rows, &index);
        for (c, v) in woven.iter().enumerate() {
            // SAFETY: the group's elements `e .. e + 64` are bytes `e * S .. (e + 64) * S` of `out`, inside
            // it since `e + 64 <= n`; register `c` holds its 64 bytes from `c * 64`.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(e * S + c * 64).cast(), *v) };
        }
        e += 64;
    }
    for i in e..n {
        for b in 0..S {
            out[i * S + b] = data[b * n + i];
        }
    }
}

/// Turns the bit planes of `count` elements of `elem` bytes into byte planes: byte `i` of plane `j` of
/// `out` is byte `j` of element `i`.
///
/// # Safety
/// The CPU must have the features [`available`] checks.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
pub(super) unsafe fn bits_to_byte_planes(planes: &[u8], count: usize, elem: usize, out: &mut [u8]) {
    assert!(count.is_multiple_of(8) && planes.len() >= count * elem && out.len() >= count * elem);
    let row = count / 8;
    let index = load_index::<3>(bit_weave());
    // Byte `i` of each lane is 1 << i: the affine transform then gives, in byte `i` of a lane, bit `i` of
    // each of the lane's eight bytes (the lane's matrix, transposed).
    let unit = _mm512_set1_epi64(0x8040_2010_0804_0201u64 as i64);
    for j in 0..elem {
        let base = j * 8 * row;
        let dst = &mut out[j * count..(j + 1) * count];
        let mut q = 0;
        while q + 64 <= row {
            let rows: [__m512i; 8] = std::array::from_fn(|k| {
                // SAFETY: plane `8 * j + k` is `planes[base + k * row ..][..row]` and `q + 64 <= row`.
                unsafe { _mm512_loadu_si512(planes.as_ptr().add(base + k * row + q).cast()) }
            });
            let woven = weave(rows, &index);
            for (c, v) in woven.iter().enumerate() {
                let bytes = _mm512_gf2p8affine_epi64_epi8::<0>(unit, *v);
                // SAFETY: lane `t` of register `c` is plane byte `q + 8 * c + t`, i.e. elements
                // `8 * (q + 8 * c + t) ..` of 8 each: 64 bytes from `8 * (q + 8 * c)`, and
                // `8 * (q + 64) <= 8 * row = count = dst.len()`.
                unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(8 * (q + 8 * c)).cast(), bytes) };
            }
            q += 64;
        }
        for q in q..row {
            let bytes = super::transpose8(super::plane_word(planes, base, row, q)).to_le_bytes();
            dst[8 * q..8 * q + 8].copy_from_slice(&bytes);
        }
    }
}
