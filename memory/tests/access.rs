//! Access statistics count what a search returned, not the candidate pool behind it, and survive reopen.

use clawhdf5_memory::cognitive::{AgentMemory, CognitiveConfig};
use clawhdf5_memory::{now_ms, NewMemory, SearchMode, SearchQuery, Store, StoreOptions};

fn access_counts(path: &std::path::Path) -> Vec<(String, u32)> {
    let s = Store::open_read_only(path).unwrap();
    s.records()
        .iter()
        .map(|r| (r.text.clone(), r.access_count))
        .collect()
}

#[test]
fn store_search_logs_only_returned_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    for t in [
        "apple pie recipe",
        "apple orchard visit",
        "apple stock price",
    ] {
        s.save(NewMemory::text(t)).unwrap();
    }
    let mut q = SearchQuery::new("apple pie", 1);
    q.mode = SearchMode::Keyword;
    let hits = s.search(&q).unwrap();
    assert_eq!(hits.len(), 1);
    s.close().unwrap();
    let counts = access_counts(&p);
    assert_eq!(counts.iter().map(|c| c.1).sum::<u32>(), 1, "{counts:?}");
    assert_eq!(counts[0], ("apple pie recipe".to_string(), 1));
}

#[test]
fn agent_memory_logs_only_what_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut m = AgentMemory::open(&p, StoreOptions::default(), CognitiveConfig::default()).unwrap();
    for i in 0..30 {
        let topic = if i % 10 == 0 { "tomatoes" } else { "weather" };
        m.save(NewMemory::text(format!("note {i} about {topic}")))
            .unwrap();
    }
    let mut q = SearchQuery::new("tomatoes", 2);
    q.mode = SearchMode::Keyword;
    let recall = m.search(&q, now_ms()).unwrap();
    assert_eq!(recall.hits.len(), 2);
    m.close().unwrap();
    let total: u32 = access_counts(&p).iter().map(|c| c.1).sum();
    assert_eq!(total, 2, "only the two returned records count as accessed");
}

#[test]
fn a_log_grown_by_searches_is_folded_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let opts = || StoreOptions {
        auto_checkpoint_bytes: 4096,
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts()).unwrap();
    s.save(NewMemory::text("apple pie recipe")).unwrap();
    let mut q = SearchQuery::new("apple pie", 1);
    q.mode = SearchMode::Keyword;
    for _ in 0..400 {
        assert_eq!(s.search(&q).unwrap().len(), 1);
    }
    // Searches cannot checkpoint (they borrow the store), and the process ends without closing it.
    drop(s);
    let logged = access_counts(&p)[0].1;
    assert!(logged > 100, "{logged} accesses reached the log");
    let s = Store::open_with(&p, opts()).unwrap();
    assert!(
        s.stats().wal_bytes < 4096,
        "the log still holds {} bytes",
        s.stats().wal_bytes
    );
    assert_eq!(s.records()[0].access_count, logged);
    drop(s);
    assert_eq!(access_counts(&p)[0].1, logged);
}
