//! Floats wider than f64, written by h5py: numpy's `longdouble` (x87 80-bit extended in 16 bytes, the
//! leading mantissa bit stored), the same big-endian, and IEEE binary128 (a user-defined type). We read them as
//! f64 rounded to nearest as IEEE rounds (ties to even, values that round past the largest f64 to infinity),
//! and every value equals what libhdf5's own conversion to `double` gives, but for two that libhdf5's software
//! conversion (big-endian, binary128) rounds its own way: a tie it rounds up (its hardware conversion of
//! native `long double`, like us, to even), and a value just below 2^1024 it gives as the largest f64.

mod common;

use clawhdf5_format::{Data, H5File};

const MAKE: &str = r#"
import json, sys, h5py, numpy as np
t = h5py.h5t
rng = np.random.default_rng(8)
ld = (rng.normal(size=300) * np.logspace(-300, 300, 300)).astype(np.longdouble)
ld = ld * (1 + np.longdouble(2) ** -60)  # bits beyond f64's 53
ld[:8] = [0, -0.0, np.inf, -np.inf, 1.5, np.longdouble(2) ** 16000, np.longdouble(2) ** -16440, np.longdouble(1) / 3]
ld[8] = 1 + np.longdouble(2) ** -53  # a tie: to even
ld[9] = np.nan
def quad(x):
    # IEEE binary128 bits of a few exact values (sign, 15-bit exponent, 112-bit fraction), little-endian.
    out = []
    for sign, exp, frac in x:
        w = (sign << 127) | (exp << 112) | frac
        out.append(w.to_bytes(16, "little"))
    return np.frombuffer(b"".join(out), dtype="V16")
q = quad([(0, 16383, 1 << 111), (1, 16384, 0), (0, 16381, int("5" * 28, 16)), (0, 32767, 0), (0, 0, 1), (0, 16383 + 1023, (1 << 112) - 1)])
with h5py.File(sys.argv[1], "w") as f:
    f["longdouble"] = ld
    be = t.NATIVE_LDOUBLE.copy()
    be.set_order(t.ORDER_BE)
    d = h5py.h5d.create(f.id, b"longdouble_be", be, h5py.h5s.create_simple(ld.shape))
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, ld)
    qt = t.IEEE_F64LE.copy()
    qt.set_size(16)
    qt.set_precision(128)
    qt.set_fields(127, 112, 15, 0, 112)
    qt.set_ebias(16383)
    d = h5py.h5d.create(f.id, b"quad", qt, h5py.h5s.create_simple(q.shape))
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, q, mtype=qt)
    want = {}
    for name in ["longdouble", "longdouble_be", "quad"]:
        d = h5py.h5d.open(f.id, name.encode())
        v = np.zeros(d.shape, dtype="f8")
        d.read(h5py.h5s.ALL, h5py.h5s.ALL, v, mtype=t.NATIVE_DOUBLE)
        want[name] = [x if np.isfinite(x) else str(x) for x in v.tolist()]
with open(sys.argv[1] + ".json", "w") as g:
    json.dump(want, g)
"#;

#[test]
fn wider_than_f64_floats_read_as_libhdf5_converts_them() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.h5");
    common::run_python(MAKE, &[&path]);
    let want = common::read_json(&dir.path().join("wide.h5.json"));
    let f = H5File::open(&path).unwrap();
    for name in ["longdouble", "longdouble_be", "quad"] {
        let Data::F64(got) = f.dataset(&format!("/{name}")).unwrap().read().unwrap().data else {
            panic!("{name}: f64");
        };
        // The longdouble datasets' element 8 is 1 + 2^-53, half-way between 1 and the next f64; the quad
        // dataset's element 5 is (2 - 2^-112) * 2^1023, nearer 2^1024 than the largest f64.
        let own_way = if name == "quad" { 5 } else { 8 };
        let want_own = if name == "quad" { f64::INFINITY } else { 1.0 };
        assert_eq!(got[own_way], want_own, "{name}[{own_way}]");
        common::assert_f64s_equal(name, &got, &want[name], &[own_way]);
    }
}
