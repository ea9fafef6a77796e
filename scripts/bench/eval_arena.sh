#!/usr/bin/env bash
# MemoryArena figures of BENCHMARKS-eval.md (deterministic; seed 2024).
# Usage: bash scripts/bench/eval_arena.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/eval-results}"
mkdir -p "$out"
cargo build --release -p clawhdf5-eval
bin="${CARGO_TARGET_DIR:-target}/release/clawhdf5-eval"
"$bin" memory-arena --json "$out/arena.json" --markdown "$out/arena.md"
