//! Write-ahead log: every change is appended here (length-prefixed, CRC-checked) and made durable before it is
//! acknowledged; checkpoints fold it into the HDF5 file and start a fresh log.
//!
//! File layout: `CLAWWAL1` (8 bytes), base LSN (u64 LE: entries at or below it are already in the HDF5 file),
//! then frames `[payload length u32 LE][CRC-32 of payload u32 LE][payload]`, payload = postcard-encoded
//! [`WalEntry`], then zeros: a durable log grows [`PREALLOC`] bytes of written zeros at a time, so an fsync
//! after an append overwrites blocks the file already has and need not commit a new file size (on ext4 a
//! `fdatasync` then skips the journal: about 40 % less time). Zeros after the last frame are free space, not
//! a torn tail.
//!
//! Every-save logs queue frames and write them in one durable write for every save waiting at that moment
//! (group commit); on Linux that write is direct and synchronous (`O_DIRECT | O_DSYNC`, module `wal::writer`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{io_err, MemoryError, Result};
use crate::record::Record;

mod syncer;
mod writer;
pub use syncer::Durable;
use writer::SyncWriter;

const MAGIC: &[u8; 8] = b"CLAWWAL1";
const HEADER_LEN: u64 = 16;
/// Frames larger than this are treated as corruption (a record is far smaller).
const MAX_FRAME: u32 = 64 << 20;
/// A durable log's file grows by this many bytes of written zeros at a time.
pub const PREALLOC: u64 = 1 << 20;
/// A single write at least this long (a large batch) extends the log itself: zeros grown ahead of it would
/// cost about as much as the write, for the sake of later writes that may never come.
const OWN_ALLOCATION: usize = PREALLOC as usize / 4;

/// When an acknowledged change reaches the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Durability {
    /// fsync before every acknowledgement (concurrent saves share one fsync: group commit).
    EverySave,
    /// A background thread fsyncs at least every N milliseconds; a crash loses at most that window.
    WithinMs(u32),
    /// Leave flushing to the operating system.
    None,
}

impl Durability {
    /// Parse `every-save`, `none` or `<N>ms`.
    pub fn parse(s: &str) -> Option<Durability> {
        match s {
            "every-save" | "always" => Some(Durability::EverySave),
            "none" => Some(Durability::None),
            _ => s
                .strip_suffix("ms")
                .and_then(|n| n.parse().ok())
                .map(Durability::WithinMs),
        }
    }
}

/// A field-level change to an existing record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RecordChange {
    /// New text (and embedding, re-computed by the store).
    Text {
        text: String,
        embedding: Option<Vec<f32>>,
    },
    /// New tags.
    Tags(Vec<String>),
    /// New importance.
    Importance(f32),
    /// New tier code.
    Tier(u8),
    /// Marks the record superseded by another.
    SupersededBy(u64),
}

/// One logged operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WalOp {
    /// A new record.
    Save(Box<Record>),
    /// A change to a record.
    Update { id: u64, change: RecordChange },
    /// A record forgotten (tombstoned).
    Delete { id: u64 },
    /// Search returned these records at time `at`.
    Access { ids: Vec<u64>, at: i64 },
    /// An opaque change owned by a store extension (graph, tiers, ...), keyed by extension name.
    Extension { name: String, payload: Vec<u8> },
    /// The store's embeddings now come from this model (set by the first embedded save).
    EmbeddingModel { model: String },
    /// A new record of an f16 store: its embedding logged as f16 (little-endian bits), half the bytes of
    /// [`WalOp::Save`], and exactly what the store keeps. `record.embedding` is `None`.
    SaveHalf {
        /// The record without its embedding.
        record: Box<Record>,
        /// Little-endian f16 values. Encoded as one byte string: the same bytes postcard writes for a
        /// sequence of `u8`, copied at once instead of element by element.
        #[serde(with = "serde_bytes")]
        embedding: Vec<u8>,
    },
}

impl WalOp {
    /// The operation that logs a new record: [`WalOp::SaveHalf`] when `half` and it has an embedding.
    pub fn save(mut record: Box<Record>, half: bool) -> WalOp {
        match record.embedding.take() {
            Some(e) if half => WalOp::SaveHalf {
                record,
                embedding: f16_bytes(&e),
            },
            e => {
                record.embedding = e;
                WalOp::Save(record)
            }
        }
    }

    /// The record a save logs (without the embedding of a [`WalOp::SaveHalf`]).
    pub fn saved(&self) -> Option<&Record> {
        match self {
            WalOp::Save(r) | WalOp::SaveHalf { record: r, .. } => Some(r),
            _ => None,
        }
    }

    /// The record a save logs, with its embedding as f32 values; `Err(self)` for other operations.
    pub fn into_saved(self) -> std::result::Result<Box<Record>, WalOp> {
        match self {
            WalOp::Save(r) => Ok(r),
            WalOp::SaveHalf {
                mut record,
                embedding,
            } => {
                record.embedding = Some(f32_from_f16_bytes(&embedding));
                Ok(record)
            }
            op => Err(op),
        }
    }
}

/// f32 values as little-endian f16 bytes (converted a block at a time, with F16C where the CPU has it).
fn f16_bytes(values: &[f32]) -> Vec<u8> {
    use half::slice::HalfFloatSliceExt;
    let mut halves = vec![half::f16::ZERO; values.len()];
    halves.convert_from_f32_slice(values);
    if cfg!(target_endian = "little") {
        // The halves' memory is their little-endian bytes: one copy (a loop of two-byte appends was
        // most of this function's time).
        return bytemuck::cast_slice::<half::f16, u8>(&halves).to_vec();
    }
    halves.iter().flat_map(|h| h.to_le_bytes()).collect()
}

/// Little-endian f16 bytes as f32 values (a trailing odd byte is ignored).
fn f32_from_f16_bytes(bytes: &[u8]) -> Vec<f32> {
    let halves: Vec<half::f16> = bytes
        .chunks_exact(2)
        .map(|b| half::f16::from_le_bytes([b[0], b[1]]))
        .collect();
    let mut out = vec![0.0f32; halves.len()];
    clawhdf5_ann::kernels::f16_to_f32(&halves, &mut out);
    out
}

/// An operation with its log sequence number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WalEntry {
    /// Monotonic sequence number, never reused.
    pub lsn: u64,
    /// The change.
    pub op: WalOp,
}

/// What recovery found in a log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recovery {
    /// Good entries, in order.
    pub entries: Vec<WalEntry>,
    /// Entries at or below this LSN are already in the HDF5 file.
    pub base_lsn: u64,
    /// Byte offset just past the last good frame.
    pub good_len: u64,
    /// Bytes after the last good frame (a torn or corrupt tail), dropped; zeros after them are free space
    /// and not counted.
    pub dropped_bytes: u64,
    /// Why the tail was dropped, if it was.
    pub dropped_reason: Option<String>,
}

/// Read a log without changing it.
pub fn read_log(path: &Path) -> Result<Recovery> {
    let file = File::open(path).map_err(io_err(path))?;
    read_open_log(path, file)
}

/// [`read_log`] of a log opened earlier: what that file holds now, even if the writer has since replaced the
/// log at `path` with a fresh one (a reader that opens the log before reading the HDF5 file misses nothing).
pub fn read_open_log(path: &Path, mut file: File) -> Result<Recovery> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io_err(path))?;
    parse_log(path, &bytes)
}

fn parse_log(path: &Path, bytes: &[u8]) -> Result<Recovery> {
    if bytes.len() < HEADER_LEN as usize || &bytes[..8] != MAGIC {
        return Err(MemoryError::Wal {
            path: path.to_path_buf(),
            reason: "missing CLAWWAL1 header".into(),
        });
    }
    let base_lsn = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0; 8]));
    let mut rec = Recovery {
        base_lsn,
        good_len: HEADER_LEN,
        ..Default::default()
    };
    let mut pos = HEADER_LEN as usize;
    let mut last_lsn = base_lsn;
    while pos < bytes.len() {
        let reason = match decode_frame(&bytes[pos..]) {
            Ok((entry, used)) if entry.lsn > last_lsn => {
                last_lsn = entry.lsn;
                rec.entries.push(entry);
                pos += used;
                rec.good_len = pos as u64;
                continue;
            }
            Ok((entry, _)) => format!("LSN {} does not follow {}", entry.lsn, last_lsn),
            Err(r) => r,
        };
        // Zeros to the end are the preallocated space a durable log grows into, not a torn tail.
        let Some(last_nonzero) = bytes[pos..].iter().rposition(|&b| b != 0) else {
            break;
        };
        rec.dropped_bytes = last_nonzero as u64 + 1;
        rec.dropped_reason = Some(reason);
        break;
    }
    Ok(rec)
}

fn decode_frame(b: &[u8]) -> std::result::Result<(WalEntry, usize), String> {
    if b.len() < 8 {
        return Err(format!("torn frame header ({} bytes)", b.len()));
    }
    let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let crc = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    if len > MAX_FRAME {
        return Err(format!("frame length {len} exceeds limit"));
    }
    let end = 8 + len as usize;
    if b.len() < end {
        return Err(format!(
            "torn frame: {} of {} payload bytes",
            b.len() - 8,
            len
        ));
    }
    let payload = &b[8..end];
    if crc32fast::hash(payload) != crc {
        return Err("CRC mismatch".into());
    }
    let entry: WalEntry =
        postcard::from_bytes(payload).map_err(|e| format!("undecodable entry: {e}"))?;
    Ok((entry, end))
}

/// [`WalEntry`] borrowing its operation: encodes to the same bytes, without copying the operation first.
#[derive(Serialize)]
struct WalEntryRef<'a> {
    lsn: u64,
    op: &'a WalOp,
}

/// Room a frame's buffer starts with: a typical saved record (text, f16 vector, fields) fits without growing.
const FRAME_START_CAPACITY: usize = 2048;

fn encode_frame(lsn: u64, op: &WalOp) -> std::result::Result<Vec<u8>, String> {
    // The payload is encoded after eight bytes kept for its length and CRC, in the buffer the frame is.
    let mut out = Vec::with_capacity(FRAME_START_CAPACITY);
    out.extend_from_slice(&[0u8; 8]);
    let mut out = postcard::to_extend(&WalEntryRef { lsn, op }, out).map_err(|e| e.to_string())?;
    let len = u32::try_from(out.len() - 8).map_err(|_| "entry too large".to_string())?;
    if len > MAX_FRAME {
        return Err("entry too large".into());
    }
    let crc = crc32fast::hash(&out[8..]);
    out[..4].copy_from_slice(&len.to_le_bytes());
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Largest batch of queued frames before an append writes them itself.
const MAX_QUEUED: usize = 1 << 20;

struct Appender {
    file: File,
    next_lsn: u64,
    /// Bytes of the log in the file (the frames' end; the file position stays here).
    len: u64,
    /// The file's length: `len` plus preallocated zeros.
    allocated: u64,
    /// Whether appends grow the file by [`PREALLOC`] zeros at a time (logs synced every N ms; every-save logs
    /// grow through their [`SyncWriter`]).
    preallocate: bool,
    /// Frames appended but not written yet (every-save mode): whoever fsyncs next writes them first, so one
    /// write and one fsync serve every save waiting at that moment.
    queued: Vec<u8>,
    queued_last: u64,
    /// Why a write of queued frames failed: their operations were already applied in memory but are not in
    /// the log, so the log refuses appends until a checkpoint has put them in the HDF5 file ([`Wal::reset`]).
    failed: Option<String>,
}

impl Appender {
    fn check(&self, path: &Path) -> Result<()> {
        match &self.failed {
            Some(reason) => Err(MemoryError::Wal {
                path: path.to_path_buf(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Write `bytes` at the end of the log; on failure cut off whatever part of it got there, so later
    /// appends stay readable.
    fn write(&mut self, bytes: &[u8], path: &Path) -> Result<()> {
        let end = self.len + bytes.len() as u64;
        if self.preallocate && end > self.allocated && bytes.len() < OWN_ALLOCATION {
            self.grow(end);
        }
        if let Err(e) = self.file.write_all(bytes) {
            let len = self.len;
            let _ = self.file.set_len(len);
            let _ = self.file.seek(SeekFrom::Start(len));
            self.allocated = len;
            return Err(io_err(path)(e));
        }
        self.len = end;
        self.allocated = self.allocated.max(end);
        Ok(())
    }

    /// Extend the file with written zeros to the next multiple of [`PREALLOC`] at or past `end`, the end
    /// of the frames about to be written: the zeros start past them (or at the file's end, if later), never
    /// under them. If that fails (a full disk), the file is cut back and the append simply extends it.
    fn grow(&mut self, end: u64) {
        let zeros = &writer::ZEROS.0;
        let target = end.div_ceil(PREALLOC) * PREALLOC;
        let from = end.max(self.allocated);
        let filled = self.file.seek(SeekFrom::Start(from)).and_then(|_| {
            let mut at = from;
            while at < target {
                let n = (target - at).min(zeros.len() as u64) as usize;
                self.file.write_all(&zeros[..n])?;
                at += n as u64;
            }
            Ok(())
        });
        if filled.is_ok() {
            self.allocated = target;
        } else {
            let _ = self.file.set_len(self.allocated);
        }
        // Where the append goes; if even this seek fails, the write after it fails and cleans up.
        let _ = self.file.seek(SeekFrom::Start(self.len));
    }

    /// Take the queued frames for the log's [`SyncWriter`] (which also grows the file), with their last
    /// LSN; the log's length moves past them.
    fn take_queued(&mut self) -> Option<(Vec<u8>, u64)> {
        if self.queued.is_empty() {
            return None;
        }
        let bytes = std::mem::take(&mut self.queued);
        self.len += bytes.len() as u64;
        Some((bytes, self.queued_last))
    }

    /// Write the queued frames, if any; returns the last LSN now in the file.
    fn write_queued(&mut self, shared_path: &Path, written: &AtomicU64) -> Result<u64> {
        self.check(shared_path)?;
        if !self.queued.is_empty() {
            let bytes = std::mem::take(&mut self.queued);
            if let Err(e) = self.write(&bytes, shared_path) {
                self.failed = Some(format!("writing queued entries failed: {e}"));
                return Err(e);
            }
            self.queued = bytes;
            self.queued.clear();
            written.store(self.queued_last, Ordering::Release);
        }
        Ok(written.load(Ordering::Acquire))
    }
}

struct Shared {
    path: PathBuf,
    appender: Mutex<Appender>,
    /// A second handle on the log, for fsync without the appender's lock (replaced when the log is reset).
    sync_file: Mutex<File>,
    /// Every-save logs: what writes the queued frames and makes them durable, outside the appender's lock
    /// (replaced when the log is reset). Lock order: the appender, then this.
    writer: Option<Mutex<SyncWriter>>,
    /// True while one caller fsyncs for everyone (group commit); the others wait on `sync_done`.
    syncing: Mutex<bool>,
    sync_done: Condvar,
    written_lsn: AtomicU64,
    synced_lsn: AtomicU64,
    stop: AtomicBool,
    /// Serves [`Durable`] futures.
    syncer: syncer::Syncer,
    /// Sync rounds so far, for [`Wal::stats`].
    counters: SyncCounters,
}

impl Shared {
    /// Every-save logs: write the queued frames through `writer` and wait for the disk, with `appender`
    /// (locked by the caller) released as soon as the frames are taken, so saves keep queueing. Returns the
    /// last LSN on disk: with nothing queued, that of the write in flight, which this waits for.
    fn write_durably(
        &self,
        writer: &Mutex<SyncWriter>,
        mut appender: std::sync::MutexGuard<'_, Appender>,
    ) -> Result<u64> {
        appender.check(&self.path)?;
        let taken = appender.take_queued();
        let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
        drop(appender);
        if let Some((bytes, last)) = taken {
            if let Err(e) = w.write_durably(&bytes) {
                drop(w);
                let reason = format!("writing queued entries failed: {e}");
                self.appender
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .failed
                    .get_or_insert_with(|| reason.clone());
                return Err(MemoryError::Wal {
                    path: self.path.clone(),
                    reason,
                });
            }
            self.written_lsn.fetch_max(last, Ordering::AcqRel);
        }
        Ok(self.written_lsn.load(Ordering::Acquire))
    }

    /// Whether every entry up to `lsn` is on disk.
    fn synced(&self, lsn: u64) -> bool {
        self.synced_lsn.load(Ordering::Acquire) >= lsn
    }

    /// Make every entry up to `lsn` durable. One caller at a time fsyncs, covering everything written
    /// before it started; callers whose entries that fsync covered return without one of their own.
    fn sync_to(&self, lsn: u64) -> Result<()> {
        if self.synced_lsn.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let mut syncing = self.syncing.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.synced_lsn.load(Ordering::Acquire) >= lsn {
                return Ok(());
            }
            if !*syncing {
                *syncing = true;
                drop(syncing);
                let started = Instant::now();
                // Everything appended so far (at least `lsn`, appended before this call), written first.
                // The appender is unlocked before the disk is waited for, so saves keep appending meanwhile
                // and the next round covers them all (holding it throughout gave one fsync per save or two).
                let mut appender = self.appender.lock().unwrap_or_else(|p| p.into_inner());
                let res = match &self.writer {
                    Some(writer) => self.write_durably(writer, appender),
                    None => appender
                        .write_queued(&self.path, &self.written_lsn)
                        .and_then(|target| {
                            drop(appender);
                            self.sync_file
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .sync_data()
                                .map_err(io_err(&self.path))?;
                            Ok(target)
                        }),
                };
                let mut done = self.syncing.lock().unwrap_or_else(|p| p.into_inner());
                *done = false;
                if let Ok(target) = res {
                    let before = self.synced_lsn.fetch_max(target, Ordering::AcqRel);
                    if target > before {
                        self.counters.record(target - before, started.elapsed());
                    }
                }
                self.sync_done.notify_all();
                return res.map(|_| ());
            }
            syncing = self
                .sync_done
                .wait(syncing)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// How a log's durable writes have gone since it was opened ([`Wal::stats`]): each sync round writes every
/// entry queued at that moment and waits for the disk once, so entries per round is how many saves shared a
/// write (group commit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Sync rounds that made new entries durable.
    pub syncs: u64,
    /// Entries those rounds made durable.
    pub entries: u64,
    /// Time those rounds took, writing and waiting for the disk.
    pub busy: Duration,
}

impl LogStats {
    /// Entries a round made durable, on average (0 before the first).
    pub fn entries_per_sync(&self) -> f64 {
        if self.syncs == 0 {
            0.0
        } else {
            self.entries as f64 / self.syncs as f64
        }
    }

    /// What happened between `earlier` (read from the same log) and these.
    pub fn since(&self, earlier: &LogStats) -> LogStats {
        LogStats {
            syncs: self.syncs.saturating_sub(earlier.syncs),
            entries: self.entries.saturating_sub(earlier.entries),
            busy: self.busy.saturating_sub(earlier.busy),
        }
    }
}

/// The counters behind [`LogStats`].
#[derive(Default)]
struct SyncCounters {
    syncs: AtomicU64,
    entries: AtomicU64,
    busy_ns: AtomicU64,
}

impl SyncCounters {
    fn record(&self, entries: u64, took: Duration) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.entries.fetch_add(entries, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn read(&self) -> LogStats {
        LogStats {
            syncs: self.syncs.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            busy: Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed)),
        }
    }
}

/// An open, writable log.
pub struct Wal {
    shared: Arc<Shared>,
    durability: Durability,
    flusher: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("path", &self.shared.path)
            .field("durability", &self.durability)
            .finish()
    }
}

/// A handle to wait until one appended entry is durable.
#[derive(Clone)]
pub struct DurableTicket {
    shared: Arc<Shared>,
    lsn: u64,
    needed: bool,
}

impl DurableTicket {
    /// Start making the entry durable on the log's syncer thread and return at once, so the caller can work
    /// while the disk writes; [`Self::wait`] then finds it done or waits for that write. Where no syncer
    /// can run, nothing starts and `wait` does the work.
    pub fn begin(&self) {
        if self.needed && !self.shared.synced(self.lsn) {
            self.shared.syncer.start(&self.shared, self.lsn);
        }
    }

    /// Block until the entry is on disk (a no-op unless durability is `EverySave`).
    pub fn wait(&self) -> Result<()> {
        if self.needed {
            self.shared.sync_to(self.lsn)
        } else {
            Ok(())
        }
    }

    /// The entry's LSN.
    pub fn lsn(&self) -> u64 {
        self.lsn
    }

    /// A future that completes when the entry is on disk, for async callers: no thread blocks while it waits
    /// (the log's syncer thread fsyncs for every waiting future at once).
    pub fn durable(&self) -> Durable {
        Durable::new(Arc::clone(&self.shared), self.lsn, self.needed)
    }
}

impl Wal {
    /// Open (creating if absent) the log at `path` for appending, after recovering it: a torn or corrupt tail is
    /// cut off. Returns the log and what recovery found. `checkpoint_lsn` is the LSN the HDF5 file holds; a new
    /// log starts there.
    pub fn open(
        path: &Path,
        checkpoint_lsn: u64,
        durability: Durability,
    ) -> Result<(Wal, Recovery)> {
        let recovery = if path.exists() {
            read_log(path)?
        } else {
            write_fresh(path, checkpoint_lsn)?;
            Recovery {
                base_lsn: checkpoint_lsn,
                good_len: HEADER_LEN,
                ..Default::default()
            }
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_err(path))?;
        // A torn tail is cut off (zeros come back as the log grows), so nothing of it can ever follow
        // a later frame; preallocated zeros alone are kept.
        if recovery.dropped_bytes > 0 {
            file.set_len(recovery.good_len).map_err(io_err(path))?;
            file.sync_all().map_err(io_err(path))?;
        }
        let allocated = file
            .metadata()
            .map_err(io_err(path))?
            .len()
            .max(recovery.good_len);
        file.seek(SeekFrom::Start(recovery.good_len))
            .map_err(io_err(path))?;
        let last = recovery
            .entries
            .last()
            .map(|e| e.lsn)
            .unwrap_or(recovery.base_lsn)
            .max(checkpoint_lsn);
        let sync_file = file.try_clone().map_err(io_err(path))?;
        let writer = match durability {
            Durability::EverySave => {
                let handle = file.try_clone().map_err(io_err(path))?;
                let w = SyncWriter::open(path, handle, recovery.good_len, allocated)
                    .map_err(io_err(path))?;
                Some(Mutex::new(w))
            }
            _ => None,
        };
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            appender: Mutex::new(Appender {
                file,
                next_lsn: last + 1,
                len: recovery.good_len,
                allocated,
                preallocate: matches!(durability, Durability::WithinMs(_)),
                queued: Vec::new(),
                queued_last: last,
                failed: None,
            }),
            sync_file: Mutex::new(sync_file),
            writer,
            syncing: Mutex::new(false),
            sync_done: Condvar::new(),
            written_lsn: AtomicU64::new(last),
            synced_lsn: AtomicU64::new(last),
            stop: AtomicBool::new(false),
            syncer: syncer::Syncer::default(),
            counters: SyncCounters::default(),
        });
        let flusher = match durability {
            Durability::WithinMs(ms) => {
                let s = Arc::clone(&shared);
                let period = Duration::from_millis(u64::from(ms.max(1)));
                Some(std::thread::spawn(move || {
                    while !s.stop.load(Ordering::Acquire) {
                        std::thread::sleep(period);
                        let lsn = s.written_lsn.load(Ordering::Acquire);
                        // A failed background fsync is retried on the next tick and at close.
                        let _ = s.sync_to(lsn);
                    }
                }))
            }
            _ => None,
        };
        Ok((
            Wal {
                shared,
                durability,
                flusher,
            },
            recovery,
        ))
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Bytes in the log (written or queued for the next fsync).
    pub fn len_bytes(&self) -> u64 {
        let a = self
            .shared
            .appender
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        a.len + a.queued.len() as u64
    }

    /// Why the log refuses appends, if a write of its queued entries failed (a full disk, say): those
    /// entries' operations are applied in memory but not logged. A checkpoint, which folds what is in memory
    /// into the HDF5 file and starts a fresh log ([`Self::reset`]), makes the log usable again.
    pub fn failure(&self) -> Option<String> {
        self.shared
            .appender
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .failed
            .clone()
    }

    /// How the log's durable writes have gone since it was opened.
    pub fn stats(&self) -> LogStats {
        self.shared.counters.read()
    }

    /// The LSN the next append will get.
    pub fn next_lsn(&self) -> u64 {
        self.shared
            .appender
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_lsn
    }

    /// Append one operation; returns a ticket to wait for durability per the log's mode. In every-save mode
    /// the entry is queued for the next fsync's single write; otherwise it is written to the OS now.
    pub fn append(&self, op: &WalOp) -> Result<DurableTicket> {
        let (_, ticket) = self.append_many(std::slice::from_ref(op))?;
        Ok(ticket)
    }

    /// Append several operations at once (consecutive LSNs); returns the ticket of the last one and the first
    /// LSN. Nothing is appended if any of them cannot be encoded.
    pub fn append_many(&self, ops: &[WalOp]) -> Result<(u64, DurableTicket)> {
        let mut a = self
            .shared
            .appender
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        a.check(&self.shared.path)?;
        let first = a.next_lsn;
        let mut buf = Vec::new();
        let mut lsn = first;
        for op in ops {
            let frame = encode_frame(lsn, op).map_err(|reason| MemoryError::Wal {
                path: self.shared.path.clone(),
                reason,
            })?;
            if buf.is_empty() {
                // One operation (a single save): its frame is the buffer, not copied into one.
                buf = frame;
            } else {
                buf.extend_from_slice(&frame);
            }
            lsn += 1;
        }
        let last = lsn.saturating_sub(1);
        if lsn > first {
            if self.durability == Durability::EverySave {
                // Frames queued by earlier appends past the bound are written here; one call's own
                // batch stays queued whatever its size (its caller holds that much already), so that
                // its caller can have it written while it does other work (`DurableTicket::begin`).
                let backlog = a.queued.len();
                if a.queued.is_empty() {
                    a.queued = buf;
                } else {
                    a.queued.extend_from_slice(&buf);
                }
                a.queued_last = last;
                a.next_lsn = lsn;
                if backlog > MAX_QUEUED {
                    match &self.shared.writer {
                        Some(writer) => {
                            self.shared.write_durably(writer, a)?;
                        }
                        None => {
                            a.write_queued(&self.shared.path, &self.shared.written_lsn)?;
                        }
                    }
                }
            } else {
                a.write(&buf, &self.shared.path)?;
                a.next_lsn = lsn;
                self.shared.written_lsn.store(last, Ordering::Release);
            }
        }
        Ok((
            first,
            DurableTicket {
                shared: Arc::clone(&self.shared),
                lsn: last,
                needed: self.durability == Durability::EverySave && lsn > first,
            },
        ))
    }

    /// Runs an append's steps without appending (a frame encoded and dropped, the appender's lock taken), so
    /// that the first append after open pays no first-use costs; writes nothing.
    pub fn warm_up(&self) {
        let op = WalOp::Access {
            ids: vec![0],
            at: 0,
        };
        std::hint::black_box(encode_frame(0, &op).ok());
        drop(self.shared.appender.lock());
    }

    /// fsync everything appended so far, whatever the mode.
    pub fn sync_all(&self) -> Result<()> {
        let lsn = self.next_lsn().saturating_sub(1);
        self.shared.sync_to(lsn)
    }

    /// Replace the log by an empty one whose base is `checkpoint_lsn` (called after the HDF5 file durably holds
    /// everything up to it). Crash-safe: the new log is written aside and renamed over the old.
    pub fn reset(&self, checkpoint_lsn: u64) -> Result<()> {
        let mut a = self
            .shared
            .appender
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let path = &self.shared.path;
        let tmp = path.with_extension("wal.tmp");
        write_fresh(&tmp, checkpoint_lsn)?;
        std::fs::rename(&tmp, path).map_err(io_err(path))?;
        sync_dir(path)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_err(path))?;
        file.seek(SeekFrom::End(0)).map_err(io_err(path))?;
        let handle = file.try_clone().map_err(io_err(path))?;
        if let Some(writer) = &self.shared.writer {
            let for_writer = file.try_clone().map_err(io_err(path))?;
            let w =
                SyncWriter::open(path, for_writer, HEADER_LEN, HEADER_LEN).map_err(io_err(path))?;
            *writer.lock().unwrap_or_else(|p| p.into_inner()) = w;
        }
        *self
            .shared
            .sync_file
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = handle;
        a.file = file;
        a.len = HEADER_LEN;
        a.allocated = HEADER_LEN;
        a.next_lsn = a.next_lsn.max(checkpoint_lsn + 1);
        // Queued entries are in the checkpoint the file now durably holds, and so are those of a failed
        // write: the log is usable again.
        a.queued.clear();
        a.failed = None;
        self.shared
            .written_lsn
            .fetch_max(checkpoint_lsn, Ordering::AcqRel);
        self.shared
            .synced_lsn
            .fetch_max(checkpoint_lsn, Ordering::AcqRel);
        Ok(())
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        self.shared.syncer.stop();
        if self.durability != Durability::None {
            let _ = self.sync_all();
        }
    }
}

fn write_fresh(path: &Path, base_lsn: u64) -> Result<()> {
    let mut f = File::create(path).map_err(io_err(path))?;
    let mut header = Vec::with_capacity(HEADER_LEN as usize);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&base_lsn.to_le_bytes());
    f.write_all(&header).map_err(io_err(path))?;
    f.sync_all().map_err(io_err(path))?;
    Ok(())
}

/// fsync the directory holding `path`, so a rename in it is durable.
pub(crate) fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(n: u64) -> WalOp {
        WalOp::Delete { id: n }
    }

    /// A record with `id` and `text` and everything else at its plain default.
    fn plain(id: u64, text: &str) -> Record {
        Record {
            id,
            text: text.into(),
            source: crate::record::Source::Conversation,
            agent: String::new(),
            session: String::new(),
            origin: None,
            tags: Vec::new(),
            event_time: None,
            created_at: 1,
            importance: 0.5,
            access_count: 0,
            last_access: 0,
            tier: Default::default(),
            supersedes: None,
            superseded_by: None,
            tombstone: false,
            embedding: None,
        }
    }

    #[test]
    fn half_saves_log_half_the_vector_bytes_and_read_back_as_f16() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        let v: Vec<f32> = (0..384).map(|i| (i as f32 * 0.37).sin() / 14.0).collect();
        let record = || {
            let mut r = plain(7, "a memory");
            r.embedding = Some(v.clone());
            Box::new(r)
        };
        let full = encode_frame(1, &WalOp::save(record(), false)).unwrap();
        let half = encode_frame(1, &WalOp::save(record(), true)).unwrap();
        assert!(
            full.len() - half.len() >= 384 * 2,
            "{} vs {}",
            full.len(),
            half.len()
        );
        {
            let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            wal.append(&WalOp::save(record(), true))
                .unwrap()
                .wait()
                .unwrap();
            wal.append(&WalOp::save(Box::new(plain(8, "no vector")), true))
                .unwrap()
                .wait()
                .unwrap();
        }
        let (_, rec) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        let mut ops = rec.entries.into_iter().map(|e| e.op);
        let first = ops.next().unwrap();
        assert!(matches!(first, WalOp::SaveHalf { .. }));
        assert!(first.saved().is_some_and(|r| r.embedding.is_none()));
        let back = first.into_saved().unwrap().embedding.unwrap();
        let want: Vec<f32> = v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect();
        assert_eq!(back, want);
        // Without an embedding there is nothing to halve.
        assert!(matches!(ops.next(), Some(WalOp::Save(_))));
        assert!(WalOp::Delete { id: 1 }.into_saved().is_err());
    }

    #[test]
    fn warm_up_appends_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.wal");
        {
            let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            wal.append(&op(0)).unwrap().wait().unwrap();
            let lsn = wal.next_lsn();
            wal.warm_up();
            assert_eq!(wal.next_lsn(), lsn);
            wal.append(&op(1)).unwrap().wait().unwrap();
        }
        let (_, rec) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        let lsns: Vec<u64> = rec.entries.iter().map(|e| e.lsn).collect();
        assert_eq!(lsns, [1, 2]);
    }

    #[test]
    fn append_and_recover() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        {
            let (wal, rec) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            assert!(rec.entries.is_empty());
            for i in 0..5 {
                wal.append(&op(i)).unwrap().wait().unwrap();
            }
        }
        let (_, rec) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        assert_eq!(rec.entries.len(), 5);
        assert_eq!(rec.entries[4].lsn, 5);
        assert_eq!(rec.dropped_bytes, 0);
    }

    #[test]
    fn concurrent_saves_share_writes_and_fsyncs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        {
            let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            std::thread::scope(|s| {
                for t in 0..8u64 {
                    let wal = &wal;
                    s.spawn(move || {
                        for i in 0..40 {
                            let ticket = wal.append(&op(t * 1000 + i)).unwrap();
                            ticket.wait().unwrap();
                            // Acknowledged means durable: in the file, not only queued.
                            assert!(wal.shared.synced_lsn.load(Ordering::Acquire) >= ticket.lsn());
                        }
                    });
                }
            });
            // An entry nobody waited for is still written when the log closes.
            wal.append(&op(99_999)).unwrap();
            assert!(wal.len_bytes() > HEADER_LEN);
        }
        let rec = read_log(&p).unwrap();
        assert_eq!(rec.entries.len(), 321);
        let lsns: Vec<u64> = rec.entries.iter().map(|e| e.lsn).collect();
        assert_eq!(lsns, (1..=321).collect::<Vec<u64>>());
        assert_eq!(rec.entries[320].op, op(99_999));
    }

    /// A durable log `s.wal` in `dir` holding three acknowledged deletes (LSNs 1–3), closed.
    fn durable_log_of_three(dir: &tempfile::TempDir) -> PathBuf {
        let p = dir.path().join("s.wal");
        let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        for i in 0..3 {
            wal.append(&op(i)).unwrap().wait().unwrap();
        }
        assert!(wal.len_bytes() < 100);
        p
    }

    #[test]
    fn torn_tail_is_dropped_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let p = durable_log_of_three(&dir);
        let good = read_log(&p).unwrap().good_len as usize;
        let full = std::fs::read(&p).unwrap();
        std::fs::write(&p, &full[..good - 3]).unwrap();
        let (wal, rec) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        assert_eq!(rec.entries.len(), 2);
        assert!(rec.dropped_bytes > 0);
        assert!(rec.dropped_reason.as_deref().unwrap().contains("torn"));
        // Appending after recovery continues cleanly.
        wal.append(&op(9)).unwrap().wait().unwrap();
        drop(wal);
        let rec = read_log(&p).unwrap();
        assert_eq!(rec.entries.len(), 3);
        assert_eq!(rec.entries[2].lsn, 3);
    }

    #[test]
    fn preallocated_zeros_are_free_space_and_a_torn_frame_in_them_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let p = durable_log_of_three(&dir);
        let file_len = || std::fs::metadata(&p).unwrap().len();
        assert_eq!(file_len(), PREALLOC);
        let rec = read_log(&p).unwrap();
        assert_eq!(rec.entries.len(), 3);
        assert_eq!((rec.dropped_bytes, rec.dropped_reason), (0, None));
        // Reopened, the log appends at its frames' end, inside the zeros.
        {
            let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            wal.append(&op(3)).unwrap().wait().unwrap();
        }
        assert_eq!(file_len(), PREALLOC);
        let good = read_log(&p).unwrap().good_len as usize;
        // A crash mid-append: part of a frame lands in the zeros.
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[good..good + 5].copy_from_slice(&[40, 0, 0, 0, 7]);
        std::fs::write(&p, &bytes).unwrap();
        let (wal, rec) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        assert_eq!(rec.entries.len(), 4);
        assert_eq!(rec.dropped_bytes, 5);
        assert_eq!(rec.dropped_reason.as_deref(), Some("CRC mismatch"));
        // The torn bytes are gone, so no stale byte can follow a later frame.
        assert_eq!(file_len(), good as u64);
        wal.append(&op(4)).unwrap().wait().unwrap();
        drop(wal);
        let rec = read_log(&p).unwrap();
        let lsns: Vec<u64> = rec.entries.iter().map(|e| e.lsn).collect();
        assert_eq!(lsns, vec![1, 2, 3, 4, 5]);
        assert_eq!(file_len(), PREALLOC);
    }

    #[test]
    fn a_log_synced_every_few_ms_grows_by_zeros_and_a_large_write_extends_it_itself() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ms.wal");
        let entry = |i: u64, len: usize| WalOp::Extension {
            name: format!("x{i}"),
            payload: vec![i as u8 + 1; len],
        };
        let len = || std::fs::metadata(&p).unwrap().len();
        let good = || read_log(&p).unwrap().good_len;
        let (wal, _) = Wal::open(&p, 0, Durability::WithinMs(5)).unwrap();
        wal.append(&entry(0, 100)).unwrap();
        wal.sync_all().unwrap();
        assert_eq!(len(), PREALLOC);
        // Past the zeros with a large write: the file ends with the frames.
        wal.append(&entry(1, PREALLOC as usize)).unwrap();
        wal.sync_all().unwrap();
        assert_eq!(len(), good());
        // The next small write grows it by zeros again, after its frame.
        wal.append(&entry(2, 100)).unwrap();
        wal.sync_all().unwrap();
        assert_eq!(len(), 2 * PREALLOC);
        drop(wal);
        let rec = read_log(&p).unwrap();
        assert_eq!(rec.entries.len(), 3);
        assert_eq!(rec.entries[2].op, entry(2, 100));
        let bytes = std::fs::read(&p).unwrap();
        assert!(bytes[rec.good_len as usize..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_log_grows_past_its_preallocation_and_a_volatile_log_does_not_preallocate() {
        let dir = tempfile::tempdir().unwrap();
        let big = |i: u64| WalOp::Extension {
            name: format!("x{i}"),
            // Below a quarter of the preallocation, so an every-save log grows by zeros, not by itself.
            payload: vec![i as u8 + 1; 200_000],
        };
        for durability in [Durability::EverySave, Durability::None] {
            let p = dir.path().join(format!("{durability:?}.wal"));
            {
                let (wal, _) = Wal::open(&p, 0, durability).unwrap();
                for i in 0..8 {
                    wal.append(&big(i)).unwrap().wait().unwrap();
                }
                wal.sync_all().unwrap();
            }
            let rec = read_log(&p).unwrap();
            assert_eq!(rec.entries.len(), 8);
            assert_eq!(rec.entries[7].op, big(7));
            assert_eq!(rec.dropped_bytes, 0);
            let len = std::fs::metadata(&p).unwrap().len();
            if durability == Durability::None {
                assert_eq!(len, rec.good_len);
            } else {
                assert_eq!(len, 2 * PREALLOC);
            }
        }
    }

    #[test]
    fn corrupt_byte_stops_replay_at_last_good_frame() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        {
            let (wal, _) = Wal::open(&p, 0, Durability::None).unwrap();
            for i in 0..4 {
                wal.append(&op(i)).unwrap();
            }
            wal.sync_all().unwrap();
        }
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes[n - 2] ^= 0xFF;
        std::fs::write(&p, &bytes).unwrap();
        let rec = read_log(&p).unwrap();
        assert_eq!(rec.entries.len(), 3);
        assert_eq!(rec.dropped_reason.as_deref(), Some("CRC mismatch"));
    }

    #[test]
    fn reset_starts_after_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        for i in 0..3 {
            wal.append(&op(i)).unwrap().wait().unwrap();
        }
        wal.reset(3).unwrap();
        let t = wal.append(&op(7)).unwrap();
        t.wait().unwrap();
        assert_eq!(t.lsn(), 4);
        drop(wal);
        let rec = read_log(&p).unwrap();
        assert_eq!(rec.base_lsn, 3);
        assert_eq!(rec.entries.len(), 1);
    }

    #[test]
    fn not_a_log_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        std::fs::write(&p, b"hello world, not a log").unwrap();
        assert!(matches!(read_log(&p), Err(MemoryError::Wal { .. })));
    }

    #[test]
    fn group_commit_from_threads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        let wal = Arc::new(wal);
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let w = Arc::clone(&wal);
                std::thread::spawn(move || {
                    for i in 0..25 {
                        w.append(&op(t * 100 + i)).unwrap().wait().unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // Every entry was made durable by exactly one sync round, and no round was empty.
        let stats = wal.stats();
        assert_eq!(stats.entries, 100);
        assert!((1..=100).contains(&stats.syncs), "{stats:?}");
        assert!(stats.entries_per_sync() >= 1.0);
        assert!(stats.busy > Duration::ZERO);
        drop(wal);
        assert_eq!(read_log(&p).unwrap().entries.len(), 100);
    }

    #[test]
    fn stats_count_rounds_since_an_earlier_reading() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(&dir.path().join("s.wal"), 0, Durability::EverySave).unwrap();
        wal.append(&op(1)).unwrap().wait().unwrap();
        let first = wal.stats();
        assert_eq!((first.syncs, first.entries), (1, 1));
        let (_, ticket) = wal.append_many(&[op(2), op(3), op(4)]).unwrap();
        ticket.wait().unwrap();
        // Waiting again for entries already durable is no new round.
        ticket.wait().unwrap();
        let d = wal.stats().since(&first);
        assert_eq!((d.syncs, d.entries), (1, 3));
        assert_eq!(d.entries_per_sync(), 3.0);
        assert_eq!(LogStats::default().entries_per_sync(), 0.0);
        // A log that never syncs counts nothing.
        let (volatile, _) = Wal::open(&dir.path().join("v.wal"), 0, Durability::None).unwrap();
        volatile.append(&op(5)).unwrap().wait().unwrap();
        assert_eq!(volatile.stats(), LogStats::default());
    }

    #[test]
    fn f16_bytes_are_each_value_rounded_to_f16_little_endian() {
        let mut values: Vec<f32> = (0..1001).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        values.extend([
            0.0,
            -0.0,
            1e-7,
            -1e-7,
            65504.0,
            1e6,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]);
        for n in [0, 1, 7, 8, 9, values.len()] {
            let want: Vec<u8> = values[..n]
                .iter()
                .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
                .collect();
            assert_eq!(f16_bytes(&values[..n]), want, "n={n}");
        }
    }

    #[test]
    fn half_embeddings_encode_as_they_always_did() {
        // Before the byte-string encoding, `SaveHalf.embedding` was a plain `Vec<u8>` field: logs written
        // then must read the same now, and new frames must be the same bytes.
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        enum OldOp {
            Save(Box<Record>),
            Update {
                id: u64,
                change: RecordChange,
            },
            Delete {
                id: u64,
            },
            Access {
                ids: Vec<u64>,
                at: i64,
            },
            Extension {
                name: String,
                payload: Vec<u8>,
            },
            EmbeddingModel {
                model: String,
            },
            SaveHalf {
                record: Box<Record>,
                embedding: Vec<u8>,
            },
        }
        let mut r = plain(3, "tea at noon");
        r.agent = "main".into();
        r.session = "s1".into();
        r.tags = vec!["drinks".into()];
        r.event_time = Some(5);
        r.embedding = Some(vec![0.5, -1.25, 3.0, 0.1, 65504.0, -0.0]);
        let new = WalOp::save(Box::new(r.clone()), true);
        let WalOp::SaveHalf { embedding, .. } = &new else {
            panic!("expected a half save");
        };
        r.embedding = None;
        let old = OldOp::SaveHalf {
            record: Box::new(r),
            embedding: embedding.clone(),
        };
        let new_bytes = postcard::to_allocvec(&new).unwrap();
        assert_eq!(new_bytes, postcard::to_allocvec(&old).unwrap());
        assert_eq!(postcard::from_bytes::<WalOp>(&new_bytes).unwrap(), new);
        let back = new.into_saved().unwrap().embedding.unwrap();
        assert_eq!(
            back[..4],
            [0.5, -1.25, 3.0, half::f16::from_f32(0.1).to_f32()]
        );
        assert_eq!(back[4], 65504.0);
    }

    #[test]
    fn durability_parses() {
        assert_eq!(Durability::parse("every-save"), Some(Durability::EverySave));
        assert_eq!(Durability::parse("5ms"), Some(Durability::WithinMs(5)));
        assert_eq!(Durability::parse("none"), Some(Durability::None));
        assert_eq!(Durability::parse("sometimes"), None);
    }
}
