//! Heaps: global (variable-length data), local (old-style group names), fractal (dense storage).

pub mod fractal;
pub mod global;
pub mod local;
