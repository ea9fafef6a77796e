//! clawhdf5-embed (work in progress).
