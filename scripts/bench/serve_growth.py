#!/usr/bin/env python3
"""Save throughput through `clawhdf5 serve` as a store grows: LoCoMo turns (cycled, each copy marked so that none
is a duplicate) are saved in JSON-RPC batches of 64 into a fresh store, and every STEP saves the script prints the
saves per second of that step with the sizes of the log and of the HDF5 file; then, with --reopen R, the server is
started R times on the full store and timed from its start to the answer of its first search (opening the store
and the cognitive layer's rebuild included). Given several binaries (--bin, once each), the runs take turns, ROUNDS
times, and a table of median saves/s per step and binary (and median first-answer times) closes the report.

Usage: python3 scripts/bench/serve_growth.py --bin target/release/clawhdf5 [--bin OTHER] [--n 102400]
       [--step 12288] [--rounds 1] [--reopen 0] [--embed] [--locomo ../shared/datasets/locomo] [--work DIR]
Without --embed the servers run with --no-embed (keyword-only saves: the store's and the cognitive layer's own
costs, not the model's).
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def turns(locomo):
    out = []
    for f in sorted(glob.glob(os.path.join(locomo, "*.json"))):
        with open(f) as fh:
            d = json.load(fh)
        conv = d.get("conversation", d)
        for k, v in conv.items():
            if k.startswith("session_") and isinstance(v, list):
                for t in v:
                    if isinstance(t, dict) and t.get("text"):
                        out.append(f"{t.get('speaker', '')}: {t['text']}")
    if not out:
        sys.exit(f"serve_growth: no LoCoMo turns under {locomo}")
    return out


def size(path):
    return os.path.getsize(path) if os.path.exists(path) else 0


def first_answer_ms(cmd):
    """Milliseconds from starting `cmd` (a server) to the answer of its first search."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    req = {"jsonrpc": "2.0", "id": 1, "method": "search", "params": {"query": "adoption agency"}}
    p.stdin.write((json.dumps(req) + "\n").encode())
    p.stdin.flush()
    answer = json.loads(p.stdout.readline())
    took = (time.perf_counter() - start) * 1000
    p.stdin.close()
    p.wait()
    if "error" in answer:
        sys.exit(f"serve_growth: the search after reopening failed: {answer['error']}")
    return took


def run(binary, texts, n, step, embed, work, reopen):
    store_dir = os.path.join(work, "stores")
    shutil.rmtree(store_dir, ignore_errors=True)
    os.makedirs(store_dir)
    os.makedirs(os.path.join(work, "workspace"), exist_ok=True)
    cmd = [binary, "serve", "--dir", store_dir, "--workspace", os.path.join(work, "workspace")]
    if not embed:
        cmd.append("--no-embed")
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    rates = []
    batch_size = 64
    last = time.perf_counter()
    done = 0
    for start in range(0, n, batch_size):
        ids = range(start, min(n, start + batch_size))
        batch = [
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "save",
                "params": {"text": f"{texts[i % len(texts)]} (#{i // len(texts)})"},
            }
            for i in ids
        ]
        p.stdin.write((json.dumps(batch) + "\n").encode())
        p.stdin.flush()
        answer = json.loads(p.stdout.readline())
        errors = [a for a in answer if "error" in a]
        if errors:
            p.kill()
            sys.exit(f"serve_growth: {binary} refused a save: {errors[0]}")
        done += len(ids)
        if done % step == 0 or done == n:
            now = time.perf_counter()
            steps = done % step or step
            rates.append(steps / (now - last))
            last = now
            main = os.path.join(store_dir, "main.h5")
            print(
                f"  {binary}: {done:7d} saves  {rates[-1]:7.0f} saves/s  log {size(main + '.wal') / 1e6:6.1f} MB"
                f"  file {size(main) / 1e6:6.1f} MB",
                flush=True,
            )
    p.stdin.close()
    p.wait()
    opens = [first_answer_ms(cmd) for _ in range(reopen)]
    if opens:
        print(f"  {binary}: first answer after reopening: " + ", ".join(f"{t:.0f}" for t in opens) + " ms")
    return rates, opens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="clawhdf5 binary (repeat to compare)")
    ap.add_argument("--n", type=int, default=102400)
    ap.add_argument("--step", type=int, default=12288)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--reopen", type=int, default=0)
    ap.add_argument("--embed", action="store_true")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--locomo", default=os.path.join(here, "..", "..", "..", "shared", "datasets", "locomo"))
    ap.add_argument("--work", default=None, help="folder for the stores (default: a temporary one, removed)")
    a = ap.parse_args()
    if a.step % 64:
        sys.exit("serve_growth: --step must be a multiple of 64 (the batch size)")
    texts = turns(a.locomo)
    work = a.work or tempfile.mkdtemp(prefix="serve_growth")
    results = {b: [] for b in a.bin}
    try:
        for r in range(a.rounds):
            for b in a.bin:
                print(f"round {r + 1}, {b}", flush=True)
                results[b].append(run(b, texts, a.n, a.step, a.embed, work, a.reopen))
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)
    steps = len(next(iter(results.values()))[0][0])
    print("\n| saves | " + " | ".join(f"`{b}` saves/s (median of {a.rounds})" for b in a.bin) + " |")
    print("|---:|" + "---:|" * len(a.bin))
    for s in range(steps):
        upto = min(a.n, (s + 1) * a.step)
        cells = [f"{statistics.median(rates[s] for rates, _ in results[b]):,.0f}" for b in a.bin]
        print(f"| {upto:,} | " + " | ".join(cells) + " |")
    if a.reopen:
        cells = [f"{statistics.median(t for _, opens in results[b] for t in opens):,.0f} ms" for b in a.bin]
        print("| first answer after reopening (median) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
