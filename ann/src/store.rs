//! The vectors an index searches over. Indexes never own them: the caller's store does.

use crate::error::AnnError;

/// Read access to dense rows of f32 vectors, addressed by `u32` row number (`0..len`).
pub trait VectorStore: Sync {
    /// Number of dimensions of every vector.
    fn dim(&self) -> usize;
    /// Number of rows.
    fn len(&self) -> usize;
    /// Row `id` (`id < len`), exactly `dim` values.
    fn vector(&self, id: u32) -> &[f32];
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
}

impl VectorStore for FlatVectors {
    fn dim(&self) -> usize {
        self.dim
    }
    fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }
    #[inline]
    fn vector(&self, id: u32) -> &[f32] {
        let s = id as usize * self.dim;
        &self.data[s..s + self.dim]
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
    }
}
