//! Int8 copy of vectors with one scale per row, used to traverse graphs with 4x less memory traffic.
//! Approximate distances from it are always re-scored with the store's f32 vectors before returning.

use crate::kernels;
use crate::metric::Metric;
use crate::store::VectorStore;
use rayon::prelude::*;

/// Symmetric int8 quantisation: `x ≈ scale * code`, `scale = max|x| / 127` per row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Int8Vectors {
    dim: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
    norms2: Vec<f32>,
    /// Sum of each row's codes, so a u8 x i8 kernel can score an offset query exactly.
    sums: Vec<i32>,
}

/// A query quantised the same way, ready for [`Int8Vectors::distance`].
#[derive(Debug, Clone)]
pub struct QuantQuery {
    /// Query codes offset by +128 into u8 (`q + 128`), for u8 x i8 dot products.
    ucodes: Vec<u8>,
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

fn code_sum(c: &[i8]) -> i32 {
    c.iter().map(|&x| x as i32).sum()
}

impl Int8Vectors {
    /// Empty copy for `dim`-dimensional rows.
    pub fn new(dim: usize) -> Self {
        Int8Vectors {
            dim,
            ..Default::default()
        }
    }

    /// `rows` all-zero rows (fill them with [`Int8Vectors::set`]).
    pub fn zeroed(dim: usize, rows: usize) -> Self {
        Int8Vectors {
            dim,
            codes: vec![0; dim * rows],
            scales: vec![0.0; rows],
            norms2: vec![0.0; rows],
            sums: vec![0; rows],
        }
    }

    /// Quantises every row of a store (in parallel).
    pub fn from_store<S: VectorStore + ?Sized>(store: &S) -> Self {
        Self::from_store_prefix(store, store.len())
    }

    /// Quantises rows `0..rows` of a store (in parallel); `rows` is capped at the store's length.
    pub fn from_store_prefix<S: VectorStore + ?Sized>(store: &S, rows: usize) -> Self {
        let dim = store.dim();
        let n = rows.min(store.len());
        let mut q = Int8Vectors::zeroed(dim, n);
        if dim > 0 {
            q.codes
                .par_chunks_mut(dim)
                .zip(q.scales.par_iter_mut())
                .zip(q.norms2.par_iter_mut())
                .zip(q.sums.par_iter_mut())
                .enumerate()
                .for_each(|(i, (((c, s), nn), sum))| {
                    let v = store.vector(i as u32);
                    *s = quantize_into(v, c);
                    *nn = kernels::dot_f32(v, v);
                    *sum = code_sum(c);
                });
        }
        q
    }

    /// Rebuilds from raw parts (used by persistence); lengths must agree.
    pub(crate) fn from_parts(
        dim: usize,
        codes: Vec<i8>,
        scales: Vec<f32>,
        norms2: Vec<f32>,
    ) -> Option<Self> {
        let n = scales.len();
        if dim == 0 || norms2.len() != n || codes.len() != n.checked_mul(dim)? {
            return None;
        }
        let sums = codes.chunks_exact(dim).map(code_sum).collect();
        Some(Int8Vectors {
            dim,
            codes,
            scales,
            norms2,
            sums,
        })
    }

    /// Sets row `id` (growing with zero rows as needed).
    pub fn set(&mut self, id: u32, v: &[f32]) {
        let i = id as usize;
        if i >= self.scales.len() {
            self.codes.resize((i + 1) * self.dim, 0);
            self.scales.resize(i + 1, 0.0);
            self.norms2.resize(i + 1, 0.0);
            self.sums.resize(i + 1, 0);
        }
        let row = &mut self.codes[i * self.dim..(i + 1) * self.dim];
        self.scales[i] = quantize_into(v, row);
        self.sums[i] = code_sum(row);
        self.norms2[i] = kernels::dot_f32(v, v);
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

    /// Codes of row `id`.
    #[inline]
    pub fn row(&self, id: u32) -> &[i8] {
        let s = id as usize * self.dim;
        &self.codes[s..s + self.dim]
    }

    /// Scale of row `id`.
    pub fn scale(&self, id: u32) -> f32 {
        self.scales[id as usize]
    }

    pub(crate) fn parts(&self) -> (&[i8], &[f32], &[f32]) {
        (&self.codes, &self.scales, &self.norms2)
    }

    /// Quantises a query.
    pub fn quantize_query(&self, q: &[f32]) -> QuantQuery {
        let mut codes = vec![0i8; q.len()];
        let scale = quantize_into(q, &mut codes);
        let ucodes = codes.iter().map(|&c| (c as i32 + 128) as u8).collect();
        QuantQuery {
            ucodes,
            scale,
            norm2: kernels::dot_f32(q, q),
        }
    }

    /// Approximate distance between a quantised query and row `id` (lower is closer).
    #[inline]
    pub fn distance(&self, metric: Metric, q: &QuantQuery, id: u32) -> f32 {
        let i = id as usize;
        // sum((q + 128) * x) - 128 * sum(x) = sum(q * x), exactly.
        let idot = kernels::dot_u8i8(&q.ucodes, self.row(id)) - 128 * self.sums[i];
        let dot = idot as f32 * q.scale * self.scales[i];
        match metric {
            Metric::Dot => -dot,
            Metric::Cosine => 1.0 - dot,
            Metric::L2 => (q.norm2 + self.norms2[i] - 2.0 * dot).max(0.0),
        }
    }

    /// Pointer to row `id`, for prefetching.
    #[inline]
    pub(crate) fn row_ptr(&self, id: u32) -> *const i8 {
        self.codes.as_ptr().wrapping_add(id as usize * self.dim)
    }

    /// Heap bytes used.
    pub fn memory_bytes(&self) -> usize {
        self.codes.capacity()
            + 4 * (self.scales.capacity() + self.norms2.capacity() + self.sums.capacity())
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
        let mut grow = Int8Vectors::new(dim);
        grow.set(3, store.vector(3));
        assert_eq!(grow.len(), 4);
        assert_eq!(grow.row(3), q8.row(3));
        assert_eq!(quantize_into(&[0.0, 0.0], &mut [1, 1]), 0.0);
    }
}
