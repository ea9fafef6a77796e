#!/usr/bin/env bash
# Head to head through a real OpenClaw gateway: OpenClaw's built-in memory-core (full-text mode, what it does
# offline) against the clawhdf5 plugin, on the same workspaces.
#
# Each LoCoMo conversation (../shared/datasets/locomo) becomes one agent whose workspace holds the conversation as
# daily notes memory/YYYY-MM-DD.md (one file per session date, one turn per line: "Speaker: text"). memory-core
# indexes them with `openclaw memory index --force --agent ID` (no embedding provider: FTS5/BM25); clawhdf5 with the
# plugin's manager.sync() reached through OpenClaw's in-process memory host. Then one gateway per provider (loopback,
# token auth) answers every question of categories 1-4 as POST /tools/invoke {"tool":"memory_search","args":{query,
# maxResults:5,minScore:0},"agentId":ID}; the returned path+line ranges are mapped back to dia_ids.
# Reports evidence recall@5 (any evidence turn inside a top-5 hit) and p50/p95 latency for both, in one run.
#
# Usage: CLAWHDF5_BIN=target/release/clawhdf5 bash scripts/bench/openclaw_locomo.sh [options]
#   --smoke          one conversation, 8 questions, both providers (about two minutes on 2 cores: two indexings
#                    and two gateway starts)
#   --stride S       every S-th question (default 1: all 1,540)
#   --limit N        at most N questions in all
#   --convs N        only the first N conversations
#   --per-conv N     at most N questions per conversation
#   --providers LIST memory-core,clawhdf5 (default both; their gateways run side by side and each question goes
#                    to both, alternating which goes first)
#   --layout L       daily (default): memory/YYYY-MM-DD.md; undated: the same files named memory/day-NN.md, which
#                    memory-core treats as evergreen (no 30-day recency decay) - a control for the decay
#   --search-mode M  clawhdf5's search mode (the plugin's embedding.mode): hybrid (default), vector or rrf
#   --out DIR        also write openclaw_locomo_<layout>.json there (per-provider summaries, raw samples)
# Needs: CLAWHDF5_BIN (a release build for figures), Node 26 + openclaw (scripts/setup/openclaw.sh installs both).
# Everything runs under a throwaway HOME/TMPDIR that is removed afterwards (kept on failure).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) args+=(--convs 1 --per-conv 8); shift ;;
    --stride | --limit | --convs | --per-conv | --providers | --layout | --search-mode | --out)
      [[ $# -ge 2 ]] || { echo "openclaw_locomo: $1 needs a value" >&2; exit 2; }
      args+=("$1" "$2"); shift 2 ;;
    *) echo "openclaw_locomo: unknown option $1" >&2; exit 2 ;;
  esac
done
exec bash "$ROOT/scripts/bench/openclaw_run.sh" locomo "${args[@]}"
