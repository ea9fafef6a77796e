#!/usr/bin/env python3
"""`clawhdf5 serve` on a disk that fills up, then gets room again. A fresh server (keyword-only) saves memories of
about 1 KB into --dir until a save is refused; a search that finds some of them is asked; then --grow runs (a shell command that makes
room, e.g. remounting a tmpfs larger) and SAVES_AFTER more saves are sent to the same server; the server is shut
down; finally every save the server acknowledged is looked for in the store (`clawhdf5 export`).

Prints the first refusal, how many saves went through after the room came back, the server's exit status and
whether any acknowledged save is missing. Needs a small file system for --dir, for example (as root):
    mkdir -p /mnt/small && mount -t tmpfs -o size=3m tmpfs /mnt/small
    python3 scripts/bench/disk_full_serve.py --bin target/release/clawhdf5 --dir /mnt/small/st \
        --grow "mount -o remount,size=20m /mnt/small"

Usage: python3 scripts/bench/disk_full_serve.py --bin BIN --dir DIR --grow CMD [--durability every-save]
       [--checkpoint-bytes 200000] [--saves-after 200]
"""
import argparse
import json
import random
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--dir", required=True, help="store folder on a small file system (created by the server)")
    ap.add_argument("--grow", required=True, help="shell command run once the disk is full, to make room")
    ap.add_argument("--durability", default="every-save")
    ap.add_argument("--checkpoint-bytes", default="200000")
    ap.add_argument("--saves-after", type=int, default=200)
    a = ap.parse_args()

    cmd = [a.bin, "serve", "--dir", a.dir, "--no-embed", "--durability", a.durability,
           "--checkpoint-bytes", a.checkpoint_bytes]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         bufsize=1)

    def call(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        if not line:
            sys.exit(f"disk_full_serve: the server exited: {p.stderr.read()[-500:]}")
        return json.loads(line)

    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "paper"]
    acked = []

    def save(i):
        topic = "the lighthouse" if i % 10 == 0 else "the harbour"
        text = f"memory {i} about {topic}: " + " ".join(rng.choice(words) + str(rng.randrange(100000)) for _ in range(120))
        r = call(i, "save", {"text": text})
        if "result" in r:
            acked.append(r["result"]["id"])
            return None
        return r["error"]["message"]

    i = 0
    while True:
        i += 1
        if i > 100000:
            sys.exit("disk_full_serve: the disk never filled up (is --dir on a small file system?)")
        refused = save(i)
        if refused:
            break
    print(f"saves acknowledged before the disk filled: {len(acked)}; save {i} refused: {refused}")
    r = call(i + 1, "search", {"query": "lighthouse", "k": 5})
    print(f"a search meanwhile: {'answered, ' + str(len(r['result']['results'])) + ' results' if 'result' in r else 'failed: ' + r['error']['message']}")
    subprocess.run(a.grow, shell=True, check=True)
    ok, errors = 0, []
    for _ in range(a.saves_after):
        i += 2
        e = save(i)
        if e:
            errors.append(e)
        else:
            ok += 1
    print(f"after --grow: {ok} of {a.saves_after} saves acknowledged" + (f"; first refusal: {errors[0]}" if errors else ""))
    p.stdin.close()
    rc = p.wait()
    err = p.stderr.read().strip()
    print(f"server exit status {rc}" + (f"; stderr: {err[-400:]}" if err else ""))
    out = subprocess.run([a.bin, "export", "--store", f"{a.dir}/main.h5"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"disk_full_serve: export failed: {out.stderr.strip()}")
    ids = {json.loads(line)["id"] for line in out.stdout.splitlines() if line.strip()}
    missing = [x for x in acked if x not in ids]
    print(f"store holds {len(ids)} records; acknowledged {len(acked)}; acknowledged but missing: {len(missing)}")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
