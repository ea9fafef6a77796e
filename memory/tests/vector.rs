//! Vector search through the store: the HNSW graph above the exact-scan threshold, its persistence, and the
//! embedder hook (saved texts and queries embedded by the store, model mismatch refused).

use std::sync::Arc;

use clawhdf5_memory::embed::{EmbedError, Embedder};
use clawhdf5_memory::{
    MemoryError, NewMemory, SearchMode, SearchQuery, Store, StoreConfig, StoreOptions,
};

/// A deterministic toy embedder: bag of hashed words into 32 buckets.
struct HashEmbedder(&'static str);

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        self.0
    }
    fn dim(&self) -> usize {
        32
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; 32];
                for w in t.to_lowercase().split_whitespace() {
                    let h = w
                        .bytes()
                        .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
                    v[(h % 32) as usize] += 1.0;
                }
                v[0] += 0.01;
                v
            })
            .collect())
    }
}

fn unit(i: usize, dim: usize) -> Vec<f32> {
    // Deterministic pseudo-random vectors.
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2000) as f32 / 1000.0 - 1.0
        })
        .collect()
}

#[test]
fn graph_search_persists_and_skips_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let opts = StoreOptions {
        config: StoreConfig {
            exact_search_threshold: 100,
            ..StoreConfig::default()
        },
        durability: clawhdf5_memory::Durability::None,
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts.clone()).unwrap();
    let mut ids = Vec::new();
    for i in 0..400 {
        let out = s
            .save(NewMemory {
                embedding: Some(unit(i, 24)),
                ..NewMemory::text(format!("vector memory {i}"))
            })
            .unwrap();
        ids.push(out.id);
    }
    let query = |s: &Store, i: usize| {
        let mut q = SearchQuery::new("", 1);
        q.mode = SearchMode::Vector;
        q.embedding = Some(unit(i, 24));
        s.search(&q).unwrap()
    };
    for i in [0, 17, 250, 399] {
        assert_eq!(
            query(&s, i)[0].record.id,
            ids[i],
            "row {i} finds itself through the graph"
        );
    }
    s.forget(ids[17]).unwrap();
    assert_ne!(query(&s, 17)[0].record.id, ids[17]);
    s.close().unwrap();

    let s = Store::open_with(&p, opts).unwrap();
    for i in [0, 250, 399] {
        assert_eq!(query(&s, i)[0].record.id, ids[i], "after reopen");
    }
    assert_ne!(query(&s, 17)[0].record.id, ids[17]);
    // The graph went into the file.
    let f = clawhdf5_memory::format::H5File::open(&p).unwrap();
    assert!(f.exists("/index/hnsw"));
}

#[test]
fn embedder_embeds_saves_and_queries() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let opts = StoreOptions {
        embedder: Some(Arc::new(HashEmbedder("toy-v1"))),
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts.clone()).unwrap();
    let a = s.save(NewMemory::text("green apples are sour")).unwrap();
    s.save(NewMemory::text("the train leaves at noon")).unwrap();
    let mut q = SearchQuery::new("sour green apples", 2);
    q.mode = SearchMode::Vector;
    let hits = s.search(&q).unwrap();
    assert_eq!(hits[0].record.id, a.id);
    assert!(hits[0].vector_score.is_some());
    assert_eq!(s.config().embedding_model.as_deref(), Some("toy-v1"));
    // A blank question asks for nothing in every mode (the model's vector of "" would return anything),
    // unless a filter says what is wanted; a blank text with its own vector is a vector search.
    for mode in [SearchMode::Hybrid, SearchMode::Vector, SearchMode::Rrf] {
        for text in ["", "  \n\t"] {
            let mut q = SearchQuery::new(text, 2);
            q.mode = mode;
            assert!(s.search(&q).unwrap().is_empty(), "{mode:?} {text:?}");
            q.filter.time_from = Some(0);
            assert_eq!(
                s.search(&q).unwrap().len(),
                2,
                "{mode:?} {text:?} in a time range"
            );
        }
    }
    let mut q = SearchQuery::new("", 1);
    q.mode = SearchMode::Vector;
    q.embedding = Some(
        HashEmbedder("toy-v1")
            .embed_one("sour green apples")
            .unwrap(),
    );
    assert_eq!(s.search(&q).unwrap()[0].record.id, a.id);
    s.close().unwrap();

    // Reopening with another model is refused with a clear error; without one, keyword search still works.
    let other = StoreOptions {
        embedder: Some(Arc::new(HashEmbedder("toy-v2"))),
        ..StoreOptions::default()
    };
    let err = Store::open_with(&p, other).unwrap_err();
    assert!(matches!(err, MemoryError::Embedding(_)));
    assert!(err.to_string().contains("toy-v1"), "{err}");
    let s = Store::open_with(&p, StoreOptions::default()).unwrap();
    let hits = s.search(&SearchQuery::new("apples", 2)).unwrap();
    assert_eq!(hits[0].record.id, a.id);
    assert_eq!(s.config().embedding_model.as_deref(), Some("toy-v1"));
}

#[test]
fn keyword_only_store_past_the_graph_threshold_keeps_saving() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions {
        config: StoreConfig {
            exact_search_threshold: 10,
            ..StoreConfig::default()
        },
        durability: clawhdf5_memory::Durability::None,
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&dir.path().join("m.h5"), opts).unwrap();
    for i in 0..30 {
        s.save(NewMemory::text(format!("keyword only memory {i}")))
            .unwrap();
    }
    assert_eq!(s.search(&SearchQuery::new("memory 7", 3)).unwrap().len(), 3);
}

#[test]
fn background_folds_keep_search_exact_through_saves_changes_and_forgets() {
    use clawhdf5_memory::wal::RecordChange;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let opts = StoreOptions {
        config: StoreConfig {
            exact_search_threshold: 100,
            ..StoreConfig::default()
        },
        durability: clawhdf5_memory::Durability::None,
        ..StoreOptions::default()
    };
    let top = |s: &Store, v: Vec<f32>| {
        let mut q = SearchQuery::new("", 1);
        q.mode = SearchMode::Vector;
        q.embedding = Some(v);
        s.search(&q).unwrap().first().map(|h| h.record.id)
    };
    let mut s = Store::open_with(&p, opts.clone()).unwrap();
    let mut ids = Vec::new();
    let mut seen_job = false;
    for i in 0..2600 {
        let (out, ticket) = s
            .save_deferred(NewMemory {
                embedding: Some(unit(i, 16)),
                ..NewMemory::text(format!("memory {i}"))
            })
            .unwrap();
        if let Some(t) = ticket {
            t.wait().unwrap();
        }
        ids.push(out.id);
        seen_job |= s.stats().indexing;
        if i % 97 == 0 {
            // Whatever the graph holds so far, every saved row is found by its own vector.
            for j in [0, i / 2, i] {
                assert_eq!(
                    top(&s, unit(j, 16)),
                    Some(ids[j]),
                    "row {j} after {i} saves"
                );
            }
        }
    }
    assert!(seen_job, "no background job ran");
    // The graph takes every row now (a starved background job may not have built one yet), so that the
    // change below is the one row it does not place.
    s.build_index().unwrap();
    assert_eq!(s.stats().unindexed_rows, 0);
    // A changed vector is found by its new value at once, not by its old one.
    s.update(
        ids[5],
        RecordChange::Text {
            text: "changed".into(),
            embedding: Some(unit(9_999, 16)),
        },
    )
    .unwrap();
    assert_eq!(top(&s, unit(9_999, 16)), Some(ids[5]));
    assert_ne!(top(&s, unit(5, 16)), Some(ids[5]));
    assert_eq!(s.stats().unindexed_rows, 1);
    // A forgotten row is never returned, whether or not the graph has caught up.
    assert!(s.forget(ids[7]).unwrap());
    assert_ne!(top(&s, unit(7, 16)), Some(ids[7]));
    s.build_index().unwrap();
    let st = s.stats();
    assert_eq!(
        (st.unindexed_rows, st.indexing, st.graph_rows),
        (0, false, 2600)
    );
    assert_eq!(top(&s, unit(9_999, 16)), Some(ids[5]));
    assert_ne!(top(&s, unit(7, 16)), Some(ids[7]));
    assert_eq!(top(&s, unit(2_000, 16)), Some(ids[2_000]));
    s.close().unwrap();
    let s = Store::open_with(&p, opts).unwrap();
    assert_eq!(s.stats().graph_rows, 2600);
    assert_eq!(top(&s, unit(9_999, 16)), Some(ids[5]));
    assert_ne!(top(&s, unit(7, 16)), Some(ids[7]));
    assert_eq!(top(&s, unit(1_234, 16)), Some(ids[1_234]));
}

#[test]
fn a_save_prepared_ahead_is_the_same_as_a_save() {
    let dir = tempfile::tempdir().unwrap();
    let open = |name: &str, model: &'static str| {
        let opts = StoreOptions {
            embedder: Some(Arc::new(HashEmbedder(model))),
            ..StoreOptions::default()
        };
        Store::open_with(&dir.path().join(name), opts).unwrap()
    };
    let texts = [
        "The user's sister lives in Porto",
        "  Deploy keys rotate every Friday  ",
        "The user's sister lives in Porto",
        "Running shoes are size 44",
    ];
    let mut plain = open("plain.h5", "hash-v1");
    let mut ahead = open("ahead.h5", "hash-v1");
    let kit = ahead.save_kit();
    assert!(kit.embeds());
    for t in texts {
        let a = plain.save(NewMemory::text(t)).unwrap();
        let p = kit.prepare(NewMemory::text(t)).unwrap();
        assert!(p.memory().embedding.is_some(), "the kit embeds");
        let (b, ticket) = ahead.save_prepared(p).unwrap();
        if let Some(t) = ticket {
            t.wait().unwrap();
        }
        assert_eq!((a.id, a.deduplicated), (b.id, b.deduplicated), "{t}");
    }
    assert_eq!(ahead.config().embedding_model.as_deref(), Some("hash-v1"));
    for q in ["sister Porto", "deploy keys", "shoes"] {
        let hits = |s: &Store| {
            s.search(&SearchQuery::new(q, 5))
                .unwrap()
                .into_iter()
                .map(|h| (h.record.id, h.keyword_score, h.vector_score, h.record.text))
                .collect::<Vec<_>>()
        };
        assert_eq!(hits(&plain), hits(&ahead), "{q}");
    }
    // After reopening too (the keyword index is rebuilt from what was persisted).
    drop(ahead);
    let ahead = open("ahead.h5", "hash-v1");
    let hits = ahead.search(&SearchQuery::new("deploy keys", 5)).unwrap();
    assert_eq!(hits[0].record.text, "Deploy keys rotate every Friday");

    // A kit of another model: the save is refused, nothing is stored.
    let other = open("other.h5", "hash-v2").save_kit();
    let mut ahead = ahead;
    let before = ahead.len();
    let p = other.prepare(NewMemory::text("a new memory")).unwrap();
    assert!(matches!(
        ahead.save_prepared(p),
        Err(MemoryError::Embedding(_))
    ));
    assert_eq!(ahead.len(), before);
    // Bad input is still the save's to refuse, with the same errors.
    let p = kit.prepare(NewMemory::text("   ")).unwrap();
    assert!(matches!(
        ahead.save_prepared(p),
        Err(MemoryError::InvalidInput(_))
    ));
}

#[test]
fn a_huge_k_returns_every_match_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    for threshold in [10_000u32, 50] {
        let _ = std::fs::remove_file(&p);
        let opts = StoreOptions {
            config: StoreConfig {
                exact_search_threshold: threshold,
                ..StoreConfig::default()
            },
            durability: clawhdf5_memory::Durability::None,
            ..StoreOptions::default()
        };
        let mut s = Store::open_with(&p, opts).unwrap();
        for i in 0..120 {
            s.save(NewMemory {
                embedding: Some(unit(i, 16)),
                ..NewMemory::text(format!("memory number {i}"))
            })
            .unwrap();
        }
        for (mode, want) in [
            (SearchMode::Keyword, 120),
            (SearchMode::Vector, 120),
            (SearchMode::Hybrid, 120),
            (SearchMode::Rrf, 120),
        ] {
            let mut q = SearchQuery::new("memory", usize::MAX);
            q.mode = mode;
            q.embedding = Some(unit(7, 16));
            let hits = s.search(&q).unwrap();
            assert_eq!(hits.len(), want, "{mode:?}, exact below {threshold}");
        }
        s.close().unwrap();
    }
}

/// Records the texts it is asked to embed.
struct Recording(std::sync::Mutex<Vec<String>>);

impl Embedder for Recording {
    fn model_id(&self) -> &str {
        "recording"
    }
    fn dim(&self) -> usize {
        32
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0
            .lock()
            .unwrap()
            .extend(texts.iter().map(|t| t.to_string()));
        HashEmbedder("recording").embed_batch(texts)
    }
}

#[test]
fn invalid_memories_in_a_batch_are_refused_before_they_are_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let seen = Arc::new(Recording(Default::default()));
    let opts = StoreOptions {
        embedder: Some(seen.clone()),
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts).unwrap();
    let too_long = "word ".repeat(300_000);
    let batch = || {
        vec![
            NewMemory::text("a valid memory"),
            NewMemory::text(too_long.clone()),
            NewMemory {
                importance: Some(2.0),
                ..NewMemory::text("importance out of range")
            },
        ]
    };
    // All or nothing: refused whole, nothing embedded.
    let err = s.save_batch(batch()).unwrap_err();
    assert!(matches!(err, MemoryError::InvalidInput(_)), "{err}");
    assert!(seen.0.lock().unwrap().is_empty());
    assert_eq!(s.len(), 0);
    // Each on its own: only the valid memory is embedded and saved; the others get their own errors.
    let out = s.save_each(batch()).unwrap();
    assert!(out[0].is_ok());
    assert!(out[1].as_ref().unwrap_err().to_string().contains("1 MiB"));
    assert!(out[2]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("importance"));
    assert_eq!(*seen.0.lock().unwrap(), vec!["a valid memory".to_string()]);
    assert_eq!(s.len(), 1);
}
