#!/usr/bin/env bash
# Filtered-search benchmark of clawhdf5-ann on saved graphs: ids filters of 50 %, 10 % and 1 % of the
# rows and a filter excluding each query's own 100 nearest rows, f32 and int8 indexes, each filtered
# timing paired with an unfiltered one of the same index at the same ef (CPU time of the thread,
# median of ANN_REPEAT pairs). Optionally alternates with a second `ann-bench` binary (e.g. one built
# from an earlier commit) on the same graph, so both see the same machine load.
#
#   scripts/bench/ann_filtered.sh DATA_DIR EF [OTHER_ANN_BENCH]
#
# DATA_DIR is a directory written by `ann-bench gen` or `ann-bench prepare` (scripts/bench/ann_compare.sh
# makes them: target/ann-bench/synthetic-N, target/ann-bench/real-base). The graph is built once and
# saved as DATA_DIR/graph-m16.bin. Env: ANN_REPEAT (default 3), ANN_ROUNDS (alternations, default 1),
# ANN_FILTERS (the cases, default 50,10,1,exclude; e.g. 20,5 for more selectivities).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
DIR="${1:?data directory}"
EF="${2:?filtered ef}"
OTHER="${3:-}"
cargo build --quiet --release -p clawhdf5-ann --bin ann-bench
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/ann-bench"
GRAPH="$DIR/graph-m16.bin"

run() {
  echo "# $1 dir=$DIR ef=$EF date $(date -u +%Y-%m-%dT%H:%M:%SZ) load_average $(cut -d' ' -f1-3 /proc/loadavg)"
  "$1" run --dir "$DIR" --graph "$GRAPH" --ef "$EF" --filtered-ef "$EF" --repeat "${ANN_REPEAT:-3}" \
    --filters "${ANN_FILTERS:-50,10,1,exclude}" |
    grep -E '^(filtered|# data)'
}

echo "# machine nproc=$(nproc) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for _ in $(seq "${ANN_ROUNDS:-1}"); do
  run "$BIN"
  if [[ -n "$OTHER" ]]; then run "$OTHER"; fi
done
echo "# end $(date -u +%Y-%m-%dT%H:%M:%SZ) load_average $(cut -d' ' -f1-3 /proc/loadavg)"
