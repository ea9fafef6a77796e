//! Shapes a caller gets wrong — a product that overflows 64 bits, or an empty dataset whose other
//! dimensions are vast — are clear errors or empty datasets, never a panic (the shape is a public field, so
//! it need not have passed `Array::new`'s check).

use clawhdf5_format::{Array, Data, DatasetOptions, FileWriter, FormatError, H5File};

#[test]
fn an_overflowing_shape_is_refused_by_every_writer_entry() {
    let bad = || Array {
        shape: vec![u64::MAX, 4],
        data: Data::I32(vec![1, 2, 3, 4]),
    };
    let mut w = FileWriter::new();
    let e = w
        .write_dataset("/d", bad(), DatasetOptions::default())
        .unwrap_err();
    assert!(matches!(e, FormatError::Invalid(_)), "{e}");
    let e = w.set_attr("/", "a", bad()).unwrap_err();
    assert!(matches!(e, FormatError::Invalid(_)), "{e}");
    assert!(Array::new(vec![u64::MAX, 4], Data::I32(vec![1, 2, 3, 4])).is_err());
}

#[test]
fn an_empty_dataset_with_vast_other_dimensions_is_written_and_read_back_empty() {
    let mut w = FileWriter::new();
    let empty = Array::new(
        vec![1 << 40, 1 << 40, 1 << 40, 1 << 40, 1 << 40, 0],
        Data::U8(vec![]),
    )
    .unwrap();
    w.write_dataset(
        "/e",
        empty,
        DatasetOptions {
            chunk: Some(vec![1, 1, 1, 1, 1, 1]),
            ..Default::default()
        },
    )
    .unwrap();
    let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
    let d = f.dataset("/e").unwrap();
    assert_eq!(d.shape()[5], 0);
    assert_eq!(d.read().unwrap().data.len(), 0);
}
