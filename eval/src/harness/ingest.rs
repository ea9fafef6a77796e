//! Filling a store with corpus records and synthetic vectors through the public `Store` API.

use std::path::Path;

use clawhdf5_ann::{FlatVectors, VectorStore};
use clawhdf5_memory::{NewMemory, Store, StoreOptions};

use super::corpus::CorpusRecord;
use super::error::{HarnessError, Result};
use super::measure::{thread_cpu, timed};

/// The memory saved for a corpus record and its vector.
pub fn memory(r: &CorpusRecord, v: &[f32]) -> NewMemory {
    NewMemory {
        text: r.text.clone(),
        session: Some(r.session.clone()),
        event_time: r.event_time,
        embedding: Some(v.to_vec()),
        ..NewMemory::default()
    }
}

/// Records per `save_batch` call.
pub const BATCH: usize = 10_000;

/// What a batch ingest did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Ingested {
    /// Records stored.
    pub records: usize,
    /// Saves answered as duplicates of an earlier record.
    pub deduplicated: usize,
    /// Wall seconds from the first save to the durable end of the batch.
    pub seconds: f64,
    /// CPU seconds of the saving thread (excludes work the store hands to other threads), when known.
    pub cpu_seconds: Option<f64>,
    /// Bytes of the stored texts (UTF-8).
    pub text_bytes: u64,
}

impl Ingested {
    /// Records per second.
    pub fn rate(&self) -> f64 {
        self.records as f64 / self.seconds.max(1e-9)
    }

    /// Records per CPU-second of the saving thread.
    pub fn cpu_rate(&self) -> Option<f64> {
        self.cpu_seconds
            .filter(|c| *c > 0.0)
            .map(|c| self.records as f64 / c)
    }
}

/// Save every record with its vector through `Store::save_batch` (one log write and one fsync per batch of
/// [`BATCH`] records), timing the whole ingest. The vector graph is built separately (see the cold build row).
pub fn batch(store: &mut Store, records: &[CorpusRecord], vecs: &FlatVectors) -> Result<Ingested> {
    if vecs.len() < records.len() {
        return Err(HarnessError::Option(format!(
            "{} records but only {} vectors",
            records.len(),
            vecs.len()
        )));
    }
    let mems: Vec<NewMemory> = records
        .iter()
        .enumerate()
        .map(|(i, r)| memory(r, vecs.vector(i as u32)))
        .collect();
    let text_bytes = mems.iter().map(|m| m.text.trim().len() as u64).sum();
    let cpu0 = thread_cpu();
    let (res, seconds) = timed(|| -> Result<usize> {
        let mut dups = 0;
        let mut rest = mems.into_iter();
        loop {
            let chunk: Vec<NewMemory> = rest.by_ref().take(BATCH).collect();
            if chunk.is_empty() {
                break;
            }
            for outcome in store.save_batch(chunk)? {
                dups += usize::from(outcome.deduplicated);
            }
        }
        Ok(dups)
    });
    let cpu_seconds = match (cpu0, thread_cpu()) {
        (Some(a), Some(b)) => Some((b - a).as_secs_f64()),
        _ => None,
    };
    let deduplicated = res?;
    Ok(Ingested {
        records: records.len() - deduplicated,
        deduplicated,
        seconds,
        cpu_seconds,
        text_bytes,
    })
}

/// The files of a store: the HDF5 file, its write-ahead log and its lock file.
pub fn store_files(path: &Path) -> [std::path::PathBuf; 3] {
    let mut lock = path.as_os_str().to_owned();
    lock.push(".lock");
    [
        path.to_path_buf(),
        clawhdf5_memory::wal_path(path),
        std::path::PathBuf::from(lock),
    ]
}

/// Remove a store's files (best effort: a harness cleaning up after itself).
pub fn remove_store(path: &Path) {
    for p in store_files(path) {
        let _ = std::fs::remove_file(p);
    }
}

/// Create a fresh store at `path` (removing an old one and its log) with default options.
pub fn fresh_store(path: &Path) -> Result<Store> {
    for p in store_files(path) {
        if p.exists() {
            std::fs::remove_file(&p).map_err(super::error::io_at(&p))?;
        }
    }
    Ok(Store::open_with(path, StoreOptions::default())?)
}

/// Open an existing store (writer, default options).
pub fn reopen(path: &Path) -> Result<Store> {
    Ok(Store::open_with(
        path,
        StoreOptions {
            create: false,
            ..StoreOptions::default()
        },
    )?)
}
