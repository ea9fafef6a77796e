//! netCDF-4 files, written by the netCDF4 Python package (netCDF-C with its own libhdf5) at test time, both
//! NETCDF4 and NETCDF4_CLASSIC: dimension scales with unlimited dimensions, groups, global and variable
//! attributes, fill values, compound, enum, variable-length and string types, and every compression netCDF-C
//! offers (zlib with shuffle, zstd, bzip2, Blosc, szip) and quantization. Every object reads equal to h5py's view.

use crate::common;

const MAKE: &str = r#"
import sys, os, netCDF4, numpy as np
out = sys.argv[1]
for fmt in ["NETCDF4", "NETCDF4_CLASSIC"]:
    with netCDF4.Dataset(os.path.join(out, fmt.lower() + ".nc"), "w", format=fmt) as ds:
        ds.title = "test"
        ds.version = np.int32(3)
        ds.vals = np.array([1.5, 2.5])
        ds.createDimension("time", None)
        ds.createDimension("lat", 10)
        ds.createDimension("lon", 12)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat[:] = np.linspace(-45, 45, 10)
        v = ds.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, shuffle=True, fill_value=-999.0)
        v.long_name = "temperature"
        for i in range(5):
            t[i] = i
            v[i] = np.random.default_rng(i).normal(280, 5, (10, 12))
        q = ds.createVariable("q", "f8", ("lat", "lon"), zlib=True, least_significant_digit=2)
        q[:] = np.random.default_rng(9).random((10, 12))
        c = ds.createVariable("counts", "i2", ("lat",), fill_value=-1)
        c[:5] = np.arange(5)
        if fmt == "NETCDF4":
            s = ds.createVariable("names", str, ("lat",))
            s[:] = np.array(["n%d" % i for i in range(10)], dtype=object)
            g = ds.createGroup("sub")
            g.createDimension("x", 3)
            gv = g.createVariable("gv", "u8", ("x",))
            gv[:] = [1, 2, 3]
            g.note = "in group"
            ct = ds.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
            cv = ds.createVariable("pairs", ct, ("lat",))
            cv[:] = np.array([(i, i / 2) for i in range(10)], dtype=[("a", "i4"), ("b", "f8")])
            et = ds.createEnumType(np.uint8, "flag", {"off": 0, "on": 1})
            ev = ds.createVariable("flags", et, ("lon",))
            ev[:] = np.arange(12) % 2
            vt = ds.createVLType(np.int32, "ragged_t")
            vv = ds.createVariable("ragged", vt, ("lat",))
            for i in range(10):
                vv[i] = np.arange(i, dtype="i4")
            for comp in ["zstd", "bzip2", "blosc_lz4", "szip"]:
                kw = {"compression": comp}
                if comp == "szip":
                    kw.update(szip_coding="nn", szip_pixels_per_block=8)
                x = ds.createVariable("c_" + comp, "f4", ("lat", "lon"), **kw)
                x[:] = np.arange(120.0).reshape(10, 12)
            qv = ds.createVariable("quant", "f4", ("lat", "lon"), zlib=True, significant_digits=3, quantize_mode="BitGroom")
            qv[:] = np.random.default_rng(3).random((10, 12))
"#;

#[test]
fn netcdf4_files_read_equal_to_h5py() {
    if !common::have_python_module("netCDF4") || !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path()]);
    for name in ["netcdf4.nc", "netcdf4_classic.nc"] {
        let path = dir.path().join(name);
        common::assert_equal_to_h5py(&path);
    }
    let f = clawhdf5_format::H5File::open(&dir.path().join("netcdf4.nc")).unwrap();
    for (name, id) in [
        ("/c_zstd", 32015),
        ("/c_bzip2", 307),
        ("/c_blosc_lz4", 32001),
        ("/c_szip", 4),
    ] {
        let d = f.dataset(name).unwrap();
        assert!(
            d.filters().iter().any(|fl| fl.id == id),
            "{name}: filter {id}"
        );
    }
}
