#!/usr/bin/env bash
# LoCoMo evidence-retrieval figures of BENCHMARKS.md, ours and the Python peers' from one run:
#   1. the indexing-style sweep (BM25, seconds each);
#   2. every mode with every sweep (hybrid weight, keyword calibration, re-rank weights, session aggregation,
#      min-max vs calibrated fusion, session cosine x session documents); embeds ~7,900 texts once, later
#      runs read the cache
#      (~/.cache/clawhdf5/eval-embeddings.bin);
#      plus the date, pseudo-relevance-feedback and query-scaled keyword calibration sweeps;
#   3. the peers: rank_bm25, sentence-transformers MiniLM and a min-max 0.5/0.5 hybrid
#      (scripts/bench/locomo_peers.py; its embeddings are cached under OUT_DIR).
# Usage: bash scripts/bench/eval_locomo.sh [OUT_DIR]
#   PROFILE=dev  use the dev profile (default: release)
#   PEERS=0      skip step 3 (the peers' figures then do not come from this run; say so beside them)
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
data="../shared/datasets/locomo"
model="${CLAWHDF5_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/clawhdf5/models/all-MiniLM-L6-v2}"
echo "== $(date -u +%FT%TZ), nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
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
echo "== embedding context (hybrid-rerank; --embed-neighbours 0 and 2 vs the default 1)"
for en in 0 2; do
  echo "-- --embed-neighbours $en"
  "$bin" locomo "$data" --mode hybrid-rerank --embed-neighbours "$en" --quiet | grep -E '^\| (mode|bm25|hybrid)'
done
echo "== session ranking of hybrid-rerank: plain roll-up (before) and each added signal alone"
for agg in "--session-vector 0 --session-docs 0" "--session-vector 0.5 --session-docs 0" \
           "--session-vector 0 --session-docs 0.2"; do
  echo "-- $agg"
  # shellcheck disable=SC2086
  "$bin" locomo "$data" --mode hybrid-rerank $agg --quiet | grep -E '^\| (mode|hybrid)'
done
echo "== every mode, with sweeps"
"$bin" locomo "$data" --sweep --quiet --json "$out/locomo.json" --markdown "$out/locomo.md"
cat "$out/locomo.md"
if [ "${PEERS:-1}" = 0 ]; then
  echo "== Python peers skipped (PEERS=0)"
else
  echo "== Python peers (same machine, same run)"
  python3 -c "import rank_bm25" 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check rank_bm25
  python3 scripts/bench/locomo_peers.py "$data" "$model" --cache "$out/locomo-peers-embeddings.npz" \
    --markdown "$out/locomo-peers.md"
fi
echo "== done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
