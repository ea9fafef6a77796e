#!/usr/bin/env python3
"""Embed one sentence per line with our own embedder (`clawhdf5 embed --json`) into raw little-endian f32 rows.

Usage: ann_real_embed.py --bin PATH/clawhdf5 IN.txt OUT.f32 [--chunk 1000] [--threads N]

The sentences go to the CLI in chunks (argv, after `--`); the vectors are appended to OUT.f32.part, so an
interrupted run resumes where it stopped; OUT.f32 appears only when every line is embedded.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import time

DIM = 384


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--chunk", type=int, default=1000)
    ap.add_argument("--threads", type=int)
    ap.add_argument("inp")
    ap.add_argument("out")
    a = ap.parse_args()

    with open(a.inp, encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f]
    part = a.out + ".part"
    done = os.path.getsize(part) // (DIM * 4) if os.path.exists(part) else 0
    with open(part, "ab") as out:
        out.truncate(done * DIM * 4)
        t0 = time.time()
        start = done
        while done < len(texts):
            chunk = texts[done : done + a.chunk]
            cmd = [a.bin, "embed", "--json"]
            if a.threads:
                cmd += ["--threads", str(a.threads)]
            res = subprocess.run(cmd + ["--"] + chunk, capture_output=True, check=False)
            if res.returncode != 0:
                sys.exit(f"ann_real_embed: {a.bin} embed failed at line {done}: {res.stderr.decode(errors='replace')}")
            rows = json.loads(res.stdout)
            if len(rows) != len(chunk):
                sys.exit(f"ann_real_embed: asked for {len(chunk)} vectors at line {done}, got {len(rows)}")
            for text, row in zip(chunk, rows):
                v = row["vector"]
                if len(v) != DIM or row["text"] != text:
                    sys.exit(f"ann_real_embed: unexpected row for line {done}: dim {len(v)}")
                out.write(struct.pack(f"<{DIM}f", *v))
            out.flush()
            done += len(chunk)
            rate = (done - start) / max(time.time() - t0, 1e-9)
            print(f"ann_real_embed: {a.out}: {done}/{len(texts)} ({rate:.0f} sentences/s)", file=sys.stderr)
    os.replace(part, a.out)


if __name__ == "__main__":
    main()
