//! Writing: the byte sink, object headers with compact/dense links and attributes, datasets,
//! and [`FileWriter`](crate::FileWriter) which builds a whole file.

pub mod dataset;
pub mod object;
pub mod sink;
pub mod writer;
