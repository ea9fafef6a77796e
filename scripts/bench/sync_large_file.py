#!/usr/bin/env python3
"""Time one keyword-only workspace sync of a single large memory file, and the server's peak resident memory.

usage: sync_large_file.py --bin BINARY [--bin BINARY ...] [--mb 125] [--dir DIR] [--locomo ../shared/datasets/locomo]

The file (memory/big.md under DIR/ws) is made of LoCoMo turns, one per line, each numbered so that no two lines
are alike, until it holds --mb megabytes. Each binary runs `serve --no-embed` on a fresh store folder, is asked for
one `sync`, and is closed; the script prints the sync's duration, the process's peak RSS up to the sync's
answer (VmHWM) and the sync report.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time


def make_file(locomo, root, size):
    path = os.path.join(root, "memory", "big.md")
    if os.path.exists(path) and os.path.getsize(path) >= size:
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    turns = []
    for f in sorted(glob.glob(os.path.join(locomo, "*.json"))):
        conversation = json.load(open(f))
        conversation = conversation.get("conversation", conversation)
        for key, session in conversation.items():
            if key.startswith("session_") and isinstance(session, list):
                turns += ["%s: %s" % (t.get("speaker"), t.get("text")) for t in session]
    if not turns:
        sys.exit("sync_large_file: no LoCoMo turns under %s" % locomo)
    written, i = 0, 0
    with open(path, "w") as out:
        while written < size:
            line = "%s (note %d)\n" % (turns[i % len(turns)], i)
            out.write(line)
            written += len(line.encode())
            i += 1
    return path


def peak_rss_mib(pid):
    """The process's peak resident memory so far (VmHWM), in MiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(binary, workspace, store):
    """(sync seconds, sync result, peak RSS in MiB up to the sync's answer) of one server process."""
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    p = subprocess.Popen([binary, "serve", "--dir", store, "--workspace", workspace, "--no-embed"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    start = time.perf_counter()
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "sync", "params": {}}) + "\n")
    p.stdin.flush()
    answer = json.loads(p.stdout.readline())
    seconds = time.perf_counter() - start
    peak = peak_rss_mib(p.pid)
    p.stdin.close()
    p.wait()
    if "error" in answer:
        sys.exit("sync_large_file: %s: the sync failed: %s" % (binary, answer["error"]))
    return seconds, answer["result"], peak


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="a clawhdf5 binary (repeatable)")
    ap.add_argument("--mb", type=float, default=125, help="size of the memory file in MB (10^6 bytes)")
    ap.add_argument("--dir", default="/tmp/sync_large_file", help="where the workspace and stores go")
    ap.add_argument("--locomo", default=os.path.join(os.path.dirname(__file__), "../../../shared/datasets/locomo"))
    a = ap.parse_args()
    workspace = os.path.join(a.dir, "ws")
    path = make_file(a.locomo, workspace, int(a.mb * 1e6))
    print("file %s: %d bytes" % (path, os.path.getsize(path)))
    for i, binary in enumerate(a.bin):
        seconds, result, peak = run(binary, workspace, os.path.join(a.dir, "store-%d" % i))
        print("%s: sync %.1f s, peak RSS %.0f MiB, %s" % (binary, seconds, peak, json.dumps(result)))


if __name__ == "__main__":
    main()
