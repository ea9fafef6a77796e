//! ZFP-compressed datasets written by us (the H5Z-ZFP filter 32013, `Codec::Zfp`) and read by h5py through
//! hdf5plugin: fixed rate, precision and accuracy, reversible and expert modes over f4, f8, i4 and i8, 1-D to
//! 4-D arrays whose edges are not multiples of 4, a chunk with a dimension of 1. h5py's values equal ours
//! decoded (the reversible mode's equal the input, the accuracy mode's are within the tolerance), and
//! hdf5plugin writing the same values with the same chunks and mode stores the same client data and the same
//! chunks byte for byte. Requests zfp cannot take are refused before anything is written.

use crate::common;

use crate::common::XorShift;
use clawhdf5_format::array::Data;
use clawhdf5_format::{
    Array, Codec, DatasetOptions, FileAppender, FileWriter, FormatError, H5File, ZfpMode,
};
use std::path::Path;

/// The modes written, by the names the python side knows them by (its `hdf5plugin.Zfp` arguments).
fn modes() -> Vec<(&'static str, ZfpMode)> {
    vec![
        ("rate", ZfpMode::Rate(9.5)),
        ("rate_low", ZfpMode::Rate(1.0)),
        ("prec", ZfpMode::Precision(14)),
        ("prec_full", ZfpMode::Precision(64)),
        ("acc", ZfpMode::Accuracy(1e-3)),
        ("rev", ZfpMode::Reversible),
        (
            "expert",
            ZfpMode::Expert {
                minbits: 300,
                maxbits: 700,
                maxprec: 40,
                minexp: -60,
            },
        ),
    ]
}

const PY_MODES: &str = r#"
modes = {
    "rate": dict(rate=9.5), "rate_low": dict(rate=1.0), "prec": dict(precision=14),
    "prec_full": dict(precision=64), "acc": dict(accuracy=1e-3), "rev": dict(reversible=True),
    "expert": dict(minbits=300, maxbits=700, maxprec=40, minexp=-60),
}
"#;

/// Shapes and chunks (edges not multiples of 4; the 4-D chunk has a dimension of 1, so zfp codes it 3-D).
fn shapes() -> Vec<(Vec<u64>, Vec<u64>)> {
    vec![
        (vec![1001], vec![300]),
        (vec![37, 50], vec![16, 23]),
        (vec![9, 10, 11], vec![4, 7, 5]),
        (vec![5, 6, 7, 9], vec![5, 6, 7, 9]),
        (vec![5, 6, 7, 9], vec![3, 6, 1, 9]),
    ]
}

/// Values of type `dt` for an array of `n` elements: smooth with noise, some zeros.
fn values(dt: &str, n: usize, rng: &mut XorShift) -> Data {
    let f = |i: usize, rng: &mut XorShift| {
        let noise = (rng.below(2001) as f64 - 1000.0) / 1000.0;
        if i % 97 < 5 {
            0.0
        } else {
            (i as f64 / 9.0).sin() * 300.0 + i as f64 * 0.01 + noise
        }
    };
    match dt {
        "f4" => Data::F32((0..n).map(|i| f(i, rng) as f32).collect()),
        "f8" => Data::F64((0..n).map(|i| f(i, rng)).collect()),
        "i4" => Data::I32((0..n).map(|i| (f(i, rng) * 1e5) as i32).collect()),
        _ => Data::I64((0..n).map(|i| (f(i, rng) * 1e9) as i64).collect()),
    }
}

/// Floats of any bits (`dt` f4 or f8), every fifth of them a NaN, an infinity, a zero of either sign or a
/// subnormal, and blocks of only such values.
fn wide(dt: &str, n: usize, rng: &mut XorShift) -> Data {
    let special = |i: usize, bits: u64, f64s: bool| -> u64 {
        let (nan, inf, sign, sub) = if f64s {
            (
                0x7ff8_0000_0000_0001,
                0x7ff0_0000_0000_0000,
                1u64 << 63,
                bits & 0xf_ffff,
            )
        } else {
            (0x7fc0_0001, 0x7f80_0000, 1u64 << 31, bits & 0x7_ffff)
        };
        // The first blocks of the (37, 50) arrays: subnormals alone, zeros of both signs, NaNs alone, an
        // infinity among subnormals.
        let (row, col) = (i / 50, i % 50);
        if row < 4 && col < 16 {
            return match col / 4 {
                0 => sub | (bits & sign),
                1 => bits & sign,
                2 => nan,
                _ if i == 12 => inf,
                _ => sub,
            };
        }
        match (i.is_multiple_of(5), i / 5 % 6) {
            (false, _) => bits,
            (true, 0) => nan,
            (true, 1) => inf,
            (true, 2) => inf | sign,
            (true, 3) => 0,
            (true, 4) => sign,
            _ => sub,
        }
    };
    if dt == "f4" {
        Data::F32(
            (0..n)
                .map(|i| f32::from_bits(special(i, rng.next() >> 32, false) as u32))
                .collect(),
        )
    } else {
        Data::F64(
            (0..n)
                .map(|i| f64::from_bits(special(i, rng.next(), true)))
                .collect(),
        )
    }
}

/// The little-endian bytes of `data`.
fn le_bytes(data: &Data) -> Vec<u8> {
    match data {
        Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Data::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        other => panic!("{}", other.type_name()),
    }
}

/// Writes every mode over every type and shape; returns the names written. The input and our decoded
/// values go beside the file (`<file>.<name>.in`, `.ours`).
fn write_all(path: &Path) -> Vec<String> {
    let mut rng = XorShift(0x0002_fe2c_5eed);
    let mut w = FileWriter::new();
    let mut written = Vec::new();
    let mut inputs = Vec::new();
    for (si, (shape, chunk)) in shapes().into_iter().enumerate() {
        for dt in ["f4", "f8", "i4", "i8"] {
            for (mname, mode) in modes() {
                if mname == "acc" && dt.starts_with('i') {
                    continue;
                }
                let n = shape.iter().product::<u64>() as usize;
                let data = values(dt, n, &mut rng);
                let name = format!("s{si}_{dt}_{mname}");
                inputs.push((name.clone(), le_bytes(&data)));
                w.write_dataset(
                    &format!("/{name}"),
                    Array::new(shape.clone(), data).unwrap(),
                    DatasetOptions {
                        chunk: Some(chunk.clone()),
                        codec: Some(Codec::Zfp(mode)),
                        ..Default::default()
                    },
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                written.push(name);
                if si == 1 && dt.starts_with('f') {
                    // Any bits: NaN, infinities, subnormals and zeros of both signs among them.
                    let data = wide(dt, n, &mut rng);
                    let name = format!("s1w_{dt}_{mname}");
                    inputs.push((name.clone(), le_bytes(&data)));
                    w.write_dataset(
                        &format!("/{name}"),
                        Array::new(shape.clone(), data).unwrap(),
                        DatasetOptions {
                            chunk: Some(chunk.clone()),
                            codec: Some(Codec::Zfp(mode)),
                            ..Default::default()
                        },
                    )
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                    written.push(name);
                }
            }
        }
    }
    w.write_file(path).unwrap();
    let f = H5File::open(path).unwrap();
    for (name, input) in inputs {
        let ours = f.dataset(&format!("/{name}")).unwrap().read().unwrap();
        let ours = le_bytes(&ours.data);
        if name.ends_with("_rev") {
            assert_eq!(ours, input, "{name}: reversible");
        }
        std::fs::write(format!("{}.{name}.in", path.display()), input).unwrap();
        std::fs::write(format!("{}.{name}.ours", path.display()), ours).unwrap();
    }
    written
}

const CHECK: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
path = sys.argv[1]
twin_path = path + ".twin.h5"
checked = 0
with h5py.File(path, "r") as f, h5py.File(twin_path, "w") as g:
    for name, d in f.items():
        _, dt, mname = name.split("_", 2)
        got = d[()]
        ours = np.fromfile(path + "." + name + ".ours", dtype="<" + dt).reshape(d.shape)
        given = np.fromfile(path + "." + name + ".in", dtype="<" + dt).reshape(d.shape)
        assert got.tobytes() == ours.tobytes(), name
        if mname == "rev":
            assert got.tobytes() == given.tobytes(), name
        if mname == "acc" and not name.startswith("s1w"):
            assert np.abs(got.astype("f8") - given.astype("f8")).max() <= 1e-3, name
        # hdf5plugin writing the same values: the same filter, client data and chunks.
        twin = g.create_dataset(name, data=given, chunks=d.chunks, **hdf5plugin.Zfp(**modes[mname]))
        ours_f = d.id.get_create_plist().get_filter(0)
        theirs_f = twin.id.get_create_plist().get_filter(0)
        assert ours_f[0] == theirs_f[0] == 32013, name
        assert ours_f[2] == theirs_f[2], (name, ours_f, theirs_f)
        assert d.id.get_num_chunks() == twin.id.get_num_chunks(), name
        for i in range(d.id.get_num_chunks()):
            at = d.id.get_chunk_info(i).chunk_offset
            mine, theirs = d.id.read_direct_chunk(at), twin.id.read_direct_chunk(at)
            assert mine == theirs, (name, at, len(mine[1]), len(theirs[1]))
        checked += 1
print(checked)
"#;

#[test]
fn written_zfp_datasets_read_in_h5py_and_equal_hdf5plugins() {
    if !(common::have_python_module("h5py") && common::have_python_module("hdf5plugin")) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.h5");
    let written = write_all(&path);
    let code = format!("{PY_MODES}{CHECK}");
    let n = common::python_json(&code, &[&path]);
    assert_eq!(n.as_u64(), Some(written.len() as u64));
}

/// Appending rows to a ZFP dataset hdf5plugin wrote (fixed-rate floats, 2-D chunks cut by the dataset's
/// edge) and creating one through the appender: h5py reads every row, the rows libhdf5 would have coded
/// alike stored alike.
#[test]
fn rows_appended_to_an_hdf5plugin_zfp_dataset_read_in_h5py() {
    let Some((_dir, path)) = common::python_written(
        r#"
import sys, h5py, hdf5plugin, numpy as np
a = (np.sin(np.arange(70 * 6) / 5.0) * 50).astype("<f4").reshape(70, 6)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("rate", data=a, chunks=(16, 6), maxshape=(None, 6), **hdf5plugin.Zfp(rate=12))
    f.create_dataset("rev", data=a.astype("<f8"), chunks=(16, 6), maxshape=(None, 6), **hdf5plugin.Zfp(reversible=True))
"#,
        "theirs.h5",
        &["h5py", "hdf5plugin"],
    ) else {
        return;
    };
    let all: Vec<f32> = (0..100 * 6)
        .map(|i| ((i as f64 / 5.0).sin() * 50.0) as f32)
        .collect();
    let more = || Data::F32(all[70 * 6..].to_vec());
    let more64 = Data::F64(all[70 * 6..].iter().map(|&v| f64::from(v)).collect());
    let mut a = FileAppender::open(&path).unwrap();
    a.append_rows("/rate", Array::matrix(30, 6, more()).unwrap())
        .unwrap();
    a.append_rows("/rev", Array::matrix(30, 6, more64).unwrap())
        .unwrap();
    a.write_dataset(
        "/new",
        Array::matrix(100, 6, Data::F32(all.clone())).unwrap(),
        DatasetOptions {
            chunk: Some(vec![16, 6]),
            max_shape: Some(vec![None, Some(6)]),
            codec: Some(Codec::Zfp(ZfpMode::Precision(20))),
            ..Default::default()
        },
    )
    .unwrap();
    // Refused before anything is written: zfp on a type it does not code.
    let e = a
        .write_dataset(
            "/bad",
            Array::vector(Data::U8(vec![1; 40])),
            DatasetOptions {
                codec: Some(Codec::Zfp(ZfpMode::Reversible)),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(e, FormatError::Invalid(_)) && e.to_string().contains("zfp"));
    a.commit().unwrap();
    let f = H5File::open(&path).unwrap();
    assert_eq!(f.dataset("/rev").unwrap().shape(), &[100, 6]);
    assert!(f.dataset("/bad").is_err());
    common::run_python(
        r#"
import sys, h5py, hdf5plugin, numpy as np
a = (np.sin(np.arange(100 * 6) / 5.0) * 50).astype("<f4").reshape(100, 6)
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[1] + ".twin", "w") as g:
    assert np.array_equal(f["rev"][:], a.astype("<f8"))
    assert np.abs(f["rate"][:] - a).max() < 0.05, np.abs(f["rate"][:] - a).max()
    assert np.abs(f["new"][:] - a).max() < 0.05
    # libhdf5 writing the same rows through H5Z-ZFP the same way (70, the file closed, then 30 more: the
    # partial chunk at 64 decoded, completed and coded again) stores the chunks we wrote.
    runs = [("rate", dict(rate=12), 70), ("rev", dict(reversible=True), 70), ("new", dict(precision=20), 100)]
    for n, m, first in runs:
        g.create_dataset(n, data=a.astype(f[n].dtype)[:first], chunks=(16, 6), maxshape=(None, 6), **hdf5plugin.Zfp(**m))
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[1] + ".twin", "a") as g:
    for n, m, first in runs:
        d, twin = f[n], g[n]
        twin.resize((100, 6))
        twin[first:] = a.astype(d.dtype)[first:]
        for at in range(0, 100, 16):
            assert d.id.read_direct_chunk((at, 0)) == twin.id.read_direct_chunk((at, 0)), (n, at)
"#,
        &[&path],
    );
}

/// Requests zfp or H5Z-ZFP cannot take: typed errors naming the problem, nothing written.
#[test]
fn invalid_zfp_requests_are_refused_by_name() {
    let mut w = FileWriter::new();
    let zfp = |mode, chunk: Option<Vec<u64>>| DatasetOptions {
        chunk,
        codec: Some(Codec::Zfp(mode)),
        ..Default::default()
    };
    let floats = |shape: Vec<u64>| {
        let n = shape.iter().product::<u64>() as usize;
        Array::new(shape, Data::F32(vec![1.0; n])).unwrap()
    };
    let cases = [
        (
            Array::vector(Data::I16(vec![1; 40])),
            zfp(ZfpMode::Reversible, None),
            "not i16",
        ),
        (floats(vec![40]), zfp(ZfpMode::Rate(0.0), None), "positive"),
        (floats(vec![40]), zfp(ZfpMode::Rate(-2.0), None), "positive"),
        (
            floats(vec![40]),
            zfp(ZfpMode::Precision(70), None),
            "precision 70",
        ),
        (
            floats(vec![40]),
            zfp(ZfpMode::Accuracy(f64::NAN), None),
            "accuracy",
        ),
        (
            Array::vector(Data::I32(vec![1; 40])),
            zfp(ZfpMode::Accuracy(0.5), None),
            "only floats",
        ),
        (
            floats(vec![2, 2, 2, 2, 2]),
            zfp(ZfpMode::Reversible, Some(vec![2, 2, 2, 2, 2])),
            "1 to 4 dimensions",
        ),
        (
            floats(vec![3, 1]),
            zfp(ZfpMode::Reversible, Some(vec![1, 1])),
            "1 to 4 dimensions",
        ),
    ];
    let shuffled = DatasetOptions {
        shuffle: true,
        ..zfp(ZfpMode::Reversible, None)
    };
    let cases = cases
        .into_iter()
        .chain([(floats(vec![40]), shuffled, "no shuffle with zfp")]);
    for (i, (array, opts, want)) in cases.enumerate() {
        let e = w.write_dataset(&format!("/d{i}"), array, opts).unwrap_err();
        assert!(
            matches!(e, FormatError::Invalid(_)) && e.to_string().contains(want),
            "{i}: {e}"
        );
    }
    // Nothing of them was written.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.h5");
    w.write_file(&path).unwrap();
    assert!(H5File::open(&path).unwrap().dataset("/d0").is_err());
}
