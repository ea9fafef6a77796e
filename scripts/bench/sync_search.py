#!/usr/bin/env python3
"""Searches while `clawhdf5 serve` indexes a workspace: the LoCoMo conversations are written as an OpenClaw
workspace of daily notes (`memory/YYYY-MM-DD.md`, one session a day, one bullet a turn), a fresh server (with
its embedding model, unless --no-embed) is asked to `sync` it, and while the sync runs a search is sent every
--every seconds. The script prints how long the sync took and, for the searches sent during it, their latency
(median, maximum) and how many failed (a search past the server's 10 s request deadline fails). Given several
binaries (--bin, once each), the runs take turns, ROUNDS times, and a table of medians closes the report.

Usage: python3 scripts/bench/sync_search.py --bin target/release/clawhdf5 [--bin OTHER] [--rounds 1]
       [--every 0.5] [--no-embed] [--locomo ../shared/datasets/locomo] [--work DIR]
"""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

QUERY = "what did Caroline say about the adoption agency"


def write_workspace(locomo, root):
    """One daily note per LoCoMo session; returns (files, bytes)."""
    os.makedirs(os.path.join(root, "memory"), exist_ok=True)
    day = datetime.date(2026, 1, 1)
    files = size = 0
    for f in sorted(glob.glob(os.path.join(locomo, "*.json"))):
        with open(f) as fh:
            d = json.load(fh)
        conv = d.get("conversation", d)
        sessions = sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
        )
        for k in sessions:
            lines = [f"# {conv.get(k + '_date_time', '')}", ""]
            lines += [f"- **{t.get('speaker', '')}**: {t['text']}" for t in conv[k] if t.get("text")]
            path = os.path.join(root, "memory", f"{day.isoformat()}.md")
            with open(path, "w") as out:
                out.write("\n".join(lines) + "\n")
            files += 1
            size += os.path.getsize(path)
            day += datetime.timedelta(days=1)
    if files == 0:
        sys.exit(f"sync_search: no LoCoMo sessions under {locomo}")
    return files, size


def run(binary, workspace, store_dir, every, no_embed):
    """One sync with searches beside it: (sync seconds, sync result, [search latencies], failed searches)."""
    cmd = [binary, "serve", "--dir", store_dir, "--workspace", workspace]
    if no_embed:
        cmd.append("--no-embed")
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    sent, got = {}, {}
    lock = threading.Lock()

    def reader():
        for line in p.stdout:
            r = json.loads(line)
            with lock:
                got[r["id"]] = (time.perf_counter(), r)

    threading.Thread(target=reader, daemon=True).start()

    def send(i, method, params):
        with lock:
            sent[i] = time.perf_counter()
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()

    def wait_for(i):
        while True:
            with lock:
                if i in got:
                    return got[i]
            time.sleep(0.01)

    # The store and the model are loaded before the sync starts (a first search does both).
    send(0, "search", {"query": QUERY})
    wait_for(0)
    send(1, "sync", {})
    i = 2
    while True:
        time.sleep(every)
        with lock:
            if 1 in got:
                break
        send(i, "search", {"query": QUERY, "k": 6})
        i += 1
    done, sync = wait_for(1)
    latencies, failed = [], 0
    for j in range(2, i):
        t, r = wait_for(j)
        latencies.append(t - sent[j])
        failed += "error" in r
    p.stdin.close()
    p.wait()
    if "error" in sync:
        sys.exit(f"sync_search: the sync failed: {sync['error']}")
    return done - sent[1], sync["result"], latencies, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--every", type=float, default=0.5)
    ap.add_argument("--no-embed", action="store_true")
    ap.add_argument("--locomo", default=os.path.join(os.path.dirname(__file__), "../../../shared/datasets/locomo"))
    ap.add_argument("--work")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="clawhdf5-sync-search-")
    workspace = os.path.join(work, "workspace")
    shutil.rmtree(workspace, ignore_errors=True)
    files, size = write_workspace(a.locomo, workspace)
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}, nproc {os.cpu_count()}, "
          f"workspace of {files} daily notes, {size} bytes; a search every {a.every} s during the sync")
    results = {b: [] for b in a.bin}
    for rnd in range(1, a.rounds + 1):
        for b in a.bin:
            store_dir = os.path.join(work, "stores")
            shutil.rmtree(store_dir, ignore_errors=True)
            secs, report, lat, failed = run(b, workspace, store_dir, a.every, a.no_embed)
            lat.sort()
            med = statistics.median(lat) if lat else float("nan")
            top = lat[-1] if lat else float("nan")
            print(f"round {rnd} {b}: sync {secs:.1f} s ({report.get('chunks_added')} chunks); "
                  f"{len(lat)} searches during it: median {med * 1000:.0f} ms, max {top * 1000:.0f} ms, "
                  f"{failed} failed", flush=True)
            results[b].append((secs, med, top, failed, len(lat)))
    print("\n| binary | sync (s, median) | search during sync: median / max (ms, medians) | failed searches |")
    print("|---|---|---|---|")
    for b, rs in results.items():
        print(f"| {b} | {statistics.median(r[0] for r in rs):.1f} | "
              f"{statistics.median(r[1] for r in rs) * 1000:.0f} / {statistics.median(r[2] for r in rs) * 1000:.0f} | "
              f"{sum(r[3] for r in rs)} of {sum(r[4] for r in rs)} |")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
