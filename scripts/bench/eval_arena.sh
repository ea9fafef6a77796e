#!/usr/bin/env bash
# MemoryArena figures of BENCHMARKS.md (deterministic; seed 2024): every mode, the recency and keyword-calibration
# sweeps, and min-max vs calibrated fusion.
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
