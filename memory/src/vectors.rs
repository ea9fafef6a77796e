//! The store's embeddings: row-major f32 rows indexed by record row, kept in fixed-size shared chunks so a
//! background index build can read a snapshot of the table while the store keeps appending to it.

use std::ops::Range;
use std::sync::Arc;

const CHUNK_SHIFT: usize = 10;
/// Rows per chunk.
pub const CHUNK_ROWS: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_ROWS - 1;

/// Embeddings by record row. Cloning is cheap (chunks are shared, copied only when written afterwards).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VectorTable {
    dim: usize,
    /// `CHUNK_ROWS` rows each, the last one possibly shorter.
    chunks: Vec<Arc<Vec<f32>>>,
    present: Vec<bool>,
}

impl VectorTable {
    /// An empty table of the given dimension (0 for a keyword-only store).
    pub fn new(dim: usize) -> Self {
        VectorTable {
            dim,
            chunks: Vec::new(),
            present: Vec::new(),
        }
    }

    /// Build from a flat row-major buffer and presence flags.
    pub fn from_parts(dim: usize, data: Vec<f32>, present: Vec<bool>) -> Result<Self, String> {
        if data.len() != dim * present.len() {
            return Err(format!(
                "{} values do not make {} rows of dimension {dim}",
                data.len(),
                present.len()
            ));
        }
        let chunks = if dim == 0 {
            Vec::new()
        } else {
            data.chunks(CHUNK_ROWS * dim)
                .map(|c| Arc::new(c.to_vec()))
                .collect()
        };
        Ok(VectorTable {
            dim,
            chunks,
            present,
        })
    }

    /// Build from chunks of [`CHUNK_ROWS`] rows (the last may be shorter) and presence flags.
    pub fn from_chunks(
        dim: usize,
        chunks: Vec<Vec<f32>>,
        present: Vec<bool>,
    ) -> Result<Self, String> {
        let rows = present.len();
        let expected = if dim == 0 {
            0
        } else {
            rows.div_ceil(CHUNK_ROWS)
        };
        if chunks.len() != expected {
            return Err(format!(
                "{} chunks do not hold {rows} rows of dimension {dim}",
                chunks.len()
            ));
        }
        for (i, c) in chunks.iter().enumerate() {
            let want = CHUNK_ROWS.min(rows - i * CHUNK_ROWS) * dim;
            if c.len() != want {
                return Err(format!(
                    "chunk {i} holds {} values, expected {want}",
                    c.len()
                ));
            }
        }
        Ok(VectorTable {
            dim,
            chunks: chunks.into_iter().map(Arc::new).collect(),
            present,
        })
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of rows (with or without a vector).
    pub fn rows(&self) -> usize {
        self.present.len()
    }

    /// The rows in `range` as contiguous runs of values, in order (one run per chunk touched).
    pub fn runs(&self, range: Range<usize>) -> impl Iterator<Item = &[f32]> + '_ {
        let d = self.dim;
        let end = range.end.min(self.rows());
        let mut start = range.start.min(end);
        std::iter::from_fn(move || {
            if start >= end || d == 0 {
                return None;
            }
            let chunk = &self.chunks[start >> CHUNK_SHIFT];
            let first = start & CHUNK_MASK;
            let take = (CHUNK_ROWS - first).min(end - start);
            start += take;
            Some(&chunk[first * d..(first + take) * d])
        })
    }

    /// Whether row `i` has a vector.
    pub fn has(&self, i: usize) -> bool {
        self.present.get(i).copied().unwrap_or(false)
    }

    /// Row `i` (zeros when it has none).
    pub fn row(&self, i: usize) -> &[f32] {
        let d = self.dim;
        if d == 0 {
            return &[];
        }
        let at = (i & CHUNK_MASK) * d;
        &self.chunks[i >> CHUNK_SHIFT][at..at + d]
    }

    /// Append a row; `None` stores zeros and marks it absent.
    pub fn push(&mut self, v: Option<&[f32]>) {
        let d = self.dim;
        let row = self.rows();
        if d > 0 {
            if row & CHUNK_MASK == 0 {
                self.chunks
                    .push(Arc::new(Vec::with_capacity(CHUNK_ROWS * d)));
            }
            if let Some(last) = self.chunks.last_mut() {
                // Copies the chunk only when a snapshot still shares it.
                let chunk = Arc::make_mut(last);
                match v {
                    Some(v) if v.len() == d => chunk.extend_from_slice(v),
                    _ => chunk.extend(std::iter::repeat_n(0.0, d)),
                }
            }
        }
        self.present.push(matches!(v, Some(v) if v.len() == d));
    }

    /// Replace row `i`.
    pub fn set(&mut self, i: usize, v: Option<&[f32]>) {
        let d = self.dim;
        if i >= self.rows() || d == 0 {
            return;
        }
        let at = (i & CHUNK_MASK) * d;
        let chunk = Arc::make_mut(&mut self.chunks[i >> CHUNK_SHIFT]);
        let slot = &mut chunk[at..at + d];
        match v {
            Some(v) if v.len() == d => {
                slot.copy_from_slice(v);
                self.present[i] = true;
            }
            _ => {
                slot.fill(0.0);
                self.present[i] = false;
            }
        }
    }

    /// Change the dimension of an empty-of-vectors table (first embedding seen by a keyword-only store).
    pub fn set_dim(&mut self, dim: usize) {
        let rows = self.rows();
        self.dim = dim;
        self.chunks.clear();
        self.present.clear();
        for _ in 0..rows {
            self.push(None);
        }
    }
}

/// Scale `v` to unit length (left as is when it is all zeros).
pub fn normalize(v: &mut [f32]) {
    let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_set_and_read() {
        let mut t = VectorTable::new(2);
        t.push(Some(&[1.0, 2.0]));
        t.push(None);
        t.push(Some(&[1.0]));
        assert_eq!(t.rows(), 3);
        assert!(t.has(0) && !t.has(1) && !t.has(2));
        t.set(1, Some(&[3.0, 4.0]));
        assert_eq!(t.row(1), &[3.0, 4.0]);
        assert!(VectorTable::from_parts(2, vec![0.0; 3], vec![true]).is_err());
    }

    #[test]
    fn rows_span_chunks_and_snapshots_stay_unchanged() {
        let n = CHUNK_ROWS * 2 + 5;
        let mut t = VectorTable::new(3);
        for i in 0..n {
            t.push(Some(&[i as f32, 0.0, 1.0]));
        }
        let snap = t.clone();
        t.set(1, Some(&[9.0, 9.0, 9.0]));
        t.push(Some(&[7.0, 7.0, 7.0]));
        assert_eq!(snap.row(1), &[1.0, 0.0, 1.0]);
        assert_eq!(snap.rows(), n);
        assert_eq!(t.row(1), &[9.0, 9.0, 9.0]);
        assert_eq!(t.row(n), &[7.0, 7.0, 7.0]);
        assert_eq!(t.row(CHUNK_ROWS + 3)[0], (CHUNK_ROWS + 3) as f32);
        let flat: Vec<f32> = t
            .runs(CHUNK_ROWS - 2..CHUNK_ROWS + 2)
            .flatten()
            .copied()
            .collect();
        let want: Vec<f32> = (CHUNK_ROWS - 2..CHUNK_ROWS + 2)
            .flat_map(|i| [i as f32, 0.0, 1.0])
            .collect();
        assert_eq!(flat, want);
        assert_eq!(t.runs(CHUNK_ROWS - 2..CHUNK_ROWS + 2).count(), 2);
        let back = VectorTable::from_parts(3, t.runs(0..t.rows()).flatten().copied().collect(), {
            (0..t.rows()).map(|i| t.has(i)).collect()
        })
        .unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn from_chunks_checks_sizes() {
        assert!(VectorTable::from_chunks(2, vec![vec![0.0; 4]], vec![true, true]).is_ok());
        assert!(VectorTable::from_chunks(2, vec![vec![0.0; 3]], vec![true, true]).is_err());
        assert!(VectorTable::from_chunks(2, vec![], vec![true]).is_err());
    }

    #[test]
    fn keyword_only_table_then_first_dimension() {
        let mut t = VectorTable::new(0);
        t.push(None);
        t.push(None);
        assert_eq!(t.row(1), &[] as &[f32]);
        t.set_dim(2);
        assert_eq!(t.rows(), 2);
        assert_eq!(t.row(1), &[0.0, 0.0]);
        t.set(0, Some(&[1.0, 0.0]));
        assert!(t.has(0) && !t.has(1));
    }

    #[test]
    fn normalizes() {
        let mut v = [3.0, 4.0];
        normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6);
        let mut z = [0.0, 0.0];
        normalize(&mut z);
        assert_eq!(z, [0.0, 0.0]);
    }
}
