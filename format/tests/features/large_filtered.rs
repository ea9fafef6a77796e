//! Reads of filtered datasets larger than the chunk cache, where whole chunks that are one run of the
//! result are decoded straight into it and the others through a buffer of their own.

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, H5File};

/// 2^22 + 3 f64 values (a little over 32 MiB, the chunk cache's size), compressible.
fn values(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i / 7) % 1000) as f64 * 0.5).collect()
}

fn options(chunk: Vec<u64>, shuffle: bool, fletcher32: bool) -> DatasetOptions {
    DatasetOptions {
        chunk: Some(chunk),
        deflate: Some(1),
        shuffle,
        fletcher32,
        ..Default::default()
    }
}

fn f64s(a: Array) -> Vec<f64> {
    match a.data {
        Data::F64(v) => v,
        other => panic!("expected f64, got {}", other.type_name()),
    }
}

#[test]
fn large_filtered_reads_equal_the_values_written() {
    let n = (1 << 22) + 3;
    let v = values(n);
    let (rows, cols) = (4099u64, 1024u64);
    let m = values((rows * cols) as usize);
    let mut w = FileWriter::new();
    // One dimension, chunks of 2^17 elements and a short last one.
    w.write_dataset(
        "/v",
        Array::vector(Data::F64(v.clone())),
        options(vec![1 << 17], true, true),
    )
    .unwrap();
    // Chunks spanning whole rows (one run of the result each) and chunks of half rows (not).
    w.write_dataset(
        "/rows",
        Array::matrix(rows, cols, Data::F64(m.clone())).unwrap(),
        options(vec![128, cols], false, false),
    )
    .unwrap();
    w.write_dataset(
        "/halves",
        Array::matrix(rows, cols, Data::F64(m.clone())).unwrap(),
        options(vec![128, cols / 2], true, false),
    )
    .unwrap();
    let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();

    assert_eq!(f64s(f.dataset("/v").unwrap().read().unwrap()), v);
    for name in ["/rows", "/halves"] {
        let d = f.dataset(name).unwrap();
        assert_eq!(f64s(d.read().unwrap()), m, "{name} whole");
        // A box starting mid-chunk: its first and last chunk rows are partial.
        let (r0, nr) = (100u64, 3990u64);
        let got = f64s(d.read_slice(&[r0, 0], &[nr, cols]).unwrap());
        let want = &m[(r0 * cols) as usize..((r0 + nr) * cols) as usize];
        assert_eq!(got, want, "{name} rows {r0}..{}", r0 + nr);
    }
    // The same reads again (some chunks may now come from the cache).
    assert_eq!(f64s(f.dataset("/v").unwrap().read().unwrap()), v);
}

#[test]
fn a_damaged_chunk_in_a_large_read_is_an_error() {
    let n = (1 << 22) + 3;
    let v = values(n);
    let mut w = FileWriter::new();
    w.write_dataset(
        "/v",
        Array::vector(Data::F64(v)),
        options(vec![1 << 17], true, true),
    )
    .unwrap();
    let mut bytes = w.to_bytes().unwrap();
    // Flip a byte in the middle of the file: inside some chunk's deflate stream or checksum.
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    let f = H5File::from_bytes(bytes).unwrap();
    let e = f.dataset("/v").unwrap().read().unwrap_err().to_string();
    assert!(
        e.contains("deflate") || e.contains("fletcher32") || e.contains("chunk"),
        "{e}"
    );
}
