//! Deterministic synthetic data: clustered unit vectors (cluster centre + Gaussian noise, normalised),
//! used by tests and the benchmark harness.

use crate::rng::SplitMix64;
use crate::store::FlatVectors;

/// Generator for clustered unit vectors; the same `seed` always yields the same centres.
#[derive(Debug, Clone)]
pub struct Clustered {
    dim: usize,
    centres: Vec<f32>,
    noise: f32,
}

impl Clustered {
    /// `clusters` random unit centres in `dim` dimensions; `noise` is the per-coordinate standard
    /// deviation relative to a unit vector's typical coordinate (`1/sqrt(dim)`).
    pub fn new(dim: usize, clusters: usize, noise: f32, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut centres = Vec::with_capacity(dim * clusters);
        for _ in 0..clusters.max(1) {
            let v: Vec<f32> = (0..dim).map(|_| rng.normal() as f32).collect();
            centres.extend(normalised(v));
        }
        Clustered {
            dim,
            centres,
            noise,
        }
    }

    /// `n` vectors drawn with `seed` (use different seeds for base data and queries).
    pub fn sample(&self, n: usize, seed: u64) -> FlatVectors {
        let mut rng = SplitMix64::new(seed ^ 0x005E_ED0F_DA7A);
        let clusters = self.centres.len() / self.dim.max(1);
        let sd = self.noise / (self.dim as f32).sqrt();
        let mut data = Vec::with_capacity(n * self.dim);
        for _ in 0..n {
            let c = rng.below(clusters as u64) as usize;
            let centre = &self.centres[c * self.dim..(c + 1) * self.dim];
            let v: Vec<f32> = centre
                .iter()
                .map(|&x| x + sd * rng.normal() as f32)
                .collect();
            data.extend(normalised(v));
        }
        let mut s = FlatVectors::new(self.dim);
        for row in data.chunks_exact(self.dim.max(1)) {
            // Rows have exactly `dim` values, so push cannot fail.
            let _ = s.push(row);
        }
        s
    }
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_unit_vectors() {
        let g = Clustered::new(16, 4, 0.5, 3);
        let a = g.sample(10, 1);
        assert_eq!(a, g.sample(10, 1));
        assert_ne!(a, g.sample(10, 2));
        for i in 0..10 {
            let n: f32 = a.vector(i).iter().map(|x| x * x).sum();
            assert!((n - 1.0).abs() < 1e-5);
        }
    }
}
