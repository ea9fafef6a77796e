//! clawhdf5-format (work in progress).
