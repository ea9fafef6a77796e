//! Virtual datasets written by h5py (HDF5 2.0) under each libver that allows them: sources in other files
//! (named relative to the virtual file) and in the same file, whole and strided selections on both sides,
//! a 2-D mosaic, unions of boxes (irregular hyperslabs) through h5py's low-level API, chunked and compressed
//! sources, a compound type, many mappings naming the same file, and a missing source (fill value). Every
//! virtual dataset reads equal to h5py's view, whole and in parts; sources smaller than their mappings read
//! with the fill value past them (checked against the values themselves: libhdf5 returns uninitialised memory).

use crate::common;

use clawhdf5_format::{Data, H5File, VdsView};

const MAKE: &str = r#"
import os, sys, h5py, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(4)
for i in range(4):
    with h5py.File(os.path.join(out, "src%d.h5" % i), "w") as f:
        f["data"] = np.arange(10, dtype="i4") + 100 * i
        f["tile"] = (rng.random((5, 6)) * 100).astype("f8")
        f.create_dataset("packed", data=np.arange(600.0).reshape(20, 30) + i, chunks=(7, 8), compression="gzip", shuffle=True)
        f["pairs"] = np.array([(j, j / 2) for j in range(8)], dtype=[("a", "<i4"), ("b", "<f8")])
for libver in ["earliest", "v110", "latest"]:
    with h5py.File(os.path.join(out, "vds_%s.h5" % libver), "w", libver=(libver, "latest")) as f:
        layout = h5py.VirtualLayout(shape=(4, 10), dtype="i4")
        for i in range(4):
            layout[i] = h5py.VirtualSource("src%d.h5" % i, "data", shape=(10,))
        f.create_virtual_dataset("stacked", layout, fillvalue=-1)
        f["local"] = np.arange(40.0)
        l2 = h5py.VirtualLayout(shape=(12,), dtype="f8")
        l2[0:5] = h5py.VirtualSource(".", "local", shape=(40,))[::8]
        l2[7:10] = h5py.VirtualSource(".", "local", shape=(40,))[1:4]
        f.create_virtual_dataset("same_file_strided", l2, fillvalue=np.nan)
        mosaic = h5py.VirtualLayout(shape=(10, 12), dtype="f8")
        for i in range(4):
            r, c = divmod(i, 2)
            mosaic[r * 5:(r + 1) * 5, c * 6:(c + 1) * 6] = h5py.VirtualSource("src%d.h5" % i, "tile", shape=(5, 6))
        f.create_virtual_dataset("mosaic", mosaic)
        strided = h5py.VirtualLayout(shape=(10, 20), dtype="f8")
        for i in range(2):
            strided[i::2, :] = h5py.VirtualSource("src%d.h5" % i, "packed", shape=(20, 30))[0:20:4, 0:20]
        f.create_virtual_dataset("interleaved", strided, fillvalue=7.5)
        pairs = h5py.VirtualLayout(shape=(2, 8), dtype=[("a", "<i4"), ("b", "<f8")])
        pairs[0] = h5py.VirtualSource("src0.h5", "pairs", shape=(8,))
        pairs[1] = h5py.VirtualSource("src3.h5", "pairs", shape=(8,))
        f.create_virtual_dataset("compound", pairs)
        many = h5py.VirtualLayout(shape=(40,), dtype="i4")
        for i in range(10):
            many[4 * i:4 * i + 4] = h5py.VirtualSource("src2.h5", "data", shape=(10,))[i % 7:i % 7 + 4]
        f.create_virtual_dataset("many_mappings", many)
        gone = h5py.VirtualLayout(shape=(2, 10), dtype="i4")
        gone[0] = h5py.VirtualSource("src1.h5", "data", shape=(10,))
        gone[1] = h5py.VirtualSource("missing.h5", "data", shape=(10,))
        f.create_virtual_dataset("missing_source", gone, fillvalue=-9)
        # Unions of boxes on both sides, through the low-level API.
        f["grid"] = np.arange(64, dtype="i2").reshape(8, 8)
        vspace = h5py.h5s.create_simple((6, 6))
        vspace.select_hyperslab((0, 0), (1, 1), block=(2, 3))
        vspace.select_hyperslab((3, 2), (1, 1), block=(3, 2), op=h5py.h5s.SELECT_OR)
        sspace = h5py.h5s.create_simple((8, 8))
        sspace.select_hyperslab((1, 1), (1, 1), block=(3, 4))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(-3, dtype="i2"))
        dcpl.set_virtual(vspace, b".", b"/grid", sspace)
        h5py.h5d.create(f.id, b"irregular", h5py.h5t.STD_I16LE, h5py.h5s.create_simple((6, 6)), dcpl=dcpl).close()
        # A virtual dataset over a virtual dataset.
        outer = h5py.VirtualLayout(shape=(10,), dtype="i4")
        outer[:] = h5py.VirtualSource(".", "stacked", shape=(4, 10))[2]
        f.create_virtual_dataset("nested", outer)
# Mappings reaching past their sources' extents (10 elements mapped as 15; a 5x6 tile as 7x8). libhdf5 2.0
# returns uninitialised memory for the elements beyond a source (seen: h5py reads garbage there), so these are
# checked against the values they must have, not against h5py.
with h5py.File(os.path.join(out, "short.h5"), "w") as f:
    short = h5py.VirtualLayout(shape=(15,), dtype="i4")
    short[:] = h5py.VirtualSource("src1.h5", "data", shape=(15,))[0:15]
    f.create_virtual_dataset("short_source", short, fillvalue=-7)
    tile = h5py.VirtualLayout(shape=(8, 9), dtype="f8")
    tile[1:8, 1:9] = h5py.VirtualSource("src2.h5", "tile", shape=(7, 8))[0:7, 0:8]
    f.create_virtual_dataset("short_tile", tile, fillvalue=0.5)
# A cycle: a virtual dataset whose source is itself.
with h5py.File(os.path.join(out, "cycle.h5"), "w") as f:
    loop = h5py.VirtualLayout(shape=(5,), dtype="i4")
    loop[:] = h5py.VirtualSource(".", "loop", shape=(5,))
    f.create_virtual_dataset("loop", loop, fillvalue=1)
"#;

#[test]
fn virtual_datasets_read_equal_to_h5py() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path()]);
    for libver in ["earliest", "v110", "latest"] {
        let path = dir.path().join(format!("vds_{libver}.h5"));
        common::assert_equal_to_h5py(&path);
        let f = H5File::open(&path).unwrap();
        let d = f.dataset("/stacked").unwrap();
        assert_eq!(d.layout_kind(), "virtual");
        assert_eq!(d.read().unwrap().as_i32().unwrap()[35], 305);
        // Parts of a virtual dataset: a box and a strided selection.
        let part = d.read_slice(&[1, 2], &[2, 3]).unwrap();
        assert_eq!(part.as_i32().unwrap(), &[102, 103, 104, 202, 203, 204]);
        let gone = f.dataset("/missing_source").unwrap().read().unwrap();
        assert_eq!(&gone.as_i32().unwrap()[9..12], &[109, -9, -9]);
        let Data::F64(v) = f
            .dataset("/same_file_strided")
            .unwrap()
            .read()
            .unwrap()
            .data
        else {
            panic!("f64");
        };
        assert_eq!(&v[..5], &[0.0, 8.0, 16.0, 24.0, 32.0]);
        assert!(v[5].is_nan() && v[11].is_nan());
        assert_eq!(v[7], 1.0);
    }
    // Sources smaller than their mappings: the elements past them take the fill value.
    let f = H5File::open(&dir.path().join("short.h5")).unwrap();
    let short = f.dataset("/short_source").unwrap().read().unwrap();
    let want: Vec<i32> = (100..110).chain([-7; 5]).collect();
    assert_eq!(short.as_i32().unwrap(), &want[..]);
    let src = H5File::open(&dir.path().join("src2.h5")).unwrap();
    let tile = src.dataset("/tile").unwrap().read().unwrap();
    let tile = tile.as_f64().unwrap();
    let got = f.dataset("/short_tile").unwrap().read().unwrap();
    let got = got.as_f64().unwrap();
    for r in 0..8 {
        for c in 0..9 {
            let want = if (1..6).contains(&r) && (1..7).contains(&c) {
                tile[(r - 1) * 6 + (c - 1)]
            } else {
                0.5
            };
            assert_eq!(got[r * 9 + c], want, "short_tile[{r}][{c}]");
        }
    }
    let f = H5File::open(&dir.path().join("cycle.h5")).unwrap();
    let e = f.dataset("/loop").unwrap().read().unwrap_err().to_string();
    assert!(e.contains("nested too deeply"), "{e}");
    // Opened from bytes (no path), relative source names are looked up in the current directory, which has
    // none of them: those elements take the fill value, and own-file mappings still read.
    let bytes = std::fs::read(dir.path().join("vds_latest.h5")).unwrap();
    let f = H5File::from_bytes(bytes).unwrap();
    let v = f.dataset("/stacked").unwrap().read().unwrap();
    assert!(v.as_i32().unwrap().iter().all(|&x| x == -1));
    assert_eq!(
        f.dataset("/irregular")
            .unwrap()
            .read()
            .unwrap()
            .as_i16()
            .unwrap()[..3],
        [9, 10, 11]
    );
}

/// Virtual datasets that grow with their sources, made through h5py's low-level API as the streaming
/// detectors' writers make them: unlimited mappings (an unlimited block, and an unlimited count of 2-element
/// blocks interleaving two sources, with a partial last block), a 2-D one beside a fixed mapping, one whose
/// dataspace message says more than its sources hold, printf-style source files (`p%b.h5`, with a gap after
/// the second) and printf-style dataset names in the same file. Each reads equal to h5py (shape and values),
/// then again after the sources grow and a missing printf source appears.
const GROWING: &str = r#"
import os, sys, h5py, numpy as np
from h5py import h5s, h5p, h5d, h5t
U = h5s.UNLIMITED
out = sys.argv[1]
os.chdir(out)
def vds(name, dims, maxdims, maps, fill=-1):
    with h5py.File(name, "a") as f:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(fill))
        for vsel, fname, dname, sdims, smax, ssel in maps:
            vs = h5s.create_simple(dims, maxdims)
            vs.select_hyperslab(*vsel)
            ss = h5s.create_simple(sdims, smax)
            if ssel is None:
                ss.select_all()
            else:
                ss.select_hyperslab(*ssel)
            dcpl.set_virtual(vs, fname.encode(), dname.encode(), ss)
        h5d.create(f.id, b"v", h5t.STD_I64LE, h5s.create_simple(dims, maxdims), dcpl=dcpl).close()
if sys.argv[2] == "make":
    with h5py.File("src.h5", "w") as f:
        f.create_dataset("a", data=np.arange(7), maxshape=(None,), chunks=(4,))
        f.create_dataset("b", data=np.arange(5) + 100, maxshape=(None,), chunks=(4,))
    with h5py.File("src2.h5", "w") as f:
        f.create_dataset("m", data=np.arange(12).reshape(6, 2), maxshape=(None, 2), chunks=(2, 2))
    vds("block.h5", (0,), (U,), [
        (((0,), (1,), (1,), (U,)), "src.h5", "a", (7,), (U,), ((0,), (1,), (1,), (U,))),
    ])
    vds("inter.h5", (0,), (U,), [
        (((0,), (U,), (4,), (2,)), "src.h5", "a", (7,), (U,), ((0,), (1,), (1,), (U,))),
        (((2,), (U,), (4,), (2,)), "src.h5", "b", (5,), (U,), ((0,), (1,), (1,), (U,))),
    ])
    vds("big.h5", (20,), (U,), [
        (((0,), (1,), (1,), (U,)), "src.h5", "a", (7,), (U,), ((0,), (1,), (1,), (U,))),
    ])
    vds("two.h5", (2, 3), (U, 3), [
        (((0, 0), (1, 1), (1, 1), (U, 2)), "src2.h5", "m", (6, 2), (U, 2), ((0, 0), (1, 1), (1, 1), (U, 2))),
        (((0, 2), (1, 1), (1, 1), (2, 1)), "src.h5", "b", (5,), (U,), ((1,), (1,), (1,), (2,))),
    ])
    for k in [0, 1, 3]:
        with h5py.File("p%d.h5" % k, "w") as f:
            f.create_dataset("data", data=np.arange(3) + 10 * k)
    vds("printf.h5", (0,), (U,), [(((0,), (U,), (3,), (3,)), "p%b.h5", "data", (3,), None, None)])
    with h5py.File("pd.h5", "w") as f:
        f.create_dataset("s0", data=np.arange(4))
        f.create_dataset("s1", data=np.arange(4) + 50)
    vds("pd.h5", (0,), (U,), [(((0,), (U,), (4,), (4,)), ".", "s%b", (4,), None, None)])
    # Where the two views differ: a whole last block (the first-missing view ends at the next block's start),
    # a mapping whose source file is missing, and two sources side by side in a 2-D dataset.
    with h5py.File("src3.h5", "w") as f:
        f.create_dataset("c", data=np.arange(8) + 300, maxshape=(None,), chunks=(4,))
        f.create_dataset("d", data=np.arange(9) + 400, maxshape=(None,), chunks=(4,))
        f.create_dataset("e", data=np.arange(4) + 500, maxshape=(None,), chunks=(4,))
    vds("trail.h5", (0,), (U,), [
        (((0,), (U,), (4,), (2,)), "src3.h5", "c", (8,), (U,), ((0,), (1,), (1,), (U,))),
        (((2,), (U,), (4,), (2,)), "src3.h5", "d", (9,), (U,), ((0,), (1,), (1,), (U,))),
    ])
    vds("missing.h5", (0,), (U,), [
        (((0,), (1,), (1,), (U,)), "src3.h5", "c", (8,), (U,), ((0,), (1,), (1,), (U,))),
        (((3,), (1,), (1,), (U,)), "nowhere.h5", "x", (0,), (U,), ((0,), (1,), (1,), (U,))),
    ])
    # A printf-style column of 3-row blocks (q0-q2: 9 rows) beside a growing one (4 rows, then 6): the
    # first-missing view cuts the second block after its first row, then takes the first two blocks whole;
    # and 2x2 blocks (r0-r2, 6 rows) beside a column of 5 rows, then 7: the third block cut after one row.
    for k in range(3):
        with h5py.File("q%d.h5" % k, "w") as f:
            f.create_dataset("data", data=np.arange(3) + 600 + 10 * k)
            f.create_dataset("sq", data=(np.arange(4) + 700 + 10 * k).reshape(2, 2))
    vds("cut.h5", (0, 2), (U, 2), [
        (((0, 0), (U, 1), (3, 1), (3, 1)), "q%b.h5", "data", (3,), None, None),
        (((0, 1), (1, 1), (1, 1), (U, 1)), "src3.h5", "e", (4,), (U,), ((0,), (1,), (1,), (U,))),
    ])
    vds("cut2.h5", (0, 3), (U, 3), [
        (((0, 0), (U, 1), (2, 1), (2, 2)), "q%b.h5", "sq", (2, 2), None, None),
        (((0, 2), (1, 1), (1, 1), (U, 1)), "src.h5", "b", (5,), (U,), ((0,), (1,), (1,), (U,))),
    ])
    vds("cols.h5", (0, 2), (U, 2), [
        (((0, 0), (1, 1), (1, 1), (U, 1)), "src3.h5", "d", (9,), (U,), ((0,), (1,), (1,), (U,))),
        (((0, 1), (1, 1), (1, 1), (U, 1)), "src3.h5", "e", (4,), (U,), ((0,), (1,), (1,), (U,))),
    ])
else:
    with h5py.File("src.h5", "a") as f:
        f["a"].resize((11,))
        f["a"][7:] = [70, 71, 72, 73]
        f["b"].resize((9,))
        f["b"][5:] = [105, 106, 107, 108]
    with h5py.File("src2.h5", "a") as f:
        f["m"].resize((9, 2))
        f["m"][6:] = [[60, 61], [62, 63], [64, 65]]
    with h5py.File("p2.h5", "w") as f:
        f.create_dataset("data", data=np.arange(3) + 20)
    with h5py.File("pd.h5", "a") as f:
        f.create_dataset("s2", data=np.arange(4) + 90)
    with h5py.File("src3.h5", "a") as f:
        f["e"].resize((6,))
        f["e"][4:] = [504, 505]
"#;

/// Each growing virtual dataset in libhdf5's first-missing view (each file opened afresh: libhdf5 shares an
/// open dataset's view between opens): its shape and values, as JSON.
const FIRST_MISSING: &str = r#"
import json, sys, h5py, numpy as np
from h5py import h5p, h5d, h5f
out = {}
for path in sys.argv[2:]:
    fid = h5f.open(path.encode(), h5f.ACC_RDONLY)
    dapl = h5p.create(h5p.DATASET_ACCESS)
    dapl.set_virtual_view(h5d.VDS_FIRST_MISSING)
    d = h5d.open(fid, b"v", dapl=dapl)
    a = np.empty(d.shape, "<i8")
    d.read(h5py.h5s.ALL, h5py.h5s.ALL, a)
    out[path] = [list(d.shape), a.ravel().tolist()]
open(sys.argv[1], "w").write(json.dumps(out))
"#;

#[test]
fn growing_virtual_datasets_read_equal_to_h5py() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "block", "inter", "big", "two", "printf", "pd", "trail", "missing", "cols", "cut", "cut2",
    ];
    let made: [&[u64]; 11] = [
        &[7],
        &[13],
        &[7],
        &[6, 3],
        &[6],
        &[8],
        &[19],
        &[8],
        &[9, 2],
        &[9, 2],
        &[6, 3],
    ];
    let grown: [&[u64]; 11] = [
        &[11],
        &[21],
        &[11],
        &[9, 3],
        &[12],
        &[12],
        &[19],
        &[8],
        &[9, 2],
        &[9, 2],
        &[9, 3],
    ];
    // The first-missing view's shapes: the smallest reach of the growing mappings (a whole last block
    // reaching to the next block's start, a missing source nowhere), never less than the fixed ones'.
    let first: [&[u64]; 11] = [
        &[7],
        &[11],
        &[7],
        &[6, 3],
        &[6],
        &[8],
        &[16],
        &[0],
        &[4, 2],
        &[4, 2],
        &[5, 3],
    ];
    let first_grown: [&[u64]; 11] = [
        &[11],
        &[19],
        &[11],
        &[9, 3],
        &[12],
        &[12],
        &[16],
        &[0],
        &[6, 2],
        &[6, 2],
        &[6, 3],
    ];
    for (step, shapes, first) in [("make", made, first), ("grow", grown, first_grown)] {
        common::run_python(GROWING, &[dir.path(), std::path::Path::new(step)]);
        let paths: Vec<_> = names
            .iter()
            .map(|n| dir.path().join(format!("{n}.h5")))
            .collect();
        let json = dir.path().join("first.json");
        let mut args: Vec<&std::path::Path> = vec![&json];
        args.extend(paths.iter().map(|p| p.as_path()));
        common::run_python(FIRST_MISSING, &args);
        let theirs = common::read_json(&json);
        for ((name, path), (shape, first)) in names.iter().zip(&paths).zip(shapes.iter().zip(first))
        {
            // Shape and every value as h5py reads them.
            common::assert_equal_to_h5py(path);
            let f = H5File::open(path).unwrap();
            assert_eq!(
                f.dataset("/v").unwrap().shape(),
                *shape,
                "{name} after {step}"
            );
            // The first-missing view: shape and values as libhdf5 gives them in it.
            let d = f.dataset_with_view("/v", VdsView::FirstMissing).unwrap();
            assert_eq!(d.shape(), first, "{name} after {step}, first missing");
            let want = &theirs[path.to_str().unwrap()];
            assert_eq!(want[0], serde_json::json!(first), "{name}: libhdf5's shape");
            let got = d.read().unwrap();
            assert_eq!(
                serde_json::json!(got.as_i64().unwrap()),
                want[1],
                "{name} after {step}, first missing"
            );
        }
    }
    let f = H5File::open(&dir.path().join("inter.h5")).unwrap();
    let v = f.dataset("/v").unwrap().read().unwrap();
    // a at 0,1 4,5 8,9 12,13 16,17 20; b at 2,3 6,7 10,11 14,15 18.
    assert_eq!(
        v.as_i64().unwrap(),
        &[0, 1, 100, 101, 2, 3, 102, 103, 4, 5, 104, 105, 6, 70, 106, 107, 71, 72, 108, -1, 73]
    );
}

/// The growing virtual datasets' files with bits flipped or cut short (their sources intact): opening and
/// reading each, in either view, gives values or an error, never a panic, and within a second.
#[test]
fn damaged_growing_virtual_datasets_never_panic() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(GROWING, &[dir.path(), std::path::Path::new("make")]);
    let mut rng = common::XorShift(0x005e_ed0f_0dd5);
    let variant = dir.path().join("variant.h5");
    let mut read = 0;
    for name in [
        "inter", "two", "printf", "pd", "big", "trail", "missing", "cols", "cut", "cut2",
    ] {
        let good = std::fs::read(dir.path().join(format!("{name}.h5"))).unwrap();
        for v in 0..1000 {
            let mut bytes = good.clone();
            if rng.below(5) == 0 {
                bytes.truncate(rng.below(bytes.len() as u64) as usize);
            } else {
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(bytes.len() as u64) as usize;
                    bytes[at] ^= 1 << rng.below(8);
                }
            }
            std::fs::write(&variant, &bytes).unwrap();
            let start = std::time::Instant::now();
            // Both views: libhdf5's default and the first-missing one.
            let r = std::panic::catch_unwind(|| {
                H5File::open(&variant).is_ok_and(|f| {
                    let first = f.dataset_with_view("/v", VdsView::FirstMissing);
                    let _ = first.and_then(|d| d.read());
                    f.dataset("/v").and_then(|d| d.read()).is_ok()
                })
            });
            assert!(r.is_ok(), "{name} variant {v}: panic");
            read += usize::from(r.unwrap_or(false));
            assert!(
                start.elapsed() < std::time::Duration::from_secs(1),
                "{name} variant {v}: {:?}",
                start.elapsed()
            );
        }
    }
    assert!(read > 0);
}
