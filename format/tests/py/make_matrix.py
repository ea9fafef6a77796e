"""Write the h5py feature matrix: one file per libver with every feature the reader must handle.

usage: make_matrix.py OUTDIR  -> OUTDIR/<libver>.h5 for libver in earliest, v108, v110, latest
"""
import os
import sys

import h5py
import numpy as np

LIBVERS = {
    "earliest": ("earliest", "latest"),
    "v108": ("v108", "latest"),
    "v110": ("v110", "latest"),
    "latest": ("latest", "latest"),
}


def fill(f):
    rng = np.random.default_rng(7)
    g = f.create_group("ints")
    for t in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]:
        info = np.iinfo(t)
        g[t] = np.array([info.min, 0, 1, info.max], dtype=t)
        g[">" + t] = np.array([info.min, 0, 1, info.max], dtype=">" + t)
    g = f.create_group("floats")
    for t in ["f2", "f4", "f8"]:
        g[t] = np.linspace(-3, 3, 13).astype(t)
        g[">" + t] = np.linspace(-3, 3, 13).astype(">" + t)
    g["matrix"] = np.arange(60, dtype="f8").reshape(6, 10) / 3
    g["scalar"] = np.float64(2.5)
    g["empty"] = np.zeros((0, 3), dtype="f4")
    g = f.create_group("strings")
    g["fixed"] = np.array([b"abc", b"hello", b""], dtype="S5")
    g["vlen"] = np.array(["short", "", "unicode \u00e9\u4e2d\U0001f600", "x" * 3000], dtype=h5py.string_dtype())
    g["vlen_bytes"] = np.array([b"ab", b"cde"], dtype=h5py.string_dtype("ascii"))
    g["scalar"] = "just one"
    g = f.create_group("chunked")
    data = rng.integers(0, 1000, size=(50, 20)).astype("i4")
    g.create_dataset("gzip", data=data, chunks=(8, 5), compression="gzip", shuffle=True)
    g.create_dataset("fletcher", data=data, chunks=(16, 20), fletcher32=True)
    # h5py's own LZF filter (id 32000): plain, after shuffle, long runs (long back references), and
    # incompressible chunks (the filter gives up on them and libhdf5 stores them raw, flagged in the mask).
    g.create_dataset("lzf", data=data, chunks=(8, 5), compression="lzf")
    g.create_dataset("lzf_shuffle", data=np.linspace(0, 1, 3000), chunks=(256,), compression="lzf", shuffle=True)
    g.create_dataset("lzf_runs", data=np.repeat(np.arange(40, dtype="u1"), 500), chunks=(4096,), compression="lzf")
    g.create_dataset("lzf_random", data=rng.integers(0, 2**63, size=600, dtype="u8"), chunks=(100,), compression="lzf")
    # libhdf5's scale-offset filter (id 6): integers of several widths, signs and byte orders, a fixed bit
    # width, a fill value (its elements become the all-ones offset), chunks too wide to pack (stored whole),
    # and D-scaled floats.
    g.create_dataset("so_i4", data=data, chunks=(8, 5), scaleoffset=0)
    g.create_dataset("so_i4_bits", data=data, chunks=(10, 10), scaleoffset=12)
    g.create_dataset("so_i8", data=np.arange(-500, 500, dtype="i8") * 3, chunks=(128,), scaleoffset=0)
    g.create_dataset("so_u1", data=np.arange(200, dtype="u1"), chunks=(50,), scaleoffset=0)
    g.create_dataset("so_be", data=np.arange(-100, 100, dtype=">i2"), chunks=(64,), scaleoffset=0)
    g.create_dataset("so_fill", data=np.arange(30, dtype="u2") % 9, chunks=(16,), scaleoffset=0, fillvalue=7)
    g.create_dataset("so_wide", data=rng.integers(-2**62, 2**62, size=300, dtype="i8"), chunks=(100,), scaleoffset=0)
    g.create_dataset("so_f4", data=np.linspace(-2, 2, 500).astype("f4"), chunks=(100,), scaleoffset=3)
    g.create_dataset("so_f8", data=np.linspace(-2, 2, 500), chunks=(100,), scaleoffset=4)
    g.create_dataset("so_f8_be", data=np.linspace(0, 1, 300).astype(">f8"), chunks=(64,), scaleoffset=2)
    g.create_dataset("so_gzip", data=data, chunks=(8, 5), scaleoffset=0, compression="gzip")
    g.create_dataset("lzf_vlen", data=np.array(["row %d" % i for i in range(300)], dtype=h5py.string_dtype()), chunks=(64,), compression="lzf")
    g.create_dataset("single", data=data, chunks=(50, 20), compression="gzip")
    g.create_dataset("fixed_big", data=np.arange(20000, dtype="u2"), chunks=(10,))
    g.create_dataset("grow1", data=data, chunks=(4, 20), maxshape=(None, 20))
    g.create_dataset("grow1_gzip", data=np.arange(3000, dtype="f4"), chunks=(7,), maxshape=(None,), compression="gzip")
    g.create_dataset("grow_big", data=np.arange(100000, dtype="i8"), chunks=(10,), maxshape=(None,))
    g.create_dataset("grow2", data=data, chunks=(8, 8), maxshape=(None, None), compression="gzip")
    g.create_dataset("sparse", shape=(100, 10), chunks=(10, 10), dtype="f8", fillvalue=-1.5)
    g["sparse"][15:25] = 7.0
    g.create_dataset("vlen_chunked", data=np.array(["s%d" % i for i in range(40)], dtype=h5py.string_dtype()), chunks=(16,), compression="gzip")
    g = f.create_group("types")
    ct = np.dtype([("a", "i4"), ("b", "f8"), ("c", "S3"), ("d", "u1", (2,))])
    g["compound"] = np.array([(1, 1.5, b"xy", [1, 2]), (-2, 2.5, b"z", [3, 4])], dtype=ct)
    nested = np.dtype([("id", "u2"), ("pt", [("x", "f4"), ("y", "f4")])])
    g["nested"] = np.array([(1, (0.5, 1.5)), (2, (2.5, 3.5))], dtype=nested)
    g["bool"] = np.array([True, False, True])
    e = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i1")
    g.create_dataset("enum", data=np.array([0, 42, 1], dtype="i1"), dtype=e)
    g["array"] = np.arange(12, dtype="i2").reshape(3, 2, 2)
    d = g.create_dataset("arraytype", (3,), dtype=np.dtype(("f4", (4,))))
    d[...] = np.arange(12, dtype="f4").reshape(3, 4)
    g["opaque"] = np.array([b"\x01\x02\x03\x04", b"\xff\x00\xff\x00"], dtype="V4")
    vl = h5py.vlen_dtype("i4")
    d = g.create_dataset("vlen_int", (3,), dtype=vl)
    d[0] = [1, 2, 3]
    d[1] = []
    d[2] = [7]
    g = f.create_group("links")
    g["target"] = np.arange(3)
    g["soft"] = h5py.SoftLink("/links/target")
    g["external"] = h5py.ExternalLink("other.h5", "/x")
    many = f.create_group("many_links")
    for i in range(40):
        many.create_group("child%03d" % i)
    many.attrs["n"] = 40
    a = f.create_group("many_attrs")
    for i in range(30):
        a.attrs["attr%02d" % i] = np.arange(i + 1, dtype="i4")
    try:
        a.attrs["big"] = np.arange(20000, dtype="f8")  # needs dense storage (not in 'earliest')
    except OSError:
        pass
    o = f.create_group("ordered", track_order=True)
    for n in ["zeta", "alpha", "mid"]:
        o.create_group(n)
        o.attrs[n] = n
    at = f.create_group("attrs")
    at.attrs["str"] = "hello"
    at.attrs["strs"] = np.array(["a", "bc"], dtype=h5py.string_dtype())
    at.attrs["fixed"] = np.bytes_("fixed")
    at.attrs["i"] = np.int64(-5)
    at.attrs["f"] = np.float32(0.25)
    at.attrs["arr"] = np.arange(6, dtype="u8").reshape(2, 3)
    at.attrs["compound"] = np.array((1, 2.0), dtype=[("a", "i4"), ("b", "f8")])
    at.attrs["bool"] = True
    at.attrs["empty"] = h5py.Empty("f4")
    f.attrs["root_attr"] = "root"
    deep = f.create_group("a/b/c/d/e")
    deep["leaf"] = np.arange(4)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, lv in LIBVERS.items():
        with h5py.File(os.path.join(out, name + ".h5"), "w", libver=lv) as f:
            fill(f)


if __name__ == "__main__":
    main()
