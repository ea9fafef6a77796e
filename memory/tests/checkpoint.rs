//! Incremental checkpoints: changes are appended to the file in place, the result reads back identically
//! (records, keyword index, graph, signature), and a checkpoint's cost follows the change, not the store.

use std::path::Path;

use clawhdf5_memory::wal::RecordChange;
use clawhdf5_memory::{NewMemory, SearchMode, SearchQuery, Store, StoreConfig, StoreOptions};

const DIM: usize = 16;

fn vector(i: usize) -> Vec<f32> {
    (0..DIM)
        .map(|j| {
            (((i * 31 + j * 17) % 97) as f32 / 97.0) - 0.5 + if j == i % DIM { 1.0 } else { 0.0 }
        })
        .collect()
}

fn memory(i: usize) -> NewMemory {
    NewMemory {
        text: format!(
            "note {i}: {} visited {} on day {}",
            ["Alice", "Bob", "Chen", "Dana"][i % 4],
            ["Berlin", "Kyoto", "Lima", "Oslo", "Accra"][i % 5],
            i
        ),
        session: Some(format!("s{}", i / 50)),
        tags: vec![format!("t{}", i % 3)],
        embedding: Some(vector(i)),
        ..Default::default()
    }
}

fn options(exact_threshold: u32) -> StoreOptions {
    StoreOptions {
        config: StoreConfig {
            exact_search_threshold: exact_threshold,
            ..StoreConfig::default()
        },
        ..StoreOptions::default()
    }
}

fn queries() -> Vec<SearchQuery> {
    let mut out = Vec::new();
    for (i, text) in ["Alice Berlin", "Kyoto day 7", "Dana Accra", "note 123"]
        .iter()
        .enumerate()
    {
        for mode in [SearchMode::Keyword, SearchMode::Hybrid, SearchMode::Vector] {
            let mut q = SearchQuery::new(*text, 10);
            q.mode = mode;
            q.embedding = Some(vector(i * 7));
            out.push(q);
        }
    }
    out
}

/// Result ids and scores of the test queries; scores to two decimals, because vectors saved in this session
/// are exact in memory and f16-rounded once read back from the file.
fn answers(s: &Store) -> Vec<Vec<(u64, String)>> {
    queries()
        .iter()
        .map(|q| {
            s.search_candidates(q)
                .unwrap()
                .into_iter()
                .map(|h| (h.record.id, format!("{:.2}", h.score)))
                .collect()
        })
        .collect()
}

/// Every record without its embedding, and the embeddings rounded to f16 precision.
fn everything(s: &Store) -> (Vec<clawhdf5_memory::Record>, Vec<Vec<i32>>) {
    let mut vectors = Vec::new();
    let records = s
        .records()
        .iter()
        .map(|r| {
            let mut r = s.get(r.id).unwrap();
            let v = r.embedding.take().unwrap_or_default();
            vectors.push(v.iter().map(|x| (x * 500.0).round() as i32).collect());
            r
        })
        .collect();
    (records, vectors)
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

#[test]
fn appended_checkpoints_read_back_identically() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open_with(&p, options(20_000)).unwrap();
    for i in 0..300 {
        s.save(memory(i)).unwrap();
    }
    s.checkpoint().unwrap();
    for i in 300..420 {
        s.save(memory(i)).unwrap();
    }
    s.checkpoint().unwrap();
    // Every kind of change to rows already in the file.
    let id = |s: &Store, row: usize| s.records()[row].id;
    let (a, b, c, d) = (id(&s, 3), id(&s, 150), id(&s, 299), id(&s, 410));
    s.update(
        a,
        RecordChange::Text {
            text: "Alice now lives in Porto".into(),
            embedding: Some(vector(9_999)),
        },
    )
    .unwrap();
    s.update(b, RecordChange::Tags(vec!["moved".into()]))
        .unwrap();
    s.update(c, RecordChange::Importance(0.9)).unwrap();
    s.forget(d).unwrap();
    s.search(&SearchQuery::new("Kyoto", 5)).unwrap();
    s.checkpoint().unwrap();
    let stats = s.stats();
    assert_eq!(stats.incremental_checkpoints + stats.full_checkpoints, 3);
    assert!(
        stats.incremental_checkpoints >= 2,
        "checkpoints after the first must append: {stats:?}"
    );
    let before = (everything(&s), answers(&s), s.stats().vocabulary);
    s.close().unwrap();

    let s = Store::open(&p).unwrap();
    assert!(s.stats().keywords_from_file);
    let after = everything(&s);
    assert!(after.0 == before.0 .0, "records differ after reopen");
    let close = after
        .1
        .iter()
        .flatten()
        .zip(before.0 .1.iter().flatten())
        .all(|(a, b)| (a - b).abs() <= 1);
    assert!(close, "embeddings differ after reopen");
    assert_eq!(answers(&s), before.1);
    assert_eq!(s.stats().vocabulary, before.2);
    let porto = s
        .search_candidates(&{
            let mut q = SearchQuery::new("Porto", 3);
            q.mode = SearchMode::Keyword;
            q
        })
        .unwrap();
    assert_eq!(porto[0].record.id, a);
    assert!(s.get(d).unwrap().tombstone);
}

#[test]
fn graph_and_keywords_survive_appends() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    // A low threshold puts the store on the HNSW graph.
    let mut s = Store::open_with(&p, options(100)).unwrap();
    for i in 0..400 {
        s.save(memory(i)).unwrap();
    }
    s.close().unwrap();
    let mut s = Store::open_with(&p, options(100)).unwrap();
    for i in 400..460 {
        s.save(memory(i)).unwrap();
    }
    let gone = s.records()[10].id;
    s.forget(gone).unwrap();
    s.checkpoint().unwrap();
    assert_eq!(s.stats().incremental_checkpoints, 1);
    let before = answers(&s);
    drop(s);
    let s = Store::open_with(&p, options(100)).unwrap();
    assert_eq!(answers(&s), before);
    assert!(answers(&s).iter().flatten().all(|(id, _)| *id != gone));
}

#[test]
fn a_small_change_to_a_big_store_writes_little() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open_with(&p, options(20_000)).unwrap();
    for i in 0..12_000 {
        s.save_deferred(memory(i)).unwrap();
    }
    s.checkpoint().unwrap();
    // A full rewrite now sizes chunks for 4,000 rows; the next checkpoints append.
    let big = file_len(&p);
    s.save(memory(5_000)).unwrap();
    let row = s.records()[2_000].id;
    s.update(row, RecordChange::Importance(0.1)).unwrap();
    s.checkpoint().unwrap();
    let grown = file_len(&p) - big;
    eprintln!("file {big} bytes, grew {grown}");
    assert!(
        grown * 4 < big,
        "one new row and one changed row grew a {big}-byte file by {grown} bytes"
    );
    assert!(s.stats().incremental_checkpoints >= 1);
}

#[test]
fn garbage_is_compacted_by_a_full_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open_with(&p, options(20_000)).unwrap();
    for i in 0..200 {
        s.save(memory(i)).unwrap();
    }
    s.checkpoint().unwrap();
    // Many small checkpoints: each leaves superseded copies behind until a rewrite reclaims them.
    for i in 200..400 {
        s.save(memory(i)).unwrap();
        s.checkpoint().unwrap();
    }
    // The first checkpoint rewrote (it added the embedding columns); later rewrites are compactions.
    let stats = s.stats();
    assert!(stats.full_checkpoints >= 2, "{stats:?}");
    assert!(stats.incremental_checkpoints > 100, "{stats:?}");
    let n = s.len();
    drop(s);
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), n);
    // Compaction keeps the file within a small multiple of a fresh rewrite of the same data.
    let len = file_len(&p);
    let fresh = dir.path().join("fresh.h5");
    let mut f = Store::open(&fresh).unwrap();
    for i in 0..400 {
        f.save(memory(i)).unwrap();
    }
    f.close().unwrap();
    assert!(
        len < 3 * file_len(&fresh) + (2 << 20),
        "{len} vs fresh {}",
        file_len(&fresh)
    );
}

#[test]
fn signed_store_stays_verifiable_across_appends() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let opts = || StoreOptions {
        signing_key: Some(key.clone()),
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts()).unwrap();
    for i in 0..50 {
        s.save(memory(i)).unwrap();
    }
    s.checkpoint().unwrap();
    for i in 50..80 {
        s.save(memory(i)).unwrap();
    }
    let row = s.records()[5].id;
    s.update(row, RecordChange::Tags(vec!["x".into()])).unwrap();
    s.forget(s.records()[6].id).unwrap();
    s.checkpoint().unwrap();
    assert!(s.stats().incremental_checkpoints >= 1);
    s.close().unwrap();
    let pk = key.verifying_key().to_bytes();
    let report = clawhdf5_memory::verify_store(&p, Some(&pk))
        .unwrap()
        .expect("signed");
    assert!(report.ok(), "{report:?}");
    // A reopened signed store appends again and still verifies.
    let mut s = Store::open_with(&p, opts()).unwrap();
    s.save(memory(500)).unwrap();
    s.close().unwrap();
    let report = clawhdf5_memory::verify_store(&p, Some(&pk))
        .unwrap()
        .expect("signed");
    assert!(report.ok(), "{report:?}");
}

#[test]
fn a_file_without_a_keyword_index_is_rebuilt_and_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    for i in 0..30 {
        s.save(memory(i)).unwrap();
    }
    s.close().unwrap();
    // Remove the persisted keyword index, as in a file written before it existed.
    {
        let mut app = clawhdf5_memory::format::FileAppender::open(&p).unwrap();
        app.set_attr(
            "/index/bm25",
            "tokenizer",
            clawhdf5_memory::format::Array::scalar(clawhdf5_memory::format::Data::VarStr(vec![
                "some other tokenizer".into(),
            ])),
        )
        .unwrap();
        app.commit().unwrap();
    }
    let mut s = Store::open(&p).unwrap();
    assert!(!s.stats().keywords_from_file);
    let before = answers(&s);
    s.save(memory(31)).unwrap();
    s.checkpoint().unwrap();
    assert_eq!(s.stats().full_checkpoints, 1);
    drop(s);
    let s = Store::open(&p).unwrap();
    assert!(s.stats().keywords_from_file);
    assert_eq!(answers(&s).len(), before.len());
}

fn root_u64(p: &Path, name: &str) -> Option<u64> {
    let f = clawhdf5_memory::format::H5File::open(p).unwrap();
    f.attr("/", name)
        .ok()
        .and_then(|a| a.as_u64().and_then(|v| v.first().copied()))
}

#[test]
fn keyword_ids_stored_whole_are_read_and_rewritten_as_gaps() {
    use clawhdf5_memory::format::{Array, Data, DatasetOptions, FileAppender, H5File};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    for i in 0..40 {
        s.save(memory(i)).unwrap();
    }
    s.close().unwrap();
    let gaps_attr = |p: &Path| {
        H5File::open(p)
            .unwrap()
            .attr("/index/bm25", "doc_terms_encoding")
            .ok()
            .and_then(|a| a.as_strings().map(|v| v[0].clone()))
    };
    assert_eq!(gaps_attr(&p).as_deref(), Some("gaps"));
    // Write the ids whole, as files from before the gap encoding hold them.
    {
        let f = H5File::open(&p).unwrap();
        let read = |n: &str| {
            f.dataset(&format!("/index/bm25/{n}"))
                .unwrap()
                .read()
                .unwrap()
        };
        let gaps = read("doc_terms").as_u32().unwrap().to_vec();
        let starts = read("doc_start").as_u64().unwrap().to_vec();
        let lens = read("doc_len").as_u32().unwrap().to_vec();
        let mut whole = gaps.clone();
        for (&st, &l) in starts.iter().zip(&lens) {
            let span = &mut whole[st as usize..st as usize + l as usize];
            for k in 1..span.len() {
                span[k] += span[k - 1];
            }
        }
        assert_ne!(whole, gaps);
        drop(f);
        let mut app = FileAppender::open(&p).unwrap();
        app.replace_dataset(
            "/index/bm25/doc_terms",
            Array::vector(Data::U32(whole)),
            DatasetOptions::default(),
        )
        .unwrap();
        app.set_attr(
            "/index/bm25",
            "doc_terms_encoding",
            Array::scalar(Data::VarStr(vec!["ids".into()])),
        )
        .unwrap();
        app.commit().unwrap();
    }
    let mut s = Store::open(&p).unwrap();
    assert!(s.stats().keywords_from_file);
    let before = answers(&s);
    assert!(before.iter().all(|a| !a.is_empty()));
    // The next checkpoint rewrites the file in the gap form; answers stay the same.
    s.save(memory(41)).unwrap();
    s.checkpoint().unwrap();
    assert_eq!(s.stats().full_checkpoints, 1);
    drop(s);
    assert_eq!(gaps_attr(&p).as_deref(), Some("gaps"));
    let s = Store::open(&p).unwrap();
    assert!(s.stats().keywords_from_file);
    assert_eq!(answers(&s).len(), before.len());
}

#[test]
fn superseded_data_is_counted_and_close_compacts_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let big = |i: usize| NewMemory {
        embedding: Some((0..384).map(|j| ((i * 7 + j) % 13) as f32 - 6.0).collect()),
        ..memory(i)
    };
    let mut s = Store::open(&p).unwrap();
    s.save_batch((0..1500).map(big).collect()).unwrap();
    s.checkpoint().unwrap();
    assert_eq!(root_u64(&p, "dead_bytes"), Some(0));
    // Small appends rewrite the partial last chunks: the old copies are counted as dead.
    let mut last = 0;
    for k in 0..6 {
        s.save(big(2000 + k)).unwrap();
        s.checkpoint().unwrap();
        let dead = root_u64(&p, "dead_bytes").unwrap();
        assert!(dead > last, "checkpoint {k}: {dead} after {last}");
        last = dead;
    }
    assert!(s.stats().incremental_checkpoints >= 6);
    let before = file_len(&p);
    assert!(
        last * 32 > before && before >= 1 << 20,
        "{last} of {before}"
    );
    let n = s.len();
    s.close().unwrap();
    // More than 1/32 of the file was dead: close wrote it anew.
    assert_eq!(root_u64(&p, "dead_bytes"), Some(0));
    assert!(
        file_len(&p) + last / 2 < before,
        "{} vs {before}",
        file_len(&p)
    );
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), n);
}
