//! The format crate's integration tests, one module per feature, linked into one binary (31 binaries cost
//! about a minute of every CI run in linking alone). The seeded hunts that take knobs and run long on their own
//! (`mutation`, `append_mutation`, `ping_pong`) stay separate test binaries.

#[path = "../common/mod.rs"]
mod common;

mod append;
mod append_aliases;
mod append_refs;
mod append_sizes;
mod bad_shapes;
mod blosc2;
mod codecs_written;
mod corpus;
mod external;
mod fcidecomp;
mod h5py_interop;
mod h5py_matrix;
mod hdf5_2_types;
mod inspect;
mod large_filtered;
mod links;
mod lzo;
mod nbit;
mod netcdf;
mod plugin_filters;
mod region_refs;
mod selection;
mod shared_messages;
mod string_columns;
mod szip;
mod tools_interop;
mod virtual_datasets;
mod wide_floats;
mod wide_ints;
mod zfp;
mod zfp_write;
