//! The store file is real HDF5: h5py (libhdf5) opens it and reads back every id, text and timestamp.

use std::process::Command;

use clawhdf5_memory::{NewMemory, Store};

mod common;
use common::python_has_h5py;

const DUMP: &str = r#"
import h5py, json, sys
with h5py.File(sys.argv[1], "r") as f:
    r = f["/records"]
    out = {
        "schema_version": int(f.attrs["schema_version"]),
        "format": f.attrs["clawhdf5_format"] if isinstance(f.attrs["clawhdf5_format"], str) else f.attrs["clawhdf5_format"].decode(),
        "count": int(r.attrs["count"]),
        "id": [int(x) for x in r["id"][:]],
        "text": list(r["text"].asstr()[:]),
        "created_at": [int(x) for x in r["created_at"][:]],
        "event_time": [int(x) for x in r["event_time"][:]],
        "source": [f["/dictionaries/source"].asstr()[i] for i in r["source"][:]],
        "session": [f["/dictionaries/session"].asstr()[i] for i in r["session"][:]],
        "tombstone": [int(x) for x in r["tombstone"][:]],
        "dim": int(f["/config"].attrs["embedding_dim"]),
        "embedding": [[float(v) for v in row] for row in r["embedding"][:]] if "embedding" in r else None,
    }
print(json.dumps(out))
"#;

#[test]
fn h5py_reads_every_saved_record() {
    if !python_has_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    let texts = [
        "plain ASCII memory",
        "Ünïcödé, accents: café, naïve",
        "日本語のメモ：東京タワーに行った",
        "emoji 🎉 and a newline\nin the middle",
        "a longer memory that goes on for a while so that the strings are not all the same length at all",
    ];
    for (i, t) in texts.iter().enumerate() {
        // Half the records reach the file by a full write, the rest by an in-place append.
        if i == 2 {
            s.checkpoint().unwrap();
        }
        s.save(NewMemory {
            session: Some(format!("session-{i}")),
            source: Some(
                if i % 2 == 0 {
                    "conversation"
                } else {
                    "user_correction"
                }
                .into(),
            ),
            event_time: if i == 1 {
                Some(1_700_000_000_000)
            } else {
                None
            },
            embedding: Some(vec![i as f32 + 1.0, 1.0, 0.0, 0.5]),
            ..NewMemory::text(*t)
        })
        .unwrap();
    }
    let forgotten = s.save(NewMemory::text("to be forgotten")).unwrap();
    s.forget(forgotten.id).unwrap();
    s.checkpoint().unwrap();
    assert!(s.stats().incremental_checkpoints >= 1, "{:?}", s.stats());
    let expected: Vec<_> = s.records().to_vec();
    s.close().unwrap();

    let out = Command::new("python3")
        .arg("-c")
        .arg(DUMP)
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["format"], "clawhdf5 agent memory store");
    assert_eq!(v["count"].as_u64(), Some(expected.len() as u64));
    for (i, r) in expected.iter().enumerate() {
        assert_eq!(v["id"][i].as_u64(), Some(r.id));
        assert_eq!(v["text"][i].as_str(), Some(r.text.as_str()));
        assert_eq!(v["created_at"][i].as_i64(), Some(r.created_at));
        assert_eq!(
            v["event_time"][i].as_i64(),
            Some(r.event_time.unwrap_or(i64::MIN))
        );
        assert_eq!(v["source"][i].as_str(), Some(r.source.as_str()));
        assert_eq!(v["session"][i].as_str(), Some(r.session.as_str()));
        assert_eq!(v["tombstone"][i].as_u64(), Some(u64::from(r.tombstone)));
    }
    assert_eq!(v["dim"], 4);
    // Stored unit-length in f16: row 0 was (1, 1, 0, 0.5) / 1.5.
    let row0: Vec<f64> = v["embedding"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!((row0[0] - 1.0 / 1.5).abs() < 1e-3, "{row0:?}");
}
