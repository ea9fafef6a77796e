//! Sign codes: one bit per dimension (whether the row's int8 code, or f32 value, is positive) plus three
//! scalars per row, one cache line a row at d ≤ 384. A first pass over them ranks the rows of a large
//! exact scan at a sixth of the int8 copy's memory traffic (a 24th of the f32 rows'); only the best few
//! hundred are then scored in int8 or f32, and the best of those in f32, so the scan returns what a
//! full scan would (measured; the kept count is chosen with margin, see `hnsw::search::sign_pool`).
//!
//! The estimate is RaBitQ's: with `s` the row's ±1 signs, `<q, x> ≈ <q, s> · |x|² / |x|₁` (exact when
//! `x` is a multiple of `s`). The query is quantised to 4-bit levels (RaBitQ's choice: the 1-bit rows,
//! not the query, limit the estimate), and `<q, s>` comes from the sum of the levels where the row's
//! bits are set: four AND-and-popcount passes, one per bit of the levels, where the CPU counts bits in
//! vectors (AVX-512 VPOPCNTDQ), a masked byte sum per 64 dimensions elsewhere.

/// Bits of the query's levels: 16 levels between its smallest and largest dimension.
const QUERY_LEVEL_BITS: u32 = 4;

/// Rows start on this boundary (a cache line), so a row of up to 8 words (d ≤ 384) loads from one line.
const LINE_WORDS: usize = 8;

/// Sign codes of every row of an int8 copy, or of a store's f32 rows (see the module documentation).
#[derive(Debug, Default)]
pub struct SignCodes {
    /// Code words per row (`dim / 64` rounded up).
    words: usize,
    /// Words per row: the code words, two words of scalars, rounded up to a cache line.
    stride: usize,
    /// Rows of `stride` words starting at `data[off]`, which sits on a cache line.
    data: Vec<u64>,
    off: usize,
    rows: usize,
}

/// A query prepared for [`SignCodes::distance`]: its 4-bit levels and the constants of the estimate.
#[derive(Debug, Clone)]
pub struct SignQuery {
    /// One level per dimension, zero-padded to the code words' 64 bits each.
    levels: Vec<u8>,
    /// Dimension `i` of the query is about `lo + step * level_i`.
    lo: f32,
    step: f32,
    /// Sum of the quantised query's dimensions.
    sum: f32,
    /// Squared norm of the query (for L2).
    norm2: f32,
}

impl Clone for SignCodes {
    /// A copy whose rows sit on cache lines too (a plain `Vec` clone could move them off).
    fn clone(&self) -> Self {
        let mut c = SignCodes::zeroed(self.words * 64, self.rows);
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
            words,
            stride,
            data,
            off,
            rows,
        }
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
            let mut next = SignCodes::zeroed(self.words * 64, rows.max(self.rows * 3 / 2));
            let used = self.rows * self.stride;
            next.data[next.off..next.off + used]
                .copy_from_slice(&self.data[self.off..self.off + used]);
            next.data.truncate(next.off + rows * self.stride);
            *self = next;
        }
        self.rows = rows;
    }

    /// Sets row `id` from its int8 codes (stored offset by +128, as in [`crate::Int8Vectors`]), their
    /// scale and the squared norm of the f32 row.
    pub(crate) fn set_from_int8(&mut self, id: u32, offset_codes: &[u8], scale: f32, norm2: f32) {
        let (words, start) = (self.words, self.off + id as usize * self.stride);
        encode_row(
            &mut self.data[start..start + words + 2],
            offset_codes,
            scale,
            norm2,
        );
    }

    /// Sets every row from an int8 copy's rows, in parallel: `row(i)` gives row `i`'s offset codes,
    /// scale and squared norm.
    pub(crate) fn fill<'a>(&mut self, row: impl Fn(usize) -> (&'a [u8], f32, f32) + Sync) {
        self.fill_rows(|i, out| {
            let (codes, scale, norm2) = row(i);
            encode_row(out, codes, scale, norm2);
        });
    }

    /// Sign codes of rows `0..rows` of a store's f32 (or f16) vectors, built in parallel.
    pub fn from_store<S: crate::VectorStore + ?Sized>(store: &S, rows: usize) -> Self {
        let rows = rows.min(store.len());
        let mut codes = SignCodes::zeroed(store.dim(), rows);
        codes.fill_rows(|i, out| encode_f32_row(out, &store.row(i as u32).to_f32()));
        codes
    }

    /// Sets row `id` from its f32 vector (the row must exist: see [`SignCodes::grow`]).
    pub(crate) fn set_from_f32(&mut self, id: u32, v: &[f32]) {
        let (words, start) = (self.words, self.off + id as usize * self.stride);
        encode_f32_row(&mut self.data[start..start + words + 2], v);
    }

    /// Runs `encode(i, row_words)` for every row, in parallel (`row_words`: the code words and the
    /// two scalar words).
    fn fill_rows(&mut self, encode: impl Fn(usize, &mut [u64]) + Sync) {
        use rayon::prelude::*;
        let (words, stride, rows) = (self.words, self.stride, self.rows);
        let off = self.off;
        self.data[off..off + rows * stride]
            .par_chunks_mut(stride * 256)
            .enumerate()
            .for_each(|(b, block)| {
                for (j, out) in block.chunks_exact_mut(stride).enumerate() {
                    encode(b * 256 + j, &mut out[..words + 2]);
                }
            });
    }

    /// Prepares a query: 4-bit levels between its smallest and largest dimension.
    pub fn prepare(&self, q: &[f32]) -> SignQuery {
        let mut levels = vec![0u8; self.words * 64];
        let (lo, hi) = q
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
        let mut level_sum = 0u32;
        for (l, &x) in levels.iter_mut().zip(q) {
            let v = if step > 0.0 {
                ((x - lo) / step).round().clamp(0.0, top) as u8
            } else {
                0
            };
            *l = v;
            level_sum += u32::from(v);
        }
        SignQuery {
            levels,
            lo,
            step,
            sum: lo * q.len() as f32 + step * level_sum as f32,
            norm2: crate::kernels::dot_f32(q, q),
        }
    }

    /// Estimated distance from `q` to row `id` (lower is closer), only for ranking rows against each
    /// other before they are scored properly.
    pub fn distance(&self, metric: crate::Metric, q: &SignQuery, id: u32) -> f32 {
        let mut out = [0.0];
        self.distances(
            crate::kernels::active(),
            metric,
            q,
            &[id],
            &mut [0],
            &mut out,
        );
        out[0]
    }

    /// [`SignCodes::distance`] of every row of `ids` into `out` (same length; `sums` is scratch of
    /// that length), with the kernel set looked up once by the caller: one kernel call sums the
    /// query's levels over all the rows' set bits, then each row's scalars turn its sum into an
    /// estimate.
    pub(crate) fn distances(
        &self,
        kernels: &crate::kernels::KernelSet,
        metric: crate::Metric,
        q: &SignQuery,
        ids: &[u32],
        sums: &mut [u32],
        out: &mut [f32],
    ) {
        let rows = &self.data[self.off..];
        let coded = crate::kernels::SignRows {
            data: rows,
            stride: self.stride,
            words: self.words,
        };
        (kernels.sign_sums)(coded, ids, &q.levels, sums);
        let est = Estimate {
            rows,
            stride: self.stride,
            words: self.words,
            two_lo: 2.0 * q.lo,
            two_step: 2.0 * q.step,
            q_sum: q.sum,
        };
        // One loop per metric, with no branch on it per row.
        let q_norm2 = q.norm2;
        match metric {
            crate::Metric::Dot => est.fill(ids, sums, out, |dot, _| -dot),
            crate::Metric::Cosine => est.fill(ids, sums, out, |dot, _| 1.0 - dot),
            crate::Metric::L2 => est.fill(ids, sums, out, |dot, norm2| {
                (q_norm2 + f32::from_bits(norm2 as u32) - 2.0 * dot).max(0.0)
            }),
        }
    }

    /// Heap bytes used.
    pub fn memory_bytes(&self) -> usize {
        self.data.capacity() * 8
    }
}

/// What [`SignCodes::distances`] turns each row's level sum into an estimate with.
struct Estimate<'a> {
    /// The rows, from the first one.
    rows: &'a [u64],
    stride: usize,
    words: usize,
    /// The query's `2 · lo`, `2 · step` and sum (see [`SignQuery`]).
    two_lo: f32,
    two_step: f32,
    q_sum: f32,
}

impl Estimate<'_> {
    /// `out[i] = finish(<q, x> estimate, row's |x|² word)` for row `ids[i]` with level sum `sums[i]`;
    /// a row outside the codes gets infinity.
    #[inline]
    fn fill(&self, ids: &[u32], sums: &[u32], out: &mut [f32], finish: impl Fn(f32, u64) -> f32) {
        for ((o, &id), &sum) in out.iter_mut().zip(ids).zip(sums) {
            let start = id as usize * self.stride + self.words;
            let (Some(&scalars), Some(&norm2)) = (self.rows.get(start), self.rows.get(start + 1))
            else {
                *o = f32::INFINITY;
                continue;
            };
            let factor = f32::from_bits(scalars as u32);
            // At most one a dimension: exact in an i32 and in an f32.
            let ones = (scalars >> 32) as i32 as f32;
            // <q, s> = 2 · (the query's dimensions where the row's sign is +, summed) − sum(q),
            // that sum being lo · ones + step · (the levels' sum).
            let dot = (self.two_lo * ones + self.two_step * sum as f32 - self.q_sum) * factor;
            *o = finish(dot, norm2);
        }
    }
}

/// Writes one row: the sign bits of `offset_codes` (1 where the code is positive) into the first words
/// of `out`, then its two scalar words (see [`pack_scalars`]).
fn encode_row(out: &mut [u64], offset_codes: &[u8], scale: f32, norm2: f32) {
    let (bits, scalars) = out.split_at_mut(out.len() - 2);
    let l1 = crate::kernels::sign_bits(offset_codes, bits);
    pack_scalars(scalars, bits, l1 as f32 * scale, norm2);
}

/// Writes one row from an f32 vector: the sign bits of `v` (1 where positive), then `|v|² / |v|₁` and
/// `|v|²` (see [`encode_row`]).
fn encode_f32_row(out: &mut [u64], v: &[f32]) {
    let (bits, scalars) = out.split_at_mut(out.len() - 2);
    for (w, chunk) in bits.iter_mut().zip(v.chunks(64)) {
        *w = chunk
            .iter()
            .enumerate()
            .fold(0u64, |m, (b, &x)| m | (u64::from(x > 0.0) << b));
    }
    let l1: f32 = v.iter().map(|x| x.abs()).sum();
    let norm2 = crate::kernels::dot_f32(v, v);
    pack_scalars(scalars, bits, l1, norm2);
}

/// The two scalar words of a row: `|x|² / |x|₁` (0 for a zero or non-finite row) and the number of
/// set bits, then `|x|²`.
fn pack_scalars(scalars: &mut [u64], bits: &[u64], l1: f32, norm2: f32) {
    let factor = if l1 > 0.0 && l1.is_finite() {
        norm2 / l1
    } else {
        0.0
    };
    let ones: u32 = bits.iter().map(|w| w.count_ones()).sum();
    scalars[0] = u64::from(factor.to_bits()) | (u64::from(ones) << 32);
    scalars[1] = u64::from(norm2.to_bits());
}

/// Sign codes an index without an int8 copy builds from the store's f32 rows the first time a
/// large exact scan needs them (searches take the store; loading an index does not), then keeps in
/// step with inserts. Derived data: two indexes compare equal whatever they hold.
#[derive(Debug, Clone, Default)]
pub(crate) struct LazySignCodes(std::sync::OnceLock<SignCodes>);

impl PartialEq for LazySignCodes {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl LazySignCodes {
    /// The codes of rows `0..rows` of `store`, built now if this is the first call.
    pub(crate) fn get_or_build<S: crate::VectorStore + ?Sized>(
        &self,
        store: &S,
        rows: usize,
    ) -> &SignCodes {
        if let Some(codes) = self.0.get() {
            return codes;
        }
        // Built outside the cell: while the parallel build waits for its parts, rayon may run another
        // search on this thread, which must not find the cell being initialised (that deadlocks).
        // Searches that arrive together may each build; the first to finish is kept.
        let built = SignCodes::from_store(store, rows);
        self.0.get_or_init(|| built)
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
    fn the_estimate_keeps_the_true_top_10_within_the_best_400() {
        let dim = 384;
        let g = Clustered::new(dim, 30, 1.0, 3);
        let (base, queries) = (g.sample(4000, 1), g.sample(20, 2));
        let mut q8 = Int8Vectors::from_store(&base);
        q8.build_signs();
        // Codes derived from the int8 copy, and codes built from the f32 rows directly.
        let from_f32 = SignCodes::from_store(&base, base.len());
        for signs in [q8.signs().unwrap(), &from_f32] {
            for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
                for i in 0..queries.len() as u32 {
                    let q = metric.prepare_query(queries.vector(i));
                    let sq = signs.prepare(&q);
                    let mut est: Vec<(f32, u32)> = (0..base.len() as u32)
                        .map(|id| (signs.distance(metric, &sq, id), id))
                        .collect();
                    est.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let kept: Vec<u32> = est.iter().take(400).map(|e| e.1).collect();
                    let truth = crate::exact_top_k(&base, &q, 10, metric, None).unwrap();
                    for n in truth {
                        assert!(
                            kept.contains(&n.id),
                            "{metric:?} query {i}: row {} not kept",
                            n.id
                        );
                    }
                }
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
        let small = Int8Vectors::from_store_prefix(&base, 300);
        assert!(small.signs().is_none(), "small copies keep no sign codes");
        // Rows set one at a time: the codes appear when the copy reaches the threshold, then grow
        // row by row.
        let mut one_by_one = Int8Vectors::new(dim);
        for id in 0..n as u32 {
            one_by_one.set(id, &base.row(id).to_f32());
            let want = id as usize + 1 >= crate::quant::SIGN_CODES_MIN_ROWS;
            assert_eq!(one_by_one.signs().is_some(), want, "row {id}");
        }
        let copy = one_by_one.clone();
        let q = g.sample(1, 7);
        let (all_s, one_s, copy_s) = (
            all.signs().unwrap(),
            one_by_one.signs().unwrap(),
            copy.signs().unwrap(),
        );
        let sq = all_s.prepare(q.vector(0));
        for id in (0..n as u32).step_by(97).chain(n as u32 - 5..n as u32) {
            let want = all_s.distance(Metric::L2, &sq, id);
            assert_eq!(one_s.distance(Metric::L2, &sq, id), want);
            assert_eq!(copy_s.distance(Metric::L2, &sq, id), want);
            assert!(want.is_finite());
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
