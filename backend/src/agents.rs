//! Per-agent isolation: every agent id maps to its own store file under the store directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::RwLock;

use clawhdf5_memory::cognitive::{AgentMemory, CognitiveConfig};
use clawhdf5_memory::{SaveKit, StoreOptions};

use crate::error::BackendError;

/// Agent ids are file-name safe: letters, digits, `_`, `.`, `-`; 1 to 64 characters; no leading dot.
pub fn validate_agent(agent: &str) -> Result<(), BackendError> {
    let ok = (1..=64).contains(&agent.len())
        && !agent.starts_with('.')
        && agent
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(BackendError::Invalid(format!(
            "agent id {agent:?} must be 1-64 characters of letters, digits, '_', '.', '-' (not starting with '.')"
        )))
    }
}

/// An agent's open memory: its store with the cognitive layer (knowledge updates, graph, time, re-ranking).
pub type SharedMemory = Arc<RwLock<AgentMemory>>;

/// Open stores, one per agent, opened on first use.
pub struct AgentStores {
    dir: PathBuf,
    options: StoreOptions,
    /// Each open store with what preparing a save for it needs (taken without its lock).
    open: Mutex<HashMap<String, (SharedMemory, SaveKit)>>,
    /// Per agent, held by the workspace sync running for it (one at a time: a second waits, then finds the
    /// files the first indexed unchanged).
    syncs: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl AgentStores {
    /// Stores live in `dir` (created if missing) as `<agent>.h5`.
    pub fn new(dir: &Path, options: StoreOptions) -> Result<Self, BackendError> {
        std::fs::create_dir_all(dir).map_err(|source| BackendError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        Ok(AgentStores {
            dir: dir.to_path_buf(),
            options,
            open: Mutex::new(HashMap::new()),
            syncs: Mutex::new(HashMap::new()),
        })
    }

    /// The file of an agent's store.
    pub fn path_of(&self, agent: &str) -> PathBuf {
        self.dir.join(format!("{agent}.h5"))
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The lock a workspace sync of `agent`'s store holds while it runs.
    pub fn sync_lock(&self, agent: &str) -> Arc<Mutex<()>> {
        let mut syncs = self.syncs.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(syncs.entry(agent.to_string()).or_default())
    }

    /// The agent's store, opening (or creating) it on first use.
    pub fn get(&self, agent: &str) -> Result<SharedMemory, BackendError> {
        Ok(self.get_with_kit(agent)?.0)
    }

    /// The agent's store (opened on first use) and its [`SaveKit`], for preparing a save before taking the
    /// store's lock.
    pub fn get_with_kit(&self, agent: &str) -> Result<(SharedMemory, SaveKit), BackendError> {
        validate_agent(agent)?;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, kit)) = open.get(agent) {
            return Ok((Arc::clone(s), kit.clone()));
        }
        let mut opts = self.options.clone();
        opts.default_agent = agent.to_string();
        let store = AgentMemory::open(&self.path_of(agent), opts, CognitiveConfig::default())?;
        let kit = store.save_kit();
        let store = Arc::new(RwLock::new(store));
        open.insert(agent.to_string(), (Arc::clone(&store), kit.clone()));
        Ok((store, kit))
    }

    /// Checkpoint every open store; returns the first error but tries them all.
    pub fn checkpoint_all(&self) -> Result<(), BackendError> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let mut first = None;
        for (store, _) in open.values() {
            let mut s = store.blocking_write();
            if let Err(e) = s.checkpoint() {
                first.get_or_insert(e);
            }
        }
        match first {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids_are_checked() {
        for ok in ["main", "agent-7", "a.b_c"] {
            assert!(validate_agent(ok).is_ok(), "{ok}");
        }
        for bad in ["", "../x", "a/b", ".hidden", &"x".repeat(65)] {
            assert!(validate_agent(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn agents_get_separate_files() {
        let dir = tempfile::tempdir().unwrap();
        let stores = AgentStores::new(dir.path(), StoreOptions::default()).unwrap();
        let a = stores.get("alice").unwrap();
        let b = stores.get("bob").unwrap();
        a.blocking_write()
            .save(clawhdf5_memory::NewMemory::text("alice likes tea"))
            .unwrap();
        assert_eq!(a.blocking_read().store().len(), 1);
        assert_eq!(b.blocking_read().store().len(), 0);
        assert!(stores.path_of("alice").exists());
        assert!(Arc::ptr_eq(&a, &stores.get("alice").unwrap()));
    }
}
