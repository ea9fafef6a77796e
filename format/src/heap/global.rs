//! Global heap collections (`GCOL`): reading objects and writing new collections.

use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::PutLe;
/// The objects of one collection: (index, absolute start, length), sorted by index.
#[derive(Debug, Default)]
pub struct CollectionIndex {
    objects: Vec<(u16, usize, usize)>,
}

impl CollectionIndex {
    /// (absolute start, length) of object `idx`.
    pub fn get(&self, idx: u16) -> Option<(usize, usize)> {
        // Writers number objects 1, 2, ... in order: try the direct slot first.
        let direct = self
            .objects
            .get((idx as usize).wrapping_sub(1))
            .filter(|o| o.0 == idx);
        let o = match direct {
            Some(o) => o,
            None => {
                let i = self.objects.binary_search_by_key(&idx, |o| o.0).ok()?;
                &self.objects[i]
            }
        };
        Some((o.1, o.2))
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// True when the collection holds no object.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// Parses the collection at `addr` into an index of its objects.
pub fn read_collection(ctx: &Ctx<'_>, addr: u64) -> Result<CollectionIndex> {
    let mut c = ctx.cursor(addr, "global heap collection")?;
    c.expect_sig(b"GCOL")?;
    let v = c.u8()?;
    if v != 1 {
        return corrupt(format!("global heap version {v}"));
    }
    c.skip(3)?;
    let size = c.uint(ctx.sl)?;
    let base = ctx.pos(addr)?;
    let block = ctx.slice(addr, size)?;
    let hdr = 8 + ctx.sl;
    let mut pos = hdr;
    let mut objects = Vec::new();
    while pos + 8 + ctx.sl <= block.len() {
        let idx = u16::from_le_bytes([block[pos], block[pos + 1]]);
        let osize = crate::io::le_uint(&block[pos + 8..pos + 8 + ctx.sl]);
        let start = pos + 8 + ctx.sl;
        if idx == 0 {
            break;
        }
        if osize > (block.len() - start) as u64 {
            return corrupt("global heap object runs past its collection");
        }
        objects.push((idx, base + start, osize as usize));
        pos = start + (osize as usize).div_ceil(8) * 8;
    }
    objects.sort_by_key(|o| o.0);
    Ok(CollectionIndex { objects })
}

/// Builds one collection in memory: objects get indices 1, 2, ...
pub struct CollectionBuilder {
    /// Where the collection starts in the buffer it is written into.
    start: usize,
    next: u16,
}

/// Smallest collection libhdf5 accepts ("global heap size is too small" below it).
pub const MIN_COLLECTION: usize = 4096;

impl CollectionBuilder {
    /// Starts a collection at the end of `buf`; objects are then added to `buf` in place.
    pub fn start(buf: &mut Vec<u8>) -> Self {
        let start = buf.len();
        buf.extend_from_slice(b"GCOL");
        buf.extend_from_slice(&[1, 0, 0, 0]);
        buf.put_u64(0);
        CollectionBuilder { start, next: 1 }
    }

    /// True when no more objects fit (index space exhausted).
    pub fn full(&self) -> bool {
        self.next == u16::MAX
    }

    /// Bytes so far.
    pub fn len(&self, buf: &[u8]) -> usize {
        buf.len() - self.start
    }

    /// True when no object was added.
    pub fn is_empty(&self) -> bool {
        self.next == 1
    }

    /// Adds an object at the end of `buf`; returns its index.
    pub fn add(&mut self, buf: &mut Vec<u8>, data: &[u8]) -> u16 {
        let idx = self.next;
        self.next += 1;
        let padded = data.len().div_ceil(8) * 8;
        buf.reserve(16 + padded);
        buf.put_u16(idx);
        buf.put_u16(0);
        buf.put_u32(0);
        buf.put_u64(data.len() as u64);
        buf.extend_from_slice(data);
        buf.resize(buf.len() + padded - data.len(), 0);
        idx
    }

    /// Finishes: appends the free-space object, pads to the minimum size, fills the size field.
    pub fn finish(self, buf: &mut Vec<u8>) {
        let len = buf.len() - self.start;
        let target = (len + 16).max(MIN_COLLECTION);
        let free = target - len;
        buf.put_u16(0);
        buf.put_u16(0);
        buf.put_u32(0);
        buf.put_u64(free as u64);
        buf.resize(self.start + target, 0);
        let at = self.start + 8;
        buf[at..at + 8].copy_from_slice(&(target as u64).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_roundtrip() {
        let mut file = vec![0u8; 8];
        let mut b = CollectionBuilder::start(&mut file);
        let i1 = b.add(&mut file, b"hello");
        let i2 = b.add(&mut file, &[9u8; 33]);
        b.finish(&mut file);
        assert!(file.len() >= 8 + MIN_COLLECTION);
        let ctx = Ctx {
            data: &file,
            so: 8,
            sl: 8,
            base: 0,
        };
        let idx = read_collection(&ctx, 8).unwrap();
        let (s, n) = idx.get(i1).unwrap();
        assert_eq!(&file[s..s + n], b"hello");
        assert!(idx.get(99).is_none());
        let (s, n) = idx.get(i2).unwrap();
        assert_eq!(&file[s..s + n], &[9u8; 33]);
    }
}
