//! A checkpoint that cannot write (a full disk) is an error that loses nothing: the store stays usable, every
//! acknowledged change stays in its log, and no partial file is left behind to hold the space it took.
//! The full disk is `/dev/full` (every write fails with ENOSPC), reached through a symbolic link where the
//! checkpoint writes its new file.
#![cfg(target_os = "linux")]

use clawhdf5_memory::{NewMemory, SearchMode, SearchQuery, Store};

fn with_vector(text: &str, v: [f32; 4]) -> NewMemory {
    NewMemory {
        embedding: Some(v.to_vec()),
        ..NewMemory::text(text)
    }
}

fn tmp_of(p: &std::path::Path) -> std::path::PathBuf {
    let mut t = p.as_os_str().to_owned();
    t.push(".tmp");
    t.into()
}

#[test]
fn a_store_cannot_be_created_on_a_full_disk_and_leaves_nothing_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    std::os::unix::fs::symlink("/dev/full", tmp_of(&p)).unwrap();
    let e = Store::open(&p).expect_err("the new file cannot be written");
    assert!(e.to_string().contains("No space left"), "{e}");
    assert!(!tmp_of(&p).exists(), "the unfinished file is removed");
    assert!(!p.exists());
    // With room again, the store is created as usual.
    let mut s = Store::open(&p).unwrap();
    s.save(NewMemory::text("created once there was room"))
        .unwrap();
    s.close().unwrap();
}

#[test]
fn a_checkpoint_that_finds_the_disk_full_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    // The first vectors make the next checkpoint rewrite the whole file (through `<path>.tmp`).
    s.save(with_vector("tea with lemon", [1.0, 0.0, 0.0, 0.0]))
        .unwrap();
    std::os::unix::fs::symlink("/dev/full", tmp_of(&p)).unwrap();
    let e = s.checkpoint().expect_err("the disk is full");
    assert!(e.to_string().contains("No space left"), "{e}");
    assert!(!tmp_of(&p).exists(), "the unfinished file is removed");
    // Still usable: saves are logged, searches answer.
    s.save(with_vector("coffee, black", [0.0, 1.0, 0.0, 0.0]))
        .unwrap();
    let mut q = SearchQuery::new("tea", 5);
    q.mode = SearchMode::Keyword;
    assert_eq!(s.search(&q).unwrap()[0].record.text, "tea with lemon");
    std::os::unix::fs::symlink("/dev/full", tmp_of(&p)).unwrap();
    assert!(s.close().is_err(), "closing cannot fold the log either");
    assert!(!tmp_of(&p).exists());
    // Both saves come back from the log, and the next open with room folds it.
    let s = Store::open(&p).unwrap();
    let mut texts: Vec<String> = s.records().iter().map(|r| r.text.clone()).collect();
    texts.sort();
    assert_eq!(texts, ["coffee, black", "tea with lemon"]);
    s.close().unwrap();
    let s = Store::open_read_only(&p).unwrap();
    assert_eq!(s.records().len(), 2);
}
