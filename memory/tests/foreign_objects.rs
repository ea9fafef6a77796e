//! What other programs add to a store's file (h5py here: attributes, groups, datasets, links) survives the
//! store's checkpoints, incremental or whole-file rewrites alike.

use std::process::Command;

use clawhdf5_memory::{NewMemory, Store, StoreOptions};

mod common;
use common::python;
use common::python_has_h5py;

/// h5py adds a user's annotations to the store file.
const ANNOTATE: &str = r#"
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], "a") as f:
    f.attrs["owner"] = "alice"
    for i in range(12):
        f.attrs[f"extra{i}"] = i
    g = f.create_group("user/notes")
    g.attrs["purpose"] = "my own notes"
    g.create_dataset("x", data=np.arange(10, dtype="<i8"), chunks=(5,), maxshape=(None,), compression="gzip", shuffle=True)
    g.create_dataset("names", data=np.array(["a", "bb", "ccc"], dtype=h5py.string_dtype()))
    g.create_dataset("pairs", data=np.array([(1, 2.5), (3, 4.5)], dtype=[("a", "<i4"), ("b", "<f8")]))
    g["latest"] = h5py.SoftLink("/user/notes/x")
    g.create_dataset("lzf", data=np.arange(50, dtype="<f4"), chunks=(25,), compression="lzf")
    g.create_dataset("scaled", data=np.arange(40, dtype="<i4"), chunks=(10,), scaleoffset=0)
    f["user/alias"] = g["x"]
    r = f.create_dataset("user/refs", data=[g["x"].ref, g["names"].ref], dtype=h5py.ref_dtype)
    r.attrs["about"] = "two references"
    f.attrs["pointer"] = g["x"].ref
    g.attrs.create("siblings", [g["names"].ref, g["pairs"].ref], dtype=h5py.ref_dtype)
    f["records/text"].attrs["comment"] = "texts"
    f["records"].attrs["note"] = np.arange(3)
    # References into the store's own objects and to the root, which checkpoints move.
    f["records"].attrs.create("store_refs", [f["records"].ref, f.ref, f["records/text"].ref], dtype=h5py.ref_dtype)
    f.create_dataset("user/store_refs", data=[f["records/id"].ref, f.ref], dtype=h5py.ref_dtype)
"#;

/// Every annotation, as one line of text.
const CHECK: &str = r#"
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    g = f["user/notes"]
    print(f.attrs["owner"], int(f.attrs["extra11"]), g.attrs["purpose"], g["x"][:].tolist(), g["x"].compression,
          g["x"].maxshape, list(g["names"].asstr()[:]), float(g["pairs"][1]["b"]), g["latest"][:3].tolist(),
          f["records/text"].attrs["comment"], f["records"].attrs["note"].tolist(), f["user/alias"][-1],
          f[f["user/refs"][0]][-1], f[f["user/refs"][1]].name, f["user/refs"].attrs["about"],
          g["lzf"].compression, float(g["lzf"][-1]), int(g["scaled"][:].sum()), f[f.attrs["pointer"]][-1],
          [f[r].name for r in g.attrs["siblings"]], [f[r].name for r in f["records"].attrs["store_refs"]],
          [f[r].name for r in f["user/store_refs"]])
"#;

const EXPECTED: &str = "alice 11 my own notes [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] gzip (None,) ['a', 'bb', 'ccc'] 4.5 [0, 1, 2] texts [0, 1, 2] 9 9 /user/notes/names two references lzf 49.0 780 9 ['/user/notes/names', '/user/notes/pairs'] ['/records', '/', '/records/text'] ['/records/id', '/']";

fn save(s: &mut Store, n: std::ops::Range<usize>) {
    for i in n {
        s.save(NewMemory {
            embedding: Some(vec![i as f32, 1.0, 0.5, 0.25]),
            ..NewMemory::text(format!("memory number {i} about topic {}", i % 7))
        })
        .unwrap();
    }
}

/// A new store of `n` memories in `dir`, closed; its path.
fn closed_store(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let p = dir.join("m.h5");
    let mut s = Store::open(&p).unwrap();
    save(&mut s, 0..n);
    s.close().unwrap();
    p
}

/// Opens the store signing with key `[key; 32]` (a new key: the next checkpoint rewrites the file whole), saves
/// memory number `n` and checkpoints; returns the store, still open.
fn rewrite_whole(p: &std::path::Path, key: u8, n: usize) -> Store {
    let opts = StoreOptions {
        signing_key: Some(ed25519_dalek::SigningKey::from_bytes(&[key; 32])),
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(p, opts).unwrap();
    save(&mut s, n..n + 1);
    s.checkpoint().unwrap();
    assert_eq!(s.stats().full_checkpoints, 1, "{:?}", s.stats());
    s
}

#[test]
fn annotations_survive_incremental_and_full_checkpoints() {
    if !python_has_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = closed_store(dir.path(), 3000);
    python(ANNOTATE, &p);
    assert_eq!(python(CHECK, &p), EXPECTED);

    // An incremental checkpoint.
    let mut s = Store::open(&p).unwrap();
    save(&mut s, 3000..3100);
    s.checkpoint().unwrap();
    let st = s.stats();
    assert_eq!(st.records, 3100);
    s.close().unwrap();
    assert_eq!(
        python(CHECK, &p),
        EXPECTED,
        "after an incremental checkpoint"
    );

    // Hard links to the root (a cycle) and to one of the store's groups, made just before the rewrite (an
    // incremental checkpoint would move the store's objects and leave such links at their old versions).
    python(
        "import h5py, sys\nwith h5py.File(sys.argv[1], 'a') as f:\n    f['user/up'] = f['/']\n    f['user/rec'] = f['records']",
        &p,
    );
    // Signing from now on makes the next checkpoint rewrite the file whole.
    let opts = StoreOptions {
        signing_key: Some(ed25519_dalek::SigningKey::from_bytes(&[7u8; 32])),
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts).unwrap();
    for id in 1..=2900u64 {
        s.forget(id).unwrap();
    }
    s.checkpoint().unwrap();
    let st = s.stats();
    assert_eq!(st.full_checkpoints, 1, "{st:?}");
    // user, user/notes, x, names, pairs, latest, lzf, scaled, refs, store_refs, and as soft links now: alias,
    // up (the root: a link cycle) and rec (the store's /records).
    assert_eq!(st.foreign.objects, 13, "{st:?}");
    // owner, extra0-11, purpose, comment, note, about, and the references pointer, siblings and store_refs.
    assert_eq!(st.foreign.attrs, 20, "{st:?}");
    assert!(
        st.foreign.left.is_empty() && st.foreign.kept.is_none(),
        "{st:?}"
    );
    s.close().unwrap();
    assert_eq!(python(CHECK, &p), EXPECTED, "after a full rewrite");
    assert_eq!(
        python(
            "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); print(f.get('user/up', getlink=True).path, f.get('user/rec', getlink=True).path, f['user/up/user/notes/x'][-1], f['user/alias'][-1], len(f['user/rec/text']))",
            &p
        ),
        "/ /records 9 9 3100"
    );

    // Unsigned again: the next rewrite drops the store's own /integrity group and does not carry it back.
    let mut s = Store::open(&p).unwrap();
    save(&mut s, 3100..3101);
    s.checkpoint().unwrap();
    assert_eq!(s.stats().full_checkpoints, 1);
    assert_eq!(s.len(), 201);
    s.close().unwrap();
    assert_eq!(python(CHECK, &p), EXPECTED, "after a second full rewrite");
    assert_eq!(
        python(
            "import h5py, sys; print('integrity' in h5py.File(sys.argv[1], 'r'))",
            &p
        ),
        "False"
    );
}

/// Hard links others make to the store's objects (and to the root) name the objects as they are after an
/// incremental checkpoint, which moves them: the checkpoint rewrites such links too.
#[test]
fn hard_links_into_the_store_follow_incremental_checkpoints() {
    if !python_has_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = closed_store(dir.path(), 3000);
    python(
        "import h5py, sys\nwith h5py.File(sys.argv[1], 'a') as f:\n    f['user/rec'] = f['records']\n    f['user/text'] = f['records/text']\n    f['user/up'] = f['/']",
        &p,
    );
    let mut s = Store::open(&p).unwrap();
    save(&mut s, 3000..3100);
    s.checkpoint().unwrap();
    assert_eq!(s.stats().full_checkpoints, 0, "{:?}", s.stats());
    s.close().unwrap();
    assert_eq!(
        python(
            "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); print(len(f['records/text']), len(f['user/rec/text']), len(f['user/text']), len(f['user/up/records/text']))",
            &p
        ),
        "3100 3100 3100 3100"
    );
}

/// Objects the writer cannot make stay in a copy of the old file, named in the store's statistics.
#[test]
fn what_cannot_be_carried_is_kept_in_a_copy() {
    if !python_has_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = closed_store(dir.path(), 20);
    python(
        r#"
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], "a") as f:
    f["my_type"] = np.dtype("<i4")
    d = f.create_dataset("grid", data=np.arange(16).reshape(4, 4))
    # Region references are carried (to a dataset of ours and to the store's own); references inside a
    # compound are not.
    f.create_dataset("region", data=[d.regionref[1:3, 1:3], f["records/id"].regionref[0:2]], dtype=h5py.regionref_dtype)
    f["grid"].attrs.create("corner", d.regionref[0:1, 0:1], dtype=h5py.regionref_dtype)
    tagged = np.zeros(1, dtype=[("n", "<i4"), ("r", h5py.ref_dtype)])
    tagged[0] = (1, d.ref)
    f.create_dataset("tagged", data=tagged)
    f.attrs["kept"] = 1
"#,
        &p,
    );
    let s = rewrite_whole(&p, 9, 20);
    let st = s.stats();
    assert_eq!((st.foreign.objects, st.foreign.attrs), (2, 2), "{st:?}");
    assert_eq!(st.foreign.left.len(), 2, "{st:?}");
    assert!(st.foreign.left[0].contains("my_type"), "{st:?}");
    assert!(st.foreign.left[1].contains("tagged"), "{st:?}");
    let kept = st.foreign.kept.clone().expect("a kept copy");
    s.close().unwrap();
    assert_eq!(
        python(
            "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); r = f['region']; c = f['grid'].attrs['corner']; print(f['grid'][2, 3], int(f.attrs['kept']), 'my_type' in f, 'tagged' in f, f[r[0]][r[0]].tolist(), f[r[1]].name, len(f[r[1]][r[1]]), f[c][c].tolist())",
            &p
        ),
        "11 1 False False [[5, 6], [9, 10]] /records/id 2 [[0]]"
    );
    assert_eq!(
        python(
            "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); print(f['my_type'].dtype, f[f['tagged'][0]['r']].name)",
            &kept
        ),
        "int32 /grid"
    );
}

/// A store that libhdf5's `h5repack` rewrote (superblock v0, symbol-table groups, its own layouts and filters)
/// opens, answers and takes new saves. Runs where Debian's `hdf5-tools` is installed.
#[test]
fn a_store_repacked_by_h5repack_keeps_working() {
    if Command::new("h5repack").arg("--version").output().is_err() {
        eprintln!("SKIP: h5repack not installed (Debian's hdf5-tools)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    save(&mut s, 0..300);
    s.close().unwrap();
    for (name, args) in [("plain.h5", &[][..]), ("gzip.h5", &["-f", "GZIP=9"][..])] {
        let q = dir.path().join(name);
        let out = Command::new("h5repack")
            .args(args)
            .arg(&p)
            .arg(&q)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "h5repack: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut s = Store::open(&q).unwrap();
        assert_eq!(s.len(), 300, "{name}");
        let hits = s
            .search(&clawhdf5_memory::SearchQuery::new("memory number 123", 3))
            .unwrap();
        assert_eq!(
            hits[0].record.text, "memory number 123 about topic 4",
            "{name}"
        );
        save(&mut s, 300..310);
        s.checkpoint().unwrap();
        s.close().unwrap();
        let s = Store::open(&q).unwrap();
        assert_eq!(s.len(), 310, "{name}");
        let hits = s
            .search(&clawhdf5_memory::SearchQuery::new("memory number 305", 3))
            .unwrap();
        assert_eq!(
            hits[0].record.text, "memory number 305 about topic 4",
            "{name}"
        );
    }
}

/// While the store is open, a libhdf5 program may read its file but not open it for writing; while a libhdf5
/// program has it open for writing, the store refuses to open (a clear error, not two writers).
#[test]
fn hdf5_writers_and_the_store_keep_off_each_other() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    if !python_has_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.h5");
    let mut s = Store::open(&p).unwrap();
    save(&mut s, 0..5);
    s.checkpoint().unwrap();
    let try_open = |mode: &str| {
        Command::new("python3")
            .args([
                "-c",
                &format!(
                    "import h5py, sys\ntry:\n    f = h5py.File(sys.argv[1], '{mode}')\n    print('opened', len(f['records/text']))\nexcept OSError as e:\n    print('refused', 'unable to lock file' in str(e))"
                ),
            ])
            .arg(&p)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap()
    };
    assert_eq!(try_open("r"), "opened 5");
    assert_eq!(try_open("a"), "refused True");
    // A whole-file rewrite (a new signing key) moves the lock to the new file.
    drop(s);
    let opts = StoreOptions {
        signing_key: Some(ed25519_dalek::SigningKey::from_bytes(&[3u8; 32])),
        ..StoreOptions::default()
    };
    let mut s = Store::open_with(&p, opts).unwrap();
    save(&mut s, 5..6);
    s.checkpoint().unwrap();
    assert_eq!(s.stats().full_checkpoints, 1);
    assert_eq!(try_open("a"), "refused True");
    assert_eq!(try_open("r"), "opened 6");
    s.close().unwrap();
    assert_eq!(try_open("a"), "opened 6");

    // h5py holds the file open for writing: the store, writer or reader, is refused until it closes.
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import h5py, sys\nf = h5py.File(sys.argv[1], 'a')\nprint('open', flush=True)\nsys.stdin.read()\nf.close()",
        ])
        .arg(&p)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "open");
    let Err(err) = Store::open(&p) else {
        panic!("the store opened while h5py writes");
    };
    assert!(
        matches!(err, clawhdf5_memory::MemoryError::InUse(_)),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("open for writing in another program"),
        "{err}"
    );
    assert!(matches!(
        Store::open_read_only(&p).err(),
        Some(clawhdf5_memory::MemoryError::InUse(_))
    ));
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    let s = Store::open(&p).unwrap();
    assert_eq!(s.len(), 6);
}

/// Datasets a user compressed with plugin filters — hdf5plugin's Blosc2 (1-D and 2-D), reversible ZFP and PyTables'
/// LZO — keep their filter through a whole-file rewrite (before, all became deflate): h5py reads the Blosc2 and ZFP
/// ones equal; a lossy (fixed-rate) ZFP one becomes deflate with the values h5py read before; the LZO one, whose chunks now go through LZO (libhdf5 here has no LZO filter and had skipped it), reads
/// back equal through our reader.
#[test]
fn plugin_compressed_annotations_keep_their_filters_across_a_rewrite() {
    if !python_has_h5py() {
        return;
    }
    let has_plugin = Command::new("python3")
        .args(["-c", "import hdf5plugin"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_plugin {
        assert!(
            std::env::var("CI").map(|v| v != "true").unwrap_or(true),
            "hdf5plugin is missing under CI=true: scripts/setup/format.sh installs it"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = closed_store(dir.path(), 20);
    python(
        r#"
import h5py, hdf5plugin, numpy as np, sys
data = (np.arange(200, dtype="<i4") // 3).reshape(50, 4)
with h5py.File(sys.argv[1], "a") as f:
    f.create_dataset("user/b2", data=data, chunks=(16, 4), **hdf5plugin.Blosc2(cname="zstd", filters=hdf5plugin.Blosc2.BITSHUFFLE))
    f.create_dataset("user/b2_1d", data=np.linspace(0, 1, 500), chunks=(128,), **hdf5plugin.Blosc2(cname="lz4"))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((16, 4))
    dcpl.set_filter(305, h5py.h5z.FLAG_OPTIONAL, (1, 23, 2))
    space = h5py.h5s.create_simple((50, 4), (h5py.h5s.UNLIMITED, 4))
    h5py.h5d.create(f.id, b"user/lzo", h5py.h5t.STD_I32LE, space, dcpl=dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL, data)
    wave = np.sin(np.linspace(0, 20, 600)).reshape(150, 4)
    f.create_dataset("user/zfp_rev", data=wave, chunks=(32, 4), **hdf5plugin.Zfp(reversible=True))
    f.create_dataset("user/zfp_rate", data=wave, chunks=(32, 4), **hdf5plugin.Zfp(rate=8))
    np.save(sys.argv[1] + ".rate.npy", f["user/zfp_rate"][()])
    img = ((np.indices((40, 30)).sum(axis=0) * 29) % 700 + 50).astype("<u2")
    f.create_dataset("user/fci", data=img, chunks=(20, 30), **hdf5plugin.FciDecomp())
"#,
        &p,
    );
    let s = rewrite_whole(&p, 5, 20);
    let st = s.stats();
    assert!(st.foreign.left.is_empty(), "{st:?}");
    s.close().unwrap();
    assert_eq!(
        python(
            r#"
import h5py, hdf5plugin, numpy as np, sys
data = (np.arange(200, dtype="<i4") // 3).reshape(50, 4)
with h5py.File(sys.argv[1], "r") as f:
    filters = lambda d: sorted(d._filters)
    ok = np.array_equal(f["user/b2"][()], data) and np.array_equal(f["user/b2_1d"][()], np.linspace(0, 1, 500))
    wave = np.sin(np.linspace(0, 20, 600)).reshape(150, 4)
    zfp_ok = np.array_equal(f["user/zfp_rev"][()], wave) and np.array_equal(f["user/zfp_rate"][()], np.load(sys.argv[1] + ".rate.npy"))
    img = ((np.indices((40, 30)).sum(axis=0) * 29) % 700 + 50).astype("<u2")
    fci_ok = np.array_equal(f["user/fci"][()], img) and all(f["user/fci"].id.get_chunk_info(i).filter_mask == 0 for i in range(2))
    print(ok, zfp_ok, fci_ok, filters(f["user/b2"]), filters(f["user/b2_1d"]), filters(f["user/lzo"]), filters(f["user/zfp_rev"]), filters(f["user/zfp_rate"]), filters(f["user/fci"]))
"#,
            &p
        ),
        "True True True ['32026'] ['32026'] ['305'] ['32013'] ['gzip'] ['32018']"
    );
    let f = clawhdf5_format::H5File::open(&p).unwrap();
    let got = f.dataset("/user/lzo").unwrap().read().unwrap();
    let want: Vec<i32> = (0..200).map(|i| i / 3).collect();
    assert_eq!(got.as_i32().unwrap(), &want[..]);
}
