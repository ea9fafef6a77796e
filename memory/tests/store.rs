//! Store behaviour through its public API: save, search, reopen, forget, update, recovery, schema checks.

use clawhdf5_memory::wal::RecordChange;
use clawhdf5_memory::{
    Durability, Filter, MemoryError, NewMemory, SearchMode, SearchQuery, Store, StoreConfig,
    StoreOptions,
};

fn keyword(q: &str, k: usize) -> SearchQuery {
    let mut q = SearchQuery::new(q, k);
    q.mode = SearchMode::Keyword;
    q
}

#[test]
fn save_search_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let a = s
        .save(NewMemory::text("Alice moved to Berlin in March"))
        .unwrap();
    let b = s
        .save(NewMemory::text("Bob adopted a greyhound named Pixel"))
        .unwrap();
    assert_ne!(a.id, b.id);
    let hits = s.search(&keyword("where did alice move", 5)).unwrap();
    assert_eq!(hits[0].record.id, a.id);
    s.close().unwrap();

    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 2);
    let hits = s.search(&keyword("greyhound", 5)).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].record.id, b.id);
    // Ids keep increasing after reopen.
    drop(s);
    let mut s = Store::open(&p).unwrap();
    let c = s.save(NewMemory::text("third")).unwrap();
    assert!(c.id > b.id);
}

#[test]
fn unflushed_log_is_replayed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    {
        let mut s = Store::open(&p).unwrap();
        s.save(NewMemory::text("kept only in the log")).unwrap();
        // Dropped without close: no checkpoint, as after a crash.
    }
    let s = Store::open_read_only(&p).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s.search(&keyword("log", 3)).unwrap().len(), 1);
}

#[test]
fn forget_update_and_dedup() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let a = s
        .save(NewMemory::text("the wifi password is hunter2"))
        .unwrap();
    let dup = s
        .save(NewMemory::text("the wifi password is hunter2"))
        .unwrap();
    assert!(dup.deduplicated);
    assert_eq!(dup.id, a.id);
    s.update(
        a.id,
        RecordChange::Text {
            text: "the wifi password is correcthorse".into(),
            embedding: None,
        },
    )
    .unwrap();
    assert!(s.search(&keyword("hunter2", 3)).unwrap().is_empty());
    assert_eq!(s.search(&keyword("correcthorse", 3)).unwrap().len(), 1);
    assert!(s.forget(a.id).unwrap());
    assert!(!s.forget(a.id).unwrap());
    assert!(s.search(&keyword("password", 3)).unwrap().is_empty());
    assert!(matches!(
        s.update(a.id, RecordChange::Importance(0.9)),
        Err(MemoryError::NoSuchRecord(_))
    ));
    s.close().unwrap();
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 0);
    assert!(s.get(a.id).unwrap().tombstone);
}

#[test]
fn filters_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("m.h5")).unwrap();
    for (i, session) in ["s1", "s2", "s1"].iter().enumerate() {
        s.save(NewMemory {
            text: format!("coffee note {i}"),
            session: Some(session.to_string()),
            tags: if i == 2 {
                vec!["pinned".into()]
            } else {
                vec![]
            },
            event_time: Some(1_000 * i as i64),
            ..NewMemory::default()
        })
        .unwrap();
    }
    let mut q = keyword("coffee", 10);
    q.filter = Filter {
        session: Some("s1".into()),
        ..Filter::default()
    };
    assert_eq!(s.search(&q).unwrap().len(), 2);
    q.filter.tags = vec!["pinned".into()];
    assert_eq!(s.search(&q).unwrap().len(), 1);
    q.filter = Filter {
        time_from: Some(500),
        time_to: Some(1500),
        ..Filter::default()
    };
    let hits = s.search(&q).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].record.text, "coffee note 1");
}

#[test]
fn second_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let _a = Store::open(&p).unwrap();
    assert!(matches!(Store::open(&p), Err(MemoryError::Locked(_))));
    // Readers are fine.
    assert!(Store::open_read_only(&p).is_ok());
}

#[test]
fn read_only_refuses_changes_and_missing_store_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("absent.h5");
    assert!(matches!(
        Store::open_read_only(&p),
        Err(MemoryError::NotFound(_))
    ));
    assert!(!p.exists());
    Store::open(&p).unwrap().close().unwrap();
    let mut s = Store::open_read_only(&p).unwrap();
    assert!(matches!(
        s.save(NewMemory::text("x")),
        Err(MemoryError::ReadOnly(_))
    ));
}

#[test]
fn not_a_store_and_corrupt_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.h5");
    std::fs::write(&p, b"plain text").unwrap();
    assert!(matches!(
        Store::open(&p),
        Err(MemoryError::NotAStore { .. })
    ));
    // A real store cut in half is an error, not a panic.
    let q = dir.path().join("y.h5");
    let mut s = Store::open(&q).unwrap();
    for i in 0..50 {
        s.save(NewMemory::text(format!("memory number {i}")))
            .unwrap();
    }
    s.close().unwrap();
    let bytes = std::fs::read(&q).unwrap();
    std::fs::write(&q, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::remove_file(dir.path().join("y.h5.wal")).ok();
    assert!(Store::open_read_only(&q).is_err());
}

#[test]
fn torn_log_tail_is_reported_and_earlier_saves_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    {
        let mut s = Store::open(&p).unwrap();
        s.save(NewMemory::text("first")).unwrap();
        s.save(NewMemory::text("second")).unwrap();
    }
    let wal = clawhdf5_memory::wal_path(&p);
    // The frames' end (the file goes on with preallocated zeros).
    let end = clawhdf5_memory::wal::read_log(&wal).unwrap().good_len as usize;
    let bytes = std::fs::read(&wal).unwrap();
    std::fs::write(&wal, &bytes[..end - 5]).unwrap();
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 1);
    assert!(s.recovery().dropped_bytes > 0);
}

#[test]
fn vectors_persist_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let e = |x: f32, y: f32, z: f32| Some(vec![x, y, z]);
    s.save(NewMemory {
        embedding: e(1.0, 0.0, 0.0),
        ..NewMemory::text("alpha")
    })
    .unwrap();
    let b = s
        .save(NewMemory {
            embedding: e(0.0, 1.0, 0.0),
            ..NewMemory::text("beta")
        })
        .unwrap();
    s.close().unwrap();
    let s = Store::open(&p).unwrap();
    assert_eq!(s.config().embedding_dim, Some(3));
    let mut q = SearchQuery::new("", 1);
    q.mode = SearchMode::Vector;
    q.embedding = Some(vec![0.1, 0.9, 0.0]);
    let hits = s.search(&q).unwrap();
    assert_eq!(hits[0].record.id, b.id);
    assert!(hits[0].vector_score.unwrap() > 0.9);
    // f16 storage keeps vectors within half-precision error.
    let v = s.get(b.id).unwrap().embedding.unwrap();
    assert!((v[1] - 1.0).abs() < 1e-3);
    q.embedding = Some(vec![1.0, 0.0]);
    assert!(matches!(s.search(&q), Err(MemoryError::Embedding(_))));
}

#[test]
fn config_is_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let config = StoreConfig {
        fusion_vector_weight: 0.7,
        fusion_keyword_weight: 0.3,
        ..StoreConfig::default()
    };
    let opts = StoreOptions {
        config: config.clone(),
        durability: Durability::None,
        ..StoreOptions::default()
    };
    Store::open_with(&p, opts).unwrap().close().unwrap();
    let s = Store::open(&p).unwrap();
    assert_eq!(s.config(), &config);
}

#[test]
fn extensions_persist() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    s.put_extension("graph", b"{\"nodes\":1}".to_vec()).unwrap();
    assert!(s.put_extension("../bad", vec![]).is_err());
    drop(s);
    let mut s = Store::open(&p).unwrap();
    assert_eq!(s.extension("graph"), Some(&b"{\"nodes\":1}"[..]));
    s.checkpoint().unwrap();
    drop(s);
    let s = Store::open(&p).unwrap();
    assert_eq!(s.extension("graph"), Some(&b"{\"nodes\":1}"[..]));
}

#[test]
fn forgotten_and_superseded_rows_stay_out_of_searches_after_replay_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let with_vec = |text: &str, x: f32| {
        let mut m = NewMemory::text(text);
        m.embedding = Some(vec![x, 1.0, 0.5, 0.25]);
        m
    };
    let mut s = Store::open(&p).unwrap();
    let old = s.save(with_vec("the office is in Lisbon", 1.0)).unwrap().id;
    let new = s.save(with_vec("the office is in Porto", 0.9)).unwrap().id;
    let gone = s.save(with_vec("the office is in Faro", 0.8)).unwrap().id;
    s.update(old, RecordChange::SupersededBy(new)).unwrap();
    s.forget(gone).unwrap();
    let ids = |s: &Store, mode: SearchMode, superseded: bool| {
        let mut q = SearchQuery::new("office", 10);
        q.mode = mode;
        q.embedding = Some(vec![1.0, 1.0, 0.5, 0.25]);
        q.filter.include_superseded = superseded;
        let mut v: Vec<u64> = s.search(&q).unwrap().iter().map(|h| h.record.id).collect();
        v.sort_unstable();
        v
    };
    let check = |s: &Store| {
        for mode in [SearchMode::Keyword, SearchMode::Vector, SearchMode::Hybrid] {
            assert_eq!(ids(s, mode, false), vec![new], "{mode:?}");
            assert_eq!(ids(s, mode, true), vec![old, new], "{mode:?}");
        }
    };
    check(&s);
    drop(s); // no checkpoint: the log replays the update and the forget
    let s = Store::open(&p).unwrap();
    check(&s);
    drop(s);
    let mut s = Store::open(&p).unwrap();
    s.checkpoint().unwrap();
    s.close().unwrap();
    let s = Store::open(&p).unwrap();
    check(&s);
}

/// Bad fields are refused with an error naming them, by every way in, and leave the store as it was.
#[test]
fn bad_fields_are_refused_and_change_nothing() {
    use clawhdf5_memory::Origin;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let kept = s.save(NewMemory::text("the cat is called Miso")).unwrap();
    let backwards = NewMemory {
        origin: Some(Origin {
            path: "memory/2026-05-01.md".into(),
            start_line: 12,
            end_line: 3,
        }),
        ..NewMemory::text("a span that ends before it starts")
    };
    let too_many_tags = NewMemory {
        tags: (0..1000).map(|i| format!("t{i}")).collect(),
        ..NewMemory::text("a thousand tags")
    };
    for bad in [backwards, too_many_tags] {
        let e = s.save(bad.clone()).unwrap_err();
        assert!(matches!(e, MemoryError::InvalidInput(_)), "{e}");
        let e = s.save_deferred(bad.clone()).err().expect("refused");
        assert!(matches!(e, MemoryError::InvalidInput(_)), "{e}");
        // All or nothing: the good memory beside it is not saved either.
        let e = s
            .save_batch(vec![NewMemory::text("a fine memory"), bad])
            .unwrap_err();
        assert!(matches!(e, MemoryError::InvalidInput(_)), "{e}");
    }
    let e = s
        .update(kept.id, RecordChange::Tags(vec!["ok".into(), "".into()]))
        .unwrap_err();
    assert!(e.to_string().contains("tag 1"), "{e}");
    let e = s
        .update(kept.id, RecordChange::Importance(f32::NAN))
        .unwrap_err();
    assert!(e.to_string().contains("importance"), "{e}");
    assert_eq!(s.len(), 1);
    drop(s);
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 1);
    let r = s.get(kept.id).unwrap();
    assert!(r.tags.is_empty());
    assert_eq!(r.importance, 0.5);
}
