#!/usr/bin/env bash
# memory_search round trip through a real OpenClaw gateway at 10K memories, query embedding included (local
# MiniLM). The store is built with `clawhdf5 import` from JSON lines (LoCoMo turns and session observations,
# cycled to N); the queries are LoCoMo questions, one at a time, through POST /tools/invoke on loopback with token
# auth, taking turns query by query with the gateway's floors (memory_get refused by the plugin without a server
# call; a minimal plugin's trivial tool, in the same gateway and in one without clawhdf5). The same queries also
# go through the plugin's memory_search tool in Node without OpenClaw, straight to `clawhdf5 serve` over stdio,
# and piece by piece inside the server (clawhdf5-search-hops, built next to clawhdf5), to show each hop's share.
#
# Usage: CLAWHDF5_BIN=target/release/clawhdf5 bash scripts/bench/openclaw_10k.sh [--n 10000] [--queries 300]
#        [--out DIR] [--store DIR (keep / reuse the built store)] [--no-bare-gateway]
# Needs the model (clawhdf5 model fetch; else the search is keyword-only and the report says so).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --n | --queries | --out | --store)
      [[ $# -ge 2 ]] || { echo "openclaw_10k: $1 needs a value" >&2; exit 2; }
      args+=("$1" "$2"); shift 2 ;;
    --no-bare-gateway) args+=("$1"); shift ;;
    *) echo "openclaw_10k: unknown option $1" >&2; exit 2 ;;
  esac
done
exec bash "$ROOT/scripts/bench/openclaw_run.sh" tenk "${args[@]}"
