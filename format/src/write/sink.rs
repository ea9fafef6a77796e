//! An append-only byte sink that knows the file address of its next byte, and a global-heap
//! writer on top of it.

use crate::convert::VlenSink;
use crate::error::Result;
use crate::heap::global::CollectionBuilder;

/// Bytes destined for file addresses `base..base + buf.len()`.
pub struct Sink {
    pub base: u64,
    pub buf: Vec<u8>,
}

impl Sink {
    /// A sink whose first byte lands at `base`.
    pub fn new(base: u64) -> Self {
        Sink {
            base,
            buf: Vec::new(),
        }
    }

    /// Address of the next byte.
    pub fn pos(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// Appends `bytes`, returning their address.
    pub fn append(&mut self, bytes: &[u8]) -> u64 {
        let a = self.pos();
        self.buf.extend_from_slice(bytes);
        a
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

impl VlenSink for HeapSink<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(u64, u32)> {
        let need_new = match &self.cur {
            None => true,
            Some((_, b)) => b.full() || b.len(&self.sink.buf) >= COLLECTION_TARGET,
        };
        if need_new {
            self.close();
        }
        let pos = self.sink.pos();
        let buf = &mut self.sink.buf;
        let (addr, b) = self
            .cur
            .get_or_insert_with(|| (pos, CollectionBuilder::start(buf)));
        Ok((*addr, b.add(buf, bytes) as u32))
    }
}
