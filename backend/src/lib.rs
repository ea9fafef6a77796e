//! clawhdf5-backend (work in progress).
