//! JPEG-LS: datasets `hdf5plugin.FciDecomp` writes (EUMETSAT's FCIDECOMP filter, 32018: one CharLS JPEG-LS
//! codestream per chunk) compared with h5py's values; JPEG-LS codestreams CharLS writes through `imagecodecs`
//! (8- and 16-bit samples, lossless and near-lossless) decoded by `clawhdf5_format::jpegls` and compared with
//! CharLS's own decoding, byte for byte; and datasets we write with `Codec::FciDecomp` (new, and appended to
//! one of h5py's), read by h5py, with the chunks and filter masks hdf5plugin writes for the same values.

use crate::common;

use crate::common::XorShift;
use clawhdf5_format::array::Data;
use clawhdf5_format::{Array, Codec, DatasetOptions, FileAppender, FileWriter, H5File};
use std::path::Path;

const FCI: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(11)
names = []

def kinds(shape):
    g = np.indices(shape).sum(axis=0).astype("f8")
    yield "smooth", (np.sin(g / 5.0) * 3000 + 30000).astype("i8")
    yield "flat", np.full(shape, 1234, dtype="i8")
    yield "steps", ((np.indices(shape)[-1] // 7) * 1000).astype("i8")
    yield "noise", rng.integers(0, 65536, size=shape)
    yield "lownoise", rng.integers(0, 40, size=shape) + 500
    # Neighbours at both ends of the range: errors that wrap modulo the range.
    yield "wrap", np.where(rng.random(shape) < 0.5, 0, 65535) if True else None
    yield "sparse", np.where(rng.random(shape) < 0.03, rng.integers(0, 65536, size=shape), 7)
    yield "ramp", (np.arange(np.prod(shape)).reshape(shape) * 97 % 65536)

layouts = [
    ((64, 48), (32, 48)), ((50, 70), (50, 70)), ((200, 33), (64, 33)), ((9, 400), (9, 100)),
    ((17, 19), (8, 8)), ((3, 40, 40), (1, 40, 40)), ((4, 30, 26), (2, 30, 26)), ((3, 20, 21), (3, 20, 21)),
    ((8, 25, 30), (4, 25, 30)),
]
with h5py.File(out, "w") as f:
    for li, (shape, chunks) in enumerate(layouts):
        for kind, v in kinds(shape):
            for dt in ["u2", "i2"]:
                a = v.astype("u2").view(dt) if dt == "i2" else v.astype("u2")
                name = f"{kind}_{li}_{dt}"
                f.create_dataset(name, data=a, chunks=chunks, **hdf5plugin.FciDecomp())
                names.append(name)
                np.ascontiguousarray(a).astype("<" + dt).tofile(out + "." + name + ".bin")
    coded = 0
    for name in names:
        d = f[name].id
        coded += sum(1 for i in range(d.get_num_chunks()) if d.get_chunk_info(i).filter_mask == 0)
with open(out + ".names", "w") as n:
    n.write("\n".join(names))
print(coded)
"#;

const JLS: &str = r#"
import sys, imagecodecs, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(5)
names = []
shapes = [(1, 1), (1, 37), (29, 1), (2, 2), (40, 61), (128, 96), (7, 300)]
def kinds(shape, top):
    g = np.indices(shape).sum(axis=0).astype("f8")
    yield "smooth", (np.sin(g / 4.0) * top / 3 + top / 2)
    yield "flat", np.full(shape, top // 3)
    yield "noise", rng.integers(0, top + 1, size=shape)
    yield "edges", np.where(rng.random(shape) < 0.5, 0, top)
    yield "runs", (np.indices(shape)[-1] // 9 % 3) * (top // 2)
    yield "texture", (g % 7) * (top // 8) + rng.integers(0, 3, size=shape)
for dt, top in [("u1", 255), ("u2", 65535), ("u2", 4095)]:
    for shape in shapes:
        for kind, v in kinds(shape, top):
            a = np.clip(v, 0, top).astype(dt)
            for near in [0, 1, 3]:
                try:
                    stream = imagecodecs.jpegls_encode(a, level=near)
                except Exception:
                    continue
                name = f"{kind}_{dt}_{top}_{shape[0]}x{shape[1]}_near{near}"
                with open(out + "." + name + ".jls", "wb") as s:
                    s.write(stream)
                back = imagecodecs.jpegls_decode(stream)
                np.ascontiguousarray(back).astype("<" + dt).tofile(out + "." + name + ".bin")
                names.append(name)
with open(out + ".names", "w") as n:
    n.write("\n".join(names))
"#;

/// Whether h5py and hdf5plugin import (a panic under CI when not).
fn h5py_with_plugins() -> bool {
    ["h5py", "hdf5plugin"]
        .iter()
        .all(|m| common::have_python_module(m))
}

/// The values of `data` as little-endian bytes (16-bit integers only).
fn le_bytes(data: &Data) -> Vec<u8> {
    match data {
        Data::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        other => panic!("unexpected data {}", other.type_name()),
    }
}

fn names(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path.with_extension("h5.names")).unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn hdf5plugin_fcidecomp_datasets_equal_h5py() {
    if !h5py_with_plugins() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fci.h5");
    let coded: usize = common::python_json(FCI, &[&path])
        .as_u64()
        .expect("chunk count") as usize;
    // Most chunks went through JPEG-LS (noise the filter cannot shrink is stored unfiltered, mask set).
    assert!(coded > 150, "only {coded} chunks coded");
    let f = H5File::open(&path).unwrap();
    let mut bad = Vec::new();
    let all = names(&path);
    for name in &all {
        let want = std::fs::read(path.with_extension(format!("h5.{name}.bin"))).unwrap();
        let got = f
            .dataset(&format!("/{name}"))
            .and_then(|d| d.read())
            .map(|a| le_bytes(&a.data));
        compare(name, got, &want, &mut bad);
    }
    eprintln!("{coded} chunks coded with JPEG-LS");
    assert_all_equal("datasets", &bad, all.len(), 140);
}

/// Fails listing `bad` unless it is empty, or unless at least `min` `what` were compared.
fn assert_all_equal(what: &str, bad: &[String], compared: usize, min: usize) {
    eprintln!("{compared} {what} compared");
    assert!(compared >= min, "only {compared} {what}");
    assert!(
        bad.is_empty(),
        "{} of {compared} {what} differ: {bad:#?}",
        bad.len()
    );
}

/// Notes in `bad` how `got` differs from `want`, if it does.
fn compare(name: &str, got: clawhdf5_format::Result<Vec<u8>>, want: &[u8], bad: &mut Vec<String>) {
    match got {
        Ok(got) if got == want => {}
        Ok(got) => {
            let at = got.iter().zip(want).position(|(a, b)| a != b);
            bad.push(format!(
                "{name}: differs (first at byte {at:?}, {} bytes)",
                got.len()
            ));
        }
        Err(e) => bad.push(format!("{name}: {e}")),
    }
}

#[test]
fn charls_codestreams_decode_as_charls_decodes_them() {
    if !common::have_python_module("imagecodecs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jls.h5");
    common::run_python(JLS, &[&path]);
    let mut bad = Vec::new();
    let mut rng = common::XorShift(32018);
    let all = names(&path);
    for name in &all {
        let stream = std::fs::read(path.with_extension(format!("h5.{name}.jls"))).unwrap();
        let want = std::fs::read(path.with_extension(format!("h5.{name}.bin"))).unwrap();
        compare(
            name,
            clawhdf5_format::jpegls::decode(&stream, want.len()),
            &want,
            &mut bad,
        );
        // Truncated and damaged streams are errors or decodings: never a panic, never slow.
        for cut in (0..stream.len()).step_by(stream.len() / 7 + 1) {
            let _ = clawhdf5_format::jpegls::decode(&stream[..cut], want.len());
        }
        for _ in 0..12 {
            let mut s = stream.clone();
            let at = rng.below(s.len() as u64) as usize;
            s[at] ^= 1 << rng.below(8);
            let t = std::time::Instant::now();
            if let Ok(out) = clawhdf5_format::jpegls::decode(&s, want.len()) {
                assert!(out.len() <= want.len());
            }
            assert!(
                t.elapsed().as_secs_f64() < 1.0,
                "{name}: a damaged stream took {:?}",
                t.elapsed()
            );
        }
    }
    assert_all_equal("codestreams", &bad, all.len(), 300);
}

/// Shapes and chunks written with `Codec::FciDecomp` (2-D, and 3-D with components first), and whether
/// the values are signed.
fn written_layouts() -> Vec<(Vec<u64>, Vec<u64>)> {
    vec![
        (vec![64, 48], vec![32, 48]),
        (vec![50, 70], vec![50, 70]),
        (vec![33, 200], vec![16, 64]),
        (vec![9, 9], vec![3, 9]),
        (vec![3, 40, 40], vec![1, 40, 40]),
        (vec![4, 30, 26], vec![2, 30, 26]),
        (vec![8, 25, 30], vec![4, 25, 30]),
    ]
}

/// 16-bit values of one of several kinds for `n` elements of rows `cols` long.
fn sample(kind: usize, i: usize, cols: usize, rng: &mut XorShift) -> u16 {
    let (r, c) = ((i / cols) as f64, (i % cols) as f64);
    match kind {
        0 => ((r / 5.0).sin() * 3000.0 + (c / 7.0).cos() * 2000.0 + 30000.0) as u16,
        1 => 1234,
        2 => (i % cols / 7 * 1000) as u16,
        3 => rng.below(65536) as u16,
        4 => 500 + rng.below(40) as u16,
        5 => [0u16, 65535][rng.below(2) as usize],
        _ => (i * 97 % 65536) as u16,
    }
}

const WRITTEN_CHECK: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
ours_path, theirs_path, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
bad, coded = [], 0
with h5py.File(ours_path, "r") as ours, h5py.File(theirs_path, "w") as theirs:
    for name in names:
        d = ours[name]
        want = np.fromfile(ours_path + "." + name + ".in", dtype="<" + d.dtype.str[1:]).reshape(d.shape)
        got = d[()]
        if not np.array_equal(got, want):
            bad.append(name + ": h5py reads other values")
            continue
        t = theirs.create_dataset(name, data=want, chunks=d.chunks, **hdf5plugin.FciDecomp())
        if d.id.get_create_plist().get_filter(0)[2] != t.id.get_create_plist().get_filter(0)[2]:
            bad.append(name + ": client data %r, hdf5plugin's %r" % (d.id.get_create_plist().get_filter(0)[2], t.id.get_create_plist().get_filter(0)[2]))
        for i in range(t.id.get_num_chunks()):
            off = t.id.get_chunk_info(i).chunk_offset
            m1, b1 = d.id.read_direct_chunk(off)
            m2, b2 = t.id.read_direct_chunk(off)
            if (m1, b1) != (m2, b2):
                bad.append("%s chunk %r: mask %d (%d bytes), hdf5plugin's mask %d (%d bytes)" % (name, off, m1, len(b1), m2, len(b2)))
            coded += m1 == 0
print(json.dumps({"bad": bad, "coded": coded}))
"#;

const APPEND_BASE: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
a = ((np.indices((40, 48)).sum(axis=0) * 31) % 900 + 100).astype("u2")
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("img", data=a, chunks=(20, 48), maxshape=(None, 48), **hdf5plugin.FciDecomp())
"#;

#[test]
fn written_fcidecomp_chunks_equal_hdf5plugins() {
    if !h5py_with_plugins() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.h5");
    let mut rng = XorShift(0x3201_8001);
    let mut w = FileWriter::new();
    let mut names = Vec::new();
    for (li, (shape, chunk)) in written_layouts().into_iter().enumerate() {
        let n = shape.iter().product::<u64>() as usize;
        let cols = *shape.last().unwrap() as usize;
        for kind in 0..7 {
            let values: Vec<u16> = (0..n).map(|i| sample(kind, i, cols, &mut rng)).collect();
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            for signed in [false, true] {
                let name = format!("w{li}_{kind}_{}", if signed { "i2" } else { "u2" });
                let data = if signed {
                    Data::I16(values.iter().map(|&v| v as i16).collect())
                } else {
                    Data::U16(values.clone())
                };
                w.write_dataset(
                    &format!("/{name}"),
                    Array::new(shape.clone(), data).unwrap(),
                    DatasetOptions {
                        chunk: Some(chunk.clone()),
                        codec: Some(Codec::FciDecomp),
                        ..Default::default()
                    },
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                std::fs::write(format!("{}.{name}.in", ours.display()), &bytes).unwrap();
                names.push(name);
            }
        }
    }
    w.write_file(&ours).unwrap();
    // Our reader reads what we wrote.
    let f = H5File::open(&ours).unwrap();
    for name in &names {
        let got = le_bytes(&f.dataset(&format!("/{name}")).unwrap().read().unwrap().data);
        let want = std::fs::read(format!("{}.{name}.in", ours.display())).unwrap();
        assert_eq!(got, want, "{name}");
    }
    let theirs = dir.path().join("theirs.h5");
    let joined = names.join(",");
    let out = common::python_json(WRITTEN_CHECK, &[&ours, &theirs, Path::new(joined.as_str())]);
    let bad = out["bad"].as_array().unwrap();
    let coded = out["coded"].as_u64().unwrap();
    eprintln!(
        "{} datasets written, {coded} chunks coded with JPEG-LS",
        names.len()
    );
    assert!(coded > 100, "only {coded} chunks coded");
    assert!(bad.is_empty(), "{} differ: {bad:#?}", bad.len());
}

#[test]
fn rows_appended_to_an_h5py_fcidecomp_dataset_are_coded_and_read_by_h5py() {
    if !h5py_with_plugins() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("base.h5");
    common::run_python(APPEND_BASE, &[&path]);
    let rows: Vec<u16> = (0..40 * 48)
        .map(|i| (i % 48 * 13 + i / 48) as u16)
        .collect();
    let mut app = FileAppender::open(&path).unwrap();
    app.append_rows(
        "/img",
        Array::new(vec![40, 48], Data::U16(rows.clone())).unwrap(),
    )
    .unwrap();
    app.commit().unwrap();
    let check = r#"
import sys, json, h5py, hdf5plugin, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    d = f["img"]
    masks = [d.id.get_chunk_info(i).filter_mask for i in range(d.id.get_num_chunks())]
    print(json.dumps({"shape": list(d.shape), "tail": d[40:].ravel().tolist(), "masks": masks}))
"#;
    let out = common::python_json(check, &[&path]);
    assert_eq!(out["shape"], serde_json::json!([80, 48]));
    let tail: Vec<u16> = out["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u16)
        .collect();
    assert_eq!(tail, rows);
    // The appended chunks went through JPEG-LS (mask 0), like the ones h5py wrote.
    assert_eq!(out["masks"], serde_json::json!([0, 0, 0, 0]));
}

/// Requests FCIDECOMP cannot take: typed errors naming the problem, nothing written.
#[test]
fn invalid_fcidecomp_requests_are_refused_by_name() {
    let mut w = FileWriter::new();
    let jpegls = |chunk: Vec<u64>| DatasetOptions {
        chunk: Some(chunk),
        codec: Some(Codec::FciDecomp),
        ..Default::default()
    };
    let u16s = |shape: Vec<u64>| {
        let n = shape.iter().product::<u64>() as usize;
        Array::new(shape, Data::U16(vec![7; n])).unwrap()
    };
    let cases = [
        (
            Array::new(vec![8, 8], Data::U8(vec![1; 64])).unwrap(),
            jpegls(vec![8, 8]),
            "16-bit integers",
        ),
        (
            Array::new(vec![8, 8], Data::F32(vec![1.0; 64])).unwrap(),
            jpegls(vec![8, 8]),
            "16-bit integers",
        ),
        (u16s(vec![64]), jpegls(vec![16]), "2 dimensions"),
        (
            u16s(vec![5, 8, 8]),
            jpegls(vec![5, 8, 8]),
            "1 to 4 components",
        ),
        (
            u16s(vec![2, 2, 8, 8]),
            jpegls(vec![1, 2, 8, 8]),
            "2 dimensions",
        ),
        (u16s(vec![8, 8]), jpegls(vec![1, 8]), "2 to 65,535 lines"),
        (
            u16s(vec![8, 8]),
            DatasetOptions {
                shuffle: true,
                ..jpegls(vec![8, 8])
            },
            "no shuffle with FCIDECOMP",
        ),
    ];
    for (i, (array, opts, want)) in cases.into_iter().enumerate() {
        let e = w.write_dataset(&format!("/d{i}"), array, opts).unwrap_err();
        assert!(
            matches!(e, clawhdf5_format::FormatError::Invalid(_)) && e.to_string().contains(want),
            "{i}: {e}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.h5");
    w.write_file(&path).unwrap();
    assert!(H5File::open(&path).unwrap().dataset("/d0").is_err());
}
