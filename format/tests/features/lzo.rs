//! The LZO1X decoder behind PyTables' `lzo` filter, against streams an independent LZO1X compressor
//! (`lzokay` on PyPI) writes at test time: random, text, long runs, zeros, matches up to 48 KiB back.

use crate::common;

const MAKE: &str = r#"
import lzokay, os, random, sys
random.seed(11)
d = sys.argv[1]
cases = {
    "one": b"a",
    "random": bytes(random.randrange(256) for _ in range(70000)),
    "text": b"".join(b"the quick brown fox %d jumps over the lazy dog " % i for i in range(3000)),
    "zeros": bytes(200000),
    "runs": b"".join(bytes([i % 256]) * random.randint(1, 600) for i in range(2000)),
}
base = bytes(random.randrange(256) for _ in range(20000))
cases["far"] = base + bytes(random.randrange(256) for _ in range(30000)) + base
for i in range(30):
    alphabet = random.randint(1, 8)
    cases["small%d" % i] = bytes(random.randrange(alphabet) for _ in range(random.randint(1, 5000)))
for k, v in cases.items():
    open(os.path.join(d, k + ".raw"), "wb").write(v)
    open(os.path.join(d, k + ".lzo"), "wb").write(lzokay.compress(v))
"#;

#[test]
fn lzo_streams_of_an_independent_compressor_decode_exactly() {
    if !common::have_python_module("lzokay") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path()]);
    let mut checked = 0;
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("lzo") {
            continue;
        }
        let stream = std::fs::read(&p).unwrap();
        let want = std::fs::read(p.with_extension("raw")).unwrap();
        let (got, used) = clawhdf5_format::lzo::decompress(&stream, want.len())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(used, stream.len(), "{}: input left over", p.display());
        assert!(got == want, "{}: decoded bytes differ", p.display());
        // One byte less room than the data needs is an error, not a truncated result.
        assert!(
            clawhdf5_format::lzo::decompress(&stream, want.len() - 1).is_err(),
            "{}",
            p.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 36);
}

/// Our LZO1X compressor against the independent decoder: each case above compressed by us decodes through
/// `lzokay` to its bytes, and compresses as well as the data allows (text, zeros and runs to a fraction).
#[test]
fn our_lzo_streams_decode_through_lzokay() {
    if !common::have_python_module("lzokay") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path()]);
    let mut written = 0;
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("raw") {
            continue;
        }
        let raw = std::fs::read(&p).unwrap();
        let ours = clawhdf5_format::lzo_compress::compress(&raw);
        let name = p.file_stem().unwrap().to_str().unwrap();
        if ["text", "zeros", "runs"].contains(&name) {
            assert!(ours.len() * 4 < raw.len(), "{name}: {} bytes", ours.len());
        }
        std::fs::write(p.with_extension("ours"), ours).unwrap();
        written += 1;
    }
    assert_eq!(written, 36);
    common::run_python(
        r#"
import lzokay, os, sys
d = sys.argv[1]
for n in os.listdir(d):
    if n.endswith(".raw"):
        raw = open(os.path.join(d, n), "rb").read()
        ours = open(os.path.join(d, n[:-4] + ".ours"), "rb").read()
        assert lzokay.decompress(ours, len(raw)) == raw, n
"#,
        &[dir.path()],
    );
}

/// Rows appended to PyTables-style LZO datasets (the filter optional, as PyTables sets it; libhdf5 here has no
/// LZO, so its own chunks skip it): our chunks go through LZO (mask 0), after a shuffle where the dataset has
/// one, and end as PyTables' filter expects for the object's kind and version — the Adler-32 and the byte count
/// after the stream, except for tables older than format 2.0. `lzokay` decodes each of our streams to the rows'
/// bytes, and our reader reads every row back.
#[test]
fn rows_appended_to_lzo_datasets_decode_through_lzokay() {
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, numpy as np
from h5py import h5z
data = (np.arange(6000, dtype="<i4") // 5).reshape(1500, 4)
with h5py.File(sys.argv[1], "w") as f:
    for name, opts, shuffle in [(b"earray", (1, 23, 2), False), (b"table_v23", (1, 23, 0), True),
                                (b"table_v19", (1, 19, 0), False), (b"no_opts", (), True)]:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((256, 4))
        if shuffle:
            dcpl.set_shuffle()
        dcpl.set_filter(305, h5z.FLAG_OPTIONAL, opts)
        space = h5py.h5s.create_simple((1500, 4), (h5py.h5s.UNLIMITED, 4))
        h5py.h5d.create(f.id, name, h5py.h5t.STD_I32LE, space, dcpl=dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL, data)
"#,
        "lzo.h5",
        &["h5py", "lzokay"],
    ) else {
        return;
    };
    let names = ["earray", "table_v23", "table_v19", "no_opts"];
    let more: Vec<i32> = (6000..10000).map(|i| i / 5).collect();
    let mut a = clawhdf5_format::FileAppender::open(&path).unwrap();
    for n in names {
        let rows =
            clawhdf5_format::Array::matrix(1000, 4, clawhdf5_format::Data::I32(more.clone()));
        a.append_rows(&format!("/{n}"), rows.unwrap())
            .unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    a.commit().unwrap();
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    let want: Vec<i32> = (0..10000).map(|i| i / 5).collect();
    for n in names {
        let got = f.dataset(&format!("/{n}")).unwrap().read().unwrap();
        assert_eq!(got.as_i32().unwrap(), &want[..], "{n}");
    }
    drop(f);
    common::run_python(
        r#"
import sys, zlib, h5py, lzokay, numpy as np
want = (np.arange(10240, dtype="<i4") // 5).reshape(2560, 4)
want[2500:] = 0
with h5py.File(sys.argv[1], "r") as f:
    for name, trailer, shuffle in [("earray", True, False), ("table_v23", True, True), ("table_v19", False, False),
                                   ("no_opts", False, True)]:
        d = f[name]
        ours = 0
        for i in range(d.id.get_num_chunks()):
            c = d.id.get_chunk_info(i)
            if c.chunk_offset[0] < 1280:
                assert c.filter_mask == (2 if shuffle else 1), (name, c)  # libhdf5's: LZO skipped
                continue
            assert c.filter_mask == 0, (name, c)
            raw = d.id.read_direct_chunk(c.chunk_offset)[1]
            if trailer:
                raw, (adler, count) = raw[:-8], np.frombuffer(raw[-8:], "<u4")
            decoded = lzokay.decompress(raw, 4096)
            if trailer:
                # The checksum and count of the bytes LZO took (shuffled, where the dataset shuffles).
                assert count == 4096 and adler == zlib.adler32(decoded), name
            out = np.frombuffer(decoded, "u1").reshape(4, 1024).T.tobytes() if shuffle else decoded
            expect = want[c.chunk_offset[0]:c.chunk_offset[0] + 256].tobytes()
            assert out == expect, (name, c.chunk_offset)
            assert len(raw) < 4096, (name, len(raw))
            ours += 1
        assert ours == 5, (name, ours)
"#,
        &[&path],
    );
}

/// Datasets we create with `Codec::Lzo` (plain, under shuffle and fletcher32, variable-length strings, one
/// growable): we read them back, and each chunk is what PyTables' filter takes — an LZO1X stream `lzokay`
/// decodes, then the Adler-32 and byte count of the bytes it holds (the fletcher32 checksum after them where
/// the dataset has one) — with PyTables' client data for an array (`(1, 20, 4)`, `(1, 20, 2)` when growable).
#[test]
fn datasets_we_create_with_lzo_decode_through_lzokay() {
    use clawhdf5_format::{Array, Codec, Data, DatasetOptions, FileWriter, H5File};
    if !common::have_python_module("lzokay") || !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lzo_written.h5");
    let rows = |n: u64| Array::matrix(n, 6, Data::I32((0..n as i32 * 6).map(|i| i / 4).collect()));
    let texts = Array::vector(Data::VarStr(
        (0..500).map(|i| format!("note {}", i % 37)).collect(),
    ));
    let mut w = FileWriter::new();
    let lzo = |shuffle, fletcher32, grows: bool| DatasetOptions {
        chunk: Some(vec![100, 6]),
        max_shape: grows.then(|| vec![None, Some(6)]),
        shuffle,
        fletcher32,
        codec: Some(Codec::Lzo),
        ..Default::default()
    };
    w.write_dataset("/plain", rows(1000).unwrap(), lzo(false, false, false))
        .unwrap();
    w.write_dataset("/checked", rows(1000).unwrap(), lzo(true, true, true))
        .unwrap();
    let opts = DatasetOptions {
        codec: Some(Codec::Lzo),
        ..Default::default()
    };
    w.write_dataset("/texts", texts.clone(), opts).unwrap();
    w.write_file(&path).unwrap();
    let f = H5File::open(&path).unwrap();
    for n in ["/plain", "/checked"] {
        assert_eq!(
            f.dataset(n).unwrap().read().unwrap(),
            rows(1000).unwrap(),
            "{n}"
        );
    }
    assert_eq!(f.dataset("/texts").unwrap().read().unwrap(), texts);
    drop(f);
    common::run_python(
        r#"
import sys, zlib, h5py, lzokay, numpy as np
want = (np.arange(6000, dtype="<i4") // 4).reshape(1000, 6)
with h5py.File(sys.argv[1], "r") as f:
    for name, kind, fletcher, shuffle in [("plain", 4, False, False), ("checked", 2, True, True), ("texts", 4, False, False)]:
        d = f[name]
        plist = d.id.get_create_plist()
        filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
        lzo = [x for x in filters if x[0] == 305]
        assert len(lzo) == 1 and tuple(lzo[0][2]) == (1, 20, kind), (name, filters)
        size = d.chunks[0] * (d.chunks[1] if d.ndim == 2 else 1) * d.dtype.itemsize if name != "texts" else None
        for i in range(d.id.get_num_chunks()):
            c = d.id.get_chunk_info(i)
            raw = d.id.read_direct_chunk(c.chunk_offset)[1]
            if fletcher:
                raw = raw[:-4]
            stream, (adler, count) = raw[:-8], np.frombuffer(raw[-8:], "<u4")
            decoded = lzokay.decompress(stream, int(count))
            assert len(decoded) == count and adler == zlib.adler32(decoded), (name, i)
            if size is not None:
                assert count == size, (name, count)
                out = np.frombuffer(decoded, "u1").reshape(4, -1).T.tobytes() if shuffle else decoded
                r = c.chunk_offset[0]
                assert out == want[r:r + 100].tobytes(), (name, r)
"#,
        &[&path],
    );
}
