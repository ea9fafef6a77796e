//! Synthetic embeddings: 384-dimensional clustered unit vectors (the `ann` crate's generator: 100 random unit
//! centres, Gaussian noise, normalised), and query vectors drawn near stored ones.

use clawhdf5_ann::rng::SplitMix64;
use clawhdf5_ann::synth::Clustered;
use clawhdf5_ann::FlatVectors;

/// Dimension of the synthetic embeddings (MiniLM's).
pub const DIM: usize = 384;
/// Cluster centres of the generator.
pub const CLUSTERS: usize = 100;
/// Per-coordinate noise relative to a unit vector's typical coordinate.
pub const NOISE: f32 = 1.0;
/// Seed of the centres (every harness uses the same).
pub const SEED: u64 = 42;

/// One-line description for tables.
pub fn describe() -> String {
    format!(
        "{DIM}-dim synthetic clustered unit vectors ({CLUSTERS} centres, noise {NOISE}, seed {SEED}; not model \
         embeddings)"
    )
}

/// `n` base vectors.
pub fn base(n: usize) -> FlatVectors {
    Clustered::new(DIM, CLUSTERS, NOISE, SEED).sample(n, 1)
}

/// `n` query vectors from the same distribution but a different seed (for ANN recall).
pub fn fresh_queries(n: usize) -> FlatVectors {
    Clustered::new(DIM, CLUSTERS, NOISE, SEED).sample(n, 2)
}

/// A unit vector near `v`: `v` plus Gaussian noise of `spread` relative per-coordinate size, normalised.
pub fn near(v: &[f32], spread: f32, rng: &mut SplitMix64) -> Vec<f32> {
    let sd = spread / (v.len().max(1) as f32).sqrt();
    let mut out: Vec<f32> = v.iter().map(|&x| x + sd * rng.normal() as f32).collect();
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        out.iter_mut().for_each(|x| *x /= norm);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_is_unit_and_close() {
        let b = base(4);
        let mut rng = SplitMix64::new(1);
        let q = near(b.vector(0), 0.3, &mut rng);
        let n: f32 = q.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-4);
        let cos: f32 = q.iter().zip(b.vector(0)).map(|(a, b)| a * b).sum();
        assert!(cos > 0.9, "{cos}");
    }
}
