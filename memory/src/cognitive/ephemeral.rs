//! Ephemeral tier: an in-process key/value scratchpad with time-to-live, capacity eviction (least recently
//! used first) and embedding search. Nothing here is written to disk; an entry worth keeping is promoted
//! into the durable store with `AgentMemory::promote_ephemeral`.

use std::collections::{BTreeSet, HashMap};

use super::sketch::dot;

/// One scratchpad entry.
#[derive(Clone, Debug, PartialEq)]
pub struct EphemeralEntry {
    /// The stored text.
    pub value: String,
    /// Unit-length embedding, if one was given.
    pub embedding: Option<Vec<f32>>,
    /// Expiry time (ms), `None` for no expiry.
    pub expires_at: Option<i64>,
    /// When it was stored (ms).
    pub stored_at: i64,
    tick: u64,
}

/// The scratchpad.
#[derive(Clone, Debug)]
pub struct EphemeralStore {
    capacity: usize,
    default_ttl_ms: Option<i64>,
    entries: HashMap<String, EphemeralEntry>,
    /// (last-use tick, key): the least recently used entry first.
    lru: BTreeSet<(u64, String)>,
    /// (expiry, key).
    expiry: BTreeSet<(i64, String)>,
    tick: u64,
    evicted: u64,
}

fn unit(v: &[f32]) -> Option<Vec<f32>> {
    let n = dot(v, v).sqrt();
    (n > 0.0 && n.is_finite()).then(|| v.iter().map(|x| x / n).collect())
}

impl EphemeralStore {
    /// A scratchpad holding at most `capacity` entries, each living `default_ttl_ms` unless told otherwise.
    pub fn new(capacity: usize, default_ttl_ms: Option<i64>) -> Self {
        EphemeralStore {
            capacity: capacity.max(1),
            default_ttl_ms,
            entries: HashMap::new(),
            lru: BTreeSet::new(),
            expiry: BTreeSet::new(),
            tick: 0,
            evicted: 0,
        }
    }

    /// Live entries (expired ones not yet purged included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries evicted for capacity so far.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    fn unlink(&mut self, key: &str) -> Option<EphemeralEntry> {
        let e = self.entries.remove(key)?;
        self.lru.remove(&(e.tick, key.to_string()));
        if let Some(t) = e.expires_at {
            self.expiry.remove(&(t, key.to_string()));
        }
        Some(e)
    }

    /// Store `value` under `key` at time `now` (ms), replacing any previous value. `ttl_ms` overrides the
    /// default time-to-live. Evicts the least recently used entry when full.
    pub fn put(
        &mut self,
        key: &str,
        value: &str,
        embedding: Option<&[f32]>,
        ttl_ms: Option<i64>,
        now: i64,
    ) {
        self.purge_expired(now);
        self.unlink(key);
        while self.entries.len() >= self.capacity {
            let Some((_, victim)) = self.lru.iter().next().cloned() else {
                break;
            };
            self.unlink(&victim);
            self.evicted += 1;
        }
        self.tick += 1;
        let expires_at = ttl_ms
            .or(self.default_ttl_ms)
            .map(|t| now.saturating_add(t.max(0)));
        if let Some(t) = expires_at {
            self.expiry.insert((t, key.to_string()));
        }
        self.lru.insert((self.tick, key.to_string()));
        self.entries.insert(
            key.to_string(),
            EphemeralEntry {
                value: value.to_string(),
                embedding: embedding.and_then(unit),
                expires_at,
                stored_at: now,
                tick: self.tick,
            },
        );
    }

    /// The live entry under `key` at `now`, marking it recently used.
    pub fn get(&mut self, key: &str, now: i64) -> Option<&EphemeralEntry> {
        self.purge_expired(now);
        let old_tick = self.entries.get(key)?.tick;
        self.tick += 1;
        self.lru.remove(&(old_tick, key.to_string()));
        self.lru.insert((self.tick, key.to_string()));
        let e = self.entries.get_mut(key)?;
        e.tick = self.tick;
        Some(e)
    }

    /// Remove and return the entry under `key`.
    pub fn remove(&mut self, key: &str) -> Option<EphemeralEntry> {
        self.unlink(key)
    }

    /// Drop every entry whose time-to-live has passed at `now`; returns how many.
    pub fn purge_expired(&mut self, now: i64) -> usize {
        let mut n = 0;
        while let Some((t, key)) = self.expiry.iter().next().cloned() {
            if t > now {
                break;
            }
            self.unlink(&key);
            n += 1;
        }
        n
    }

    /// The `k` live entries whose embeddings are most similar (cosine) to `query`, best first.
    pub fn search(&mut self, query: &[f32], k: usize, now: i64) -> Vec<(String, f32)> {
        self.purge_expired(now);
        let Some(q) = unit(query) else {
            return Vec::new();
        };
        if k == 0 {
            return Vec::new();
        }
        // Score by reference, keep the best k, clone only their keys.
        let mut scored: Vec<(&String, f32)> = self
            .entries
            .iter()
            .filter_map(|(key, e)| {
                let v = e.embedding.as_ref()?;
                (v.len() == q.len()).then(|| (key, dot(v, &q)))
            })
            .collect();
        let cmp = |a: &(&String, f32), b: &(&String, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(b.0));
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, cmp);
            scored.truncate(k);
        }
        scored.sort_by(cmp);
        scored
            .into_iter()
            .map(|(key, s)| (key.clone(), s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_expires() {
        let mut e = EphemeralStore::new(10, Some(100));
        e.put("a", "alpha", None, None, 0);
        e.put("b", "beta", None, Some(1000), 0);
        assert!(e.get("a", 50).is_some());
        assert!(e.get("a", 100).is_none());
        assert!(e.get("b", 500).is_some());
        assert_eq!(e.len(), 1);
    }

    #[test]
    fn capacity_evicts_least_recently_used() {
        let mut e = EphemeralStore::new(2, None);
        e.put("a", "1", None, None, 0);
        e.put("b", "2", None, None, 0);
        e.get("a", 1);
        e.put("c", "3", None, None, 2);
        assert!(e.get("b", 3).is_none());
        assert!(e.get("a", 3).is_some());
        assert_eq!(e.evicted(), 1);
        // Replacing a key does not evict.
        e.put("c", "4", None, None, 4);
        assert_eq!(e.len(), 2);
        assert_eq!(e.get("c", 5).unwrap().value, "4");
    }

    #[test]
    fn embedding_search() {
        let mut e = EphemeralStore::new(10, None);
        e.put("x", "east", Some(&[1.0, 0.0]), None, 0);
        e.put("y", "north", Some(&[0.0, 2.0]), None, 0);
        e.put("z", "no vector", None, None, 0);
        let hits = e.search(&[0.1, 1.0], 5, 1);
        assert_eq!(hits[0].0, "y");
        assert_eq!(hits.len(), 2);
        assert!(e.search(&[0.0, 0.0], 5, 1).is_empty());
    }
}
