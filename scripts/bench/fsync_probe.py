#!/usr/bin/env python3
"""What one durable append costs on this file system: write N bytes, then fdatasync, either at the end of a
growing file (each fdatasync must also record the new file size) or over zeros written beforehand (what a
clawhdf5 log did before 2026-12-03: it grows 1 MiB of written zeros at a time), and the way an every-save log
writes on Linux now: one `O_DIRECT | O_DSYNC` write of whole 4 KiB blocks over written zeros, the last partial
block written again with the next append (no fdatasync). Prints the median of each, in microseconds.

    python3 scripts/bench/fsync_probe.py [DIR] [--appends N] [--sizes 1300,10000]

DIR defaults to the system's temporary directory (the file is removed afterwards).
"""
import argparse
import mmap
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


def direct_run(path, appends, size):
    """Appends as `memory/src/wal/writer.rs` makes them; None where the file system refuses direct I/O."""
    if os.path.exists(path):
        os.remove(path)
    block = 4096
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"\0" * (size * appends + 2 * block))
    os.fsync(fd)
    os.close(fd)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_DIRECT | os.O_DSYNC)
    except (OSError, AttributeError):
        os.remove(path)
        return None
    try:
        # mmap memory is page aligned, as direct I/O needs.
        buf = mmap.mmap(-1, (size // block + 2) * block)
        end = 0
        times = []
        for _ in range(appends):
            start = end - end % block
            new_end = end + size
            blocks = -(-(new_end - start) // block) * block
            buf.seek(end - start)
            buf.write(b"x" * size)
            t = time.perf_counter()
            os.pwrite(fd, memoryview(buf)[:blocks], start)
            times.append(time.perf_counter() - t)
            # Keep the new partial block at the buffer's start for the next append.
            keep = new_end % block
            tail = buf[new_end - start - keep:new_end - start]
            buf.seek(0)
            buf.write(tail)
            end = new_end
        return statistics.median(times) * 1e6
    except OSError:
        return None
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
    print("| append size | growing file (µs, median) | over written zeros (µs, median) "
          "| O_DIRECT \\| O_DSYNC blocks over zeros (µs, median) |")
    print("|---:|---:|---:|---:|")
    for size in (int(s) for s in a.sizes.split(",")):
        # Two runs of each, taking turns: the spread between them shows how steady the disk is.
        grow, zero, direct = [], [], []
        for _ in range(2):
            grow.append(one_run(path, "growing", a.appends, size))
            zero.append(one_run(path, "over zeros", a.appends, size))
            direct.append(direct_run(path, a.appends, size))
        shown = " / ".join("n/a" if d is None else f"{d:.0f}" for d in direct)
        print(f"| {size} B | {grow[0]:.0f} / {grow[1]:.0f} | {zero[0]:.0f} / {zero[1]:.0f} | {shown} |")


if __name__ == "__main__":
    main()
