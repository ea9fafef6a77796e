//! JPEG-LS, read: datasets `hdf5plugin.FciDecomp` writes (EUMETSAT's FCIDECOMP filter, 32018: one CharLS
//! JPEG-LS codestream per chunk) compared with h5py's values, and JPEG-LS codestreams CharLS writes through
//! `imagecodecs` (8- and 16-bit samples, lossless and near-lossless) decoded by `clawhdf5_format::jpegls`
//! and compared with CharLS's own decoding, byte for byte.

mod common;

use clawhdf5_format::array::Data;
use clawhdf5_format::H5File;
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
    let Some(dir) = tempfile::tempdir().ok() else {
        panic!("no temporary folder");
    };
    if !["h5py", "hdf5plugin"]
        .iter()
        .all(|m| common::have_python_module(m))
    {
        return;
    }
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
        match f.dataset(&format!("/{name}")).and_then(|d| d.read()) {
            Ok(a) if le_bytes(&a.data) == want => {}
            Ok(a) => {
                let got = le_bytes(&a.data);
                let at = got.iter().zip(&want).position(|(a, b)| a != b);
                bad.push(format!("{name}: differs (first at byte {at:?})"));
            }
            Err(e) => bad.push(format!("{name}: {e}")),
        }
    }
    eprintln!("{} datasets, {coded} chunks coded with JPEG-LS", all.len());
    assert!(all.len() >= 140, "{} datasets", all.len());
    assert!(
        bad.is_empty(),
        "{} of {} differ: {bad:#?}",
        bad.len(),
        all.len()
    );
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
        match clawhdf5_format::jpegls::decode(&stream, want.len()) {
            Ok(got) if got == want => {}
            Ok(got) => {
                let at = got.iter().zip(&want).position(|(a, b)| a != b);
                bad.push(format!(
                    "{name}: differs (first at byte {at:?}, {} bytes)",
                    got.len()
                ));
            }
            Err(e) => bad.push(format!("{name}: {e}")),
        }
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
    eprintln!("{} codestreams", all.len());
    assert!(all.len() >= 300, "{} streams", all.len());
    assert!(
        bad.is_empty(),
        "{} of {} differ: {bad:#?}",
        bad.len(),
        all.len()
    );
}
