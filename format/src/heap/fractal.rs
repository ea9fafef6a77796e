//! Fractal heap (`FRHP`/`FHDB`/`FHIB`): reading managed and tiny objects, writing a heap of
//! managed objects (one root direct block, or a root indirect block of direct blocks).

use crate::checksum::lookup3;
use crate::ctx::Ctx;
use crate::error::{corrupt, invalid, unsupported, Result};
use crate::io::{Cursor, PutLe, UNDEF};
use crate::sizes::Sizes;

/// A parsed fractal heap header.
#[derive(Clone, Debug)]
pub struct FractalHeap {
    addr: u64,
    id_len: usize,
    width: u64,
    start_block: u64,
    max_direct: u64,
    heap_off_bytes: usize,
    heap_len_bytes: usize,
    root: u64,
    root_rows: u64,
    huge_btree: u64,
    checksummed: bool,
    max_direct_rows: u64,
}

fn log2(v: u64) -> u64 {
    63 - v.max(1).leading_zeros() as u64
}

fn limit_enc_size(v: u64) -> usize {
    (log2(v) / 8 + 1) as usize
}

impl FractalHeap {
    /// Parses the header at `addr`.
    pub fn read(ctx: &Ctx<'_>, addr: u64) -> Result<FractalHeap> {
        let mut c = ctx.cursor(addr, "fractal heap header")?;
        c.expect_sig(b"FRHP")?;
        let v = c.u8()?;
        if v != 0 {
            return corrupt(format!("fractal heap version {v}"));
        }
        let id_len = c.u16()? as usize;
        let io_filters = c.u16()?;
        let flags = c.u8()?;
        let max_man = c.u32()? as u64;
        c.skip(ctx.sl)?; // next huge id
        let huge_btree = c.addr(ctx.so)?;
        c.skip(ctx.sl)?; // free space
        c.skip(ctx.so)?; // fsm address
        c.skip(ctx.sl * 8)?; // managed/allocated/iter/#man/huge size/#huge/tiny size/#tiny
        let width = c.u16()? as u64;
        let start_block = c.uint(ctx.sl)?;
        let max_direct = c.uint(ctx.sl)?;
        let max_heap_bits = c.u16()? as u64;
        let _start_rows = c.u16()?;
        let root = c.addr(ctx.so)?;
        let root_rows = c.u16()? as u64;
        if io_filters != 0 {
            return unsupported("fractal heap with I/O filters");
        }
        let end = c.pos();
        let stored = c.u32()?;
        if lookup3(ctx.slice(addr, end as u64)?, 0) != stored {
            return corrupt("fractal heap header checksum mismatch");
        }
        if width == 0
            || !start_block.is_power_of_two()
            || !max_direct.is_power_of_two()
            || max_direct < start_block
            || max_heap_bits == 0
            || max_heap_bits > 64
        {
            return corrupt("fractal heap header parameters");
        }
        let heap_off_bytes = max_heap_bits.div_ceil(8) as usize;
        let heap_len_bytes = limit_enc_size(max_direct).min(limit_enc_size(max_man));
        Ok(FractalHeap {
            addr,
            id_len,
            width,
            start_block,
            max_direct,
            heap_off_bytes,
            heap_len_bytes,
            root,
            root_rows,
            huge_btree,
            checksummed: flags & 2 != 0,
            max_direct_rows: log2(max_direct) - log2(start_block) + 2,
        })
    }

    fn row_block_size(&self, row: u64) -> u64 {
        if row == 0 {
            self.start_block
        } else {
            self.start_block.saturating_mul(1u64 << (row - 1).min(62))
        }
    }

    fn direct_header_size(&self, so: usize) -> u64 {
        (5 + so + self.heap_off_bytes) as u64 + if self.checksummed { 4 } else { 0 }
    }

    /// The bytes of the object with heap ID `id`.
    pub fn object<'a>(&self, ctx: &Ctx<'a>, id: &[u8]) -> Result<&'a [u8]> {
        if id.is_empty() {
            return corrupt("empty fractal heap id");
        }
        let kind = (id[0] >> 4) & 3;
        match kind {
            0 => {
                let mut c = Cursor::new(&id[1..], "fractal heap id");
                let off = c.uint(self.heap_off_bytes)?;
                let len = c.uint(self.heap_len_bytes)?;
                self.managed(ctx, off, len)
            }
            1 => self.huge(ctx, &id[1..]),
            _ => {
                let _ = self.id_len;
                corrupt("tiny fractal heap objects must be read via object_owned")
            }
        }
    }

    /// Like [`object`](Self::object) but also handles tiny objects (stored inside the id).
    pub fn object_owned(&self, ctx: &Ctx<'_>, id: &[u8]) -> Result<Vec<u8>> {
        if !id.is_empty() && (id[0] >> 4) & 3 == 2 {
            let len = (id[0] & 0x0f) as usize + 1;
            if len + 1 > id.len() {
                return corrupt("tiny object longer than its id");
            }
            return Ok(id[1..1 + len].to_vec());
        }
        Ok(self.object(ctx, id)?.to_vec())
    }

    /// A huge object: address and length either inside the id or in the huge-object B-tree.
    fn huge<'a>(&self, ctx: &Ctx<'a>, key: &[u8]) -> Result<&'a [u8]> {
        if key.len() >= ctx.so + ctx.sl && self.huge_btree == UNDEF {
            let mut c = Cursor::new(key, "huge object id");
            let a = c.addr(ctx.so)?;
            let n = c.uint(ctx.sl)?;
            return ctx.slice(a, n);
        }
        if self.huge_btree == UNDEF {
            return corrupt("huge object without a huge-object index");
        }
        let bt = crate::btree::v2::BTreeV2::read(ctx, self.huge_btree)?;
        let want = crate::io::le_uint(key);
        let mut found = None;
        match bt.btype {
            1 => {
                bt.for_each(ctx, &mut |rec| {
                    let mut c = Cursor::new(rec, "huge object record");
                    let a = c.addr(ctx.so)?;
                    let n = c.uint(ctx.sl)?;
                    let id = crate::io::le_uint(c.bytes(c.remaining().min(8))?);
                    if id == want && found.is_none() {
                        found = Some((a, n));
                    }
                    Ok(())
                })?;
            }
            2 => return unsupported("filtered huge objects in fractal heap"),
            3 => {
                // Directly accessed: the id holds address + length.
                let mut c = Cursor::new(key, "huge object id");
                found = Some((c.addr(ctx.so)?, c.uint(ctx.sl)?));
            }
            4 => return unsupported("filtered huge objects in fractal heap"),
            t => return corrupt(format!("huge object index of record type {t}")),
        }
        match found {
            Some((a, n)) => ctx.slice(a, n),
            None => corrupt("huge object id not in its index"),
        }
    }

    fn managed<'a>(&self, ctx: &Ctx<'a>, off: u64, len: u64) -> Result<&'a [u8]> {
        if self.root == UNDEF {
            return corrupt("fractal heap object in an empty heap");
        }
        if self.root_rows == 0 {
            let blk = ctx.slice(self.root, self.start_block)?;
            return slice_in(blk, off, len);
        }
        // Walk indirect blocks.
        let mut iblock = self.root;
        let mut nrows = self.root_rows;
        let mut block_off = 0u64;
        for _ in 0..64 {
            let mut c = ctx.cursor(iblock, "fractal heap indirect block")?;
            c.expect_sig(b"FHIB")?;
            c.skip(1 + ctx.so + self.heap_off_bytes)?;
            let entries_start = c.pos();
            let rel = off
                .checked_sub(block_off)
                .ok_or_else(|| crate::FormatError::Corrupt("heap offset below block".into()))?;
            let mut acc = 0u64;
            let mut found = None;
            'rows: for row in 0..nrows {
                let bs = self.row_block_size(row);
                for col in 0..self.width {
                    if rel < acc.saturating_add(bs) {
                        found = Some((row, col, acc));
                        break 'rows;
                    }
                    acc = acc.saturating_add(bs);
                }
            }
            let (row, col, start) = match found {
                Some(f) => f,
                None => return corrupt("fractal heap offset outside the heap"),
            };
            let idx = row * self.width + col;
            let direct_entries = nrows.min(self.max_direct_rows) * self.width;
            let entry_pos = if idx < direct_entries {
                entries_start as u64 + idx * ctx.so as u64
            } else {
                entries_start as u64
                    + direct_entries * ctx.so as u64
                    + (idx - direct_entries) * ctx.so as u64
            };
            c.seek(entry_pos as usize)?;
            let child = c.addr(ctx.so)?;
            if child == UNDEF {
                return corrupt("fractal heap object in an unallocated block");
            }
            let bs = self.row_block_size(row);
            if row < self.max_direct_rows {
                let blk = ctx.slice(child, bs)?;
                return slice_in(blk, rel - start, len);
            }
            iblock = child;
            block_off += start;
            nrows = log2(bs) - log2(self.start_block.saturating_mul(self.width)) + 1;
        }
        corrupt("fractal heap indirect blocks nested too deeply")
    }

    /// Address of this heap's header.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Size of a direct block header (for writers computing offsets).
    pub fn header_size(&self, so: usize) -> u64 {
        self.direct_header_size(so)
    }

    /// Upper bound of the heap's managed space (sanity checks).
    pub fn max_direct(&self) -> u64 {
        self.max_direct
    }
}

fn slice_in(blk: &[u8], off: u64, len: u64) -> Result<&[u8]> {
    if off.checked_add(len).is_none_or(|e| e > blk.len() as u64) {
        return corrupt("fractal heap object outside its block");
    }
    Ok(&blk[off as usize..(off + len) as usize])
}

/// What kind of dense storage a heap serves (sets libhdf5's parameters).
#[derive(Clone, Copy, Debug)]
pub enum HeapKind {
    Links,
    Attributes,
}

/// Largest object we store as a managed object (libhdf5's default).
pub const MAX_MANAGED: usize = 4096;

/// A heap written to the file: its header address and each object's heap ID.
pub struct WrittenHeap {
    pub header: u64,
    /// Heap IDs, `id_len` bytes each, back to back in object order.
    pub ids: Vec<u8>,
    pub id_len: usize,
}

impl WrittenHeap {
    /// The heap ID of object `i`.
    pub fn id(&self, i: usize) -> &[u8] {
        &self.ids[i * self.id_len..(i + 1) * self.id_len]
    }
}

/// Serialises a fractal heap holding `objects` into `out`, which will live at file address
/// `base` (the bytes are appended to `out`, whose current length corresponds to `base`), its address and
/// length fields at the file's widths `sizes`.
pub fn write_heap<O: AsRef<[u8]>>(
    objects: &[O],
    kind: HeapKind,
    base: u64,
    out: &mut Vec<u8>,
    sizes: Sizes,
) -> Result<WrittenHeap> {
    let (so, sl) = (sizes.offsets, sizes.lengths);
    let (id_len, heap_bits) = match kind {
        HeapKind::Links => (7usize, 32u16),
        HeapKind::Attributes => (8usize, 40u16),
    };
    let off_bytes = (heap_bits as usize).div_ceil(8);
    let len_bytes = limit_enc_size(65536).min(limit_enc_size(MAX_MANAGED as u64));
    let dhdr = 5 + so + off_bytes + 4; // sig, version, heap addr, block offset, checksum
    let out0 = base - out.len() as u64;
    let mut ids = vec![0u8; objects.len() * id_len];
    // Huge objects (> MAX_MANAGED): stored as plain blocks, indexed by a v2 B-tree of type 1
    // (address, length, id), the heap ID holding the id (libhdf5's "indirect" huge objects).
    let mut huge_recs: Vec<u8> = Vec::new();
    let mut huge_count = 0u64;
    let mut huge_size = 0u64;
    for (i, o) in objects.iter().enumerate() {
        let o = o.as_ref();
        if o.len() > MAX_MANAGED {
            huge_count += 1;
            let key = huge_count;
            let addr = out0 + out.len() as u64;
            out.extend_from_slice(o);
            sizes.put_offset(&mut huge_recs, addr);
            sizes.put_length(
                &mut huge_recs,
                o.len() as u64,
                "a huge dense-storage object",
            )?;
            sizes.put_length(&mut huge_recs, key, "a huge object ID")?;
            huge_size += o.len() as u64;
            let id = &mut ids[i * id_len..(i + 1) * id_len];
            id[0] = 0x10;
            id[1..].copy_from_slice(&key.to_le_bytes()[..id_len - 1]);
        }
    }
    let huge_btree = if huge_recs.is_empty() {
        UNDEF
    } else {
        crate::btree::v2::write_single_leaf(1, so + 2 * sl, &huge_recs, out0, out, sizes)?
    };
    let managed: Vec<usize> = (0..objects.len())
        .filter(|&i| objects[i].as_ref().len() <= MAX_MANAGED)
        .collect();
    let total: usize = managed.iter().map(|&i| objects[i].as_ref().len()).sum();
    let max_direct: u64 = 65536;
    // Plan blocks: either one root direct block, or a root indirect block whose rows are all direct
    // blocks of `max_direct` bytes (start block = max direct => 2 direct rows).
    let single = (dhdr + total) as u64 <= max_direct;
    let start_block = if single {
        ((dhdr + total) as u64).next_power_of_two().max(512)
    } else {
        max_direct
    };
    // Pack objects into blocks.
    let cap = start_block as usize - dhdr;
    let mut blocks: Vec<Vec<usize>> = vec![vec![]];
    let mut used = 0usize;
    for &i in &managed {
        let o = objects[i].as_ref();
        if used + o.len() > cap {
            blocks.push(vec![]);
            used = 0;
        }
        used += o.len();
        if let Some(b) = blocks.last_mut() {
            b.push(i);
        }
    }
    let nblocks = blocks.len() as u64;
    let (width, nrows) = if single {
        (4u64, 0u64)
    } else {
        let width = nblocks.div_ceil(2).next_power_of_two().max(4);
        if width > 65535 {
            return invalid("too many objects for dense storage");
        }
        let nrows = if nblocks <= width { 1 } else { 2 };
        (width, nrows)
    };
    // Fixed fields, 12 lengths and 3 addresses.
    let header_size = 26 + 12 * sl + 3 * so;
    let header_addr = out0 + out.len() as u64;
    let mut pos = header_addr + header_size as u64;
    let iblock_addr = if single { UNDEF } else { pos };
    let iblock_size = if single {
        0
    } else {
        4 + 1 + so + off_bytes + (nrows * width) as usize * so + 4
    };
    pos += iblock_size as u64;
    let block_addrs: Vec<u64> = (0..nblocks).map(|i| pos + i * start_block).collect();
    let mut blocks_bytes = Vec::with_capacity((nblocks * start_block) as usize);
    let mut free_total = 0u64;
    for (bi, members) in blocks.iter().enumerate() {
        let block_off = bi as u64 * start_block;
        let mut b = Vec::with_capacity(start_block as usize);
        b.extend_from_slice(b"FHDB");
        b.put_u8(0);
        sizes.put_offset(&mut b, header_addr);
        b.put_uint(block_off, off_bytes);
        b.put_u32(0);
        for &i in members {
            let o = objects[i].as_ref();
            let id = &mut ids[i * id_len..(i + 1) * id_len];
            // Type 0 (managed), then the offset and the length, little-endian; the rest stays 0.
            let off = (block_off + b.len() as u64).to_le_bytes();
            id[1..1 + off_bytes].copy_from_slice(&off[..off_bytes]);
            let len = (o.len() as u64).to_le_bytes();
            id[1 + off_bytes..1 + off_bytes + len_bytes].copy_from_slice(&len[..len_bytes]);
            b.extend_from_slice(o);
        }
        free_total += start_block - b.len() as u64;
        b.resize(start_block as usize, 0);
        let sum = lookup3(&b, 0);
        let ck = 5 + so + off_bytes;
        b[ck..ck + 4].copy_from_slice(&sum.to_le_bytes());
        blocks_bytes.extend_from_slice(&b);
    }
    let managed_space = if single {
        start_block
    } else {
        nrows * width * start_block
    };
    // Header.
    let mut h = Vec::with_capacity(header_size);
    h.extend_from_slice(b"FRHP");
    h.put_u8(0);
    h.put_u16(id_len as u16);
    h.put_u16(0);
    h.put_u8(2); // direct blocks checksummed
    h.put_u32(MAX_MANAGED as u32);
    let len =
        |h: &mut Vec<u8>, v: u64| sizes.put_length(h, v, "a dense-storage heap's size or count");
    len(&mut h, huge_count)?; // the last huge object ID handed out (libhdf5 gives the next one + 1)
    sizes.put_offset(&mut h, huge_btree);
    len(
        &mut h,
        free_total
            + if single {
                0
            } else {
                (nrows * width - nblocks) * start_block
            },
    )?;
    sizes.put_offset(&mut h, UNDEF); // free-space manager
    len(&mut h, managed_space)?; // managed space the root spans
    len(&mut h, nblocks * start_block)?; // of which allocated (direct blocks written)
    len(&mut h, if single { 0 } else { nblocks * start_block })?; // allocation iterator
    len(&mut h, managed.len() as u64)?;
    len(&mut h, huge_size)?;
    len(&mut h, huge_count)?;
    len(&mut h, 0)?;
    len(&mut h, 0)?;
    h.put_u16(width as u16);
    len(&mut h, start_block)?;
    len(&mut h, max_direct)?;
    h.put_u16(heap_bits);
    // Starting rows of a root indirect block: libhdf5 builds one from this when it outgrows a root direct
    // block, so it must not be 0 (libhdf5's default is 1).
    h.put_u16(if single { 1 } else { nrows as u16 });
    sizes.put_offset(&mut h, if single { block_addrs[0] } else { iblock_addr });
    h.put_u16(nrows as u16);
    let sum = lookup3(&h, 0);
    h.put_u32(sum);
    debug_assert_eq!(h.len(), header_size);
    out.extend_from_slice(&h);
    if !single {
        let mut ib = Vec::with_capacity(iblock_size);
        ib.extend_from_slice(b"FHIB");
        ib.put_u8(0);
        sizes.put_offset(&mut ib, header_addr);
        ib.put_uint(0, off_bytes);
        for i in 0..nrows * width {
            sizes.put_offset(
                &mut ib,
                if i < nblocks {
                    block_addrs[i as usize]
                } else {
                    UNDEF
                },
            );
        }
        let sum = lookup3(&ib, 0);
        ib.put_u32(sum);
        out.extend_from_slice(&ib);
    }
    out.extend_from_slice(&blocks_bytes);
    Ok(WrittenHeap {
        header: header_addr,
        ids,
        id_len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `objects` in a heap of each combination of 4- and 8-byte fields and reads each back.
    fn roundtrip(objects: &[Vec<u8>], kind: HeapKind) {
        for (so, sl) in [(8, 8), (4, 4), (4, 8), (8, 4)] {
            let sizes = Sizes {
                offsets: so,
                lengths: sl,
            };
            let mut file = vec![0u8; 16];
            let h = write_heap(objects, kind, 16, &mut file, sizes).unwrap();
            let ctx = Ctx {
                data: &file,
                so,
                sl,
                base: 0,
            };
            let heap = FractalHeap::read(&ctx, h.header).unwrap();
            for (i, o) in objects.iter().enumerate() {
                let id = h.id(i);
                assert_eq!(heap.object(&ctx, id).unwrap(), &o[..], "{so}/{sl}");
            }
        }
    }

    #[test]
    fn single_direct_block() {
        let objs: Vec<Vec<u8>> = (0..20).map(|i| vec![i as u8; 10 + i]).collect();
        roundtrip(&objs, HeapKind::Links);
        roundtrip(&objs, HeapKind::Attributes);
    }

    #[test]
    fn root_indirect_block() {
        let objs: Vec<Vec<u8>> = (0..100).map(|i| vec![i as u8; 4000]).collect();
        roundtrip(&objs, HeapKind::Attributes);
    }

    #[test]
    fn huge_objects_roundtrip() {
        let objs: Vec<Vec<u8>> = vec![
            vec![1; 10],
            vec![2; MAX_MANAGED + 1],
            vec![3; 100_000],
            vec![4; 7],
        ];
        roundtrip(&objs, HeapKind::Attributes);
        roundtrip(&objs, HeapKind::Links);
    }
}
