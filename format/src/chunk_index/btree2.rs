//! v2 B-tree chunk index (record types 10 and 11).

use super::Elem;
use crate::btree::v2::BTreeV2;
use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::{le_uint, Cursor};

/// (scaled chunk coordinates, element) for every chunk in the tree.
pub fn read(ctx: &Ctx<'_>, addr: u64, rank: usize) -> Result<Vec<(Vec<u64>, Elem)>> {
    let bt = BTreeV2::read(ctx, addr)?;
    let filtered = match bt.btype {
        10 => false,
        11 => true,
        t => return corrupt(format!("chunk index B-tree of record type {t}")),
    };
    let so = ctx.so;
    let fixed = so + 8 * rank;
    let size_len = if filtered {
        match bt.rec_size.checked_sub(fixed + 4) {
            Some(n) if (1..=8).contains(&n) => n,
            _ => return corrupt("filtered chunk B-tree record size"),
        }
    } else {
        if bt.rec_size < fixed {
            return corrupt("chunk B-tree record size");
        }
        0
    };
    let mut out = Vec::new();
    bt.for_each(ctx, &mut |rec| {
        let mut c = Cursor::new(rec, "chunk B-tree record");
        let a = c.addr(so)?;
        let (size, mask) = if filtered {
            (Some(c.uint(size_len)?), c.u32()?)
        } else {
            (None, 0)
        };
        let mut scaled = Vec::with_capacity(rank);
        for _ in 0..rank {
            scaled.push(le_uint(c.bytes(8)?));
        }
        out.push((
            scaled,
            Elem {
                addr: a,
                size,
                mask,
            },
        ));
        Ok(())
    })?;
    Ok(out)
}
