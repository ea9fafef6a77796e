//! Robustness: ≥ 20,000 seeded mutations and truncations of corpus files and of files we write.
//! Every variant must open-and-walk without panicking, within 1 s, and without any single
//! allocation larger than a bound proportional to the file.

mod common;

use clawhdf5_format::{EntryKind, H5File};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Tracks the largest single allocation.
struct Tracking;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates to the system allocator; only records sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: p was allocated by System with l.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LARGEST.fetch_max(n, Ordering::Relaxed);
        // SAFETY: p was allocated by System with l.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

fn walk(f: &H5File, path: &str, seen: &mut HashSet<u64>, budget: &mut usize) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    match f.resolve(path) {
        Ok(a) if seen.insert(a) => {}
        _ => return,
    }
    if let Ok(names) = f.attr_names(path) {
        for n in names.iter().take(64) {
            let _ = f.attr(path, n);
        }
    }
    let Ok(entries) = f.list(path) else { return };
    for e in entries.into_iter().take(256) {
        let child = format!("{}/{}", path.trim_end_matches('/'), e.name);
        match e.kind {
            EntryKind::Group => walk(f, &child, seen, budget),
            EntryKind::Dataset => {
                if let Ok(d) = f.dataset(&child) {
                    let _ = d.read();
                    let _ = d.read_strings();
                    if !d.shape().is_empty() && d.shape()[0] > 1 {
                        let _ = d.read_rows(1, 1);
                        // Strided selection and in-place read: the other read paths.
                        let r = d.shape().len();
                        let mut stride = vec![1; r];
                        let mut count = d.shape().to_vec();
                        stride[0] = 2;
                        count[0] = d.shape()[0].div_ceil(2);
                        let _ = d.read_hyperslab(&vec![0; r], &stride, &count, &vec![1; r]);
                        let n = d.shape().iter().try_fold(1u64, |a, &x| a.checked_mul(x));
                        if let Some(n) = n.filter(|&n| n <= 1 << 16) {
                            let mut buf = vec![0f64; n as usize];
                            let _ = d.read_into(&mut buf);
                        }
                    }
                }
                let _ = f.attr_names(&child);
            }
            _ => {}
        }
    }
}

static OPENED: AtomicUsize = AtomicUsize::new(0);
static OBJECTS: AtomicUsize = AtomicUsize::new(0);

fn exercise(bytes: Vec<u8>) {
    if let Ok(f) = H5File::from_bytes(bytes) {
        OPENED.fetch_add(1, Ordering::Relaxed);
        let mut seen = HashSet::new();
        let mut budget = 2000;
        walk(&f, "/", &mut seen, &mut budget);
        OBJECTS.fetch_add(seen.len(), Ordering::Relaxed);
    }
}

fn ours() -> Vec<u8> {
    common::small_file().to_bytes().unwrap()
}

/// A small file of chunks through every codec this reader decodes beyond deflate (szip, scale-offset, N-bit, bzip2,
/// LZF, zstd, LZ4, bitshuffle, Blosc, Blosc2 plain and b2nd (also in chunks far beyond the extent), ZFP through H5Z-ZFP and Blosc2), a virtual dataset, an external one, region and
/// HDF5 1.12 references, and HDF5 2.0's complex, bfloat16 and FP8 types, written by h5py with hdf5plugin with shared object
/// header messages on, so that mutations reach those decoders too.
fn codecs_seed() -> Option<Vec<u8>> {
    if !common::have_python_module("hdf5plugin") {
        return None;
    }
    const MAKE: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
sys.path.insert(0, sys.argv[2])
from relaxed import relaxed_fapl
x = (np.arange(400) % 37).astype("i4")
y = np.linspace(0, 1, 300)
import ctypes, glob, os
libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
lib = ctypes.CDLL(libs[0] if libs else h5py.h5.__file__)
# Shared object header messages (one index for every shareable type, lists then B-trees), so that mutations
# reach the shared-message table and heaps too.
fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
assert lib.H5Pset_shared_mesg_nindexes(ctypes.c_int64(fcpl.id), ctypes.c_uint(1)) >= 0
assert lib.H5Pset_shared_mesg_index(ctypes.c_int64(fcpl.id), ctypes.c_uint(0), ctypes.c_uint(0x182A), ctypes.c_uint(1)) >= 0
assert lib.H5Pset_shared_mesg_phase_change(ctypes.c_int64(fcpl.id), ctypes.c_uint(4), ctypes.c_uint(2)) >= 0
with h5py.File(h5py.h5f.create(sys.argv[1].encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl)) as f:
    f.create_dataset("so", data=x, chunks=(128,), scaleoffset=0)
    f.create_dataset("sof", data=y, chunks=(128,), scaleoffset=3)
    f.create_dataset("lzf", data=x, chunks=(128,), compression="lzf")
    f.create_dataset("zstd", data=x, chunks=(128,), **hdf5plugin.Zstd())
    f.create_dataset("bzip2", data=y, chunks=(128,), **hdf5plugin.BZip2(blocksize=1))
    f.create_dataset("lz4", data=y, chunks=(128,), **hdf5plugin.LZ4(nbytes=256))
    f.create_dataset("bs", data=x, chunks=(200,), **hdf5plugin.Bitshuffle())
    f.create_dataset("bsz", data=y, chunks=(200,), **hdf5plugin.Bitshuffle(cname="zstd"))
    for c in ["blosclz", "lz4", "snappy", "zlib", "zstd"]:
        f.create_dataset("blosc_" + c, data=y, chunks=(300,), **hdf5plugin.Blosc(cname=c, shuffle=hdf5plugin.Blosc.BITSHUFFLE if c == "zlib" else hdf5plugin.Blosc.SHUFFLE))
    f.create_dataset("szip_nn", data=x, chunks=(128,), compression="szip", compression_opts=("nn", 8))
    f.create_dataset("szip_ec", data=y, chunks=(128,), compression="szip", compression_opts=("ec", 16))
    f.create_dataset("blosc2", data=y, chunks=(300,), **hdf5plugin.Blosc2(cname="zstd"))
    f.create_dataset("b2nd", data=np.arange(600.0).reshape(20, 30), chunks=(10, 16), **hdf5plugin.Blosc2(cname="lz4", filters=hdf5plugin.Blosc2.BITSHUFFLE))
    # Chunks far beyond the extent (only the rows within it are decoded).
    f.create_dataset("blosc2_far", data=y[:700], maxshape=(None,), chunks=(100000,), **hdf5plugin.Blosc2(cname="zstd"))
    f.create_dataset("b2nd_far", data=np.arange(390.0).reshape(30, 13), maxshape=(None, 13), chunks=(20000, 13), **hdf5plugin.Blosc2(cname="lz4"))
    # ZFP (H5Z-ZFP): fixed rate over partial 2-D blocks, reversible integers in 3-D, fixed precision in 1-D.
    f.create_dataset("zfp_rate", data=np.sin(np.arange(600.0)).reshape(20, 30), chunks=(10, 15), **hdf5plugin.Zfp(rate=10))
    f.create_dataset("zfp_rev", data=x.reshape(4, 10, 10), chunks=(4, 5, 10), **hdf5plugin.Zfp(reversible=True))
    f.create_dataset("zfp_prec", data=y.astype("f4"), chunks=(150,), **hdf5plugin.Zfp(precision=16))
    # FCIDECOMP (JPEG-LS): a 2-D chunked image and two components in one 3-D chunk.
    img = ((np.indices((20, 24)).sum(axis=0) * 37) % 900 + 100).astype("u2")
    f.create_dataset("fci", data=img, chunks=(10, 24), **hdf5plugin.FciDecomp())
    f.create_dataset("fci_planes", data=np.stack([img, img[::-1]]), chunks=(2, 20, 24), **hdf5plugin.FciDecomp())
    # Blosc2's ZFP codec in a b2nd frame (when python-blosc2 is there to make one).
    try:
        import blosc2
        z = np.cos(np.arange(96.0)).reshape(8, 12)
        zd = f.create_dataset("b2nd_zfp", shape=z.shape, dtype=z.dtype, chunks=z.shape, compression=32026, compression_opts=(1, 0, 8, z.nbytes, 5, 0, 5, 2, 8, 12))
        zd.id.write_direct_chunk((0, 0), blosc2.asarray(z, chunks=(8, 12), blocks=(4, 8), cparams=dict(codec=blosc2.Codec.ZFP_PREC, codec_meta=10, filters=[])).to_cframe())
    except ImportError:
        pass
    # A virtual dataset over two of them (same file: strided and plain selections, a fill value).
    vds = h5py.VirtualLayout(shape=(2, 100), dtype="i4")
    vds[0] = h5py.VirtualSource(".", "so", shape=(400,))[::4]
    vds[1, :50] = h5py.VirtualSource(".", "lzf", shape=(400,))[100:150]
    f.create_virtual_dataset("vds", vds, fillvalue=-1)
    # Region references: a box, a strided hyperslab, the whole dataset and a null one.
    regions = [f["so"].regionref[10:20], f["so"].regionref[::7], f["so"].regionref[...], h5py.RegionReference()]
    f.create_dataset("regions", data=regions, dtype=h5py.regionref_dtype)
    # External data files (gone by the time the variants are read: the list is parsed, the read fails).
    f.create_dataset("ext", shape=(10,), dtype="i4", external=[(sys.argv[1] + ".bin", 0, 40)])
# N-bit: a 6-bit integer at bit offset 2 (HDF5 2.0 wants the unused-bits check relaxed for it).
fid = h5py.h5f.open(sys.argv[1].encode(), h5py.h5f.ACC_RDWR, fapl=relaxed_fapl())
tid = h5py.h5t.STD_I16LE.copy()
tid.set_precision(6)
tid.set_offset(2)
dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
dcpl.set_chunk((128,))
dcpl.set_filter(h5py.h5z.FILTER_NBIT)
d = h5py.h5d.create(fid, b"nbit", tid, h5py.h5s.create_simple((400,)), dcpl=dcpl)
d.write(h5py.h5s.ALL, h5py.h5s.ALL, (np.arange(400) % 64 - 32).astype("i2"))
d.close()
# HDF5 2.0's types (not named by h5py: taken from its libhdf5): complex numbers, bfloat16, FP8.
lib.H5Tcopy.restype = ctypes.c_int64
def predefined(name, cls):
    return cls(lib.H5Tcopy(ctypes.c_int64(ctypes.c_int64.in_dll(lib, "H5T_" + name + "_g").value)))
t = h5py.h5t
cx = predefined("COMPLEX_IEEE_F32BE", t.TypeComplexID)
bf = predefined("FLOAT_BFLOAT16LE", t.TypeFloatID)
for name, ftype, data, mtype in [
    (b"complex", cx, (np.arange(50) + 1j * np.arange(50)[::-1]).astype("c8"), t.NATIVE_FLOAT_COMPLEX),
    (b"bf16", bf, np.arange(0, 65536, 331, dtype="u2"), bf),
    (b"fp8", predefined("FLOAT_F8E5M2", t.TypeFloatID), np.arange(256, dtype="u1"), predefined("FLOAT_F8E5M2", t.TypeFloatID)),
]:
    d = h5py.h5d.create(fid, name, ftype, h5py.h5s.create_simple(data.shape))
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype=mtype)
    d.close()
ct = t.create(t.COMPOUND, 10)
ct.insert(b"z", 0, cx)
ct.insert(b"w", 8, bf)
d = h5py.h5d.create(fid, b"cx_compound", ct, h5py.h5s.create_simple((20,)))
d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.zeros(20, dtype=np.dtype([("z", ">c8"), ("w", "<u2")])), mtype=ct)
d.close()
# HDF5 1.12 references (H5T_STD_REF): an object inline, a region in the global heap, a null one.
hid = ctypes.c_int64
refs = ((ctypes.c_uint8 * 64) * 3)()
assert lib.H5Rcreate_object(hid(fid.id), b"/so", hid(0), ctypes.byref(refs[0])) >= 0
region = h5py.h5s.create_simple((400,))
region.select_hyperslab((10,), (5,))
assert lib.H5Rcreate_region(hid(fid.id), b"/so", hid(region.id), hid(0), ctypes.byref(refs[1])) >= 0
std_ref = hid.in_dll(lib, "H5T_STD_REF_g").value
three = h5py.h5s.create_simple((3,))
lib.H5Dcreate2.restype = hid
did = lib.H5Dcreate2(hid(fid.id), b"std_refs", hid(std_ref), hid(three.id), hid(0), hid(0), hid(0))
assert did >= 0 and lib.H5Dwrite(hid(did), hid(std_ref), hid(0), hid(0), hid(0), refs) >= 0
lib.H5Dclose(hid(did))
for r in refs[:2]:
    lib.H5Rdestroy(ctypes.byref(r))
fid.close()
"#;
    let dir = tempfile::tempdir().ok()?;
    let path = dir.path().join("codecs.h5");
    common::run_python(MAKE, &[&path, &common::script("")]);
    std::fs::read(&path).ok()
}

/// h5py's files of 4-byte addresses and/or lengths (4/4 and 8/4 in the latest format, 4/8 in the earliest):
/// every index, heap and B-tree kind with narrow fields, for the mutations to reach.
fn narrow_field_seeds() -> Vec<(String, Vec<u8>)> {
    if !common::have_python_module("h5py") {
        return Vec::new();
    }
    const MAKE: &str = r#"
import sys, os, h5py, numpy as np
for name, so, sl, latest in [("4-4-latest", 4, 4, True), ("4-8-earliest", 4, 8, False), ("8-4-latest", 8, 4, True)]:
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_sizes(so, sl)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_LATEST if latest else h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
    path = os.path.join(sys.argv[1], name + ".h5").encode()
    with h5py.File(h5py.h5f.create(path, h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)) as f:
        x = np.arange(60, dtype="<i4")
        f.create_dataset("contig", data=x)
        f.create_dataset("fixed", data=x.reshape(6, 10), chunks=(2, 5), compression="gzip")
        f.create_dataset("grow1", data=x, maxshape=(None,), chunks=(8,), shuffle=True)
        f.create_dataset("grow2", data=x.reshape(6, 10), maxshape=(None, None), chunks=(4, 4))
        f.create_dataset("one", data=x, chunks=(60,))
        f.create_dataset("s", data=np.array(["s%d" % i for i in range(12)], dtype=object), dtype=h5py.string_dtype())
        f.create_dataset("seq", data=np.array([np.arange(i, dtype="<i2") for i in range(1, 5)], dtype=object),
                         dtype=h5py.vlen_dtype("<i2"))
        for i in range(10):
            f.create_group("many/g%d" % i).attrs["n"] = i
            f["many"].attrs["a%d" % i] = np.arange(i + 1.0)
        f["ref"] = f["contig"].ref
        f.attrs["to"] = f["many"].ref
        f.create_dataset("regions", data=[f["fixed"].regionref[1:3, 2:4]], dtype=h5py.regionref_dtype)
"#;
    let Ok(dir) = tempfile::tempdir() else {
        return Vec::new();
    };
    common::run_python(MAKE, &[dir.path()]);
    ["4-4-latest", "4-8-earliest", "8-4-latest"]
        .iter()
        .map(|n| {
            let bytes = std::fs::read(dir.path().join(format!("{n}.h5"))).unwrap();
            (format!("h5py {n} fields"), bytes)
        })
        .collect()
}

#[test]
fn mutated_files_never_panic_hang_or_overallocate() {
    let mut seeds: Vec<(String, Vec<u8>)> = vec![("ours".into(), ours())];
    if let Some(b) = codecs_seed() {
        seeds.push(("codecs (h5py + hdf5plugin)".into(), b));
    }
    seeds.extend(narrow_field_seeds());
    for sub in ["h5py", "pytables"] {
        let dir = common::shared().join("hdf5-corpus").join(sub);
        if let Ok(rd) = std::fs::read_dir(&dir) {
            let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
            paths.sort();
            for p in paths {
                let b = std::fs::read(&p).unwrap();
                if b.len() <= 32 * 1024 {
                    seeds.push((p.file_name().unwrap().to_string_lossy().into(), b));
                }
            }
        }
    }
    if seeds.len() < 2 {
        assert!(!common::in_ci(), "corpus missing under CI");
    }
    std::panic::set_hook(Box::new(|_| {}));
    // Longer hunts: CLAWHDF5_MUTATION_SEED=N CLAWHDF5_MUTATION_VARIANTS=M (CI runs the fixed seed).
    let knob = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let mut rng = common::XorShift(knob("CLAWHDF5_MUTATION_SEED").map_or(
        0x5eed_1234_abcd_ef01,
        |s| {
            // Spread small seeds over the generator's state (which must not be 0).
            s.wrapping_mul(0x9e37_79b9_7f4a_7c15).max(1)
        },
    ));
    let wanted = knob("CLAWHDF5_MUTATION_VARIANTS").map_or(20_000, |v| v.max(20_000) as usize);
    let mut variants = 0usize;
    let mut failures = Vec::new();
    let per_seed = wanted.div_ceil(seeds.len()) + 1;
    for (name, seed) in &seeds {
        // Truncation at every 1 KiB, then mutations; each variant is made when its turn comes, so a long
        // hunt holds one at a time.
        let cuts = seed.len().div_ceil(1024);
        for k in 0..cuts + per_seed {
            let b = if k < cuts {
                seed[..k * 1024].to_vec()
            } else {
                let mut b = seed.clone();
                let n = 1 + rng.below(8);
                for _ in 0..n {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] = match rng.below(4) {
                        0 => rng.next() as u8,
                        1 => b[i] ^ (1 << rng.below(8)),
                        2 => 0xff,
                        _ => 0,
                    };
                }
                b
            };
            variants += 1;
            let bound = b.len() * 1100 + (64 << 20) + (1 << 20);
            LARGEST.store(0, Ordering::Relaxed);
            let t = Instant::now();
            let r = std::panic::catch_unwind(|| exercise(b.clone()));
            let took = t.elapsed();
            let largest = LARGEST.load(Ordering::Relaxed);
            let failure = if r.is_err() {
                Some("panic".to_string())
            } else if took > Duration::from_secs(1) {
                Some(format!("took {took:?}"))
            } else if largest > bound {
                Some(format!("allocation of {largest} bytes"))
            } else {
                None
            };
            if let Some(what) = failure {
                // Kept for reproduction: `exercise` on these bytes fails the same way.
                let dump = std::env::temp_dir().join(format!("clawhdf5-mutant-{variants}.h5"));
                let _ = std::fs::write(&dump, &b);
                failures.push(format!(
                    "{name} variant {variants}: {what} (saved {})",
                    dump.display()
                ));
            }
        }
    }
    let _ = std::panic::take_hook();
    eprintln!(
        "{variants} variants, {} opened, {} objects visited",
        OPENED.load(Ordering::Relaxed),
        OBJECTS.load(Ordering::Relaxed)
    );
    assert!(variants >= 20_000, "only {variants} variants");
    assert!(
        failures.is_empty(),
        "{} failures of {variants}:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
