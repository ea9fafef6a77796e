#!/usr/bin/env bash
# Shared runner of the OpenClaw benchmarks (openclaw_locomo.sh, openclaw_10k.sh): installs Node 26 and OpenClaw
# (scripts/setup/openclaw.sh), makes a throwaway root for HOME/TMPDIR, runs openclaw_bench.mjs, and never leaves a
# process of the run behind.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ -n "${CLAWHDF5_BIN:-}" && -x "${CLAWHDF5_BIN}" ]] || {
  echo "openclaw bench: set CLAWHDF5_BIN to a built clawhdf5 (cargo build --release -p clawhdf5-backend)" >&2
  exit 2
}
CLAWHDF5_BIN="$(cd "$(dirname "$CLAWHDF5_BIN")" && pwd)/$(basename "$CLAWHDF5_BIN")"
LOCOMO_DIR="${LOCOMO_DIR:-$ROOT/../shared/datasets/locomo}"
[[ -d "$LOCOMO_DIR" ]] || { echo "openclaw bench: LoCoMo not found at $LOCOMO_DIR" >&2; exit 2; }
NODE26="$(timeout 1200 bash "$ROOT/scripts/setup/openclaw.sh" | tail -n 1)"
OC_DIR="$(realpath -m "${CLAWHDF5_OPENCLAW_DIR:-$ROOT/.openclaw-test}/openclaw/node_modules/openclaw")"
[[ -x "$NODE26" && -f "$OC_DIR/package.json" ]] || { echo "openclaw bench: OpenClaw install incomplete" >&2; exit 1; }

# OpenClaw runs under a throwaway HOME, so the plugin's server would not find the per-user model cache: point it
# at the model explicitly (without one, clawhdf5 searches keyword-only and the reports' mode column says so).
if [[ -z "${CLAWHDF5_MODEL_DIR:-}" && -f "$HOME/.cache/clawhdf5/models/all-MiniLM-L6-v2/config.json" ]]; then
  export CLAWHDF5_MODEL_DIR="$HOME/.cache/clawhdf5/models/all-MiniLM-L6-v2"
fi

BENCH_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/clawhdf5-openclaw-bench.XXXXXX")"
cleanup() {
  local rc=$? p
  # Backstop: every OpenClaw process of the run has a HOME under $BENCH_ROOT.
  for p in /proc/[0-9]*; do
    [[ "${p#/proc/}" == "$$" ]] && continue
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^HOME=$BENCH_ROOT/"; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  if [[ $rc -eq 0 ]]; then rm -rf "$BENCH_ROOT"; else echo "openclaw bench: kept $BENCH_ROOT for inspection" >&2; fi
  exit $rc
}
trap cleanup EXIT

echo "openclaw bench: $(date -u +%FT%TZ), nproc $(nproc), $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "openclaw bench: OpenClaw $("$NODE26" -p "require('$OC_DIR/package.json').version") on Node $("$NODE26" --version); server $CLAWHDF5_BIN" >&2
export OC_DIR CLAWHDF5_BIN LOCOMO_DIR BENCH_ROOT PLUGIN_DIR="$ROOT/backend/openclaw-plugin"
"$NODE26" "$ROOT/scripts/bench/openclaw_bench.mjs" "$@"
