#!/usr/bin/env bash
# LoCoMo evidence-retrieval figures of BENCHMARKS-eval.md: the indexing-style sweep (BM25, seconds each), then
# every mode with the hybrid-weight and re-rank sweeps (embeds ~7,900 texts once; later runs read the cache).
# Usage: bash scripts/bench/eval_locomo.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/eval-results}"
mkdir -p "$out"
cargo build --release -p clawhdf5-eval
bin="${CARGO_TARGET_DIR:-target}/release/clawhdf5-eval"
data="../shared/datasets/locomo"
echo "== indexing styles (BM25, stemmed)"
for style in "--neighbours 0 --no-speaker --no-date" "--neighbours 0 --no-date" "--neighbours 0" \
             "--neighbours 1 --no-date" "--neighbours 1" "--neighbours 2" "--neighbours 3" \
             "--neighbours 1 --repeat 2" "--neighbours 2 --repeat 2"; do
  echo "-- $style"
  # shellcheck disable=SC2086
  "$bin" locomo "$data" --mode bm25-stem $style --quiet | grep -E '^\| (mode|bm25)'
done
echo "== session documents"
"$bin" locomo "$data" --mode bm25-stem --granularity session --quiet | grep -E '^\| (mode|bm25)'
echo "== every mode, with sweeps"
"$bin" locomo "$data" --sweep --json "$out/locomo.json" --markdown "$out/locomo.md"
