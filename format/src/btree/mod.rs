//! B-trees: version 1 (groups and chunk indexes) and version 2 (dense names, chunk indexes).

pub mod v1;
pub mod v2;
