//! Graph traversal (greedy descent + best-first layer search) and the public filtered search.

use super::Hnsw;
use crate::error::AnnError;
use crate::exact::scan_ids;
use crate::filter::{Filter, IdSet};
use crate::kernels::prefetch;
use crate::metric::Metric;
use crate::quant::SIGN_CODES_MIN_ROWS;
use crate::quant::{Int8Vectors, QuantQuery};
use crate::sign::{SignCodes, ESTIMATE_BLOCK};
use crate::store::VectorStore;
use crate::topk::{Neighbor, TopK, TopKBuffer};
use crate::visited::with_visited;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Distance from the current query to a row, plus a prefetch hint for that row.
pub(crate) trait Oracle {
    fn dist(&self, id: u32) -> f32;
    fn prefetch(&self, id: u32);
    /// `dist` of every id into `out` (same length); oracles that can score several rows in one pass
    /// over the query override it.
    #[inline]
    fn dist_many(&self, ids: &[u32], out: &mut [f32]) {
        for (d, &id) in out.iter_mut().zip(ids) {
            *d = self.dist(id);
        }
    }
}

/// Exact f32 distances read from the store.
pub(crate) struct F32Oracle<'a, S: ?Sized> {
    pub store: &'a S,
    pub query: &'a [f32],
    pub metric: Metric,
}

impl<S: VectorStore + ?Sized> Oracle for F32Oracle<'_, S> {
    #[inline]
    fn dist(&self, id: u32) -> f32 {
        self.metric.distance_to(self.query, self.store.row(id))
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        self.store.row(id).prefetch(2);
    }
}

/// Approximate distances from the int8 copy.
pub(crate) struct I8Oracle<'a> {
    pub quant: &'a Int8Vectors,
    pub query: QuantQuery,
    pub metric: Metric,
}

impl Oracle for I8Oracle<'_> {
    #[inline]
    fn dist(&self, id: u32) -> f32 {
        self.quant.distance(self.metric, &self.query, id)
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        self.quant.prefetch_row(id);
    }
    /// Four rows per pass over the query's codes.
    #[inline]
    fn dist_many(&self, ids: &[u32], out: &mut [f32]) {
        self.quant.distances(self.metric, &self.query, ids, out);
    }
}

/// Cost model for filtered searches: an unfiltered level-0 walk is assumed to evaluate about this
/// many rows per unit of `ef` (a rough figure for M=16; it only decides between walking and scanning,
/// and a walk that overruns the scan's cost falls back to the scan anyway).
const WALK_EVALS_PER_EF: usize = 24;
/// A filtered walk may evaluate this many times its estimated cost before it gives way to the exact
/// scan (see `Hnsw::search_with_plan`).
const WALK_OVERRUN: f64 = 4.0;
/// How many int8 candidates are re-scored with f32 vectors for a top-`k` search at `ef`.
fn rescore_pool(k: usize, ef: usize) -> usize {
    (3 * k).max(ef / 2).min(ef)
}

/// How many rows of an exact int8 scan are re-scored with f32 vectors: the scan ranks every allowed
/// row, so its pool only has to absorb the quantisation's error, not a walk's misses: `3k` (recall
/// 1.0000 on every `ann-bench` set at 1 % and 10 %, as with the walk's larger pool).
fn scan_rescore_pool(k: usize, ef: usize) -> usize {
    (3 * k).min(rescore_pool(k, ef))
}

/// Rows fetched ahead of the one being re-scored (the pool's rows are scattered over the store).
const RESCORE_AHEAD: usize = 4;

/// Replaces the approximate distances of `pool` by exact ones from the store's f32 rows and sorts it.
/// Rows are prefetched a few candidates ahead so their memory latency overlaps the scoring.
pub(crate) fn rescore<S: VectorStore + ?Sized>(
    store: &S,
    q: &[f32],
    metric: Metric,
    pool: &mut [Neighbor],
) {
    let fetch = |n: &Neighbor| store.row(n.id).prefetch(usize::MAX);
    pool.iter().take(RESCORE_AHEAD).for_each(fetch);
    for i in 0..pool.len() {
        if let Some(ahead) = pool.get(i + RESCORE_AHEAD) {
            fetch(ahead);
        }
        let id = pool[i].id;
        pool[i].distance = metric.distance_to(q, store.row(id));
    }
    pool.sort();
}

/// f32 bytes an exact scan may read before its rows are assumed to miss the cache (see
/// `Hnsw::scan_rows_cost`).
const SCAN_CACHED_BYTES: usize = 4 << 20;

/// Cost of one row of an int8 scan, in hundredths of an int8 walk evaluation. A scan scores rows
/// four at a time (one pass over the query's codes), back to back (no heap, no visited set, no link
/// lists), so a row costs well under an evaluation of the walk. Measured at d = 384 on the 2-core
/// machine, as a share of the time per estimated evaluation of the unfiltered int8 walk: 0.43 for
/// 1,000 allowed rows of a 10K set at ef 24 (both from cache), 0.55 for 5,000 rows of it at ef 64,
/// and 0.35 for 10,000 rows of a 100K set at ef 192 (23 ns a row against 66 ns an evaluation: both
/// miss the cache).
const I8_SCAN_ROW_PCT: usize = 50;
/// Cost of quantising the query for an int8 scan (about 0.6 us at d = 384), in int8 walk evaluations.
const I8_QUERY_EVALS: usize = 12;
/// Cost of re-scoring one f32 row, in int8 walk evaluations.
const F32_ROW_IN_I8_EVALS: usize = 2;
/// Rows of an int8 scan whose memory is requested before they are scored (a multiple of 4).
const I8_SCAN_AHEAD: usize = 8;

/// How many rows a sign-code pass is expected to leave for int8 (or f32) scoring in a top-`k` search on
/// `dim`-dimensional rows, for costing it (`None`: no sign-code pass below [`SIGN_MIN_DIM`] dimensions,
/// or where the count overflows). The pass leaves every row whose error bound reaches below the `k`-th
/// best distance of its seeds (see [`Hnsw::sign_pass`]), so the count follows the data: `ann-bench
/// sign-ranks` measured means of 34 (5 % filters) to 49 (20 %) per result on 100K MiniLM embeddings of
/// real text (p99 130 to 260 per result), and 1 to 16 per result on clustered synthetic vectors. A
/// sign's estimate is coarser in fewer dimensions, so below 384 the count is costed proportionally
/// higher.
pub(crate) fn sign_pool(k: usize, dim: usize) -> Option<usize> {
    if dim < SIGN_MIN_DIM {
        return None;
    }
    k.checked_mul(SIGN_ROWS_PER_RESULT)?
        .checked_mul(384usize.div_ceil(dim))
}
/// Rows a sign-code pass is expected to leave per result (see [`sign_pool`]).
const SIGN_ROWS_PER_RESULT: usize = 40;
/// Rows a sign-code pass scores in f32 per result, by best estimate, to learn the distance the other
/// rows' bounds must reach below (4 left about 5 % more rows than 8 on real text, 20 % fewer than 2).
const SIGN_SEEDS_PER_RESULT: usize = 4;
/// Rows of fewer dimensions never take a sign-code pass (see [`sign_pool`]).
const SIGN_MIN_DIM: usize = 256;
/// A sign-code pass is only considered for sets at least this many times the rows it is expected to
/// leave.
const SIGN_MIN_ROWS_PER_LEFT: usize = 4;
/// Cost of one row of a sign-code pass, in hundredths of an int8 walk evaluation, where the kernel
/// set sums bit planes ([`crate::kernels::KernelSet::sign_planes`]): measured at d = 384 on 10,163
/// allowed rows of the real 100K set, the whole pass (kernel, estimates and bounds, seeds) took
/// 86–89 us, about 9 ns a row; a row it leaves then costs about one evaluation in the int8 pass (its
/// rows are scattered). An evaluation of the unfiltered int8 walk costs 67 ns on that set but about
/// 33 ns on the clustered synthetic 100K set (77 us for 2,304 estimated evaluations at ef 96), whose
/// walks stay in fewer cache lines; the row is costed against the cheaper evaluation, so that a scan
/// is chosen only where it wins on both (real 100K: 10 % and 20 % scan at 1.25–1.32x and 0.69–0.72x
/// the unfiltered speed, where two-hop walks ran at about 0.65x and 0.47x; synthetic 100K: its 20 %
/// filter walks at 0.53x, where the pass ran at about 0.4x). Where the CPU also has IFMA the kernel
/// weighs the planes in one instruction each and costs about a quarter less a row (2.9 against 3.9 ns
/// from cache in a development loop); the constant leaves that out, so the clustered synthetic 100K
/// set's 15-25 % filters still walk, which stays faster there (0.52-0.64x against a scan's ~0.5x).
const SIGN_ROW_PCT_PLANES: usize = 27;
/// The same for the other kernel sets: AVX-512 byte masks (no VPOPCNTDQ; 17.5 ns a row measured for
/// that kernel's first version, costed against the real set's 67 ns evaluation as first measured), and
/// the bit planes counted with scalar popcounts (AVX2 with POPCNT, NEON, scalar). With the AVX2 set
/// forced on the 2-core machine (`CLAWHDF5_ANN_KERNELS=avx2+fma`, real 100K set, ef 192), a scan with
/// the pass answered 10 % and 20 % filters at 0.93–0.96x and 0.53–0.54x the AVX2 walk's speed (recall
/// 1.0000); costing the row at 45–60 instead made 20–25 % filters walk (0.48–0.51x, recall 0.983–0.986)
/// and from 60 on made 10–15 % filters scan in int8 without the pass (0.38–0.56x).
const SIGN_ROW_PCT: usize = 30;

/// The cost of a sign-pass row for the running kernel set: `planes` where it sums bit planes,
/// `other` elsewhere.
fn sign_row_cost(planes: usize, other: usize) -> usize {
    if crate::kernels::active().sign_planes {
        planes
    } else {
        other
    }
}
/// Cost of one row of a sign-code pass on an index without an int8 copy, in hundredths of the units
/// f32 scans are costed in (an f32 row at a full walk evaluation, about twice its real cost, see
/// [`Hnsw::two_hop_cost_factor`]): measured 17.5 ns a row against about 80 ns an estimated
/// evaluation of the unfiltered f32 walk (100K rows, d = 384, ef 96), doubled like the f32 rows.
/// With it a 10 % filter of 100K rows scans at ef 192 (measured 1.7x the unfiltered walk's speed,
/// where the two-hop walk ran at 0.7-0.8x) and walks at ef 96 (1.1x, where the scan ran at 0.76x).
/// Lowered from 45 when the AVX2, NEON and scalar sets came to count bit planes: with the AVX2 set
/// forced on the 2-core machine, the real 100K set's 20 % filter at ef 192 now scans (0.84x, recall
/// 1.0000, where the two-hop walk ran at 0.57x and recall 0.983) and its 25 % filter still walks; at
/// 30 the synthetic 100K set's 10 % filter at ef 96 would scan at 0.71x where it walks at 0.95-0.96x.
/// The AVX-512 byte-mask kernel (no VPOPCNTDQ) costs about half the AVX2 one a row (4.9 against 9.7
/// ns from cache in a development loop), so the cost errs high there.
const F32_SIGN_ROW_PCT: usize = 35;
/// [`F32_SIGN_ROW_PCT`] where the kernels sum bit planes: about 9 ns a row (see
/// [`SIGN_ROW_PCT_PLANES`]), doubled like the f32 rows. With it the f32 index's 20 % filter of the
/// real 100K set scans at ef 192 (1.47x the unfiltered walk's speed, recall 1.0000, where the two-hop
/// walk ran at 0.62x and recall 0.983), and the synthetic 100K set's 10 % filter at ef 96 (1.40x, where
/// the walk ran at 1.05x); its 20 % filter still walks (0.86x).
const F32_SIGN_ROW_PCT_PLANES: usize = 23;
/// Cost of scoring in f32 one row a sign-code pass leaves (or seeds), in the same units (scattered f32
/// rows, about 100 ns each, doubled).
const F32_LEFT_ROW_COST: usize = 3;

/// Filters allowing less than this fraction of the rows walk with two-hop routing.
const TWO_HOP_BELOW: f64 = 0.3;
/// Two-hop walks of filters allowing at least this fraction of the rows cost more (see
/// [`Hnsw::two_hop_cost_factor`]).
const TWO_HOP_DEARER_FROM: f64 = 0.125;
/// Link lists of rejected rows fetched ahead while routing around them.
const HOP_PREFETCH_AHEAD: usize = 6;

/// Candidate list size of a two-hop walk asked for `ef`: the walk runs on the (smaller) graph of the
/// allowed rows, where a shorter list reaches the recall `ef` gives on the whole graph; the list
/// shrinks from `ef` at [`TWO_HOP_BELOW`] to `ef / 2` for very selective filters.
fn two_hop_ef(ef: usize, k: usize, selectivity: f64) -> usize {
    let f = 0.5 + 0.5 * (selectivity / TWO_HOP_BELOW).clamp(0.0, 1.0);
    ((ef as f64 * f).ceil() as usize).max(k)
}

/// Appends the ids of `set` below `slots` that `keep` accepts to `out`, in id order: word by word, a
/// plain loop over each word's set bits (the last word masked to the slots).
fn set_ids(set: &IdSet, slots: u32, keep: impl Fn(u32) -> bool, out: &mut Vec<u32>) {
    let slots = slots as usize;
    for (w, &word) in set.words().iter().take(slots.div_ceil(64)).enumerate() {
        let past = (w + 1) * 64;
        let mut bits = if past > slots {
            word & (u64::MAX >> (past - slots))
        } else {
            word
        };
        while bits != 0 {
            let id = (w * 64) as u32 + bits.trailing_zeros();
            bits &= bits - 1;
            if keep(id) {
                out.push(id);
            }
        }
    }
}

/// Rows a sign-code pass tests against its bounds at once (see [`Hnsw::sign_pass`]).
const PASS_GROUP: usize = 16;

/// What [`Hnsw::sign_pass`] leaves: rows to score, and rows it scored in f32 already.
pub(crate) struct SignPass {
    /// The rows whose bound reaches below the seeds' `k`-th distance, in id order.
    pub(crate) candidates: Vec<u32>,
    /// The rows of the best estimates with their f32 distances, sorted.
    pub(crate) seeds: Vec<Neighbor>,
}

/// The best `k` of `found` (rows scored in f32) and a sign pass's `seeds` (scored in f32 too, and
/// not among `found`'s rows), sorted.
fn with_seeds(mut found: Vec<Neighbor>, seeds: Vec<Neighbor>, k: usize) -> Vec<Neighbor> {
    found.extend(seeds);
    found.sort();
    found.truncate(k);
    found
}

/// How a filtered search ran (exposed for benchmarks and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchPlan {
    /// Best-first traversal of the graph.
    Graph,
    /// Exact scan of the allowed rows (chosen up front or after the graph exceeded its budget).
    ExactScan,
}

impl Hnsw {
    /// Prefetch hint for the link list of `id` at `level`.
    #[inline]
    fn prefetch_links(&self, id: u32, level: usize) {
        if level == 0 {
            let base = id as usize * (1 + self.m0());
            let p = self.links0.as_ptr().wrapping_add(base);
            prefetch(p);
            prefetch(p.wrapping_add(16));
            prefetch(p.wrapping_add(32));
        }
    }

    /// Greedy descent from the entry point down to level 1; returns the level-0 entry.
    pub(crate) fn descend<O: Oracle>(&self, o: &O, stop_level: usize) -> Option<Neighbor> {
        let ep = self.entry?;
        let mut cur = Neighbor {
            id: ep,
            distance: o.dist(ep),
        };
        let mut level = self.max_level;
        while level > stop_level {
            loop {
                let mut changed = false;
                for &n in self.links(cur.id, level) {
                    let d = o.dist(n);
                    if d < cur.distance {
                        cur = Neighbor { id: n, distance: d };
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
            level -= 1;
        }
        Some(cur)
    }

    /// Best-first search of one level (the paper's Algorithm 2). Only rows for which `allowed`
    /// holds enter the result set; all rows route. Returns `None` once more than `budget`
    /// distances were computed. The result is a max-heap of at most `ef` neighbours.
    /// With `two_hop`, rejected rows are never scored: the walk hops over them to their allowed
    /// neighbours, so a selective filter costs about as much as an unfiltered walk.
    /// With `ef_floor < ef`, every scored rejected row that would have entered an unfiltered result
    /// list shrinks the list by one, down to `ef_floor`: a filter that rejects the query's nearest
    /// rows then costs about what an unfiltered walk at `ef` does instead of walking `ef` rows
    /// further out.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_layer<O: Oracle, A: Fn(u32) -> bool>(
        &self,
        o: &O,
        entries: &[Neighbor],
        ef: usize,
        level: usize,
        allowed: &A,
        budget: usize,
        two_hop: bool,
        ef_floor: usize,
    ) -> Option<BinaryHeap<Neighbor>> {
        with_visited(self.levels.len(), |vis| {
            let mut cand: BinaryHeap<Reverse<Neighbor>> = BinaryHeap::with_capacity(ef * 4);
            let mut res: BinaryHeap<Neighbor> = BinaryHeap::with_capacity(ef + 1);
            for &e in entries {
                if vis.insert(e.id) {
                    cand.push(Reverse(e));
                    if allowed(e.id) {
                        res.push(e);
                    }
                }
            }
            while res.len() > ef {
                res.pop();
            }
            let mut worst = if res.len() >= ef {
                res.peek().map_or(f32::INFINITY, |n| n.distance)
            } else {
                f32::INFINITY
            };
            let mut evals = 0usize;
            // Scratch lists of one expansion, reused (not re-zeroed) from one to the next.
            let (mut fresh, mut hop, mut dist) = ([0u32; 256], [0u32; 256], [0f32; 256]);
            let mut limit = ef;
            let mut rejected_near = 0usize;
            while let Some(Reverse(c)) = cand.pop() {
                if c.distance > worst {
                    break;
                }
                // The link list of the likely next candidate lives apart from the vectors; start
                // fetching it now so it is in cache when that candidate is expanded.
                if let Some(Reverse(next)) = cand.peek() {
                    self.prefetch_links(next.id, level);
                }
                // Keep the unvisited neighbours, prefetch their vectors, then score them.
                let mut nf = 0;
                // A two-hop expansion takes fewer new rows than a plain one: enough to route, while
                // reading fewer link lists of rejected rows.
                let cap = if two_hop {
                    self.cap(level) * 3 / 4
                } else {
                    self.cap(level)
                };
                // Rejected neighbours (two-hop mode): their link lists are scanned for allowed rows
                // below (the first few are prefetched here).
                let mut nh = 0;
                for &n in self.links(c.id, level) {
                    if !vis.insert(n) {
                        continue;
                    }
                    if !two_hop || allowed(n) {
                        o.prefetch(n);
                        fresh[nf] = n;
                        nf += 1;
                    } else {
                        if nh < HOP_PREFETCH_AHEAD {
                            self.prefetch_links(n, level);
                        }
                        hop[nh] = n;
                        nh += 1;
                    }
                }
                // Route through rows the filter rejects without scoring them: take their allowed
                // neighbours instead (at most `cap` new rows per expansion). Link lists are fetched
                // a few hops ahead, as the cap is usually reached before every hop is read.
                'hops: for (hi, &n) in hop[..nh].iter().enumerate() {
                    if let Some(&ahead) = hop[..nh].get(hi + HOP_PREFETCH_AHEAD) {
                        self.prefetch_links(ahead, level);
                    }
                    for &n2 in self.links(n, level) {
                        if nf >= cap {
                            break 'hops;
                        }
                        if allowed(n2) && vis.insert(n2) {
                            o.prefetch(n2);
                            fresh[nf] = n2;
                            nf += 1;
                        }
                    }
                }
                o.dist_many(&fresh[..nf], &mut dist[..nf]);
                for (&n, &d) in fresh[..nf].iter().zip(&dist[..nf]) {
                    evals += 1;
                    if d < worst {
                        cand.push(Reverse(Neighbor { id: n, distance: d }));
                        if allowed(n) {
                            res.push(Neighbor { id: n, distance: d });
                            if res.len() > limit {
                                res.pop();
                            }
                            if res.len() >= limit {
                                worst = res.peek().map_or(f32::INFINITY, |n| n.distance);
                            }
                        } else if limit > ef_floor {
                            rejected_near += 1;
                            limit = ef.saturating_sub(rejected_near).max(ef_floor);
                            while res.len() > limit {
                                res.pop();
                            }
                            if res.len() >= limit {
                                worst = res.peek().map_or(f32::INFINITY, |n| n.distance);
                            }
                        }
                    }
                }
                if evals > budget {
                    return None;
                }
            }
            Some(res)
        })
    }

    /// The `k` nearest live rows to `query` among those `filter` allows, sorted closest first.
    ///
    /// `ef` (raised to at least `k`) is the candidate list size: larger is slower and more accurate.
    /// With a filter, the search either walks the graph collecting only allowed rows, or scans the
    /// allowed rows exactly when that is cheaper (small allowed sets, or when the walk exceeds the
    /// cost of the scan), so selective filters get exact results. With `quantize`, the graph walk
    /// uses int8 distances and the `ef` best candidates are re-scored from the store's f32 vectors;
    /// an exact scan of more than a few hundred allowed rows likewise scores them with int8 distances
    /// and re-scores the best in f32 (the planner costs both plans in int8 walk evaluations).
    pub fn search<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: Option<Filter<'_>>,
    ) -> Result<Vec<Neighbor>, AnnError> {
        self.search_with_plan(store, query, k, ef, filter)
            .map(|(r, _)| r)
    }

    /// Like [`Hnsw::search`], also reporting which plan answered.
    pub fn search_with_plan<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: Option<Filter<'_>>,
    ) -> Result<(Vec<Neighbor>, SearchPlan), AnnError> {
        self.check_store(store)?;
        if query.len() != self.dim {
            return Err(AnnError::DimensionMismatch {
                expected: self.dim,
                got: query.len(),
            });
        }
        if k == 0 || self.live == 0 {
            return Ok((Vec::new(), SearchPlan::Graph));
        }
        let metric = self.params.metric;
        let q = metric.prepare_query(query);
        // Neither more results nor a longer candidate list than the index has rows.
        let k = k.min(self.live);
        let ef = ef.max(k).min(self.levels.len());
        let deleted = &self.deleted;
        let has_deleted = !deleted.is_empty();
        // Plan: estimate how many rows the filter allows and what an exact scan of them costs, in
        // evaluations of the walk this index runs (f32 or int8), so both plans are costed alike.
        let (allowed_est, scan_cost) = match filter {
            None => (self.live, usize::MAX),
            Some(Filter::Ids(set)) => {
                let n = set.len();
                (n, self.scan_cost(n, k, ef))
            }
            Some(Filter::Predicate(p)) => {
                let est = self.estimate_allowed(p);
                // A predicate scan must test every slot; count that at 1/8 of a distance.
                (est, self.scan_cost(est, k, ef) + self.levels.len() / 8)
            }
        };
        // Selective filters walk with two-hop routing (1.5 to 2 times an unfiltered walk's cost of
        // about WALK_EVALS_PER_EF * ef, see `two_hop_cost_factor`); others walk normally, with a list
        // shrunk by the selectivity (below).
        // Scan the allowed rows instead whenever that is estimated to be cheaper, and fall back to
        // the scan if a walk overruns the scan's cost.
        let selectivity = allowed_est as f64 / self.live.max(1) as f64;
        let two_hop = filter.is_some() && selectivity < TWO_HOP_BELOW;
        let mut budget = scan_cost;
        if filter.is_some() {
            // A plain walk shrinks its list by the selectivity (below), which keeps its cost near
            // an unfiltered walk's (measured 0.85-0.95x of it at 50 %, int8 and f32 alike).
            let unfiltered = (WALK_EVALS_PER_EF * ef) as f64;
            let walk_estimate = if two_hop {
                unfiltered * self.two_hop_cost_factor(selectivity)
            } else {
                unfiltered
            };
            if scan_cost as f64 <= walk_estimate {
                return Ok((
                    self.exact_allowed(store, &q, k, ef, allowed_est, filter),
                    SearchPlan::ExactScan,
                ));
            }
            // Only a walk that overruns its estimate several times over (a filter rejecting much
            // of the query's neighbourhood) is cut off for the scan: one merely past the scan's
            // estimate is left to finish, which costs less than paying for both.
            budget = budget.max((walk_estimate * WALK_OVERRUN) as usize);
        }
        // A plain filtered walk keeps only allowed rows, and `ef` allowed results span about
        // `ef / selectivity` rows of the unfiltered ranking; shrink `ef` by the selectivity so the
        // walk costs (and finds) about what an unfiltered walk at `ef` does.
        let asked = ef;
        let ef = if filter.is_none() {
            ef
        } else if two_hop {
            two_hop_ef(ef, k, selectivity)
        } else {
            ((ef as f64 * selectivity).ceil() as usize).max(k)
        };
        // A plain filtered walk whose filter rejects rows near the query (more than its
        // selectivity predicts) may shrink its list to half the asked `ef` (see `search_layer`).
        let ef_floor = if filter.is_some() && !two_hop {
            (asked * 3 / 4).min(ef).max(k)
        } else {
            ef
        };

        // One monomorphic walk per filter kind, so the per-row `allowed` test inlines.
        let live = |id: u32| !has_deleted || !deleted.contains(id);
        let res = match filter {
            None => self.walk_rescored(store, &q, k, ef, &live, budget, false, ef),
            Some(Filter::Ids(set)) => self.walk_rescored(
                store,
                &q,
                k,
                ef,
                &|id: u32| set.contains(id) && live(id),
                budget,
                two_hop,
                ef_floor,
            ),
            Some(Filter::Predicate(p)) => self.walk_rescored(
                store,
                &q,
                k,
                ef,
                &|id: u32| live(id) && p(id),
                budget,
                two_hop,
                ef_floor,
            ),
        };
        match res {
            Some(v) => Ok((v, SearchPlan::Graph)),
            None => Ok((
                self.exact_allowed(store, &q, k, asked, allowed_est, filter),
                SearchPlan::ExactScan,
            )),
        }
    }

    /// Level-0 walk with f32 distances, or with int8 distances and an f32 re-score of the best
    /// candidates; `None` when the walk exceeded `budget` distance evaluations.
    #[allow(clippy::too_many_arguments)]
    fn walk_rescored<S: VectorStore + ?Sized, A: Fn(u32) -> bool>(
        &self,
        store: &S,
        q: &[f32],
        k: usize,
        ef: usize,
        allowed: &A,
        budget: usize,
        two_hop: bool,
        ef_floor: usize,
    ) -> Option<Vec<Neighbor>> {
        let metric = self.params.metric;
        match &self.quant {
            None => {
                let o = F32Oracle {
                    store,
                    query: q,
                    metric,
                };
                self.walk(&o, ef, allowed, budget, two_hop, ef_floor)
                    .map(|h| {
                        let mut v = h.into_vec();
                        v.sort();
                        v.truncate(k);
                        v
                    })
            }
            Some(quant) => {
                let o = I8Oracle {
                    quant,
                    query: quant.quantize_query(q),
                    metric,
                };
                self.walk(&o, ef, allowed, budget, two_hop, ef_floor)
                    .map(|h| {
                        // Re-score the best int8 candidates exactly (the pool is wide enough that
                        // int8 ranking noise does not push true neighbours out of it).
                        let mut pool = h.into_sorted_vec();
                        pool.truncate(rescore_pool(k, ef));
                        rescore(store, q, metric, &mut pool);
                        pool.truncate(k);
                        pool
                    })
            }
        }
    }

    fn walk<O: Oracle, A: Fn(u32) -> bool>(
        &self,
        o: &O,
        ef: usize,
        allowed: &A,
        budget: usize,
        two_hop: bool,
        ef_floor: usize,
    ) -> Option<BinaryHeap<Neighbor>> {
        let ep = self.descend(o, 0)?;
        self.search_layer(o, &[ep], ef, 0, allowed, budget, two_hop, ef_floor)
    }

    /// Exact scan of the live rows the filter allows (about `rows` of them): f32 distances, or, on an
    /// int8 index when cheaper, int8 distances with the best [`scan_rescore_pool`]`(k, ef)` rows
    /// re-scored from the store's f32 vectors.
    pub(crate) fn exact_allowed<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        q: &[f32],
        k: usize,
        ef: usize,
        rows: usize,
        filter: Option<Filter<'_>>,
    ) -> Vec<Neighbor> {
        let slots = self.levels.len() as u32;
        let deleted = &self.deleted;
        let has_deleted = !deleted.is_empty();
        // Every slot holds a live row (the usual case): no per-id check.
        let all_live = self.live == slots as usize;
        let live =
            |id: u32| all_live || (self.is_present(id) && (!has_deleted || !deleted.contains(id)));
        let mut ids = Vec::with_capacity(rows);
        match filter {
            // Every slot live: no per-id check at all.
            Some(Filter::Ids(set)) if all_live => set_ids(set, slots, |_| true, &mut ids),
            Some(Filter::Ids(set)) => set_ids(set, slots, live, &mut ids),
            Some(Filter::Predicate(p)) => ids.extend((0..slots).filter(|&id| live(id) && p(id))),
            None => ids.extend((0..slots).filter(|&id| live(id))),
        }
        self.scan_rows(store, q, k, ef, ids)
    }

    /// Scores every row of `ids` in f32, or with the int8 copy as described
    /// in [`Hnsw::exact_allowed`].
    fn scan_rows<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        q: &[f32],
        k: usize,
        ef: usize,
        ids: Vec<u32>,
    ) -> Vec<Neighbor> {
        let metric = self.params.metric;
        // The int8 scan pays for quantising the query and re-scoring its pool: worth it only when
        // it beats scoring the allowed rows in f32 directly.
        let rows = ids.len();
        let int8 = self
            .int8_scan_cost(rows, k, ef)
            .is_some_and(|c| c < self.scan_rows_cost(rows));
        let Some(quant) = self.quant.as_ref().filter(|_| int8) else {
            // No int8 copy: large sets go through the sign codes first, then f32 for the rows left.
            if self.f32_sign_pool(rows, k).is_some() {
                let signs = self.f32_signs.get_or_build(store, self.levels.len());
                let pass = self.sign_pass(store, signs, q, k, ids);
                let found = scan_ids(store, q, k, metric, pass.candidates.into_iter());
                return with_seeds(found, pass.seeds, k);
            }
            return scan_ids(store, q, k, metric, ids.into_iter());
        };
        // Large sets: a first pass over the rows' sign codes (a sixth of the int8 bytes) leaves
        // the rows its bounds cannot rule out, and only those are scored in int8.
        let signs = self
            .int8_sign_pool(rows, k)
            .and_then(|_| quant.sign_codes());
        let (ids, seeds) = match signs {
            Some(signs) => {
                let pass = self.sign_pass(store, signs, q, k, ids);
                (pass.candidates, pass.seeds)
            }
            None => (ids, Vec::new()),
        };
        let qq = quant.quantize_query(q);
        let mut top = TopK::new(scan_rescore_pool(k, ef));
        // Groups of `I8_SCAN_AHEAD` rows, one kernel call each (four rows per pass over the query's
        // codes inside it); each group's rows are requested while the group before it is scored, so
        // their memory latency overlaps that scoring.
        let fetch = |group: &[u32]| group.iter().for_each(|&id| quant.prefetch_row(id));
        let mut groups = ids.chunks(I8_SCAN_AHEAD).peekable();
        if let Some(first) = groups.peek() {
            fetch(first);
        }
        while let Some(group) = groups.next() {
            if let Some(next) = groups.peek() {
                fetch(next);
            }
            let mut d = [0f32; I8_SCAN_AHEAD];
            quant.distances(metric, &qq, group, &mut d[..group.len()]);
            let worst = top.threshold();
            for (&id, &dist) in group.iter().zip(&d) {
                if dist < worst {
                    top.push(id, dist);
                }
            }
        }
        let mut pool = top.into_sorted();
        rescore(store, q, metric, &mut pool);
        // The seeds were scored in f32 already (and are not among `ids`).
        with_seeds(pool, seeds, k)
    }

    /// A sign-code pass over `ids` (in id order) for a top-`k` search: every row's distance is
    /// estimated; the [`SIGN_SEEDS_PER_RESULT`]` * k` best estimates are scored in f32 (the seeds),
    /// and the rows left are those whose error bound reaches below the seeds' `k`-th distance, in id
    /// order (so the int8 pass reads them in memory order). A row of the exact top `k` is a seed or
    /// left, unless its estimate erred by more than the bound allows (see [`crate::sign`]).
    pub(crate) fn sign_pass<S: VectorStore + ?Sized>(
        &self,
        store: &S,
        signs: &SignCodes,
        q: &[f32],
        k: usize,
        mut ids: Vec<u32>,
    ) -> SignPass {
        let metric = self.params.metric;
        let sq = signs.prepare(q);
        let kernels = crate::kernels::active();
        let mut best = TopKBuffer::new(k.saturating_mul(SIGN_SEEDS_PER_RESULT).max(1));
        // Each row's least distance, by position in `ids`; `best` holds positions too.
        let mut low = vec![0f32; ids.len()];
        // Blocks of rows: one kernel call sums each block's rows, then the estimates are offered.
        let (mut sums, mut est) = ([0u32; ESTIMATE_BLOCK], [0f32; ESTIMATE_BLOCK]);
        for (b, (block, low)) in ids
            .chunks(ESTIMATE_BLOCK)
            .zip(low.chunks_mut(ESTIMATE_BLOCK))
            .enumerate()
        {
            let n = block.len();
            let e = &mut est[..n];
            signs.estimates(kernels, metric, &sq, block, &mut sums[..n], e, low);
            // Once the bound has tightened few rows pass it: a group whose least estimate misses
            // it is skipped whole (one vectorised count), and the rest offer their passing rows.
            for (g, group) in e.chunks(PASS_GROUP).enumerate() {
                let bound = best.threshold();
                if group.iter().map(|&d| u32::from(d < bound)).sum::<u32>() != 0 {
                    let first = b * ESTIMATE_BLOCK + g * PASS_GROUP;
                    for (j, &d) in group.iter().enumerate() {
                        if d < best.threshold() {
                            best.push((first + j) as u32, d);
                        }
                    }
                }
            }
        }
        let mut seeds = best.into_unsorted();
        for n in &mut seeds {
            let pos = n.id as usize;
            n.id = ids[pos];
            // Scored below: not left for the int8 pass.
            low[pos] = f32::INFINITY;
        }
        rescore(store, q, metric, &mut seeds);
        let reach = k
            .checked_sub(1)
            .and_then(|i| seeds.get(i))
            .map_or(f32::INFINITY, |n| n.distance);
        // The rows whose bound reaches below it (a bound that is not a number reaches anywhere),
        // gathered without a branch per row; groups of rows with none of them (most: the pass leaves
        // a few rows in a hundred) are skipped whole.
        let reaches = |l: f32| (l < reach) | l.is_nan();
        let mut m = 0;
        for (g, group) in low.chunks(PASS_GROUP).enumerate() {
            if group.iter().map(|&l| u32::from(reaches(l))).sum::<u32>() != 0 {
                for (j, &l) in group.iter().enumerate() {
                    let i = g * PASS_GROUP + j;
                    ids[m] = ids[i];
                    m += usize::from(reaches(l));
                }
            }
        }
        ids.truncate(m);
        let candidates = ids;
        SignPass { candidates, seeds }
    }

    /// On an int8 index whose copy keeps sign codes, how many of `rows` allowed rows a sign-code
    /// pass is expected to leave for int8 scoring ([`sign_pool`]), if the pass costs less than scoring
    /// them all in int8 (see [`SIGN_ROW_PCT`]).
    pub(crate) fn int8_sign_pool(&self, rows: usize, k: usize) -> Option<usize> {
        if !self.quant.as_ref()?.keeps_signs() {
            return None;
        }
        let keep = sign_pool(k, self.dim)?;
        (rows >= keep.saturating_mul(SIGN_MIN_ROWS_PER_LEFT)
            && Self::sign_pass_cost(rows, k, keep) < rows.saturating_mul(I8_SCAN_ROW_PCT) / 100)
            .then_some(keep)
    }

    /// On an index without an int8 copy (of at least [`SIGN_CODES_MIN_ROWS`] slots), how many of
    /// `rows` allowed rows a sign-code pass is expected to leave for f32 scoring, if that costs less
    /// than scoring them all in f32 ([`Hnsw::scan_rows_cost`]).
    pub(crate) fn f32_sign_pool(&self, rows: usize, k: usize) -> Option<usize> {
        if self.quant.is_some() || self.levels.len() < SIGN_CODES_MIN_ROWS {
            return None;
        }
        let keep = sign_pool(k, self.dim)?;
        (rows >= keep.saturating_mul(SIGN_MIN_ROWS_PER_LEFT)
            && Self::f32_sign_pass_cost(rows, k, keep) < self.scan_rows_cost(rows))
        .then_some(keep)
    }

    /// Cost of a sign pass over `rows` rows plus the f32 scoring of its seeds and of the `keep` it
    /// leaves, in the units of [`Hnsw::scan_rows_cost`] (see [`F32_SIGN_ROW_PCT`]).
    fn f32_sign_pass_cost(rows: usize, k: usize, keep: usize) -> usize {
        (rows.saturating_mul(sign_row_cost(F32_SIGN_ROW_PCT_PLANES, F32_SIGN_ROW_PCT)) / 100)
            .saturating_add(
                keep.saturating_add(k.saturating_mul(SIGN_SEEDS_PER_RESULT))
                    .saturating_mul(F32_LEFT_ROW_COST),
            )
    }

    /// Cost of the sign pass over `rows` rows, the f32 scoring of its seeds and the int8 scoring of
    /// the `keep` it leaves, in int8 walk evaluations.
    fn sign_pass_cost(rows: usize, k: usize, keep: usize) -> usize {
        (rows.saturating_mul(sign_row_cost(SIGN_ROW_PCT_PLANES, SIGN_ROW_PCT)) / 100)
            .saturating_add(keep)
            .saturating_add(
                k.saturating_mul(SIGN_SEEDS_PER_RESULT)
                    .saturating_mul(F32_ROW_IN_I8_EVALS),
            )
    }

    /// Cost of a two-hop walk relative to an unfiltered walk at the same `ef`, in the units of
    /// [`Hnsw::scan_cost`], for a filter allowing `selectivity` of the rows. On an int8 index it is
    /// the measured cost (2026-12-06, `ann-bench run`): 1.5–1.6x the unfiltered walk at 10 % on the
    /// clustered synthetic 100K set, and 1.9–2.1x from 15 % to 25 % on every set (synthetic 10K and
    /// 100K, real 100K), where the walk reads the link lists of four rejected rows in five. The f32
    /// figure is 2 because f32 scans are costed at a full walk evaluation a row (about twice their real
    /// cost), which keeps the f32 plans as they were measured.
    fn two_hop_cost_factor(&self, selectivity: f64) -> f64 {
        if self.quant.is_none() {
            2.0
        } else if selectivity < TWO_HOP_DEARER_FROM {
            1.5
        } else {
            2.0
        }
    }

    /// Cost of an exact scan of `rows` allowed rows for a top-`k` search at `ef`, in evaluations of
    /// this index's walk: the cheaper of the f32 scan ([`Hnsw::scan_rows_cost`]: an f32 row costs
    /// about one int8 walk evaluation too, measured 51 ns against 52 ns; on a large index without an
    /// int8 copy, a sign-code pass first when that is cheaper) and, on an int8 index, the int8 scan
    /// ([`Hnsw::int8_scan_cost`]).
    pub(crate) fn scan_cost(&self, rows: usize, k: usize, ef: usize) -> usize {
        let f32_cost = match self.f32_sign_pool(rows, k) {
            Some(keep) => Self::f32_sign_pass_cost(rows, k, keep),
            None => self.scan_rows_cost(rows),
        };
        self.int8_scan_cost(rows, k, ef)
            .map_or(f32_cost, |c| c.min(f32_cost))
    }

    /// Cost of an int8 scan of `rows` rows (`None` without an int8 copy): [`I8_SCAN_ROW_PCT`] of an
    /// int8 walk evaluation a row, plus quantising the query and the f32 re-score of the pool. Small
    /// sets are cheaper to scan in f32 directly: below about 4 times the pool plus 24 rows (120 rows
    /// at ef 24, 144 from ef 60 on).
    pub(crate) fn int8_scan_cost(&self, rows: usize, k: usize, ef: usize) -> Option<usize> {
        self.quant.as_ref()?;
        let first_pass = match self.int8_sign_pool(rows, k) {
            Some(keep) => Self::sign_pass_cost(rows, k, keep),
            None => rows.saturating_mul(I8_SCAN_ROW_PCT) / 100,
        };
        Some(
            first_pass
                .saturating_add(I8_QUERY_EVALS)
                .saturating_add(scan_rescore_pool(k, ef).min(rows) * F32_ROW_IN_I8_EVALS),
        )
    }

    /// Cost of scoring `rows` scattered store rows, in walk distance evaluations: rows whose f32
    /// vectors together exceed [`SCAN_CACHED_BYTES`] mostly come from memory, not cache, and cost
    /// about twice as much each (measured: 1,000 rows of 1.5 KB at 53 ns a row, 10,000 at 126 ns).
    pub(crate) fn scan_rows_cost(&self, rows: usize) -> usize {
        if rows.saturating_mul(self.dim * 4) > SCAN_CACHED_BYTES {
            rows.saturating_mul(2)
        } else {
            rows
        }
    }

    /// Estimates how many live rows a predicate allows by testing an evenly spaced sample.
    fn estimate_allowed(&self, p: &(dyn Fn(u32) -> bool + Sync)) -> usize {
        let n = self.levels.len();
        let samples = n.min(256);
        if samples == 0 {
            return 0;
        }
        let step = n / samples;
        let hits = (0..samples).filter(|&i| p((i * step) as u32)).count();
        // Round up so a filter that allows a few rows is not estimated at zero.
        (hits * self.live)
            .div_ceil(samples)
            .max(usize::from(hits > 0))
    }
}
