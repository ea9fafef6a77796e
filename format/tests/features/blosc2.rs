//! The Blosc2 plugin filter (id 32026), written at test time by h5py with `hdf5plugin.Blosc2` and by
//! PyTables (`complib="blosc2:…"`): every dataset we read equals h5py's view of it.

use crate::common;

/// h5py + hdf5plugin: each codec and filter, 1-D chunks (plain frames) and 2-D/3-D chunks (b2nd arrays) with
/// partial edge chunks, blocks that do not divide their chunks, several element types, constant data (zero
/// chunks left out of the frame, streams that are runs of one byte), noise and stored bytes.
const MAKE: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
rng = np.random.default_rng(7)
B2 = hdf5plugin.Blosc2
smooth = np.linspace(-5, 5, 30000)
ints = rng.integers(0, 1000, size=(61, 47)).astype("i4")
cube = (np.arange(23 * 19 * 17) % 251).astype("u1").reshape(23, 19, 17)
noise = rng.integers(0, 2**63, size=7001, dtype="u8")
compound = np.zeros(3001, dtype=[("a", "i4"), ("b", "f8"), ("c", "S5")])
compound["a"] = np.arange(3001)
compound["b"] = np.linspace(0, 1, 3001)
compound["c"] = [b"r%d" % (i % 977) for i in range(3001)]
filters = [(B2.NOFILTER, "none"), (B2.SHUFFLE, "byte"), (B2.BITSHUFFLE, "bit"), (B2.DELTA, "delta")]
with h5py.File(sys.argv[1], "w") as f:
    for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
        for filt, fname in filters:
            kw = B2(cname=cname, clevel=5, filters=filt)
            p = "%s_%s_" % (cname, fname)
            # 1-D: a plain frame per chunk; the last chunk partial.
            f.create_dataset(p + "f8", data=smooth, chunks=(7000,), **kw)
            # 2-D and 3-D: b2nd arrays, edge chunks partial.
            f.create_dataset(p + "i4_2d", data=ints, chunks=(16, 20), **kw)
            f.create_dataset(p + "u1_3d", data=cube, chunks=(10, 8, 7), **kw)
        f.create_dataset(cname + "_noise", data=noise, chunks=(3000,), **B2(cname=cname))
        f.create_dataset(cname + "_compound", data=compound, chunks=(1000,), **B2(cname=cname))
        # hdf5plugin passes no precision, the filter fails, and the chunks are stored unfiltered (mask bit set).
        f.create_dataset(cname + "_trunc_prec", data=smooth, chunks=(7000,), **B2(cname=cname, filters=B2.TRUNC_PREC))
        # Chunks big enough that b2nd blocks are smaller than them and do not divide them (padding).
        if cname in ("lz4", "zstd"):
            big = (np.arange(600 * 900) % 4099).astype("i2").reshape(600, 900)
            f.create_dataset(cname + "_blocks_2d", data=big, chunks=(500, 700), **B2(cname=cname))
            f.create_dataset(cname + "_blocks_3d", data=(np.arange(90 * 70 * 60) % 1009).astype("i2").reshape(90, 70, 60), chunks=(60, 50, 45), **B2(cname=cname, filters=B2.BITSHUFFLE))
    # Constant data: special-value chunks (zeros, NaN, a repeated value) in 1-D and b2nd frames.
    f.create_dataset("zeros_1d", data=np.zeros(5000), chunks=(1000,), **B2())
    f.create_dataset("zeros_2d", data=np.zeros((40, 30), "i4"), chunks=(16, 16), **B2())
    f.create_dataset("nan_1d", data=np.full(5000, np.nan), chunks=(1000,), **B2())
    f.create_dataset("nan_f4_2d", data=np.full((40, 30), np.nan, "f4"), chunks=(16, 16), **B2())
    f.create_dataset("repeat_1d", data=np.full(5000, 3.25), chunks=(1000,), **B2())
    f.create_dataset("repeat_2d", data=np.full((40, 30), 7, "i2"), chunks=(16, 16), **B2())
    f.create_dataset("runs", data=np.arange(100000, dtype="i4") % 200 + 0x05000000, chunks=(100000,), **B2(cname="lz4"))
    f.create_dataset("clevel_0", data=smooth, chunks=(7000,), **B2(clevel=0))
    f.create_dataset("tiny", data=np.arange(5, dtype="i8"), chunks=(5,), **B2())
    f.create_dataset("scalar_like", data=np.arange(6, dtype="f4").reshape(1, 6), chunks=(1, 6), **B2())
    f.create_dataset("fletcher_2d", data=ints, chunks=(16, 20), fletcher32=True, **B2())
"#;

/// PyTables: a table (1-D, compound rows), chunked arrays of 2 and 3 dimensions, and an extendable array whose
/// only chunk is mostly beyond its rows.
const PYTABLES: &str = r#"
import sys, tables, numpy as np
with tables.open_file(sys.argv[1], "w") as f:
    class Row(tables.IsDescription):
        a = tables.Int32Col()
        b = tables.Float64Col()
        c = tables.StringCol(5)
    t = f.create_table("/", "table", Row, filters=tables.Filters(complib="blosc2:zstd", complevel=5, shuffle=True), expectedrows=5000)
    r = t.row
    for i in range(5000):
        r["a"] = i
        r["b"] = i / 7
        r["c"] = b"x%d" % (i % 100)
        r.append()
    t.flush()
    f.create_carray("/", "carray", obj=np.arange(300 * 200, dtype="f8").reshape(300, 200), filters=tables.Filters(complib="blosc2:zstd", complevel=5), chunkshape=(64, 50))
    f.create_carray("/", "carray3", obj=np.arange(30 * 20 * 17, dtype="i2").reshape(30, 20, 17), filters=tables.Filters(complib="blosc2:lz4", complevel=5, bitshuffle=True), chunkshape=(7, 6, 5))
    e = f.create_earray("/", "earray", atom=tables.Float32Atom(), shape=(0, 13), filters=tables.Filters(complib="blosc2:blosclz", complevel=9))
    e.append(np.random.default_rng(1).random((1000, 13)).astype("f4"))
"#;

/// Chunks of 72-104 MB (beyond the 64 MiB a small file's chunk may decode to) holding a few thousand rows, as
/// PyTables writes them on a machine with a large cache. h5py + hdf5plugin: 1-D plain frames (one with
/// Fletcher-32 checked first), 2-D b2nd arrays of one chunk. python-blosc2, written raw: a b2nd array of many
/// chunks (rows past the extent in chunks never decoded) and a plain frame of many chunks.
const HUGE_CHUNKS: &str = r#"
import sys, h5py, hdf5plugin, blosc2, numpy as np
B2 = hdf5plugin.Blosc2

def raw(f, name, data, chunks, frame):
    item = data.dtype.itemsize
    opts = [1, 0, item, int(np.prod(chunks)) * item, 5, 1, 5]
    if len(chunks) > 1:
        opts += [len(chunks)] + list(chunks)
    ds = f.create_dataset(name, shape=data.shape, maxshape=(None,) + data.shape[1:], dtype=data.dtype, chunks=chunks, compression=32026, compression_opts=tuple(opts))
    block = np.zeros(chunks, data.dtype)
    block[: data.shape[0]] = data
    ds.id.write_direct_chunk((0,) * len(chunks), frame(block))

with h5py.File(sys.argv[1], "w") as f:
    grid = (np.arange(900 * 13) % 251).astype("f4").reshape(900, 13)
    raw(f, "raw_nd_chunks", grid, (2_000_000, 13), lambda b: blosc2.asarray(b, chunks=(50_000, 13), blocks=(10_000, 13), cparams=dict(codec=blosc2.Codec.ZSTD)).to_cframe())
    ramp = np.arange(20000, dtype="i8") * 3
    raw(f, "raw_plain_chunks", ramp, (10_000_000,), lambda b: blosc2.SChunk(chunksize=1 << 20, data=b, cparams=dict(typesize=8, codec=blosc2.Codec.LZ4, blocksize=1 << 16)).to_cframe())
    f.create_dataset("rows_1d", data=np.linspace(0, 1, 3001), maxshape=(None,), chunks=(12_000_000,), **B2(cname="zstd"))
    f.create_dataset("rows_1d_fletcher", data=np.arange(2500, dtype="i8"), maxshape=(None,), chunks=(12_000_000,), fletcher32=True, **B2(cname="lz4"))
    f.create_dataset("rows_2d", data=(np.arange(700 * 13) % 97).astype("f4").reshape(700, 13), maxshape=(None, 13), chunks=(2_000_000, 13), **B2(cname="zstd"))
    e = f.create_dataset("rows_2d_grown", shape=(0, 300), maxshape=(None, 300), dtype="i2", chunks=(120_000, 300), **B2(cname="blosclz", filters=B2.BITSHUFFLE))
    e.resize((1200, 300))
    e[:] = (np.arange(1200 * 300) % 1013).astype("i2").reshape(1200, 300)
"#;

/// Frames made with python-blosc2 and written as raw chunks (what hdf5plugin cannot be asked for): b2nd arrays
/// of several chunks and blocks, two filters in a row (precision truncation, then a shuffle), delta and bit
/// shuffle over many blocks, special-value chunks, each split mode, byte delta, integer truncation, the
/// n-dimensional cell filters and the NDLZ codec.
const RAW: &str = r#"
import sys, h5py, hdf5plugin, blosc2, numpy as np
F = blosc2.Filter
C = blosc2.Codec
rng = np.random.default_rng(5)

def plain(arr, **cparams):
    s = blosc2.SChunk(chunksize=arr.nbytes, data=np.ascontiguousarray(arr), cparams=dict(typesize=arr.dtype.itemsize, **cparams))
    return s.to_cframe()

def nd(arr, chunks, blocks, **cparams):
    return blosc2.asarray(np.ascontiguousarray(arr), chunks=chunks, blocks=blocks, cparams=cparams).to_cframe()

def put(f, name, data, chunks, frames):
    """A dataset of `data` chunked by `chunks` whose chunks are the frames made by `frames(chunk array)`."""
    item = data.dtype.itemsize
    opts = [1, 0, item, int(np.prod(chunks)) * item, 5, 1, 5]
    if len(chunks) > 1:
        opts += [len(chunks)] + list(chunks)
    ds = f.create_dataset(name, shape=data.shape, dtype=data.dtype, chunks=chunks, compression=32026, compression_opts=tuple(opts))
    for start in np.ndindex(*[-(-s // c) for s, c in zip(data.shape, chunks)]):
        lo = [i * c for i, c in zip(start, chunks)]
        block = np.zeros(chunks, data.dtype)
        part = data[tuple(slice(l, l + c) for l, c in zip(lo, chunks))]
        block[tuple(slice(0, n) for n in part.shape)] = part
        ds.id.write_direct_chunk(tuple(lo), frames(block))

with h5py.File(sys.argv[1], "w") as f:
    grid = (np.arange(120 * 90) % 1013).astype("i4").reshape(120, 90)
    # b2nd arrays of several chunks, each padded to whole blocks, and the array padded to whole chunks.
    put(f, "nd_chunks_blocks", grid, (50, 40), lambda b: nd(b, (20, 15), (7, 4), codec=C.ZSTD))
    put(f, "nd_chunks_3d", (np.arange(20 * 18 * 16) % 97).astype("f4").reshape(20, 18, 16), (20, 18, 16),
        lambda b: nd(b, (9, 7, 16), (4, 3, 5), codec=C.LZ4HC, filters=[F.BITSHUFFLE]))
    # Two filters in a row: precision truncation then byte shuffle (a lossy pipeline).
    smooth = np.linspace(0, 100, 50000)
    put(f, "trunc_prec_shuffle", smooth, (20000,), lambda b: plain(b, codec=C.ZLIB, filters=[F.TRUNC_PREC, F.SHUFFLE], filters_meta=[23, 0]))
    put(f, "trunc_prec_nd", smooth.astype("f4").reshape(500, 100), (128, 100), lambda b: nd(b, (128, 100), (32, 50), codec=C.BLOSCLZ, filters=[F.TRUNC_PREC, F.BITSHUFFLE], filters_meta=[10, 0]))
    # Delta over many blocks (each XORed with the first), and bit shuffle with a short last block.
    ramp = (np.arange(300001) * 3).astype("i4")
    put(f, "delta_blocks", ramp, (100000,), lambda b: plain(b, codec=C.LZ4, blocksize=4096, filters=[F.DELTA, F.SHUFFLE]))
    put(f, "delta_u2", (np.arange(9999) % 5000).astype("u2"), (9999,), lambda b: plain(b, codec=C.ZSTD, blocksize=2048, filters=[F.DELTA]))
    put(f, "bitshuffle_tail", (np.arange(1003) * 7).astype("i4"), (1003,), lambda b: plain(b, codec=C.BLOSCLZ, blocksize=1000, filters=[F.BITSHUFFLE]))
    # Special-value arrays: zeros, NaNs and a repeated value, chunk by chunk.
    put(f, "nd_zeros", np.zeros((30, 30)), (30, 30), lambda b: blosc2.zeros((30, 30), dtype="f8", chunks=(10, 10), blocks=(5, 5)).to_cframe())
    put(f, "nd_nan", np.full((30, 30), np.nan), (30, 30), lambda b: blosc2.full((30, 30), np.nan, dtype="f8", chunks=(10, 10), blocks=(5, 5)).to_cframe())
    put(f, "nd_repeat", np.full((30, 30), 2.5), (30, 30), lambda b: blosc2.full((30, 30), 2.5, dtype="f8", chunks=(10, 10), blocks=(5, 5)).to_cframe())
    # Byte delta after a byte shuffle: its meta naming the element size or 0 (the frame's), byte streams whose
    # length is not a multiple of 16, in a b2nd array; integer truncation (lossy: h5py's values are the
    # truncated ones).
    wave = np.sin(np.arange(20011) / 300.0)
    put(f, "bytedelta", wave, (20011,), lambda b: plain(b, codec=C.ZSTD, blocksize=4000, filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 8]))
    put(f, "bytedelta_meta0", wave, (20011,), lambda b: plain(b, codec=C.LZ4, blocksize=4000, filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 0]))
    put(f, "bytedelta_nd", wave[:20000].astype("f4").reshape(200, 100), (64, 100), lambda b: nd(b, (64, 100), (16, 50), codec=C.ZSTD, filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 4]))
    put(f, "int_trunc", (np.arange(50000) * 7919).astype("i4"), (50000,), lambda b: plain(b, codec=C.ZSTD, filters=[F.INT_TRUNC], filters_meta=[20]))
    # N-dimensional cells in b2nd arrays: blocks the cells do not divide (short cells at the far edges), after and
    # before a shuffle, in 3-D; cell means (lossy: h5py's values are the means), a cell side beyond a block's.
    field = np.arange(60 * 50, dtype="f8").reshape(60, 50) * 0.5
    put(f, "ndcell", field, (60, 50), lambda b: nd(b, (30, 25), (12, 10), codec=C.ZSTD, filters=[F.NDCELL], filters_meta=[4]))
    put(f, "ndcell_shuffle", field, (60, 50), lambda b: nd(b, (30, 25), (5, 7), codec=C.LZ4, filters=[F.NDCELL, F.SHUFFLE], filters_meta=[3, 0]))
    put(f, "ndcell_3d", (np.arange(20 * 18 * 16) % 251).astype("i2").reshape(20, 18, 16), (20, 18, 16),
        lambda b: nd(b, (10, 9, 16), (5, 6, 7), codec=C.ZSTD, filters=[F.SHUFFLE, F.NDCELL], filters_meta=[0, 3]))
    put(f, "ndmean", field, (60, 50), lambda b: nd(b, (30, 25), (12, 10), codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[4]))
    put(f, "ndmean_narrow", field, (60, 50), lambda b: nd(b, (30, 25), (12, 3), codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[4]))
    # NDLZ (2-D bytes in cells of 4x4 or 8x8): blocks the cells do not divide; plain areas (one-byte cells), whole
    # cells repeated, rows repeated with a period the cells do not share (row pair and triple matches).
    img = ((np.arange(100)[:, None] // 7 + np.arange(90)[None, :] // 5) % 13).astype("u1")
    img[40:60, 30:50] = 200
    put(f, "ndlz4", img, (50, 45), lambda b: nd(b, (50, 45), (18, 22), codec=C.NDLZ, codec_meta=4))
    put(f, "ndlz8", img, (100, 90), lambda b: nd(b, (100, 90), (33, 41), codec=C.NDLZ, codec_meta=8))
    rows = (((np.arange(120) % 6)[:, None] * 31 + np.arange(64)[None, :]) % 251).astype("u1")
    rows[::5] = np.arange(64, dtype="u1")
    put(f, "ndlz4_rows", rows, (120, 64), lambda b: nd(b, (120, 64), (60, 64), codec=C.NDLZ, codec_meta=4))
    put(f, "ndlz8_rows", rows, (120, 64), lambda b: nd(b, (120, 64), (120, 64), codec=C.NDLZ, codec_meta=8))
    # Never split into streams, and always split (with a short last block kept whole).
    noise = rng.integers(0, 4, size=40000, dtype="u2") + np.arange(40000, dtype="u2") // 3
    put(f, "never_split", noise, (40000,), lambda b: plain(b, codec=C.LZ4, splitmode=blosc2.SplitMode.NEVER_SPLIT, blocksize=6000))
    put(f, "always_split", noise, (40000,), lambda b: plain(b, codec=C.ZSTD, splitmode=blosc2.SplitMode.ALWAYS_SPLIT, blocksize=6000))
"#;

fn check(path: &std::path::Path) {
    common::assert_equal_to_h5py(path);
    let f = clawhdf5_format::H5File::open(path).unwrap();
    let mut blosc2 = 0;
    for e in f.list("/").unwrap() {
        let d = f.dataset(&format!("/{}", e.name)).unwrap();
        if d.filters()
            .iter()
            .any(|x| x.id == clawhdf5_format::filters::BLOSC2)
        {
            blosc2 += 1;
        }
    }
    assert!(blosc2 > 0, "no dataset uses filter 32026");
}

#[test]
fn hdf5plugin_blosc2_datasets_read_equal_to_h5py() {
    if let Some((_dir, path)) = common::python_written(MAKE, "blosc2.h5", &["hdf5plugin"]) {
        check(&path);
    }
}

#[test]
fn pytables_blosc2_datasets_read_equal_to_h5py() {
    if let Some((_dir, path)) =
        common::python_written(PYTABLES, "pytables_blosc2.h5", &["hdf5plugin", "tables"])
    {
        check(&path);
    }
}

#[test]
fn chunks_far_beyond_the_extent_decode_only_the_rows_within_it() {
    let Some((_dir, path)) = common::python_written(HUGE_CHUNKS, "huge_chunks.h5", &["hdf5plugin"])
    else {
        return;
    };
    check(&path);
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    for name in [
        "rows_1d",
        "rows_1d_fletcher",
        "rows_2d",
        "rows_2d_grown",
        "raw_nd_chunks",
        "raw_plain_chunks",
    ] {
        let d = f.dataset(&format!("/{name}")).unwrap();
        let chunk_bytes: u64 = d.chunk().unwrap().iter().product::<u64>() * d.dtype().size() as u64;
        assert!(
            chunk_bytes > 64 << 20,
            "{name}: chunk of {chunk_bytes} bytes"
        );
        // A selection at the far end of the extent decodes the same rows as the whole read.
        let whole = d.read().unwrap();
        let dims = d.shape().to_vec();
        let mut start = vec![0; dims.len()];
        start[0] = dims[0] - 3;
        let mut count = dims.clone();
        count[0] = 3;
        let tail = d.read_slice(&start, &count).unwrap();
        let rows = |a: &clawhdf5_format::Array| match clawhdf5_format::inspect::array_to_json(a) {
            serde_json::Value::Array(v) => v,
            other => panic!("{name}: not an array: {other}"),
        };
        let all = rows(&whole);
        assert_eq!(rows(&tail), all[all.len() - 3..], "{name}: its last rows");
    }
}

/// Rows appended twice before a commit into Blosc2 chunks much longer than the data (chunks the reader decodes
/// only in part), 1-D and b2nd: h5py reads every row back.
#[test]
fn rows_appended_twice_into_long_blosc2_chunks_read_back_in_h5py() {
    use clawhdf5_format::{Array, Data, FileAppender};
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, hdf5plugin, numpy as np
B2 = hdf5plugin.Blosc2
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("g", data=np.arange(100.0), maxshape=(None,), chunks=(1000,), **B2(cname="zstd"))
    f.create_dataset("m", data=np.arange(210, dtype="i4").reshape(30, 7), maxshape=(None, 7), chunks=(500, 7), **B2(cname="lz4"))
"#,
        "long_chunks.h5",
        &["hdf5plugin"],
    ) else {
        return;
    };
    let mut a = FileAppender::open(&path).unwrap();
    for (lo, hi) in [(100, 150), (150, 210)] {
        let rows = Data::F64((lo..hi).map(f64::from).collect());
        a.append_rows("/g", Array::vector(rows)).unwrap();
    }
    for (lo, hi) in [(30, 45), (45, 70)] {
        let rows = Data::I32((lo * 7..hi * 7).collect());
        a.append_rows("/m", Array::matrix((hi - lo) as u64, 7, rows).unwrap())
            .unwrap();
    }
    a.commit().unwrap();
    common::run_python(
        r#"
import sys, h5py, hdf5plugin, numpy as np
with h5py.File(sys.argv[1]) as f:
    assert np.array_equal(f["g"][:], np.arange(210.0)), f["g"][:]
    assert np.array_equal(f["m"][:], np.arange(490, dtype="i4").reshape(70, 7)), f["m"][:]
"#,
        &[&path],
    );
    common::assert_equal_to_h5py(&path);
}

#[test]
fn python_blosc2_frames_read_equal_to_h5py() {
    if let Some((_dir, path)) =
        common::python_written(RAW, "raw_blosc2.h5", &["hdf5plugin", "blosc2"])
    {
        check(&path);
    }
}

/// Every dataset of the hdf5plugin matrix rewritten whole through our Blosc2 encoder (`write_rows`): each
/// codec and filter the datasets name, 1-D to 3-D chunks, fletcher32 before Blosc2. hdf5plugin's filter
/// (c-blosc2) decodes every chunk we wrote to the values h5py read before, and those chunks are ours: plain
/// frames (no b2nd metalayer) at new addresses, compressed where the data allows. PyTables' filter reads
/// them as well.
#[test]
fn blosc2_chunks_we_encode_read_back_through_hdf5plugin() {
    let Some((_dir, path)) = common::python_written(MAKE, "blosc2.h5", &["hdf5plugin", "tables"])
    else {
        return;
    };
    let original = path.with_extension("original.h5");
    let before = common::rewrite_root_datasets(&path);
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    for (n, values) in &before {
        let got = f.dataset(&format!("/{n}")).unwrap().read().unwrap();
        // NaN chunks among them: compared as printed, where every NaN is alike.
        assert!(format!("{got:?}") == format!("{values:?}"), "{n}");
    }
    drop(f);
    common::assert_equal_to_h5py(&path);
    common::run_python(
        r#"
import sys, h5py, hdf5plugin, numpy as np
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[2], "r") as g:
    for name, d in f.items():
        e = g[name]
        try:
            ours = d[()]
        except OSError as err:
            raise AssertionError((name, str(err)))
        assert np.array_equal(ours, e[()], equal_nan=d.dtype.kind == "f"), name
        theirs = {e.id.get_chunk_info(i).chunk_offset: e.id.get_chunk_info(i) for i in range(e.id.get_num_chunks())}
        for i in range(d.id.get_num_chunks()):
            c = d.id.get_chunk_info(i)
            assert c.filter_mask == 0, (name, c)
            assert c.byte_offset != theirs[c.chunk_offset].byte_offset, name
            raw = d.id.read_direct_chunk(c.chunk_offset)[1]
            if name.startswith("fletcher"):
                continue
            # A plain frame: c-blosc2's header, no b2nd metalayer, one chunk.
            assert raw[2:10] == b"b2frame\0" and b"b2nd" not in raw[:200], name
        if name.endswith(("_byte_f8", "_bit_f8", "blocks_2d", "blocks_3d", "runs")) or name.startswith("zeros"):
            size = sum(d.id.get_chunk_info(i).size for i in range(d.id.get_num_chunks()))
            assert size * 2 < d.size * d.dtype.itemsize, (name, size)
# PyTables' own Blosc2 filter reads our chunks too.
import tables, warnings
warnings.simplefilter("ignore")
with tables.open_file(sys.argv[1]) as t, h5py.File(sys.argv[2], "r") as g:
    read = 0
    for node in t.root:
        if node.name.endswith("_compound"):
            continue
        assert np.array_equal(node[:], g[node.name][()], equal_nan=node.dtype.kind == "f"), node.name
        read += 1
    assert read > 50, read
"#,
        &[&path, &original],
    );
}

/// Rows appended to PyTables' own Blosc2 objects (an EArray, a CArray overwritten in part, a table): PyTables
/// reads them back — whole, in slices and through a query — and so does h5py.
#[test]
fn rows_appended_to_pytables_blosc2_objects_read_back_in_pytables() {
    use clawhdf5_format::{Array, Data, FileAppender, H5File};
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, tables, numpy as np
with tables.open_file(sys.argv[1], "w") as f:
    filt = tables.Filters(complevel=5, complib="blosc2:zstd", shuffle=True)
    a = f.create_earray("/", "e", atom=tables.Float64Atom(), shape=(0, 4), filters=filt, chunkshape=(64, 4))
    a.append(np.arange(400.0).reshape(100, 4))
    c = f.create_carray("/", "c", atom=tables.Int32Atom(), shape=(50, 30), filters=tables.Filters(complevel=3, complib="blosc2:lz4", bitshuffle=True), chunkshape=(16, 16))
    c[:] = np.arange(1500).reshape(50, 30)
    class Row(tables.IsDescription):
        x = tables.Int32Col()
        y = tables.Float64Col()
    t = f.create_table("/", "t", Row, filters=filt, chunkshape=(32,))
    t.append([(i, i * 0.5) for i in range(70)])
"#,
        "pytables_append.h5",
        &["tables", "hdf5plugin"],
    ) else {
        return;
    };
    let f = H5File::open(&path).unwrap();
    let first_rows = f.dataset("/t").unwrap().read_rows(0, 30).unwrap();
    drop(f);
    let mut a = FileAppender::open(&path).unwrap();
    let more = Data::F64((400..1000).map(f64::from).collect());
    a.append_rows("/e", Array::matrix(150, 4, more).unwrap())
        .unwrap();
    let negative = Data::I32((0..600).map(|i| -i).collect());
    a.write_rows("/c", 10, Array::matrix(20, 30, negative).unwrap())
        .unwrap();
    a.append_rows("/t", first_rows).unwrap();
    a.commit().unwrap();
    common::run_python(
        r#"
import sys, tables, h5py, hdf5plugin, numpy as np
with tables.open_file(sys.argv[1]) as f:
    e = f.root.e
    assert np.array_equal(e[:], np.arange(1000.0).reshape(250, 4))
    assert np.array_equal(e[120:130, 1:3], np.arange(1000.0).reshape(250, 4)[120:130, 1:3])
    want = np.arange(1500).reshape(50, 30)
    want[10:30] = -np.arange(600).reshape(20, 30)
    assert np.array_equal(f.root.c[:], want) and np.array_equal(f.root.c[5:40, 3:20], want[5:40, 3:20])
    t = f.root.t
    assert t.nrows == 100 and t[95:100].tolist() == [(i, i * 0.5) for i in range(25, 30)]
    assert [r["x"] for r in t.where("x > 65")] == [66, 67, 68, 69]
with h5py.File(sys.argv[1], "r") as f:
    assert np.array_equal(f["e"][:], np.arange(1000.0).reshape(250, 4))
"#,
        &[&path],
    );
}

/// Byte delta as first released (filter 34, "bytedelta_buggy"): python-blosc2's encoder restarts each byte
/// stream's running sum past its last whole 16 bytes (the SIMD code of that release), and we undo exactly that,
/// reading back the values written. The same wheel's decoder sums straight through, so h5py (hdf5plugin) reads
/// the last few elements of every block wrong; this test pins both.
#[test]
fn first_release_bytedelta_reads_back_the_values_written() {
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, hdf5plugin, blosc2, numpy as np
wave = np.sin(np.arange(20011) / 300.0)
s = blosc2.SChunk(chunksize=wave.nbytes, data=wave, cparams=dict(typesize=8, codec=blosc2.Codec.ZLIB, blocksize=4000, filters=[blosc2.Filter.SHUFFLE, 34], filters_meta=[0, 8]))
with h5py.File(sys.argv[1], "w") as f:
    ds = f.create_dataset("x", shape=wave.shape, dtype="f8", chunks=wave.shape, compression=32026, compression_opts=(1, 0, 8, wave.nbytes, 5, 1, 5))
    ds.id.write_direct_chunk((0,), s.to_cframe())
wave.tofile(sys.argv[1] + ".values")
with h5py.File(sys.argv[1], "r") as f:
    wrong = np.nonzero(f["x"][:] != wave)[0]
    # Elements 496-499 of each 500-element block (40 blocks): the bytes past each stream's last 16.
    assert list(wrong[:8]) == [496, 497, 498, 499, 996, 997, 998, 999], wrong[:8]
"#,
        "bytedelta_buggy.h5",
        &["hdf5plugin", "blosc2"],
    ) else {
        return;
    };
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    let got = f.dataset("/x").unwrap().read().unwrap();
    let raw = std::fs::read(path.with_extension("h5.values")).unwrap();
    let want: Vec<f64> = raw
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let got = got.as_f64().unwrap();
    let off: Vec<usize> = (0..want.len())
        .filter(|&i| got[i].to_bits() != want[i].to_bits())
        .collect();
    assert!(
        off.is_empty(),
        "{} values differ, from {:?}",
        off.len(),
        &off[..off.len().min(8)]
    );
}
