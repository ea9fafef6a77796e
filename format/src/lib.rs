//! clawhdf5-format: a pure-Rust HDF5 reader and writer.
//!
//! * [`FileWriter`] builds a new file (superblock v2, object headers v2, compact/dense links and
//!   attributes, contiguous/compact/chunked layouts with deflate, shuffle and fletcher32,
//!   variable-length strings in the global heap) that HDF5 1.10, 1.14 and 2.0 read.
//! * [`H5File`] reads files (ours and libhdf5's) from a path (mmap) or from bytes.
//! * [`StringColumn`] packs a string dataset into one buffer for reading and writing, without a `String`
//!   per value.
//! * [`FileAppender`] changes an existing file (ours, or libhdf5's of any libver) without rewriting it,
//!   crash-safely.

pub mod append;
pub mod array;
mod bits;
pub mod bitshuffle;
pub mod blosc;
pub mod blosc2;
pub mod blosclz_compress;
pub mod btree;
mod bzip2_filter;
pub mod checksum;
pub mod chunk_index;
pub mod convert;
pub mod ctx;
pub mod dataspace;
pub mod datatype;
pub(crate) mod deflate;
pub mod element;
mod encode_as;
pub mod error;
pub mod filters;
mod float_layout;
pub mod heap;
pub(crate) mod hugepages;
pub mod inspect;

pub mod io;
pub mod jpegls;
mod lz4hc_compress;
mod lz_parse;
pub mod lzf;
pub mod lzo;
pub mod lzo_compress;
pub mod messages;
pub mod nbit;
pub mod object_header;
pub mod plugin_codecs;
pub mod read;
pub mod region;
pub mod scaleoffset;
pub mod select;
mod selection_encode;
pub mod sizes;
pub mod strings;
pub mod superblock;
pub mod szip;
#[cfg(test)]
mod test_rng;
mod transpose;
pub mod write;
pub mod zfp;

pub use append::FileAppender;
pub use array::{Array, Data};
pub use datatype::Datatype;
pub use element::Element;
pub use error::{FieldOverflow, FormatError, Result};
pub use half::f16;
pub use read::dataset::Dataset;
pub use read::file::{Entry, EntryKind, H5File};
pub use read::VdsView;
pub use strings::StringColumn;
pub use write::dataset::{Blosc2Codec, Blosc2Shuffle, BloscCodec, Codec, DatasetOptions};
pub use write::writer::FileWriter;
pub use zfp::ZfpMode;
