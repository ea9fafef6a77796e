#!/usr/bin/env bash
# Embedding throughput, clawhdf5-embed vs sentence-transformers (torch CPU), same texts, same machine,
# one run. Prints sentences/s for both and the ratio.
#
#   scripts/bench/embed_compare.sh            # 5,000 LoCoMo turns, batch 32, all cores
#   N=1000 ROUNDS=1 SORTED=1 scripts/bench/embed_compare.sh
#   BACKENDS="native candle" scripts/bench/embed_compare.sh   # both local backends, same run
#
# N: turns (default 5000); BATCH: texts per call (32); THREADS: threads for both (default: nproc);
# ROUNDS: alternating rounds, best of each side is reported (2); SORTED=1 sorts all texts by length
# before batching (what sentence-transformers' encode() does for one big list); default is calls of
# BATCH texts in dataset order. BACKENDS: clawhdf5-embed forward passes to measure, space-separated
# (native, candle; default: native).
set -euo pipefail
cd "$(dirname "$0")/../.."

N="${N:-5000}"
BATCH="${BATCH:-32}"
THREADS="${THREADS:-$(nproc)}"
ROUNDS="${ROUNDS:-2}"
SORTED="${SORTED:-0}"
BACKENDS="${BACKENDS:-native}"

bash scripts/setup/embed.sh
python3 -c "import sentence_transformers" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check sentence-transformers >&2

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --quiet --release -p clawhdf5-embed --bin embed-bench
bench="$CARGO_TARGET_DIR/release/embed-bench"
model_dir="$(python3 -c 'import os; print(os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "clawhdf5/models/all-MiniLM-L6-v2"))')"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sorted_flag=()
[ "$SORTED" = 1 ] && sorted_flag=(--sorted)

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A rust_best rust_cpu
for b in $BACKENDS; do
  rust_best[$b]=0
  rust_cpu[$b]=0
done
st_best=0
st_cpu=0
cpu_rate() { sed -E 's/.* ([0-9.]+) sentences per CPU-s.*/\1/' <<<"$1"; }
for round in $(seq "$ROUNDS"); do
  for b in $BACKENDS; do
    line="$("$bench" --backend "$b" --n "$N" --batch "$BATCH" --threads "$THREADS" --model-dir "$model_dir" \
      --dump-texts "$work/texts.json" "${sorted_flag[@]}")"
    echo "round $round: $line"
    rate="$(sed -E 's/.* ([0-9.]+) sentences\/s$/\1/' <<<"$line")"
    rust_best[$b]="$(python3 -c "print(max(${rust_best[$b]}, $rate))")"
    rust_cpu[$b]="$(python3 -c "print(max(${rust_cpu[$b]}, $(cpu_rate "$line")))")"
  done
  line="$(python3 scripts/bench/embed_st.py "$model_dir" "$work/texts.json" "$BATCH" --threads "$THREADS" \
    "${sorted_flag[@]}" 2>/dev/null | tail -n1)"
  echo "round $round: $line"
  rate="$(sed -E 's/.* ([0-9.]+) sentences\/s$/\1/' <<<"$line")"
  st_best="$(python3 -c "print(max($st_best, $rate))")"
  st_cpu="$(python3 -c "print(max($st_cpu, $(cpu_rate "$line")))")"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in $BACKENDS; do
  python3 -c "print(f'best: clawhdf5-embed ($b) {${rust_best[$b]}:.1f} sentences/s, sentence-transformers {$st_best:.1f} sentences/s, ratio {${rust_best[$b]} / $st_best:.2f}x')"
  python3 -c "print(f'per CPU-second: clawhdf5-embed ($b) {${rust_cpu[$b]}:.1f}, sentence-transformers {$st_cpu:.1f}, ratio {${rust_cpu[$b]} / $st_cpu:.2f}x')"
done
