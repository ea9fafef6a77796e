//! The lock file that keeps a second writer off a store.

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
