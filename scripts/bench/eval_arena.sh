#!/usr/bin/env bash
# MemoryArena figures of BENCHMARKS.md (deterministic; seed 2024): every mode, the recency and keyword-calibration
# sweeps, min-max vs calibrated fusion, and the pseudo-relevance-feedback settings of the LoCoMo sweep.
# Usage: bash scripts/bench/eval_arena.sh [OUT_DIR]   (PROFILE=dev to use the dev profile)
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/eval-results}"
mkdir -p "$out"
profile="${PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo build --release -p clawhdf5-eval
else
  cargo build -p clawhdf5-eval
fi
bin="${CARGO_TARGET_DIR:-target}/$([ "$profile" = release ] && echo release || echo debug)/clawhdf5-eval"
echo "== $(date -u +%FT%TZ), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" memory-arena --sweep --quiet --json "$out/arena.json" --markdown "$out/arena.md"
echo "== pseudo-relevance feedback (hybrid-rerank; off by default): first-pass turns / words weight / Rocchio"
for fb in "3 0.2 0" "3 0.1 0" "2 0 0.25" "3 0 0.25"; do
  # shellcheck disable=SC2086
  set -- $fb
  echo "-- --feedback-docs $1 --feedback-keyword $2 --feedback-vector $3"
  "$bin" memory-arena --mode hybrid-rerank --feedback-docs "$1" --feedback-keyword "$2" --feedback-vector "$3" \
    --quiet | grep -E '^\| (mode|hybrid-rerank)'
done
echo "== done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
