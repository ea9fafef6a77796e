//! Vector search over the store's embeddings: an exact SIMD scan below a size threshold, an HNSW graph (int8
//! traversal, exact f32 re-scoring) above it. The index never copies the f32 vectors: it reads the store's
//! [`VectorTable`]. Saves never wait for the graph: rows it has not seen yet (new ones, and ones whose
//! vector changed) are searched exactly, and a background job folds them in once there are
//! [`CHEAP_TAIL`] of them, working on a snapshot of the table.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use clawhdf5_ann::{exact_top_k, Filter, Hnsw, HnswParams, Metric, Neighbor, Row, VectorStore};

/// Rows the graph has not seen that start a background fold (and the most that opening a store folds in
/// on the spot).
pub const CHEAP_TAIL: usize = 1024;

/// Rows a background job inserts between two checks of its cancel flag.
const JOB_STEP: usize = 256;

use crate::config::StoreConfig;
use crate::error::{MemoryError, Result};
use crate::vectors::VectorTable;

impl VectorStore for VectorTable {
    fn dim(&self) -> usize {
        VectorTable::dim(self)
    }

    fn len(&self) -> usize {
        self.rows()
    }

    fn row(&self, id: u32) -> Row<'_> {
        VectorTable::row(self, id as usize)
    }
}

/// Background work on the vector graph since the store was opened ([`crate::Store::index_stats`]): the builds
/// and folds that finished and were taken in (a job cancelled or overtaken by a synchronous build is not
/// counted, nor is [`crate::Store::build_index`]'s own work).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Background jobs taken in.
    pub jobs: u64,
    /// Rows they placed in the graph: new rows, and changed rows placed again.
    pub rows: u64,
    /// CPU time their threads spent.
    pub cpu: Duration,
}

impl IndexStats {
    /// What happened between `earlier` (read from the same store) and these.
    pub fn since(&self, earlier: &IndexStats) -> IndexStats {
        IndexStats {
            jobs: self.jobs.saturating_sub(earlier.jobs),
            rows: self.rows.saturating_sub(earlier.rows),
            cpu: self.cpu.saturating_sub(earlier.cpu),
        }
    }
}

/// What a background job's thread hands back: its graph and the CPU time its pool's threads spent.
type JobOutput = std::result::Result<(Hnsw, Duration), String>;

/// CPU time the calling thread has spent since it started (zero where the clock cannot be read).
fn thread_cpu() -> Duration {
    cpu_time::ThreadTime::try_now().map_or(Duration::ZERO, |t| t.as_duration())
}

/// A background build or fold of the graph.
struct Job {
    handle: Option<JoinHandle<JobOutput>>,
    cancel: Arc<AtomicBool>,
    /// Rows forgotten while it ran (deleted from its graph when it lands).
    deleted: Vec<u32>,
    /// Changed rows it re-inserts, with the change count it saw.
    reinserted: Vec<(u32, u64)>,
    /// Rows of the snapshot it works on: its graph places every row below this.
    upto: usize,
    /// Rows it places (new ones and re-inserted ones).
    placing: usize,
}

impl Drop for Job {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Release);
    }
}

/// The vector index of a store.
#[derive(Default)]
pub struct VectorIndex {
    hnsw: Option<Arc<Hnsw>>,
    /// Rows whose vector changed since the graph placed them, with a change count: the graph's answers skip
    /// them, they are searched exactly, and the next fold re-inserts them.
    dirty: crate::FastMap<u32, u64>,
    changes: u64,
    job: Option<Job>,
    stats: IndexStats,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("hnsw", &self.hnsw.as_ref().map(|h| h.len()))
            .field("dirty", &self.dirty.len())
            .field("job", &self.job.is_some())
            .finish()
    }
}

fn ann_err(e: clawhdf5_ann::AnnError) -> MemoryError {
    MemoryError::Embedding(format!("vector index: {e}"))
}

fn params(config: &StoreConfig) -> HnswParams {
    HnswParams {
        m: config.hnsw_m.clamp(2, 64) as usize,
        ef_construction: config.hnsw_ef_construction.max(16) as usize,
        metric: Metric::Cosine,
        quantize: true,
        ..HnswParams::default()
    }
}

/// Threads of a background job: all but one core, so saves keep one.
fn job_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
}

/// Put the calling thread under idle scheduling (Linux `SCHED_IDLE`; elsewhere nothing changes): a background
/// fold then runs on cores nothing else wants, and any save, search or fsync that wakes up takes the core at
/// once instead of queueing behind it. Under a machine saturated by other work it still gets a sliver of
/// time, so it finishes; meanwhile searches scan the rows it has not placed yet exactly.
fn run_in_background() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
        // Best effort: if the policy cannot be set, the fold runs at normal priority.
        let _ = thread_priority::set_thread_priority_and_policy(
            thread_priority::thread_native_id(),
            ThreadPriority::Min,
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
        );
    }
}

impl VectorIndex {
    /// Restore a persisted graph; `None` (rebuilt on demand) when it is missing, stale or unreadable.
    pub fn load(bytes: Option<&[u8]>, generation: u64, table: &VectorTable) -> VectorIndex {
        Self::attach(bytes.and_then(|b| Self::decode(b, generation)), table)
    }

    /// The first half of [`Self::load`], which needs no vectors (so it can run while they are read): the
    /// graph, or `None` when it is stale or unreadable.
    pub fn decode(bytes: &[u8], generation: u64) -> Option<Hnsw> {
        Hnsw::from_bytes(bytes, generation).ok()
    }

    /// The second half of [`Self::load`]: a decoded graph checked against the store's vectors and given its
    /// int8 copy; a graph that does not fit them is dropped (rebuilt on demand).
    pub fn attach(graph: Option<Hnsw>, table: &VectorTable) -> VectorIndex {
        let hnsw = graph.and_then(|mut h| {
            if h.dim() != table.dim() || h.slots() > table.rows() {
                return None;
            }
            // The persisted graph omits the int8 copy; quantise again from the store's vectors.
            h.set_quantized(table, true).ok()?;
            Some(Arc::new(h))
        });
        VectorIndex {
            hnsw,
            ..VectorIndex::default()
        }
    }

    /// The graph, if one is built.
    pub fn graph(&self) -> Option<&Hnsw> {
        self.hnsw.as_deref()
    }

    /// Background work taken in since the index was loaded or built.
    pub fn stats(&self) -> IndexStats {
        self.stats
    }

    /// Whether a background job is building or folding the graph.
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Whether the graph places every vector where it is now (no changed row waits for re-insertion).
    pub fn is_current(&self) -> bool {
        self.dirty.is_empty()
    }

    /// Serialise the graph (without the int8 copy, which is rebuilt on load) for a checkpoint; `None` when
    /// there is none or changed rows still wait to be re-inserted.
    pub fn persist(&self, generation: u64) -> Option<Vec<u8>> {
        if !self.dirty.is_empty() {
            return None;
        }
        Some(self.hnsw.as_deref()?.graph_bytes(generation))
    }

    /// A row was forgotten.
    pub fn deleted(&mut self, row: u32) {
        if let Some(job) = self.job.as_mut() {
            job.deleted.push(row);
        }
        // While a job shares the graph the row stays in it: searches filter forgotten rows anyway.
        if let Some(h) = self.hnsw.as_mut().and_then(Arc::get_mut) {
            h.delete(row);
        }
    }

    /// A row's vector changed in place.
    pub fn changed(&mut self, row: u32) {
        let placed = self.hnsw.as_ref().map_or(0, |h| h.slots());
        // A running job places rows up to its snapshot's end with the vectors it saw: a change to one of
        // those must be re-inserted after it lands too.
        let placing = self.job.as_ref().map_or(0, |j| j.upto);
        if (row as usize) < placed.max(placing) {
            self.changes += 1;
            self.dirty.insert(row, self.changes);
        }
    }

    /// Rows the graph does not place where they are (saved since it was built, or changed since): they are
    /// searched exactly until a fold takes them in.
    pub fn tail(&self, table: &VectorTable) -> usize {
        match &self.hnsw {
            Some(h) => {
                let slots = h.slots();
                let changed = self.dirty.keys().filter(|&&r| (r as usize) < slots).count();
                table.rows().saturating_sub(slots) + changed
            }
            None => 0,
        }
    }

    /// Rows searched exactly because no graph places them: [`Self::tail`], or every row while a background
    /// job builds the first graph.
    pub fn unplaced(&self, table: &VectorTable) -> usize {
        match (&self.hnsw, &self.job) {
            (None, Some(_)) => table.rows(),
            _ => self.tail(table),
        }
    }

    /// Whether the store is big enough to want a graph.
    fn wanted(table: &VectorTable, config: &StoreConfig) -> bool {
        table.dim() > 0 && table.rows() >= config.exact_search_threshold as usize
    }

    /// Take in a finished background job, if there is one (never waits).
    pub fn poll(&mut self, table: &VectorTable, live: &dyn Fn(u32) -> bool) {
        let finished = |j: &Job| j.handle.as_ref().is_none_or(|h| h.is_finished());
        if self.job.as_ref().is_some_and(finished) {
            self.finish(table, live);
        }
    }

    /// Wait for the background job, if any, and take in its graph. A job that failed leaves the graph as it
    /// was (the rows it would have added stay searched exactly, and the next fold tries again).
    pub fn finish(&mut self, table: &VectorTable, live: &dyn Fn(u32) -> bool) {
        let Some(mut job) = self.job.take() else {
            return;
        };
        let deleted = std::mem::take(&mut job.deleted);
        let reinserted = std::mem::take(&mut job.reinserted);
        // Joined before the job is dropped (dropping it raises the cancel flag).
        let done = job
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .and_then(|r| r.ok());
        let placing = job.placing;
        drop(job);
        let Some((mut h, cpu)) = done else {
            self.delete_from_graph(deleted);
            return;
        };
        self.stats.jobs += 1;
        self.stats.rows += placing as u64;
        self.stats.cpu += cpu;
        let old_slots = self.hnsw.as_ref().map_or(0, |g| g.slots());
        let mut check: Vec<u32> = (old_slots as u32..h.slots() as u32).collect();
        check.extend(reinserted.iter().map(|&(row, _)| row));
        check.extend(deleted);
        for row in check {
            if !table.has(row as usize) || !live(row) {
                h.delete(row);
            }
        }
        for (row, seen) in reinserted {
            if self.dirty.get(&row) == Some(&seen) {
                self.dirty.remove(&row);
            }
        }
        self.hnsw = Some(Arc::new(h));
    }

    /// Start a background job when the graph is missing or [`CHEAP_TAIL`] rows wait for it, unless one is
    /// running. It works on a snapshot of `table`; [`Self::poll`] takes its result in.
    pub fn start_background(&mut self, table: &VectorTable, config: &StoreConfig) {
        if self.job.is_some() {
            return;
        }
        if !Self::wanted(table, config) {
            self.hnsw = None;
            self.dirty.clear();
            return;
        }
        if self.hnsw.is_some() && self.tail(table) < CHEAP_TAIL {
            return;
        }
        let snapshot = table.clone();
        let upto = snapshot.rows();
        let base = self.hnsw.clone();
        let start = base.as_ref().map_or(0, |h| h.slots());
        let reinserted: Vec<(u32, u64)> = self.dirty.iter().map(|(&r, &c)| (r, c)).collect();
        let rows: Vec<u32> = reinserted.iter().map(|&(r, _)| r).collect();
        let p = params(config);
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&cancel);
        let spawned = std::thread::Builder::new()
            .name("clawhdf5-index".into())
            .spawn(move || -> JobOutput {
                run_in_background();
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(job_threads())
                    .start_handler(|_| run_in_background())
                    .build()
                    .map_err(|e| e.to_string())?;
                let graph = pool.install(|| -> std::result::Result<Hnsw, String> {
                    let mut h = match base {
                        Some(g) => Arc::unwrap_or_clone(g),
                        None => Hnsw::new(snapshot.dim(), p).map_err(|e| e.to_string())?,
                    };
                    for &row in &rows {
                        h.delete(row);
                    }
                    let mut ids = rows;
                    ids.extend(start as u32..snapshot.rows() as u32);
                    for step in ids.chunks(JOB_STEP) {
                        if stop.load(Ordering::Acquire) {
                            return Err("cancelled".into());
                        }
                        h.insert_many(step, &snapshot).map_err(|e| e.to_string())?;
                    }
                    Ok(h)
                })?;
                // The pool's threads were started for this job: their CPU time is the job's.
                let cpu = pool.broadcast(|_| thread_cpu()).into_iter().sum();
                Ok((graph, cpu))
            });
        if let Ok(handle) = spawned {
            self.job = Some(Job {
                handle: Some(handle),
                cancel,
                deleted: Vec::new(),
                placing: reinserted.len() + upto.saturating_sub(start),
                reinserted,
                upto,
            });
        }
    }

    /// Cancel a running background job without waiting for it: its thread runs at idle priority, so on a
    /// busy machine a wait could last seconds. Its rows stay for the caller to fold; rows forgotten while it
    /// ran leave the graph now. The thread stops at its next step and drops its copy of the graph.
    fn abandon(&mut self) {
        let Some(mut job) = self.job.take() else {
            return;
        };
        // Dropping the job raises its cancel flag; the handle is detached, not joined.
        let deleted = std::mem::take(&mut job.deleted);
        drop(job);
        self.delete_from_graph(deleted);
    }

    /// Remove `rows` (forgotten while a job that did not land ran) from the current graph, if any.
    fn delete_from_graph(&mut self, rows: Vec<u32>) {
        if let Some(g) = self.hnsw.as_mut() {
            let g = Arc::make_mut(g);
            for row in rows {
                g.delete(row);
            }
        }
    }

    /// Bring the graph fully up to date now, on every core: take in a finished background job (a running
    /// one is cancelled, not waited for), then build the graph or fold in every row it does not place yet.
    pub fn ensure(
        &mut self,
        table: &VectorTable,
        config: &StoreConfig,
        live: &dyn Fn(u32) -> bool,
    ) -> Result<()> {
        self.poll(table, live);
        self.abandon();
        if !Self::wanted(table, config) {
            self.hnsw = None;
            self.dirty.clear();
            return Ok(());
        }
        if let Some(arc) = self.hnsw.as_mut() {
            let tail = table.rows().saturating_sub(arc.slots()) + self.dirty.len();
            if tail == 0 {
                return Ok(());
            }
            let h = Arc::make_mut(arc);
            let mut ids: Vec<u32> = self.dirty.keys().copied().collect();
            ids.sort_unstable();
            for &row in &ids {
                h.delete(row);
            }
            ids.extend(h.slots() as u32..table.rows() as u32);
            h.insert_many(&ids, table).map_err(ann_err)?;
            for id in ids {
                if !table.has(id as usize) || !live(id) {
                    h.delete(id);
                }
            }
            self.dirty.clear();
            return Ok(());
        }
        let mut h = Hnsw::build(table, params(config)).map_err(ann_err)?;
        for row in 0..table.rows() as u32 {
            if !table.has(row as usize) || !live(row) {
                h.delete(row);
            }
        }
        self.hnsw = Some(Arc::new(h));
        self.dirty.clear();
        Ok(())
    }

    /// The `k` rows most similar to `query` (unit length) among those `allow` accepts, with cosine similarity,
    /// best first.
    pub fn search(
        &self,
        table: &VectorTable,
        query: &[f32],
        k: usize,
        ef: usize,
        allow: &(dyn Fn(u32) -> bool + Sync),
    ) -> Result<Vec<(u32, f32)>> {
        let with_vector = |row: u32| table.has(row as usize) && allow(row);
        let hits = match &self.hnsw {
            Some(h) => {
                let placed = |row: u32| with_vector(row) && !self.dirty.contains_key(&row);
                let pred: &(dyn Fn(u32) -> bool + Sync) = if self.dirty.is_empty() {
                    &with_vector
                } else {
                    &placed
                };
                let mut hits = h
                    .search(table, query, k, ef.max(k), Some(Filter::Predicate(pred)))
                    .map_err(ann_err)?;
                // Rows the graph does not place yet: scanned exactly and merged.
                // (Changed rows past the graph's end are in that tail already.)
                let slots = h.slots();
                let unplaced = (slots..table.rows()).chain(
                    self.dirty
                        .keys()
                        .map(|&r| r as usize)
                        .filter(move |&r| r < slots),
                );
                for row in unplaced {
                    if with_vector(row as u32) {
                        hits.push(Neighbor {
                            id: row as u32,
                            distance: Metric::Cosine.distance_to(query, table.row(row)),
                        });
                    }
                }
                hits.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.id.cmp(&b.id)));
                hits.truncate(k);
                hits
            }
            None => exact_top_k(
                table,
                query,
                k,
                Metric::Cosine,
                Some(Filter::Predicate(&with_vector)),
            )
            .map_err(ann_err)?,
        };
        Ok(hits.into_iter().map(|n| (n.id, 1.0 - n.distance)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn background_jobs_run_under_idle_scheduling() {
        // Field 41 of /proc/thread-self/stat is the scheduling policy (5 = SCHED_IDLE).
        let policy = || {
            let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
            let after_name = stat.rsplit(')').next().unwrap();
            after_name.split_whitespace().nth(38).unwrap().to_string()
        };
        let (before, after) = std::thread::spawn(move || {
            let before = policy();
            run_in_background();
            (before, policy())
        })
        .join()
        .unwrap();
        assert_eq!((before.as_str(), after.as_str()), ("0", "5"));
    }

    fn v(i: usize) -> Vec<f32> {
        let mut x = (i as u64 + 7).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut out: Vec<f32> = (0..16)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        crate::vectors::normalize(&mut out);
        out
    }

    fn top(ix: &VectorIndex, t: &VectorTable, q: &[f32]) -> u32 {
        ix.search(t, q, 1, 32, &|_| true).unwrap()[0].0
    }

    #[test]
    fn a_row_changed_while_a_job_places_it_is_found_by_its_new_vector() {
        let config = StoreConfig {
            exact_search_threshold: 64,
            ..StoreConfig::default()
        };
        let live = |_: u32| true;
        let mut t = VectorTable::new(16);
        for i in 0..200 {
            t.push(Some(&v(i)));
        }
        let mut ix = VectorIndex::default();
        ix.ensure(&t, &config, &live).unwrap();
        for i in 200..200 + CHEAP_TAIL + 10 {
            t.push(Some(&v(i)));
        }
        ix.start_background(&t, &config);
        assert!(ix.busy());
        // Row 500 is in the job's snapshot with its old vector; change it now.
        let fresh = v(99_999);
        t.set(500, Some(&fresh));
        ix.changed(500);
        assert_eq!(top(&ix, &t, &fresh), 500);
        ix.finish(&t, &live);
        assert!(!ix.busy());
        // The job placed the rows past the graph's end and spent CPU doing so.
        let landed = ix.stats();
        assert_eq!((landed.jobs, landed.rows), (1, CHEAP_TAIL as u64 + 10));
        assert!(landed.cpu > Duration::ZERO);
        assert_eq!(landed.since(&landed), IndexStats::default());
        assert_eq!(ix.graph().map(|h| h.slots()), Some(t.rows()));
        assert!(!ix.is_current(), "the change still waits for re-insertion");
        assert_eq!(top(&ix, &t, &fresh), 500);
        assert_ne!(top(&ix, &t, &v(500)), 500);
        ix.ensure(&t, &config, &live).unwrap();
        assert!(ix.is_current());
        assert_eq!(top(&ix, &t, &fresh), 500);
        assert_eq!(top(&ix, &t, &v(1_000)), 1_000);
    }

    #[test]
    fn ensure_does_not_wait_for_a_running_job_and_keeps_its_forgets() {
        let config = StoreConfig {
            exact_search_threshold: 64,
            ..StoreConfig::default()
        };
        let mut t = VectorTable::new(16);
        for i in 0..200 {
            t.push(Some(&v(i)));
        }
        let mut ix = VectorIndex::default();
        ix.ensure(&t, &config, &|_| true).unwrap();
        for i in 200..200 + 4 * CHEAP_TAIL {
            t.push(Some(&v(i)));
        }
        ix.start_background(&t, &config);
        assert!(ix.busy());
        // Row 7 is forgotten while the job runs; the graph still shares it, so it stays placed for now.
        ix.deleted(7);
        let live = |row: u32| row != 7;
        ix.ensure(&t, &config, &live).unwrap();
        assert!(!ix.busy());
        // The synchronous fold is not counted, nor the job unless it had finished before it (then all of it).
        let st = ix.stats();
        assert!(
            st == IndexStats::default() || (st.jobs, st.rows) == (1, 4 * CHEAP_TAIL as u64),
            "{st:?}"
        );
        assert_eq!(ix.graph().map(|h| h.slots()), Some(t.rows()));
        assert_ne!(top(&ix, &t, &v(7)), 7);
        assert_eq!(top(&ix, &t, &v(3_000)), 3_000);
    }
}
