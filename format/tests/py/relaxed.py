"""h5py file access with HDF5 2.0's integrity check on unused numeric bits relaxed.

HDF5 2.0 refuses to create or open an object whose integer or float type leaves unusually many bits unused
(the reduced-precision types the N-bit filter exists for) unless the file access property list relaxes that
check with H5Pset_relax_file_integrity_checks, which h5py does not wrap; this calls h5py's own libhdf5 through
ctypes. Older libraries (and files written by them) never had the check.
"""
import ctypes
import glob
import os

import h5py

H5F_RFIC_UNUSUAL_NUM_UNUSED_NUMERIC_BITS = 1


def relaxed_fapl():
    """A file access property list with the unused-bits check relaxed (plain, if the library lacks it)."""
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
    lib = ctypes.CDLL(libs[0] if libs else h5py.h5.__file__)
    relax = getattr(lib, "H5Pset_relax_file_integrity_checks", None)
    if relax is not None:
        if relax(ctypes.c_int64(fapl.id), ctypes.c_uint64(H5F_RFIC_UNUSUAL_NUM_UNUSED_NUMERIC_BITS)) < 0:
            raise RuntimeError("H5Pset_relax_file_integrity_checks failed")
    return fapl


def open_relaxed(path):
    """`h5py.File(path, "r")` with the unused-bits check relaxed."""
    return h5py.File(h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY, fapl=relaxed_fapl()))
