#!/usr/bin/env python3
"""Runs hnswlib (the peer) on an ann-bench data directory and prints lines in ann-bench's format.

Usage: ann_hnswlib.py --dir DIR [--m 16] [--efc 200] [--ef 10,16,...] [--threads N]

The directory comes from `ann-bench gen` / `ann-bench prepare`: base.f32, queries.f32, dim.txt and
gt.u32 (exact cosine top-10). hnswlib is called through its batch API (knn_query on the whole query
matrix) so Python's per-call overhead is not counted against it. Single-thread figures are given as
wall-clock and as this thread's CPU time (hnswlib runs num_threads=1 work on the calling thread), which
is robust when other processes share the CPU.
"""
import argparse
import os
import time

import hnswlib
import numpy as np

K = 10
MIN_TIMED_CPU_S = 0.5


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def recall(gt, labels):
    hit = 0
    for t, g in zip(gt, labels):
        hit += len(set(t.tolist()) & set(g.tolist()))
    return hit / gt.size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--ef", default="10,16,24,32,48,64,96,128,192,256")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=1, help="time each ef this many times, report the median")
    a = ap.parse_args()
    dim = int(open(os.path.join(a.dir, "dim.txt")).read().strip())
    base = np.fromfile(os.path.join(a.dir, "base.f32"), dtype="<f4").reshape(-1, dim)
    queries = np.fromfile(os.path.join(a.dir, "queries.f32"), dtype="<f4").reshape(-1, dim)
    gt = np.fromfile(os.path.join(a.dir, "gt.u32"), dtype="<u4").reshape(-1, K)
    n = base.shape[0]
    try:
        from importlib.metadata import version

        ver = version("hnswlib")
    except Exception:  # noqa: BLE001 - the version is informational only
        ver = "?"
    print(f"# hnswlib {ver} numpy {np.__version__}\tn={n}\tdim={dim}\tqueries={queries.shape[0]}")

    builds = {}
    for threads in sorted({1, a.threads}):
        rss0 = rss_bytes()
        idx = hnswlib.Index(space="ip", dim=dim)  # unit vectors: ip ranks exactly as cosine
        idx.init_index(max_elements=n, ef_construction=a.efc, M=a.m, random_seed=a.seed)
        w0, c0 = time.perf_counter(), time.thread_time()
        idx.add_items(base, np.arange(n), num_threads=threads)
        wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
        rss = rss_bytes() - rss0
        builds[threads] = idx
        extra = f"\tcpu_s={cpu:.3f}" if threads == 1 else ""
        print(f"build\thnswlib\tthreads={threads}\t{wall:.3f}\ts{extra}\trss_delta={rss}\tindex_over_raw={rss / base.nbytes:.3f}")
    idx = builds[1]
    for ef in [int(x) for x in a.ef.split(",")]:
        idx.set_ef(max(ef, K))
        idx.knn_query(queries[:20], k=K, num_threads=1)  # warm-up
        # Repeat whole passes until at least MIN_TIMED_CPU_S of CPU time (same rule as ann-bench);
        # with --repeat, time that R times and keep the medians (as ann-bench --repeat does).
        walls, cpus = [], []
        for _ in range(max(1, a.repeat)):
            w0, c0 = time.perf_counter(), time.thread_time()
            passes = 0
            while passes == 0 or time.thread_time() - c0 < MIN_TIMED_CPU_S:
                labels, _ = idx.knn_query(queries, k=K, num_threads=1)
                passes += 1
            walls.append((time.perf_counter() - w0) / passes)
            cpus.append((time.thread_time() - c0) / passes)
        wall, cpu = sorted(walls)[len(walls) // 2], sorted(cpus)[len(cpus) // 2]
        nq = queries.shape[0]
        w1 = time.perf_counter()
        passes_all = 0
        while passes_all == 0 or time.perf_counter() - w1 < MIN_TIMED_CPU_S:
            idx.knn_query(queries, k=K, num_threads=a.threads)
            passes_all += 1
        wall_all = (time.perf_counter() - w1) / passes_all
        print(
            f"search\thnswlib\tef={ef}\trecall={recall(gt, labels):.4f}\tqps_1t={nq / wall:.0f}"
            f"\tqps_all={nq / wall_all:.0f}\tqps_1t_cpu={nq / cpu:.0f}\treps={max(1, a.repeat)}"
        )


if __name__ == "__main__":
    main()
