"""Side-by-side benchmark of filtered reads: clawhdf5-format against libhdf5 through h5py (with hdf5plugin's
filters), same machine, same run, same file.

    python3 format/bench/filters_h5py.py [--mb 32] [--reps 7] [--dir DIR]

Writes one file with h5py: the same values stored through each filter the reader decodes (chunks of 1 MiB),
then reads every dataset whole, `--reps` times each, with h5py and with `cargo run --release --example
read_filters` (both open the dataset anew each time and read it into a new array), the two sides taking turns
for `--rounds` rounds, and prints a Markdown table of each side's median over the rounds (of its per-round
medians) with the ratio h5py / ours. Needs h5py, numpy and hdf5plugin (scripts/setup/format.sh).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import hdf5plugin
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "py"))
from relaxed import open_relaxed, relaxed_fapl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(path, mb):
    """Every dataset holds `mb` MiB once decoded, in 1 MiB chunks."""
    n8, n4 = mb * 2**17, mb * 2**18
    rng = np.random.default_rng(11)
    t = np.arange(n8)
    smooth = np.sin(t * 1e-4) * np.cos(t * 3e-6) + rng.normal(0, 1e-3, n8)
    counts = (rng.poisson(40, n4) + (np.arange(n4) // 4096) % 500).astype("i4")
    c8, c4 = (2**17,), (2**18,)
    # A 16-bit image (a smooth scene plus sensor noise), 1024 columns, chunks of 512 lines (1 MiB).
    rows = mb * 2**9
    y, x = np.mgrid[0:rows, 0:1024]
    image = (np.sin(y / 60.0) * np.cos(x / 45.0) * 20000 + 30000 + rng.integers(0, 24, (rows, 1024))).astype("u2")
    b, b2 = hdf5plugin.Blosc, hdf5plugin.Blosc2
    sets = [
        ("f8 gzip-6", smooth, dict(compression="gzip", compression_opts=6)),
        ("f8 shuffle + gzip-6", smooth, dict(compression="gzip", compression_opts=6, shuffle=True)),
        ("f8 lzf", smooth, dict(compression="lzf")),
        ("f8 shuffle + lzf", smooth, dict(compression="lzf", shuffle=True)),
        ("f8 szip nn", smooth, dict(compression="szip", compression_opts=("nn", 32))),
        ("f8 scale-offset D=4", smooth, dict(scaleoffset=4)),
        ("f8 zstd", smooth, dict(**hdf5plugin.Zstd())),
        ("f8 lz4", smooth, dict(**hdf5plugin.LZ4())),
        ("f8 bitshuffle + lz4", smooth, dict(**hdf5plugin.Bitshuffle(cname="lz4"))),
        ("f8 blosc lz4 shuffle", smooth, dict(**b(cname="lz4", shuffle=b.SHUFFLE))),
        ("f8 blosc zstd bitshuffle", smooth, dict(**b(cname="zstd", shuffle=b.BITSHUFFLE))),
        ("f8 blosc2 lz4 shuffle", smooth, dict(**b2(cname="lz4", filters=b2.SHUFFLE))),
        ("f8 blosc2 zstd shuffle", smooth, dict(**b2(cname="zstd", filters=b2.SHUFFLE))),
        ("i4 gzip-6", counts, dict(compression="gzip", compression_opts=6)),
        ("i4 szip nn", counts, dict(compression="szip", compression_opts=("nn", 16))),
        ("i4 scale-offset", counts, dict(scaleoffset=0)),
        ("f8 zfp reversible", smooth, dict(**hdf5plugin.Zfp(reversible=True))),
        ("f8 zfp accuracy 1e-6", smooth, dict(**hdf5plugin.Zfp(accuracy=1e-6))),
        ("u2 image FCIDECOMP (JPEG-LS)", image, dict(**hdf5plugin.FciDecomp())),
    ]
    names = []
    with h5py.File(path, "w") as f:
        for name, data, kw in sets:
            chunks = (512, 1024) if data.ndim == 2 else c8 if data.dtype.itemsize == 8 else c4
            f.create_dataset(name.replace("/", "_"), data=data, chunks=chunks, **kw)
            names.append(name)
    # N-bit: 20-bit integers in 4 bytes (HDF5 2.0 wants its unused-bits check relaxed for such a type).
    fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDWR, fapl=relaxed_fapl())
    tid = h5py.h5t.STD_I32LE.copy()
    tid.set_precision(20)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(c4)
    dcpl.set_filter(h5py.h5z.FILTER_NBIT)
    d = h5py.h5d.create(fid, b"i4 nbit 20 bits", tid, h5py.h5s.create_simple((n4,)), dcpl=dcpl)
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, counts)
    d.close()
    fid.close()
    names.append("i4 nbit 20 bits")
    return names


def time_h5py(path, names, reps):
    out = {}
    with open_relaxed(path) as f:
        for name in names:
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                a = f[name][...]
                times.append(time.perf_counter() - t)
            assert a.size > 0
            out[name] = statistics.median(times) * 1e3
    return out


def time_ours(path, names, reps):
    cmd = ["cargo", "run", "-q", "--release", "-p", "clawhdf5-format", "--example", "read_filters", "--",
           path, str(reps)] + names
    res = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(res.stdout)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=32, help="decoded MiB per dataset")
    ap.add_argument("--reps", type=int, default=7, help="timed reads per dataset, side and round (median)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, the two sides taking turns (median)")
    ap.add_argument("--dir", help="folder for the file (a temporary one by default)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        path = os.path.join(d, "filters.h5")
        names = write(path, a.mb)
        runs_ours, runs_theirs = [], []
        for _ in range(a.rounds):
            runs_ours.append(time_ours(path, names, a.reps))
            runs_theirs.append(time_h5py(path, names, a.reps))
        ours = {n: statistics.median(r[n] for r in runs_ours) for n in names}
        theirs = {n: statistics.median(r[n] for r in runs_theirs) for n in names}
        with h5py.File(path, "r") as f:
            stored = {n: f[n].id.get_storage_size() for n in names if n != "i4 nbit 20 bits"}
        size = os.path.getsize(path)
    print(f"date {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; nproc {os.cpu_count()}; cpu {cpu_model()}")
    print(f"h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}; "
          f"{a.mb} MiB decoded per dataset, 1 MiB chunks; median of {a.rounds} rounds (sides taking turns) of the "
          f"median of {a.reps} whole reads; file {size / 2**20:.1f} MiB")
    print()
    print("| dataset | stored MiB | ours (ms) | h5py (ms) | h5py / ours |")
    print("|---|---:|---:|---:|---:|")
    for n in names:
        st = stored.get(n)
        st = f"{st / 2**20:.1f}" if st is not None else "—"
        print(f"| {n} | {st} | {ours[n]:.1f} | {theirs[n]:.1f} | {theirs[n] / ours[n]:.2f}× |")


if __name__ == "__main__":
    main()
