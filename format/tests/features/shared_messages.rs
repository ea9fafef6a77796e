//! Files whose creation property list turns on shared object header messages (SOHM): libhdf5 keeps each
//! distinct dataspace, datatype, fill value, filter pipeline and attribute once, in shared-message heaps
//! indexed by lists or v2 B-trees, and object headers point there. Written by h5py's libhdf5 (through ctypes:
//! h5py has no keyword for it) under three libvers, with one index for every type and with an index per type;
//! every object reads equal to h5py's view, and our appender adds to such a file without breaking it for h5py.

use crate::common;

use clawhdf5_format::{Array, Data, DatasetOptions, FileAppender, H5File};

const MAKE: &str = r#"
import ctypes, glob, os, sys, h5py, numpy as np
libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
lib = ctypes.CDLL(libs[0] if libs else h5py.h5.__file__)

def fcpl(indexes, phase):
    p = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    assert lib.H5Pset_shared_mesg_nindexes(ctypes.c_int64(p.id), ctypes.c_uint(len(indexes))) >= 0
    for i, (types, min_size) in enumerate(indexes):
        assert lib.H5Pset_shared_mesg_index(ctypes.c_int64(p.id), ctypes.c_uint(i), ctypes.c_uint(types), ctypes.c_uint(min_size)) >= 0
    # List indexes up to `max_list` messages, B-trees from `min_btree`.
    max_list, min_btree = phase
    assert lib.H5Pset_shared_mesg_phase_change(ctypes.c_int64(p.id), ctypes.c_uint(max_list), ctypes.c_uint(min_btree)) >= 0
    return p

def fill(f):
    compound = np.dtype([("id", "<i4"), ("w", "<f8")])
    f["named"] = compound
    for i in range(12):
        d = f.create_dataset("d%02d" % i, data=np.arange(20, dtype="f8") + i, chunks=(5,), compression="gzip", fillvalue=-1.5)
        d.attrs["units"] = "meters"
        d.attrs["scale"] = np.arange(3.0)
        d.attrs["index"] = i
        rows = np.zeros(4, dtype=compound)
        rows["id"] = np.arange(4) + i
        f.create_dataset("rows%02d" % i, data=rows, dtype=f["named"])
    g = f.create_group("many_attrs")
    for i in range(30):
        g.attrs["a%02d" % i] = np.arange(4, dtype="i2") * i
        g.attrs["s%02d" % i] = "same text"
    f.create_dataset("strings", data=np.array(["x", "yy", "zzz"], dtype=h5py.string_dtype()))

out = sys.argv[1]
layouts = {
    # Type flags are 1 << message type: dataspace 0x2, datatype 0x8, fill value 0x20, filter pipeline 0x800,
    # attribute 0x1000. One index for every type, messages of any size, lists up to 4 then B-trees.
    "one_index": ([(0x182A, 1)], (4, 2)),
    # An index per type, attributes only from 40 bytes, everything kept in lists.
    "per_type": ([(0x2, 1), (0x8, 1), (0x20 | 0x800, 1), (0x1000, 40)], (50, 40)),
}
for name, (indexes, phase) in layouts.items():
    for libver in ["earliest", "v110", "latest"]:
        fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        fapl.set_libver_bounds(getattr(h5py.h5f, "LIBVER_" + libver.upper()), h5py.h5f.LIBVER_LATEST)
        path = os.path.join(out, "%s_%s.h5" % (name, libver))
        fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl(indexes, phase), fapl=fapl)
        with h5py.File(fid) as f:
            fill(f)
"#;

#[test]
fn shared_message_files_read_equal_to_h5py() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path()]);
    for name in ["one_index", "per_type"] {
        for libver in ["earliest", "v110", "latest"] {
            let path = dir.path().join(format!("{name}_{libver}.h5"));
            common::assert_equal_to_h5py(&path);
            let f = H5File::open(&path).unwrap();
            assert_eq!(
                f.attr("/d07", "scale").unwrap().as_f64().unwrap(),
                &[0.0, 1.0, 2.0]
            );
            assert_eq!(f.attr_names("/many_attrs").unwrap().len(), 60);
        }
    }
    // Our appender adds to such a file; h5py still reads it, and keeps writing to it.
    let path = dir.path().join("one_index_latest.h5");
    let mut a = FileAppender::open(&path).unwrap();
    a.write_dataset(
        "/appended",
        Array::vector(Data::I32(vec![1, 2, 3])),
        DatasetOptions::default(),
    )
    .unwrap();
    a.set_attr("/d03", "added", Array::vector(Data::F64(vec![0.5])))
        .unwrap();
    a.set_attr("/many_attrs", "added", Array::vector(Data::I32(vec![9])))
        .unwrap();
    a.commit().unwrap();
    common::run_python(
        "import sys, h5py, numpy as np\n\
         with h5py.File(sys.argv[1], 'a') as f:\n\
         \x20   f['after'] = np.arange(3.0)\n\
         \x20   f['after'].attrs['units'] = 'meters'\n\
         \x20   f['many_attrs'].attrs['more'] = 'same text'\n\
         \x20   assert f['d03'].attrs['added'][0] == 0.5 and f['appended'][2] == 3\n",
        &[&path],
    );
    common::assert_equal_to_h5py(&path);
}
