#!/usr/bin/env bash
# The harness figures of BENCHMARKS.md, full size, release build: search (ef sweep + end-to-end hybrid table at
# 1K/10K/100K), footprint (10K/100K), consolidation (1K/10K/100K + LoCoMo quality), ephemeral, partial reads.
# Each command writes NAME.md and NAME.json into the results folder; a run log goes beside them.
# Usage: bash scripts/bench/harness.sh [RESULTS_DIR] [HARNESS ...]   (default: all five, in this order)
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/harness-results}"
shift || true
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  harnesses=(search-harness footprint consolidation ephemeral read-harness)
fi
mkdir -p "$out"
cargo build --release -p clawhdf5-eval
bin="${CARGO_TARGET_DIR:-target}/release/clawhdf5-eval"
data="../shared/datasets/locomo"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nproc: $(nproc)"
  lscpu | grep 'Model name' || true
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
} | tee "$out/machine.txt"
for h in "${harnesses[@]}"; do
  echo "== $h"
  case "$h" in
    search-harness) "$bin" search-harness --out "$out" --locomo "$data" --sizes 1000,10000,100000 ;;
    footprint) "$bin" footprint --out "$out" --locomo "$data" --sizes 10000,100000 ;;
    consolidation) "$bin" consolidation --out "$out" --locomo "$data" --sizes 1000,10000,100000 ;;
    ephemeral) "$bin" ephemeral --out "$out" --locomo "$data" ;;
    read-harness) "$bin" read-harness --out "$out" ;;
    *) echo "unknown harness $h" >&2; exit 2 ;;
  esac
done 2>&1 | tee "$out/run.log"
echo "results in $out"
