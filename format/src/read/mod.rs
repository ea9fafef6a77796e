//! Reading: the open file ([`H5File`](crate::H5File)), groups and links, attributes, datasets.

pub mod attrs;
pub mod chunks;
pub mod dataset;
pub(crate) mod external;
pub mod file;
pub mod groups;
pub(crate) mod shared;
pub(crate) mod vds;
pub use vds::VdsView;
pub(crate) mod vds_growth;
