//! The store and h5py take turns on one file: the store saves, forgets, checkpoints (in place, and whole-file
//! rewrites when its signing key changes) and closes; then h5py checks that every annotation it made in earlier
//! turns is still there, and makes more (attributes on the root and on the store's stable objects, groups and
//! datasets of its own, some growing), now and then repacking the whole file with h5repack
//! (`tests/py/store_annotate.py`). After each h5py turn the store must open and hold exactly its live records.
//!
//! Seeds 1-3 run in `cargo test`; `CLAWHDF5_STORE_PINGPONG_SEEDS=A-B` and `CLAWHDF5_STORE_PINGPONG_TURNS=N` hunt
//! further.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use clawhdf5_ann::rng::SplitMix64;
use clawhdf5_memory::{NewMemory, Store, StoreOptions};

mod common;
use common::python_has_h5py;

fn range_env(name: &str, default: (u64, u64)) -> (u64, u64) {
    let Ok(v) = std::env::var(name) else {
        return default;
    };
    let (a, b) = v.split_once('-').unwrap_or((&v, &v));
    (a.trim().parse().unwrap(), b.trim().parse().unwrap())
}

fn annotate(state: &Path, store: &Path, seed: u64) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/store_annotate.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(state)
        .arg(store)
        .arg(seed.to_string())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "h5py turn (seed {seed}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check(s: &Store, model: &BTreeMap<u64, String>, what: &str) {
    assert_eq!(s.len(), model.len(), "{what}: record count");
    for (id, text) in model {
        let r = s
            .get(*id)
            .unwrap_or_else(|| panic!("{what}: record {id} is gone"));
        assert_eq!(&r.text, text, "{what}: record {id}");
    }
}

fn run_seed(seed: u64, turns: u64) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let state = dir.path().join("annotations.json");
    let mut rng = SplitMix64::new(seed);
    let mut model = BTreeMap::new();
    let mut signed = false;
    for turn in 0..turns {
        let what = format!("seed {seed} turn {turn}");
        // A change of signing key (on or off) makes the next checkpoint rewrite the file whole.
        if turn > 0 && rng.below(3) == 0 {
            signed = !signed;
        }
        let opts = StoreOptions {
            signing_key: signed.then(|| ed25519_dalek::SigningKey::from_bytes(&[5u8; 32])),
            ..StoreOptions::default()
        };
        let mut s = Store::open_with(&p, opts).unwrap_or_else(|e| panic!("{what}: open: {e}"));
        check(&s, &model, &what);
        for _ in 0..1 + rng.below(4) {
            match rng.below(6) {
                0..=2 => {
                    for _ in 0..1 + rng.below(60) {
                        let n = rng.next_u64();
                        let text = format!("turn {turn} memory {n:x} about topic {}", n % 11);
                        let out = s
                            .save(NewMemory {
                                embedding: Some(vec![(n % 97) as f32, 1.0, 0.5, (n % 13) as f32]),
                                ..NewMemory::text(text.clone())
                            })
                            .unwrap();
                        model.insert(out.id, text);
                    }
                }
                3 if !model.is_empty() => {
                    let ids: Vec<u64> = model.keys().copied().collect();
                    for _ in 0..1 + rng.below(5) {
                        let id = ids[rng.below(ids.len() as u64) as usize];
                        if model.remove(&id).is_some() {
                            assert!(s.forget(id).unwrap(), "{what}: forget {id}");
                        }
                    }
                }
                _ => s
                    .checkpoint()
                    .unwrap_or_else(|e| panic!("{what}: checkpoint: {e}")),
            }
        }
        check(&s, &model, &what);
        s.close().unwrap_or_else(|e| panic!("{what}: close: {e}"));
        annotate(&state, &p, seed * 1000 + turn);
    }
    let s = Store::open(&p).unwrap();
    check(&s, &model, &format!("seed {seed} at the end"));
}

#[test]
fn the_store_and_h5py_take_turns() {
    if !python_has_h5py() {
        return;
    }
    let (a, b) = range_env("CLAWHDF5_STORE_PINGPONG_SEEDS", (1, 3));
    let (turns, _) = range_env("CLAWHDF5_STORE_PINGPONG_TURNS", (6, 6));
    for seed in a..=b {
        run_seed(seed, turns);
    }
}
