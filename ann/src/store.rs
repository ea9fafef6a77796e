//! The vectors an index searches over. Indexes never own them: the caller's store does.

use crate::error::AnnError;
use half::f16;
use std::borrow::Cow;

/// One stored row, in the precision its store keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Row<'a> {
    /// Single precision.
    F32(&'a [f32]),
    /// Half precision (distances are still accumulated in f32).
    F16(&'a [f16]),
}

impl<'a> Row<'a> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Row::F32(v) => v.len(),
            Row::F16(v) => v.len(),
        }
    }

    /// Whether the row has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row as f32 values (borrowed when it already is f32).
    pub fn to_f32(&self) -> Cow<'a, [f32]> {
        match *self {
            Row::F32(v) => Cow::Borrowed(v),
            Row::F16(v) => {
                let mut out = vec![0.0; v.len()];
                crate::kernels::f16_to_f32(v, &mut out);
                Cow::Owned(out)
            }
        }
    }

    /// Writes the row's values as f32 into `out` (up to the shorter length; the rest of `out` is
    /// zeroed).
    pub fn write_f32(&self, out: &mut [f32]) {
        let n = self.len().min(out.len());
        match *self {
            Row::F32(v) => out[..n].copy_from_slice(&v[..n]),
            Row::F16(v) => crate::kernels::f16_to_f32(&v[..n], &mut out[..n]),
        }
        out[n..].iter_mut().for_each(|x| *x = 0.0);
    }

    /// Dot product with an f32 vector.
    #[inline]
    pub fn dot(&self, q: &[f32]) -> f32 {
        match self {
            Row::F32(v) => crate::kernels::dot_f32(q, v),
            Row::F16(v) => crate::kernels::dot_f32_f16(q, v),
        }
    }

    /// Squared L2 distance to an f32 vector.
    #[inline]
    pub fn l2(&self, q: &[f32]) -> f32 {
        match self {
            Row::F32(v) => crate::kernels::l2_f32(q, v),
            Row::F16(v) => crate::kernels::l2_f32_f16(q, v),
        }
    }

    /// Hints the CPU to fetch the row's first `lines` cache lines (all of them when `lines` is larger).
    #[inline]
    pub fn prefetch(&self, lines: usize) {
        let (p, bytes) = match self {
            Row::F32(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(*v)),
            Row::F16(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(*v)),
        };
        for off in (0..bytes).step_by(64).take(lines) {
            crate::kernels::prefetch(p.wrapping_add(off));
        }
    }
}

/// Read access to dense rows of vectors, addressed by `u32` row number (`0..len`).
pub trait VectorStore: Sync {
    /// Number of dimensions of every vector.
    fn dim(&self) -> usize;
    /// Number of rows.
    fn len(&self) -> usize;
    /// Row `id` (`id < len`), exactly `dim` values.
    fn row(&self, id: u32) -> Row<'_>;
    /// Whether the store has no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Checks that `store` has vectors of `dim` dimensions and a row `id`; the errors an index's `add` reports.
pub(crate) fn check_row<S: VectorStore + ?Sized>(
    store: &S,
    dim: usize,
    id: u32,
) -> Result<(), AnnError> {
    if store.dim() != dim {
        return Err(AnnError::DimensionMismatch {
            expected: dim,
            got: store.dim(),
        });
    }
    if id as usize >= store.len() {
        return Err(AnnError::IdOutOfRange {
            id,
            len: store.len(),
        });
    }
    Ok(())
}

/// A simple owned store: `len` rows of `dim` f32 values, row-major.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlatVectors {
    dim: usize,
    data: Vec<f32>,
}

impl FlatVectors {
    /// Empty store of `dim`-dimensional vectors.
    pub fn new(dim: usize) -> Self {
        FlatVectors {
            dim,
            data: Vec::new(),
        }
    }

    /// Wraps row-major data; fails if `data.len()` is not a multiple of `dim` or `dim == 0`.
    pub fn from_vec(dim: usize, data: Vec<f32>) -> Result<Self, AnnError> {
        if dim == 0 {
            return Err(AnnError::InvalidParameter {
                name: "dim",
                reason: "must be > 0".into(),
            });
        }
        if !data.len().is_multiple_of(dim) {
            return Err(AnnError::DimensionMismatch {
                expected: dim,
                got: data.len() % dim,
            });
        }
        Ok(FlatVectors { dim, data })
    }

    /// Appends a row and returns its id.
    pub fn push(&mut self, v: &[f32]) -> Result<u32, AnnError> {
        if v.len() != self.dim {
            return Err(AnnError::DimensionMismatch {
                expected: self.dim,
                got: v.len(),
            });
        }
        let id = self.len() as u32;
        self.data.extend_from_slice(v);
        Ok(id)
    }

    /// The whole row-major buffer.
    pub fn as_slice(&self) -> &[f32] {
        &self.data
    }

    /// Row `id` (`id < len`).
    #[inline]
    pub fn vector(&self, id: u32) -> &[f32] {
        let s = id as usize * self.dim;
        &self.data[s..s + self.dim]
    }
}

impl VectorStore for FlatVectors {
    fn dim(&self) -> usize {
        self.dim
    }
    fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }
    #[inline]
    fn row(&self, id: u32) -> Row<'_> {
        Row::F32(self.vector(id))
    }
}

/// A half-precision store: `len` rows of `dim` f16 values, row-major (half the memory of [`FlatVectors`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HalfVectors {
    dim: usize,
    data: Vec<f16>,
}

impl HalfVectors {
    /// Empty store of `dim`-dimensional vectors.
    pub fn new(dim: usize) -> Self {
        HalfVectors {
            dim,
            data: Vec::new(),
        }
    }

    /// Appends a row (rounded to f16) and returns its id.
    pub fn push(&mut self, v: &[f32]) -> Result<u32, AnnError> {
        if v.len() != self.dim || self.dim == 0 {
            return Err(AnnError::DimensionMismatch {
                expected: self.dim,
                got: v.len(),
            });
        }
        let id = self.len() as u32;
        self.data.extend(v.iter().map(|&x| f16::from_f32(x)));
        Ok(id)
    }
}

impl VectorStore for HalfVectors {
    fn dim(&self) -> usize {
        self.dim
    }
    fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }
    #[inline]
    fn row(&self, id: u32) -> Row<'_> {
        let s = id as usize * self.dim;
        Row::F16(&self.data[s..s + self.dim])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_vectors() {
        let mut s = FlatVectors::new(2);
        assert!(s.is_empty());
        assert_eq!(s.push(&[1.0, 2.0]).unwrap(), 0);
        assert_eq!(s.push(&[3.0, 4.0]).unwrap(), 1);
        assert!(s.push(&[1.0]).is_err());
        assert_eq!(s.vector(1), &[3.0, 4.0]);
        assert_eq!(s.len(), 2);
        assert!(FlatVectors::from_vec(3, vec![0.0; 4]).is_err());
        assert!(FlatVectors::from_vec(0, vec![]).is_err());
        assert_eq!(s.row(1), Row::F32(&[3.0, 4.0]));
        assert_eq!(s.row(1).dot(&[1.0, 1.0]), 7.0);
    }

    #[test]
    fn half_vectors_round_and_score_in_f32() {
        let mut s = HalfVectors::new(2);
        assert_eq!(s.push(&[0.5, 0.25]).unwrap(), 0);
        assert!(s.push(&[1.0]).is_err());
        assert_eq!(s.len(), 1);
        assert_eq!(s.row(0).to_f32().as_ref(), &[0.5, 0.25]);
        assert_eq!(s.row(0).dot(&[2.0, 4.0]), 2.0);
        assert_eq!(s.row(0).l2(&[0.5, 0.25]), 0.0);
    }
}
