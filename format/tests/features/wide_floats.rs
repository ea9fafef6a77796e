//! Floats wider than f64, written by h5py: numpy's `longdouble` (x87 80-bit extended in 16 bytes, the
//! leading mantissa bit stored), the same big-endian, IEEE binary128 and binary256 (user-defined types, the
//! latter in either byte order), and others wider than 16 bytes whose rows we append. We read them as
//! f64 rounded to nearest as IEEE rounds (ties to even, values that round past the largest f64 to infinity),
//! and every value equals what libhdf5's own conversion to `double` gives, but for two that libhdf5's software
//! conversion (big-endian, binary128) rounds its own way: a tie it rounds up (its hardware conversion of
//! native `long double`, like us, to even), and a value just below 2^1024 it gives as the largest f64.

use crate::common;

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
def octuple(x, be=False):
    # IEEE binary256 bits (sign, 19-bit exponent, 236-bit fraction) in 32 bytes.
    out = []
    for sign, exp, frac in x:
        w = (sign << 255) | (exp << 236) | frac
        out.append(w.to_bytes(32, "big" if be else "little"))
    return np.frombuffer(b"".join(out), dtype="V32")
import random
random.seed(5)
OB = 262143
ov = [(0, 0, 0), (1, 0, 0), (0, 2 * OB + 1, 0), (1, OB, 0), (0, OB - 1, 1 << 235)]
ov += [(random.getrandbits(1), OB + random.randint(-1000, 1000), random.getrandbits(236)) for _ in range(300)]
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
    for name, order in [("octuple", t.ORDER_LE), ("octuple_be", t.ORDER_BE)]:
        ot = t.IEEE_F64LE.copy()
        ot.set_size(32)
        ot.set_precision(256)
        ot.set_fields(255, 236, 19, 0, 236)
        ot.set_ebias(OB)
        ot.set_order(order)
        o = octuple(ov, be=order == t.ORDER_BE)
        d = h5py.h5d.create(f.id, name.encode(), ot, h5py.h5s.create_simple(o.shape))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, o, mtype=ot)
    want = {}
    for name in ["longdouble", "longdouble_be", "quad", "octuple", "octuple_be"]:
        d = h5py.h5d.open(f.id, name.encode())
        v = np.zeros(d.shape, dtype="f8")
        d.read(h5py.h5s.ALL, h5py.h5s.ALL, v, mtype=t.NATIVE_DOUBLE)
        want[name] = [x if np.isfinite(x) else str(x) for x in v.tolist()]
with open(sys.argv[1] + ".json", "w") as g:
    g.write(json.dumps(want))
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
    for name in ["octuple", "octuple_be"] {
        let Data::F64(got) = f.dataset(&format!("/{name}")).unwrap().read().unwrap().data else {
            panic!("{name}: f64");
        };
        // 0, -0, infinity, -1, the f64 just below 1 rounded from 236 bits, then random values.
        assert_eq!(&got[..4], &[0.0, -0.0, f64::INFINITY, -1.0], "{name}");
        assert!(got[0].is_sign_positive() && got[1].is_sign_negative());
        common::assert_f64s_equal(name, &got, &want[name], &[]);
    }
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

/// The float layouts other than IEEE's 16/32/64 bits, in datasets another program made and can grow:
/// numpy's `longdouble` (either order), IEEE binary128, bfloat16 and the two FP8 types as HDF5 2.0 defines them.
const GROWABLE: &str = r#"
import json, sys, h5py, numpy as np
t = h5py.h5t
def layout(base, size, fields, ebias, order=None):
    x = base.copy()
    if size > x.get_size():
        x.set_size(size)
        x.set_precision(size * 8)
        x.set_fields(*fields)
    else:
        x.set_fields(*fields)
        x.set_size(size)
        x.set_precision(size * 8)
    x.set_ebias(ebias)
    if order is not None:
        x.set_order(order)
    return x
TYPES = {
    "longdouble": t.NATIVE_LDOUBLE.copy(),
    "quad": layout(t.IEEE_F64LE, 16, (127, 112, 15, 0, 112), 16383),
    "octuple": layout(t.IEEE_F64LE, 32, (255, 236, 19, 0, 236), 262143),
    "octuple_be": layout(t.IEEE_F64LE, 32, (255, 236, 19, 0, 236), 262143, t.ORDER_BE),
    # 24 bytes, fields off the byte grid: mantissa 150 bits at bit 10, exponent 20 bits at 160, sign at 180.
    "padded": layout(t.IEEE_F64LE, 24, (180, 160, 20, 10, 150), 524287),
    "bfloat16": layout(t.IEEE_F32LE, 2, (15, 7, 8, 0, 7), 127),
    "bfloat16_be": layout(t.IEEE_F32LE, 2, (15, 7, 8, 0, 7), 127, t.ORDER_BE),
    "e4m3": layout(t.IEEE_F32LE, 1, (7, 3, 4, 0, 3), 7),
    "e5m2": layout(t.IEEE_F32LE, 1, (7, 2, 5, 0, 2), 15),
}
be = t.NATIVE_LDOUBLE.copy()
be.set_order(t.ORDER_BE)
TYPES["longdouble_be"] = be
"#;

/// Appending f64 and f32 rows to each. libhdf5 reads every value back, and none is farther from the value
/// appended than libhdf5's own conversion of it (run on the same values into a dataset of the same type);
/// NaN stays NaN, infinities stay infinite. They differ only where libhdf5 rounds a tie away from zero (we
/// round it to even), in NaN's payload, and where libhdf5's FP8 conversion lands a whole step or more off
/// near the subnormals (0.0149 as 0.0078 in E4M3: we give 0.0156, the nearest).
#[test]
fn rows_appended_to_other_float_layouts_round_to_nearest_in_libhdf5s_eyes() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grow.h5");
    let make = format!(
        "{GROWABLE}{}",
        r#"
with h5py.File(sys.argv[1], "w") as f:
    for name, ft in TYPES.items():
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8,))
        d = h5py.h5d.create(f.id, name.encode(), ft, h5py.h5s.create_simple((3,), (h5py.h5s.UNLIMITED,)), dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1.0, -2.5, 0.25]), mtype=t.NATIVE_DOUBLE)
"#
    );
    common::run_python(&make, &[&path]);
    // Values every layout meets: exact ones, ties, subnormals, overflow, specials.
    let mut values: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0 / 3.0,
        -7.0,
        1.0 + 2f64.powi(-8),
        1.0 + 3.0 * 2f64.powi(-8),
        1.0 + 2f64.powi(-4),
        240.0,
        248.0,
        57344.0,
        61440.0,
        1e300,
        -1e-300,
        2f64.powi(-9),
        2f64.powi(-10),
        3.0 * 2f64.powi(-11),
        2f64.powi(-133),
        f64::MIN_POSITIVE / 3.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let m = f64::from_bits((x >> 12) | 0x3ff0_0000_0000_0000);
        values.push(m * 2f64.powi((x % 80) as i32 - 40) * if x & 1 == 1 { -1.0 } else { 1.0 });
    }
    let names = [
        "longdouble",
        "longdouble_be",
        "quad",
        "octuple",
        "octuple_be",
        "padded",
        "bfloat16",
        "bfloat16_be",
        "e4m3",
        "e5m2",
    ];
    let mut a = clawhdf5_format::FileAppender::open(&path).unwrap();
    for n in names {
        let rows = clawhdf5_format::Array::vector(Data::F64(values.clone()));
        a.append_rows(&format!("/{n}"), rows)
            .unwrap_or_else(|e| panic!("{n}: {e}"));
        // f32 rows too: widened exactly, rounded once.
        let small: Vec<f32> = values[..40].iter().map(|v| *v as f32).collect();
        a.append_rows(
            &format!("/{n}"),
            clawhdf5_format::Array::vector(Data::F32(small)),
        )
        .unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    a.commit().unwrap();
    let values_path = dir.path().join("values.json");
    let as_json: Vec<serde_json::Value> = values
        .iter()
        .map(|v| {
            if v.is_finite() {
                serde_json::json!(v)
            } else {
                serde_json::json!(v.to_string())
            }
        })
        .collect();
    std::fs::write(&values_path, serde_json::json!(as_json).to_string()).unwrap();
    let check = format!(
        "{GROWABLE}{}",
        r#"
values = np.array([float(v) for v in json.load(open(sys.argv[2]))])
small = values[:40].astype(np.float32)
report = {}
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[1] + ".twin", "w") as g:
    for name, ft in TYPES.items():
        d = h5py.h5d.open(f.id, name.encode())
        n = d.shape[0]
        assert n == 3 + len(values) + 40, (name, n)
        size = ft.get_size()
        ours = np.zeros(n, dtype="V%d" % size)
        d.read(h5py.h5s.ALL, h5py.h5s.ALL, ours, mtype=d.get_type())
        twin = h5py.h5d.create(g.id, name.encode(), ft, h5py.h5s.create_simple((len(values),)))
        twin.write(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=t.NATIVE_DOUBLE)
        theirs = np.zeros(len(values), dtype="V%d" % size)
        twin.read(h5py.h5s.ALL, h5py.h5s.ALL, theirs, mtype=ft)
        twin32 = h5py.h5d.create(g.id, (name + "32").encode(), ft, h5py.h5s.create_simple((40,)))
        twin32.write(h5py.h5s.ALL, h5py.h5s.ALL, small, mtype=t.NATIVE_FLOAT)
        theirs32 = np.zeros(40, dtype="V%d" % size)
        twin32.read(h5py.h5s.ALL, h5py.h5s.ALL, theirs32, mtype=ft)
        # Both read back through libhdf5's conversion to double (exact for every value of these layouts).
        ours_d = np.zeros(n)
        d.read(h5py.h5s.ALL, h5py.h5s.ALL, ours_d, mtype=t.NATIVE_DOUBLE)
        theirs_d = np.zeros(len(values))
        twin.read(h5py.h5s.ALL, h5py.h5s.ALL, theirs_d, mtype=t.NATIVE_DOUBLE)
        theirs32_d = np.zeros(40)
        twin32.read(h5py.h5s.ALL, h5py.h5s.ALL, theirs32_d, mtype=t.NATIVE_DOUBLE)
        worse, same = [], 0
        for v, o, th, ob, tb in list(zip(values, ours_d[3:], theirs_d, ours[3:], theirs)) + list(
            zip(small.astype(np.float64), ours_d[3 + len(values):], theirs32_d, ours[3 + len(values):], theirs32)
        ):
            same += bytes(ob) == bytes(tb)
            if np.isnan(v):
                ok = np.isnan(o)
            elif np.isinf(v):
                ok = o == v
            else:
                ok = not np.isnan(o) and abs(o - v) <= abs(th - v)
            if not ok:
                worse.append([repr(float(v)), repr(float(o)), repr(float(th)), bytes(ob).hex(), bytes(tb).hex()])
        assert ours_d[0] == 1.0 and ours_d[1] == -2.5 and ours_d[2] == 0.25, name
        report[name] = {"worse": worse, "same": same, "total": len(values) + 40}
with open(sys.argv[1] + ".json", "w") as out:
    out.write(json.dumps(report))
"#
    );
    common::run_python(&check, &[&path, &values_path]);
    let report = common::read_json(&dir.path().join("grow.h5.json"));
    let mut bad = Vec::new();
    for n in names {
        for row in report[n]["worse"].as_array().unwrap() {
            bad.push(format!("{n}: {row}"));
        }
        eprintln!(
            "{n}: {} of {} elements the same bytes as libhdf5's conversion",
            report[n]["same"], report[n]["total"]
        );
    }
    assert!(
        bad.is_empty(),
        "{} farther from the value than libhdf5's conversion:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
