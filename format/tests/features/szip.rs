//! libhdf5's szip filter (id 4, libaec's SZIP-compatible coding), written by h5py at test time over every
//! element size it allows, both coders, both byte orders and many block sizes: every dataset we read equals
//! h5py's view of it.

use crate::common;

const MAKE: &str = r#"
import sys, h5py, numpy as np
assert h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP)
rng = np.random.default_rng(5)

def smooth(n, dt):
    t = np.linspace(0, 20, n)
    dt = np.dtype(dt)
    if dt.kind == "f":
        return (np.sin(t) * 1000).astype(dt)
    info = np.iinfo(dt)
    mid = (int(info.max) + int(info.min)) // 2
    amp = min(1000, (int(info.max) - int(info.min)) // 3)
    return (mid + np.sin(t) * amp).astype(dt)

def noise(n, dt):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=n, dtype=dt.newbyteorder("="), endpoint=True).astype(dt)

def half_noise(n, dt):
    # Zeros then noise: a chunk that still shrinks, with uncompressed blocks in it.
    a = np.zeros(n, dtype=dt)
    a[n // 2:] = noise(n - n // 2, dt)
    return a

types = ["u1", "i1", "<i2", "<u2", ">i2", ">u2", "<i4", "<u4", ">i4", "<f4", ">f4", "<f8", ">f8", "<i8", ">u8"]
with h5py.File(sys.argv[1], "w") as f:
    def make(name, data, opts, chunks, **kw):
        d = f.create_dataset(name, data=data, chunks=chunks, compression="szip", compression_opts=opts, **kw)
        assert d.id.get_create_plist().get_filter(kw.get("shuffle", False) and 1 or 0)[0] == 4
        return d
    for t in types:
        tn = t.replace("<", "le_").replace(">", "be_")
        for mode in ["nn", "ec"]:
            make("smooth_%s_%s" % (tn, mode), smooth(5000, t), (mode, 8), (1000,))
            make("const_%s_%s" % (tn, mode), np.full(3000, 7, dtype=t), (mode, 16), (3000,))
            make("half_noise_%s_%s" % (tn, mode), half_noise(2000, t), (mode, 32), (2000,))
            make("noise_%s_%s" % (tn, mode), noise(1000, t), (mode, 8), (500,))
            # 2-D chunks whose scanline (13) is no multiple of the block, with partial edge chunks.
            make("grid_%s_%s" % (tn, mode), smooth(30 * 50, t).reshape(30, 50), (mode, 8), (7, 13))
    for ppb in range(2, 34, 2):
        for t in ["u1", "<i2", ">u2", "<i4", "<f8"]:
            tn = t.replace("<", "le_").replace(">", "be_")
            make("ppb%d_%s" % (ppb, tn), smooth(1237, t) + np.arange(1237).astype(t) % 3, ("nn", ppb), (1237,))
            make("ppb%d_%s_ec" % (ppb, tn), half_noise(999, t), ("ec", ppb), (333,))
    # A scanline shorter than the block: libhdf5 takes a longer one across rows.
    make("narrow", smooth(40 * 3, "<u2").reshape(40, 3), ("nn", 8), (10, 3))
    # A scanline longer than 4096 pixels: libhdf5 caps it at 128 blocks.
    make("wide", smooth(2 * 6000, "<i4").reshape(2, 6000), ("nn", 8), (2, 6000))
    make("wide_u1", smooth(2 * 6000, "u1").reshape(2, 6000), ("ec", 10), (2, 6000))
    # Long zero runs: several whole segments of zero blocks per scanline.
    make("zeros", np.zeros(100000, "u1"), ("nn", 8), (100000,))
    make("zeros_f8", np.zeros((50, 400), "<f8"), ("ec", 32), (50, 400))
    make("steps", np.repeat(np.arange(50, dtype="<u2"), 999), ("nn", 8), (20000,))
    make("shuffle_f4", smooth(10000, "<f4"), ("nn", 16), (4096,), shuffle=True)
    make("shuffle_i8", smooth(10000, ">i8"), ("ec", 8), (4096,), shuffle=True)
    make("fletcher", smooth(3000, "<u2"), ("nn", 8), (1024,), fletcher32=True)
    make("three_d", smooth(6 * 10 * 11, "<i2").reshape(6, 10, 11), ("nn", 4), (3, 5, 11))
    # Reduced precision (libhdf5 codes `precision` bits per pixel, 33-64 as 64): 5, 12, 20, 24 and 28 bits.
    for name, base, bits, signed in [("u5", h5py.h5t.STD_U8LE, 5, 0), ("u12_le", h5py.h5t.STD_U16LE, 12, 0),
                                     ("u12_be", h5py.h5t.STD_U16BE, 12, 0), ("i20_be", h5py.h5t.STD_I32BE, 20, 1),
                                     ("u24_le", h5py.h5t.STD_U32LE, 24, 0), ("u28_be", h5py.h5t.STD_U32BE, 28, 0),
                                     ("u40_le", h5py.h5t.STD_U64LE, 40, 0)]:
        for mode, mask in [("nn", h5py.h5z.SZIP_NN_OPTION_MASK), ("ec", h5py.h5z.SZIP_EC_OPTION_MASK)]:
            if signed and mode == "nn":
                # libhdf5 hands libaec the sign-extended 32 bits; the predictor's stream can then end before
                # the chunk does: libaec decodes part of it (libhdf5 ignores the short count and h5py shows
                # garbage) and we report it corrupt.
                continue
            t = base.copy()
            t.set_precision(bits)
            lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
            vals = np.clip(np.cumsum(rng.integers(-20, 21, 3000)) + (lo + hi) // 2, lo, hi - 1)
            vals[2000:2100] = rng.integers(lo, hi, 100)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((1000,))
            dcpl.set_szip(mask, 8)
            name_m = ("prec_%s_%s" % (name, mode)).encode()
            d = h5py.h5d.create(f.id, name_m, t, h5py.h5s.create_simple((3000,)), dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, vals.astype(("i" if signed else "u") + str(base.get_size())))
            assert d.get_create_plist().get_filter(0)[2][2] == (64 if bits > 32 else 32 if bits > 24 else bits)
    # The filter stores a chunk unfiltered where coding would grow it; check most chunks here are coded.
    masks = [d.id.get_chunk_info(i).filter_mask for d in f.values() for i in range(d.id.get_num_chunks())]
    assert masks.count(0) * 3 > len(masks) * 2, (masks.count(0), len(masks))
"#;

#[test]
fn szip_datasets_read_equal_to_h5py() {
    let Some((_dir, path)) = common::python_written(MAKE, "szip.h5", &["h5py"]) else {
        return;
    };
    common::assert_equal_to_h5py(&path);
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    for name in [
        "smooth_le_f8_nn",
        "const_be_u2_ec",
        "ppb2_u1",
        "ppb32_le_f8",
        "zeros",
        "shuffle_f4",
    ] {
        let d = f.dataset(&format!("/{name}")).unwrap();
        assert!(
            d.filters().iter().any(|fl| fl.id == 4),
            "{name} carries szip"
        );
    }
}

/// The corpus's szip file (4-byte integers, a 10-pixel scanline padded to two blocks), where the corpus is.
#[test]
fn corpus_szip_file_reads_equal_to_h5py() {
    let path = common::shared().join("hdf5-corpus/pytables/test_szip.h5");
    if !path.exists() || !common::have_python_module("h5py") {
        return;
    }
    common::assert_equal_to_h5py(&path);
}

/// Every szip dataset of the file above rewritten through our encoder (each dataset's rows written over with
/// its own values, so every chunk is coded again by us): h5py (libaec) reads every value as before, and the
/// chunks we coded are compressed where libhdf5's were.
#[test]
fn szip_chunks_we_encode_read_back_through_libaec() {
    let Some((_dir, path)) = common::python_written(MAKE, "szip.h5", &["h5py"]) else {
        return;
    };
    let original = path.with_extension("original.h5");
    let before = common::rewrite_root_datasets(&path);
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    for (n, values) in &before {
        assert_eq!(
            &f.dataset(&format!("/{n}")).unwrap().read().unwrap(),
            values,
            "{n}"
        );
    }
    drop(f);
    // libaec decodes every chunk we coded to the values h5py read before.
    common::assert_equal_to_h5py(&path);
    common::run_python(
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[2], "r") as g:
    # Our chunks, not libhdf5's: at new addresses, and coded our own way (other sizes) for many.
    ours = [(d.id.get_chunk_info(i).byte_offset, d.id.get_chunk_info(i).size) for d in f.values() for i in range(d.id.get_num_chunks())]
    theirs = [(d.id.get_chunk_info(i).byte_offset, d.id.get_chunk_info(i).size) for d in g.values() for i in range(d.id.get_num_chunks())]
    assert len(ours) == len(theirs)
    assert all(a[0] != b[0] for a, b in zip(ours, theirs))
    assert sum(a[1] != b[1] for a, b in zip(ours, theirs)) * 2 > len(ours), "sizes like libaec's"
    masks = [d.id.get_chunk_info(i).filter_mask for d in f.values() for i in range(d.id.get_num_chunks())]
    assert masks.count(0) * 3 > len(masks) * 2, (masks.count(0), len(masks))
    zeros = f["zeros"]
    assert zeros.id.get_chunk_info(0).size < 2000, zeros.id.get_chunk_info(0).size
"#,
        &[&path, &original],
    );
}
