//! Batch saves: one log write, duplicates reported, all-or-nothing validation, and rows the graph has not
//! seen yet still found exactly.

use clawhdf5_memory::{NewMemory, SearchMode, SearchQuery, Store, StoreConfig, StoreOptions};

/// A distinct pseudo-random vector per `i`.
fn vector(i: usize) -> Vec<f32> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..8)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn item(i: usize) -> NewMemory {
    NewMemory {
        text: format!("batch memory number {i} about topic{}", i % 10),
        embedding: Some(vector(i)),
        ..Default::default()
    }
}

#[test]
fn batch_saves_dedup_and_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    {
        let mut s = Store::open(&p).unwrap();
        let first = s.save(item(0)).unwrap();
        let out = s
            .save_batch(vec![item(1), item(0), item(2), item(1)])
            .unwrap();
        assert_eq!(out.len(), 4);
        assert!(!out[0].deduplicated);
        assert!(out[1].deduplicated && out[1].id == first.id);
        assert!(!out[2].deduplicated);
        assert!(out[3].deduplicated && out[3].id == out[0].id);
        assert_eq!(s.len(), 3);
        // Dropped without close: the log must hold the batch.
    }
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 3);
    let mut q = SearchQuery::new("topic2", 3);
    q.mode = SearchMode::Keyword;
    assert_eq!(
        s.search_candidates(&q).unwrap()[0].record.text,
        item(2).text
    );
}

#[test]
fn an_invalid_item_saves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    s.save(item(0)).unwrap();
    let err = s
        .save_batch(vec![item(1), NewMemory::text("   "), item(2)])
        .unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    let mut bad = item(3);
    bad.embedding = Some(vec![1.0; 5]);
    let err = s.save_batch(vec![item(4), bad]).unwrap_err();
    assert!(err.to_string().contains("dimensions"), "{err}");
    assert_eq!(s.len(), 1);
    drop(s);
    assert_eq!(Store::open(&p).unwrap().len(), 1);
}

#[test]
fn rows_the_graph_has_not_seen_are_searched_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let opts = StoreOptions {
        config: StoreConfig {
            exact_search_threshold: 50,
            ..StoreConfig::default()
        },
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts).unwrap();
    s.save_batch((0..100).map(item).collect()).unwrap();
    s.build_index().unwrap();
    s.save_batch((100..300).map(item).collect()).unwrap();
    for i in [5, 150, 299] {
        let mut q = SearchQuery::new("", 1);
        q.mode = SearchMode::Vector;
        q.embedding = Some(vector(i));
        let hit = &s.search_candidates(&q).unwrap()[0];
        assert_eq!(hit.record.text, item(i).text, "row {i}");
    }
    s.build_index().unwrap();
    let mut q = SearchQuery::new("", 1);
    q.mode = SearchMode::Vector;
    q.embedding = Some(vector(250));
    assert_eq!(
        s.search_candidates(&q).unwrap()[0].record.text,
        item(250).text
    );
    s.close().unwrap();
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 300);
}

#[test]
fn update_many_applies_metadata_in_one_write_and_refuses_text() {
    use clawhdf5_memory::wal::RecordChange;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let out = s.save_batch((0..5).map(item).collect()).unwrap();
    let gone = out[4].id;
    s.forget(gone).unwrap();
    let n = s
        .update_many(vec![
            (out[0].id, RecordChange::Importance(0.9)),
            (out[1].id, RecordChange::Tags(vec!["x".into()])),
            (gone, RecordChange::Importance(0.1)),
            (999_999, RecordChange::Importance(0.1)),
        ])
        .unwrap();
    assert_eq!(n, 2, "changes to forgotten or unknown records are skipped");
    let err = s
        .update_many(vec![(
            out[2].id,
            RecordChange::Text {
                text: "new".into(),
                embedding: None,
            },
        )])
        .unwrap_err();
    assert!(err.to_string().contains("metadata"), "{err}");
    drop(s);
    let s = Store::open(&p).unwrap();
    assert_eq!(s.get(out[0].id).unwrap().importance, 0.9);
    assert_eq!(s.get(out[1].id).unwrap().tags, vec!["x".to_string()]);
}

#[test]
fn save_each_gives_every_memory_its_own_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let first = s.save(item(0)).unwrap();
    let mut wrong_dim = item(3);
    wrong_dim.embedding = Some(vec![1.0; 3]);
    let out = s
        .save_each(vec![
            item(1),
            NewMemory::text("   "),
            item(0),
            item(2),
            wrong_dim,
            item(2),
        ])
        .unwrap();
    assert_eq!(out.len(), 6);
    assert!(out[0].as_ref().is_ok_and(|o| !o.deduplicated));
    assert!(out[1].is_err(), "an empty text fails alone");
    assert_eq!(out[2].as_ref().unwrap().id, first.id);
    assert!(out[2].as_ref().unwrap().deduplicated);
    let two = out[3].as_ref().unwrap().id;
    assert!(out[4].is_err(), "a wrong dimension fails alone");
    assert_eq!(out[5].as_ref().unwrap().id, two);
    assert!(out[5].as_ref().unwrap().deduplicated);
    // Acknowledged means durable: a crash (no close) keeps them.
    drop(s);
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 3);
    assert!(s.get(two).is_some());
}

#[test]
fn a_large_batch_goes_straight_into_the_file_and_later_saves_still_replay() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let before = s.save(item(100_000)).unwrap();
    let n = clawhdf5_memory::store::BULK_ROWS + 300;
    let out = s.save_batch((0..n).map(item).collect()).unwrap();
    assert_eq!(out.len(), n);
    // Durable in the HDF5 file itself: the log holds nothing (its header only).
    let wal = std::fs::metadata(clawhdf5_memory::wal_path(&p))
        .unwrap()
        .len();
    assert!(wal <= 16, "log is {wal} bytes");
    let after = s.save(item(200_000)).unwrap();
    drop(s);
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), n + 2);
    assert!(s.get(before.id).is_some() && s.get(after.id).is_some());
    assert!(s.get(out[n - 1].id).is_some());
    let mut q = SearchQuery::new("batch memory number 1234", 3);
    q.mode = SearchMode::Keyword;
    assert_eq!(s.search(&q).unwrap()[0].record.id, out[1234].id);
}

#[test]
fn a_bulk_batch_that_rewrites_the_file_leaves_it_whole_signed_or_not() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[3u8; 32]);
    for signed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.h5");
        let opts = || StoreOptions {
            signing_key: signed.then(|| key.clone()),
            ..StoreOptions::default()
        };
        let mut s = Store::open_with(&p, opts()).unwrap();
        // A new store's first batch rewrites the file (written ahead of its keyword index when unsigned).
        let n = clawhdf5_memory::store::BULK_ROWS + 10;
        let out = s.save_batch((0..n).map(item).collect()).unwrap();
        assert_eq!(s.stats().full_checkpoints, 1, "signed: {signed}");
        drop(s);
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let r = Store::open_read_only(&p).unwrap();
        assert_eq!(r.len(), n);
        assert!(r.stats().keywords_from_file, "signed: {signed}");
        let mut q = SearchQuery::new("batch memory number 777", 3);
        q.mode = SearchMode::Keyword;
        assert_eq!(r.search(&q).unwrap()[0].record.id, out[777].id);
        let f = clawhdf5_memory::format::H5File::open(&p).unwrap();
        let starts = f.dataset("/index/bm25/doc_start").unwrap().read().unwrap();
        assert_eq!(starts.as_u64().unwrap().len(), n);
        if signed {
            let pk = key.verifying_key().to_bytes();
            let report = clawhdf5_memory::verify_store(&p, Some(&pk))
                .unwrap()
                .expect("signed");
            assert!(report.ok(), "{report:?}");
        }
        // The next batch appends to the file.
        let mut s = Store::open_with(&p, opts()).unwrap();
        let more = s.save_batch((n..2 * n).map(item).collect()).unwrap();
        assert_eq!(s.stats().incremental_checkpoints, 1, "signed: {signed}");
        drop(s);
        let r = Store::open_read_only(&p).unwrap();
        assert_eq!(r.len(), 2 * n);
        let mut q = SearchQuery::new(format!("batch memory number {}", n + 5), 3);
        q.mode = SearchMode::Keyword;
        assert_eq!(r.search(&q).unwrap()[0].record.id, more[5].id);
    }
}

#[test]
fn large_batches_appended_to_a_file_with_rows_keep_every_row_and_change() {
    use clawhdf5_memory::wal::RecordChange;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let bulk = clawhdf5_memory::store::BULK_ROWS;
    let mut s = Store::open(&p).unwrap();
    // 100 rows past a whole chunk, so that the next append rewrites the file's last chunk.
    let n1 = bulk + 100;
    let first = s.save_batch((0..n1).map(item).collect()).unwrap();
    // Rows only in the log when the next batches come: a save, and changes to rows in the file, one of them
    // in that last chunk.
    let logged = s.save(item(500_000)).unwrap();
    s.update_many(vec![
        (first[7].id, RecordChange::Importance(0.9)),
        (first[bulk + 50].id, RecordChange::Tags(vec!["last".into()])),
    ])
    .unwrap();
    let second = s.save_batch((n1..3 * bulk).map(item).collect()).unwrap();
    let third = s
        .save_batch((3 * bulk..4 * bulk + 17).map(item).collect())
        .unwrap();
    // Only the first batch rewrote the file (a new store's); the others were appended.
    let st = s.stats();
    assert_eq!(
        (st.full_checkpoints, st.incremental_checkpoints),
        (1, 2),
        "{st:?}"
    );
    let wal = std::fs::metadata(clawhdf5_memory::wal_path(&p))
        .unwrap()
        .len();
    assert!(wal <= 16, "log is {wal} bytes");
    // Read back by a fresh reader, from the file alone.
    let r = Store::open_read_only(&p).unwrap();
    assert_eq!(r.len(), 4 * bulk + 17 + 1);
    for (i, o) in first.iter().chain(&second).chain(&third).enumerate() {
        let rec = r.get(o.id).unwrap();
        assert_eq!(rec.text, item(i).text);
    }
    assert!(r.get(logged.id).is_some());
    assert_eq!(r.get(first[7].id).unwrap().importance, 0.9);
    assert_eq!(
        r.get(first[bulk + 50].id).unwrap().tags,
        vec!["last".to_string()]
    );
    let mut q = SearchQuery::new("batch memory number 3333", 3);
    q.mode = SearchMode::Keyword;
    assert_eq!(
        r.search(&q).unwrap()[0].record.id,
        third[3333 - 3 * bulk].id
    );
    let q = SearchQuery {
        embedding: Some(vector(2 * bulk + 5)),
        mode: SearchMode::Vector,
        ..SearchQuery::new("", 1)
    };
    assert_eq!(
        r.search(&q).unwrap()[0].record.id,
        second[2 * bulk + 5 - n1].id
    );
}
