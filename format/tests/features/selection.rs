//! Partial reads: boxes, strided hyperslabs and reads into a caller's buffer equal the matching
//! part of a full read, on contiguous, compact, chunked and chunked+deflate layouts, on our files
//! and on h5py's (big-endian data, fill values, unallocated chunks).

use crate::common;

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, FormatError, H5File};

const SHAPE: [u64; 3] = [11, 9, 6];

fn n() -> usize {
    SHAPE.iter().product::<u64>() as usize
}

/// Our file with the same values under several layouts.
fn our_file() -> H5File {
    let mut w = FileWriter::new();
    let f: Vec<f32> = (0..n()).map(|i| i as f32 * 0.25).collect();
    let s: Vec<i16> = (0..n()).map(|i| (i as i16) * 3 - 500).collect();
    let shape = SHAPE.to_vec();
    let chunked = DatasetOptions {
        chunk: Some(vec![4, 2, 5]),
        ..Default::default()
    };
    let deflate = DatasetOptions {
        chunk: Some(vec![3, 4, 2]),
        deflate: Some(4),
        shuffle: true,
        ..Default::default()
    };
    let compact = DatasetOptions {
        compact: true,
        ..Default::default()
    };
    for (name, opts) in [
        ("contiguous", DatasetOptions::default()),
        ("chunked", chunked),
        ("deflate", deflate),
        ("compact", compact),
    ] {
        w.write_dataset(
            &format!("/f32/{name}"),
            Array::new(shape.clone(), Data::F32(f.clone())).unwrap(),
            opts.clone(),
        )
        .unwrap();
        w.write_dataset(
            &format!("/i16/{name}"),
            Array::new(shape.clone(), Data::I16(s.clone())).unwrap(),
            opts,
        )
        .unwrap();
    }
    H5File::from_bytes(w.to_bytes().unwrap()).unwrap()
}

/// Row-major linear index of `idx` in `shape`.
fn lin(shape: &[u64], idx: &[u64]) -> usize {
    idx.iter().zip(shape).fold(0u64, |a, (i, d)| a * d + i) as usize
}

/// Elements of `full` (shape `shape`) at the Cartesian product of `sel`.
fn pick<T: Copy>(full: &[T], shape: &[u64], sel: &[Vec<u64>]) -> Vec<T> {
    let mut out = vec![];
    for &a in &sel[0] {
        for &b in &sel[1] {
            for &c in &sel[2] {
                out.push(full[lin(shape, &[a, b, c])]);
            }
        }
    }
    out
}

fn hyper_sel(start: &[u64], stride: &[u64], count: &[u64], block: &[u64]) -> Vec<Vec<u64>> {
    (0..start.len())
        .map(|d| {
            (0..count[d])
                .flat_map(|c| (0..block[d]).map(move |b| start[d] + c * stride[d] + b))
                .collect()
        })
        .collect()
}

/// Deterministic pseudo-random numbers.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

fn values(a: &Array) -> Vec<f64> {
    match &a.data {
        Data::F32(v) => v.iter().map(|&x| x as f64).collect(),
        Data::F64(v) => v.clone(),
        Data::I16(v) => v.iter().map(|&x| x as f64).collect(),
        Data::I32(v) => v.iter().map(|&x| x as f64).collect(),
        other => panic!("unexpected {}", other.type_name()),
    }
}

#[test]
fn boxes_and_hyperslabs_equal_the_full_read() {
    let f = our_file();
    let mut rng = Lcg(7);
    for path in [
        "/f32/contiguous",
        "/f32/chunked",
        "/f32/deflate",
        "/f32/compact",
        "/i16/contiguous",
        "/i16/chunked",
        "/i16/deflate",
        "/i16/compact",
    ] {
        let full = values(&f.dataset(path).unwrap().read().unwrap());
        for _ in 0..60 {
            let start: Vec<u64> = SHAPE.iter().map(|&d| rng.below(d)).collect();
            let count: Vec<u64> = (0..3).map(|d| 1 + rng.below(SHAPE[d] - start[d])).collect();
            // A fresh Dataset each time: no chunk cache carried over.
            let got = f.dataset(path).unwrap().read_slice(&start, &count).unwrap();
            assert_eq!(got.shape, count);
            let sel = hyper_sel(&start, &count, &[1, 1, 1], &count);
            assert_eq!(
                values(&got),
                pick(&full, &SHAPE, &sel),
                "{path} {start:?} {count:?}"
            );

            let block: Vec<u64> = (0..3).map(|_| 1 + rng.below(2)).collect();
            let stride: Vec<u64> = (0..3).map(|d| block[d] + rng.below(3)).collect();
            let count: Vec<u64> = (0..3)
                .map(|d| {
                    let room = SHAPE[d] - start[d];
                    if room < block[d] {
                        0
                    } else {
                        1 + rng.below((room - block[d]) / stride[d] + 1)
                    }
                })
                .collect();
            let got = f
                .dataset(path)
                .unwrap()
                .read_hyperslab(&start, &stride, &count, &block)
                .unwrap();
            let sel = hyper_sel(&start, &stride, &count, &block);
            assert_eq!(
                got.shape,
                sel.iter().map(|s| s.len() as u64).collect::<Vec<_>>()
            );
            assert_eq!(
                values(&got),
                pick(&full, &SHAPE, &sel),
                "{path} start {start:?} stride {stride:?} count {count:?} block {block:?}"
            );
        }
    }
}

#[test]
fn read_into_fills_a_reused_buffer() {
    let f = our_file();
    for layout in ["contiguous", "chunked", "deflate", "compact"] {
        let path = format!("/f32/{layout}");
        let ds = f.dataset(&path).unwrap();
        let full = ds.read().unwrap();
        let mut buf = vec![f32::NAN; n()];
        ds.read_into(&mut buf).unwrap();
        assert_eq!(&buf[..], full.as_f32().unwrap(), "{path}");
        let mut part = vec![-1.0f32; 2 * 9 * 6];
        ds.read_slice_into(&[4, 0, 0], &[2, 9, 6], &mut part)
            .unwrap();
        assert_eq!(
            &part[..],
            &full.as_f32().unwrap()[4 * 54..6 * 54],
            "{path} rows"
        );
        let mut win = vec![0f32; 3 * 2 * 4];
        ds.read_slice_into(&[5, 3, 1], &[3, 2, 4], &mut win)
            .unwrap();
        let sel = hyper_sel(&[5, 3, 1], &[1, 1, 1], &[3, 2, 4], &[1, 1, 1]);
        assert_eq!(
            win,
            pick(full.as_f32().unwrap(), &SHAPE, &sel),
            "{path} box"
        );

        let mut wrong = vec![0f64; n()];
        assert!(matches!(
            ds.read_into(&mut wrong),
            Err(FormatError::TypeMismatch(_))
        ));
        let mut short = vec![0f32; n() - 1];
        assert!(ds.read_into(&mut short).is_err());
        let mut i16buf = vec![0i16; n()];
        f.dataset(&format!("/i16/{layout}"))
            .unwrap()
            .read_into(&mut i16buf)
            .unwrap();
        assert_eq!(i16buf[5], 15 - 500);
    }
}

#[test]
fn out_of_range_hyperslabs_are_errors() {
    let f = our_file();
    let ds = f.dataset("/f32/chunked").unwrap();
    assert!(ds
        .read_hyperslab(&[0, 0, 0], &[3, 1, 1], &[4, 1, 1], &[1, 1, 1])
        .is_ok());
    assert!(ds
        .read_hyperslab(&[0, 0, 0], &[3, 1, 1], &[5, 1, 1], &[1, 1, 1])
        .is_err());
    assert!(ds
        .read_hyperslab(&[0, 0, 0], &[u64::MAX, 1, 1], &[3, 1, 1], &[1, 1, 1])
        .is_err());
    assert!(ds
        .read_hyperslab(&[0, 0, 0], &[1, 1, 1], &[1, 1, 1], &[2, 1, 1])
        .is_err());
}

const H5PY_SCRIPT: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    a = (np.arange(40 * 30, dtype=">f8") * 0.5).reshape(40, 30)
    f.create_dataset("be_contiguous", data=a)
    f.create_dataset("be_chunked", data=a, chunks=(7, 8), compression="gzip")
    d = f.create_dataset("sparse", shape=(40, 30), dtype=">i4", chunks=(10, 10), fillvalue=7)
    d[10:20, 0:10] = np.arange(100, dtype=">i4").reshape(10, 10) + 1000
    d[30:40, 20:30] = np.arange(100, dtype=">i4").reshape(10, 10) + 2000
    d = f.create_dataset("sparse_gzip", shape=(40, 30), dtype=">i4", chunks=(10, 10), fillvalue=7, compression="gzip")
    d[10:20, 0:10] = np.arange(100, dtype=">i4").reshape(10, 10) + 1000
    d[30:40, 20:30] = np.arange(100, dtype=">i4").reshape(10, 10) + 2000
"#;

#[test]
fn h5py_big_endian_fill_values_and_missing_chunks() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sel.h5");
    let st = std::process::Command::new("python3")
        .args(["-c", H5PY_SCRIPT])
        .arg(&path)
        .status()
        .unwrap();
    assert!(st.success());
    let f = H5File::open(&path).unwrap();
    let expect_f = |r: u64, c: u64| (r * 30 + c) as f64 * 0.5;
    let expect_i = |r: u64, c: u64| -> i32 {
        if (10..20).contains(&r) && c < 10 {
            1000 + ((r - 10) * 10 + c) as i32
        } else if r >= 30 && c >= 20 {
            2000 + ((r - 30) * 10 + c - 20) as i32
        } else {
            7
        }
    };
    let grid = |rs: &[u64], cs: &[u64]| -> Vec<(u64, u64)> {
        rs.iter()
            .flat_map(|&r| cs.iter().map(move |&c| (r, c)))
            .collect()
    };
    let all: Vec<u64> = (0..40).collect();
    let cols: Vec<u64> = (0..30).collect();
    for name in ["be_contiguous", "be_chunked"] {
        let ds = f.dataset(name).unwrap();
        let want: Vec<f64> = grid(&all, &cols)
            .iter()
            .map(|&(r, c)| expect_f(r, c))
            .collect();
        assert_eq!(ds.read().unwrap().as_f64().unwrap(), &want[..], "{name}");
        let mut buf = vec![0f64; 1200];
        ds.read_into(&mut buf).unwrap();
        assert_eq!(buf, want, "{name} read_into");
        let h = ds
            .read_hyperslab(&[1, 2], &[5, 7], &[7, 4], &[2, 3])
            .unwrap();
        let sel = hyper_sel(&[1, 2, 0], &[5, 7, 1], &[7, 4, 1], &[2, 3, 1]);
        let want: Vec<f64> = grid(&sel[0], &sel[1])
            .iter()
            .map(|&(r, c)| expect_f(r, c))
            .collect();
        assert_eq!(h.as_f64().unwrap(), &want[..], "{name} hyperslab");
    }
    // Missing chunks get the fill value, unfiltered and through deflate (whose chunks are decoded a chunk
    // row per task).
    for name in ["sparse", "sparse_gzip"] {
        let ds = f.dataset(name).unwrap();
        let want: Vec<i32> = grid(&all, &cols)
            .iter()
            .map(|&(r, c)| expect_i(r, c))
            .collect();
        let mut buf = vec![-1i32; 1200];
        ds.read_into(&mut buf).unwrap();
        assert_eq!(buf, want, "{name} read_into over a dirty buffer");
        let mut win = vec![-1i32; 15 * 15];
        ds.read_slice_into(&[5, 5], &[15, 15], &mut win).unwrap();
        let rs: Vec<u64> = (5..20).collect();
        let want: Vec<i32> = grid(&rs, &rs)
            .iter()
            .map(|&(r, c)| expect_i(r, c))
            .collect();
        assert_eq!(win, want, "{name} window");
        let h = ds
            .read_hyperslab(&[0, 0], &[9, 9], &[5, 4], &[1, 2])
            .unwrap();
        let sel = hyper_sel(&[0, 0, 0], &[9, 9, 1], &[5, 4, 1], &[1, 2, 1]);
        let want: Vec<i32> = grid(&sel[0], &sel[1])
            .iter()
            .map(|&(r, c)| expect_i(r, c))
            .collect();
        assert_eq!(h.as_i32().unwrap(), &want[..], "{name} hyperslab");
    }
}

#[test]
fn large_reads_from_a_file_are_split_and_land_whole_at_any_alignment() {
    // 1.5M f64 = 12 MiB: above the split threshold, so read in parts on the rayon pool's threads.
    let rows = 1536u64;
    let cols = 1024u64;
    let values: Vec<f64> = (0..rows * cols).map(|i| i as f64 * 0.5 - 7.0).collect();
    let mut w = FileWriter::new();
    w.write_dataset(
        "/big",
        Array::matrix(rows, cols, Data::F64(values.clone())).unwrap(),
        DatasetOptions::default(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.h5");
    std::fs::write(&path, w.to_bytes().unwrap()).unwrap();
    let f = H5File::open(&path).unwrap();
    let ds = f.dataset("/big").unwrap();
    assert_eq!(ds.read().unwrap().as_f64().unwrap(), &values[..]);
    let mut buf = vec![f64::NAN; values.len()];
    ds.read_into(&mut buf).unwrap();
    assert_eq!(buf, values);
    // Rows 100.. of the dataset (a large run that starts mid-file) into a buffer one element in, so
    // its alignment against the file differs from the whole read's.
    let tail = &values[100 * cols as usize..];
    assert_eq!(
        ds.read_rows(100, rows - 100).unwrap().as_f64().unwrap(),
        tail
    );
    let mut shifted = vec![f64::NAN; tail.len() + 1];
    ds.read_slice_into(&[100, 0], &[rows - 100, cols], &mut shifted[1..])
        .unwrap();
    assert_eq!(&shifted[1..], tail);
}

/// An empty strided selection whose other dimension is vast (a shape a damaged file can declare):
/// an empty result, with nothing allocated per position of that dimension.
#[test]
fn an_empty_strided_selection_of_a_vast_dimension_reads_nothing() {
    let wide = 1u64 << 40;
    for (chunk, compact) in [(None, true), (None, false), (Some(vec![1, 1024]), false)] {
        let mut w = FileWriter::new();
        let opts = DatasetOptions {
            chunk: chunk.clone(),
            compact,
            ..Default::default()
        };
        w.write_dataset(
            "/empty",
            Array::new(vec![0, wide], Data::I8(vec![])).unwrap(),
            opts,
        )
        .unwrap();
        let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
        let d = f.dataset("/empty").unwrap();
        let got = d
            .read_hyperslab(&[0, 0], &[1, 2], &[0, wide / 2], &[1, 1])
            .unwrap();
        assert_eq!(got.shape, vec![0, wide / 2], "{chunk:?}");
        assert_eq!(got.len(), 0);
    }
}

/// A tiny file whose unwritten dataset claims millions of one-byte elements: a strided read over it is
/// refused for its index lists (16+ bytes an index, far more than the file could hold) instead of building
/// them, while a modest strided read of the same dataset still returns its fill values.
#[test]
fn strided_reads_of_a_tiny_file_claiming_millions_of_bytes_stay_bounded() {
    if !common::have_python_module("h5py") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.h5");
    common::run_python(
        "import sys, h5py\nwith h5py.File(sys.argv[1], 'w') as f:\n    \
         f.create_dataset('u8', shape=(60_000_000,), dtype='u1', chunks=(1_000_000,), fillvalue=7)\n",
        &[&path],
    );
    assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);
    let f = H5File::open(&path).unwrap();
    let d = f.dataset("/u8").unwrap();
    let err = d
        .read_hyperslab(&[0], &[2], &[30_000_000], &[1])
        .unwrap_err();
    assert!(err.to_string().contains("index lists"), "{err}");
    let a = d.read_hyperslab(&[10], &[3], &[1000], &[1]).unwrap();
    assert_eq!(a.as_u8().unwrap(), &[7u8; 1000][..]);
}
