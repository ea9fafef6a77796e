//! ZFP-compressed data written at test time and read back bit for bit: the H5Z-ZFP filter (32013) as
//! `hdf5plugin.Zfp` writes it (fixed rate, precision and accuracy, reversible and expert modes over f32, f64,
//! i32 and i64 (and u32, u64 coded as their signed kin), 1-D to 4-D arrays whose edges are not multiples of 4, several chunk shapes, chunks with
//! dimensions of 1, random and smooth data, zeros, NaN and infinities), and Blosc2's ZFP codecs (python-blosc2
//! b2nd frames of f32 and f64 stored as the chunks of Blosc2-filtered datasets). Python writes each
//! dataset's values as h5py (resp. python-blosc2) decodes them, as raw bytes beside the file; ours must equal
//! them byte for byte.

use crate::common;

use clawhdf5_format::array::Data;
use clawhdf5_format::H5File;
use std::path::Path;

const H5Z: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(7)
names = []

def save(name, arr):
    np.ascontiguousarray(arr).tofile(out + "." + name + ".bin")
    names.append(name)

def smooth(shape, dt):
    g = np.indices(shape).sum(axis=0).astype("f8")
    return (np.sin(g / 3.0) * 100 + g).astype(dt)

def rand(shape, dt):
    if dt.startswith("f"):
        return (rng.standard_normal(shape) * 10.0 ** rng.integers(-5, 6, size=shape)).astype(dt)
    return rng.integers(-(1 << 28), 1 << 28, size=shape).astype(dt)

def wide(shape, dt):
    # Full-range integers and floats with NaN, infinities, zeros and subnormals: for the reversible mode.
    if dt.startswith("i"):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    bits = rng.integers(0, 1 << 62, size=shape, dtype="i8") if dt == "f8" else rng.integers(0, 1 << 31, size=shape, dtype="i4")
    a = bits.view(dt).copy() if dt == "f8" else bits.astype("i4").view("f4").copy()
    flat = a.reshape(-1)
    flat[::7] = np.nan
    flat[1::11] = np.inf
    flat[2::13] = -np.inf
    flat[3::5] = 0
    flat[4::17] = -0.0
    return a

with h5py.File(out, "w") as f:
    shapes = {
        1: ((1001,), [(300,), (1001,), (5,)]),
        2: ((37, 50), [(16, 23), (37, 50), (1, 50)]),
        3: ((9, 10, 11), [(9, 10, 11), (1, 10, 11), (4, 7, 5)]),
        4: ((5, 6, 7, 9), [(5, 6, 7, 9), (3, 6, 1, 9)]),
    }
    modes = {
        "rate": dict(rate=9.5), "rate_low": dict(rate=1.0), "prec": dict(precision=14), "prec_full": dict(precision=64),
        "acc": dict(accuracy=1e-3), "rev": dict(reversible=True),
        "expert": dict(minbits=0, maxbits=900, maxprec=20, minexp=-30),
        "expert_pad": dict(minbits=300, maxbits=700, maxprec=40, minexp=-60),
    }
    for dims, (shape, chunk_list) in shapes.items():
        for ci, chunks in enumerate(chunk_list):
            for dt in ("f4", "f8", "i4", "i8"):
                for mname, m in modes.items():
                    if mname == "acc" and dt.startswith("i"):
                        continue
                    kinds = [("smooth", smooth(shape, dt)), ("rand", rand(shape, dt))]
                    if ci == 0:
                        kinds.append(("zeros", np.zeros(shape, dt)))
                        if mname == "rev":
                            kinds.append(("wide", wide(shape, dt)))
                    for kind, data in kinds:
                        name = f"d{dims}_c{ci}_{dt}_{mname}_{kind}"
                        f.create_dataset(name, data=data, chunks=chunks, **hdf5plugin.Zfp(**m))
                        save(name, f[name][()])
    # Lossy modes over NaN and infinities (zfp leaves the values undefined but its decoder is deterministic).
    odd = rand((40, 12), "f4")
    odd[3, 4] = np.inf
    odd[20, 1] = np.nan
    f.create_dataset("odd_values_rate", data=odd, chunks=(40, 12), **hdf5plugin.Zfp(rate=12))
    save("odd_values_rate", f["odd_values_rate"][()])
    f.create_dataset("odd_values_prec", data=odd.astype("f8"), chunks=(40, 12), **hdf5plugin.Zfp(precision=20))
    save("odd_values_prec", f["odd_values_prec"][()])
    # Unsigned integers (coded as signed ones of their width).
    u = rng.integers(0, 1 << 32, size=(30, 17), dtype="u8").astype("u4")
    f.create_dataset("u4_rev", data=u, chunks=(16, 17), **hdf5plugin.Zfp(reversible=True))
    save("u4_rev", f["u4_rev"][()])
    f.create_dataset("u8_rate", data=u.astype("u8") << 20, chunks=(30, 8), **hdf5plugin.Zfp(rate=40))
    save("u8_rate", f["u8_rate"][()])
    assert f["d2_c0_f4_rate_smooth"].id.get_create_plist().get_filter(0)[0] == 32013
with open(out + ".names", "w") as n:
    n.write("\n".join(names))
"#;

const BLOSC2: &str = r#"
import sys, h5py, hdf5plugin, blosc2, numpy as np
out = sys.argv[1]
C = blosc2.Codec
rng = np.random.default_rng(11)
names = []

def put(f, name, data, chunks, arr_chunks, blocks, **cparams):
    """A Blosc2 dataset whose chunks are python-blosc2 b2nd frames; the values python-blosc2 decodes saved."""
    item = data.dtype.itemsize
    opts = [1, 0, item, int(np.prod(chunks)) * item, 5, 0, 5]
    if len(chunks) > 1:
        opts += [len(chunks)] + list(chunks)
    ds = f.create_dataset(name, shape=data.shape, dtype=data.dtype, chunks=chunks, compression=32026, compression_opts=tuple(opts))
    expect = np.zeros(data.shape, data.dtype)
    for start in np.ndindex(*[-(-s // c) for s, c in zip(data.shape, chunks)]):
        lo = [i * c for i, c in zip(start, chunks)]
        block = np.zeros(chunks, data.dtype)
        sl = tuple(slice(l, l + c) for l, c in zip(lo, chunks))
        part = data[sl]
        block[tuple(slice(0, n) for n in part.shape)] = part
        frame = blosc2.asarray(block, chunks=arr_chunks, blocks=blocks, cparams=dict(cparams)).to_cframe()
        ds.id.write_direct_chunk(tuple(lo), frame)
        back = blosc2.ndarray_from_cframe(frame)[...]
        expect[sl] = back[tuple(slice(0, n) for n in part.shape)]
    np.ascontiguousarray(expect).tofile(out + "." + name + ".bin")
    names.append(name)

def smooth(shape, dt):
    g = np.indices(shape).sum(axis=0).astype("f8")
    return (np.sin(g / 4.0) * 50 + g * 0.25).astype(dt)

with h5py.File(out, "w") as f:
    cases = [
        ((1000,), (1000,), (500,), (128,)),
        ((50, 45), (50, 45), (25, 45), (8, 12)),
        ((30, 20, 10), (30, 20, 10), (15, 20, 10), (5, 10, 6)),
        ((10, 9, 8, 7), (10, 9, 8, 7), (10, 9, 8, 7), (5, 4, 4, 7)),
    ]
    for shape, chunks, arr_chunks, blocks in cases:
        d = len(shape)
        for dt in ("f4", "f8"):
            for kind, data in (("smooth", smooth(shape, dt)), ("rand", rng.standard_normal(shape).astype(dt))):
                for codec, metas in ((C.ZFP_RATE, (30, 60)), (C.ZFP_PREC, (4, 20)), (C.ZFP_ACC, (254, 0))):
                    for meta in metas:
                        name = f"b{d}_{dt}_{codec.name.lower()}_{meta}_{kind}".replace("-", "m")
                        put(f, name, data, chunks, arr_chunks, blocks, codec=codec, codec_meta=meta, filters=[], splitmode=blosc2.SplitMode.NEVER_SPLIT)
with open(out + ".names", "w") as n:
    n.write("\n".join(names))
"#;

/// The values of `data` as little-endian bytes (integer and float types of 4 or 8 bytes only).
fn le_bytes(data: &Data) -> Vec<u8> {
    match data {
        Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        other => panic!("unexpected data {}", other.type_name()),
    }
}

/// Reads every dataset `path.names` lists and compares it with `path.NAME.bin`; returns how many were read.
fn compare(path: &Path) -> usize {
    let names = std::fs::read_to_string(path.with_extension("h5.names")).unwrap();
    let f = H5File::open(path).unwrap();
    let mut bad = Vec::new();
    let mut n = 0;
    for name in names.lines().filter(|l| !l.is_empty()) {
        let want = std::fs::read(path.with_extension(format!("h5.{name}.bin"))).unwrap();
        match f.dataset(&format!("/{name}")).and_then(|d| d.read()) {
            Ok(a) => {
                let got = le_bytes(&a.data);
                if got != want {
                    let at = got.iter().zip(&want).position(|(a, b)| a != b);
                    bad.push(format!("{name}: differs (first at byte {at:?})"));
                }
                // A row read alone (only part of its chunks decoded into place) equals its part of the whole.
                let rows = a.shape[0] as usize;
                if rows > 2 {
                    let row = want.len() / rows;
                    let d = f.dataset(&format!("/{name}")).unwrap();
                    match d.read_rows(rows as u64 - 2, 1) {
                        Ok(r) if le_bytes(&r.data) == want[(rows - 2) * row..(rows - 1) * row] => {}
                        Ok(_) => bad.push(format!("{name}: row {} differs", rows - 2)),
                        Err(e) => bad.push(format!("{name}: row read: {e}")),
                    }
                }
            }
            Err(e) => bad.push(format!("{name}: {e}")),
        }
        n += 1;
    }
    assert!(bad.is_empty(), "{} of {n} differ: {bad:#?}", bad.len());
    n
}

#[test]
fn hdf5plugin_zfp_datasets_read_bit_for_bit() {
    if let Some((_dir, path)) = common::python_written(H5Z, "zfp.h5", &["h5py", "hdf5plugin"]) {
        assert!(compare(&path) > 300);
    }
}

#[test]
fn blosc2_zfp_codecs_read_bit_for_bit() {
    if let Some((_dir, path)) =
        common::python_written(BLOSC2, "zfp_blosc2.h5", &["h5py", "hdf5plugin", "blosc2"])
    {
        assert!(compare(&path) > 90);
    }
}
