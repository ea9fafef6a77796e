//! Chunk indexes introduced with layout v4: fixed array, extensible array, v2 B-tree.

pub mod btree2;
pub mod earray;
pub mod farray;

use crate::error::{corrupt, Result};
use crate::io::Cursor;

/// One index element: chunk address, stored size (filtered indexes only), filter mask.
#[derive(Clone, Copy, Debug)]
pub struct Elem {
    pub addr: u64,
    pub size: Option<u64>,
    pub mask: u32,
}

/// Decodes one element of `elem_size` bytes (`filtered` adds size + mask after the address).
pub fn decode_elem(raw: &[u8], so: usize, filtered: bool) -> Result<Elem> {
    let mut c = Cursor::new(raw, "chunk index element");
    let addr = c.addr(so)?;
    if !filtered {
        return Ok(Elem {
            addr,
            size: None,
            mask: 0,
        });
    }
    let size_len = raw
        .len()
        .checked_sub(so + 4)
        .filter(|n| (1..=8).contains(n));
    let size_len = match size_len {
        Some(n) => n,
        None => return corrupt("filtered chunk index element size"),
    };
    let size = c.uint(size_len)?;
    let mask = c.u32()?;
    Ok(Elem {
        addr,
        size: Some(size),
        mask,
    })
}

/// Verifies a lookup3 checksum stored right after `block`.
pub fn check_sum(block: &[u8], stored: &[u8], what: &str) -> Result<()> {
    if stored.len() < 4 {
        return corrupt(format!("{what}: missing checksum"));
    }
    let s = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    if crate::checksum::lookup3(block, 0) != s {
        return corrupt(format!("{what}: checksum mismatch"));
    }
    Ok(())
}
