//! Bounds-checked little-endian cursor over file bytes, and the matching byte builder.

use crate::error::{FormatError, Result};

/// The "undefined address" value (all bits set).
pub const UNDEF: u64 = u64::MAX;

/// A forward-only, bounds-checked reader over a byte slice.
#[derive(Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor over `buf`, naming `what` in truncation errors.
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Cursor { buf, pos: 0, what }
    }

    /// Current position.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Moves to an absolute position within the slice.
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.buf.len() {
            return Err(self.eof());
        }
        self.pos = pos;
        Ok(())
    }

    fn eof(&self) -> FormatError {
        FormatError::Corrupt(format!("truncated {}", self.what))
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.eof());
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    /// Little-endian u16.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(self.uint(2)? as u16)
    }

    /// Little-endian u32.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(self.uint(4)? as u32)
    }

    /// Little-endian u64.
    pub fn u64(&mut self) -> Result<u64> {
        self.uint(8)
    }

    /// An unsigned little-endian integer of `n` ≤ 8 bytes.
    pub fn uint(&mut self, n: usize) -> Result<u64> {
        let b = self.bytes(n)?;
        Ok(le_uint(b))
    }

    /// An address of `n` bytes; all-ones maps to [`UNDEF`].
    pub fn addr(&mut self, n: usize) -> Result<u64> {
        let b = self.bytes(n)?;
        if b.iter().all(|&x| x == 0xff) {
            return Ok(UNDEF);
        }
        Ok(le_uint(b))
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub fn cstr(&mut self) -> Result<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(i) => {
                self.pos += i + 1;
                Ok(&rest[..i])
            }
            None => Err(self.eof()),
        }
    }

    /// Checks a 4-byte signature.
    pub fn expect_sig(&mut self, sig: &[u8; 4]) -> Result<()> {
        let b = self.bytes(4)?;
        if b != sig {
            return Err(FormatError::Corrupt(format!(
                "bad signature in {}: expected {:?}",
                self.what,
                String::from_utf8_lossy(sig)
            )));
        }
        Ok(())
    }
}

/// Little-endian unsigned integer from up to 8 bytes.
#[inline]
pub fn le_uint(b: &[u8]) -> u64 {
    // The widths files use are read in one load each.
    if let Ok(a) = <[u8; 8]>::try_from(b) {
        return u64::from_le_bytes(a);
    }
    if let Ok(a) = <[u8; 4]>::try_from(b) {
        return u64::from(u32::from_le_bytes(a));
    }
    if let Ok(a) = <[u8; 2]>::try_from(b) {
        return u64::from(u16::from_le_bytes(a));
    }
    let mut v = 0u64;
    for (i, x) in b.iter().enumerate().take(8) {
        v |= (*x as u64) << (8 * i);
    }
    v
}

/// Appends little-endian integers to a byte vector.
pub trait PutLe {
    /// One byte.
    fn put_u8(&mut self, v: u8);
    /// Little-endian u16.
    fn put_u16(&mut self, v: u16);
    /// Little-endian u32.
    fn put_u32(&mut self, v: u32);
    /// Little-endian u64.
    fn put_u64(&mut self, v: u64);
    /// `n` low bytes of `v`.
    fn put_uint(&mut self, v: u64, n: usize);
}

impl PutLe for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_uint(&mut self, v: u64, n: usize) {
        self.extend_from_slice(&v.to_le_bytes()[..n]);
    }
}

/// Number of bytes needed to encode values up to `max` (at least 1).
pub fn bytes_for(max: u64) -> usize {
    let bits = 64 - max.leading_zeros() as usize;
    bits.div_ceil(8).max(1)
}
