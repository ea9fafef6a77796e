#!/usr/bin/env bash
# Side-by-side benchmark: clawhdf5-ann (f32 and int8 + re-score) vs hnswlib, same data, same run.
#
#   scripts/bench/ann_compare.sh 10000            # synthetic clustered unit vectors, N = 10,000
#   scripts/bench/ann_compare.sh 100000
#   ANN_BASE=base.f32 ANN_QUERIES=q.f32 scripts/bench/ann_compare.sh real   # raw little-endian f32, 384-d rows
#
# Env: ANN_EF (ef sweep, comma-separated), ANN_NQ (synthetic query count, default 200),
#      ANN_REPEAT (time each single-thread measurement this many times, alternating our modes, and
#      report medians; default 1),
#      ANN_BENCH_DIR (where data sets are written, default target/ann-bench), ANN_DIM (default 384).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
WHAT="${1:-10000}"
EFS="${ANN_EF:-10,16,24,32,48,64,96,128,192,256}"
DIM="${ANN_DIM:-384}"
BASE_DIR="${ANN_BENCH_DIR:-$ROOT/target/ann-bench}"

bash scripts/bench/ann_setup.sh
cargo build --quiet --release -p clawhdf5-ann --bin ann-bench
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/ann-bench"

if [[ "$WHAT" == "real" ]]; then
  : "${ANN_BASE:?set ANN_BASE to a raw f32 file of base vectors}"
  : "${ANN_QUERIES:?set ANN_QUERIES to a raw f32 file of query vectors}"
  DIR="$BASE_DIR/real-$(basename "$ANN_BASE" .f32)"
  "$BIN" prepare --out "$DIR" --base "$ANN_BASE" --queries "$ANN_QUERIES" --dim "$DIM"
else
  DIR="$BASE_DIR/synthetic-$WHAT"
  [[ -f "$DIR/gt.u32" ]] || "$BIN" gen --out "$DIR" --n "$WHAT" --queries "${ANN_NQ:-200}" --dim "$DIM"
fi

echo "# date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# machine nproc=$(nproc) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "# load_average $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" run --dir "$DIR" --ef "$EFS" --repeat "${ANN_REPEAT:-1}"
python3 scripts/bench/ann_hnswlib.py --dir "$DIR" --ef "$EFS" --repeat "${ANN_REPEAT:-1}"
echo "# load_average $(cut -d' ' -f1-3 /proc/loadavg)"
