"""One libhdf5 turn of the ping-pong test (format/tests/ping_pong.rs): edit a file another writer made.

usage: ping_pong_edit.py FILE SEED TURN

Turn 0 creates FILE instead: random groups (old-style symbol tables under libver "earliest", h5py's default),
datasets and attributes, under a libver bound drawn from SEED.

Opens FILE read-write with h5py (a libver bound drawn from SEED), makes a few random edits drawn from SEED —
attributes added (some in bursts that move an object to dense attribute storage) and deleted, datasets created,
grown, overwritten, moved and deleted, groups created with many links — then prints one JSON object:
{"ops": [what it did], "changed": [paths whose dump may differ], "removed": [paths that may be gone, with
everything under them], "dump": the file as tests/py/dump_h5.py shows it after the edits}.
"""
import json
import os
import random
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_h5 import dump  # noqa: E402

NUMERIC = ["i1", "u1", "<i2", ">u2", "<i4", ">i4", "<u8", "<f2", "<f4", ">f8"]

# Pipelines new datasets draw from: gzip and LZF, and hdf5plugin's filters where it is installed.
COMPRESSIONS = [{"compression": "gzip"}, {"compression": "lzf"}]
try:
    import hdf5plugin

    COMPRESSIONS += [
        dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
        dict(hdf5plugin.Blosc(cname="blosclz", clevel=3, shuffle=hdf5plugin.Blosc.NOSHUFFLE)),
        dict(hdf5plugin.Blosc(cname="zstd", clevel=5, shuffle=hdf5plugin.Blosc.BITSHUFFLE)),
        dict(hdf5plugin.LZ4()),
        dict(hdf5plugin.Zstd(clevel=4)),
        dict(hdf5plugin.BZip2(blocksize=3)),
        dict(hdf5plugin.Blosc2(cname="lz4", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)),
        dict(hdf5plugin.Blosc2(cname="zstd", clevel=3, filters=hdf5plugin.Blosc2.BITSHUFFLE)),
        dict(hdf5plugin.Blosc2(cname="blosclz", clevel=5, filters=hdf5plugin.Blosc2.NOFILTER)),
    ]
except ImportError:
    pass


def parent(path):
    head = path.rsplit("/", 1)[0]
    return head or "/"


def objects(f):
    """Every dataset and group path (the root included), in a stable order."""
    out = ["/"]
    f.visit(lambda name: out.append("/" + name))
    return sorted(set(out))


def random_values(rng, dtype, shape):
    """An array of `dtype` and `shape` with values drawn from rng."""
    count = int(np.prod(shape)) if shape else 1
    kind = dtype.kind
    if dtype.names:
        out = np.zeros(shape, dtype=dtype)
        for name in dtype.names:
            sub = dtype.fields[name][0]
            if sub.kind in "iuf" and not sub.shape:
                out[name] = random_values(rng, sub, shape)
        return out
    if h5py.check_string_dtype(dtype) is not None and kind == "O":
        vals = ["p%d %s" % (rng.randrange(10**6), "\u00e9" * rng.randrange(3)) for _ in range(count)]
        return np.array(vals, dtype=object).reshape(shape)
    if kind == "S":
        return np.array([b"s%d" % rng.randrange(10**4) for _ in range(count)], dtype=dtype).reshape(shape)
    if kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -(10**6)), min(int(info.max), 10**6)
        return np.array([rng.randint(lo, hi) for _ in range(count)], dtype=dtype).reshape(shape)
    if kind == "f":
        return np.array([round(rng.uniform(-1000, 1000), 2) for _ in range(count)], dtype=dtype).reshape(shape)
    return np.zeros(shape, dtype=dtype)


def new_dataset(rng, group, name):
    choice = rng.randrange(4)
    if choice == 0:
        dtype = h5py.string_dtype()
    elif choice == 1:
        dtype = np.dtype([("id", "<u4"), ("score", "<f8"), ("tag", "S6")])
    else:
        dtype = np.dtype(rng.choice(NUMERIC))
    ndim = rng.choice([0, 1, 1, 2])
    shape = tuple(rng.randrange(0 if ndim == 1 else 1, 40) for _ in range(ndim))
    kw = {}
    if ndim and rng.random() < 0.6:
        # Inner chunk dimensions within the (fixed) inner dimensions, as libhdf5 requires.
        kw["chunks"] = tuple(rng.randrange(1, 17) if i == 0 else min(rng.randrange(1, 17), max(1, d))
                             for i, d in enumerate(shape))
        kw["maxshape"] = (None,) + shape[1:]
        # Lossless ZFP (H5Z-ZFP) takes little-endian 32-bit ints and floats in chunks of more than one value,
        # with no byte shuffle before it.
        zfp_fits = dtype.str in ("<i4", "<f4") and "hdf5plugin" in sys.modules and max(kw["chunks"]) > 1
        # FCIDECOMP (JPEG-LS) takes little-endian 16-bit integers in images of at least 2 x 2 (3-D: 1 to 4
        # components first).
        c = kw["chunks"]
        jpegls_fits = dtype.str in ("<i2", "<u2") and "hdf5plugin" in sys.modules and (
            (len(c) == 2 and min(c) >= 2) or (len(c) == 3 and 1 <= c[0] <= 4 and min(c[1:]) >= 2))
        if zfp_fits and rng.random() < 0.3:
            kw.update(dict(hdf5plugin.Zfp(reversible=True)))
        elif jpegls_fits and rng.random() < 0.4:
            kw.update(dict(hdf5plugin.FciDecomp()))
        elif rng.random() < 0.5:
            # hdf5plugin's Blosc and Blosc2 die of a division by zero creating variable-length string datasets.
            choices = COMPRESSIONS if dtype.kind != "O" else [c for c in COMPRESSIONS
                                                              if c.get("compression") not in (32001, 32026)]
            kw.update(rng.choice(choices))
            kw["shuffle"] = rng.random() < 0.5
        # libhdf5 refuses fletcher32 on variable-length types.
        if rng.random() < 0.3 and dtype.kind != "O":
            kw["fletcher32"] = True
    data = random_values(rng, dtype, shape)
    group.create_dataset(name, data=data, dtype=dtype, **kw)
    return {32013: " (zfp)", 32018: " (jpeg-ls)"}.get(kw.get("compression"), "")


def create(rng, path, kwargs):
    """A new file of random groups, datasets and attributes."""
    # Some files start with a user block (the superblock and every address's base move past it).
    block = rng.choice([0, 0, 512, 2048])
    with h5py.File(path, "w", userblock_size=block, **kwargs) as f:
        groups = ["/"]
        for i in range(rng.randint(2, 7)):
            name = rng.choice(groups).rstrip("/") + "/g%d" % i
            f.create_group(name, track_order=rng.random() < 0.2)
            groups.append(name)
        objects = list(groups)
        for g in groups:
            for i in range(rng.choice([0, 1, 3, 5, 12, 20])):
                name = "d%d" % i
                new_dataset(rng, f[g], name)
                objects.append(g.rstrip("/") + "/" + name)
        for o in objects:
            for i in range(rng.choice([0, 0, 1, 3, 12])):
                f[o].attrs["a%d" % i] = random_values(rng, np.dtype(rng.choice(NUMERIC)), (rng.randint(1, 4),))


def main():
    path, seed, turn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed * 1000 + turn)
    libver = rng.choice([None, ("earliest", "v110"), ("v110", "latest"), "latest"])
    ops, changed, removed = [], set(), set()
    serial = [0]

    def fresh(prefix):
        serial[0] += 1
        return "p%d_%s%d" % (turn, prefix, serial[0])

    kwargs = {} if libver is None else {"libver": libver}
    if turn == 0:
        create(rng, path, kwargs)
        sys.stdout.write(json.dumps({"ops": ["create %s" % (libver,)], "changed": [], "removed": [], "dump": dump(path)}))
        return
    with h5py.File(path, "r+", **kwargs) as f:
        for _ in range(rng.randint(3, 9)):
            paths = objects(f)
            datasets = [p for p in paths if isinstance(f[p], h5py.Dataset)]
            groups = [p for p in paths if isinstance(f[p], h5py.Group)]
            op = rng.choice(["attr", "attr_burst", "del_attr", "dataset", "grow", "grow", "overwrite", "delete",
                             "group", "move"])
            if op in ("attr", "attr_burst"):
                target = rng.choice(paths)
                for _ in range(1 if op == "attr" else rng.randint(8, 24)):
                    name = fresh("a")
                    kind = rng.randrange(4)
                    if kind == 0:
                        f[target].attrs[name] = np.int32(rng.randint(-1000, 1000))
                    elif kind == 1:
                        f[target].attrs[name] = random_values(rng, np.dtype("<f8"), (rng.randint(1, 6),))
                    elif kind == 2:
                        f[target].attrs[name] = "text %d \u2713" % rng.randrange(1000)
                    else:
                        f[target].attrs.create(name, random_values(rng, h5py.string_dtype(), (3,)),
                                               dtype=h5py.string_dtype())
                ops.append("%s %s" % (op, target))
                changed.add(target)
            elif op == "del_attr":
                target = rng.choice(paths)
                names = list(f[target].attrs.keys())
                if names:
                    name = rng.choice(names)
                    del f[target].attrs[name]
                    ops.append("del_attr %s@%s" % (target, name))
                    changed.add(target)
            elif op == "dataset":
                g = rng.choice(groups)
                name = fresh("d")
                tag = new_dataset(rng, f[g], name)
                full = (g.rstrip("/") + "/" + name)
                ops.append("dataset %s%s" % (full, tag))
                changed.update([g, full])
            elif op == "grow":
                growable = [p for p in datasets if f[p].maxshape and f[p].maxshape[0] is None]
                if growable:
                    target = rng.choice(growable)
                    d = f[target]
                    rows = rng.randint(1, 30)
                    old = d.shape[0]
                    d.resize(old + rows, axis=0)
                    d[old:] = random_values(rng, d.dtype, (rows,) + d.shape[1:])
                    ops.append("grow %s by %d" % (target, rows))
                    changed.add(target)
            elif op == "overwrite":
                writable = [p for p in datasets if f[p].shape and f[p].size > 0 and f[p].dtype.kind in "iuf"]
                if writable:
                    target = rng.choice(writable)
                    d = f[target]
                    a = rng.randrange(d.shape[0])
                    b = rng.randint(a + 1, d.shape[0])
                    d[a:b] = random_values(rng, d.dtype, (b - a,) + d.shape[1:])
                    ops.append("overwrite %s[%d:%d]" % (target, a, b))
                    changed.add(target)
            elif op == "delete":
                victims = [p for p in paths if p != "/"]
                if victims:
                    target = rng.choice(victims)
                    del f[target]
                    ops.append("delete %s" % target)
                    removed.add(target)
                    changed.add(parent(target))
            elif op == "group":
                g = rng.choice(groups)
                name = fresh("g")
                full = g.rstrip("/") + "/" + name
                sub = f[g].create_group(name, track_order=rng.random() < 0.3)
                for _ in range(rng.randint(0, 24)):
                    if rng.random() < 0.2:
                        sub[fresh("s")] = h5py.SoftLink(rng.choice(paths))
                    else:
                        sub.create_dataset(fresh("x"), data=np.arange(rng.randint(1, 5), dtype="<i4"))
                ops.append("group %s" % full)
                changed.update([g, full])
            elif op == "move":
                if datasets:
                    src = rng.choice(datasets)
                    g = rng.choice([p for p in groups if not p.startswith(src + "/")])
                    dst = g.rstrip("/") + "/" + fresh("m")
                    f.move(src, dst)
                    ops.append("move %s -> %s" % (src, dst))
                    removed.add(src)
                    changed.update([parent(src), g, dst])
    sys.stdout.write(json.dumps({"ops": ops, "changed": sorted(changed), "removed": sorted(removed), "dump": dump(path)}))


if __name__ == "__main__":
    main()
