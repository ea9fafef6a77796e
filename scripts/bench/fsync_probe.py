#!/usr/bin/env python3
"""What one durable append costs on this file system: write N bytes, then fdatasync, either at the end of a
growing file (each fdatasync must also record the new file size) or over zeros written beforehand (what a
clawhdf5 log does: it grows 1 MiB of written zeros at a time). Prints the median of each, in microseconds.

    python3 scripts/bench/fsync_probe.py [DIR] [--appends N] [--sizes 1300,10000]

DIR defaults to the system's temporary directory (the file is removed afterwards).
"""
import argparse
import os
import statistics
import tempfile
import time


def one_run(path, mode, appends, size):
    if os.path.exists(path):
        os.remove(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if mode == "over zeros":
            os.write(fd, b"\0" * (size * appends + 4096))
            os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_SET)
        buf = b"x" * size
        times = []
        for _ in range(appends):
            t = time.perf_counter()
            os.write(fd, buf)
            os.fdatasync(fd)
            times.append(time.perf_counter() - t)
        return statistics.median(times) * 1e6
    finally:
        os.close(fd)
        os.remove(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=tempfile.gettempdir())
    ap.add_argument("--appends", type=int, default=400)
    ap.add_argument("--sizes", default="1300,10000")
    a = ap.parse_args()
    path = os.path.join(a.dir, f"clawhdf5-fsync-probe-{os.getpid()}.bin")
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}  nproc {os.cpu_count()}  dir {a.dir}")
    print("| append size | growing file (µs, median) | over written zeros (µs, median) |")
    print("|---:|---:|---:|")
    for size in (int(s) for s in a.sizes.split(",")):
        # Two runs of each: the spread between them shows how steady the disk is.
        grow = [one_run(path, "growing", a.appends, size) for _ in range(2)]
        zero = [one_run(path, "over zeros", a.appends, size) for _ in range(2)]
        print(f"| {size} B | {grow[0]:.0f} / {grow[1]:.0f} | {zero[0]:.0f} / {zero[1]:.0f} |")


if __name__ == "__main__":
    main()
