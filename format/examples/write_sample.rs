//! Writes a small file exercising the writer's features: `cargo run --example write_sample OUT.h5`.

use clawhdf5_format::{f16, Array, Data, DatasetOptions, FileWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: write_sample OUT.h5")?;
    let mut w = FileWriter::new();
    w.write_dataset(
        "/mem/vectors",
        Array::matrix(100, 8, Data::F32((0..800).map(|x| x as f32).collect()))?,
        DatasetOptions {
            chunk: Some(vec![16, 8]),
            deflate: Some(6),
            shuffle: true,
            fletcher32: true,
            max_shape: Some(vec![None, Some(8)]),
            ..Default::default()
        },
    )?;
    w.write_dataset(
        "/mem/texts",
        Array::vector(Data::VarStr(
            (0..50).map(|i| format!("text {i} ✓")).collect(),
        )),
        DatasetOptions::default(),
    )?;
    w.write_dataset(
        "/mem/half",
        Array::vector(Data::F16(vec![f16::from_f32(0.5); 4])),
        DatasetOptions {
            compact: true,
            ..Default::default()
        },
    )?;
    for i in 0..12 {
        w.create_group(&format!("/groups/g{i}"))?;
        w.set_attr(
            "/groups",
            &format!("a{i}"),
            Array::scalar(Data::I32(vec![i])),
        )?;
    }
    w.set_attr(
        "/",
        "title",
        Array::scalar(Data::VarStr(vec!["sample".into()])),
    )?;
    w.write_file(std::path::Path::new(&out))?;
    Ok(())
}
