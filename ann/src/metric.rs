//! Similarity metrics. Internally every index ranks by a *distance* where lower is closer.

use crate::kernels;
use crate::store::Row;

/// Metric used to compare vectors; all indexes report distances where smaller means closer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Inner product; distance = `-dot(a, b)`.
    Dot,
    /// Cosine similarity on unit-length vectors; distance = `1 - dot(a, b)`. Store vectors must
    /// already be normalised; queries are normalised by the search functions.
    Cosine,
    /// Squared Euclidean distance.
    L2,
}

impl Metric {
    /// Distance between two f32 vectors of equal length (lower is closer).
    #[inline]
    pub fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Metric::Dot => -kernels::dot_f32(a, b),
            Metric::Cosine => 1.0 - kernels::dot_f32(a, b),
            Metric::L2 => kernels::l2_f32(a, b),
        }
    }

    /// Distance from an f32 query to a stored row of either precision.
    #[inline]
    pub fn distance_to(self, q: &[f32], row: Row<'_>) -> f32 {
        match self {
            Metric::Dot => -row.dot(q),
            Metric::Cosine => 1.0 - row.dot(q),
            Metric::L2 => row.l2(q),
        }
    }

    /// Distance between two stored rows (f32 accumulation whatever their precision).
    #[inline]
    pub fn distance_rows(self, a: Row<'_>, b: Row<'_>) -> f32 {
        match (a, b) {
            (Row::F32(a), b) => self.distance_to(a, b),
            (a, Row::F32(b)) => self.distance_to(b, a),
            (Row::F16(a), Row::F16(b)) => match self {
                Metric::Dot => -kernels::dot_f16(a, b),
                Metric::Cosine => 1.0 - kernels::dot_f16(a, b),
                Metric::L2 => kernels::l2_f16(a, b),
            },
        }
    }

    /// Stable one-byte code used by the persisted formats.
    pub fn code(self) -> u8 {
        match self {
            Metric::Dot => 0,
            Metric::Cosine => 1,
            Metric::L2 => 2,
        }
    }

    /// Inverse of [`Metric::code`].
    pub fn from_code(code: u8) -> Option<Metric> {
        match code {
            0 => Some(Metric::Dot),
            1 => Some(Metric::Cosine),
            2 => Some(Metric::L2),
            _ => None,
        }
    }

    /// Prepares a query for this metric: cosine queries are normalised to unit length.
    pub fn prepare_query(self, query: &[f32]) -> Vec<f32> {
        let mut q = query.to_vec();
        if self == Metric::Cosine {
            let n = kernels::dot_f32(&q, &q).sqrt();
            if n > 0.0 {
                q.iter_mut().for_each(|x| *x /= n);
            }
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_order_as_documented() {
        let a = [1.0f32, 0.0];
        let b = [0.6f32, 0.8];
        let c = [-1.0f32, 0.0];
        for m in [Metric::Dot, Metric::Cosine, Metric::L2] {
            assert!(m.distance(&a, &b) < m.distance(&a, &c), "{m:?}");
            assert_eq!(Metric::from_code(m.code()), Some(m));
        }
        assert_eq!(Metric::from_code(9), None);
        let q = Metric::Cosine.prepare_query(&[3.0, 4.0]);
        assert!((q[0] - 0.6).abs() < 1e-6 && (q[1] - 0.8).abs() < 1e-6);
    }
}
