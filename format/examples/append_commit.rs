//! Times `FileAppender` commits (medians of `--rounds N`, default 9), each on a file the run writes first:
//!
//! - a root attribute, on a file without references (one pass);
//! - rows appended to a dataset that a dataset of object references names, plus a new 512×512 f32 dataset in
//!   64×64 chunks under deflate 6: the commit rewrites the reference, so it writes twice in memory.
//!
//! Usage: `cargo run --release -p clawhdf5-format --example append_commit -- [--rounds N]`

use clawhdf5_format::{Array, Data, DatasetOptions, FileAppender, FileWriter};
use std::path::Path;
use std::time::Instant;

type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Milliseconds of each round's session on `path` (opened, changed by `change`, committed).
fn time_commits(
    path: &Path,
    rounds: usize,
    change: &dyn Fn(&mut FileAppender, usize) -> Res,
) -> Res<f64> {
    let mut ms = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let t = Instant::now();
        let mut a = FileAppender::open(path)?;
        change(&mut a, i)?;
        a.commit()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(ms))
}

fn main() -> Res {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = match args.iter().position(|a| a == "--rounds") {
        Some(i) => args.get(i + 1).ok_or("--rounds needs a number")?.parse()?,
        None => 9,
    };
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let dir = tempfile::tempdir()?;
    let grow = DatasetOptions {
        chunk: Some(vec![4]),
        max_shape: Some(vec![None]),
        ..Default::default()
    };

    let plain = dir.path().join("plain.h5");
    let mut w = FileWriter::new();
    w.write_dataset(
        "/t",
        Array::vector(Data::I64(vec![1, 2, 3, 4])),
        grow.clone(),
    )?;
    w.write_file(&plain)?;
    let attr = time_commits(&plain, rounds, &|a, i| {
        a.set_attr("/", "round", Array::scalar(Data::I64(vec![i as i64])))?;
        Ok(())
    })?;

    let refs = dir.path().join("refs.h5");
    let mut w = FileWriter::new();
    w.write_dataset("/t", Array::vector(Data::I64(vec![1, 2, 3, 4])), grow)?;
    w.write_object_refs("/r", &["/t"])?;
    w.write_file(&refs)?;
    let values: Vec<f32> = (0..512 * 512)
        .map(|i| ((i as f32) * 0.37).sin() * 100.0)
        .collect();
    let two_pass = time_commits(&refs, rounds, &|a, i| {
        a.append_rows("/t", Array::vector(Data::I64(vec![i as i64])))?;
        a.write_dataset(
            &format!("/new{i}"),
            Array {
                shape: vec![512, 512],
                data: Data::F32(values.clone()),
            },
            DatasetOptions {
                chunk: Some(vec![64, 64]),
                deflate: Some(6),
                ..Default::default()
            },
        )?;
        Ok(())
    })?;

    println!("| commit | median (ms) |\n|---|---:|");
    println!("| a root attribute (no references in the file) | {attr:.3} |");
    println!(
        "| rows appended to a referenced dataset + a new 512x512 f32 dataset, deflate 6 (two passes) | {two_pass:.3} |"
    );
    Ok(())
}
