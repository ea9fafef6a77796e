//! Crash safety of bulk saves: a child process saving large batches (which go straight into the HDF5 file,
//! their columns written ahead of the checkpoint that commits them) is killed with SIGKILL at random moments;
//! after each kill the store opens, holds every batch that had been acknowledged, and holds each batch whole
//! or not at all.
#![cfg(unix)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clawhdf5_memory::store::BULK_ROWS;
use clawhdf5_memory::{NewMemory, Store};

/// Set in the child process: the folder its store goes in.
const CHILD_DIR: &str = "CLAWHDF5_TEST_BULK_CRASH_DIR";
/// Batches each child saves before it waits to be killed.
const BATCHES: usize = 4;
/// Memories in each batch (enough for the bulk path).
const BATCH: usize = BULK_ROWS + 176;

/// Small deterministic PRNG (xorshift), so a failure can be replayed with its seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn text(batch: usize, i: usize) -> String {
    format!(
        "batch {batch} memory {i} about topic{}",
        (batch * 31 + i) % 97
    )
}

/// A memory with an embedding of `dim` dimensions.
fn memory(batch: usize, i: usize, dim: usize) -> NewMemory {
    let x = (batch * BATCH + i) as f32;
    NewMemory {
        embedding: Some(
            (0..dim)
                .map(|d| (x * (d as f32 + 1.0) * 0.37).sin() + 0.5)
                .collect(),
        ),
        ..NewMemory::text(text(batch, i))
    }
}

/// Longer hunts: `CLAWHDF5_BULK_CRASH_KILLS` (default 40), `CLAWHDF5_BULK_CRASH_SEED`, and
/// `CLAWHDF5_BULK_CRASH_DIM` (the embeddings' dimension, default 4; 384 makes each batch write megabytes ahead).
#[test]
fn acknowledged_bulk_batches_survive_sigkill_whole() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        child(Path::new(&dir));
        return;
    }
    let kills = env_number("CLAWHDF5_BULK_CRASH_KILLS", 40);
    let mut rng = Rng(env_number("CLAWHDF5_BULK_CRASH_SEED", 0x2545_F491_4F6C_DD1D).max(1));
    let root = tempfile::tempdir().unwrap();
    // Round 0 runs the child to the end: how long its batches take sets the range of the kills' moments.
    let mut span = Duration::ZERO;
    let mut killed_mid_batch = 0;
    for round in 0..=kills {
        let dir = root.path().join(format!("r{round}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "acknowledged_bulk_batches_survive_sigkill_whole",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, &dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut acked = Vec::new();
        let mut started = None;
        let note = |line: String, acked: &mut Vec<usize>, started: &mut Option<Instant>| {
            // (The test harness may print "test NAME ... " before the child's first line.)
            match line.split("bulk-crash: ").nth(1) {
                Some("ready") => *started = Some(Instant::now()),
                Some(said) => {
                    if let Some(b) = said.strip_prefix("acked ") {
                        acked.push(b.parse::<usize>().unwrap());
                    }
                }
                None => {}
            }
        };
        if round == 0 {
            while acked.len() < BATCHES {
                let line = rx.recv_timeout(Duration::from_secs(120)).unwrap();
                note(line, &mut acked, &mut started);
            }
            span = started.unwrap().elapsed();
        } else {
            let delay = Duration::from_micros(rng.next() % (span.as_micros() as u64).max(1));
            loop {
                if let Some(t) = started {
                    if t.elapsed() >= delay {
                        break;
                    }
                }
                if let Ok(line) = rx.recv_timeout(Duration::from_micros(200)) {
                    note(line, &mut acked, &mut started);
                }
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        // Acknowledgements already printed were made before the kill.
        while let Ok(line) = rx.try_recv() {
            note(line, &mut acked, &mut started);
        }
        if acked.len() < BATCHES {
            killed_mid_batch += 1;
        }
        let path = dir.join("m.h5");
        let store = Store::open_read_only(&path).unwrap_or_else(|e| {
            panic!("round {round}: the store does not open after SIGKILL: {e}")
        });
        let mut per_batch: HashMap<usize, usize> = HashMap::new();
        for r in store.records() {
            let b: usize = r
                .text
                .split_whitespace()
                .nth(1)
                .and_then(|b| b.parse().ok())
                .unwrap_or_else(|| panic!("round {round}: a record not saved by the child: {r:?}"));
            *per_batch.entry(b).or_default() += 1;
        }
        for b in &acked {
            assert_eq!(
                per_batch.get(b),
                Some(&BATCH),
                "round {round}: acknowledged batch {b} is not whole after the kill"
            );
        }
        for (b, n) in &per_batch {
            assert_eq!(
                *n, BATCH,
                "round {round}: batch {b} is held in part ({n} rows)"
            );
        }
        // Whatever the file holds reads back as saved.
        if let Some(r) = store.records().last() {
            let b: usize = r.text.split_whitespace().nth(1).unwrap().parse().unwrap();
            let i: usize = r.text.split_whitespace().nth(3).unwrap().parse().unwrap();
            assert_eq!(r.text, text(b, i));
        }
    }
    eprintln!(
        "{kills} kills, {killed_mid_batch} before the last batch was acknowledged; {BATCHES} batches took {span:?}"
    );
    assert!(
        killed_mid_batch * 2 >= kills as usize,
        "only {killed_mid_batch} of {kills} kills landed before the last batch was acknowledged"
    );
}

/// The child: a fresh store, `BATCHES` bulk batches, each acknowledged on stdout once `save_batch` returns;
/// then it waits to be killed.
fn child(dir: &Path) {
    use std::io::Write;
    let dim = env_number("CLAWHDF5_BULK_CRASH_DIM", 4).max(1) as usize;
    let mut s = Store::open(&dir.join("m.h5")).unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "bulk-crash: ready").unwrap();
    out.flush().unwrap();
    for b in 0..BATCHES {
        s.save_batch((0..BATCH).map(|i| memory(b, i, dim)).collect())
            .unwrap();
        writeln!(out, "bulk-crash: acked {b}").unwrap();
        out.flush().unwrap();
    }
    std::thread::sleep(Duration::from_secs(60));
}
