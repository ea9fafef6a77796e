//! Sign codes: one bit per dimension of each row, rotated and centred (see below), plus four
//! scalars per row, one cache line a row at d ≤ 384. A first pass over them estimates every allowed
//! row's distance to the query, with a bound on the estimate's error, at a sixth of the int8 copy's
//! memory traffic (a 24th of the f32 rows'); only the rows whose bound reaches the best distances
//! found are then scored properly (see `Hnsw::sign_pass`).
//!
//! The estimate and its bound are RaBitQ's (Gao and Long, SIGMOD 2024). Each row `x` is centred on
//! the mean `c` of (a sample of) the rows and rotated by a fixed random orthonormal transform `R`
//! ([`Rotation`]); with `s` the ±1 signs of `o = R(x − c)`, `<q', o> ≈ <q', s> · |o|² / |o|₁` for the
//! rotated query `q' = Rq` (exact when `o` is a multiple of `s`), and `<q, x> = <q', o> + <q, c>`.
//! With `a = |o|₁ / (√d |o|)`, the error exceeds `ε · |o| |q| · √((1 − a²) / a²) / √(d − 1)` with a
//! probability that falls like `exp(−ε²)` over the rotation's draw (the error is close to normal
//! with that spread); the pass uses ε = [`BOUND_EPSILON`]. The query is quantised to 4-bit levels
//! (its rounding error `e` adds a spread of `|e| · |o|² / |o|₁`, in squares), and `<q', s>` comes
//! from the sum of the levels where the row's bits are set: four AND-and-popcount passes, one per
//! bit of the levels, where the CPU counts bits in vectors (AVX-512 VPOPCNTDQ), a masked byte sum
//! per 64 dimensions elsewhere. Codes derived from an int8 copy encode its dequantised rows, and
//! their bound adds the quantisation's error (`scale / √12` a dimension).

use crate::rotation::Rotation;

/// Bits of the query's levels: 16 levels between its smallest and largest dimension.
const QUERY_LEVEL_BITS: u32 = 4;

/// Rows start on this boundary (a cache line), so a row of up to 8 words (d ≤ 384) loads from one line.
const LINE_WORDS: usize = 8;

/// Seed of the rotation every set of sign codes uses (codes are derived data: any fixed draw works).
const ROTATION_SEED: u64 = 0x5167_4E00_C0DE_0001;

/// ε of the error bound, in the estimate's spreads. `ann-bench sign-ranks` counts the rows of the
/// exact top 10 whose distance lies past their bound: on 100K MiniLM embeddings of real text, RaBitQ's
/// default of 1.9 let about 1 row in 100 past; 4 let 1 in 40,000 past (about what a normal error's
/// tail predicts), and one query in 4,000 lost a row of its top 10; 4.5 (a normal tail of 3 in a
/// million) let none of 320,000 past, and leaves about 45 % more rows to score than 4.
pub const BOUND_EPSILON: f32 = 4.5;

/// Sign codes of every row of an int8 copy, or of a store's f32 rows (see the module documentation).
#[derive(Debug)]
pub struct SignCodes {
    /// Dimensions of the rows.
    dim: usize,
    /// Code words per row (`dim / 64` rounded up).
    words: usize,
    /// Words per row: the code words, two words of scalars, rounded up to a cache line.
    stride: usize,
    /// Rows of `stride` words starting at `data[off]`, which sits on a cache line.
    data: Vec<u64>,
    off: usize,
    rows: usize,
    /// The transform applied to every row and query.
    rotation: Rotation,
    /// `R c`: the rotated centre subtracted from every rotated row (zeros until a full fill sets it).
    center: Vec<f32>,
}

impl Default for SignCodes {
    fn default() -> Self {
        SignCodes::zeroed(0, 0)
    }
}

/// A query prepared for [`SignCodes::distance`]: its rotated 4-bit levels and the constants of the
/// estimate and its bound.
#[derive(Debug, Clone)]
pub struct SignQuery {
    /// One level per dimension, zero-padded to the code words' 64 bits each.
    levels: Vec<u8>,
    /// Dimension `i` of the rotated query is about `lo + step * level_i`.
    lo: f32,
    step: f32,
    /// Sum of the quantised query's dimensions.
    sum: f32,
    /// Squared norm of the query (for L2).
    norm2: f32,
    /// `<q, c>`: what the rows' centre adds to every inner product.
    center_dot: f32,
    /// `ε |q|` and `ε |e|` (`e` the levels' rounding error), the query's factors of the bound.
    bound_norm: f32,
    bound_rounding: f32,
}

impl Clone for SignCodes {
    /// A copy whose rows sit on cache lines too (a plain `Vec` clone could move them off).
    fn clone(&self) -> Self {
        let mut c = self.empty_like(self.rows);
        let used = self.rows * self.stride;
        c.data[c.off..c.off + used].copy_from_slice(&self.data[self.off..self.off + used]);
        c
    }
}

impl SignCodes {
    /// `rows` rows of zeros (all signs negative, scalars zero) for `dim`-dimensional vectors.
    pub fn zeroed(dim: usize, rows: usize) -> Self {
        let words = dim.div_ceil(64);
        let stride = (words + 2).next_multiple_of(LINE_WORDS);
        let mut data = vec![0u64; rows * stride + LINE_WORDS - 1];
        let off = match data.as_ptr().align_offset(LINE_WORDS * 8) {
            o if o < LINE_WORDS => o,
            // align_offset may decline to answer; rows are then merely unaligned.
            _ => 0,
        };
        data.truncate(off + rows * stride);
        SignCodes {
            dim,
            words,
            stride,
            data,
            off,
            rows,
            rotation: Rotation::new(dim, ROTATION_SEED),
            center: vec![0.0; dim],
        }
    }

    /// Zero rows with this set's dimension, rotation and centre.
    fn empty_like(&self, rows: usize) -> Self {
        let mut c = SignCodes::zeroed(self.dim, rows);
        c.center.clone_from(&self.center);
        c
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Grows to at least `rows` rows (new rows zero).
    pub(crate) fn grow(&mut self, rows: usize) {
        if rows <= self.rows {
            return;
        }
        let need = self.off + rows * self.stride;
        if need <= self.data.capacity() {
            self.data.resize(need, 0);
        } else {
            // A reallocation could move the rows off their cache lines: copy them into a new,
            // aligned buffer with room to spare.
            let mut next = self.empty_like(rows.max(self.rows * 3 / 2));
            let used = self.rows * self.stride;
            next.data[next.off..next.off + used]
                .copy_from_slice(&self.data[self.off..self.off + used]);
            next.data.truncate(next.off + rows * self.stride);
            *self = next;
        }
        self.rows = rows;
    }

    /// Sets row `id` from its int8 codes (stored offset by +128, as in [`crate::Int8Vectors`]), their
    /// scale and the squared norm of the f32 row, against the current centre.
    pub(crate) fn set_from_int8(&mut self, id: u32, offset_codes: &[u8], scale: f32, norm2: f32) {
        let mut v = vec![0.0; self.dim];
        dequantize(offset_codes, scale, &mut v);
        self.set_row(id, &mut v, int8_error(scale), norm2);
    }

    /// Sets every row from an int8 copy's rows, in parallel: `row(i)` gives row `i`'s offset codes,
    /// scale and squared norm. The centre becomes the mean of (a sample of) the dequantised rows.
    pub(crate) fn fill<'a>(&mut self, row: impl Fn(usize) -> (&'a [u8], f32, f32) + Sync) {
        self.fill_rows(|i, v| {
            let (codes, scale, norm2) = row(i);
            dequantize(codes, scale, v);
            (int8_error(scale), norm2)
        });
    }

    /// Sign codes of rows `0..rows` of a store's f32 (or f16) vectors, built in parallel, centred on
    /// the mean of (a sample of) them.
    pub fn from_store<S: crate::VectorStore + ?Sized>(store: &S, rows: usize) -> Self {
        let rows = rows.min(store.len());
        let mut codes = SignCodes::zeroed(store.dim(), rows);
        codes.fill_rows(|i, v| {
            store.row(i as u32).write_f32(v);
            (0.0, crate::kernels::dot_f32(v, v))
        });
        codes
    }

    /// Sets row `id` from its f32 vector (the row must exist: see [`SignCodes::grow`]), against the
    /// current centre.
    pub(crate) fn set_from_f32(&mut self, id: u32, v: &[f32]) {
        let mut v = v.to_vec();
        v.resize(self.dim, 0.0);
        let norm2 = crate::kernels::dot_f32(&v, &v);
        self.set_row(id, &mut v, 0.0, norm2);
    }

    /// Encodes row `id` from `v` (its vector, overwritten), the extra error of `v` against the row
    /// it stands for (see [`int8_error`]) and the row's squared norm.
    fn set_row(&mut self, id: u32, v: &mut [f32], extra_error: f32, norm2: f32) {
        let (words, start) = (self.words, self.off + id as usize * self.stride);
        let (rotation, center) = (&self.rotation, &self.center);
        let out = &mut self.data[start..start + words + 2];
        encode_row(out, v, rotation, center, extra_error, norm2);
    }

    /// Sets the centre to the mean of a sample of the rows, then encodes every row, in parallel:
    /// `row(i, v)` writes row `i`'s vector into `v` and returns its extra error and squared norm.
    fn fill_rows(&mut self, row: impl Fn(usize, &mut [f32]) -> (f32, f32) + Sync) {
        use rayon::prelude::*;
        const BLOCK: usize = 256;
        let (dim, words, stride, rows) = (self.dim, self.words, self.stride, self.rows);
        // The centre: the mean of at most `CENTRE_SAMPLE` rows spread evenly over all of them (any
        // fixed centre keeps the bounds valid; a sample's mean is as good as the mean for them).
        const CENTRE_SAMPLE: usize = 4096;
        let step = rows.div_ceil(CENTRE_SAMPLE).max(1);
        let (mut v, mut acc) = (vec![0.0f32; dim], vec![0.0f64; dim]);
        let mut sampled = 0usize;
        for i in (0..rows).step_by(step) {
            row(i, &mut v);
            acc.iter_mut()
                .zip(&v)
                .for_each(|(a, &x)| *a += f64::from(x));
            sampled += 1;
        }
        let mut center: Vec<f32> = acc
            .iter()
            .map(|&s| (s / sampled.max(1) as f64) as f32)
            .collect();
        if center.iter().any(|x| !x.is_finite()) {
            center.iter_mut().for_each(|x| *x = 0.0);
        }
        self.rotation.apply(&mut center);
        self.center = center;
        let (rotation, center) = (&self.rotation, &self.center);
        let off = self.off;
        self.data[off..off + rows * stride]
            .par_chunks_mut(stride * BLOCK)
            .enumerate()
            .for_each(|(b, block)| {
                let mut v = vec![0.0f32; dim];
                for (j, out) in block.chunks_exact_mut(stride).enumerate() {
                    let (extra, norm2) = row(b * BLOCK + j, &mut v);
                    encode_row(
                        &mut out[..words + 2],
                        &mut v,
                        rotation,
                        center,
                        extra,
                        norm2,
                    );
                }
            });
    }

    /// Prepares a query: rotated, then 4-bit levels between its smallest and largest dimension.
    pub fn prepare(&self, q: &[f32]) -> SignQuery {
        let mut levels = vec![0u8; self.words * 64];
        let mut rq = q.to_vec();
        rq.resize(self.dim, 0.0);
        self.rotation.apply(&mut rq);
        let center_dot = crate::kernels::dot_f32(&rq, &self.center);
        let (lo, hi) = rq
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &x| {
                (l.min(x), h.max(x))
            });
        let top = ((1u32 << QUERY_LEVEL_BITS) - 1) as f32;
        let spread = hi - lo;
        let (lo, step) = if spread > 0.0 && spread.is_finite() {
            (lo, spread / top)
        } else {
            (if lo.is_finite() { lo } else { 0.0 }, 0.0)
        };
        let (mut level_sum, mut rounding2) = (0u32, 0.0f32);
        for (l, &x) in levels.iter_mut().zip(&rq) {
            let v = if step > 0.0 {
                ((x - lo) / step).round().clamp(0.0, top) as u8
            } else {
                0
            };
            *l = v;
            level_sum += u32::from(v);
            let r = x - (lo + step * f32::from(v));
            rounding2 += r * r;
        }
        let norm2 = crate::kernels::dot_f32(q, q);
        SignQuery {
            levels,
            lo,
            step,
            sum: lo * self.dim as f32 + step * level_sum as f32,
            norm2,
            center_dot: if center_dot.is_finite() {
                center_dot
            } else {
                0.0
            },
            bound_norm: BOUND_EPSILON * norm2.sqrt(),
            bound_rounding: BOUND_EPSILON * rounding2.sqrt(),
        }
    }

    /// Estimated distance from `q` to row `id` (lower is closer), only for ranking rows against each
    /// other before they are scored properly.
    pub fn distance(&self, metric: crate::Metric, q: &SignQuery, id: u32) -> f32 {
        self.distance_bounds(metric, q, id).0
    }

    /// Estimated distance from `q` to row `id` and the least distance its error bound allows.
    pub fn distance_bounds(&self, metric: crate::Metric, q: &SignQuery, id: u32) -> (f32, f32) {
        let (mut est, mut low) = ([0.0], [0.0]);
        let kernels = crate::kernels::active();
        self.estimates(kernels, metric, q, &[id], &mut [0], &mut est, &mut low);
        (est[0], low[0])
    }

    /// [`SignCodes::distance_bounds`] of every row of `ids` into `est` and `low` (same length, at
    /// most [`ESTIMATE_BLOCK`]; `sums` is scratch of that length), with the kernel set looked up once
    /// by the caller: one kernel call sums the query's levels over all the rows' set bits, then each
    /// row's scalars turn its sum into an estimate and a bound. A row outside the codes gets a
    /// least distance of minus infinity (it may be anything).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn estimates(
        &self,
        kernels: &crate::kernels::KernelSet,
        metric: crate::Metric,
        q: &SignQuery,
        ids: &[u32],
        sums: &mut [u32],
        est: &mut [f32],
        low: &mut [f32],
    ) {
        let rows = &self.data[self.off..];
        let coded = crate::kernels::SignRows {
            data: rows,
            stride: self.stride,
            words: self.words,
        };
        (kernels.sign_sums)(coded, ids, &q.levels, sums);
        let e = Estimate {
            rows,
            stride: self.stride,
            words: self.words,
            q,
        };
        // One loop per metric, with no branch on it per row.
        let q_norm2 = q.norm2;
        match metric {
            crate::Metric::Dot => e.fill(ids, sums, est, low, |dot, bound, _| (-dot, -dot - bound)),
            crate::Metric::Cosine => e.fill(ids, sums, est, low, |dot, bound, _| {
                (1.0 - dot, 1.0 - dot - bound)
            }),
            crate::Metric::L2 => e.fill(ids, sums, est, low, |dot, bound, norm2| {
                let d = q_norm2 + norm2 - 2.0 * dot;
                (d.max(0.0), d - 2.0 * bound)
            }),
        }
    }

    /// Heap bytes used.
    pub fn memory_bytes(&self) -> usize {
        self.data.capacity() * 8 + self.center.capacity() * 4 + self.rotation.memory_bytes()
    }
}

/// Rows [`SignCodes::estimates`] takes per call.
pub(crate) const ESTIMATE_BLOCK: usize = 256;

/// What [`SignCodes::estimates`] turns each row's level sum into an estimate and a bound with.
struct Estimate<'a> {
    /// The rows, from the first one.
    rows: &'a [u64],
    stride: usize,
    words: usize,
    q: &'a SignQuery,
}

impl Estimate<'_> {
    /// `(est[i], low[i]) = finish(<q, x> estimate, its error bound, row's |x|²)` for row `ids[i]`
    /// with level sum `sums[i]`; a row outside the codes gets an infinite bound. The rows'
    /// scalars are gathered first, so the arithmetic runs over plain arrays (in vector registers).
    #[inline]
    fn fill(
        &self,
        ids: &[u32],
        sums: &[u32],
        est: &mut [f32],
        low: &mut [f32],
        finish: impl Fn(f32, f32, f32) -> (f32, f32),
    ) {
        debug_assert!(
            ids.len() <= ESTIMATE_BLOCK,
            "estimates take a block of rows at a time"
        );
        let n = ids.len().min(ESTIMATE_BLOCK);
        let mut factor = [0f32; ESTIMATE_BLOCK];
        let mut ones = [0f32; ESTIMATE_BLOCK];
        let mut norm2 = [0f32; ESTIMATE_BLOCK];
        let mut spread = [0f32; ESTIMATE_BLOCK];
        for (i, &id) in ids[..n].iter().enumerate() {
            let start = id as usize * self.stride + self.words;
            let (scalars, norms) = match (self.rows.get(start), self.rows.get(start + 1)) {
                (Some(&s), Some(&m)) => (s, m),
                // Outside the codes: no sign information, any distance (see below).
                _ => (0, u64::from(f32::INFINITY.to_bits()) << 32),
            };
            factor[i] = low_f32(scalars);
            // At most one a dimension: exact in an i32 and in an f32.
            ones[i] = (scalars >> 32) as i32 as f32;
            norm2[i] = low_f32(norms);
            spread[i] = high_f32(norms);
        }
        let q = self.q;
        let (two_lo, two_step) = (2.0 * q.lo, 2.0 * q.step);
        // Every slice cut to `n`, so the loop carries no bounds checks and vectorises (its square
        // root included).
        let (est, low, sums) = (&mut est[..n], &mut low[..n], &sums[..n]);
        let (factor, ones, norm2, spread) = (&factor[..n], &ones[..n], &norm2[..n], &spread[..n]);
        for i in 0..n {
            // <q', s> = 2 · (the query's dimensions where the row's sign is +, summed) − sum(q'),
            // that sum being lo · ones + step · (the levels' sum).
            let dot =
                (two_lo * ones[i] + two_step * sums[i] as f32 - q.sum) * factor[i] + q.center_dot;
            (est[i], low[i]) = finish(dot, q.bound(factor[i], spread[i]), norm2[i]);
        }
    }
}

impl SignQuery {
    /// The bound on the inner product's error of a row with `|o|² / |o|₁` = `factor` and error
    /// spread `spread`: the rows' and the levels' rounding errors are independent, so their spreads
    /// add in squares.
    #[inline]
    fn bound(&self, factor: f32, spread: f32) -> f32 {
        ((spread * self.bound_norm).powi(2) + (factor * self.bound_rounding).powi(2)).sqrt()
    }
}

/// The f32 in the low 32 bits of a scalar word.
fn low_f32(word: u64) -> f32 {
    f32::from_bits(word as u32)
}

/// The f32 in the high 32 bits of a scalar word.
fn high_f32(word: u64) -> f32 {
    f32::from_bits((word >> 32) as u32)
}

/// The standard deviation of an int8 row's rounding (uniform within half a step of `scale`), a
/// dimension, which its bound adds.
fn int8_error(scale: f32) -> f32 {
    scale * (1.0 / 12f32).sqrt()
}

/// Writes the dequantised row of offset int8 codes into `out`.
fn dequantize(offset_codes: &[u8], scale: f32, out: &mut [f32]) {
    for (o, &c) in out.iter_mut().zip(offset_codes) {
        *o = f32::from(c as i16 - 128) * scale;
    }
}

/// Writes one row of `v` (overwritten): the signs of `o = R v − R c` (1 where positive) into the first
/// words of `out`, then two scalar words: `|o|² / |o|₁` with the number of set bits, and the row's
/// squared norm with its error's spread (`|o| · √((1 − a²) / a²) / √(d − 1)`, plus `extra_error`).
fn encode_row(
    out: &mut [u64],
    v: &mut [f32],
    rotation: &Rotation,
    center: &[f32],
    extra_error: f32,
    norm2: f32,
) {
    let (bits, scalars) = out.split_at_mut(out.len() - 2);
    rotation.apply(v);
    v.iter_mut().zip(center).for_each(|(x, c)| *x -= c);
    let l1 = crate::kernels::sign_bits(v, bits);
    let o2 = crate::kernels::dot_f32(v, v);
    let d = v.len() as f32;
    let (factor, spread) = if l1 > 0.0 && l1.is_finite() && o2.is_finite() {
        // a = <ō, o> for ō = s / √d and o / |o|: at least 1 / √d, so never zero here.
        let a = (l1 / (d.sqrt() * o2.sqrt())).min(1.0);
        let spread =
            o2.sqrt() * ((1.0 - a * a).max(0.0) / (a * a)).sqrt() / (d - 1.0).max(1.0).sqrt();
        (o2 / l1, spread.hypot(extra_error))
    } else if o2 == 0.0 {
        // The row is the centre: the estimate is exact but for the int8 rounding.
        (0.0, extra_error)
    } else {
        // Not finite: any distance is possible.
        (0.0, f32::INFINITY)
    };
    let ones: u32 = bits.iter().map(|w| w.count_ones()).sum();
    scalars[0] = u64::from(factor.to_bits()) | (u64::from(ones) << 32);
    let norm2 = if norm2.is_finite() { norm2 } else { 0.0 };
    scalars[1] = u64::from(norm2.to_bits()) | (u64::from(spread.to_bits()) << 32);
}

/// Sign codes built the first time a large exact scan needs them (building one takes about a
/// microsecond a row: a rotation each), then kept in step with the rows they encode. An int8 copy
/// derives them from its codes, an index without one from the store's f32 rows (searches take the
/// store; loading an index does not), so neither opening a store nor loading an index pays for them.
/// Derived data: two sets compare equal whatever they hold.
#[derive(Debug, Clone, Default)]
pub(crate) struct LazySignCodes(std::sync::OnceLock<SignCodes>);

impl PartialEq for LazySignCodes {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl LazySignCodes {
    /// The codes, if built.
    pub(crate) fn get(&self) -> Option<&SignCodes> {
        self.0.get()
    }

    /// The codes, built by `build` now if this is the first call.
    pub(crate) fn get_or_build_with(&self, build: impl FnOnce() -> SignCodes) -> &SignCodes {
        if let Some(codes) = self.0.get() {
            return codes;
        }
        // Built outside the cell: while the parallel build waits for its parts, rayon may run another
        // search on this thread, which must not find the cell being initialised (that deadlocks).
        // Searches that arrive together may each build; the first to finish is kept.
        let built = build();
        self.0.get_or_init(|| built)
    }

    /// The codes of rows `0..rows` of `store`, built now if this is the first call.
    pub(crate) fn get_or_build<S: crate::VectorStore + ?Sized>(
        &self,
        store: &S,
        rows: usize,
    ) -> &SignCodes {
        self.get_or_build_with(|| SignCodes::from_store(store, rows))
    }

    /// Sets the codes (replacing any built ones).
    #[cfg(test)]
    pub(crate) fn set(&mut self, codes: SignCodes) {
        self.0 = std::sync::OnceLock::from(codes);
    }

    /// The built codes, to update in place.
    pub(crate) fn get_mut(&mut self) -> Option<&mut SignCodes> {
        self.0.get_mut()
    }

    /// Re-encodes rows `ids` from `store` if the codes were built (growing them as needed).
    pub(crate) fn update<S: crate::VectorStore + ?Sized>(&mut self, store: &S, ids: &[u32]) {
        if let Some(codes) = self.0.get_mut() {
            if let Some(&top) = ids.iter().max() {
                codes.grow(top as usize + 1);
            }
            for &id in ids {
                codes.set_from_f32(id, &store.row(id).to_f32());
            }
        }
    }

    /// Drops the codes (they are built again when next needed).
    pub(crate) fn clear(&mut self) {
        self.0 = std::sync::OnceLock::new();
    }

    /// Heap bytes used.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.0.get().map_or(0, SignCodes::memory_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Clustered;
    use crate::{Int8Vectors, Metric, VectorStore};

    #[test]
    fn every_true_top_10_row_lies_within_its_bound_and_the_bound_rules_out_most_rows() {
        let dim = 384;
        let g = Clustered::new(dim, 30, 1.0, 3);
        let (base, queries) = (g.sample(4000, 1), g.sample(20, 2));
        let mut q8 = Int8Vectors::from_store(&base);
        q8.build_signs();
        // Codes derived from the int8 copy, and codes built from the f32 rows directly.
        let from_f32 = SignCodes::from_store(&base, base.len());
        for signs in [q8.signs().unwrap(), &from_f32] {
            for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
                let mut ruled_out = 0;
                for i in 0..queries.len() as u32 {
                    let q = metric.prepare_query(queries.vector(i));
                    let sq = signs.prepare(&q);
                    let truth = crate::exact_top_k(&base, &q, 10, metric, None).unwrap();
                    for n in &truth {
                        let (_, low) = signs.distance_bounds(metric, &sq, n.id);
                        assert!(
                            low <= n.distance,
                            "{metric:?} query {i}: row {} at {} bounded from {low}",
                            n.id,
                            n.distance
                        );
                    }
                    let tenth = truth[9].distance;
                    ruled_out += (0..base.len() as u32)
                        .filter(|&id| signs.distance_bounds(metric, &sq, id).1 >= tenth)
                        .count();
                }
                let share = ruled_out as f64 / (20.0 * base.len() as f64);
                assert!(share > 0.9, "{metric:?}: {share:.3} of the rows ruled out");
            }
        }
    }

    #[test]
    fn rows_set_one_by_one_grown_or_cloned_equal_rows_filled_at_once() {
        let dim = 70; // two code words, the last partly used
        let n = crate::quant::SIGN_CODES_MIN_ROWS + 300;
        let g = Clustered::new(dim, 5, 1.0, 9);
        let base = g.sample(n, 1);
        let all = Int8Vectors::from_store(&base);
        assert!(all.signs().is_none(), "derived when first asked for");
        let small = Int8Vectors::from_store_prefix(&base, 300);
        assert!(
            small.sign_codes().is_none(),
            "small copies keep no sign codes"
        );
        assert!(all.sign_codes().is_some() && all.signs().is_some());
        // Rows set one at a time: the codes are derived when first asked for, once the copy
        // reaches the threshold, then grow row by row.
        let mut one_by_one = Int8Vectors::new(dim);
        let threshold = crate::quant::SIGN_CODES_MIN_ROWS as u32;
        for id in 0..n as u32 {
            one_by_one.set(id, &base.row(id).to_f32());
            let asked = one_by_one.sign_codes().is_some();
            assert_eq!(asked, id + 1 >= threshold, "row {id}");
            assert_eq!(
                one_by_one.signs().map(SignCodes::len),
                asked.then_some(id as usize + 1)
            );
        }
        let copy = one_by_one.clone();
        let q = g.sample(1, 7);
        let (all_s, one_s, copy_s) = (
            all.signs().unwrap(),
            one_by_one.signs().unwrap(),
            copy.signs().unwrap(),
        );
        // Codes derived at once are centred on all rows; codes grown row by row keep the centre of
        // the rows they were first derived from. Both bound every row's distance; a copy is equal.
        for codes in [all_s, one_s] {
            let sq = codes.prepare(q.vector(0));
            for id in (0..n as u32).step_by(97).chain(n as u32 - 5..n as u32) {
                let (est, low) = codes.distance_bounds(Metric::L2, &sq, id);
                let truth = Metric::L2.distance_to(q.vector(0), base.row(id));
                assert!(est.is_finite() && low <= truth, "row {id}: {low} > {truth}");
                let (copied, grown) = (copy_s, one_s);
                assert_eq!(
                    copied.distance_bounds(Metric::L2, &sq, id),
                    grown.distance_bounds(Metric::L2, &sq, id)
                );
            }
        }
        // Rows stay on cache lines through growth and copies.
        for codes in [all_s, one_s, copy_s] {
            assert_eq!(codes.data[codes.off..].as_ptr().align_offset(64), 0);
            assert_eq!(codes.len(), n);
        }
    }

    #[test]
    fn lazy_codes_asked_for_by_many_rayon_tasks_at_once_are_one_set() {
        // Every task of a four-thread pool asks for the codes first. The build runs outside the
        // cell, so a task that rayon runs on the building thread while it waits for its parts cannot
        // re-enter the cell's initialisation (which deadlocks); this shows that one set of codes is
        // kept and handed to all, not that deadlock (it needs a steal at the wrong moment).
        let g = Clustered::new(256, 10, 1.0, 4);
        let base = g.sample(3000, 1);
        let lazy = LazySignCodes::default();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let seen: Vec<usize> = pool.install(|| {
            use rayon::prelude::*;
            (0..64)
                .into_par_iter()
                .map(|_| lazy.get_or_build(&base, base.len()) as *const SignCodes as usize)
                .collect()
        });
        assert!(
            seen.iter().all(|&p| p == seen[0]),
            "one set of codes is kept"
        );
        assert_eq!(lazy.get_or_build(&base, base.len()).len(), 3000);
    }

    #[test]
    fn zero_rows_and_flat_queries_give_finite_estimates() {
        let codes = SignCodes::zeroed(64, 3);
        for q in [vec![0.0f32; 64], vec![1.0; 64], vec![]] {
            let sq = codes.prepare(&q);
            for id in 0..3 {
                for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
                    assert!(codes.distance(metric, &sq, id).is_finite());
                }
            }
        }
        assert!(SignCodes::default().is_empty());
    }
}
