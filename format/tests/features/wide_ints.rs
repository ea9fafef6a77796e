//! Integers wider than 64 bits (9 bytes and more: HDF5's 128-bit `H5T_STD_I128`/`U128`, 24- and 32-byte types,
//! and other widths with a precision and bit offset of their own; a type wider than 16 bytes reads while each
//! value fits 128 bits, and a value that does not is a clear error), and signed integers of odd narrower widths (3, 5, 7 bytes), whose
//! sign bit must be extended into the value type they widen to. numpy has no such type, so h5py cannot read them; libhdf5 can, and
//! converts them to a plain 16-byte integer, whose bytes Python turns into numbers. We read them as
//! `Data::I128` / `Data::U128` with the values libhdf5's conversion gives, write `I128` / `U128` as 16-byte
//! integers libhdf5 reads back, and append to other programs' wide-integer datasets in their own layout.

use crate::common;

use clawhdf5_format::{Array, DatasetOptions, FileAppender, FileWriter, FormatError, H5File};
use clawhdf5_format::{Data, Datatype};

/// Shared by both scripts: a file type, values as exact bytes in it, and libhdf5's reading of a dataset or
/// attribute converted to a full-precision 16-byte little-endian integer.
const LIB: &str = r#"
import json, sys, h5py, numpy as np
t = h5py.h5t

def int_type(size, signed, be, precision, offset):
    base = (t.STD_I64BE if be else t.STD_I64LE) if signed else (t.STD_U64BE if be else t.STD_U64LE)
    x = base.copy()
    x.set_size(size)
    x.set_precision(precision)
    x.set_offset(offset)
    return x

def raw(values, size, be, precision, offset):
    out = []
    for v in values:
        w = (v % (1 << precision)) << offset
        out.append(w.to_bytes(size, "big" if be else "little"))
    return np.frombuffer(b"".join(out), dtype="V%d" % size)

def as_ints(obj, signed, attr=False):
    wide = int_type(16, signed, False, 128, 0)
    shape = obj.shape if obj.shape else ()
    buf = np.zeros(shape, dtype="V16")
    if attr:
        obj.read(buf, mtype=wide)
    else:
        obj.read(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=wide)
    return [str(int.from_bytes(bytes(b), "little", signed=signed)) for b in np.atleast_1d(buf)]
"#;

const MAKE: &str = r#"
CASES = {
    # name: (size, signed, big-endian, precision, offset, values)
    "u128_be": (16, False, True, 128, 0, [0, 1, 2**64, 2**127 + 12345, 2**128 - 1]),
    "i128_le": (16, True, False, 128, 0, [-2**127, -1, 0, 2**100 + 7, 2**127 - 1]),
    "i96_p90_o3": (12, True, False, 90, 3, [-2**89, -12345678901234567890123, -1, 0, 5, 2**89 - 1]),
    "u72_be": (9, False, True, 72, 0, [0, 2**64, 2**71 + 3, 2**72 - 1]),
    # Wider than 16 bytes, values within 128 bits (negatives sign-extended over all 256 or 150 bits).
    "i256_le": (32, True, False, 256, 0, [-2**127, -5, 0, 2**126]),
    "i192_be_p150_o20": (24, True, True, 150, 20, [-2**100, -1, 2**127 - 1]),
    "u192_be": (24, False, True, 192, 0, [0, 2**100, 2**128 - 1]),
    # Narrower odd widths, whose sign bit is not their value type's.
    "i24": (3, True, False, 24, 0, [-2**23, -1, 0, 2**23 - 1]),
    "i40_be": (5, True, True, 40, 0, [-2**39, -2, 3, 2**39 - 1]),
    "i56_p50_o4": (7, True, False, 50, 4, [-2**49, -1, 2**49 - 1]),
}
want = {}
with h5py.File(sys.argv[1], "w") as f:
    for name, (size, signed, be, p, o, values) in CASES.items():
        ft = int_type(size, signed, be, p, o)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        space = h5py.h5s.create_simple((len(values),), (h5py.h5s.UNLIMITED,))
        d = h5py.h5d.create(f.id, name.encode(), ft, space, dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, raw(values, size, be, p, o), mtype=ft)
        want[name] = as_ints(d, signed)
        assert want[name] == [str(v) for v in values], (name, want[name])
    ft = int_type(16, True, True, 128, 0)
    a = h5py.h5a.create(f.id, b"wide", ft, h5py.h5s.create(h5py.h5s.SCALAR))
    a.write(raw([-2**126 - 9], 16, True, 128, 0).reshape(()), mtype=ft)
    want["@wide"] = as_ints(a, True, attr=True)
    # Wider than 16 bytes: a small value reads; one past 128 bits is a clear error that leaves the other
    # attributes readable.
    ft = int_type(20, False, False, 160, 0)
    a = h5py.h5a.create(f.id, b"wider", ft, h5py.h5s.create(h5py.h5s.SCALAR))
    a.write(raw([7], 20, False, 160, 0).reshape(()), mtype=ft)
    a = h5py.h5a.create(f.id, b"x_too_wide", ft, h5py.h5s.create(h5py.h5s.SCALAR))
    a.write(raw([2**140 + 1], 20, False, 160, 0).reshape(()), mtype=ft)
with open(sys.argv[1] + ".json", "w") as g:
    g.write(json.dumps(want))
"#;

/// Reads every dataset and root attribute named in the JSON at argv[2] as libhdf5 converts it, and the
/// datatype libhdf5 sees, into argv[1].json.
const CHECK: &str = r#"
names = json.load(open(sys.argv[2]))
got = {}
with h5py.File(sys.argv[1], "r") as f:
    for name, signed in names.items():
        if name.startswith("@"):
            obj = h5py.h5a.open(f.id, name[1:].encode())
        else:
            obj = h5py.h5d.open(f.id, name.encode())
        ty = obj.get_type()
        got[name] = {
            "size": ty.get_size(),
            "signed": ty.get_sign() == t.SGN_2,
            "precision": ty.get_precision(),
            "values": as_ints(obj, signed, attr=name.startswith("@")),
        }
with open(sys.argv[1] + ".json", "w") as g:
    g.write(json.dumps(got))
"#;

fn strings(d: &Data) -> Vec<String> {
    match d {
        Data::I128(v) => v.iter().map(|x| x.to_string()).collect(),
        Data::U128(v) => v.iter().map(|x| x.to_string()).collect(),
        Data::I32(v) => v.iter().map(|x| x.to_string()).collect(),
        Data::I64(v) => v.iter().map(|x| x.to_string()).collect(),
        other => panic!("not a wide integer: {}", other.type_name()),
    }
}

fn json_strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn wide_integers_read_as_libhdf5_converts_them_and_take_appended_rows() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.h5");
    common::run_python(&format!("{LIB}{MAKE}"), &[&path]);
    let want = common::read_json(&dir.path().join("wide.h5.json"));
    let f = H5File::open(&path).unwrap();
    for name in [
        "u128_be",
        "i128_le",
        "i96_p90_o3",
        "u72_be",
        "i256_le",
        "i192_be_p150_o20",
        "u192_be",
        "i24",
        "i40_be",
        "i56_p50_o4",
    ] {
        let got = f.dataset(&format!("/{name}")).unwrap().read().unwrap().data;
        assert_eq!(strings(&got), json_strings(&want[name]), "{name}");
    }
    let attr = f.attr("/", "wide").unwrap();
    assert_eq!(strings(&attr.data), json_strings(&want["@wide"]));
    assert_eq!(f.attr_names("/").unwrap(), ["wide", "wider", "x_too_wide"]);
    assert_eq!(f.attr("/", "wider").unwrap().data, Data::U128(vec![7]));
    let e = f.attr("/", "x_too_wide").unwrap_err();
    assert!(
        matches!(e, FormatError::Unsupported(ref m) if m.contains("needs more than 128 bits")),
        "{e}"
    );
    drop(f);

    // Rows appended in each dataset's own layout (a u128 above i128's range, negatives sign-extended from
    // bit 89 of a 90-bit field at bit 3).
    let mut app = FileAppender::open(&path).unwrap();
    let big = u128::MAX - 77;
    app.append_rows("/u128_be", Array::vector(Data::U128(vec![big, 3])))
        .unwrap();
    let low = -(1i128 << 89);
    app.append_rows("/i96_p90_o3", Array::vector(Data::I128(vec![low, -2, 7])))
        .unwrap();
    app.append_rows("/i128_le", Array::vector(Data::I64(vec![i64::MIN])))
        .unwrap();
    app.append_rows("/u72_be", Array::vector(Data::U32(vec![9])))
        .unwrap();
    app.append_rows("/i256_le", Array::vector(Data::I128(vec![i128::MIN, -3])))
        .unwrap();
    app.append_rows("/i192_be_p150_o20", Array::vector(Data::I64(vec![-7, 8])))
        .unwrap();
    app.append_rows("/u192_be", Array::vector(Data::U128(vec![u128::MAX])))
        .unwrap();
    // Values outside a dataset's range are refused, naming the value.
    for (name, bad) in [
        ("/i96_p90_o3", Data::I128(vec![1i128 << 89])),
        ("/u72_be", Data::U128(vec![1u128 << 72])),
        ("/u128_be", Data::I8(vec![-1])),
        ("/u192_be", Data::I8(vec![-1])),
    ] {
        let e = app
            .append_rows(name, Array::vector(bad.clone()))
            .unwrap_err();
        assert!(
            matches!(e, FormatError::Invalid(ref m) if m.contains("does not fit")),
            "{name}: {e}"
        );
    }
    app.commit().unwrap();

    let names = serde_json::json!({
        "u128_be": false, "i128_le": true, "i96_p90_o3": true, "u72_be": false, "@wide": true,
        "i256_le": true, "i192_be_p150_o20": true, "u192_be": false
    });
    let names_path = dir.path().join("names.json");
    std::fs::write(&names_path, names.to_string()).unwrap();
    common::run_python(&format!("{LIB}{CHECK}"), &[&path, &names_path]);
    let lib = common::read_json(&dir.path().join("wide.h5.json"));
    let f = H5File::open(&path).unwrap();
    for (name, extra) in [
        ("u128_be", vec![big.to_string(), "3".into()]),
        ("i128_le", vec![i64::MIN.to_string()]),
        ("i96_p90_o3", vec![low.to_string(), "-2".into(), "7".into()]),
        ("u72_be", vec!["9".into()]),
        ("i256_le", vec![i128::MIN.to_string(), "-3".into()]),
        ("i192_be_p150_o20", vec!["-7".into(), "8".into()]),
        ("u192_be", vec![u128::MAX.to_string()]),
    ] {
        let mut expected = json_strings(&want[name]);
        expected.extend(extra);
        assert_eq!(json_strings(&lib[name]["values"]), expected, "{name}");
        let ours = f.dataset(&format!("/{name}")).unwrap().read().unwrap().data;
        assert_eq!(strings(&ours), expected, "{name}, ours");
    }
}

#[test]
fn wide_integers_we_write_read_in_libhdf5() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.h5");
    let signed = vec![i128::MIN, -1, 0, 1 << 100, i128::MAX];
    let unsigned = vec![0, 1 << 64, u128::MAX];
    let mut w = FileWriter::new();
    w.write_dataset(
        "/s",
        Array::vector(Data::I128(signed.clone())),
        DatasetOptions::default(),
    )
    .unwrap();
    let chunked = DatasetOptions {
        chunk: Some(vec![2]),
        deflate: Some(4),
        shuffle: true,
        ..DatasetOptions::default()
    };
    w.write_dataset("/u", Array::vector(Data::U128(unsigned.clone())), chunked)
        .unwrap();
    w.set_attr("/", "s", Array::scalar(Data::I128(vec![-5])))
        .unwrap();
    w.write_file(&path).unwrap();

    let f = H5File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/s").unwrap().dtype(),
        &Datatype::Int {
            size: 16,
            signed: true,
            be: false,
            offset: 0,
            precision: 128
        }
    );
    assert_eq!(
        f.dataset("/u").unwrap().read().unwrap().data,
        Data::U128(unsigned.clone())
    );
    drop(f);

    let names = serde_json::json!({"s": true, "u": false, "@s": true});
    let names_path = dir.path().join("names.json");
    std::fs::write(&names_path, names.to_string()).unwrap();
    common::run_python(&format!("{LIB}{CHECK}"), &[&path, &names_path]);
    let lib = common::read_json(&dir.path().join("ours.h5.json"));
    let text = |v: &[String]| serde_json::json!(v);
    for (name, values, is_signed) in [
        (
            "s",
            signed.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            true,
        ),
        ("u", unsigned.iter().map(|x| x.to_string()).collect(), false),
        ("@s", vec!["-5".into()], true),
    ] {
        assert_eq!(lib[name]["size"], 16, "{name}");
        assert_eq!(lib[name]["precision"], 128, "{name}");
        assert_eq!(lib[name]["signed"], is_signed, "{name}");
        assert_eq!(lib[name]["values"], text(&values), "{name}");
    }
}
