//! Times whole reads of datasets with the format crate and prints `{name: median ms}` as JSON; run by
//! `format/bench/filters_h5py.py`, which times the same reads with h5py in the same run.
//!
//! Usage: read_filters FILE REPS DATASET...

use clawhdf5_format::H5File;
use std::collections::BTreeMap;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: read_filters FILE REPS DATASET...";
    let file = args.next().ok_or(usage)?;
    let reps: usize = args.next().ok_or(usage)?.parse()?;
    let f = H5File::open(std::path::Path::new(&file))?;
    let mut out = BTreeMap::new();
    for name in args {
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            let a = f.dataset(&format!("/{name}"))?.read()?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(a);
        }
        times.sort_by(f64::total_cmp);
        out.insert(name, times[times.len() / 2]);
    }
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}
