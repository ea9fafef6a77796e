//! Lloyd's k-means (seeded, deterministic for any thread count), used to train IVF lists and PQ codebooks.

use crate::error::AnnError;
use crate::kernels;
use crate::rng::SplitMix64;
use rayon::prelude::*;

/// Index and squared L2 distance of the centroid nearest to `v` (`centroids` is `k x dim` row-major).
#[inline]
pub fn nearest(centroids: &[f32], dim: usize, v: &[f32]) -> (usize, f32) {
    let mut best = (0, f32::INFINITY);
    for (i, c) in centroids.chunks_exact(dim).enumerate() {
        let d = kernels::l2_f32(v, c);
        if d < best.1 {
            best = (i, d);
        }
    }
    best
}

/// Trains `k` centroids on `data` (`n x dim` row-major) with `iters` Lloyd iterations.
/// Initial centroids are distinct random rows; empty clusters are re-seeded with random rows.
pub fn kmeans(
    data: &[f32],
    dim: usize,
    k: usize,
    iters: usize,
    seed: u64,
) -> Result<Vec<f32>, AnnError> {
    if dim == 0 {
        return Err(AnnError::InvalidParameter {
            name: "dim",
            reason: "must be > 0".into(),
        });
    }
    let n = data.len() / dim;
    if k == 0 {
        return Err(AnnError::InvalidParameter {
            name: "k",
            reason: "must be > 0".into(),
        });
    }
    if n < k {
        return Err(AnnError::NotEnoughData { needed: k, have: n });
    }
    let mut rng = SplitMix64::new(seed);
    // Partial Fisher-Yates: the first k entries become a random distinct sample.
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let j = i + rng.below((n - i) as u64) as usize;
        order.swap(i, j);
    }
    let mut centroids: Vec<f32> = order[..k]
        .iter()
        .flat_map(|&r| data[r * dim..(r + 1) * dim].iter().copied())
        .collect();
    let mut assign = vec![0usize; n];
    for _ in 0..iters {
        let cref = &centroids;
        assign
            .par_iter_mut()
            .enumerate()
            .for_each(|(i, a)| *a = nearest(cref, dim, &data[i * dim..(i + 1) * dim]).0);
        // Sums in row order on one thread keep the result independent of the thread count.
        let mut sums = vec![0f64; k * dim];
        let mut counts = vec![0usize; k];
        for (i, &a) in assign.iter().enumerate() {
            counts[a] += 1;
            for (s, &x) in sums[a * dim..(a + 1) * dim]
                .iter_mut()
                .zip(&data[i * dim..(i + 1) * dim])
            {
                *s += x as f64;
            }
        }
        for c in 0..k {
            let dst = &mut centroids[c * dim..(c + 1) * dim];
            if counts[c] == 0 {
                let r = rng.below(n as u64) as usize;
                dst.copy_from_slice(&data[r * dim..(r + 1) * dim]);
            } else {
                for (d, s) in dst.iter_mut().zip(&sums[c * dim..(c + 1) * dim]) {
                    *d = (*s / counts[c] as f64) as f32;
                }
            }
        }
    }
    Ok(centroids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_separated_clusters() {
        let mut data = Vec::new();
        let mut rng = SplitMix64::new(3);
        for i in 0..300 {
            let c = (i % 3) as f32 * 10.0;
            data.extend([
                c + rng.normal() as f32 * 0.1,
                -c + rng.normal() as f32 * 0.1,
            ]);
        }
        let cents = kmeans(&data, 2, 3, 10, 1).unwrap();
        let mut xs: Vec<f32> = cents.chunks(2).map(|c| c[0].round()).collect();
        xs.sort_by(f32::total_cmp);
        assert_eq!(xs, vec![0.0, 10.0, 20.0]);
        assert_eq!(cents, kmeans(&data, 2, 3, 10, 1).unwrap());
        assert!(matches!(
            kmeans(&data[..4], 2, 3, 5, 1),
            Err(AnnError::NotEnoughData { .. })
        ));
        assert!(kmeans(&data, 2, 0, 5, 1).is_err());
        assert!(nearest(&cents, 2, &[10.0, -10.0]).1 < 1.0);
    }
}
