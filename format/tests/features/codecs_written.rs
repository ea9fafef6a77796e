//! Datasets we write through the plugin codecs (`DatasetOptions::codec`): LZF, LZ4, zstd, bzip2, Blosc
//! (each stream codec, with and without shuffle), bitshuffle (LZ4 and zstd blocks) and Blosc2 (each codec and
//! shuffle), alone and under shuffle and fletcher32, in a new file and added by the appender; we read them
//! back, h5py (with hdf5plugin's filters) reads them equal, and PyTables (HDF5 1.14) reads the Blosc, Blosc2
//! and bzip2 ones. (LZO, which h5py cannot read here, is tested in `tests/lzo.rs`.)

use crate::common;

use clawhdf5_format::{
    Array, Blosc2Codec, Blosc2Shuffle, BloscCodec, Codec, Data, DatasetOptions, FileAppender,
    FileWriter, FormatError, H5File,
};

fn codecs() -> Vec<(&'static str, Codec)> {
    let blosc = |codec, shuffle| Codec::Blosc {
        codec,
        level: 5,
        shuffle,
    };
    let blosc2 = |codec, shuffle| Codec::Blosc2 {
        codec,
        level: 5,
        shuffle,
    };
    vec![
        ("lzf", Codec::Lzf),
        ("lz4", Codec::Lz4),
        ("zstd", Codec::Zstd(5)),
        ("bzip2", Codec::Bzip2(9)),
        ("blosc_blosclz", blosc(BloscCodec::BloscLz, true)),
        ("blosc_lz4", blosc(BloscCodec::Lz4, true)),
        ("blosc_lz4hc", blosc(BloscCodec::Lz4Hc, true)),
        ("blosc_snappy", blosc(BloscCodec::Snappy, false)),
        ("blosc_zlib", blosc(BloscCodec::Zlib, true)),
        ("blosc_zstd", blosc(BloscCodec::Zstd, false)),
        ("bitshuffle_lz4", Codec::BitshuffleLz4),
        ("bitshuffle_zstd", Codec::BitshuffleZstd(5)),
        (
            "blosc2_blosclz",
            blosc2(Blosc2Codec::BloscLz, Blosc2Shuffle::Byte),
        ),
        ("blosc2_lz4", blosc2(Blosc2Codec::Lz4, Blosc2Shuffle::Byte)),
        (
            "blosc2_lz4hc",
            blosc2(Blosc2Codec::Lz4Hc, Blosc2Shuffle::Bit),
        ),
        (
            "blosc2_zlib",
            blosc2(Blosc2Codec::Zlib, Blosc2Shuffle::None),
        ),
        ("blosc2_zstd", blosc2(Blosc2Codec::Zstd, Blosc2Shuffle::Bit)),
    ]
}

fn vectors(n: u64) -> Array {
    Array::matrix(
        n,
        8,
        Data::F32((0..n * 8).map(|i| (i / 5) as f32 * 0.25).collect()),
    )
    .unwrap()
}

#[test]
fn datasets_written_through_each_codec_read_back_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codecs.h5");
    let mut w = FileWriter::new();
    for (name, codec) in codecs() {
        for (variant, shuffle, fletcher32) in [("plain", false, false), ("shuffled", true, true)] {
            w.write_dataset(
                &format!("/{name}/{variant}"),
                vectors(1000),
                DatasetOptions {
                    chunk: Some(vec![128, 8]),
                    max_shape: Some(vec![None, Some(8)]),
                    shuffle,
                    fletcher32,
                    codec: Some(codec),
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        if !matches!(codec, Codec::Blosc { .. }) {
            w.write_dataset(
                &format!("/{name}/texts"),
                Array::vector(Data::VarStr(
                    (0..300).map(|i| format!("memory {i}")).collect(),
                )),
                DatasetOptions {
                    codec: Some(codec),
                    ..Default::default()
                },
            )
            .unwrap();
        }
    }
    let e = w
        .write_dataset(
            "/both",
            vectors(4),
            DatasetOptions {
                deflate: Some(4),
                codec: Some(Codec::Lz4),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(e, FormatError::Invalid(_)), "{e}");
    w.write_file(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    // Two float datasets of 32 KB each that compress well per codec, and the texts.
    let datasets = 2 * codecs().len() as u64;
    // Each compresses to under a third, plus its metadata (object header, a chunk B-tree of 8 chunks).
    assert!(size < datasets * (32_000 / 3 + 1_024), "{size} bytes");

    // The appender adds rows to them and a dataset of its own.
    let mut a = FileAppender::open(&path).unwrap();
    for (name, _) in codecs() {
        a.append_rows(&format!("/{name}/plain"), vectors(200))
            .unwrap();
    }
    a.write_dataset(
        "/added",
        vectors(300),
        DatasetOptions {
            codec: Some(Codec::Zstd(3)),
            shuffle: true,
            ..Default::default()
        },
    )
    .unwrap();
    a.commit().unwrap();

    let f = H5File::open(&path).unwrap();
    let mut plain = vectors(1000).as_f32().unwrap().to_vec();
    plain.extend_from_slice(vectors(200).as_f32().unwrap());
    for (name, _) in codecs() {
        let got = f
            .dataset(&format!("/{name}/plain"))
            .unwrap()
            .read()
            .unwrap();
        assert_eq!(got.as_f32().unwrap(), &plain[..], "{name}");
        let got = f
            .dataset(&format!("/{name}/shuffled"))
            .unwrap()
            .read()
            .unwrap();
        assert_eq!(got, vectors(1000), "{name}");
    }
    assert_eq!(f.dataset("/added").unwrap().read().unwrap(), vectors(300));
    if !common::have_python_module("hdf5plugin") {
        return;
    }
    common::assert_equal_to_h5py(&path);
    if common::have_python_module("tables") {
        common::run_python(
            r#"
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np, tables
want = (np.arange(8000) // 5).astype("<f4").reshape(1000, 8) * 0.25
with tables.open_file(sys.argv[1]) as f:
    for name in ["blosc_blosclz", "blosc_lz4", "blosc_snappy", "blosc_zlib", "blosc_zstd", "bzip2", "blosc2_blosclz", "blosc2_lz4", "blosc2_zlib",
                 "blosc2_zstd"]:
        if name == "blosc_snappy" and "snappy" not in tables.blosc_compressor_list():
            continue
        assert np.array_equal(f.get_node("/%s/shuffled" % name)[:], want), name
        assert f.get_node("/%s/plain" % name).shape == (1200, 8), name
"#,
            &[&path],
        );
    }
}
