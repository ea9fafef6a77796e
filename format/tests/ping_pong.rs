//! Ping-pong with libhdf5: we or h5py (any libver bound, its default "earliest" included) write a random
//! file, then h5py (libhdf5 2.0), our appender and PyTables (libhdf5 1.14) take turns editing it — attributes added in bursts and deleted, datasets created, grown, overwritten, moved and
//! deleted (lossless ZFP and FCIDECOMP among their filters on both sides), groups with many links — and after every turn
//! * our reader and h5py see the same file (every dataset value, attribute and link list),
//! * what the turn wrote reads back as written (our appender's rows and values, through our reader),
//! * nothing the turn did not touch changed (the previous turn's view, object by object).
//!
//! Seeds 1–6 run in `cargo test`; `CLAWHDF5_PINGPONG_SEEDS=FIRST-LAST` (and `CLAWHDF5_PINGPONG_TURNS=N`)
//! runs others.

mod common;

use clawhdf5_format::inspect::array_to_json;
use clawhdf5_format::{
    f16, Array, Blosc2Codec, Blosc2Shuffle, BloscCodec, Codec, Data, DatasetOptions, FileAppender,
    FileWriter, H5File, ZfpMode,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// splitmix64: a seeded, portable sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The element kinds our writer draws from.
const KINDS: usize = 17;

/// `n` values of kind `kind`, drawn from `rng`.
fn values(rng: &mut Rng, kind: usize, n: usize) -> Data {
    let mut ints = |lo: i64, span: u64| -> Vec<i64> {
        (0..n)
            .map(|_| lo.wrapping_add(rng.below(span) as i64))
            .collect()
    };
    match kind {
        0 => Data::I8(ints(-128, 256).into_iter().map(|v| v as i8).collect()),
        1 => Data::I16(
            ints(-30_000, 60_000)
                .into_iter()
                .map(|v| v as i16)
                .collect(),
        ),
        2 => Data::I32(
            ints(-1 << 30, 1 << 31)
                .into_iter()
                .map(|v| v as i32)
                .collect(),
        ),
        3 => Data::I64(ints(i64::MIN / 2, u64::MAX / 2)),
        4 => Data::U8(ints(0, 256).into_iter().map(|v| v as u8).collect()),
        5 => Data::U16(ints(0, 65_536).into_iter().map(|v| v as u16).collect()),
        6 => Data::U32(ints(0, 1 << 32).into_iter().map(|v| v as u32).collect()),
        7 => Data::U64((0..n).map(|_| rng.next()).collect()),
        8 => Data::F16(
            ints(-2000, 4000)
                .into_iter()
                .map(|v| f16::from_f32(v as f32 / 8.0))
                .collect(),
        ),
        9 => Data::F32(
            ints(-1 << 20, 1 << 21)
                .into_iter()
                .map(|v| v as f32 / 64.0)
                .collect(),
        ),
        10 => Data::F64((0..n).map(|_| rng.next() as f64 / 7.0 - 1e18).collect()),
        11 => Data::VarStr(
            (0..n)
                .map(|_| {
                    let len = rng.below(40) as usize;
                    let mut s = format!("memory {} ", rng.below(1_000_000));
                    s.extend(std::iter::repeat_n('✓', len % 4));
                    s.extend(std::iter::repeat_n('x', len));
                    s
                })
                .collect(),
        ),
        12 => Data::FixedStr {
            len: 12,
            values: (0..n)
                .map(|_| format!("fs{}", rng.below(1_000_000)))
                .collect(),
        },
        13 => Data::Compound(vec![
            ("id".into(), values(rng, 6, n)),
            ("score".into(), values(rng, 10, n)),
            ("label".into(), values(rng, 12, n)),
        ]),
        14 => Data::Enum {
            values: (0..n).map(|_| rng.below(3) as i64).collect(),
            members: vec![("low".into(), 0), ("mid".into(), 1), ("high".into(), 2)],
        },
        15 => Data::ArrayOf {
            dims: vec![3],
            data: Box::new(values(rng, 9, n * 3)),
        },
        _ => Data::Bitfield {
            size: 2,
            values: (0..n).map(|_| rng.below(65_536)).collect(),
        },
    }
}

/// A random array and how to store it.
fn random_dataset(rng: &mut Rng) -> (Array, DatasetOptions) {
    let kind = rng.below(KINDS as u64) as usize;
    let rank = *rng.pick(&[0usize, 1, 1, 1, 2, 2]);
    let shape: Vec<u64> = match rank {
        0 => vec![],
        1 => vec![rng.below(60)],
        _ => vec![1 + rng.below(20), 1 + rng.below(6)],
    };
    let n = shape.iter().product::<u64>() as usize;
    let array = Array::new(shape.clone(), values(rng, kind, n)).expect("shape");
    let mut opts = DatasetOptions::default();
    if rank > 0 {
        match rng.below(4) {
            0 => {}
            1 if n * 16 < 4096 => opts.compact = true,
            _ => {
                // Chunks fit the maximum shape (libhdf5's rule); an empty first dimension has to grow.
                let grows = shape[0] == 0 || rng.chance(70);
                let chunk: Vec<u64> = shape
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| {
                        let c = 1 + rng.below(16);
                        if i == 0 && grows {
                            c
                        } else {
                            c.min(d)
                        }
                    })
                    .collect();
                opts.chunk = Some(chunk);
                if grows {
                    let mut max = vec![None];
                    max.extend(shape[1..].iter().map(|&d| Some(d)));
                    opts.max_shape = Some(max);
                }
                match rng.below(4) {
                    0 => opts.deflate = Some(rng.below(10) as u32),
                    1 => {
                        let (level, shuffle) = (1 + rng.below(9) as u32, rng.chance(50));
                        let blosc = |codec| Codec::Blosc {
                            codec,
                            level,
                            shuffle,
                        };
                        let codecs = [
                            Codec::Lzf,
                            Codec::Lz4,
                            Codec::Zstd(level as i32),
                            Codec::Bzip2(level),
                            blosc(BloscCodec::Lz4),
                            blosc(BloscCodec::Lz4Hc),
                            blosc(BloscCodec::Zlib),
                            blosc(BloscCodec::Zstd),
                            Codec::Blosc2 {
                                codec: *rng.pick(&[
                                    Blosc2Codec::Lz4,
                                    Blosc2Codec::Lz4Hc,
                                    Blosc2Codec::Zlib,
                                    Blosc2Codec::Zstd,
                                ]),
                                level,
                                shuffle: *rng.pick(&[
                                    Blosc2Shuffle::None,
                                    Blosc2Shuffle::Byte,
                                    Blosc2Shuffle::Bit,
                                ]),
                            },
                        ];
                        let c = *rng.pick(&codecs);
                        // hdf5plugin's Blosc cannot take variable-length elements.
                        if !(matches!(c, Codec::Blosc { .. })
                            && matches!(array.data, Data::VarStr(_)))
                        {
                            opts.codec = Some(c);
                        }
                    }
                    _ => {}
                }
                // Lossless ZFP on the types it codes, in chunks of more than one value.
                let zfp_fits = matches!(
                    array.data,
                    Data::I32(_) | Data::I64(_) | Data::F32(_) | Data::F64(_)
                ) && opts
                    .chunk
                    .as_ref()
                    .is_some_and(|c| c.iter().any(|&d| d > 1));
                if zfp_fits && rng.chance(20) {
                    opts.deflate = None;
                    opts.codec = Some(Codec::Zfp(ZfpMode::Reversible));
                }
                // FCIDECOMP (JPEG-LS) on 16-bit integers in images of at least 2 × 2 (and 1 to 4 components).
                let jpegls_fits = matches!(array.data, Data::I16(_) | Data::U16(_))
                    && opts
                        .chunk
                        .as_deref()
                        .is_some_and(|c| clawhdf5_format::jpegls::fcidecomp_client_data(c).is_ok());
                if jpegls_fits && rng.chance(60) {
                    opts.deflate = None;
                    opts.codec = Some(Codec::FciDecomp);
                }
                // A byte shuffle before ZFP or JPEG-LS is not their input (the writer refuses it).
                opts.shuffle =
                    rng.chance(40) && !matches!(opts.codec, Some(Codec::Zfp(_) | Codec::FciDecomp));
                opts.fletcher32 = rng.chance(25);
            }
        }
    }
    (array, opts)
}

/// A random attribute value.
fn random_attr(rng: &mut Rng) -> Array {
    let kind = rng.below(KINDS as u64) as usize;
    if rng.chance(40) {
        Array::scalar(values(rng, kind, 1))
    } else {
        let n = 1 + rng.below(6);
        Array::vector(values(rng, kind, n as usize))
    }
}

/// The initial file: nested groups, some with many links (dense storage), datasets of every kind, attribute
/// bursts (dense attribute storage) and soft links.
fn initial_file(rng: &mut Rng, path: &Path) {
    let mut w = FileWriter::new();
    let mut groups = vec!["/".to_string()];
    let mut serial = 0;
    for _ in 0..3 + rng.below(5) {
        let parent = rng.pick(&groups).clone();
        serial += 1;
        let g = format!("{}/g{serial}", parent.trim_end_matches('/'));
        w.create_group(&g).expect("group");
        groups.push(g);
    }
    let mut objects = groups.clone();
    for g in groups.clone() {
        let many = rng.chance(25);
        let count = if many {
            10 + rng.below(25)
        } else {
            rng.below(6)
        };
        for _ in 0..count {
            serial += 1;
            let p = format!("{}/d{serial}", g.trim_end_matches('/'));
            let (array, opts) = random_dataset(rng);
            w.write_dataset(&p, array, opts)
                .unwrap_or_else(|e| panic!("{p}: {e}"));
            objects.push(p);
        }
    }
    for _ in 0..rng.below(4) {
        serial += 1;
        let g = rng.pick(&groups).clone();
        let target = rng.pick(&objects).clone();
        w.soft_link(&format!("{}/s{serial}", g.trim_end_matches('/')), &target)
            .expect("soft link");
    }
    for o in &objects {
        let count = match rng.below(5) {
            0 => 10 + rng.below(20),
            1 | 2 => rng.below(4),
            _ => 0,
        };
        for _ in 0..count {
            serial += 1;
            w.set_attr(o, &format!("a{serial}"), random_attr(rng))
                .unwrap_or_else(|e| panic!("{o}@a{serial}: {e}"));
        }
    }
    w.write_file(path).expect("write");
}

/// Every group and dataset reachable by hard links, with whether it is a dataset.
fn walk(f: &H5File) -> Vec<(String, bool)> {
    let (found, failed) = common::objects(f, usize::MAX);
    assert!(failed.is_empty(), "{failed:?}");
    found
}

/// Changes `data` so rows written from it differ from the rows it was read from.
fn perturb(data: &mut Data) {
    match data {
        Data::I32(v) => v.iter_mut().for_each(|x| *x = x.wrapping_add(1)),
        Data::U64(v) => v.iter_mut().for_each(|x| *x = x.wrapping_mul(3)),
        Data::F64(v) => v.iter_mut().for_each(|x| *x = -*x),
        Data::F32(v) => v.iter_mut().for_each(|x| *x += 0.5),
        Data::VarStr(v) => v.iter_mut().for_each(|s| s.push('+')),
        _ => {}
    }
}

/// The value of a whole dataset, as JSON.
fn read_json(f: &H5File, path: &str) -> Value {
    let a = f
        .dataset(path)
        .and_then(|d| d.read())
        .unwrap_or_else(|e| panic!("read {path}: {e}"));
    array_to_json(&a)
}

/// What `path` must hold after this turn so far: the expectation an earlier edit of the turn left, or its
/// value before the turn.
fn expected(expect: &mut Vec<(String, Value)>, f: &H5File, path: &str) -> Value {
    match expect.iter().position(|(p, _)| p == path) {
        Some(i) => expect.remove(i).1,
        None => read_json(f, path),
    }
}

/// Our appender's turn: appends, overwrites, new datasets, attributes and groups, then a commit. Returns
/// (what it did, changed paths) after checking that what it wrote reads back.
fn our_turn(rng: &mut Rng, path: &Path, turn: usize) -> Turn {
    let f = H5File::open(path).expect("open");
    let objects = walk(&f);
    let datasets: Vec<String> = objects
        .iter()
        .filter(|o| o.1)
        .map(|o| o.0.clone())
        .collect();
    let groups: Vec<String> = objects
        .iter()
        .filter(|o| !o.1)
        .map(|o| o.0.clone())
        .collect();
    let shaped = |p: &String| {
        let d = f.dataset(p).expect("dataset");
        let rows = d.shape().first().copied().unwrap_or(0);
        (
            rows > 0,
            d.max_shape().is_some_and(|m| m.first() == Some(&None)),
        )
    };
    let growable: Vec<String> = datasets
        .iter()
        .filter(|p| shaped(p) == (true, true))
        .cloned()
        .collect();
    let writable: Vec<String> = datasets.iter().filter(|p| shaped(p).0).cloned().collect();
    let mut a = FileAppender::open(path).expect("appender");
    let mut ops = Vec::new();
    let mut changed = BTreeSet::new();
    let mut removed: BTreeSet<String> = BTreeSet::new();
    // Path → the value it must have after the commit (our reader's JSON view).
    let mut expect: Vec<(String, Value)> = Vec::new();
    let mut serial = 0;
    for _ in 0..3 + rng.below(6) {
        serial += 1;
        match rng.below(10) {
            0 | 1 if !growable.is_empty() => {
                // Grow a dataset whose first dimension is unlimited with rows of its own.
                let p = rng.pick(&growable).clone();
                if removed.iter().any(|r| under(&p, r)) {
                    continue;
                }
                let d = f.dataset(&p).expect("dataset");
                let rows = d.shape()[0];
                let k = 1 + rng.below(rows.min(12));
                let mut add = d.read_rows(rng.below(rows - k + 1), k).expect("rows");
                perturb(&mut add.data);
                let mut want = expected(&mut expect, &f, &p);
                a.append_rows(&p, add.clone())
                    .unwrap_or_else(|e| panic!("append to {p}: {e}"));
                let added = array_to_json(&add);
                if let (Some(all), Some(added)) = (want.as_array_mut(), added.as_array()) {
                    all.extend(added.iter().cloned());
                }
                expect.push((p.clone(), want));
                ops.push(format!("append {k} rows to {p}"));
                changed.insert(p);
            }
            5 if !writable.is_empty() => {
                // Overwrite rows of any chunked or contiguous dataset with rows of its own, perturbed.
                let p = rng.pick(&writable).clone();
                if removed.iter().any(|r| under(&p, r)) {
                    continue;
                }
                let d = f.dataset(&p).expect("dataset");
                let rows = d.shape()[0];
                let k = 1 + rng.below(rows.min(8));
                // Anywhere in the dataset as it is now, rows appended this turn included.
                let now = a.shape(&p).expect("shape")[0];
                let at = rng.below(now - k + 1);
                let mut put = d.read_rows(rng.below(rows - k + 1), k).expect("rows");
                perturb(&mut put.data);
                let mut want = expected(&mut expect, &f, &p);
                a.write_rows(&p, at, put.clone())
                    .unwrap_or_else(|e| panic!("write rows {at}.. of {p}: {e}"));
                let put = array_to_json(&put);
                if let (Some(all), Some(put)) = (want.as_array_mut(), put.as_array()) {
                    for (i, v) in put.iter().enumerate() {
                        all[at as usize + i] = v.clone();
                    }
                }
                expect.push((p.clone(), want));
                ops.push(format!("write rows {at}..{} of {p}", at + k));
                changed.insert(p);
            }
            2 => {
                let g = rng.pick(&groups).clone();
                if removed.iter().any(|r| under(&g, r)) {
                    continue;
                }
                let p = format!("{}/r{turn}_d{serial}", g.trim_end_matches('/'));
                let (array, opts) = random_dataset(rng);
                a.write_dataset(&p, array.clone(), opts)
                    .unwrap_or_else(|e| panic!("new dataset {p}: {e}"));
                expect.push((p.clone(), array_to_json(&array)));
                ops.push(format!("dataset {p}"));
                changed.insert(g);
                changed.insert(p);
            }
            3 => {
                let all: Vec<String> = objects.iter().map(|o| o.0.clone()).collect();
                let o = rng.pick(&all).clone();
                if removed.iter().any(|r| under(&o, r)) {
                    continue;
                }
                let burst = if rng.chance(30) { 8 + rng.below(16) } else { 1 };
                for i in 0..burst {
                    a.set_attr(&o, &format!("r{turn}_a{serial}_{i}"), random_attr(rng))
                        .unwrap_or_else(|e| panic!("attribute on {o}: {e}"));
                }
                ops.push(format!("{burst} attributes on {o}"));
                changed.insert(o);
            }
            4 => {
                let g = rng.pick(&groups).clone();
                if removed.iter().any(|r| under(&g, r)) {
                    continue;
                }
                let p = format!("{}/r{turn}_g{serial}", g.trim_end_matches('/'));
                a.create_group(&p).expect("group");
                ops.push(format!("group {p}"));
                changed.insert(g);
                changed.insert(p);
            }
            7 => {
                // Unlink an object (everything under it goes too), as h5py's `del` does.
                let all: Vec<String> = objects
                    .iter()
                    .map(|o| o.0.clone())
                    .filter(|p| p != "/" && !removed.iter().any(|r| under(p, r)))
                    .filter(|p| !changed.iter().any(|c| under(c, p)))
                    .collect();
                if all.is_empty() {
                    continue;
                }
                let p = rng.pick(&all).clone();
                a.unlink(&p).unwrap_or_else(|e| panic!("unlink {p}: {e}"));
                ops.push(format!("unlink {p}"));
                changed.insert(parent_of(&p));
                removed.insert(p);
            }
            8 => {
                let all: Vec<String> = objects
                    .iter()
                    .map(|o| o.0.clone())
                    .filter(|p| !removed.iter().any(|r| under(p, r)))
                    .collect();
                let o = rng.pick(&all).clone();
                let names = f.attr_names(&o).expect("attribute names");
                if names.is_empty() {
                    continue;
                }
                let n = rng.pick(&names).clone();
                if a.delete_attr(&o, &n).is_ok() {
                    ops.push(format!("delete attribute {o}@{n}"));
                    changed.insert(o);
                }
            }
            9 => {
                let g = rng.pick(&groups).clone();
                if removed.iter().any(|r| under(&g, r)) {
                    continue;
                }
                let all: Vec<String> = objects.iter().map(|o| o.0.clone()).collect();
                let p = format!("{}/r{turn}_s{serial}", g.trim_end_matches('/'));
                let target = rng.pick(&all).clone();
                a.soft_link(&p, &target)
                    .unwrap_or_else(|e| panic!("soft link {p}: {e}"));
                ops.push(format!("soft link {p}"));
                changed.insert(g);
            }
            _ => {}
        }
    }
    a.commit().expect("commit");
    let f = H5File::open(path).expect("reopen");
    for (p, want) in &expect {
        let got = read_json(&f, p);
        assert_eq!(&got, want, "{p} after our turn {ops:?}");
    }
    Turn {
        ops,
        changed,
        removed,
    }
}

/// What a turn did: its operations, the paths whose view may differ, and the paths it removed.
struct Turn {
    ops: Vec<String>,
    changed: BTreeSet<String>,
    removed: BTreeSet<String>,
}

/// The group holding `path`.
fn parent_of(path: &str) -> String {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/".to_string(),
        Some((head, _)) => head.to_string(),
    }
}

/// Whether `path` is `root` or lies under it.
fn under(path: &str, root: &str) -> bool {
    path == root || path.starts_with(&format!("{}/", root.trim_end_matches('/')))
}

/// Asserts every object of `before` that the turn did not touch is unchanged in `after`.
fn nothing_else_changed(
    before: &Value,
    after: &Value,
    changed: &BTreeSet<String>,
    removed: &BTreeSet<String>,
    what: &str,
) {
    for (p, was) in before.as_object().expect("dump") {
        if changed.contains(p) || removed.iter().any(|r| under(p, r)) {
            continue;
        }
        let now = after
            .get(p)
            .unwrap_or_else(|| panic!("{p} vanished in {what}"));
        assert_eq!(now, was, "{p} changed in {what}");
    }
}

fn check_agree(path: &Path, dump: &Value, what: &str) {
    // Every value must read in h5py too (the shared comparison lets h5py fail where libhdf5 cannot read a
    // file of the corpus).
    for (p, meta) in dump.as_object().expect("dump") {
        let failed = meta["value"].get("h5py_error").is_some()
            || meta["attrs"]
                .as_object()
                .is_some_and(|a| a.values().any(|v| v.get("error").is_some()));
        assert!(!failed, "{what}: h5py cannot read {p}: {meta}");
    }
    let (bad, unsupported) = common::compare_with_dump(path, dump);
    assert!(
        bad.is_empty() && unsupported.is_empty(),
        "{what}: {bad:#?} {unsupported:#?}"
    );
}

/// A Python turn: `script FILE SEED TURN` run by `who`, its JSON answer and the (changed, removed) sets it
/// names.
fn python_turn(
    script: &str,
    who: &str,
    path: &Path,
    seed: u64,
    turn: usize,
) -> (Value, BTreeSet<String>, BTreeSet<String>, String) {
    let out = std::process::Command::new("python3")
        .arg(common::script(script))
        .arg(path)
        .arg(seed.to_string())
        .arg(turn.to_string())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "seed {seed} turn {turn}: {who}'s edit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let edit: Value = serde_json::from_slice(&out.stdout).expect("edit JSON");
    let set = |k: &str| -> BTreeSet<String> {
        edit[k]
            .as_array()
            .expect("list")
            .iter()
            .map(|v| v.as_str().expect("path").to_string())
            .collect()
    };
    let (changed, removed) = (set("changed"), set("removed"));
    let what = format!("seed {seed} turn {turn}, {who}'s edits {}", edit["ops"]);
    eprintln!("{what}");
    (edit, changed, removed, what)
}

/// PyTables' turn (HDF5 1.14): its edits, then the same checks through h5py's view. Returns that view.
fn pytables_turn(path: &Path, seed: u64, turn: usize, before: &Value) -> Value {
    let (_, changed, removed, what) =
        python_turn("ping_pong_tables.py", "PyTables", path, seed, turn);
    let after = common::h5py_dump(path);
    check_agree(path, &after, &what);
    nothing_else_changed(before, &after, &changed, &removed, &what);
    after
}

fn play(seed: u64, turns: usize) {
    let tables = common::have_python_module("tables");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("pingpong-{seed}.h5"));
    let mut rng = Rng(seed);
    // Odd seeds start from a file of ours, even ones from a file h5py writes (turn 0 of its script).
    let first_turn = if seed % 2 == 1 {
        initial_file(&mut rng, &path);
        1
    } else {
        0
    };
    let mut dump = Value::Null;
    if first_turn == 1 {
        dump = common::h5py_dump(&path);
        check_agree(&path, &dump, &format!("seed {seed}, as we wrote it"));
    }
    for turn in first_turn..=turns {
        let (edit, changed, removed, what) =
            python_turn("ping_pong_edit.py", "h5py", &path, seed, turn);
        check_agree(&path, &edit["dump"], &what);
        if turn > 0 {
            nothing_else_changed(&dump, &edit["dump"], &changed, &removed, &what);
        }
        dump = edit["dump"].clone();

        let Turn {
            ops,
            changed,
            removed,
        } = our_turn(&mut rng, &path, turn);
        let what = format!("seed {seed} turn {turn}, our edits {ops:?}");
        eprintln!("{what}");
        let after = common::h5py_dump(&path);
        check_agree(&path, &after, &what);
        nothing_else_changed(&dump, &after, &changed, &removed, &what);
        for r in &removed {
            assert!(after.get(r).is_none(), "{what}: {r} still there");
        }
        dump = after;
        if tables {
            dump = pytables_turn(&path, seed, turn, &dump);
        }
    }
}

#[test]
fn h5py_and_our_appender_take_turns() {
    if !common::have_python_module("h5py") {
        return;
    }
    let seeds = std::env::var("CLAWHDF5_PINGPONG_SEEDS").unwrap_or_else(|_| "1-6".into());
    let (first, last) = seeds
        .split_once('-')
        .map(|(a, b)| (a.parse().expect("seed"), b.parse().expect("seed")))
        .unwrap_or_else(|| {
            let s = seeds.parse().expect("seed");
            (s, s)
        });
    let turns = std::env::var("CLAWHDF5_PINGPONG_TURNS")
        .ok()
        .map(|t| t.parse().expect("turns"))
        .unwrap_or(3);
    // Two games at a time (each in its own folder): most of a turn is waiting for python3.
    let next = std::sync::atomic::AtomicU64::new(first);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if seed > last {
                    return;
                }
                play(seed, turns);
            });
        }
    });
}
