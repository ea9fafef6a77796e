//! An append-only byte sink that knows the file address of its next byte, and a global-heap
//! writer on top of it.

use crate::convert::VlenSink;
use crate::error::Result;
use crate::heap::global::CollectionBuilder;
use crate::sizes::Sizes;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// Bytes destined for file addresses `base..base + buf.len()`.
pub struct Sink {
    pub base: u64,
    pub buf: Vec<u8>,
    /// The widths of the file's address and length fields, which every structure written here uses.
    pub sizes: Sizes,
    /// Filtered chunks appended, by address, while a commit's first pass records them.
    pub(crate) recorded: Option<HashMap<u64, StoredChunk>>,
    /// A first pass's chunks, which a second pass writing the same chunk at the same address reuses.
    pub(crate) replay: Option<Replay>,
}

/// One filtered chunk a sink stored: a hash of its unfiltered bytes, its length and its filter mask.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct StoredChunk {
    pub raw_hash: u64,
    pub len: usize,
    pub mask: u32,
}

/// What a first pass wrote from address `start` on (`bytes`), and the filtered chunks among it.
pub(crate) struct Replay {
    pub start: u64,
    pub bytes: Vec<u8>,
    pub chunks: HashMap<u64, StoredChunk>,
}

impl Replay {
    /// The first pass's filtered bytes of a chunk stored at `addr` (as `chunk` says), if it stored one there.
    pub fn bytes_at(&self, addr: u64, chunk: &StoredChunk) -> Option<&[u8]> {
        if self.chunks.get(&addr) != Some(chunk) {
            return None;
        }
        let from = usize::try_from(addr.checked_sub(self.start)?).ok()?;
        self.bytes.get(from..from.checked_add(chunk.len)?)
    }
}

/// The hash a sink records of a chunk's unfiltered bytes.
pub(crate) fn raw_hash(raw: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    raw.hash(&mut h);
    h.finish()
}

impl Sink {
    /// A sink whose first byte lands at `base`.
    pub fn new(base: u64) -> Self {
        Sink::with_sizes(base, Sizes::DEFAULT)
    }

    /// A sink whose first byte lands at `base`, for a file of these field widths.
    pub fn with_sizes(base: u64, sizes: Sizes) -> Self {
        Sink {
            base,
            buf: Vec::new(),
            sizes,
            recorded: None,
            replay: None,
        }
    }

    /// Address of the next byte.
    pub fn pos(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// Appends `bytes`, returning their address.
    pub fn append(&mut self, bytes: &[u8]) -> u64 {
        let a = self.pos();
        self.reserve(bytes.len());
        self.buf.extend_from_slice(bytes);
        a
    }

    /// Makes room for `additional` more bytes, at least doubling the buffer when it grows; a large buffer's
    /// new room is advised onto huge pages, so a commit of many megabytes does not fault in 4 KiB pages one
    /// by one.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if self.buf.capacity() - self.buf.len() < additional {
            self.grow(additional);
        }
    }

    #[cold]
    fn grow(&mut self, additional: usize) {
        self.buf.reserve(additional.max(self.buf.capacity()));
        crate::hugepages::advise_spare(&mut self.buf);
    }
}

/// Writes variable-length objects into global heap collections appended to a [`Sink`], each
/// built in place at the sink's end. Nothing else may be appended to the sink until
/// [`finish`](Self::finish).
pub struct HeapSink<'a> {
    sink: &'a mut Sink,
    /// The open collection's address and builder.
    cur: Option<(u64, CollectionBuilder)>,
}

impl<'a> HeapSink<'a> {
    pub fn new(sink: &'a mut Sink) -> Self {
        HeapSink { sink, cur: None }
    }

    fn close(&mut self) {
        if let Some((_, b)) = self.cur.take() {
            b.finish(&mut self.sink.buf);
        }
    }

    /// Closes the open collection.
    pub fn finish(mut self) {
        self.close();
    }
}

/// Collections are closed once they reach this many bytes.
const COLLECTION_TARGET: usize = 1 << 20;

impl HeapSink<'_> {
    /// Stores `bytes` as a heap object: its collection's address, its index, and the address of its bytes
    /// (where a later patch may change them). An object too large for the file's length fields is an error.
    #[inline]
    pub fn put_located(&mut self, bytes: &[u8]) -> Result<(u64, u32, u64)> {
        let sizes = self.sink.sizes;
        let need_new = match &self.cur {
            None => true,
            Some((_, b)) => {
                b.full()
                    || b.len(&self.sink.buf) >= COLLECTION_TARGET
                    || !b.fits(&self.sink.buf, bytes.len())
            }
        };
        if need_new {
            self.close();
        }
        let pos = self.sink.pos();
        let buf = &mut self.sink.buf;
        let (addr, b) = match &mut self.cur {
            Some(cur) => cur,
            None => {
                let b = CollectionBuilder::start_sized(buf, sizes);
                if !b.fits(buf, bytes.len()) {
                    return Err(crate::FormatError::too_wide(
                        "a global heap collection holding a variable-length value",
                        bytes.len() as u64,
                        sizes.lengths,
                    ));
                }
                self.cur.insert((pos, b))
            }
        };
        // The object's header (index, reference count, reserved, size) precedes its bytes.
        let body = self.sink.base + buf.len() as u64 + (8 + sizes.lengths as u64).div_ceil(8) * 8;
        Ok((*addr, b.add(buf, bytes) as u32, body))
    }
}

impl VlenSink for HeapSink<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) -> Result<(u64, u32)> {
        let (coll, index, _) = self.put_located(bytes)?;
        Ok((coll, index))
    }

    fn offset_size(&self) -> usize {
        self.sink.sizes.offsets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_grows_once_and_keeps_addresses() {
        let mut s = Sink::new(100);
        assert_eq!(s.append(b"abc"), 100);
        s.reserve(5 << 20);
        let cap = s.buf.capacity();
        assert!(cap >= 3 + (5 << 20));
        // Appends within the reserved room neither move nor reallocate the buffer.
        let at = s.buf.as_ptr();
        let chunk = vec![9u8; 1 << 20];
        for i in 0..5u64 {
            assert_eq!(s.append(&chunk), 103 + i * (1 << 20));
        }
        assert_eq!((s.buf.as_ptr(), s.buf.capacity()), (at, cap));
        assert_eq!(&s.buf[..4], b"abc\x09");
        // Growing past it makes room for at least the whole buffer again.
        let len = s.buf.len();
        s.reserve(cap);
        assert!(s.buf.capacity() >= len + cap);
    }
}
