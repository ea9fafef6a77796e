//! Int8 copy of vectors with one scale per row, used to traverse graphs with 4x less memory traffic.
//! Approximate distances from it are always re-scored with the store's f32 vectors before returning.

use crate::kernels;
use crate::metric::Metric;
use crate::sign::{LazySignCodes, SignCodes};
use crate::store::{Row, VectorStore};
use rayon::prelude::*;

/// Rows start on this byte boundary (a cache line), so a row's codes load without line splits.
const ROW_ALIGN: usize = 64;
/// Copies with fewer rows keep no sign codes: scanning every allowed row of them in int8 reads at
/// most a few MB, and the codes' extra cache line a row would be memory for nothing.
pub const SIGN_CODES_MIN_ROWS: usize = 32_768;
/// Offset added to each stored code so rows are `u8` (the unsigned operand of u8 x i8 dot products).
pub(crate) const OFFSET: i32 = 128;

/// A byte buffer whose first byte sits on a [`ROW_ALIGN`] boundary (safe code: a `Vec<u8>` with
/// slack and an offset, re-aligned whenever it is reallocated).
#[derive(Debug, Default)]
struct AlignedBytes {
    buf: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBytes {
    fn zeroed(len: usize) -> Self {
        let mut buf = vec![0u8; len + ROW_ALIGN - 1];
        crate::pages::advise_huge(&mut buf);
        let off = match buf.as_ptr().align_offset(ROW_ALIGN) {
            o if o < ROW_ALIGN => o,
            // align_offset may decline to answer; rows are then merely unaligned.
            _ => 0,
        };
        AlignedBytes { buf, off, len }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        &self.buf[self.off..self.off + self.len]
    }

    #[inline]
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.off..self.off + self.len]
    }

    /// Grows to `len` bytes (new bytes zero), keeping the contents.
    fn grow(&mut self, len: usize) {
        if len <= self.len {
            return;
        }
        if self.off + len <= self.buf.len() {
            self.len = len;
            return;
        }
        let mut next = AlignedBytes::zeroed(len.max(self.len * 3 / 2));
        next.len = len;
        next.bytes_mut()[..self.len].copy_from_slice(self.bytes());
        *self = next;
    }

    fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

impl Clone for AlignedBytes {
    fn clone(&self) -> Self {
        let mut c = AlignedBytes::zeroed(self.len);
        c.bytes_mut().copy_from_slice(self.bytes());
        c
    }
}

/// Symmetric int8 quantisation: `x ≈ scale * code`, `scale = max|x| / 127` per row.
///
/// Codes are stored offset by +128 as `u8`, one cache-line-aligned row each, so that
/// `sum((c + 128) * q) - 128 * sum(q)` scores a row with a u8 x i8 dot product and a correction that
/// depends on the query only: scoring a row reads its codes and its scale, nothing else.
#[derive(Debug, Clone, Default)]
pub struct Int8Vectors {
    dim: usize,
    /// Bytes per row (`dim` rounded up to a cache line).
    stride: usize,
    codes: AlignedBytes,
    scales: Vec<f32>,
    norms2: Vec<f32>,
    /// One sign bit per dimension of each row, for the first pass of large exact scans: derived
    /// from the codes when a scan first asks for them (copies of [`SIGN_CODES_MIN_ROWS`] rows and
    /// more), then kept in step with them.
    signs: LazySignCodes,
}

impl PartialEq for Int8Vectors {
    /// Copies are equal when they hold the same rows (codes, scales, norms).
    fn eq(&self, other: &Self) -> bool {
        self.dim == other.dim
            && self.scales.len() == other.scales.len()
            && (0..self.scales.len() as u32).all(|i| self.row(i) == other.row(i))
            && self
                .scales
                .iter()
                .map(|x| x.to_bits())
                .eq(other.scales.iter().map(|x| x.to_bits()))
            && self
                .norms2
                .iter()
                .map(|x| x.to_bits())
                .eq(other.norms2.iter().map(|x| x.to_bits()))
    }
}

/// A query quantised the same way, ready for [`Int8Vectors::distance`].
#[derive(Debug, Clone)]
pub struct QuantQuery {
    codes: Vec<i8>,
    /// `128 * sum(codes)`, the correction for the rows' +128 offset.
    offset_sum: i32,
    /// Whether every code lies in [-127, 127] (as [`quantize_into`] makes them).
    in_range: bool,
    scale: f32,
    norm2: f32,
}

/// Quantises `v` into `out` and returns the scale.
pub fn quantize_into(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.iter_mut().for_each(|c| *c = 0);
        return 0.0;
    }
    let inv = 127.0 / max;
    for (c, x) in out.iter_mut().zip(v) {
        // Round half away from zero without a libm call (`f32::round` is one on baseline x86-64), so
        // the loop vectorises; |x * inv| <= 127 by construction, the clamp only guards rounding.
        let y = x * inv;
        *c = ((y + 0.5f32.copysign(y)) as i32).clamp(-127, 127) as i8;
    }
    max / 127.0
}

/// Quantises `v` into a stored row (codes + 128) and returns the scale.
/// Reads one byte per cache line of `bytes` (see [`crate::Hnsw::touch`]).
pub(crate) fn touch_bytes(bytes: &[u8]) -> u64 {
    bytes.iter().step_by(64).map(|&b| u64::from(b)).sum()
}

impl Int8Vectors {
    /// Reads every cache line of the codes, scales and norms once (brings them into the CPU caches).
    pub(crate) fn touch(&self) -> u64 {
        let floats = |v: &[f32]| {
            v.iter()
                .step_by(16)
                .map(|x| x.to_bits() as u64)
                .sum::<u64>()
        };
        touch_bytes(self.codes.bytes())
            .wrapping_add(floats(&self.scales))
            .wrapping_add(floats(&self.norms2))
    }

    /// Empty copy for `dim`-dimensional rows.
    pub fn new(dim: usize) -> Self {
        Self::zeroed(dim, 0)
    }

    /// `rows` all-zero rows (fill them with [`Int8Vectors::set`]).
    pub fn zeroed(dim: usize, rows: usize) -> Self {
        let mut q = Self::unfilled(dim, rows);
        q.codes
            .bytes_mut()
            .iter_mut()
            .for_each(|c| *c = OFFSET as u8);
        q
    }

    /// `rows` rows whose codes are still the allocator's zero bytes (not valid codes: the caller writes
    /// every byte of every row). Large buffers come as untouched zero pages, so the caller's writes are
    /// the first and only pass over them.
    fn unfilled(dim: usize, rows: usize) -> Self {
        let stride = dim.next_multiple_of(ROW_ALIGN);
        Int8Vectors {
            dim,
            stride,
            codes: AlignedBytes::zeroed(rows * stride),
            scales: vec![0.0; rows],
            norms2: vec![0.0; rows],
            signs: LazySignCodes::default(),
        }
    }

    /// Every row's sign code, derived from its int8 codes (in parallel).
    fn derive_signs(&self) -> SignCodes {
        let (codes, scales, norms2) = (&self.codes, &self.scales, &self.norms2);
        let (stride, dim) = (self.stride, self.dim);
        let bytes = codes.bytes();
        let mut signs = SignCodes::zeroed(dim, self.scales.len());
        signs.fill(|i| (&bytes[i * stride..i * stride + dim], scales[i], norms2[i]));
        signs
    }

    /// Derives the sign codes now, whatever the copy's size (they are otherwise derived when a scan
    /// first asks for them, from [`SIGN_CODES_MIN_ROWS`] rows on); tests use it on small copies.
    #[cfg(test)]
    pub(crate) fn build_signs(&mut self) {
        let signs = self.derive_signs();
        self.signs.set(signs);
    }

    /// Whether a scan may ask for sign codes: the copy holds [`SIGN_CODES_MIN_ROWS`] rows or more,
    /// or they were derived already.
    pub fn keeps_signs(&self) -> bool {
        self.len() >= SIGN_CODES_MIN_ROWS || self.signs.get().is_some()
    }

    /// The rows' sign codes (see [`crate::sign`]), derived now if this is the first call (`None`
    /// when the copy does not keep them: see [`Int8Vectors::keeps_signs`]).
    pub fn sign_codes(&self) -> Option<&SignCodes> {
        self.keeps_signs()
            .then(|| self.signs.get_or_build_with(|| self.derive_signs()))
    }

    /// Quantises every row of a store (in parallel).
    pub fn from_store<S: VectorStore + ?Sized>(store: &S) -> Self {
        Self::from_store_prefix(store, store.len())
    }

    /// Quantises rows `0..rows` of a store (in parallel); `rows` is capped at the store's length.
    pub fn from_store_prefix<S: VectorStore + ?Sized>(store: &S, rows: usize) -> Self {
        let dim = store.dim();
        let n = rows.min(store.len());
        let mut q = Int8Vectors::unfilled(dim, n);
        if dim > 0 {
            // Blocks of rows per task, each with one conversion buffer (not an allocation per row).
            const BLOCK: usize = 256;
            let stride = q.stride;
            q.codes
                .bytes_mut()
                .par_chunks_mut(stride * BLOCK)
                .zip(q.scales.par_chunks_mut(BLOCK))
                .zip(q.norms2.par_chunks_mut(BLOCK))
                .enumerate()
                .for_each(|(b, ((codes, scales), norms))| {
                    let mut buf = vec![0.0f32; dim];
                    for (j, ((c, s), nn)) in codes
                        .chunks_mut(stride)
                        .zip(scales.iter_mut())
                        .zip(norms.iter_mut())
                        .enumerate()
                    {
                        let v: &[f32] = match store.row((b * BLOCK + j) as u32) {
                            Row::F32(v) => v,
                            Row::F16(h) => {
                                kernels::f16_to_f32(h, &mut buf);
                                &buf
                            }
                        };
                        let (codes, pad) = c.split_at_mut(dim);
                        *s = kernels::quantize_i8(v, codes);
                        pad.iter_mut().for_each(|b| *b = OFFSET as u8);
                        *nn = kernels::dot_f32(v, v);
                    }
                });
        }
        q
    }

    /// Rebuilds from signed codes, scales and squared norms (used by persistence); lengths must agree.
    pub(crate) fn from_parts(
        dim: usize,
        codes: &[i8],
        scales: Vec<f32>,
        norms2: Vec<f32>,
    ) -> Option<Self> {
        let n = scales.len();
        if dim == 0 || norms2.len() != n || codes.len() != n.checked_mul(dim)? {
            return None;
        }
        let mut q = Int8Vectors::zeroed(dim, n);
        let stride = q.stride;
        for (row, c) in q
            .codes
            .bytes_mut()
            .chunks_exact_mut(stride)
            .zip(codes.chunks_exact(dim))
        {
            for (b, &x) in row.iter_mut().zip(c) {
                *b = (x as i32 + OFFSET) as u8;
            }
        }
        q.scales = scales;
        q.norms2 = norms2;
        Some(q)
    }

    /// Sets row `id` (growing with zero rows as needed).
    pub fn set(&mut self, id: u32, v: &[f32]) {
        let i = id as usize;
        if i >= self.scales.len() {
            let old = self.scales.len() * self.stride;
            self.codes.grow((i + 1) * self.stride);
            self.codes.bytes_mut()[old..]
                .iter_mut()
                .for_each(|c| *c = OFFSET as u8);
            self.scales.resize(i + 1, 0.0);
            self.norms2.resize(i + 1, 0.0);
        }
        let (stride, dim) = (self.stride, self.dim);
        let row = &mut self.codes.bytes_mut()[i * stride..i * stride + dim];
        self.scales[i] = kernels::quantize_i8(v, row);
        self.norms2[i] = kernels::dot_f32(v, v);
        if let Some(signs) = self.signs.get_mut() {
            signs.grow(i + 1);
            signs.set_from_int8(id, row, self.scales[i], self.norms2[i]);
        }
    }

    /// Dimensions per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Stored codes of row `id`: each code plus 128, as `u8`.
    #[inline]
    pub fn row(&self, id: u32) -> &[u8] {
        let s = id as usize * self.stride;
        &self.codes.bytes()[s..s + self.dim]
    }

    /// Signed codes of row `id` (`x ≈ scale * code`).
    pub fn codes(&self, id: u32) -> impl Iterator<Item = i8> + '_ {
        self.row(id).iter().map(|&c| (c as i32 - OFFSET) as i8)
    }

    /// Scale of row `id`.
    pub fn scale(&self, id: u32) -> f32 {
        self.scales[id as usize]
    }

    /// Squared norm of the f32 row `id` was quantised from.
    pub fn norm2(&self, id: u32) -> f32 {
        self.norms2[id as usize]
    }

    pub(crate) fn scales_and_norms(&self) -> (&[f32], &[f32]) {
        (&self.scales, &self.norms2)
    }

    /// Quantises a query.
    pub fn quantize_query(&self, q: &[f32]) -> QuantQuery {
        let mut codes = vec![0i8; q.len()];
        let scale = quantize_into(q, &mut codes);
        let k = kernels::I8Query::new(&codes);
        let (offset_sum, in_range) = (k.offset_sum(), k.in_range());
        QuantQuery {
            codes,
            offset_sum,
            in_range,
            scale,
            norm2: kernels::dot_f32(q, q),
        }
    }

    /// Approximate distance between a quantised query and row `id` (lower is closer).
    #[inline]
    pub fn distance(&self, metric: Metric, q: &QuantQuery, id: u32) -> f32 {
        self.finish(metric, q, id, kernels::dot_u8i8(self.row(id), &q.codes))
    }

    /// [`Int8Vectors::distance`] of four rows (one pass over the query's codes for all four).
    #[inline]
    pub fn distances_x4(&self, metric: Metric, q: &QuantQuery, ids: [u32; 4]) -> [f32; 4] {
        let dots = kernels::dot_u8i8_x4(ids.map(|id| self.row(id)), &q.codes);
        std::array::from_fn(|j| self.finish(metric, q, ids[j], dots[j]))
    }

    /// [`Int8Vectors::distance`] of every row of `ids` into `out` (same length), four rows per pass
    /// over the query's codes; a short last group repeats its last id and keeps only its own rows.
    #[inline]
    pub fn distances(&self, metric: Metric, q: &QuantQuery, ids: &[u32], out: &mut [f32]) {
        let rows = kernels::CodeRows {
            data: self.codes.bytes(),
            stride: self.stride,
            dim: self.dim,
        };
        let query = kernels::I8Query::with_known(&q.codes, q.offset_sum, q.in_range);
        // One kernel call per block of rows, the raw dots kept on the stack.
        const BLOCK: usize = 64;
        let mut dots = [0i32; BLOCK];
        for (block, dists) in ids.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
            let dots = &mut dots[..block.len()];
            kernels::dot_u8i8_rows(rows, block, query, dots);
            for ((d, &id), &dot) in dists.iter_mut().zip(block).zip(dots.iter()) {
                *d = self.finish(metric, q, id, dot);
            }
        }
    }

    /// Distance from the raw dot product of row `id`'s stored (offset) codes with the query's codes.
    #[inline]
    fn finish(&self, metric: Metric, q: &QuantQuery, id: u32, offset_dot: i32) -> f32 {
        let i = id as usize;
        // sum((x + 128) * q) - 128 * sum(q) = sum(x * q), exactly.
        let idot = offset_dot - q.offset_sum;
        let dot = idot as f32 * q.scale * self.scales[i];
        match metric {
            Metric::Dot => -dot,
            Metric::Cosine => 1.0 - dot,
            Metric::L2 => (q.norm2 + self.norms2[i] - 2.0 * dot).max(0.0),
        }
    }

    /// Prefetches what [`Int8Vectors::distance`] reads for row `id`: its codes and its scale.
    #[inline]
    pub(crate) fn prefetch_row(&self, id: u32) {
        let p = self
            .codes
            .bytes()
            .as_ptr()
            .wrapping_add(id as usize * self.stride);
        for off in (0..self.dim).step_by(ROW_ALIGN) {
            kernels::prefetch(p.wrapping_add(off));
        }
        kernels::prefetch(self.scales.as_ptr().wrapping_add(id as usize));
    }

    /// The rows' sign codes if they were derived (see [`Int8Vectors::sign_codes`]).
    pub fn signs(&self) -> Option<&SignCodes> {
        self.signs.get()
    }

    /// Heap bytes used.
    pub fn memory_bytes(&self) -> usize {
        self.codes.capacity()
            + 4 * (self.scales.capacity() + self.norms2.capacity())
            + self.signs.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::store::FlatVectors;

    #[test]
    fn quantised_distances_are_close() {
        let mut rng = SplitMix64::new(1);
        let dim = 97;
        let data: Vec<f32> = (0..dim * 20).map(|_| rng.normal() as f32).collect();
        let store = FlatVectors::from_vec(dim, data).unwrap();
        let q8 = Int8Vectors::from_store(&store);
        let q: Vec<f32> = (0..dim).map(|_| rng.normal() as f32).collect();
        let qq = q8.quantize_query(&q);
        for m in [Metric::Dot, Metric::L2] {
            for id in 0..20u32 {
                let exact = m.distance(&q, store.vector(id));
                let approx = q8.distance(m, &qq, id);
                let scale = (crate::kernels::dot_f32(&q, &q)
                    * crate::kernels::dot_f32(store.vector(id), store.vector(id)))
                .sqrt();
                assert!(
                    (exact - approx).abs() < 0.01 * scale,
                    "{m:?} {exact} {approx}"
                );
            }
        }
        // Four rows in one pass give exactly the one-row distances, repeated ids included.
        for m in [Metric::Dot, Metric::Cosine, Metric::L2] {
            for ids in [[0u32, 5, 19, 7], [2, 2, 2, 11]] {
                let four = q8.distances_x4(m, &qq, ids);
                for (j, &id) in ids.iter().enumerate() {
                    assert_eq!(
                        four[j].to_bits(),
                        q8.distance(m, &qq, id).to_bits(),
                        "{m:?} {id}"
                    );
                }
                // Any count, through `distances` (a short last group keeps only its own rows).
                let mut out = [0f32; 3];
                q8.distances(m, &qq, &ids[..3], &mut out);
                assert_eq!(out, [four[0], four[1], four[2]]);
            }
        }
        let mut grow = Int8Vectors::new(dim);
        grow.set(3, store.vector(3));
        assert_eq!(grow.len(), 4);
        assert_eq!(grow.row(3), q8.row(3));
        assert_eq!(quantize_into(&[0.0, 0.0], &mut [1, 1]), 0.0);
        // Stored rows are the signed codes offset by 128, and survive a round trip through parts.
        let mut signed = vec![0i8; dim];
        let scale = quantize_into(store.vector(5), &mut signed);
        assert_eq!(q8.codes(5).collect::<Vec<_>>(), signed);
        assert_eq!(q8.scale(5), scale);
        let all: Vec<i8> = (0..20)
            .flat_map(|i| q8.codes(i).collect::<Vec<_>>())
            .collect();
        let (s, n) = q8.scales_and_norms();
        let back = Int8Vectors::from_parts(dim, &all, s.to_vec(), n.to_vec()).unwrap();
        assert_eq!(back, q8);
        assert!(Int8Vectors::from_parts(dim, &all[1..], s.to_vec(), n.to_vec()).is_none());
    }
}
