//! The locks that keep a second writer off a store: our own lock file, and a shared lock on the HDF5 file itself
//! that keeps libhdf5 writers (h5py in "a" mode) off it while the store is open, as libhdf5's own file locking
//! does between its programs.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{io_err, MemoryError, Result};

fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

pub(super) fn take_lock(path: &Path) -> Result<File> {
    let lp = lock_path(path);
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lp)
        .map_err(io_err(&lp))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(MemoryError::Locked(path.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err(&lp)(e)),
    }
}

/// Whether a writer holds the store at `path` (its lock file is locked), as far as this process can tell.
pub(super) fn writer_holds(path: &Path) -> bool {
    let Ok(f) = File::open(lock_path(path)) else {
        return false;
    };
    matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

/// A shared lock on the store's HDF5 file, the kind libhdf5 takes for a read-only open: libhdf5 programs can
/// still read the file, and one that opens it for writing (which asks for an exclusive lock) is refused until
/// the store closes, as the store is refused while such a program has it open. `None` where the file system
/// has no such locks.
pub(super) fn share_data_file(path: &Path) -> Result<Option<File>> {
    let f = File::open(path).map_err(io_err(path))?;
    match f.try_lock_shared() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Err(MemoryError::InUse(path.to_path_buf())),
        Err(std::fs::TryLockError::Error(_)) => Ok(None),
    }
}
