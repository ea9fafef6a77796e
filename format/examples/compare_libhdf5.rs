//! Side-by-side benchmark: clawhdf5-format against libhdf5 (the C library, 1.14, built from the
//! sources bundled with the `hdf5-metno-src` crate and linked statically), same process, same run.
//!
//!     cargo run --release -p clawhdf5-format --features libhdf5-compare --example compare_libhdf5 \
//!         [-- --rounds 7] [--dir DIR] [--out results.md]
//!
//! The read-test files are written by libhdf5 itself. Each operation runs alternately with both
//! libraries for `--rounds` rounds (tiny operations are batched so one sample takes about 2 ms);
//! the table gives the median time of one operation for each and libhdf5 ÷ ours (> 1: we are
//! faster). Large contiguous reads are also compared with `dd if=FILE of=/dev/null bs=1M` on the
//! same file (warm page cache) and with an in-process loop of 1 MiB `read` calls (dd without the
//! process start). Writes go to the page cache on both sides: ours is `FileWriter::to_bytes` +
//! `std::fs::write`, libhdf5's is create + write + close; neither fsyncs. A last table times the
//! system calls alone of two operations (no HDF5 code: opening, reading and closing the attribute
//! file; writing the bytes of our 100K-string file to a new file): libhdf5's time over them is the
//! most any library could be faster than libhdf5 there.

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, H5File, StringColumn};
use hdf5_metno as h5;
use hdf5_metno::types::VarLenUnicode;
use std::error::Error;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

type Res<T = ()> = Result<T, Box<dyn Error>>;

const ROWS: usize = 4096;
/// The reference row of our dd-like read.
const STREAMED: &str =
    "whole dataset in 64-row (1 MiB) blocks, `read_slice_into` one reused buffer (as dd reads)";
const COLS: usize = 2048;

/// One measured operation: name, then our and libhdf5's medians (seconds per operation) of
/// wall-clock time and of CPU time (all threads of the process).
struct Row {
    name: String,
    ours: f64,
    theirs: f64,
    ours_cpu: f64,
    theirs_cpu: f64,
}

/// CPU time used so far by all threads of this process, in seconds.
fn cpu_seconds() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}

/// Files the write benchmarks create: a new name per call (overwriting an existing file makes
/// ext4 flush it on close, which would time the file system rather than the libraries); all
/// removed between samples, outside the timed part.
struct Scratch {
    dir: PathBuf,
    next: std::cell::Cell<u64>,
}

impl Scratch {
    fn fresh(&self, tag: &str) -> PathBuf {
        let n = self.next.get();
        self.next.set(n + 1);
        self.dir.join(format!("{tag}-{n}.h5"))
    }

    fn clear(&self) -> Res {
        for e in std::fs::read_dir(&self.dir)? {
            std::fs::remove_file(e?.path())?;
        }
        Ok(())
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Wall-clock and CPU seconds for `k` calls of `f`, divided by `k`.
fn sample(k: usize, f: &mut dyn FnMut() -> Res) -> Res<(f64, f64)> {
    let c = cpu_seconds();
    let t = Instant::now();
    for _ in 0..k {
        f()?;
    }
    let wall = t.elapsed().as_secs_f64() / k as f64;
    Ok((wall, (cpu_seconds() - c) / k as f64))
}

/// Batch size so that one sample of `f` takes about 2 ms (at most 2000 calls).
fn batch(f: &mut dyn FnMut() -> Res) -> Res<usize> {
    let one = sample(1, f)?.0.max(1e-7);
    Ok(((2e-3 / one).ceil() as usize).clamp(1, 2000))
}

struct Bench {
    rounds: usize,
    rows: Vec<Row>,
    /// System calls alone of an operation: its name, the row it bounds, median wall and CPU seconds.
    floors: Vec<(String, String, f64, f64)>,
    scratch: Scratch,
}

impl Bench {
    /// Times `ours` and `theirs` alternately; records the medians.
    fn pair(
        &mut self,
        name: &str,
        mut ours: impl FnMut() -> Res,
        mut theirs: impl FnMut() -> Res,
    ) -> Res {
        let (ko, kt) = (batch(&mut ours)?, batch(&mut theirs)?);
        self.scratch.clear()?;
        let (mut o, mut t, mut oc, mut tc) = (vec![], vec![], vec![], vec![]);
        for _ in 0..self.rounds {
            let (w, c) = sample(ko, &mut ours)?;
            o.push(w);
            oc.push(c);
            self.scratch.clear()?;
            let (w, c) = sample(kt, &mut theirs)?;
            t.push(w);
            tc.push(c);
            self.scratch.clear()?;
        }
        let row = Row {
            name: name.to_string(),
            ours: median(o),
            theirs: median(t),
            ours_cpu: median(oc),
            theirs_cpu: median(tc),
        };
        eprintln!(
            "{:<62} ours {:>10.6} s  libhdf5 {:>10.6} s  {:>7.2}x wall {:>7.2}x cpu",
            row.name,
            row.ours,
            row.theirs,
            row.theirs / row.ours,
            row.theirs_cpu / row.ours_cpu
        );
        self.rows.push(row);
        Ok(())
    }

    /// Times `f`, the system calls alone of the operation timed as `row` (batched and cleared up after
    /// like [`Self::pair`]'s samples), and records its medians.
    fn floor(&mut self, name: &str, row: &str, mut f: impl FnMut() -> Res) -> Res {
        let k = batch(&mut f)?;
        self.scratch.clear()?;
        let (mut w, mut c) = (vec![], vec![]);
        for _ in 0..self.rounds {
            let (wall, cpu) = sample(k, &mut f)?;
            w.push(wall);
            c.push(cpu);
            self.scratch.clear()?;
        }
        let (wall, cpu) = (median(w), median(c));
        eprintln!("{name:<62} {wall:>10.6} s  cpu {cpu:>10.6} s");
        self.floors
            .push((name.to_string(), row.to_string(), wall, cpu));
        Ok(())
    }

    /// Median time of `f` alone (for the dd reference lines).
    fn single(&self, mut f: impl FnMut() -> Res) -> Res<f64> {
        let mut v = vec![];
        for _ in 0..self.rounds {
            v.push(sample(1, &mut f)?.0);
        }
        Ok(median(v))
    }
}

fn strings() -> Vec<String> {
    (0..100_000).map(|i| format!("memory number {i}")).collect()
}

/// Writes the read-test files with libhdf5.
fn make_inputs(d: &Path) -> Res {
    let f = h5::File::create(d.join("attr.h5"))?;
    let a: Vec<f64> = (0..16).map(|i| i as f64).collect();
    f.new_attr_builder().with_data(&a).create("a")?;
    drop(f);

    let f = h5::File::create(d.join("small.h5"))?;
    let k1: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let k100: Vec<f32> = (0..100_000).map(|i| i as f32).collect();
    f.new_dataset_builder().with_data(&k1).create("k1")?;
    f.new_dataset_builder().with_data(&k100).create("k100")?;
    drop(f);

    let mut x = 0x9e3779b97f4a7c15u64;
    let big: Vec<f64> = (0..ROWS * COLS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect();
    let arr = ndarray::ArrayView2::from_shape((ROWS, COLS), &big)?;
    let f = h5::File::create(d.join("contiguous.h5"))?;
    f.new_dataset_builder().with_data(arr).create("data")?;
    drop(f);
    let f = h5::File::create(d.join("chunked.h5"))?;
    f.new_dataset_builder()
        .with_data(arr)
        .chunk((256, 256))
        .create("data")?;
    drop(f);
    let f = h5::File::create(d.join("deflate.h5"))?;
    f.new_dataset_builder()
        .with_data(arr)
        .chunk((256, 256))
        .deflate(4)
        .create("data")?;
    drop(f);

    let f = h5::File::create(d.join("many.h5"))?;
    for i in 0..10_000i32 {
        f.new_dataset_builder()
            .with_data(&[i; 4][..])
            .create(format!("d{i}").as_str())?;
    }
    drop(f);

    let f = h5::File::create(d.join("vlen.h5"))?;
    let v: Vec<VarLenUnicode> = strings()
        .iter()
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    f.new_dataset_builder().with_data(&v).create("s")?;
    drop(f);
    Ok(())
}

/// libhdf5 writes `s` as a dataset of variable-length strings in a new file at `path`; it needs its own
/// string type, so the conversion is part of writing with it.
fn h5_write_strings(s: &[String], path: &Path) -> Res {
    let v: Vec<VarLenUnicode> = s.iter().map(|x| x.parse()).collect::<Result<_, _>>()?;
    let f = h5::File::create(path)?;
    f.new_dataset_builder().with_data(&v).create("s")?;
    Ok(())
}

/// libhdf5 opens `path` and reads its dataset `s` of variable-length strings.
fn h5_read_strings(path: &Path) -> Res {
    let f = h5::File::open(path)?;
    std::hint::black_box(f.dataset("s")?.read_raw::<VarLenUnicode>()?);
    Ok(())
}

/// libhdf5's `H5Dread` of the whole dataset into a caller's buffer (what `read_into` does).
fn h5_read_into(ds: &h5::Dataset, out: &mut [f64]) -> Res {
    if ds.space()?.size() != out.len() {
        return Err("buffer size differs from the dataset".into());
    }
    // SAFETY: `out` holds exactly as many f64 as the dataset has elements (checked above), the
    // memory type is native double and the selections are "all", so libhdf5 writes inside `out`.
    let rc = unsafe {
        hdf5_metno_sys::h5d::H5Dread(
            ds.id(),
            *hdf5_metno_sys::h5t::H5T_NATIVE_DOUBLE,
            hdf5_metno_sys::h5s::H5S_ALL,
            hdf5_metno_sys::h5s::H5S_ALL,
            hdf5_metno_sys::h5p::H5P_DEFAULT,
            out.as_mut_ptr().cast(),
        )
    };
    if rc < 0 {
        return Err("H5Dread failed".into());
    }
    Ok(())
}

fn run(b: &mut Bench, d: &Path) -> Res<Vec<(String, f64)>> {
    let scratch = Scratch {
        dir: b.scratch.dir.clone(),
        next: std::cell::Cell::new(0),
    };
    let p = |n: &str| d.join(n);
    let mut refs = vec![];

    let attr = p("attr.h5");
    b.pair(
        "open + read one attribute",
        || {
            let f = H5File::open(&attr)?;
            std::hint::black_box(f.attr("/", "a")?);
            Ok(())
        },
        || {
            let f = h5::File::open(&attr)?;
            std::hint::black_box(f.attr("a")?.read_raw::<f64>()?);
            Ok(())
        },
    )?;
    let mut page = vec![0u8; 4096];
    b.floor(
        "open + read 4 KiB + close attr.h5, no parsing",
        "open + read one attribute",
        || {
            use std::os::unix::fs::FileExt;
            let f = std::fs::File::open(&attr)?;
            std::hint::black_box(f.read_at(&mut page, 0)?);
            Ok(())
        },
    )?;

    let ours_small = H5File::open(&p("small.h5"))?;
    let theirs_small = h5::File::open(p("small.h5"))?;
    for (label, name) in [("1K", "k1"), ("100K", "k100")] {
        b.pair(
            &format!("read {label} f32 contiguous"),
            || {
                std::hint::black_box(ours_small.dataset(&format!("/{name}"))?.read()?);
                Ok(())
            },
            || {
                std::hint::black_box(theirs_small.dataset(name)?.read_raw::<f32>()?);
                Ok(())
            },
        )?;
    }

    for layout in ["contiguous", "chunked", "deflate"] {
        let file = p(&format!("{layout}.h5"));
        let ours = H5File::open(&file)?;
        let theirs = h5::File::open(&file)?;
        let label = if layout == "deflate" {
            "chunked+deflate"
        } else {
            layout
        };
        let name = |what: &str| format!("4096x2048 f64 {label}: {what}");
        // Each operation opens the dataset afresh so no chunk cache carries over.
        b.pair(
            &name("full read (new buffer)"),
            || {
                std::hint::black_box(ours.dataset("/data")?.read()?);
                Ok(())
            },
            || {
                std::hint::black_box(theirs.dataset("data")?.read_raw::<f64>()?);
                Ok(())
            },
        )?;
        let mut buf_o = vec![0f64; ROWS * COLS];
        let mut buf_t = vec![0f64; ROWS * COLS];
        b.pair(
            &name("full read into a reused buffer"),
            || {
                ours.dataset("/data")?.read_into(&mut buf_o)?;
                std::hint::black_box(&buf_o);
                Ok(())
            },
            || {
                h5_read_into(&theirs.dataset("data")?, &mut buf_t)?;
                std::hint::black_box(&buf_t);
                Ok(())
            },
        )?;
        let windows: [(&str, [usize; 2], [usize; 2]); 4] = [
            ("64x64 window", [1000, 1000], [64, 64]),
            ("512x512 window", [1000, 1000], [512, 512]),
            ("one row", [2000, 0], [1, COLS]),
            ("one column", [0, 1000], [ROWS, 1]),
        ];
        for (what, s, c) in windows {
            b.pair(
                &name(what),
                || {
                    let st = [s[0] as u64, s[1] as u64];
                    let ct = [c[0] as u64, c[1] as u64];
                    std::hint::black_box(ours.dataset("/data")?.read_slice(&st, &ct)?);
                    Ok(())
                },
                || {
                    let sel = (s[0]..s[0] + c[0], s[1]..s[1] + c[1]);
                    std::hint::black_box(theirs.dataset("data")?.read_slice_2d::<f64, _>(sel)?);
                    Ok(())
                },
            )?;
        }
        // A strided hyperslab: every 64th row (64 rows of 2048), as libhdf5 selects it.
        b.pair(
            &name("every 64th row (strided hyperslab)"),
            || {
                let ds = ours.dataset("/data")?;
                let c = COLS as u64;
                std::hint::black_box(ds.read_hyperslab(&[0, 0], &[64, 1], &[64, c], &[1, 1])?);
                Ok(())
            },
            || {
                let ds = theirs.dataset("data")?;
                std::hint::black_box(ds.read_slice_2d::<f64, _>(ndarray::s![0..ROWS;64, ..])?);
                Ok(())
            },
        )?;
        if layout == "contiguous" {
            let dd = b.single(|| {
                let st = std::process::Command::new("dd")
                    .arg(format!("if={}", file.display()))
                    .args(["of=/dev/null", "bs=1M"])
                    .stderr(std::process::Stdio::null())
                    .status()?;
                if !st.success() {
                    return Err("dd failed".into());
                }
                Ok(())
            })?;
            let mut chunk = vec![0u8; 1 << 20];
            let loop_read = b.single(|| {
                let mut f = std::fs::File::open(&file)?;
                while f.read(&mut chunk)? > 0 {}
                Ok(())
            })?;
            // Ours the way dd reads: the whole dataset through one reused 1 MiB buffer (64 rows).
            let mut block = vec![0f64; 64 * COLS];
            let streamed = b.single(|| {
                let ds = ours.dataset("/data")?;
                for r in (0..ROWS as u64).step_by(64) {
                    ds.read_slice_into(&[r, 0], &[64, COLS as u64], &mut block)?;
                    std::hint::black_box(&block);
                }
                Ok(())
            })?;
            let len = std::fs::metadata(&file)?.len();
            refs.push((
                format!("dd if=contiguous.h5 of=/dev/null bs=1M ({len} bytes, whole command)"),
                dd,
            ));
            refs.push((STREAMED.to_string(), streamed));
            refs.push((
                "same file, in-process loop of 1 MiB read() calls".to_string(),
                loop_read,
            ));
        }
    }

    let img: Vec<f32> = (0..512 * 512).map(|i| ((i % 977) as f32).sin()).collect();
    b.pair(
        "write 512x512 f32 chunked 64x64 deflate-6",
        || {
            let mut w = FileWriter::new();
            w.write_dataset(
                "/img",
                Array::matrix(512, 512, Data::F32(img.clone()))?,
                DatasetOptions {
                    chunk: Some(vec![64, 64]),
                    deflate: Some(6),
                    ..Default::default()
                },
            )?;
            std::fs::write(scratch.fresh("ours"), w.to_bytes()?)?;
            Ok(())
        },
        || {
            let f = h5::File::create(scratch.fresh("libhdf5"))?;
            let a = ndarray::ArrayView2::from_shape((512, 512), &img)?;
            f.new_dataset_builder()
                .with_data(a)
                .chunk((64, 64))
                .deflate(6)
                .create("img")?;
            Ok(())
        },
    )?;
    b.pair(
        "write 128 attributes",
        || {
            let mut w = FileWriter::new();
            for i in 0..128 {
                w.set_attr(
                    "/",
                    &format!("attr{i}"),
                    Array::scalar(Data::F64(vec![i as f64])),
                )?;
            }
            std::fs::write(scratch.fresh("ours"), w.to_bytes()?)?;
            Ok(())
        },
        || {
            let f = h5::File::create(scratch.fresh("libhdf5"))?;
            for i in 0..128 {
                f.new_attr::<f64>()
                    .create(format!("attr{i}").as_str())?
                    .write_scalar(&(i as f64))?;
            }
            Ok(())
        },
    )?;
    b.pair(
        "create 64 groups",
        || {
            let mut w = FileWriter::new();
            for i in 0..64 {
                w.create_group(&format!("/g{i}"))?;
            }
            std::fs::write(scratch.fresh("ours"), w.to_bytes()?)?;
            Ok(())
        },
        || {
            let f = h5::File::create(scratch.fresh("libhdf5"))?;
            for i in 0..64 {
                f.create_group(&format!("g{i}"))?;
            }
            Ok(())
        },
    )?;
    b.pair(
        "write 10K small datasets (4 x i32 each)",
        || {
            let mut w = FileWriter::new();
            for i in 0..10_000 {
                w.write_dataset(
                    &format!("/d{i}"),
                    Array::vector(Data::I32(vec![i; 4])),
                    DatasetOptions::default(),
                )?;
            }
            std::fs::write(scratch.fresh("ours"), w.to_bytes()?)?;
            Ok(())
        },
        || {
            let f = h5::File::create(scratch.fresh("libhdf5"))?;
            for i in 0..10_000i32 {
                f.new_dataset_builder()
                    .with_data(&[i; 4][..])
                    .create(format!("d{i}").as_str())?;
            }
            Ok(())
        },
    )?;
    let many = p("many.h5");
    b.pair(
        "open + read 10K small datasets",
        || {
            let f = H5File::open(&many)?;
            for i in 0..10_000 {
                std::hint::black_box(f.dataset(&format!("/d{i}"))?.read()?);
            }
            Ok(())
        },
        || {
            let f = h5::File::open(&many)?;
            for i in 0..10_000 {
                std::hint::black_box(f.dataset(&format!("d{i}"))?.read_raw::<i32>()?);
            }
            Ok(())
        },
    )?;
    let s = strings();
    b.pair(
        "write 100K vlen strings",
        || {
            let mut w = FileWriter::new();
            w.write_dataset(
                "/s",
                Array::vector(Data::VarStr(s.clone())),
                DatasetOptions::default(),
            )?;
            std::fs::write(scratch.fresh("ours"), w.to_bytes()?)?;
            Ok(())
        },
        || h5_write_strings(&s, &scratch.fresh("libhdf5")),
    )?;
    let vlen_bytes = {
        let mut w = FileWriter::new();
        w.write_strings("/s", s.iter().collect(), DatasetOptions::default())?;
        w.to_bytes()?
    };
    // Its own names in the same folder, which the benchmark clears between samples.
    let scratch = Scratch {
        dir: b.scratch.dir.clone(),
        next: std::cell::Cell::new(0),
    };
    b.floor(
        &format!(
            "write our 100K-string file's {} bytes to a new file, no encoding",
            vlen_bytes.len()
        ),
        "write 100K vlen strings from a StringColumn",
        || {
            std::fs::write(scratch.fresh("floor"), &vlen_bytes)?;
            Ok(())
        },
    )?;
    b.pair(
        "write 100K vlen strings from a StringColumn",
        || {
            // The column is built from the caller's strings inside the timing, as libhdf5's are converted.
            let column: StringColumn = s.iter().collect();
            let mut w = FileWriter::new();
            w.write_strings("/s", column, DatasetOptions::default())?;
            std::fs::write(scratch.fresh("ours"), w.to_bytes()?)?;
            Ok(())
        },
        || h5_write_strings(&s, &scratch.fresh("libhdf5")),
    )?;
    let vl = p("vlen.h5");
    b.pair(
        "open + read 100K vlen strings",
        || {
            let f = H5File::open(&vl)?;
            std::hint::black_box(f.dataset("/s")?.read()?);
            Ok(())
        },
        || h5_read_strings(&vl),
    )?;
    b.pair(
        "open + read 100K vlen strings into a StringColumn",
        || {
            let f = H5File::open(&vl)?;
            std::hint::black_box(f.dataset("/s")?.read_strings()?);
            Ok(())
        },
        || h5_read_strings(&vl),
    )?;
    // As the f64 rows "into a reused buffer": a caller that reads strings again keeps its column.
    let mut column = StringColumn::new();
    b.pair(
        "open + read 100K vlen strings into a reused StringColumn",
        || {
            let f = H5File::open(&vl)?;
            f.dataset("/s")?.read_strings_into(&mut column)?;
            std::hint::black_box(&column);
            Ok(())
        },
        || h5_read_strings(&vl),
    )?;
    Ok(refs)
}

fn main() -> Res {
    let args: Vec<String> = std::env::args().collect();
    let opt = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let rounds: usize = opt("--rounds").map(|s| s.parse()).transpose()?.unwrap_or(7);
    let tmp;
    let dir: PathBuf = match opt("--dir") {
        Some(d) => PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let (maj, min, rel) = h5::library_version();
    eprintln!(
        "libhdf5 {maj}.{min}.{rel}; writing inputs to {}",
        dir.display()
    );
    make_inputs(&dir)?;
    let scratch_dir = dir.join("scratch");
    std::fs::create_dir_all(&scratch_dir)?;
    let mut b = Bench {
        rounds,
        rows: vec![],
        floors: vec![],
        scratch: Scratch {
            dir: scratch_dir,
            next: std::cell::Cell::new(0),
        },
    };
    let refs = run(&mut b, &dir)?;

    let mut md = String::new();
    md.push_str(&format!(
        "| operation | clawhdf5 (s) | libhdf5 {maj}.{min}.{rel} (s) | libhdf5 ÷ ours (wall) | CPU: clawhdf5 (s) | CPU: libhdf5 (s) | libhdf5 ÷ ours (CPU) |\n|---|---:|---:|---:|---:|---:|---:|\n"
    ));
    for r in &b.rows {
        md.push_str(&format!(
            "| {} | {:.6} | {:.6} | {:.2}× | {:.6} | {:.6} | {:.2}× |\n",
            r.name,
            r.ours,
            r.theirs,
            r.theirs / r.ours,
            r.ours_cpu,
            r.theirs_cpu,
            r.theirs_cpu / r.ours_cpu
        ));
    }
    let ours_into = b
        .rows
        .iter()
        .find(|r| r.name.contains("contiguous: full read into"))
        .map(|r| r.ours)
        .unwrap_or(f64::NAN);
    md.push_str(
        "\n| reference read of contiguous.h5 (warm page cache) | median (s) | clawhdf5 `read_into` ÷ this |\n|---|---:|---:|\n",
    );
    for (name, t) in refs.iter().filter(|(n, _)| n != STREAMED) {
        md.push_str(&format!("| {name} | {t:.6} | {:.2}× |\n", ours_into / t));
    }
    let dd = refs.iter().find(|(n, _)| n.starts_with("dd ")).map(|r| r.1);
    if let (Some((_, t)), Some(dd)) = (refs.iter().find(|(n, _)| n == STREAMED), dd) {
        md.push_str(&format!(
            "\n| clawhdf5 read of contiguous.h5 | median (s) | ÷ the dd command |\n|---|---:|---:|\n\
             | whole dataset, `read_into` one 64 MiB buffer | {ours_into:.6} | {:.2}× |\n\
             | {STREAMED} | {t:.6} | {:.2}× |\n",
            ours_into / dd,
            t / dd
        ));
    }
    md.push_str(
        "\n| system calls alone (no HDF5 code) | median (s) | CPU (s) | of the row | libhdf5's time ÷ this (CPU) | ours ÷ this (CPU) |\n|---|---:|---:|---|---:|---:|\n",
    );
    for (name, row, wall, cpu) in &b.floors {
        let Some(r) = b.rows.iter().find(|r| &r.name == row) else {
            continue;
        };
        md.push_str(&format!(
            "| {name} | {wall:.6} | {cpu:.6} | {row} | {:.2}× | {:.2}× |\n",
            r.theirs_cpu / cpu,
            r.ours_cpu / cpu
        ));
    }
    print!("{md}");
    if let Some(out) = opt("--out") {
        std::fs::write(out, &md)?;
    }
    Ok(())
}
