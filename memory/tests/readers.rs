//! Read-only opens while a writer saves and checkpoints: every reader sees every save acknowledged before it
//! opened, however the writer's checkpoints interleave with the reader's reads of the file and the log.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clawhdf5_memory::{Durability, NewMemory, Store, StoreOptions};

#[test]
fn readers_see_every_acknowledged_save_while_the_writer_checkpoints() {
    // A durable writer's saves reach the log when they are acknowledged; the others' when they are made.
    for durability in [Durability::EverySave, Durability::None] {
        race(durability);
    }
}

fn race(durability: Durability) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let opts = StoreOptions {
        durability,
        // A checkpoint every few saves, so that reads of the file and of the log keep crossing them.
        auto_checkpoint_bytes: 600,
        ..StoreOptions::default()
    };
    let mut w = Store::open_with(&p, opts).unwrap();
    w.save(NewMemory::text("first memory")).unwrap();
    let acked = Arc::new(AtomicU64::new(1));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (p, acked, stop) = (p.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut opens = 0u32;
            let start = Instant::now();
            while !stop.load(Ordering::Acquire) || opens < 20 {
                let before = acked.load(Ordering::Acquire);
                let r = Store::open_read_only(&p).unwrap();
                assert!(
                    r.len() as u64 >= before,
                    "a reader opened after {before} acknowledged saves sees {} records",
                    r.len()
                );
                opens += 1;
                if stop.load(Ordering::Acquire) && start.elapsed() > Duration::from_secs(60) {
                    break;
                }
            }
            opens
        })
    };
    // CLAWHDF5_READERS_MS lengthens the race for a hunt.
    let ms = std::env::var("CLAWHDF5_READERS_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let start = Instant::now();
    let mut saved = 1u64;
    while start.elapsed() < Duration::from_millis(ms) && !reader.is_finished() {
        w.save(NewMemory::text(format!(
            "memory number {saved} of the racing writer"
        )))
        .unwrap();
        saved += 1;
        acked.store(saved, Ordering::Release);
    }
    stop.store(true, Ordering::Release);
    let opens = reader.join().unwrap();
    assert!(opens >= 20, "{durability:?}: {opens} reader opens");
    let st = w.stats();
    assert!(
        st.incremental_checkpoints + st.full_checkpoints > 10,
        "{durability:?}: {st:?}"
    );
    eprintln!(
        "{durability:?}: {saved} saves, {} + {} checkpoints, {opens} reader opens",
        st.incremental_checkpoints, st.full_checkpoints
    );
}

/// What a reader meets if it reads the superblock while the writer switches it: a checksum that does not match
/// (bytes 44..48 of the version-2 superblock our files start with).
fn tear_superblock(path: &std::path::Path, good: &[u8]) {
    use std::os::unix::fs::FileExt;
    let mut torn = good[..48].to_vec();
    torn[46] ^= 0xff;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&torn, 0).unwrap();
}

fn restore_superblock(path: &std::path::Path, good: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&good[..48], 0).unwrap();
}

#[test]
fn a_read_only_open_reads_a_torn_superblock_again_while_a_writer_holds_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut w = Store::open(&p).unwrap();
    w.save(NewMemory::text("a memory the reader must see"))
        .unwrap();
    w.checkpoint().unwrap();
    let good = std::fs::read(&p).unwrap();
    assert_eq!(good[8], 2, "a version-2 superblock");

    // The writer finishes its switch a few milliseconds into the reader's open: the reader gets the store.
    tear_superblock(&p, &good);
    let restorer = {
        let (p, good) = (p.clone(), good.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(4));
            restore_superblock(&p, &good);
        })
    };
    let r = Store::open_read_only(&p).unwrap();
    assert_eq!(r.len(), 1);
    drop(r);
    restorer.join().unwrap();

    // Torn for good: the error comes back after the retries (1 + 2 + ... + 32 ms apart), and without them
    // when no writer holds the store.
    tear_superblock(&p, &good);
    let start = Instant::now();
    let e = Store::open_read_only(&p).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
    assert!(
        start.elapsed() >= Duration::from_millis(32),
        "{:?}",
        start.elapsed()
    );
    restore_superblock(&p, &good);
    w.close().unwrap();
    tear_superblock(&p, &std::fs::read(&p).unwrap());
    let e = Store::open_read_only(&p).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
}
