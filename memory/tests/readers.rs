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
