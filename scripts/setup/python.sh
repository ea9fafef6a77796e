#!/usr/bin/env bash
# Python packages the Rust tests call as a subprocess: h5py (libhdf5 2.0), numpy, and the MCP client library `mcp`.
set -euo pipefail
if ! python3 -c "import h5py, numpy, mcp" 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check h5py numpy mcp
fi
