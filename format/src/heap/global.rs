//! Global heap collections (`GCOL`): reading objects and writing new collections.

use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::PutLe;
use crate::sizes::Sizes;
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

/// Bytes of a collection's header ("GCOL", version, reserved, collection size) and of each object's header
/// (index, reference count, reserved, object size): both hold one length and are padded to 8 bytes.
fn aligned_header(lengths: usize) -> usize {
    (8 + lengths).div_ceil(8) * 8
}

/// The bytes of the collection at `addr`, its header included (checked).
pub fn collection_block<'a>(ctx: &Ctx<'a>, addr: u64) -> Result<&'a [u8]> {
    let mut c = ctx.cursor(addr, "global heap collection")?;
    c.expect_sig(b"GCOL")?;
    let v = c.u8()?;
    if v != 1 {
        return corrupt(format!("global heap version {v}"));
    }
    c.skip(3)?;
    let size = c.uint(ctx.sl)?;
    ctx.slice(addr, size)
}

/// Reads a collection's objects in their stored order, for elements that name them in that order (as
/// writers store them): no index of the collection is needed. Any other order, or bytes that do not
/// parse, leave the lookup to [`CollectionIndex`].
pub struct InOrder<'a> {
    block: &'a [u8],
    /// The file's size of lengths.
    sl: usize,
    /// Where the next object's header starts in `block`.
    pos: usize,
    /// The index that object should carry.
    next: u32,
}

impl<'a> InOrder<'a> {
    /// A reader at the first object of the collection `block` (from [`collection_block`]).
    pub fn new(block: &'a [u8], sl: usize) -> Self {
        InOrder {
            block,
            sl,
            pos: aligned_header(sl),
            next: 1,
        }
    }

    /// The bytes of object `idx` when it is the next one stored; `None` otherwise (nothing consumed).
    #[inline(always)]
    pub fn take(&mut self, idx: u32) -> Option<&'a [u8]> {
        if idx != self.next {
            return None;
        }
        let hdr = aligned_header(self.sl);
        let head = self.block.get(self.pos..self.pos.checked_add(hdr)?)?;
        if u32::from(u16::from_le_bytes([head[0], head[1]])) != idx {
            return None;
        }
        let size = usize::try_from(crate::io::le_uint(&head[8..8 + self.sl])).ok()?;
        let start = self.pos + hdr;
        let body = self.block.get(start..start.checked_add(size)?)?;
        self.pos = start + size.div_ceil(8) * 8;
        self.next += 1;
        Some(body)
    }
}

/// Parses the collection at `addr` into an index of its objects.
pub fn read_collection(ctx: &Ctx<'_>, addr: u64) -> Result<CollectionIndex> {
    let block = collection_block(ctx, addr)?;
    let base = ctx.pos(addr)?;
    let hdr = aligned_header(ctx.sl);
    let mut pos = hdr;
    // Every object takes at least a header, and indices are 16-bit: room for all of them at once.
    let mut objects = Vec::with_capacity((block.len() / hdr).min(1 << 16));
    while pos + hdr <= block.len() {
        let idx = u16::from_le_bytes([block[pos], block[pos + 1]]);
        let osize = crate::io::le_uint(&block[pos + 8..pos + 8 + ctx.sl]);
        let start = pos + hdr;
        if idx == 0 {
            break;
        }
        if osize > (block.len() - start) as u64 {
            return corrupt("global heap object runs past its collection");
        }
        objects.push((idx, base + start, osize as usize));
        pos = start + (osize as usize).div_ceil(8) * 8;
    }
    // Writers number objects in order: usually nothing to sort.
    if !objects.is_sorted_by_key(|o| o.0) {
        objects.sort_by_key(|o| o.0);
    }
    Ok(CollectionIndex { objects })
}

/// Builds one collection in memory: objects get indices 1, 2, ...
pub struct CollectionBuilder {
    /// Where the collection starts in the buffer it is written into.
    start: usize,
    next: u16,
    /// The file's field widths (collection and object sizes are lengths).
    sizes: Sizes,
    /// The largest collection the length fields hold, or 0 when even the minimum collection does not fit.
    max_bytes: u64,
}

/// Smallest collection libhdf5 accepts ("global heap size is too small" below it).
pub const MIN_COLLECTION: usize = 4096;

impl CollectionBuilder {
    /// Starts a collection at the end of `buf` (8-byte lengths); objects are then added to `buf` in place.
    pub fn start(buf: &mut Vec<u8>) -> Self {
        Self::start_sized(buf, Sizes::DEFAULT)
    }

    /// Starts a collection at the end of `buf` for a file of these field widths.
    pub fn start_sized(buf: &mut Vec<u8>, sizes: Sizes) -> Self {
        let start = buf.len();
        buf.extend_from_slice(b"GCOL");
        buf.extend_from_slice(&[1, 0, 0, 0]);
        buf.resize(start + aligned_header(sizes.lengths), 0);
        let max = sizes.max_length();
        CollectionBuilder {
            start,
            next: 1,
            sizes,
            max_bytes: if max >= MIN_COLLECTION as u64 { max } else { 0 },
        }
    }

    /// Bytes of an object's header (index, reference count, reserved, size): 16, as files' length
    /// fields are at most 8 bytes (the superblock reader accepts 2, 4 or 8).
    const fn object_header(&self) -> usize {
        16
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

    /// Whether an object of `n` bytes still fits this collection's length fields (with the free-space object
    /// that closes it, and the minimum size).
    #[inline]
    pub fn fits(&self, buf: &[u8], n: usize) -> bool {
        let total =
            self.len(buf) as u64 + 2 * self.object_header() as u64 + (n as u64).div_ceil(8) * 8;
        total <= self.max_bytes
    }

    /// Adds an object at the end of `buf`; returns its index. The object must [fit](Self::fits).
    #[inline]
    pub fn add(&mut self, buf: &mut Vec<u8>, data: &[u8]) -> u16 {
        let idx = self.next;
        self.next += 1;
        // The header: index, reference count and reserved (zero), then the size field, `lengths`
        // bytes at 8: all 8 bytes of the value are written, those past the field being zero, as the
        // value fits the field.
        let head = u128::from(idx) | u128::from(data.len() as u64) << 64;
        buf.extend_from_slice(&head.to_le_bytes());
        buf.extend_from_slice(data);
        // Zero padding to a multiple of 8.
        buf.extend_from_slice(&[0u8; 8][..data.len().wrapping_neg() % 8]);
        idx
    }

    /// Finishes: appends the free-space object, pads to the minimum size, fills the size field.
    pub fn finish(self, buf: &mut Vec<u8>) {
        let len = buf.len() - self.start;
        let target = (len + self.object_header()).max(MIN_COLLECTION);
        let free = target - len;
        let sl = self.sizes.lengths;
        buf.put_u16(0);
        buf.put_u16(0);
        buf.put_u32(0);
        buf.extend_from_slice(&(free as u64).to_le_bytes()[..sl]);
        buf.resize(self.start + target, 0);
        let at = self.start + 8;
        buf[at..at + sl].copy_from_slice(&(target as u64).to_le_bytes()[..sl]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collections_of_4_byte_lengths_pad_their_headers_to_8_bytes() {
        let sizes = Sizes {
            offsets: 4,
            lengths: 4,
        };
        let mut file = vec![0u8; 8];
        let mut b = CollectionBuilder::start_sized(&mut file, sizes);
        assert_eq!(file.len(), 8 + 16);
        let i1 = b.add(&mut file, b"abc");
        // Index, reference count, reserved, 4-byte size, 4 bytes of padding, then the object.
        assert_eq!(
            &file[24..40],
            &[1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]
        );
        b.finish(&mut file);
        let ctx = Ctx {
            data: &file,
            so: 4,
            sl: 4,
            base: 0,
        };
        let idx = read_collection(&ctx, 8).unwrap();
        let (s, n) = idx.get(i1).unwrap();
        assert_eq!(&file[s..s + n], b"abc");
    }

    #[test]
    fn objects_are_read_in_stored_order_and_nothing_else() {
        for sizes in [
            Sizes::DEFAULT,
            Sizes {
                offsets: 4,
                lengths: 2,
            },
        ] {
            let mut file = vec![0u8; 8];
            let mut b = CollectionBuilder::start_sized(&mut file, sizes);
            b.add(&mut file, b"hello");
            b.add(&mut file, b"");
            b.add(&mut file, &[9u8; 33]);
            b.finish(&mut file);
            let ctx = Ctx {
                data: &file,
                so: sizes.offsets,
                sl: sizes.lengths,
                base: 0,
            };
            let block = collection_block(&ctx, 8).unwrap();
            let mut r = InOrder::new(block, sizes.lengths);
            assert_eq!(r.take(2), None, "out of order");
            assert_eq!(r.take(1), Some(&b"hello"[..]));
            assert_eq!(r.take(1), None, "already taken");
            assert_eq!(r.take(2), Some(&b""[..]));
            assert_eq!(r.take(3), Some(&[9u8; 33][..]));
            // The free-space object that closes the collection is not object 4.
            assert_eq!(r.take(4), None);
            // A damaged header (index or size) gives nothing, never a slice out of bounds.
            let mut bad = block.to_vec();
            let first = aligned_header(sizes.lengths);
            bad[first + 8] = 0xff;
            bad[first + 9] = 0xff;
            assert_eq!(InOrder::new(&bad, sizes.lengths).take(1), None);
            bad[first] = 7;
            assert_eq!(InOrder::new(&bad, sizes.lengths).take(1), None);
            assert_eq!(InOrder::new(&bad[..first + 4], sizes.lengths).take(1), None);
        }
    }

    #[test]
    fn objects_are_padded_with_zeros_and_fit_only_what_the_length_fields_hold() {
        let mut file = vec![0xaau8; 8];
        let mut b = CollectionBuilder::start(&mut file);
        b.add(&mut file, b"abcde");
        // Header, then the five bytes and three zeros of padding.
        assert_eq!(&file[8 + 16 + 16..], b"abcde\0\0\0");
        b.add(&mut file, b"12345678");
        assert_eq!(file.len(), 8 + 16 + 24 + 24);

        // 2-byte lengths: a collection holds at most 65,535 bytes, the closing free-space object
        // (16 bytes) included.
        let narrow = Sizes {
            offsets: 4,
            lengths: 2,
        };
        let mut file = Vec::new();
        let b = CollectionBuilder::start_sized(&mut file, narrow);
        let room = 65_535 - 16 - 2 * 16;
        assert!(b.fits(&file, room / 8 * 8));
        assert!(!b.fits(&file, room / 8 * 8 + 1));
        // 1-byte lengths cannot describe even the smallest collection libhdf5 accepts.
        let tiny = Sizes {
            offsets: 4,
            lengths: 1,
        };
        let mut file = Vec::new();
        let b = CollectionBuilder::start_sized(&mut file, tiny);
        assert!(!b.fits(&file, 0));
    }

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
