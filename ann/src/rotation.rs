//! A seeded random rotation of `d`-dimensional vectors, cheap enough to apply to every row of an
//! index: rounds of random sign flips, each followed by a normalised Walsh–Hadamard transform of a
//! window of the largest power of two `w ≤ d` dimensions (alternately the first and the last `w`,
//! so every dimension mixes with every other). Each step is orthonormal, so the whole is: norms and
//! inner products are kept exactly (up to rounding).
//!
//! Sign codes ([`crate::sign`]) rotate rows and queries with it so that the error of their estimate
//! follows RaBitQ's bound whatever the data's coordinates look like.

use crate::rng::mix64;

/// Sign-flip-and-transform steps: the first window, the last, the first again, after which every
/// output dimension depends on every input dimension.
const STEPS: usize = 3;

/// A fixed orthonormal transform of `dim`-dimensional vectors (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Rotation {
    dim: usize,
    /// Window length: the largest power of two not above `dim` (0 for `dim` 0).
    window: usize,
    /// One ±1 vector per step.
    flips: Vec<Vec<f32>>,
}

impl Rotation {
    /// The rotation of `dim` dimensions drawn from `seed` (the same for the same arguments).
    pub fn new(dim: usize, seed: u64) -> Self {
        let window = if dim == 0 {
            0
        } else {
            1usize << (usize::BITS - 1 - dim.leading_zeros())
        };
        let flips = (0..STEPS as u64)
            .map(|step| {
                (0..dim as u64)
                    .map(|i| {
                        let bit = mix64(seed ^ (step << 40) ^ i.wrapping_mul(0x9E37_79B9)) & 1;
                        if bit == 1 {
                            1.0
                        } else {
                            -1.0
                        }
                    })
                    .collect()
            })
            .collect();
        Rotation { dim, window, flips }
    }

    /// Dimensions it rotates.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Heap bytes used (its sign flips).
    pub fn memory_bytes(&self) -> usize {
        self.flips.iter().map(|f| f.capacity() * 4).sum::<usize>()
            + self.flips.capacity() * std::mem::size_of::<Vec<f32>>()
    }

    /// Rotates `v` in place (`v.len()` must be [`Rotation::dim`]; other lengths are left as they are).
    pub fn apply(&self, v: &mut [f32]) {
        if v.len() != self.dim || self.window == 0 {
            return;
        }
        let (d, w) = (self.dim, self.window);
        let norm = 1.0 / (w as f32).sqrt();
        for (step, flips) in self.flips.iter().enumerate() {
            v.iter_mut().zip(flips).for_each(|(x, s)| *x *= s);
            let start = if step % 2 == 1 { d - w } else { 0 };
            let part = &mut v[start..start + w];
            hadamard(part);
            part.iter_mut().for_each(|x| *x *= norm);
        }
    }
}

/// Unnormalised fast Walsh–Hadamard transform of `v` (its length a power of two), in place: the
/// first three stages together on each run of 8 values, then a stage at a time over runs that the
/// compiler turns into vector operations.
fn hadamard(v: &mut [f32]) {
    let n = v.len();
    if n < 8 {
        hadamard_stages(v, 1);
        return;
    }
    for c in v.chunks_exact_mut(8) {
        let (a0, a1, a2, a3) = (c[0] + c[1], c[0] - c[1], c[2] + c[3], c[2] - c[3]);
        let (a4, a5, a6, a7) = (c[4] + c[5], c[4] - c[5], c[6] + c[7], c[6] - c[7]);
        let (b0, b1, b2, b3) = (a0 + a2, a1 + a3, a0 - a2, a1 - a3);
        let (b4, b5, b6, b7) = (a4 + a6, a5 + a7, a4 - a6, a5 - a7);
        c.copy_from_slice(&[
            b0 + b4,
            b1 + b5,
            b2 + b6,
            b3 + b7,
            b0 - b4,
            b1 - b5,
            b2 - b6,
            b3 - b7,
        ]);
    }
    hadamard_stages(v, 8);
}

/// The stages of [`hadamard`] from butterflies `h` apart on.
fn hadamard_stages(v: &mut [f32], mut h: usize) {
    let n = v.len();
    while h < n {
        for block in v.chunks_exact_mut(2 * h) {
            let (a, b) = block.split_at_mut(h);
            for (x, y) in a.iter_mut().zip(b.iter_mut()) {
                let (s, t) = (*x + *y, *x - *y);
                *x = s;
                *y = t;
            }
        }
        h *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn random(dim: usize, rng: &mut SplitMix64) -> Vec<f32> {
        (0..dim).map(|_| rng.normal() as f32).collect()
    }

    fn dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    }

    #[test]
    fn keeps_inner_products_at_every_shape_of_dimension() {
        let mut rng = SplitMix64::new(3);
        for dim in [1, 2, 3, 64, 100, 256, 384, 768, 1000] {
            let r = Rotation::new(dim, 11);
            let (a, b) = (random(dim, &mut rng), random(dim, &mut rng));
            let (mut ra, mut rb) = (a.clone(), b.clone());
            r.apply(&mut ra);
            r.apply(&mut rb);
            let scale = (dot(&a, &a) * dot(&b, &b)).sqrt();
            assert!(
                (dot(&ra, &rb) - dot(&a, &b)).abs() < 1e-4 * scale,
                "dim {dim}"
            );
            assert!(
                (dot(&ra, &ra) - dot(&a, &a)).abs() < 1e-4 * dot(&a, &a),
                "dim {dim}"
            );
        }
    }

    #[test]
    fn spreads_a_single_coordinate_over_every_dimension() {
        // A basis vector comes out with every coordinate near ±1/sqrt(d): the transform mixes all
        // dimensions, including those outside the first window.
        let dim = 384;
        let r = Rotation::new(dim, 5);
        for hot in [0, 200, 383] {
            let mut v = vec![0.0f32; dim];
            v[hot] = 1.0;
            r.apply(&mut v);
            let big = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            assert!(big < 0.2, "coordinate {hot}: largest {big}");
            assert!(v.iter().filter(|x| x.abs() > 1e-6).count() > dim / 2);
        }
    }

    #[test]
    fn is_fixed_by_its_seed() {
        assert_eq!(Rotation::new(384, 9), Rotation::new(384, 9));
        assert_ne!(Rotation::new(384, 9), Rotation::new(384, 10));
        let mut v = vec![1.0f32; 7];
        Rotation::new(8, 1).apply(&mut v); // wrong length: untouched
        assert_eq!(v, vec![1.0f32; 7]);
    }
}
