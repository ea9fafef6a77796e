#!/usr/bin/env bash
# Runs every test of clawhdf5 on a fresh machine: installs what the tests need (scripts/setup/*.sh: h5py,
# PyTables, the embedding model, Node.js + OpenClaw, ...), then the Rust tests of every crate, then the tests
# that drive the real OpenClaw.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
for s in scripts/setup/*.sh; do
  [ -e "$s" ] || continue
  echo "== set-up: $s"
  bash "$s"
done
cargo test --workspace
if [ -f scripts/test-openclaw.sh ]; then
  target_dir="${CARGO_TARGET_DIR:-target}"
  case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
  # `cargo test --workspace` above built the `clawhdf5` binary for the backend's own tests (the one they
  # drive). `cargo build -p clawhdf5-backend` would resolve the package's features without the workspace's
  # dev-dependencies and rebuild candle, tokenizers, reqwest and the workspace (about 4 minutes of a CI run)
  # for an equivalent binary, so it runs only when that one is missing.
  [ -x "$target_dir/debug/clawhdf5" ] || cargo build -p clawhdf5-backend
  CLAWHDF5_BIN="$target_dir/debug/clawhdf5" bash scripts/test-openclaw.sh
fi
