//! The `MemoryBackend` trait that agents and frameworks call, and its implementation over clawhdf5 stores.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use clawhdf5_memory::{
    now_ms, NewMemory, Record, SaveOutcome, SearchHit, SearchQuery, StoreOptions,
};
use serde::Serialize;

use crate::agents::{AgentStores, SharedMemory};
use crate::error::BackendError;
use crate::workspace::{self, FileSlice, SyncReport};

/// What to forget.
#[derive(Clone, Debug, PartialEq)]
pub enum ForgetTarget {
    /// One record.
    Id(u64),
    /// Every record the query finds with at least this score (at most `limit`).
    Query {
        query: String,
        min_score: f32,
        limit: usize,
    },
}

/// A backend's state, for `status`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackendStatus {
    /// Always "clawhdf5".
    pub backend: &'static str,
    /// Live records of the agent.
    pub records: usize,
    /// Bytes of the agent's store file.
    pub file_bytes: u64,
    /// Store schema version.
    pub schema_version: u32,
    /// Path of the agent's store file.
    pub store_path: String,
    /// Workspace indexed by `sync`, if any.
    pub workspace: Option<String>,
    /// Files indexed by the last sync.
    pub files: usize,
    /// Chunks indexed by the last sync.
    pub chunks: usize,
    /// Records carrying an embedding.
    pub embedded: usize,
    /// Embedding model, if any.
    pub embedding_model: Option<String>,
    /// Vector search available.
    pub vector: bool,
    /// Keyword search available (always).
    pub fts: bool,
    /// Why the last checkpoint that fell due failed (a full disk, say), while it keeps failing: the
    /// store's changes are safe in its log meanwhile and are folded by the next checkpoint that succeeds.
    pub checkpoint_error: Option<String>,
    /// Records whose vectors the HNSW graph does not place yet: searched exactly until a background fold
    /// takes them in.
    pub unindexed_rows: usize,
    /// Durable writes of the write-ahead log since the store was opened; each carries every save waiting at
    /// that moment (group commit).
    pub log_writes: u64,
    /// Log entries (saves, updates, forgets) those writes made durable.
    pub log_entries: u64,
    /// Background folds of new rows into the vector graph taken in since the store was opened.
    pub index_folds: u64,
    /// CPU time those folds spent, in milliseconds.
    pub index_fold_cpu_ms: f64,
}

/// A sync request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncRequest {
    /// Workspace root; the backend's default when absent.
    pub workspace: Option<PathBuf>,
    /// Extra files or directories, relative to the workspace.
    pub extra_paths: Vec<String>,
    /// Re-index every file even when unchanged.
    pub force: bool,
}

/// What agents and frameworks call. Every method is per agent; nothing crosses agents.
#[async_trait]
pub trait MemoryBackend: Send + Sync {
    /// Save a memory; returns once it is durable.
    async fn save(&self, agent: &str, memory: NewMemory) -> Result<SaveOutcome, BackendError>;
    /// Ranked results for a query.
    async fn search(&self, agent: &str, query: SearchQuery)
        -> Result<Vec<SearchHit>, BackendError>;
    /// Automatic recall for a user turn: `None` when the decision gate finds nothing to look up ("ok",
    /// "thanks!"), the ranked results of [`Self::search`] otherwise.
    async fn recall(
        &self,
        agent: &str,
        query: SearchQuery,
    ) -> Result<Option<Vec<SearchHit>>, BackendError>;
    /// One record by id.
    async fn get(&self, agent: &str, id: u64) -> Result<Record, BackendError>;
    /// Lines of a synced workspace file.
    async fn read_file(
        &self,
        agent: &str,
        path: &str,
        from: Option<u32>,
        lines: Option<u32>,
    ) -> Result<FileSlice, BackendError>;
    /// Forget records; returns the ids forgotten.
    async fn forget(&self, agent: &str, target: ForgetTarget) -> Result<Vec<u64>, BackendError>;
    /// State of the agent's store.
    async fn status(&self, agent: &str) -> Result<BackendStatus, BackendError>;
    /// Index a workspace's memory files.
    async fn sync(&self, agent: &str, request: SyncRequest) -> Result<SyncReport, BackendError>;
    /// Checkpoint everything; the backend stays usable.
    async fn close(&self) -> Result<(), BackendError>;
}

/// The clawhdf5 implementation: one store file per agent under a directory.
pub struct HdfBackend {
    stores: Arc<AgentStores>,
    workspace: Option<PathBuf>,
    /// Per agent, the error of its last due checkpoint while checkpoints keep failing.
    checkpoint_errors: CheckpointErrors,
    /// How long after a failed checkpoint the next is tried (each try may write up to the whole store).
    checkpoint_retry: Duration,
}

/// Default of [`HdfBackend::set_checkpoint_retry`].
const CHECKPOINT_RETRY: Duration = Duration::from_secs(30);

impl HdfBackend {
    /// A backend keeping stores in `dir`, syncing `workspace` by default.
    pub fn new(
        dir: &Path,
        workspace: Option<PathBuf>,
        options: StoreOptions,
    ) -> Result<Self, BackendError> {
        Ok(HdfBackend {
            stores: Arc::new(AgentStores::new(dir, options)?),
            workspace,
            checkpoint_errors: CheckpointErrors::default(),
            checkpoint_retry: CHECKPOINT_RETRY,
        })
    }

    /// How long after a failed checkpoint (a full disk, say) saves and searches wait before trying the next:
    /// 30 seconds unless set. Meanwhile their changes stay in the log, as they always are until folded.
    pub fn set_checkpoint_retry(&mut self, after: Duration) {
        self.checkpoint_retry = after;
    }

    /// The agents whose last due checkpoint failed (a panic elsewhere does not hide them).
    fn failed_checkpoints(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.checkpoint_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The per-agent stores.
    pub fn stores(&self) -> &Arc<AgentStores> {
        &self.stores
    }
}

/// Run blocking store work off the async executor.
async fn blocking<T, F>(f: F) -> Result<T, BackendError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, BackendError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BackendError::Internal(e.to_string()))?
}

/// Checkpoint `store` when its log has outgrown the checkpoint threshold. Saves grow the log, and so do
/// searches (each logs the access statistics of what it returned), so both call this: a store that is only
/// searched would otherwise replay an ever longer log at every start. The write lock is taken only when a
/// checkpoint is due, so concurrent calls do not queue for it; a store busy with a writer is checked by the
/// next call.
///
/// A failed checkpoint does not fail the call that triggered it: that save is already durable in the log and
/// that search has its results, and the log keeps every change until a later checkpoint folds it. The
/// failure is kept for `status` and told once on standard error (a server's log).
async fn checkpoint_when_due(store: SharedMemory, agent: &str, backend: &HdfBackend) {
    let due = store.try_read().is_ok_and(|s| s.checkpoint_due());
    let waiting = || {
        backend
            .failed_checkpoints()
            .get(agent)
            .is_some_and(|(_, at)| at.elapsed() < backend.checkpoint_retry)
    };
    if !due || waiting() {
        return;
    }
    let outcome = blocking(move || {
        store.blocking_write().checkpoint_if_due()?;
        Ok(())
    })
    .await;
    let mut errors = backend.failed_checkpoints();
    match outcome {
        Ok(()) => {
            errors.remove(agent);
        }
        Err(e) => {
            let message = e.to_string();
            if errors.get(agent).is_none_or(|(m, _)| *m != message) {
                eprintln!(
                    "clawhdf5: warning: agent {agent:?}: checkpoint failed, changes stay in the log: {message}"
                );
            }
            errors.insert(agent.to_string(), (message, Instant::now()));
        }
    }
}

/// Per agent, the error of its last due checkpoint and when it failed, while checkpoints keep failing.
type CheckpointErrors = std::sync::Mutex<HashMap<String, (String, Instant)>>;

/// Hits in the re-ranker's order, each reporting the absolute retrieval evidence that `min_score` filters on
/// (the re-ranked score is relative to the query's best candidate).
fn reported_hits(recall: clawhdf5_memory::cognitive::Recall) -> Vec<SearchHit> {
    recall
        .hits
        .into_iter()
        .map(|h| SearchHit {
            score: h.retrieval_score,
            keyword_score: h.keyword_score,
            vector_score: h.vector_score,
            record: h.record,
        })
        .collect()
}

#[async_trait]
impl MemoryBackend for HdfBackend {
    async fn save(&self, agent: &str, memory: NewMemory) -> Result<SaveOutcome, BackendError> {
        let (store, kit) = self.stores.get_with_kit(agent)?;
        // The text's terms (and its embedding, when the model runs) are made before the store's lock is
        // taken, so concurrent saves and searches do not wait for them.
        let prepared = if memory.embedding.is_some() || !kit.embeds() {
            kit.prepare(memory)?
        } else {
            // The model runs: on a blocking thread.
            blocking(move || Ok(kit.prepare(memory)?)).await?
        };
        // What is left is in-memory work and a log append (nothing here waits for the disk): on this task, the
        // lock awaited without holding a thread.
        let (outcome, ticket) = store.write().await.save_prepared(prepared)?;
        // Durability is awaited, not blocked on: the save holds neither the lock nor a thread while the log's
        // syncer fsyncs, and concurrent saves share that fsync (group commit).
        if let Some(t) = ticket {
            t.durable().await?;
        }
        checkpoint_when_due(store, agent, self).await;
        Ok(outcome)
    }

    async fn search(
        &self,
        agent: &str,
        query: SearchQuery,
    ) -> Result<Vec<SearchHit>, BackendError> {
        let store = self.stores.get(agent)?;
        let shared = store.clone();
        let hits = blocking(move || {
            let recall = store.blocking_read().search(&query, now_ms())?;
            Ok(reported_hits(recall))
        })
        .await?;
        checkpoint_when_due(shared, agent, self).await;
        Ok(hits)
    }

    async fn recall(
        &self,
        agent: &str,
        query: SearchQuery,
    ) -> Result<Option<Vec<SearchHit>>, BackendError> {
        let store = self.stores.get(agent)?;
        let shared = store.clone();
        let hits = blocking(move || {
            let recall = store.blocking_read().recall_for_turn(&query, now_ms())?;
            Ok(recall.map(reported_hits))
        })
        .await?;
        checkpoint_when_due(shared, agent, self).await;
        Ok(hits)
    }

    async fn get(&self, agent: &str, id: u64) -> Result<Record, BackendError> {
        let store = self.stores.get(agent)?;
        blocking(move || {
            let s = store.blocking_read();
            match s.store().get(id) {
                Some(mut r) if !r.tombstone => {
                    r.embedding = None;
                    Ok(r)
                }
                _ => Err(BackendError::NotFound(format!("no memory with id {id}"))),
            }
        })
        .await
    }

    async fn read_file(
        &self,
        agent: &str,
        path: &str,
        from: Option<u32>,
        lines: Option<u32>,
    ) -> Result<FileSlice, BackendError> {
        crate::agents::validate_agent(agent)?;
        let ws = self.workspace.clone().ok_or_else(|| {
            BackendError::Invalid("no workspace is configured (start with --workspace)".into())
        })?;
        let path = path.to_string();
        blocking(move || workspace::read_lines(&ws, &path, from, lines)).await
    }

    async fn forget(&self, agent: &str, target: ForgetTarget) -> Result<Vec<u64>, BackendError> {
        let store = self.stores.get(agent)?;
        blocking(move || {
            let mut s = store.blocking_write();
            let ids: Vec<u64> = match target {
                ForgetTarget::Id(id) => vec![id],
                ForgetTarget::Query {
                    query,
                    min_score,
                    limit,
                } => {
                    let mut q = SearchQuery::new(query, limit);
                    q.min_score = Some(min_score);
                    s.search(&q, now_ms())?
                        .hits
                        .into_iter()
                        .map(|h| h.record.id)
                        .collect()
                }
            };
            let mut done = Vec::new();
            for id in ids {
                if s.forget(id)? {
                    done.push(id);
                }
            }
            Ok(done)
        })
        .await
    }

    async fn status(&self, agent: &str) -> Result<BackendStatus, BackendError> {
        let store = self.stores.get(agent)?;
        let workspace = self.workspace.as_ref().map(|w| w.display().to_string());
        let checkpoint_error = self
            .failed_checkpoints()
            .get(agent)
            .map(|(message, _)| message.clone());
        blocking(move || {
            let s = store.blocking_read();
            let st = s.store().stats();
            let log = s.store().log_stats();
            let folds = s.store().index_stats();
            let (synced, files, chunks) = workspace::sync_counts(s.store());
            let workspace = synced.or(workspace);
            Ok(BackendStatus {
                backend: "clawhdf5",
                records: st.records,
                file_bytes: st.file_bytes,
                schema_version: st.schema_version,
                store_path: st.path.display().to_string(),
                workspace,
                files,
                chunks,
                embedded: st.embedded,
                embedding_model: st.embedding_model,
                vector: st.embedded > 0,
                fts: true,
                checkpoint_error,
                unindexed_rows: st.unindexed_rows,
                log_writes: log.syncs,
                log_entries: log.entries,
                index_folds: folds.jobs,
                index_fold_cpu_ms: folds.cpu.as_secs_f64() * 1e3,
            })
        })
        .await
    }

    async fn sync(&self, agent: &str, request: SyncRequest) -> Result<SyncReport, BackendError> {
        let (store, kit) = self.stores.get_with_kit(agent)?;
        let running = self.stores.sync_lock(agent);
        let ws = request
            .workspace
            .clone()
            .or_else(|| self.workspace.clone())
            .ok_or_else(|| {
                BackendError::Invalid("no workspace given and none configured".into())
            })?;
        if !ws.is_dir() {
            return Err(BackendError::NotFound(format!(
                "workspace {} is not a directory",
                ws.display()
            )));
        }
        // The store's lock is taken batch by batch inside: searches answer between batches.
        blocking(move || {
            let _one_at_a_time = running.lock().unwrap_or_else(|p| p.into_inner());
            workspace::sync(&store, &kit, &ws, &request.extra_paths, request.force)
        })
        .await
    }

    async fn close(&self) -> Result<(), BackendError> {
        let stores = Arc::clone(&self.stores);
        blocking(move || stores.checkpoint_all()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawhdf5_memory::Store;

    fn vector(i: usize) -> Vec<f32> {
        (0..8).map(|j| ((i * 8 + j) as f32 * 0.37).sin()).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_saves_are_all_durable_once_acknowledged() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(HdfBackend::new(dir.path(), None, StoreOptions::default()).unwrap());
        let tasks: Vec<_> = (0..72)
            .map(|i| {
                let b = Arc::clone(&backend);
                tokio::spawn(async move {
                    let mut m = NewMemory::text(format!("memory number {i} about tea"));
                    // Most bring their embedding (saved on the task), some do not (saved on a blocking thread).
                    if i % 9 != 0 {
                        m.embedding = Some(vector(i));
                    }
                    b.save("main", m).await
                })
            })
            .collect();
        let mut ids = Vec::new();
        for t in tasks {
            ids.push(t.await.unwrap().unwrap().id);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 72);
        // Acknowledged means in the log on disk: a copy taken now, without closing, holds every save.
        let path = backend.stores().path_of("main");
        let copy = dir.path().join("copy.h5");
        std::fs::copy(&path, &copy).unwrap();
        std::fs::copy(
            clawhdf5_memory::wal_path(&path),
            clawhdf5_memory::wal_path(&copy),
        )
        .unwrap();
        let reopened = Store::open(&copy).unwrap();
        assert_eq!(reopened.len(), 72);
    }

    /// A model that takes this long per call.
    struct SlowModel(std::time::Duration);

    impl clawhdf5_memory::embed::Embedder for SlowModel {
        fn model_id(&self) -> &str {
            "slow-v1"
        }
        fn dim(&self) -> usize {
            8
        }
        fn embed_batch(
            &self,
            texts: &[&str],
        ) -> Result<Vec<Vec<f32>>, clawhdf5_memory::embed::EmbedError> {
            std::thread::sleep(self.0);
            Ok(texts.iter().enumerate().map(|(i, _)| vector(i)).collect())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_search_does_not_wait_for_the_model_of_a_save() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions {
            embedder: Some(Arc::new(SlowModel(std::time::Duration::from_secs(1)))),
            ..StoreOptions::default()
        };
        let backend = Arc::new(HdfBackend::new(dir.path(), None, opts).unwrap());
        let mut first = NewMemory::text("the spare key is under the blue pot");
        first.embedding = Some(vector(1));
        backend.save("main", first).await.unwrap();
        let saving = {
            let b = Arc::clone(&backend);
            tokio::spawn(async move { b.save("main", NewMemory::text("the boat is red")).await })
        };
        // The save is now inside its model, which holds no lock on the store.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let mut q = SearchQuery::new("spare key", 5);
        q.mode = clawhdf5_memory::SearchMode::Keyword;
        let started = std::time::Instant::now();
        let hits = backend.search("main", q).await.unwrap();
        assert_eq!(hits.len(), 1);
        // The model still has most of its second to run.
        assert!(
            started.elapsed() < std::time::Duration::from_millis(600),
            "the search waited {:?} for the save's model",
            started.elapsed()
        );
        let saved = saving.await.unwrap().unwrap();
        assert!(!saved.deduplicated);
    }

    /// A backend over a fresh workspace with a `memory/` folder, its stores embedding with `model`.
    fn workspace_backend(
        model: SlowModel,
    ) -> (tempfile::TempDir, tempfile::TempDir, Arc<HdfBackend>) {
        let dir = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("memory")).unwrap();
        let opts = StoreOptions {
            embedder: Some(Arc::new(model)),
            ..StoreOptions::default()
        };
        let backend =
            Arc::new(HdfBackend::new(dir.path(), Some(ws.path().to_path_buf()), opts).unwrap());
        (dir, ws, backend)
    }

    fn keyword(q: &str) -> SearchQuery {
        let mut q = SearchQuery::new(q, 10);
        q.mode = clawhdf5_memory::SearchMode::Keyword;
        q
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_search_answers_while_a_sync_embeds_the_workspace() {
        let (_dir, ws, backend) =
            workspace_backend(SlowModel(std::time::Duration::from_millis(400)));
        for day in 1..=6 {
            std::fs::write(
                ws.path().join(format!("memory/2026-05-0{day}.md")),
                format!("Day {day}: watered the tomatoes in the garden shed.\n"),
            )
            .unwrap();
        }
        let mut m = NewMemory::text("the spare key is under the blue pot");
        m.embedding = Some(vector(1));
        backend.save("main", m).await.unwrap();
        let syncing = {
            let b = Arc::clone(&backend);
            tokio::spawn(async move { b.sync("main", SyncRequest::default()).await })
        };
        // The sync is in its model now (six chunks, two a call: 1.2 s of it in all).
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let started = std::time::Instant::now();
        let hits = backend.search("main", keyword("spare key")).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert!(
            started.elapsed() < std::time::Duration::from_millis(300),
            "the search waited {:?} for the sync",
            started.elapsed()
        );
        assert!(!syncing.is_finished(), "the sync ended before the search");
        let report = syncing.await.unwrap().unwrap();
        assert_eq!((report.files_indexed, report.chunks_added), (6, 6));
        let hits = backend.search("main", keyword("tomatoes")).await.unwrap();
        assert_eq!(hits.len(), 6);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_edit_keeps_the_chunks_it_left_unchanged() {
        let (_dir, ws, backend) = workspace_backend(SlowModel(std::time::Duration::ZERO));
        let note = ws.path().join("memory/2026-05-01.md");
        let mut text: String = (1..=40)
            .map(|i| format!("Line {i}: the heron nests by the old mill pond, entry {i}.\n"))
            .collect();
        std::fs::write(&note, &text).unwrap();
        let first = backend.sync("main", SyncRequest::default()).await.unwrap();
        assert!(first.chunks_added >= 2, "{first:?}");
        // Lines added at the end change the last chunk only: the first is saved again, not taken for a
        // duplicate of the copy the edit forgets.
        text.push_str("Line 41: an otter swam past at dusk.\n");
        std::fs::write(&note, &text).unwrap();
        let second = backend.sync("main", SyncRequest::default()).await.unwrap();
        assert_eq!(second.files_indexed, 1);
        assert_eq!(second.chunks_removed, first.chunks_added);
        assert_eq!(second.chunks_added, first.chunks_added);
        let hits = backend.search("main", keyword("heron")).await.unwrap();
        assert_eq!(hits.len(), first.chunks_added, "{hits:?}");
        assert!(hits
            .iter()
            .any(|h| h.record.origin.as_ref().is_some_and(|o| o.start_line == 1)));
        let otter = backend.search("main", keyword("otter")).await.unwrap();
        assert_eq!(otter.len(), 1);
        let status = backend.status("main").await.unwrap();
        assert_eq!((status.files, status.chunks), (1, first.chunks_added));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_that_is_only_searched_still_checkpoints_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions {
            auto_checkpoint_bytes: 4096,
            ..StoreOptions::default()
        };
        let backend = HdfBackend::new(dir.path(), None, opts).unwrap();
        let mut m = NewMemory::text("the spare key is under the blue pot");
        m.embedding = Some(vector(1));
        let id = backend.save("main", m).await.unwrap().id;
        let searches = 400;
        for _ in 0..searches {
            let mut q = SearchQuery::new("spare key", 5);
            q.mode = clawhdf5_memory::SearchMode::Keyword;
            assert_eq!(backend.search("main", q).await.unwrap().len(), 1);
        }
        // Every search logged the access statistics of its hit: far more than 4 KiB, folded as it grew.
        let store = backend.stores().get("main").unwrap();
        assert!(!store.read().await.checkpoint_due());
        let path = backend.stores().path_of("main");
        let wal = std::fs::read(clawhdf5_memory::wal_path(&path)).unwrap();
        let used = wal.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
        assert!(used < 8192, "the log holds {used} bytes");
        // Nothing was lost by folding: every access is counted once the backend closes.
        drop(store);
        backend.close().await.unwrap();
        drop(backend);
        let reopened = Store::open(&path).unwrap();
        assert_eq!(reopened.get(id).unwrap().access_count, searches);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_checkpoint_that_finds_the_disk_full_fails_neither_the_save_nor_the_search() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions {
            auto_checkpoint_bytes: 1,
            ..StoreOptions::default()
        };
        let mut backend = HdfBackend::new(dir.path(), None, opts).unwrap();
        // The store exists (opened by `status`); its first vectors make the next checkpoint rewrite the file
        // whole, through `<path>.tmp`, which leads to /dev/full (every write fails with ENOSPC).
        assert_eq!(backend.status("main").await.unwrap().checkpoint_error, None);
        let path = backend.stores().path_of("main");
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
        let mut m = NewMemory::text("the spare key is under the blue pot");
        m.embedding = Some(vector(1));
        let first = backend.save("main", m).await.unwrap().id;
        let failed = backend.status("main").await.unwrap().checkpoint_error;
        assert!(
            failed
                .as_deref()
                .is_some_and(|e| e.contains("No space left")),
            "{failed:?}"
        );
        let mut q = SearchQuery::new("spare key", 5);
        q.mode = clawhdf5_memory::SearchMode::Keyword;
        assert_eq!(backend.search("main", q).await.unwrap()[0].record.id, first);
        // Room again, but the next try waits out the retry delay (30 s by default)...
        let _ = std::fs::remove_file(&tmp);
        let mut m = NewMemory::text("the bike lock code is 4312");
        m.embedding = Some(vector(2));
        let second = backend.save("main", m).await.unwrap().id;
        assert!(backend
            .status("main")
            .await
            .unwrap()
            .checkpoint_error
            .is_some());
        // ...after which the next due checkpoint folds the log and the error is gone.
        backend.set_checkpoint_retry(Duration::ZERO);
        let mut m = NewMemory::text("the boiler is serviced every May");
        m.embedding = Some(vector(3));
        backend.save("main", m).await.unwrap();
        assert_eq!(backend.status("main").await.unwrap().checkpoint_error, None);
        backend.close().await.unwrap();
        drop(backend);
        let reopened = Store::open_read_only(&path).unwrap();
        assert!(reopened.get(first).is_some() && reopened.get(second).is_some());
    }
}
