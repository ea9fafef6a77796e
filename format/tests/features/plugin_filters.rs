//! Plugin filters that h5py users add with `hdf5plugin` (zstd, LZ4, bitshuffle, Blosc, bzip2), written by h5py at test
//! time, and PyTables' bzip2: every dataset we read equals h5py's view of it.

use crate::common;

const MAKE: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
rng = np.random.default_rng(3)
ints = rng.integers(0, 1000, size=(60, 40)).astype("i4")
smooth = np.linspace(-5, 5, 20000)
noise = rng.integers(0, 2**63, size=5000, dtype="u8")
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("zstd_ints", data=ints, chunks=(16, 16), **hdf5plugin.Zstd())
    f.create_dataset("zstd_level_19", data=smooth, chunks=(4096,), **hdf5plugin.Zstd(clevel=19))
    f.create_dataset("zstd_noise", data=noise, chunks=(1000,), **hdf5plugin.Zstd())
    f.create_dataset("zstd_strings", data=np.array(["memory %d" % i for i in range(500)], dtype=h5py.string_dtype()), chunks=(128,), **hdf5plugin.Zstd())
    f.create_dataset("lz4_ints", data=ints, chunks=(16, 16), **hdf5plugin.LZ4())
    # Blocks of 1 KiB: several per chunk, compressed ones and (for noise) stored ones, and a short last block.
    f.create_dataset("lz4_blocks", data=smooth, chunks=(3000,), **hdf5plugin.LZ4(nbytes=1024))
    f.create_dataset("lz4_noise", data=noise, chunks=(1000,), **hdf5plugin.LZ4(nbytes=1024))
    for codec, name in [(None, "none"), ("lz4", "lz4"), ("zstd", "zstd")]:
        kw = hdf5plugin.Bitshuffle() if codec is None else hdf5plugin.Bitshuffle(cname=codec)
        if codec is None:
            kw = hdf5plugin.Bitshuffle(cname="none")
        f.create_dataset("bitshuffle_" + name, data=ints, chunks=(16, 16), **kw)
        # 1003 elements: whole blocks, a short last block and three elements past the last multiple of 8.
        f.create_dataset("bitshuffle_tail_" + name, data=smooth[:1003], chunks=(1003,), **kw)
        f.create_dataset("bitshuffle_blocks_" + name, data=noise, chunks=(5000,), **hdf5plugin.Bitshuffle(nelems=256, cname=codec or "none"))
    # The default block size (8 KiB of elements): several whole blocks and a short one, uncompressed.
    f.create_dataset("bitshuffle_default_blocks", data=noise, chunks=(5000,), **hdf5plugin.Bitshuffle(cname="none"))
    f.create_dataset("bitshuffle_u1", data=(np.arange(3000) % 7).astype("u1"), chunks=(3000,), **hdf5plugin.Bitshuffle())
    # Blosc 1 buffers: every codec a Blosc 1 reader needs, each shuffle, several element sizes, chunks bigger
    # than a block (so a short last block), incompressible data, and a compound type.
    blosc = hdf5plugin.Blosc
    compound = np.zeros(3000, dtype=[("a", "i4"), ("b", "f8"), ("c", "S5")])
    compound["a"] = np.arange(3000)
    compound["b"] = np.linspace(0, 1, 3000)
    for cname in ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"]:
        for shuf, sname in [(blosc.NOSHUFFLE, "none"), (blosc.SHUFFLE, "byte"), (blosc.BITSHUFFLE, "bit")]:
            kw = blosc(cname=cname, clevel=5, shuffle=shuf)
            f.create_dataset("blosc_%s_%s_f8" % (cname, sname), data=smooth, chunks=(20000,), **kw)
            f.create_dataset("blosc_%s_%s_i4" % (cname, sname), data=ints, chunks=(16, 16), **kw)
            f.create_dataset("blosc_%s_%s_u1" % (cname, sname), data=(np.arange(70001) % 13).astype("u1"), chunks=(70001,), **kw)
        f.create_dataset("blosc_%s_noise" % cname, data=noise, chunks=(5000,), **blosc(cname=cname))
        f.create_dataset("blosc_%s_compound" % cname, data=compound, chunks=(3000,), **blosc(cname=cname))
    f.create_dataset("blosc_clevel_9", data=smooth, chunks=(20000,), **blosc(cname="blosclz", clevel=9))
    f.create_dataset("blosc_clevel_0", data=smooth, chunks=(20000,), **blosc(cname="blosclz", clevel=0))
    f.create_dataset("lz4_shuffle", data=smooth.astype("f4"), chunks=(4096,), shuffle=True, **hdf5plugin.LZ4())
    # bzip2 (filter 307): 100 KB and 900 KB blocks, a chunk of several blocks, noise, after shuffle, strings.
    f.create_dataset("bzip2_ints", data=ints, chunks=(16, 16), **hdf5plugin.BZip2(blocksize=1))
    f.create_dataset("bzip2_smooth", data=smooth, chunks=(20000,), **hdf5plugin.BZip2(blocksize=9))
    f.create_dataset("bzip2_multi_block", data=np.tile(smooth, 2), chunks=(40000,), **hdf5plugin.BZip2(blocksize=1))
    f.create_dataset("bzip2_noise", data=noise, chunks=(1000,), **hdf5plugin.BZip2())
    f.create_dataset("bzip2_shuffle", data=smooth.astype("f4"), chunks=(4096,), shuffle=True, **hdf5plugin.BZip2())
    f.create_dataset("bzip2_strings", data=np.array(["memory %d" % i for i in range(500)], dtype=h5py.string_dtype()), chunks=(128,), **hdf5plugin.BZip2())
"#;

/// PyTables' own bzip2 filter (the one netCDF-4 and hdf5plugin follow), with and without shuffle.
const PYTABLES_BZIP2: &str = r#"
import sys, tables, numpy as np
with tables.open_file(sys.argv[1], "w") as f:
    for shuffle in (False, True):
        filters = tables.Filters(complevel=5, complib="bzip2", shuffle=shuffle)
        a = f.create_carray("/", "bzip2_shuffle_%d" % shuffle, obj=np.arange(50000, dtype="f8") / 7, filters=filters, chunkshape=(8192,))
    t = f.create_table("/", "table", {"x": tables.Int32Col(), "y": tables.Float64Col()}, filters=tables.Filters(5, "bzip2"))
    t.append([(i, i / 3) for i in range(3000)])
"#;

#[test]
fn pytables_bzip2_reads_equal_to_h5py() {
    let Some((_dir, path)) =
        common::python_written(PYTABLES_BZIP2, "bzip2.h5", &["tables", "hdf5plugin"])
    else {
        return;
    };
    common::assert_equal_to_h5py(&path);
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    for name in ["bzip2_shuffle_0", "bzip2_shuffle_1", "table"] {
        let d = f.dataset(&format!("/{name}")).unwrap();
        assert!(d.filters().iter().any(|fl| fl.id == 307), "{name}: bzip2");
    }
}

#[test]
fn plugin_filtered_datasets_read_equal_to_h5py() {
    let Some((_dir, path)) = common::python_written(MAKE, "plugins.h5", &["hdf5plugin"]) else {
        return;
    };
    common::assert_equal_to_h5py(&path);
    let f = clawhdf5_format::H5File::open(&path).unwrap();
    for name in [
        "zstd_ints",
        "lz4_blocks",
        "lz4_noise",
        "bzip2_smooth",
        "bzip2_multi_block",
    ] {
        let d = f.dataset(&format!("/{name}")).unwrap();
        assert!(!d.filters().is_empty(), "{name} is filtered");
    }
}
