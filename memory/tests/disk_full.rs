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

/// Set in the child process of [`a_log_write_that_finds_the_disk_full_is_recovered_by_the_next_change`]: the
/// folder its store goes in.
const LOG_FULL_CHILD: &str = "CLAWHDF5_TEST_LOG_FULL_DIR";

/// A save whose log write fails (here: the file-size limit, as a full disk would) is refused, searches go on
/// answering, and once the log can be written again the next change folds memory into the HDF5 file and starts
/// a fresh log, so saves go on without reopening the store; every acknowledged save is kept.
#[test]
fn a_log_write_that_finds_the_disk_full_is_recovered_by_the_next_change() {
    if let Ok(dir) = std::env::var(LOG_FULL_CHILD) {
        log_full_child(std::path::Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The child runs under a 256 KiB file-size limit (`ulimit -f` counts 512-byte blocks in dash, 1 KiB ones
    // in bash: either is far below what its log takes) with SIGXFSZ ignored, so writes past it fail with
    // EFBIG.
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 512 && exec \"$0\" \"$@\""])
        .arg(&exe)
        .args([
            "--exact",
            "a_log_write_that_finds_the_disk_full_is_recovered_by_the_next_change",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LOG_FULL_CHILD, dir.path())
        .output()
        .unwrap();
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{log}");
    assert!(log.contains("refused:"), "the log never filled up:\n{log}");
    let acked: Vec<u64> = std::fs::read_to_string(dir.path().join("acked"))
        .unwrap()
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    assert!(acked.len() > 70, "{}", acked.len());
    let s = Store::open_read_only(&dir.path().join("m.h5")).unwrap();
    let ids: std::collections::HashSet<u64> = s.records().iter().map(|r| r.id).collect();
    let lost: Vec<&u64> = acked.iter().filter(|id| !ids.contains(id)).collect();
    assert!(lost.is_empty(), "acknowledged saves lost: {lost:?}");
    // The refused save was applied in memory before its write failed, so it may be kept as well.
    assert!(ids.len() <= acked.len() + 1, "{} records", ids.len());
}

fn log_full_child(dir: &std::path::Path) {
    let text = |i: usize| format!("entry {i}: lorem ipsum dolor sit amet");
    let mut s = Store::open(&dir.join("m.h5")).unwrap();
    let mut acked = Vec::new();
    let mut q = SearchQuery::new("lorem ipsum", 5);
    q.mode = SearchMode::Keyword;
    // The log fills up with the access statistics of searches (the HDF5 file keeps only a count and a time
    // per record, so a checkpoint's file stays small); the save after them writes them.
    let mut i = 0;
    let refused = loop {
        i += 1;
        assert!(i < 5_000, "the log never filled up");
        if i > 20 {
            for _ in 0..100 {
                assert_eq!(s.search(&q).unwrap().len(), 5);
            }
        }
        match s.save(NewMemory::text(text(i))) {
            Ok(r) => acked.push(r.id),
            Err(e) => break e,
        }
    };
    println!("refused: {refused}");
    assert!(refused.to_string().contains("write-ahead log"), "{refused}");
    // Searches answer meanwhile (their access statistics cannot be logged and are skipped).
    assert_eq!(s.search(&q).unwrap().len(), 5);
    // The next saves fold memory into the file, start a fresh log and go on.
    for _ in 0..50 {
        i += 1;
        acked.push(s.save(NewMemory::text(text(i))).unwrap().id);
    }
    s.close().unwrap();
    let list: Vec<String> = acked.iter().map(u64::to_string).collect();
    std::fs::write(dir.join("acked"), list.join(" ")).unwrap();
}
