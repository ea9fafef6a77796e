#!/usr/bin/env bash
# Set-up for the ann crate. Its tests need nothing outside Rust; the benchmark peer script
# (scripts/bench/ann_hnswlib.py) needs the PyPI packages hnswlib and numpy, installed here by name
# when missing. Idempotent and quiet.
set -euo pipefail

if ! command -v python3 >/dev/null 2>&1; then
  echo "ann setup: python3 is required for the hnswlib benchmark peer" >&2
  exit 1
fi
if ! python3 -c 'import hnswlib, numpy' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check hnswlib numpy >/dev/null
fi
python3 -c 'import hnswlib, numpy' || { echo "ann setup: hnswlib/numpy did not install" >&2; exit 1; }
