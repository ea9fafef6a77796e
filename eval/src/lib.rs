//! clawhdf5-eval (work in progress).
