//! clawhdf5-memory (work in progress).
