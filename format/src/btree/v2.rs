//! Version-2 B-trees (`BTHD`/`BTIN`/`BTLF`): iterating records, writing single-leaf trees.

use crate::checksum::lookup3;
use crate::ctx::Ctx;
use crate::error::{corrupt, invalid, Result};
use crate::io::{Cursor, PutLe, UNDEF};
use crate::sizes::Sizes;

/// A parsed v2 B-tree header.
#[derive(Clone, Debug)]
pub struct BTreeV2 {
    pub btype: u8,
    pub node_size: u64,
    pub rec_size: usize,
    pub depth: u16,
    pub root: u64,
    pub root_nrec: u64,
}

fn limit_enc_size(v: u64) -> usize {
    ((63 - v.max(1).leading_zeros()) / 8 + 1) as usize
}

impl BTreeV2 {
    /// Parses the header at `addr`.
    pub fn read(ctx: &Ctx<'_>, addr: u64) -> Result<BTreeV2> {
        let mut c = ctx.cursor(addr, "v2 B-tree header")?;
        c.expect_sig(b"BTHD")?;
        let v = c.u8()?;
        if v != 0 {
            return corrupt(format!("v2 B-tree version {v}"));
        }
        let btype = c.u8()?;
        let node_size = c.u32()? as u64;
        let rec_size = c.u16()? as usize;
        let depth = c.u16()?;
        c.skip(2)?;
        let root = c.addr(ctx.so)?;
        let root_nrec = c.u16()? as u64;
        let _total = c.uint(ctx.sl)?;
        let end = c.pos();
        let stored = c.u32()?;
        if lookup3(ctx.slice(addr, end as u64)?, 0) != stored {
            return corrupt("v2 B-tree header checksum mismatch");
        }
        if rec_size == 0 || node_size < 16 || depth > 32 {
            return corrupt("v2 B-tree header parameters");
        }
        Ok(BTreeV2 {
            btype,
            node_size,
            rec_size,
            depth,
            root,
            root_nrec,
        })
    }

    /// Calls `f` with every record, in key order.
    pub fn for_each(&self, ctx: &Ctx<'_>, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if self.root == UNDEF || self.root_nrec == 0 {
            return Ok(());
        }
        // Per-depth sizes of the "number of records" fields, as libhdf5 computes them.
        let leaf_max = (self.node_size.saturating_sub(10)) / self.rec_size as u64;
        let max_nrec_size = limit_enc_size(leaf_max);
        let mut cum_max = vec![leaf_max];
        let mut cum_size = vec![0usize];
        for d in 1..=self.depth as usize {
            let ptr = ctx.so + max_nrec_size + if d > 1 { cum_size[d - 2] } else { 0 };
            let max =
                (self.node_size.saturating_sub(10 + ptr as u64)) / (self.rec_size + ptr) as u64;
            let cm = (max + 1).saturating_mul(cum_max[d - 1]).saturating_add(max);
            cum_max.push(cm);
            cum_size.push(limit_enc_size(cm));
        }
        let mut budget = 10_000_000u64;
        self.node(
            ctx,
            self.root,
            self.root_nrec,
            self.depth as usize,
            max_nrec_size,
            &cum_size,
            &mut budget,
            f,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn node(
        &self,
        ctx: &Ctx<'_>,
        addr: u64,
        nrec: u64,
        depth: usize,
        nrec_size: usize,
        cum_size: &[usize],
        budget: &mut u64,
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if *budget < nrec + 1 {
            return corrupt("v2 B-tree too large");
        }
        *budget -= nrec + 1;
        let blk = ctx.slice(addr, self.node_size)?;
        let mut c = Cursor::new(blk, "v2 B-tree node");
        let sig = c.bytes(4)?;
        let want: &[u8] = if depth == 0 { b"BTLF" } else { b"BTIN" };
        if sig != want {
            return corrupt("bad v2 B-tree node signature");
        }
        c.skip(2)?;
        let recs_len = (nrec as usize)
            .checked_mul(self.rec_size)
            .filter(|n| *n <= blk.len())
            .ok_or_else(|| crate::FormatError::Corrupt("v2 B-tree node overfull".into()))?;
        let recs = c.bytes(recs_len)?;
        if depth == 0 {
            let end = c.pos();
            let stored = c.u32()?;
            if lookup3(&blk[..end], 0) != stored {
                return corrupt("v2 B-tree leaf checksum mismatch");
            }
            for r in recs.chunks_exact(self.rec_size) {
                f(r)?;
            }
            return Ok(());
        }
        let mut children = Vec::with_capacity(nrec as usize + 1);
        for _ in 0..=nrec {
            let a = c.addr(ctx.so)?;
            let n = c.uint(nrec_size)?;
            if depth > 1 {
                c.skip(cum_size[depth - 1])?;
            }
            children.push((a, n));
        }
        let end = c.pos();
        let stored = c.u32()?;
        if lookup3(&blk[..end], 0) != stored {
            return corrupt("v2 B-tree internal node checksum mismatch");
        }
        for (i, (a, n)) in children.iter().enumerate() {
            self.node(ctx, *a, *n, depth - 1, nrec_size, cum_size, budget, f)?;
            if i < nrec as usize {
                f(&recs[i * self.rec_size..(i + 1) * self.rec_size])?;
            }
        }
        Ok(())
    }
}

/// Writes a v2 B-tree of type `btype` whose records (already sorted, `rec_size` bytes each, back
/// to back in `records`) fit one leaf; the node size grows (power of two ≥ 512) to hold them all.
/// Appends to `out` at file address `base`, with the file's field widths `sizes`.
pub fn write_single_leaf(
    btype: u8,
    rec_size: usize,
    records: &[u8],
    base: u64,
    out: &mut Vec<u8>,
    sizes: Sizes,
) -> Result<u64> {
    if rec_size == 0 || !records.len().is_multiple_of(rec_size) {
        return invalid("dense index records are not a whole number of records");
    }
    let count = records.len() / rec_size;
    if count > u16::MAX as usize {
        return invalid("more than 65535 records in one dense index");
    }
    let need = 10 + records.len();
    let node_size = need.next_power_of_two().max(512);
    let header_addr = base + out.len() as u64;
    let leaf_addr = header_addr
        + (4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + sizes.offsets + 2 + sizes.lengths + 4) as u64;
    let mut h = Vec::new();
    h.extend_from_slice(b"BTHD");
    h.put_u8(0);
    h.put_u8(btype);
    h.put_u32(node_size as u32);
    h.put_u16(rec_size as u16);
    h.put_u16(0);
    h.put_u8(100);
    h.put_u8(40);
    sizes.put_offset(&mut h, if records.is_empty() { UNDEF } else { leaf_addr });
    h.put_u16(count as u16);
    sizes.put_length(&mut h, count as u64, "a B-tree's record count")?;
    let sum = lookup3(&h, 0);
    h.put_u32(sum);
    out.extend_from_slice(&h);
    if !records.is_empty() {
        let mut l = Vec::with_capacity(node_size);
        l.extend_from_slice(b"BTLF");
        l.put_u8(0);
        l.put_u8(btype);
        l.extend_from_slice(records);
        let sum = lookup3(&l, 0);
        l.put_u32(sum);
        l.resize(node_size, 0);
        out.extend_from_slice(&l);
    }
    Ok(header_addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_leaf_roundtrip() {
        let recs: Vec<Vec<u8>> = (0..100u32)
            .map(|i| {
                let mut r = i.to_le_bytes().to_vec();
                r.extend_from_slice(&[7u8; 7]);
                r
            })
            .collect();
        for (so, sl) in [(8, 8), (4, 4), (4, 8), (8, 4)] {
            let sizes = Sizes {
                offsets: so,
                lengths: sl,
            };
            let mut file = vec![0u8; 8];
            let h = write_single_leaf(5, 11, &recs.concat(), 0, &mut file, sizes).unwrap();
            let ctx = Ctx {
                data: &file,
                so,
                sl,
                base: 0,
            };
            let bt = BTreeV2::read(&ctx, h).unwrap();
            let mut got = Vec::new();
            bt.for_each(&ctx, &mut |r| {
                got.push(r.to_vec());
                Ok(())
            })
            .unwrap();
            assert_eq!(got, recs, "{so}/{sl}");
        }
    }
}
