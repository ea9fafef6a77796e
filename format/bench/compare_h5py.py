"""Side-by-side benchmark: clawhdf5-format vs libhdf5 (through h5py), same machine, same run.

    python3 format/bench/compare_h5py.py [--out results.md]

Writes the read-test files with h5py, builds and runs `cargo run --release --example bench`
on them, times the same operations with h5py, and prints a Markdown table (best of N runs,
seconds, and libhdf5/ours). h5py adds Python call overhead to libhdf5's numbers, which matters
for the many-small-operations rows; the large-read rows are dominated by libhdf5 itself.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def best(reps, fn):
    b = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t)
    return b


def make_inputs(d):
    with h5py.File(os.path.join(d, "attr.h5"), "w") as f:
        f.attrs["a"] = np.arange(16, dtype="f8")
    with h5py.File(os.path.join(d, "small.h5"), "w") as f:
        f["k1"] = np.arange(1000, dtype="f4")
        f["k100"] = np.arange(100_000, dtype="f4")
    big = np.random.default_rng(1).random((4096, 2048))
    with h5py.File(os.path.join(d, "big.h5"), "w") as f:
        f["contiguous"] = big
        f.create_dataset("chunked", data=big, chunks=(256, 256))
        f.create_dataset("deflate", data=big, chunks=(256, 256), compression="gzip", compression_opts=4)
    with h5py.File(os.path.join(d, "many.h5"), "w") as f:
        for i in range(10_000):
            f["d%d" % i] = np.full(4, i, dtype="i4")
    with h5py.File(os.path.join(d, "vlen.h5"), "w") as f:
        f["s"] = np.array(["memory number %d" % i for i in range(100_000)], dtype=h5py.string_dtype())


def h5py_side(d):
    r = {}
    p = lambda n: os.path.join(d, n)  # noqa: E731

    def attr():
        with h5py.File(p("attr.h5"), "r") as f:
            f.attrs["a"]

    r["open + read one attribute"] = best(200, attr)
    with h5py.File(p("small.h5"), "r") as f:
        r["read 1K f32 contiguous"] = best(200, lambda: f["k1"][()])
        r["read 100K f32 contiguous"] = best(50, lambda: f["k100"][()])
    with h5py.File(p("big.h5"), "r") as f:
        for name, ds in [("contiguous", "contiguous"), ("chunked", "chunked"), ("chunked+deflate", "deflate")]:
            key = lambda w: "4096x2048 f64 %s: %s" % (name, w)  # noqa: E731
            reps = 2 if name == "chunked+deflate" else 3
            r[key("full read")] = best(reps, lambda: f[ds][()])
            r[key("64x64 window")] = best(20, lambda: f[ds][1000:1064, 1000:1064])
            r[key("512x512 window")] = best(5, lambda: f[ds][1000:1512, 1000:1512])
            r[key("one row")] = best(20, lambda: f[ds][2000:2001, :])
            r[key("one column")] = best(3, lambda: f[ds][:, 1000:1001])
    out = p("h5py-out.h5")
    img = np.sin(np.arange(512 * 512) % 977).astype("f4").reshape(512, 512)

    def w_img():
        with h5py.File(out, "w") as f:
            f.create_dataset("img", data=img, chunks=(64, 64), compression="gzip", compression_opts=6)

    r["write 512x512 f32 chunked deflate-6"] = best(5, w_img)

    def w_attrs():
        with h5py.File(out, "w") as f:
            for i in range(128):
                f.attrs["attr%d" % i] = float(i)

    r["write 128 attributes"] = best(10, w_attrs)

    def w_groups():
        with h5py.File(out, "w") as f:
            for i in range(64):
                f.create_group("g%d" % i)

    r["create 64 groups"] = best(10, w_groups)

    def w_many():
        with h5py.File(out, "w") as f:
            for i in range(10_000):
                f["d%d" % i] = np.full(4, i, dtype="i4")

    r["write 10K small datasets"] = best(3, w_many)

    def r_many():
        with h5py.File(p("many.h5"), "r") as f:
            for i in range(10_000):
                f["d%d" % i][()]

    r["open + read 10K small datasets"] = best(3, r_many)
    strings = np.array(["memory number %d" % i for i in range(100_000)], dtype=h5py.string_dtype())

    def w_vlen():
        with h5py.File(out, "w") as f:
            f["s"] = strings

    r["write 100K vlen strings"] = best(5, w_vlen)

    def r_vlen():
        with h5py.File(p("vlen.h5"), "r") as f:
            f["s"][()]

    r["read 100K vlen strings"] = best(5, r_vlen)
    return r


def main():
    with tempfile.TemporaryDirectory() as d:
        make_inputs(d)
        ours = subprocess.run(
            ["cargo", "run", "-q", "--release", "-p", "clawhdf5-format", "--example", "bench", "--", d],
            cwd=ROOT, check=True, capture_output=True, text=True,
        )
        ours = json.loads(ours.stdout.strip().splitlines()[-1])
        theirs = h5py_side(d)
    lines = [
        "| operation | clawhdf5 (s) | h5py/libhdf5 %s (s) | libhdf5 ÷ ours |" % h5py.version.hdf5_version,
        "|---|---:|---:|---:|",
    ]
    for k in ours:
        t = theirs.get(k)
        ratio = "%.2f×" % (t / ours[k]) if t and ours[k] > 0 else "—"
        lines.append("| %s | %.6f | %s | %s |" % (k, ours[k], "%.6f" % t if t else "—", ratio))
    text = "\n".join(lines)
    print(text)
    if "--out" in sys.argv:
        with open(sys.argv[sys.argv.index("--out") + 1], "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
