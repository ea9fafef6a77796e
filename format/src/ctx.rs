//! The open file's bytes plus the superblock's sizes: everything parsers need to follow addresses.

use crate::error::{corrupt, Result};
use crate::io::{Cursor, UNDEF};

/// File bytes and addressing parameters.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// Whole file.
    pub data: &'a [u8],
    /// Size of offsets (addresses) in bytes.
    pub so: usize,
    /// Size of lengths in bytes.
    pub sl: usize,
    /// Base address added to every stored address.
    pub base: u64,
}

impl<'a> Ctx<'a> {
    /// Absolute position of a stored address, checked against the file size.
    pub fn pos(&self, addr: u64) -> Result<usize> {
        if addr == UNDEF {
            return corrupt("use of undefined address");
        }
        let p = addr
            .checked_add(self.base)
            .filter(|p| *p < self.data.len() as u64);
        match p {
            Some(p) => Ok(p as usize),
            None => corrupt(format!("address {addr:#x} beyond end of file")),
        }
    }

    /// `len` bytes at `addr`.
    pub fn slice(&self, addr: u64, len: u64) -> Result<&'a [u8]> {
        let p = self.pos(addr)?;
        if len > (self.data.len() - p) as u64 {
            return corrupt(format!(
                "block of {len} bytes at {addr:#x} runs past end of file"
            ));
        }
        Ok(&self.data[p..p + len as usize])
    }

    /// A cursor from `addr` to the end of the file.
    pub fn cursor(&self, addr: u64, what: &'static str) -> Result<Cursor<'a>> {
        let p = self.pos(addr)?;
        Ok(Cursor::new(&self.data[p..], what))
    }

    /// Checks that `n` items of `each` bytes could fit in the file (guards allocations).
    pub fn check_count(&self, n: u64, each: u64, what: &str) -> Result<()> {
        if n.saturating_mul(each.max(1)) > self.data.len() as u64 {
            return corrupt(format!("{what}: count {n} larger than the file allows"));
        }
        Ok(())
    }
}
