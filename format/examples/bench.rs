//! Benchmark harness for clawhdf5-format. Prints one JSON object of timings (seconds, best of
//! several runs). `bench/compare_h5py.py` runs it next to the same operations done with h5py
//! (libhdf5) on the same machine in the same run; run that script rather than this directly:
//!
//!     python3 format/bench/compare_h5py.py
//!
//! Usage: bench DIR — DIR holds the read-test files the script wrote with h5py. Writes go to the
//! page cache without fsync on both sides (h5py/libhdf5 does not fsync on close either).

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, H5File};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

fn best<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    let mut b = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        b = b.min(t.elapsed().as_secs_f64());
    }
    b
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: bench DIR")?;
    let dir = Path::new(&dir);
    let mut r: BTreeMap<&str, f64> = BTreeMap::new();

    let attr_file = dir.join("attr.h5");
    r.insert(
        "open + read one attribute",
        best(200, || {
            let f = H5File::open(&attr_file).unwrap();
            std::hint::black_box(f.attr("/", "a").unwrap());
        }),
    );
    let small = dir.join("small.h5");
    let f = H5File::open(&small)?;
    r.insert(
        "read 1K f32 contiguous",
        best(200, || {
            std::hint::black_box(f.dataset("/k1").unwrap().read().unwrap());
        }),
    );
    r.insert(
        "read 100K f32 contiguous",
        best(50, || {
            std::hint::black_box(f.dataset("/k100").unwrap().read().unwrap());
        }),
    );
    drop(f);
    let big = H5File::open(&dir.join("big.h5"))?;
    for (name, ds) in [
        ("contiguous", "/contiguous"),
        ("chunked", "/chunked"),
        ("chunked+deflate", "/deflate"),
    ] {
        let key = |what: &str| -> &'static str {
            Box::leak(format!("4096x2048 f64 {name}: {what}").into_boxed_str())
        };
        let reps = if name == "chunked+deflate" { 2 } else { 3 };
        r.insert(
            key("full read"),
            best(reps, || {
                std::hint::black_box(big.dataset(ds).unwrap().read().unwrap());
            }),
        );
        // Fresh Dataset each time so the chunk cache does not hide decoding cost.
        r.insert(
            key("64x64 window"),
            best(20, || {
                std::hint::black_box(
                    big.dataset(ds)
                        .unwrap()
                        .read_slice(&[1000, 1000], &[64, 64])
                        .unwrap(),
                );
            }),
        );
        r.insert(
            key("512x512 window"),
            best(5, || {
                std::hint::black_box(
                    big.dataset(ds)
                        .unwrap()
                        .read_slice(&[1000, 1000], &[512, 512])
                        .unwrap(),
                );
            }),
        );
        r.insert(
            key("one row"),
            best(20, || {
                std::hint::black_box(big.dataset(ds).unwrap().read_rows(2000, 1).unwrap());
            }),
        );
        r.insert(
            key("one column"),
            best(3, || {
                std::hint::black_box(
                    big.dataset(ds)
                        .unwrap()
                        .read_slice(&[0, 1000], &[4096, 1])
                        .unwrap(),
                );
            }),
        );
    }
    drop(big);

    let out = dir.join("ours-out.h5");
    let img: Vec<f32> = (0..512 * 512).map(|i| ((i % 977) as f32).sin()).collect();
    r.insert(
        "write 512x512 f32 chunked deflate-6",
        best(5, || {
            let mut w = FileWriter::new();
            w.write_dataset(
                "/img",
                Array::matrix(512, 512, Data::F32(img.clone())).unwrap(),
                DatasetOptions {
                    chunk: Some(vec![64, 64]),
                    deflate: Some(6),
                    ..Default::default()
                },
            )
            .unwrap();
            std::fs::write(&out, w.to_bytes().unwrap()).unwrap(); // no fsync, like H5Fclose
        }),
    );
    r.insert(
        "write 128 attributes",
        best(10, || {
            let mut w = FileWriter::new();
            for i in 0..128 {
                w.set_attr(
                    "/",
                    &format!("attr{i}"),
                    Array::scalar(Data::F64(vec![i as f64])),
                )
                .unwrap();
            }
            std::fs::write(&out, w.to_bytes().unwrap()).unwrap(); // no fsync, like H5Fclose
        }),
    );
    r.insert(
        "create 64 groups",
        best(10, || {
            let mut w = FileWriter::new();
            for i in 0..64 {
                w.create_group(&format!("/g{i}")).unwrap();
            }
            std::fs::write(&out, w.to_bytes().unwrap()).unwrap(); // no fsync, like H5Fclose
        }),
    );
    r.insert(
        "write 10K small datasets",
        best(3, || {
            let mut w = FileWriter::new();
            for i in 0..10_000 {
                w.write_dataset(
                    &format!("/d{i}"),
                    Array::vector(Data::I32(vec![i; 4])),
                    DatasetOptions::default(),
                )
                .unwrap();
            }
            std::fs::write(&out, w.to_bytes().unwrap()).unwrap(); // no fsync, like H5Fclose
        }),
    );
    let many = dir.join("many.h5");
    r.insert(
        "open + read 10K small datasets",
        best(3, || {
            let f = H5File::open(&many).unwrap();
            for i in 0..10_000 {
                std::hint::black_box(f.dataset(&format!("/d{i}")).unwrap().read().unwrap());
            }
        }),
    );
    let strings: Vec<String> = (0..100_000).map(|i| format!("memory number {i}")).collect();
    r.insert(
        "write 100K vlen strings",
        best(5, || {
            let mut w = FileWriter::new();
            w.write_dataset(
                "/s",
                Array::vector(Data::VarStr(strings.clone())),
                DatasetOptions::default(),
            )
            .unwrap();
            std::fs::write(&out, w.to_bytes().unwrap()).unwrap(); // no fsync, like H5Fclose
        }),
    );
    let vl = dir.join("vlen.h5");
    r.insert(
        "read 100K vlen strings",
        best(5, || {
            let f = H5File::open(&vl).unwrap();
            std::hint::black_box(f.dataset("/s").unwrap().read().unwrap());
        }),
    );
    println!("{}", serde_json::to_string(&r)?);
    Ok(())
}
