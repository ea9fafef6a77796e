//! The store's embeddings: one contiguous row-major f32 table indexed by record row, plus which rows have one.

/// Embeddings by record row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VectorTable {
    dim: usize,
    data: Vec<f32>,
    present: Vec<bool>,
}

impl VectorTable {
    /// An empty table of the given dimension (0 for a keyword-only store).
    pub fn new(dim: usize) -> Self {
        VectorTable {
            dim,
            data: Vec::new(),
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
        Ok(VectorTable { dim, data, present })
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of rows (with or without a vector).
    pub fn rows(&self) -> usize {
        self.present.len()
    }

    /// The flat buffer.
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// Whether row `i` has a vector.
    pub fn has(&self, i: usize) -> bool {
        self.present.get(i).copied().unwrap_or(false)
    }

    /// Row `i` (zeros when it has none).
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Append a row; `None` stores zeros and marks it absent.
    pub fn push(&mut self, v: Option<&[f32]>) {
        match v {
            Some(v) if v.len() == self.dim => {
                self.data.extend_from_slice(v);
                self.present.push(true);
            }
            _ => {
                self.data.extend(std::iter::repeat_n(0.0, self.dim));
                self.present.push(false);
            }
        }
    }

    /// Replace row `i`.
    pub fn set(&mut self, i: usize, v: Option<&[f32]>) {
        let d = self.dim;
        match v {
            Some(v) if v.len() == d && i < self.rows() => {
                self.data[i * d..(i + 1) * d].copy_from_slice(v);
                self.present[i] = true;
            }
            _ if i < self.rows() => {
                self.data[i * d..(i + 1) * d].fill(0.0);
                self.present[i] = false;
            }
            _ => {}
        }
    }

    /// Change the dimension of an empty-of-vectors table (first embedding seen by a keyword-only store).
    pub fn set_dim(&mut self, dim: usize) {
        let rows = self.rows();
        self.dim = dim;
        self.data = vec![0.0; rows * dim];
        self.present = vec![false; rows];
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
    fn normalizes() {
        let mut v = [3.0, 4.0];
        normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6);
        let mut z = [0.0, 0.0];
        normalize(&mut z);
        assert_eq!(z, [0.0, 0.0]);
    }
}
