//! Local heap (`HEAP`): the name store of old-style (symbol-table) groups.

use crate::ctx::Ctx;
use crate::error::{corrupt, Result};

/// A local heap's data segment.
pub struct LocalHeap<'a> {
    data: &'a [u8],
}

impl<'a> LocalHeap<'a> {
    /// Parses the local heap header at `addr`.
    pub fn read(ctx: &Ctx<'a>, addr: u64) -> Result<Self> {
        let mut c = ctx.cursor(addr, "local heap")?;
        c.expect_sig(b"HEAP")?;
        let v = c.u8()?;
        if v != 0 {
            return corrupt(format!("local heap version {v}"));
        }
        c.skip(3)?;
        let size = c.uint(ctx.sl)?;
        let _free = c.uint(ctx.sl)?;
        let data_addr = c.addr(ctx.so)?;
        Ok(LocalHeap {
            data: ctx.slice(data_addr, size)?,
        })
    }

    /// The NUL-terminated string at `offset`.
    pub fn string(&self, offset: u64) -> Result<&'a [u8]> {
        if offset >= self.data.len() as u64 {
            return corrupt("local heap offset out of range");
        }
        let rest = &self.data[offset as usize..];
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        Ok(&rest[..end])
    }
}
