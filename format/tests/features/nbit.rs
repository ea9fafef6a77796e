//! libhdf5's N-bit filter, written by h5py (through its low-level API, as h5py has no keyword for it) under
//! each `libver` at test time: integers of reduced precision at bit offsets, both byte orders, 2-D and partial
//! chunks, N-bit then deflate, a full-precision float stored as is, and a compound mixing reduced integers, a
//! string, an array and a nested compound. Every dataset we read equals h5py's values.

use crate::common;

const MAKE: &str = r#"
import os, sys
sys.path.insert(0, sys.argv[2])
import h5py, numpy as np
from relaxed import relaxed_fapl
t = h5py.h5t

def reduced(base, precision, offset):
    r = base.copy()
    r.set_precision(precision)
    r.set_offset(offset)
    return r

def nbit(fid, name, tid, data, chunks, deflate=False):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_filter(h5py.h5z.FILTER_NBIT)
    if deflate:
        dcpl.set_deflate(6)
    space = h5py.h5s.create_simple(data.shape)
    d = h5py.h5d.create(fid, name.encode(), tid, space, dcpl=dcpl)
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))

def fill(fid):
    rng = np.random.default_rng(5)
    nbit(fid, "i4", reduced(t.STD_I32LE, 12, 3), rng.integers(-2048, 2048, size=1000).astype("i4"), (64,))
    nbit(fid, "u2_be", reduced(t.STD_U16BE, 9, 5), rng.integers(0, 512, size=300).astype("u2"), (100,))
    nbit(fid, "i8", reduced(t.STD_I64LE, 40, 10), rng.integers(-2**39, 2**39, size=200), (64,))
    nbit(fid, "i8_be", reduced(t.STD_I64BE, 61, 1), rng.integers(-2**60, 2**60, size=200), (64,))
    nbit(fid, "u1", reduced(t.STD_U8LE, 3, 0), (np.arange(100) % 8).astype("u1"), (30,))
    nbit(fid, "i2_2d", reduced(t.STD_I16LE, 7, 4), rng.integers(-64, 64, size=(37, 23)).astype("i2"), (8, 10))
    nbit(fid, "u4_gzip", reduced(t.STD_U32LE, 17, 0), rng.integers(0, 2**17, size=3000).astype("u4"), (512,), deflate=True)
    nbit(fid, "f4_full", t.IEEE_F32LE, np.linspace(-1, 1, 500).astype("f4"), (128,))
    inner = t.create(t.COMPOUND, 2)
    inner.insert(b"x", 0, reduced(t.STD_U8LE, 4, 2))
    inner.insert(b"y", 1, t.STD_I8LE)
    s3 = t.C_S1.copy()
    s3.set_size(3)
    ct = t.create(t.COMPOUND, 20)
    ct.insert(b"a", 0, reduced(t.STD_I32LE, 12, 0))
    ct.insert(b"b", 4, reduced(t.STD_U16BE, 7, 2))
    ct.insert(b"c", 6, s3)
    ct.insert(b"d", 9, t.array_create(reduced(t.STD_I16LE, 5, 0), (3,)))
    ct.insert(b"e", 15, inner)
    mem = np.dtype([("a", "i4"), ("b", "u2"), ("c", "S3"), ("d", "i2", (3,)), ("e", [("x", "u1"), ("y", "i1")])])
    rows = np.zeros(150, dtype=mem)
    rows["a"] = rng.integers(-2048, 2048, size=150)
    rows["b"] = rng.integers(0, 128, size=150)
    rows["c"] = [b"r%d" % (i % 100) for i in range(150)]
    rows["d"] = rng.integers(-16, 16, size=(150, 3))
    rows["e"]["x"] = rng.integers(0, 16, size=150)
    rows["e"]["y"] = rng.integers(-128, 128, size=150)
    nbit(fid, "compound", ct, rows, (40,))

out = sys.argv[1]
for name, low in [("earliest", "EARLIEST"), ("v108", "V18"), ("v110", "V110"), ("latest", "LATEST")]:
    fapl = relaxed_fapl()
    fapl.set_libver_bounds(getattr(h5py.h5f, "LIBVER_" + low), h5py.h5f.LIBVER_LATEST)
    fid = h5py.h5f.create(os.path.join(out, name + ".h5").encode(), h5py.h5f.ACC_TRUNC, fapl=fapl)
    fill(fid)
    fid.close()
"#;

#[test]
fn nbit_datasets_read_equal_to_h5py_under_every_libver() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path(), &common::script("")]);
    for libver in ["earliest", "v108", "v110", "latest"] {
        let path = dir.path().join(format!("{libver}.h5"));
        common::assert_equal_to_h5py(&path);
        let f = clawhdf5_format::H5File::open(&path).unwrap();
        for name in ["i4", "i8_be", "u4_gzip", "compound"] {
            let d = f.dataset(&format!("/{name}")).unwrap();
            assert!(
                d.filters().iter().any(|fl| fl.id == 5),
                "{libver}/{name} carries the N-bit filter"
            );
        }
    }
}
