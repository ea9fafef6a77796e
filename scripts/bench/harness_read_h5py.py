#!/usr/bin/env python3
"""Partial reads with h5py, for clawhdf5-eval read-harness (run by it, in the same run, on the same file).

Usage: harness_read_h5py.py FILE SPEC_JSON
SPEC_JSON: {"datasets": [path, ...], "selections": [{"name": str, "start": [r, c], "count": [r, c]}, ...],
            "min_seconds": float, "min_reps": int, "max_reps": int}
Prints one JSON object: {"h5py": version, "hdf5": version, "ms": {dataset: {selection: median_ms}}}.
Each timed read opens the dataset anew (so h5py's per-dataset chunk cache starts cold, as in the Rust run).
"""
import json
import statistics
import sys
import time

import h5py


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: harness_read_h5py.py FILE SPEC_JSON")
    path, spec = sys.argv[1], json.loads(sys.argv[2])
    out = {"h5py": h5py.__version__, "hdf5": h5py.version.hdf5_version, "ms": {}}
    with h5py.File(path, "r") as f:
        for ds_path in spec["datasets"]:
            per = {}
            for sel in spec["selections"]:
                (r0, c0), (nr, nc) = sel["start"], sel["count"]
                times = []
                began = time.perf_counter()
                while True:
                    t = time.perf_counter()
                    data = f[ds_path][r0 : r0 + nr, c0 : c0 + nc]
                    times.append(time.perf_counter() - t)
                    if data.shape != (nr, nc):
                        sys.exit(f"{ds_path} {sel['name']}: got shape {data.shape}")
                    n = len(times)
                    spent = time.perf_counter() - began
                    if n >= spec["max_reps"] or (n >= spec["min_reps"] and spent >= spec["min_seconds"]):
                        break
                per[sel["name"]] = statistics.median(times) * 1e3
            out["ms"][ds_path] = per
    print(json.dumps(out))


if __name__ == "__main__":
    main()
