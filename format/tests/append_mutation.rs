//! Robustness of the appender: seeded mutations and truncations of a file of ours and of a file h5py writes
//! with its defaults (superblock v0, symbol-table groups, datasets under LZF, PyTables' LZO and hdf5plugin's
//! Blosc, Blosc2, LZ4, zstd, bzip2, bitshuffle, ZFP and FCIDECOMP, libhdf5's scale-offset, N-bit and szip; bfloat16 and
//! 128-bit integers; object and region references; second hard links, one a cycle). On every variant
//! `FileAppender` either refuses with an error or opens, appends rows, overwrites rows, sets and deletes
//! attributes, creates groups, writes object and region references and unlinks objects (one changed before, perhaps linked at
//! another path too), and commits — without panicking, within a second — and whatever it committed opens and
//! walks again without panicking.
//!
//! `CLAWHDF5_APPEND_MUTATION_SEED=N` (default 1) and `CLAWHDF5_APPEND_MUTATION_VARIANTS=N` (default 3,000
//! per seed file) pick other variants.

mod common;

use clawhdf5_format::region::Selection;
use clawhdf5_format::{Array, Data, DatasetOptions, FileAppender, H5File};
use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

thread_local! {
    /// Variants the appender opened on this thread, and those whose session it committed.
    static OPENED: Cell<usize> = const { Cell::new(0) };
    static COMMITTED: Cell<usize> = const { Cell::new(0) };
}

fn count(c: &'static std::thread::LocalKey<Cell<usize>>) {
    c.with(|n| n.set(n.get() + 1));
}

/// A file of ours: the mutation test's seed plus growable vlen strings.
fn ours() -> Vec<u8> {
    let mut w = common::small_file();
    w.write_dataset(
        "/d/sg",
        Array::vector(Data::VarStr((0..10).map(|i| format!("s{i}")).collect())),
        DatasetOptions {
            chunk: Some(vec![4]),
            max_shape: Some(vec![None]),
            ..Default::default()
        },
    )
    .unwrap();
    // References, which a commit rewrites when it moves their targets.
    w.write_object_refs("/r", &["/d/sg", "/"]).unwrap();
    w.set_attr_object_refs("/d", "to", &["/d/sg", "/r"])
        .unwrap();
    w.to_bytes().unwrap()
}

/// The contents of the h5py seed files (the body of a `with ... as f:` block).
const H5PY_CONTENTS: &str = r#"
    f.attrs["title"] = "notes"
    f.create_dataset("d/f", data=np.arange(40, dtype=">f4").reshape(10, 4), maxshape=(None, 4), chunks=(4, 2), compression="gzip", shuffle=True)
    f.create_dataset("d/s", data=np.array(["s%d" % i for i in range(10)], dtype=object), dtype=h5py.string_dtype(), maxshape=(None,), chunks=(4,))
    f.create_dataset("d/c", data=np.arange(3, dtype="<i2"))
    for i in range(12):
        f.create_group("g/x%d" % i).attrs["a"] = i
    # Second hard links: a dataset's, and a group's inside itself (a cycle).
    f["alias"] = f["d/f"]
    f["g/x1"]["up"] = f["g"]
    # Pipelines the appender encodes besides deflate (hdf5plugin's filters where installed).
    data = np.arange(64, dtype="<i4").reshape(16, 4)
    grow = dict(maxshape=(None, 4), chunks=(4, 4))
    f.create_dataset("p/lzf", data=data, compression="lzf", **grow)
    f.create_dataset("p/scaleoffset", data=data, scaleoffset=0, **grow)
    f.create_dataset("p/szip", data=data, compression="szip", **grow)
    # Types and a filter written through the appender's own encoders: N-bit, bfloat16, a 128-bit integer.
    t = h5py.h5t
    def low_level(name, ft, filter_id=None, opts=()):
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 4))
        if filter_id is not None:
            dcpl.set_filter(filter_id, h5py.h5z.FLAG_OPTIONAL, opts)
        space = h5py.h5s.create_simple((16, 4), (h5py.h5s.UNLIMITED, 4))
        d = h5py.h5d.create(f.id, name, ft, space, dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, data.astype("<f8"), mtype=t.NATIVE_DOUBLE)
    n20 = t.STD_I32LE.copy()
    n20.set_precision(20)
    low_level(b"p/nbit", n20, h5py.h5z.FILTER_NBIT)
    bf16 = t.IEEE_F32LE.copy()
    bf16.set_fields(15, 7, 8, 0, 7)
    bf16.set_size(2)
    bf16.set_precision(16)
    low_level(b"p/bfloat16", bf16)
    i128 = t.STD_I64BE.copy()
    i128.set_size(16)
    i128.set_precision(128)
    low_level(b"p/i128", i128)
    # PyTables' LZO as an EArray sets it (libhdf5 skips it here; the appender encodes it).
    low_level(b"p/lzo", t.STD_I32LE, 305, (1, 23, 2))
    try:
        import hdf5plugin
        f.create_dataset("p/blosc", data=data, **grow, **hdf5plugin.Blosc(cname="zstd", clevel=3))
        f.create_dataset("p/lz4", data=data, **grow, **hdf5plugin.LZ4())
        f.create_dataset("p/zstd", data=data, **grow, **hdf5plugin.Zstd())
        f.create_dataset("p/bzip2", data=data, **grow, **hdf5plugin.BZip2())
        f.create_dataset("p/bitshuffle", data=data, **grow, **hdf5plugin.Bitshuffle(cname="lz4"))
        f.create_dataset("p/blosc2", data=data, **grow, **hdf5plugin.Blosc2(cname="zstd", filters=hdf5plugin.Blosc2.BITSHUFFLE))
        f.create_dataset("p/zfp", data=data.astype("<f4") / 3, **grow, **hdf5plugin.Zfp(rate=8))
        f.create_dataset("p/zfp_rev", data=data, **grow, **hdf5plugin.Zfp(reversible=True))
        f.create_dataset("p/fci", data=(data * 37 % 1000).astype("<u2"), **grow, **hdf5plugin.FciDecomp())
    except ImportError:
        pass
    # References of every kind h5py writes, which a commit rewrites when it moves their targets.
    f.create_dataset("r/objs", data=[f["d/f"].ref, f["g"].ref, f.ref] * 3, dtype=h5py.ref_dtype, chunks=(4,),
                     compression="gzip", maxshape=(None,))
    f.create_dataset("r/regions", data=[f["d/c"].regionref[0:2], f["d/f"].regionref[1:3, ::2]],
                     dtype=h5py.regionref_dtype)
    f["g"].attrs["to_f"] = f["d/f"].ref
    f["g/x0"].attrs.create("regions", data=[f["d/c"].regionref[1:]], dtype=h5py.regionref_dtype)
"#;

/// A file h5py writes with its defaults, when h5py is there.
fn h5py_default() -> Option<Vec<u8>> {
    h5py_seed(r#"with h5py.File(sys.argv[1], "w") as f:"#, "default.h5")
}

/// The same contents in a file of 4-byte addresses and lengths (superblock version 0), whose every structure
/// the appender writes at those widths.
fn h5py_small_fields() -> Option<Vec<u8>> {
    h5py_seed(
        r#"fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
fcpl.set_sizes(4, 4)
with h5py.File(h5py.h5f.create(sys.argv[1].encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl)) as f:"#,
        "small_fields.h5",
    )
}

/// h5py's file: `open` (python opening the file as `f`), then [`H5PY_CONTENTS`].
fn h5py_seed(open: &str, name: &str) -> Option<Vec<u8>> {
    let script = format!("import sys, h5py, numpy as np\n{open}{H5PY_CONTENTS}");
    let (_dir, path) = common::python_written(&script, name, &["h5py"])?;
    Some(std::fs::read(path).unwrap())
}

/// Every group and dataset the reader reaches (bounded).
fn objects(f: &H5File) -> Vec<(String, bool)> {
    common::objects(f, 200).0
}

/// One variant: the appender's whole session on it, then a walk of what it committed.
fn exercise(path: &Path) {
    let Ok(f) = H5File::open(path) else {
        // The appender must refuse what the reader refuses, without panicking.
        let _ = FileAppender::open(path);
        return;
    };
    let found = objects(&f);
    let Ok(mut a) = FileAppender::open(path) else {
        return;
    };
    count(&OPENED);
    for (p, is_dataset) in &found {
        if *is_dataset {
            if let Ok(d) = f.dataset(p) {
                // A mutated dimension can make a row huge: writing it is then real work the caller asked
                // for (a million chunks), not a hang, so rows stay small here.
                let small = d
                    .shape()
                    .iter()
                    .skip(1)
                    .try_fold(1u64, |n, &x| n.checked_mul(x));
                let rows = match small {
                    Some(n) if n <= 4096 => d.read_rows(0, 1),
                    _ => continue,
                };
                if let Ok(rows) = rows {
                    let _ = a.append_rows(p, rows.clone());
                    let _ = a.write_rows(p, 0, rows);
                }
            }
        }
        let _ = a.set_attr(p, "touched", Array::scalar(Data::U8(vec![1])));
        if let Ok(names) = f.attr_names(p) {
            if let Some(n) = names.first() {
                let _ = a.delete_attr(p, n);
            }
        }
    }
    let _ = a.create_group("/new/group");
    let targets: Vec<&str> = found.iter().take(3).map(|(p, _)| p.as_str()).collect();
    let _ = a.set_attr_object_refs("/", "refs", &[targets.len() as u64], &targets);
    let _ = a.write_object_refs("/new/refs", &targets);
    if let Some((p, _)) = found.iter().find(|(_, is_dataset)| *is_dataset) {
        let _ = a.write_region_refs("/new/regions", &[(p.as_str(), Selection::All)]);
        let _ = a.set_attr_region_refs("/", "regions", &[], &[(p.as_str(), Selection::All)]);
    }
    if let Some((p, _)) = found.get(1) {
        let _ = a.unlink(p);
    }
    // A dataset changed above, unlinked at one of its paths (its changes stay wherever else it is linked).
    if let Some((p, _)) = found.iter().rev().find(|(_, is_dataset)| *is_dataset) {
        let _ = a.unlink(p);
    }
    if a.commit().is_ok() {
        count(&COMMITTED);
        if let Ok(f) = H5File::open(path) {
            for (p, is_dataset) in objects(&f) {
                if is_dataset {
                    if let Ok(d) = f.dataset(&p) {
                        let _ = d.read();
                    }
                }
                let _ = f.attr_names(&p);
            }
        }
    }
}

#[test]
fn mutated_files_never_panic_the_appender() {
    let seed: u64 = std::env::var("CLAWHDF5_APPEND_MUTATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let variants: usize = std::env::var("CLAWHDF5_APPEND_MUTATION_VARIANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut seeds = vec![("ours", ours())];
    if let Some(b) = h5py_default() {
        seeds.push(("h5py default", b));
    }
    if let Some(b) = h5py_small_fields() {
        seeds.push(("h5py 4-byte fields", b));
    }
    // On tmpfs where there is one: every commit fsyncs twice.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    // Each seed file's variants on a thread of their own (their own file, generator and counters).
    let counts: Vec<(usize, usize)> = std::thread::scope(|s| {
        let runs: Vec<_> = seeds
            .iter()
            .enumerate()
            .map(|(i, (name, original))| {
                let path = dir.path().join(format!("variant-{i}.h5"));
                s.spawn(move || mutate(name, original, &path, seed, i as u64, variants))
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    eprintln!(
        "{} variants: the appender opened {}, committed {}",
        variants * seeds.len(),
        counts.iter().map(|c| c.0).sum::<usize>(),
        counts.iter().map(|c| c.1).sum::<usize>()
    );
}

/// Runs the unmutated `original` and then `variants` mutations and truncations of it (generator `seed` and
/// `stream`) through [`exercise`] at `path`; returns how many the appender opened and committed.
fn mutate(
    name: &str,
    original: &[u8],
    path: &Path,
    seed: u64,
    stream: u64,
    variants: usize,
) -> (usize, usize) {
    let mut rng = common::XorShift(0x9e37_79b9_7f4a_7c15 ^ seed ^ (stream << 40));
    // The seed itself goes through the whole session, so its variants test the paths it stands for.
    std::fs::write(path, original).unwrap();
    exercise(path);
    assert_eq!(
        COMMITTED.with(Cell::get),
        1,
        "{name}: the unmutated seed's session did not commit"
    );
    for v in 0..variants {
        let mut bytes = original.to_vec();
        let what = match rng.below(4) {
            0 => {
                let cut = rng.below(bytes.len() as u64) as usize;
                bytes.truncate(cut);
                format!("cut at {cut}")
            }
            _ => {
                let flips = 1 + rng.below(4);
                let mut at = Vec::new();
                for _ in 0..flips {
                    let i = rng.below(bytes.len() as u64) as usize;
                    bytes[i] ^= 1 << rng.below(8);
                    at.push(i);
                }
                format!("bits flipped at {at:?}")
            }
        };
        std::fs::write(path, &bytes).unwrap();
        let start = Instant::now();
        let r = std::panic::catch_unwind(|| exercise(path));
        assert!(
            r.is_ok(),
            "{name} variant {v} (seed {seed}, {what}): the appender panicked"
        );
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{name} variant {v} (seed {seed}, {what}): {:?}",
            start.elapsed()
        );
    }
    (OPENED.with(Cell::get), COMMITTED.with(Cell::get))
}
