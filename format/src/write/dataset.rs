//! Writing a dataset: layout choice, chunking + filters, and its object header.

use crate::array::{Array, Data};
use crate::btree::v1::{write_chunk_tree, ChunkEntry};
use crate::convert;
use crate::dataspace::Dataspace;
use crate::datatype::Datatype;
use crate::error::{invalid, unsupported, Result};
use crate::filters;
use crate::io::UNDEF;
use crate::messages::{self, ChunkIndex, Filter, Layout};
use crate::object_header::mtype;
use crate::select::copy_box;
use crate::sizes::Sizes;
use crate::strings::StringColumn;
use crate::write::object::write_object;
use crate::write::sink::{raw_hash, HeapSink, Replay, Sink, StoredChunk};
use rayon::prelude::*;

/// How a dataset is stored. The default is contiguous, unfiltered, fixed-size.
#[derive(Clone, Debug, Default)]
pub struct DatasetOptions {
    /// Chunk shape (required for filters and resizable datasets; chosen if absent).
    pub chunk: Option<Vec<u64>>,
    /// Deflate level 0–9.
    pub deflate: Option<u32>,
    pub shuffle: bool,
    pub fletcher32: bool,
    /// Maximum shape; a `None` entry is unlimited.
    pub max_shape: Option<Vec<Option<u64>>>,
    /// Store the data inside the object header (small datasets only).
    pub compact: bool,
    /// A compressor other than deflate (not both), written as the plugin filter h5py (with hdf5plugin) and
    /// PyTables read.
    pub codec: Option<Codec>,
}

/// Compressors besides deflate, each written as the registered HDF5 filter readers know it by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Codec {
    /// h5py's LZF (filter 32000): fast; a chunk it cannot shrink is stored as it is.
    Lzf,
    /// LZ4 (filter 32004, the HDF Group's framing; hdf5plugin).
    Lz4,
    /// Zstandard (filter 32015; hdf5plugin) at a level of 1–22.
    Zstd(i32),
    /// bzip2 (filter 307; PyTables, hdf5plugin) with blocks of 100–900 kB (1–9).
    Bzip2(u32),
    /// Blosc (filter 32001; PyTables, hdf5plugin): streams of `codec` at `level` (1–9), after a byte
    /// shuffle when `shuffle`.
    Blosc {
        codec: BloscCodec,
        level: u32,
        shuffle: bool,
    },
    /// Bitshuffle (filter 32008; hdf5plugin, Dectris detectors): bit planes of blocks of elements, each block
    /// LZ4-compressed.
    BitshuffleLz4,
    /// Bitshuffle with each block zstd-compressed at a level of 1–22.
    BitshuffleZstd(i32),
    /// Blosc2 (filter 32026; hdf5plugin, PyTables): each chunk a Blosc2 frame of `codec` streams at `level`
    /// (1–9), after `shuffle`.
    Blosc2 {
        codec: Blosc2Codec,
        level: u32,
        shuffle: Blosc2Shuffle,
    },
    /// PyTables' LZO (filter 305): LZO1X streams with PyTables' checksum. h5py and libhdf5 builds without
    /// PyTables' filter cannot read these chunks.
    Lzo,
    /// ZFP (filter 32013, H5Z-ZFP; hdf5plugin) in `mode`: lossy or lossless compression of 32- and 64-bit
    /// floats and integers, chunks of 1 to 4 dimensions larger than 1. The client data are those H5Z-ZFP
    /// records for the chunk shape and type.
    Zfp(crate::zfp::ZfpMode),
    /// FCIDECOMP (filter 32018, EUMETSAT's JPEG-LS filter; `hdf5plugin.FciDecomp`): lossless JPEG-LS of
    /// little-endian 16-bit integers in chunks of 2 dimensions, or 3 with 1 to 4 components first. A chunk
    /// JPEG-LS does not shrink is stored unfiltered (the filter is optional, as the plugin's is).
    FciDecomp,
}

/// The codec of Blosc2's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blosc2Codec {
    /// Blosc's own LZ77 (hdf5plugin's default).
    BloscLz,
    Lz4,
    /// LZ4 streams from a deeper search (smaller, slower to write; read as fast).
    Lz4Hc,
    Zlib,
    Zstd,
}

/// The filter Blosc2 applies to each block before its codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blosc2Shuffle {
    None,
    /// Bytes grouped by their place in the element.
    Byte,
    /// Bits grouped by their place in the element.
    Bit,
}

/// The codec of Blosc's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BloscCodec {
    /// Blosc's own LZ77 (its default in PyTables and hdf5plugin).
    BloscLz,
    Lz4,
    /// LZ4 streams from a deeper search (smaller, slower to write; read as fast).
    Lz4Hc,
    Snappy,
    Zlib,
    Zstd,
}

impl Codec {
    /// The filter that writes this codec, for chunks of shape `dims` of `dtype` elements in a dataset that is
    /// `resizable` or not; an error when the codec cannot take them.
    fn filter(self, dtype: &Datatype, dims: &[u64], resizable: bool) -> Result<Filter> {
        let elem = dtype.size();
        let chunk_bytes = dims.iter().product::<u64>().saturating_mul(elem as u64);
        let chunk = u32::try_from(chunk_bytes).unwrap_or(u32::MAX);
        let (id, params) = match self {
            Codec::Lzf => (filters::LZF, vec![4, 261, chunk]),
            Codec::Lz4 => (filters::LZ4, vec![0]),
            Codec::Zstd(level) => (filters::ZSTD, vec![level.clamp(1, 22) as u32]),
            Codec::Bzip2(level) => (filters::BZIP2, vec![level.clamp(1, 9)]),
            Codec::Blosc {
                codec,
                level,
                shuffle,
            } => {
                // Blosc's compressor codes.
                let code = match codec {
                    BloscCodec::BloscLz => 0,
                    BloscCodec::Lz4 => 1,
                    BloscCodec::Lz4Hc => 2,
                    BloscCodec::Snappy => 3,
                    BloscCodec::Zlib => 4,
                    BloscCodec::Zstd => 5,
                };
                let typesize = elem.min(255) as u32;
                (
                    filters::BLOSC,
                    vec![
                        2,
                        2,
                        typesize,
                        chunk,
                        level.clamp(1, 9),
                        u32::from(shuffle),
                        code,
                    ],
                )
            }
            // Bitshuffle 0.4's parameters: version, element size, block (0: its default), compression, level.
            Codec::BitshuffleLz4 => (filters::BITSHUFFLE, vec![0, 4, elem as u32, 0, 2]),
            Codec::BitshuffleZstd(level) => (
                filters::BITSHUFFLE,
                vec![0, 4, elem as u32, 0, 3, level.clamp(1, 22) as u32],
            ),
            Codec::Blosc2 {
                codec,
                level,
                shuffle,
            } => {
                // What hdf5plugin's filter records when libhdf5 creates a dataset: its revision, a block size
                // (0: the encoder's), the element and chunk sizes, level, filter and codec, then the chunk's
                // rank and shape (for 2 to 8 dimensions: its decoder fails a 1-D chunk that records them).
                let code = match codec {
                    Blosc2Codec::BloscLz => 0,
                    Blosc2Codec::Lz4 => 1,
                    Blosc2Codec::Lz4Hc => 2,
                    Blosc2Codec::Zlib => 4,
                    Blosc2Codec::Zstd => 5,
                };
                let filter = match shuffle {
                    Blosc2Shuffle::None => 0,
                    Blosc2Shuffle::Byte => 1,
                    Blosc2Shuffle::Bit => 2,
                };
                let typesize = elem.min(255) as u32;
                let mut cd = vec![1, 0, typesize, chunk, level.clamp(1, 9), filter, code];
                if (2..=8).contains(&dims.len()) {
                    cd.push(dims.len() as u32);
                    cd.extend(dims.iter().map(|&d| u32::try_from(d).unwrap_or(u32::MAX)));
                }
                (filters::BLOSC2, cd)
            }
            // PyTables' parameters: level, the object's format version, its kind (4 a CArray, 2 an EArray):
            // not a table, so PyTables' filter expects the checksum and count after each stream.
            Codec::Lzo => (filters::LZO, vec![1, 20, if resizable { 2 } else { 4 }]),
            Codec::Zfp(mode) => (
                filters::ZFP,
                crate::zfp::h5z_client_data(mode, zfp_scalar(dtype)?, dims)?,
            ),
            Codec::FciDecomp => {
                if !matches!(
                    dtype,
                    Datatype::Int {
                        size: 2,
                        be: false,
                        ..
                    }
                ) {
                    return invalid(format!(
                        "FCIDECOMP codes little-endian 16-bit integers, not {}",
                        dtype.describe()
                    ));
                }
                (
                    filters::FCIDECOMP,
                    crate::jpegls::fcidecomp_client_data(dims)?,
                )
            }
        };
        // Optional, as h5py marks the plugin filters it sets.
        Ok(Filter {
            id,
            flags: 1,
            name: filters::filter_name(id).to_string(),
            params,
        })
    }
}

/// The zfp type of a dataset's elements: little-endian IEEE floats and integers of 32 and 64 bits (unsigned
/// ones coded as their signed kin, as H5Z-ZFP codes them).
fn zfp_scalar(dtype: &Datatype) -> Result<crate::zfp::Scalar> {
    use crate::zfp::Scalar;
    let scalar = match dtype {
        Datatype::Int {
            size: 4, be: false, ..
        } => Some(Scalar::I32),
        Datatype::Int {
            size: 8, be: false, ..
        } => Some(Scalar::I64),
        _ => match dtype.ieee_layout() {
            Some((4, false)) => Some(Scalar::F32),
            Some((8, false)) => Some(Scalar::F64),
            _ => None,
        },
    };
    match scalar {
        Some(s) => Ok(s),
        None => invalid(format!(
            "zfp compresses 32- and 64-bit floats and integers, not {}",
            dtype.describe()
        )),
    }
}

/// Largest compact dataset we write.
const MAX_COMPACT_DATA: usize = 60 * 1024;

/// Chunk size we aim for when choosing a chunk shape.
const AUTO_CHUNK_BYTES: u64 = 256 * 1024;

/// Picks a chunk shape: full inner dimensions, enough rows for about 256 KiB.
pub fn auto_chunk(shape: &[u64], elem: usize) -> Vec<u64> {
    let mut c: Vec<u64> = shape.iter().map(|&d| d.clamp(1, 1 << 16)).collect();
    let inner: u64 = c
        .iter()
        .skip(1)
        .fold(1u64, |a, &d| a.saturating_mul(d))
        .saturating_mul(elem as u64);
    if let Some(first) = c.first_mut() {
        *first = (AUTO_CHUNK_BYTES / inner).clamp(1, shape[0].clamp(1, 1 << 20));
    }
    c
}

/// Validated storage plan for one dataset.
pub struct Plan {
    pub space: Dataspace,
    pub dtype: Datatype,
    pub chunk: Option<Vec<u64>>,
    pub filters: Vec<Filter>,
    pub compact: bool,
}

/// Checks options against the array and settles chunking (in a file of 8-byte addresses).
pub fn plan(array: &Array, opts: &DatasetOptions) -> Result<Plan> {
    plan_for(array, opts, 8)
}

/// Checks options against the array and settles chunking, in a file of `offset_size`-byte addresses (which
/// set the size of variable-length elements).
pub fn plan_for(array: &Array, opts: &DatasetOptions, offset_size: usize) -> Result<Plan> {
    let shape = &array.shape;
    if !array.shape_matches() {
        return invalid(format!(
            "shape {:?} needs {} elements, data has {}",
            shape,
            crate::array::shape_elements(shape).map_or("too many".to_string(), |n| n.to_string()),
            array.data.len()
        ));
    }
    let dtype = convert::dtype_for_sized(&array.data, offset_size)?;
    plan_typed(shape, dtype, opts)
}

/// The plan of a one-dimensional dataset of `n` variable-length UTF-8 strings (written from a
/// [`StringColumn`]) in a file of `offset_size`-byte addresses.
pub fn plan_strings(n: usize, opts: &DatasetOptions, offset_size: usize) -> Result<Plan> {
    let dtype = Datatype::VarStr {
        utf8: true,
        size: 8 + offset_size,
    };
    plan_typed(&[n as u64], dtype, opts)
}

/// Checks options against a dataset of this shape and file type and settles chunking.
fn plan_typed(shape: &[u64], dtype: Datatype, opts: &DatasetOptions) -> Result<Plan> {
    let elem = dtype.size();
    if let Some(m) = &opts.max_shape {
        if m.len() != shape.len() {
            return invalid("max_shape rank differs from the shape");
        }
        for (d, mx) in shape.iter().zip(m) {
            if let Some(mx) = mx {
                if mx < d {
                    return invalid("max_shape smaller than the shape");
                }
            }
        }
    }
    let resizable = opts
        .max_shape
        .as_ref()
        .is_some_and(|m| m.iter().zip(shape).any(|(mx, d)| *mx != Some(*d)));
    if opts.deflate.is_some() && opts.codec.is_some() {
        return invalid("choose deflate or another codec, not both");
    }
    let filtered =
        opts.deflate.is_some() || opts.shuffle || opts.fletcher32 || opts.codec.is_some();
    if opts.compact && (resizable || filtered || opts.chunk.is_some()) {
        return invalid("compact datasets cannot be chunked, filtered or resizable");
    }
    let chunk = match &opts.chunk {
        Some(c) => {
            if c.len() != shape.len() || c.contains(&0) {
                return invalid("chunk shape must have the dataset's rank and no zero dimension");
            }
            Some(c.clone())
        }
        None if resizable || filtered => Some(auto_chunk(shape, elem)),
        None => None,
    };
    if let Some(c) = &chunk {
        if shape.is_empty() {
            return invalid("scalar datasets cannot be chunked");
        }
        let bytes = c.iter().product::<u64>().saturating_mul(elem as u64);
        if bytes >= u32::MAX as u64 {
            return invalid("chunk larger than 4 GiB");
        }
        if let Some(m) = &opts.max_shape {
            for (cd, mx) in c.iter().zip(m) {
                if let Some(mx) = mx {
                    if cd > mx && *mx > 0 {
                        return invalid("chunk dimension larger than the maximum dimension");
                    }
                }
            }
        }
    }
    let mut filters = filters::pipeline(opts.deflate, opts.shuffle, opts.fletcher32, elem);
    if matches!(opts.codec, Some(Codec::Zfp(_))) && opts.shuffle {
        return invalid(
            "zfp codes values, not the byte planes the shuffle filter leaves: no shuffle with zfp",
        );
    }
    if matches!(opts.codec, Some(Codec::FciDecomp)) && opts.shuffle {
        return invalid(
            "JPEG-LS codes samples, not the byte planes the shuffle filter leaves: no shuffle with FCIDECOMP",
        );
    }
    if let (Some(codec), Some(c)) = (opts.codec, &chunk) {
        // After the shuffle, before the checksum.
        let at = usize::from(opts.shuffle);
        filters.insert(at, codec.filter(&dtype, c, resizable)?);
    }
    Ok(Plan {
        space: Dataspace {
            dims: shape.to_vec(),
            max: opts.max_shape.clone(),
            null: false,
        },
        dtype,
        chunk,
        filters,
        compact: opts.compact,
    })
}

/// A chunk ready to write: its offset in the dataset, its bytes (empty when a first pass's are reused), its
/// filter mask, and the hash of its unfiltered bytes when the sink records or replays chunks.
type EncodedChunk = (Vec<u64>, Vec<u8>, u32, Option<u64>);

/// Splits raw elements `raw` (shape `shape`, positioned at element origin `origin` of the dataset)
/// into whole chunks, filters them in parallel and appends them to the sink.
/// `origin` must be chunk-aligned; edge chunks are zero-padded.
pub fn write_chunks(
    sink: &mut Sink,
    raw: &[u8],
    shape: &[u64],
    origin: &[u64],
    chunk: &[u64],
    elem: usize,
    filters: &[Filter],
) -> Result<Vec<ChunkEntry>> {
    let r = shape.len();
    let grid: Vec<u64> = shape
        .iter()
        .zip(chunk)
        .map(|(s, c)| s.div_ceil(*c))
        .collect();
    // An empty dataset has no chunks, whatever its other dimensions (whose product may not fit 64 bits).
    let total: u64 = if grid.contains(&0) {
        0
    } else {
        grid.iter()
            .try_fold(1u64, |a, &g| a.checked_mul(g))
            .ok_or_else(|| crate::FormatError::Invalid("too many chunks".into()))?
    };
    let chunk_bytes = chunk.iter().product::<u64>() as usize * elem;
    if filters.is_empty() && total > 0 && r > 0 && chunk.len() == r && chunk[1..] == shape[1..] {
        return Ok(append_row_chunks(
            sink,
            raw,
            shape,
            origin,
            chunk[0],
            chunk_bytes,
            total,
        ));
    }
    let skip = unrunnable_filters(filters)?;
    let coords: Vec<Vec<u64>> = (0..total)
        .map(|mut i| {
            let mut v = vec![0u64; r];
            for d in (0..r).rev() {
                v[d] = i % grid[d];
                i /= grid[d];
            }
            v
        })
        .collect();
    let start_of = |g: &[u64]| -> Vec<u64> { g.iter().zip(chunk).map(|(a, c)| a * c).collect() };
    let unfiltered = |start: &[u64]| -> Vec<u8> {
        let count: Vec<u64> = (0..r).map(|d| chunk[d].min(shape[d] - start[d])).collect();
        let mut buf = vec![0u8; chunk_bytes];
        copy_box(
            raw,
            shape,
            start,
            &mut buf,
            chunk,
            &vec![0; r],
            &count,
            elem,
        );
        buf
    };
    let hashing = !filters.is_empty() && (sink.recorded.is_some() || sink.replay.is_some());
    let replay = sink.replay.take();
    let reuse = match &replay {
        Some(rp) if hashing => first_pass_chunks(rp, sink.pos(), &coords, |g| {
            raw_hash(&unfiltered(&start_of(g)))
        }),
        _ => vec![],
    };
    let encoded: Vec<Result<EncodedChunk>> = coords
        .par_iter()
        .enumerate()
        .map(|(i, g)| {
            let start = start_of(g);
            let off = start.iter().zip(origin).map(|(s, o)| s + o).collect();
            if let Some((_, c)) = reuse.get(i) {
                return Ok((off, Vec::new(), c.mask, Some(c.raw_hash)));
            }
            let buf = unfiltered(&start);
            let hash = hashing.then(|| raw_hash(&buf));
            let (enc, mask) = if filters.is_empty() {
                (buf, 0)
            } else {
                filters::encode(filters, &buf, elem, skip)?
            };
            Ok((off, enc, mask, hash))
        })
        .collect();
    let mut entries = Vec::with_capacity(encoded.len());
    for (i, e) in encoded.into_iter().enumerate() {
        let (offset, bytes, filter_mask, hash) = e?;
        let bytes = match (reuse.get(i), &replay) {
            (Some((at, c)), Some(rp)) if *at == sink.pos() => rp.bytes_at(*at, c),
            (Some(_), _) => None,
            (None, _) => Some(&bytes[..]),
        }
        .ok_or_else(|| {
            crate::FormatError::Invalid(
                "a chunk of the first pass is not where the second stores it".into(),
            )
        })?;
        let addr = sink.append(bytes);
        if let (Some(rec), Some(raw_hash)) = (sink.recorded.as_mut(), hash) {
            let len = bytes.len();
            rec.insert(
                addr,
                StoredChunk {
                    raw_hash,
                    len,
                    mask: filter_mask,
                },
            );
        }
        entries.push(ChunkEntry {
            offset,
            addr,
            size: bytes.len() as u64,
            filter_mask,
        });
    }
    sink.replay = replay;
    Ok(entries)
}

/// [`write_chunks`] without filters for chunks as wide as the data in every dimension but the first: each
/// chunk is a run of `raw`'s bytes, appended to the sink without a copy of its own (the last zero-padded).
fn append_row_chunks(
    sink: &mut Sink,
    raw: &[u8],
    shape: &[u64],
    origin: &[u64],
    chunk_rows: u64,
    chunk_bytes: usize,
    total: u64,
) -> Vec<ChunkEntry> {
    let rows = shape[0] as usize;
    let row_bytes = raw.len() / rows.max(1);
    let per = chunk_rows as usize;
    sink.reserve(chunk_bytes * total as usize);
    (0..total as usize)
        .map(|i| {
            let from = (i * per).min(rows) * row_bytes;
            let to = ((i + 1) * per).min(rows) * row_bytes;
            let addr = sink.append(&raw[from..to]);
            let pad = chunk_bytes - (to - from);
            sink.buf.resize(sink.buf.len() + pad, 0);
            let mut offset = origin.to_vec();
            offset[0] += (i * per) as u64;
            ChunkEntry {
                offset,
                addr,
                size: chunk_bytes as u64,
                filter_mask: 0,
            }
        })
        .collect()
}

/// The leading chunks (with their addresses) that a first pass stored where this pass stores them, from `at`
/// on, with the same unfiltered bytes (`hash` of a chunk's grid position): their filtered bytes are reused.
fn first_pass_chunks(
    replay: &Replay,
    mut at: u64,
    coords: &[Vec<u64>],
    hash: impl Fn(&[u64]) -> u64 + Sync,
) -> Vec<(u64, StoredChunk)> {
    let mut planned = Vec::new();
    for _ in coords {
        let Some(c) = replay.chunks.get(&at) else {
            break;
        };
        planned.push((at, *c));
        at += c.len as u64;
    }
    let hashes: Vec<u64> = coords[..planned.len()]
        .par_iter()
        .map(|g| hash(g))
        .collect();
    let same = planned
        .iter()
        .zip(&hashes)
        .take_while(|((_, c), h)| c.raw_hash == **h)
        .count();
    planned.truncate(same);
    planned
}

/// The chunk filter mask of the filters in a pipeline (one read from a file, perhaps) that libhdf5 cannot
/// apply: it stores shuffle without its element-size parameter for variable-length types, cannot run it,
/// and — the filter being optional — writes each chunk with it skipped and its mask bit set. We write such
/// chunks the same way, so libhdf5 reads them; a mandatory filter it cannot run is an error.
fn unrunnable_filters(filters: &[Filter]) -> Result<u32> {
    let mut mask = 0u32;
    for (i, f) in filters.iter().enumerate() {
        let runnable = match f.id {
            filters::SHUFFLE => f.params.first().is_some_and(|&s| s > 0),
            _ => true,
        };
        if runnable {
            continue;
        }
        if f.flags & 1 != 0 && i < 32 {
            mask |= 1 << i;
        } else {
            return Err(crate::FormatError::Unsupported(format!(
                "writing chunks through a mandatory {} filter without its parameters",
                filters::filter_name(f.id)
            )));
        }
    }
    Ok(mask)
}

/// Encodes element data (vlen bodies go to the global heap in the sink).
pub fn encode_data(sink: &mut Sink, data: &Data) -> Result<Vec<u8>> {
    let mut hs = HeapSink::new(sink);
    let raw = convert::encode(data, &mut hs)?;
    hs.finish();
    Ok(raw)
}

/// The messages describing a dataset (dataspace, datatype, fill, layout, filters), at the file's field
/// widths `sizes`.
pub fn dataset_messages(
    plan: &Plan,
    layout: &Layout,
    sizes: Sizes,
) -> Result<Vec<(u16, u8, Vec<u8>)>> {
    let mut ds = Vec::new();
    plan.space.encode_sized(&mut ds, sizes)?;
    let mut dt = Vec::new();
    plan.dtype.encode(&mut dt)?;
    let alloc = match layout {
        Layout::Compact(_) => 1,
        Layout::Contiguous { .. } => 2,
        Layout::Chunked { .. } => 3,
        Layout::Virtual { .. } => return unsupported("writing a virtual dataset"),
    };
    let mut v = vec![
        (mtype::DATASPACE, 0, ds),
        (mtype::DATATYPE, 1, dt),
        (mtype::FILL, 1, messages::encode_fill(alloc)),
        (
            mtype::LAYOUT,
            0,
            messages::encode_layout(layout, plan.dtype.size(), sizes)?,
        ),
    ];
    if !plan.filters.is_empty() {
        v.push((mtype::FILTERS, 0, messages::encode_filters(&plan.filters)));
    }
    Ok(v)
}

/// Writes a dataset's data and object header; returns the header address.
pub fn write_dataset<N: AsRef<str>, M: AsRef<[u8]>>(
    sink: &mut Sink,
    array: &Array,
    opts: &DatasetOptions,
    attrs: &[(N, M)],
) -> Result<u64> {
    let plan = plan_for(array, opts, sink.sizes.offsets)?;
    write_planned(sink, &plan, &array.shape, attrs, |sink| {
        encode_data(sink, &array.data)
    })
}

/// Writes a one-dimensional dataset of the strings of `column` (variable-length UTF-8, each a global
/// heap object) and its object header; returns the header address.
pub fn write_string_column<N: AsRef<str>, M: AsRef<[u8]>>(
    sink: &mut Sink,
    column: &StringColumn,
    opts: &DatasetOptions,
    attrs: &[(N, M)],
) -> Result<u64> {
    let plan = plan_strings(column.len(), opts, sink.sizes.offsets)?;
    write_planned(sink, &plan, &[column.len() as u64], attrs, |sink| {
        let mut hs = HeapSink::new(sink);
        let mut raw = Vec::with_capacity(column.len() * plan.dtype.size());
        convert::encode_vlen_strs(column.iter_bytes(), &mut hs, &mut raw)?;
        hs.finish();
        Ok(raw)
    })
}

/// Writes the data of a planned dataset of `shape` (its element bytes from `encode`, which may put
/// heap objects in the sink first) and its object header; returns the header address.
fn write_planned<N: AsRef<str>, M: AsRef<[u8]>>(
    sink: &mut Sink,
    plan: &Plan,
    shape: &[u64],
    attrs: &[(N, M)],
    encode: impl FnOnce(&mut Sink) -> Result<Vec<u8>>,
) -> Result<u64> {
    // The description first: a shape too large for the file's lengths fails before any data is stored.
    let sizes = sink.sizes;
    plan.space.encode_sized(&mut Vec::new(), sizes)?;
    let elem = plan.dtype.size();
    let raw = encode(sink)?;
    let layout = if plan.compact {
        if raw.len() > MAX_COMPACT_DATA {
            return invalid(format!(
                "compact dataset of {} bytes exceeds {MAX_COMPACT_DATA}",
                raw.len()
            ));
        }
        Layout::Compact(raw)
    } else if let Some(chunk) = &plan.chunk {
        let zero = vec![0u64; chunk.len()];
        let entries = write_chunks(sink, &raw, shape, &zero, chunk, elem, &plan.filters)?;
        let base = sink.base;
        let addr = write_chunk_tree(&entries, chunk, base, &mut sink.buf, &[], sizes);
        Layout::Chunked {
            chunk: chunk.clone(),
            index: ChunkIndex::BTreeV1 { addr },
        }
    } else if raw.is_empty() {
        Layout::Contiguous {
            addr: UNDEF,
            size: 0,
        }
    } else {
        let size = raw.len() as u64;
        let addr = sink.append(&raw);
        Layout::Contiguous { addr, size }
    };
    let msgs = dataset_messages(plan, &layout, sizes)?;
    write_object(sink, msgs, None, attrs)
}

/// The messages of a 1-D contiguous dataset of `n` object references (region references when `region`) whose
/// data lies per `layout`.
pub(crate) fn refs_messages(
    n: u64,
    region: bool,
    layout: &Layout,
    sizes: Sizes,
) -> Result<Vec<(u16, u8, Vec<u8>)>> {
    let plan = Plan {
        space: Dataspace {
            dims: vec![n],
            max: None,
            null: false,
        },
        dtype: if region {
            Datatype::Reference {
                size: sizes.heap_id_size(),
                kind: 1,
            }
        } else {
            Datatype::Reference {
                size: sizes.offsets,
                kind: 0,
            }
        },
        chunk: None,
        filters: vec![],
        compact: false,
    };
    dataset_messages(&plan, layout, sizes)
}

/// Checks an attribute of object references: a name, and a shape holding `n` of them.
pub(crate) fn check_ref_attr(name: &str, shape: &[u64], n: usize) -> Result<()> {
    if name.is_empty() {
        return invalid("attribute name is empty");
    }
    if crate::array::shape_elements(shape) != Some(n as u64) {
        return invalid(format!(
            "attribute shape {shape:?} does not hold {n} references"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn deflate() -> Vec<Filter> {
        vec![Filter {
            id: 1,
            flags: 0,
            name: String::new(),
            params: vec![6],
        }]
    }

    fn raw(seed: u32) -> Vec<u8> {
        (0..64u32 * 64)
            .flat_map(|i| ((i * 7 + seed) % 251).to_le_bytes())
            .collect()
    }

    /// The 64x64 4-byte elements of `raw` in 16x16 chunks under deflate, into `sink`.
    fn chunks_into(sink: &mut Sink, raw: &[u8]) -> Vec<ChunkEntry> {
        write_chunks(sink, raw, &[64, 64], &[0, 0], &[16, 16], 4, &deflate()).unwrap()
    }

    #[test]
    fn unfiltered_row_chunks_are_runs_of_the_data_padded_at_the_end() {
        let raw: Vec<u8> = (0..10 * 3 * 4).map(|i| i as u8).collect();
        let mut sink = Sink::new(100);
        let entries = write_chunks(&mut sink, &raw, &[10, 3], &[8, 0], &[4, 3], 4, &[]).unwrap();
        let offsets: Vec<Vec<u64>> = entries.iter().map(|e| e.offset.clone()).collect();
        assert_eq!(offsets, [vec![8, 0], vec![12, 0], vec![16, 0]]);
        assert!(entries.iter().all(|e| e.size == 48 && e.filter_mask == 0));
        assert_eq!(entries[1].addr, 148);
        assert_eq!(sink.buf[..120], raw[..]);
        assert!(sink.buf[120..144].iter().all(|&b| b == 0));
        // A chunk narrower than the data still goes through the general path.
        let mut sink = Sink::new(0);
        let entries = write_chunks(&mut sink, &raw, &[10, 3], &[0, 0], &[4, 2], 4, &[]).unwrap();
        assert_eq!(entries.len(), 6);
        assert_eq!(sink.buf[..8], raw[..8]);
        assert_eq!(sink.buf[8..16], raw[12..20]);
    }

    /// First pass: chunks of `raw` recorded by a sink at `base`; returns the sink.
    fn first_pass(base: u64, raw: &[u8]) -> Sink {
        let mut s = Sink::new(base);
        s.recorded = Some(HashMap::new());
        write_chunks(&mut s, raw, &[64, 64], &[0, 0], &[16, 16], 4, &deflate()).unwrap();
        s
    }

    fn replaying(first: Sink) -> Sink {
        let mut s = Sink::new(first.base);
        s.replay = Some(Replay {
            start: first.base,
            chunks: first.recorded.unwrap(),
            bytes: first.buf,
        });
        s
    }

    #[test]
    fn a_second_pass_reuses_the_first_pass_chunks_where_it_stores_them_alike() {
        let data = raw(0);
        let mut first = first_pass(4096, &data);
        assert_eq!(first.recorded.as_ref().unwrap().len(), 16);
        let fresh = first.buf.clone();
        // Mark the first pass's first chunk: a second pass that reuses it copies the mark.
        first.buf[0] ^= 0xff;
        let marked = first.buf.clone();
        let mut second = replaying(first);
        let entries = chunks_into(&mut second, &data);
        assert_eq!(second.buf, marked);
        assert_ne!(second.buf, fresh);
        assert_eq!(entries.len(), 16);
        assert_eq!(entries[0].addr, 4096);
    }

    #[test]
    fn chunks_stored_elsewhere_or_changed_are_filtered_anew() {
        let data = raw(0);
        let fresh = first_pass(4096, &data).buf;
        // Another address: nothing reused.
        let mut first = first_pass(4096, &data);
        first.buf[0] ^= 0xff;
        let mut second = replaying(first);
        second.buf.push(0);
        chunks_into(&mut second, &data);
        assert_eq!(&second.buf[1..], &fresh[..]);
        // Other data at the same address: filtered anew (the marked first chunk is not copied).
        let mut first = first_pass(4096, &data);
        first.buf[0] ^= 0xff;
        let other = raw(1);
        let expect = first_pass(4096, &other).buf;
        let mut second = replaying(first);
        chunks_into(&mut second, &other);
        assert_eq!(second.buf, expect);
    }
}
