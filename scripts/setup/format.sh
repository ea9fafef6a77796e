#!/usr/bin/env bash
# Set-up for the format crate's tests: h5py (HDF5 2.0), numpy, PyTables (HDF5 1.14), hdf5plugin (h5py's
# plugin filters: zstd, lz4, ... written at test time for our decoders), blosc2 (python-blosc2, whose frames
# check the Blosc2 decoder beyond what hdf5plugin writes), lzokay (an LZO1X compressor, whose streams the
# LZO filter's decoder is checked against), netCDF4 (netCDF-4 files, HDF5 written by netCDF-C's own libhdf5) and
# imagecodecs (CharLS's JPEG-LS codestreams, which the FCIDECOMP filter's decoder is checked against).
# Idempotent and quiet; installs by package name only.
set -euo pipefail
if ! python3 -c "import h5py, numpy, tables, lzokay, hdf5plugin, blosc2, netCDF4, imagecodecs" >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check h5py numpy tables lzokay hdf5plugin blosc2 netCDF4 imagecodecs
fi
# Debian's h5dump (HDF5 1.10) is used when present; install it if apt is usable and we are root.
if ! command -v h5dump >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -qq hdf5-tools >/dev/null 2>&1 \
    || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq hdf5-tools >/dev/null 2>&1) \
    || true)
fi
