//! Workspace sync: index the memory files as cited chunks, re-indexing only files whose content changed.

use std::collections::BTreeMap;
use std::path::Path;

use clawhdf5_memory::{NewMemory, Origin, SaveKit, Source, Store};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{date_of, memory_files};
use crate::agents::SharedMemory;
use crate::chunk::Chunks;
use crate::error::BackendError;

/// Name of the store extension holding sync state.
const EXTENSION: &str = "workspace_sync";
/// Name of the store extension a sync sets before it changes anything and clears when it is done: present at
/// the next sync, it says a run stopped without recording what it saved (the process was killed).
const RUNNING: &str = "workspace_sync_running";
/// Chunk size and overlap in tokens.
const CHUNK_TOKENS: usize = 400;
const CHUNK_OVERLAP: usize = 80;

/// What a sync did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// Files (re-)indexed.
    pub files_indexed: usize,
    /// Files skipped because their content had not changed.
    pub files_unchanged: usize,
    /// Files indexed before that no longer exist (their chunks were forgotten).
    pub files_removed: usize,
    /// Chunks saved.
    pub chunks_added: usize,
    /// Chunks forgotten.
    pub chunks_removed: usize,
    /// Files that could not be read this time, each as "path: error": what was indexed from them before
    /// stays, and the next sync tries them again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files_unreadable: Vec<String>,
}

/// What the store holds of one file: the SHA-256 of the content its chunks came from (empty when a sync
/// stopped partway through it, so that the next one indexes it again), and the chunks' ids.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct FileState {
    sha256: String,
    ids: Vec<u64>,
}

/// The sync state kept in the store (extension [`EXTENSION`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct SyncState {
    workspace: String,
    files: BTreeMap<String, FileState>,
}

/// Chunks prepared and saved together when the model embeds them: two per call keep both cores of a 2-core
/// machine on whole texts (one long text at a time shares each step between them, which gets less done),
/// and a search arriving meanwhile waits at most about one text's time for the model. The
/// store's write lock is taken once per batch, so its searches and saves go on between batches.
const SYNC_BATCH_EMBEDDED: usize = 2;

/// Chunks saved together when nothing is embedded (one log write each).
const SYNC_BATCH: usize = 64;

/// Old chunk ids forgotten under one hold of the write lock (a workspace that moved, removed files).
const FORGET_BATCH: usize = 64;

/// A changed file being indexed: its state before, and the ids of the chunks saved for it so far.
struct Indexing {
    rel: String,
    sha256: String,
    old_ids: Vec<u64>,
    ids: Vec<u64>,
    /// Its chunks not saved yet: queued in the batch, or still to be cut from the file.
    unsaved: bool,
}

/// Chunks waiting to be prepared and saved, each with the index of its file in the sync's [`Indexing`] list;
/// files from `forget_from` on still have their old chunks (forgotten before any of their new chunks is
/// saved, so that a chunk the edit left unchanged is saved again, not taken for a duplicate of the old copy
/// about to be forgotten).
#[derive(Default)]
struct Batch {
    chunks: Vec<(usize, NewMemory)>,
    forget_from: usize,
    /// Files before this one have had all their chunks cut (into this batch or earlier ones).
    chunked: usize,
}

/// Index the workspace's memory files into `store` (only changed files), forgetting chunks of files that changed
/// or disappeared. Files are read, chunked and embedded (through `kit`, the store's [`SaveKit`]) without the
/// store's lock; the write lock is held only while a batch of chunks is saved, so the agent's searches answer
/// from what is indexed so far instead of waiting for the whole sync. A file that cannot be read is reported
/// and keeps what was indexed from it; one that vanished since it was listed counts as removed. A sync that
/// fails partway (a full disk) records what it did before returning the error, so the next one neither
/// misses a file nor leaves chunks of an old version behind. Run one sync of a store at a time.
pub fn sync(
    store: &SharedMemory,
    kit: &SaveKit,
    workspace: &Path,
    extra: &[String],
    force: bool,
) -> Result<SyncReport, BackendError> {
    let mut state: SyncState = store
        .blocking_read()
        .extension(EXTENSION)
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default();
    let ws = workspace.display().to_string();
    if state.workspace != ws {
        // A different workspace: its files are different files.
        let ids: Vec<u64> = state.files.values().flat_map(|f| f.ids.clone()).collect();
        forget_ids(store, &ids)?;
        state = SyncState {
            workspace: ws,
            files: BTreeMap::new(),
        };
    }
    let listing = memory_files(workspace, extra)?;
    let mut report = SyncReport {
        files_unreadable: listing.skipped,
        ..SyncReport::default()
    };
    let kept = under_folders(&state, &listing.unlisted);
    let unfinished = unfinished_run(store);
    if let Some(after) = unfinished {
        report.chunks_removed += forget_strays(store, &state, after)?;
    }
    let mut run = Run {
        report,
        seen: kept,
        indexing: Vec::new(),
        batch: Batch::default(),
        marked: false,
    };
    match index_files(
        store,
        kit,
        workspace,
        &listing.files,
        &state,
        force,
        &mut run,
    ) {
        Ok(()) => {}
        Err(e) => {
            // Best effort: if even this cannot be written, the next sync indexes those files again.
            let _ = put_state(store, &run.partial_state(&state));
            return Err(e);
        }
    }
    let Run {
        mut report,
        mut seen,
        indexing,
        marked,
        ..
    } = run;
    for f in indexing {
        seen.insert(
            f.rel,
            FileState {
                sha256: f.sha256,
                ids: f.ids,
            },
        );
    }
    let removed: Vec<(&String, &FileState)> = state
        .files
        .iter()
        .filter(|(rel, _)| !seen.contains_key(*rel))
        .collect();
    let removed_ids: Vec<u64> = removed.iter().flat_map(|(_, f)| f.ids.clone()).collect();
    report.files_removed = removed.len();
    let forgotten = forget_ids(store, &removed_ids);
    let forgotten = match forgotten {
        Ok(n) => n,
        Err(e) => {
            // The removed files stay in the state, so the next sync forgets their chunks.
            let mut kept = seen;
            kept.extend(removed.into_iter().map(|(rel, f)| (rel.clone(), f.clone())));
            let _ = put_state(
                store,
                &SyncState {
                    workspace: state.workspace.clone(),
                    files: kept,
                },
            );
            return Err(e);
        }
    };
    report.chunks_removed += forgotten;
    state.files = seen;
    put_state(store, &state)?;
    if marked || unfinished.is_some() {
        store.blocking_write().put_extension(RUNNING, Vec::new())?;
    }
    Ok(report)
}

/// The files of `state` under any of `folders` (workspace-relative): those under a folder that could not be
/// listed keep what was indexed from them.
fn under_folders(state: &SyncState, folders: &[String]) -> BTreeMap<String, FileState> {
    state
        .files
        .iter()
        .filter(|(rel, _)| {
            folders.iter().any(|d| {
                rel.strip_prefix(d.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            })
        })
        .map(|(rel, f)| (rel.clone(), f.clone()))
        .collect()
}

/// The id after which an earlier sync that never finished may have saved chunks it did not record, if one did.
fn unfinished_run(store: &SharedMemory) -> Option<u64> {
    let s = store.blocking_read();
    let marker: serde_json::Value = serde_json::from_slice(s.extension(RUNNING)?).ok()?;
    marker.get("after_id")?.as_u64()
}

/// Forget the chunks an unfinished sync saved but never recorded: live workspace chunks (source `document`,
/// cited, their session their file) with ids past `after` that no file of `state` claims. Returns how many.
fn forget_strays(
    store: &SharedMemory,
    state: &SyncState,
    after: u64,
) -> Result<usize, BackendError> {
    let claimed: std::collections::HashSet<u64> = state
        .files
        .values()
        .flat_map(|f| f.ids.iter().copied())
        .collect();
    let strays: Vec<u64> = {
        let s = store.blocking_read();
        s.store()
            .records()
            .iter()
            .filter(|r| {
                r.id > after
                    && !r.tombstone
                    && r.source == Source::Document
                    && r.origin.as_ref().is_some_and(|o| o.path == r.session)
                    && !claimed.contains(&r.id)
            })
            .map(|r| r.id)
            .collect()
    };
    forget_ids(store, &strays)
}

/// One sync's progress: its report, the files it found unchanged (or could not read, keeping their state),
/// the changed files it is indexing, and the chunks waiting to be saved.
struct Run {
    report: SyncReport,
    seen: BTreeMap<String, FileState>,
    indexing: Vec<Indexing>,
    batch: Batch,
    /// Whether the store carries this run's [`RUNNING`] marker.
    marked: bool,
}

impl Run {
    /// The state to keep when the sync stops partway: what it found unchanged, the files it indexed whole,
    /// the files it had started on (their old chunks forgotten) with an empty hash and the ids of the chunks
    /// it saved for them, so the next sync indexes them again and forgets those; every other file as before.
    fn partial_state(&self, before: &SyncState) -> SyncState {
        let mut files = before.files.clone();
        files.extend(self.seen.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (i, f) in self.indexing.iter().enumerate() {
            if i >= self.batch.forget_from {
                // Its old chunks are still there and none of its new ones: as before.
                continue;
            }
            let sha256 = if f.unsaved {
                String::new()
            } else {
                f.sha256.clone()
            };
            files.insert(
                f.rel.clone(),
                FileState {
                    sha256,
                    ids: f.ids.clone(),
                },
            );
        }
        SyncState {
            workspace: before.workspace.clone(),
            files,
        }
    }
}

/// Read, chunk and save the files that changed since `state` (all of them when `force`).
fn index_files(
    store: &SharedMemory,
    kit: &SaveKit,
    workspace: &Path,
    files: &[String],
    state: &SyncState,
    force: bool,
    run: &mut Run,
) -> Result<(), BackendError> {
    let batch_len = if kit.embeds() {
        SYNC_BATCH_EMBEDDED
    } else {
        SYNC_BATCH
    };
    for rel in files {
        let full = workspace.join(rel);
        let old = state.files.get(rel);
        if rel.len() > clawhdf5_memory::validate::MAX_LABEL_BYTES {
            // Its chunks' session (the path) would be refused: the file is left out, not the whole sync.
            run.report.files_unreadable.push(format!(
                "{rel}: path longer than {} bytes",
                clawhdf5_memory::validate::MAX_LABEL_BYTES
            ));
            continue;
        }
        let bytes = match std::fs::read(&full) {
            Ok(b) => b,
            // Gone since it was listed: left out of `seen`, it counts as removed.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                run.report.files_unreadable.push(format!("{rel}: {e}"));
                if let Some(o) = old {
                    run.seen.insert(rel.clone(), o.clone());
                }
                continue;
            }
        };
        let sha = hex(&Sha256::digest(&bytes));
        if !force && old.is_some_and(|o| o.sha256 == sha) {
            run.report.files_unchanged += 1;
            run.seen
                .insert(rel.clone(), old.cloned().unwrap_or_default());
            continue;
        }
        let file = run.indexing.len();
        run.indexing.push(Indexing {
            rel: rel.clone(),
            sha256: sha,
            old_ids: old.map(|o| o.ids.clone()).unwrap_or_default(),
            ids: Vec::new(),
            unsaved: true,
        });
        let text = readable_text(bytes);
        let event_time = date_of(rel);
        // Chunks are made as the batches take them, so a large file's chunks are not all held at once.
        for ch in Chunks::new(&text, CHUNK_TOKENS, CHUNK_OVERLAP) {
            run.batch.chunks.push((
                file,
                NewMemory {
                    text: ch.text,
                    source: Some("document".into()),
                    session: Some(rel.clone()),
                    origin: Some(Origin {
                        path: rel.clone(),
                        start_line: ch.start_line,
                        end_line: ch.end_line,
                    }),
                    event_time,
                    ..NewMemory::default()
                },
            ));
            if run.batch.chunks.len() >= batch_len {
                save_batch(store, kit, run)?;
            }
        }
        run.batch.chunked = run.indexing.len();
        run.report.files_indexed += 1;
    }
    // The last chunks, and the old chunks of changed files that have no chunks now.
    save_batch(store, kit, run)
}

/// A file's text: bytes that are not UTF-8, and NULs (where HDF5 readers such as h5py would cut the text
/// short), become U+FFFD. Valid UTF-8 without NULs (the usual case) is taken over without a copy.
fn readable_text(bytes: Vec<u8>) -> String {
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    }
}

/// Write the sync state into the store (nothing is written when the store holds it already).
fn put_state(store: &SharedMemory, state: &SyncState) -> Result<(), BackendError> {
    let payload = serde_json::to_vec(state).map_err(|e| BackendError::Internal(e.to_string()))?;
    if store.blocking_read().extension(EXTENSION) == Some(payload.as_slice()) {
        return Ok(());
    }
    store.blocking_write().put_extension(EXTENSION, payload)?;
    Ok(())
}

/// Prepare the batch's chunks (the model runs here, without the store's lock), then, under the write lock,
/// forget the old chunks of the files it starts and save the chunks; then wait for them to be durable and
/// checkpoint when due, the lock released. Files whose chunks have all been cut are then saved whole.
fn save_batch(store: &SharedMemory, kit: &SaveKit, run: &mut Run) -> Result<(), BackendError> {
    if run.batch.chunks.is_empty() && run.batch.forget_from >= run.indexing.len() {
        // Nothing to save or forget (a sync that found no change): the store is not touched.
        return Ok(());
    }
    let (files, memories): (Vec<usize>, Vec<NewMemory>) =
        std::mem::take(&mut run.batch.chunks).into_iter().unzip();
    let prepared = kit.prepare_many(memories)?;
    let ticket = {
        let mut s = store.blocking_write();
        if !run.marked {
            // Before the first change: should the process die before the state is written, the next sync
            // knows which chunks may be this run's.
            let after = s.store().records().iter().map(|r| r.id).max().unwrap_or(0);
            let marker = serde_json::json!({ "after_id": after })
                .to_string()
                .into_bytes();
            s.put_extension(RUNNING, marker)?;
            run.marked = true;
        }
        for f in run
            .indexing
            .get(run.batch.forget_from..)
            .unwrap_or_default()
        {
            for &id in &f.old_ids {
                if s.forget(id)? {
                    run.report.chunks_removed += 1;
                }
            }
        }
        run.batch.forget_from = run.indexing.len();
        let mut last = None;
        for (file, p) in files.into_iter().zip(prepared) {
            let (out, ticket) = s.save_prepared(p)?;
            if !out.deduplicated {
                run.report.chunks_added += 1;
            }
            if let Some(f) = run.indexing.get_mut(file) {
                f.ids.push(out.id);
            }
            // The log is written in order: the last save's durability covers the batch.
            last = ticket.or(last);
        }
        last
    };
    if let Some(t) = ticket {
        t.wait()?;
    }
    let chunked = run.batch.chunked;
    for f in run.indexing.iter_mut().take(chunked) {
        f.unsaved = false;
    }
    checkpoint_if_due(store)
}

/// Forget `ids`, [`FORGET_BATCH`] under each hold of the write lock; returns how many were still there.
fn forget_ids(store: &SharedMemory, ids: &[u64]) -> Result<usize, BackendError> {
    let mut forgotten = 0;
    for part in ids.chunks(FORGET_BATCH) {
        let mut s = store.blocking_write();
        for &id in part {
            forgotten += usize::from(s.forget(id)?);
        }
    }
    checkpoint_if_due(store)?;
    Ok(forgotten)
}

/// Checkpoint when the log has outgrown its threshold (the write lock is taken only then).
fn checkpoint_if_due(store: &SharedMemory) -> Result<(), BackendError> {
    if store.blocking_read().checkpoint_due() {
        store.blocking_write().checkpoint_if_due()?;
    }
    Ok(())
}

/// What the last sync recorded: workspace (if any sync ran), files and chunks.
pub fn sync_counts(store: &Store) -> (Option<String>, usize, usize) {
    let state: SyncState = store
        .extension(EXTENSION)
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default();
    let ws = (!state.workspace.is_empty()).then_some(state.workspace);
    (
        ws,
        state.files.len(),
        state.files.values().map(|f| f.ids.len()).sum(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_under_an_unlisted_folder_are_kept() {
        let mut state = SyncState::default();
        for rel in [
            "memory/a.md",
            "memory/sub/b.md",
            "memory/subway.md",
            "notes/c.md",
        ] {
            state.files.insert(rel.into(), FileState::default());
        }
        let kept = under_folders(&state, &["memory/sub".into(), "notes".into()]);
        let names: Vec<&str> = kept.keys().map(String::as_str).collect();
        assert_eq!(names, ["memory/sub/b.md", "notes/c.md"]);
        assert!(under_folders(&state, &[]).is_empty());
    }

    #[test]
    fn file_text_replaces_what_readers_would_mangle() {
        assert_eq!(
            readable_text(b"plain \xc3\xa9t\xc3\xa9".to_vec()),
            "plain \u{e9}t\u{e9}"
        );
        assert_eq!(readable_text(b"a\0b".to_vec()), "a\u{FFFD}b");
        assert_eq!(
            readable_text(b"bad \xff byte\0".to_vec()),
            "bad \u{FFFD} byte\u{FFFD}"
        );
        assert_eq!(readable_text(Vec::new()), "");
    }
}
