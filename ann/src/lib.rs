//! clawhdf5-ann (work in progress).
