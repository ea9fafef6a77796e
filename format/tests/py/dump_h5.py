"""Dump every object of an HDF5 file to JSON with h5py (used by the format crate's tests).

usage: dump_h5.py FILE       -> prints {"/path": {...}} on stdout
       dump_h5.py FILE FILE...  -> prints {"FILE": {"/path": {...}}, ...} (one interpreter start)
"""
import json
import sys

import h5py
import numpy as np
from relaxed import open_relaxed

try:
    import hdf5plugin  # noqa: F401  registers the plugin filters (zstd, lz4, bitshuffle, blosc, ...) with h5py
except ImportError:
    pass


def conv(v):
    if isinstance(v, h5py.Empty):
        return None
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, np.void) and not v.dtype.names:
        return list(v.tobytes())
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        if v.dtype.names:
            return [conv(x) for x in v.tolist()] if v.ndim else conv(v[()])
        if v.dtype.kind == "O":
            return [conv(x) for x in v.tolist()]
        if v.dtype.kind == "V":
            return [conv(x) for x in v]
        if v.dtype.kind == "b":
            return v.astype("i1").tolist()
        # Plain numbers need no per-element conversion (only NaN and infinities are spelled out), and walking
        # millions of them in Python took most of a large dump's time.
        # (tolist() leaves long doubles as numpy scalars, so those still go through conv.)
        if v.dtype.kind in "iu" or (v.dtype.kind == "f" and v.dtype.itemsize <= 8 and np.isfinite(v).all()):
            return v.tolist()
        return conv(v.tolist())
    if isinstance(v, np.void) and v.dtype.names:
        return {n: conv(v[n]) for n in v.dtype.names}
    if isinstance(v, tuple):
        return [conv(x) for x in v]
    if isinstance(v, list):
        return [conv(x) for x in v]
    if isinstance(v, np.generic):
        return conv(v.item())
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return str(v)
    if isinstance(v, complex):
        return [conv(v.real), conv(v.imag)]
    if isinstance(v, h5py.Reference):
        return "ref"
    return v


def structured(v, dt):
    if dt.names:
        if v.ndim == 0:
            return {n: structured(v[n], dt.fields[n][0]) for n in dt.names}
        return [structured(x, dt) for x in v]
    return conv(v)


def value(obj):
    v = obj[()]
    if isinstance(v, np.ndarray) and v.dtype.names:
        return structured(v, v.dtype)
    if isinstance(v, np.void) and v.dtype.names:
        return {n: conv(v[n]) for n in v.dtype.names}
    return conv(v)


def attrs(obj):
    out = {}
    keys = list(obj.attrs.keys())
    # libhdf5 counts attributes apart from listing them (H5Oget_info); a file that makes the two disagree
    # misleads libhdf5 when it edits the object, so the dump shows it.
    if len(obj.attrs) != len(keys):
        out["<libhdf5 counts %d attributes but lists %d>" % (len(obj.attrs), len(keys))] = None
    for k in keys:
        try:
            v = obj.attrs[k]
            out[k] = structured(v, v.dtype) if isinstance(v, np.ndarray) and v.dtype.names else conv(v)
        except Exception as e:  # noqa: BLE001
            out[k] = {"error": str(e)}
    return out


def links(group):
    keys = sorted(group.keys())
    # The same for links (H5Gget_info).
    if len(group) != len(keys):
        keys.append("<libhdf5 counts %d links but lists %d>" % (len(group), len(keys)))
    return keys


def dump(path):
    out = {}
    with open_relaxed(path) as f:
        # Objects reachable through several hard links are visited once, by their first name.
        out["/"] = {"kind": "group", "attrs": attrs(f), "links": links(f)}

        def visit(name, obj):
            p = "/" + name
            if isinstance(obj, h5py.Dataset):
                try:
                    val = value(obj)
                except Exception as e:  # noqa: BLE001
                    val = {"h5py_error": str(e)}
                try:
                    str(obj.dtype)
                except Exception as e:  # noqa: BLE001
                    out[p] = {"kind": "dataset", "value": {"h5py_error": str(e)}, "attrs": attrs(obj)}
                    return
                out[p] = {
                    "kind": "dataset",
                    "dtype": str(obj.dtype),
                    "shape": None if obj.shape is None else list(obj.shape),
                    "maxshape": [None if m is None else m for m in (obj.maxshape or [])],
                    "chunks": list(obj.chunks) if obj.chunks else None,
                    "compression": obj.compression,
                    "shuffle": obj.shuffle,
                    "fletcher32": obj.fletcher32,
                    "value": val,
                    "attrs": attrs(obj),
                }
            elif isinstance(obj, h5py.Group):
                out[p] = {"kind": "group", "attrs": attrs(obj), "links": links(obj)}

        f.visititems(visit)
    return out


def main():
    files = sys.argv[1:]
    out = dump(files[0]) if len(files) == 1 else {p: dump(p) for p in files}
    # One string written at once: json.dump streams millions of small pieces, which took seconds on large files.
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
