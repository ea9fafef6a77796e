#!/usr/bin/env bash
# Python packages the Rust tests call as a subprocess: h5py (libhdf5 2.0) and numpy.
set -euo pipefail
if ! python3 -c "import h5py, numpy" 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check h5py numpy
fi
