//! A most-significant-bit-first bit reader, shared by the decoders of bit-packed chunks (szip, N-bit).

use crate::error::{corrupt, Result};

/// Reads a byte stream's bits most significant first.
pub(crate) struct MsbBits<'a> {
    data: &'a [u8],
    /// The next byte of `data` not yet in `acc`.
    pos: usize,
    /// Buffered bits, left-aligned: the top `n` are the next ones. Bits below them may already hold the
    /// following byte's bits (put there again, identically, by the next refill).
    acc: u64,
    /// How many of `acc`'s top bits are buffered.
    n: u32,
    /// The error's message when the stream runs out.
    truncated: &'static str,
}

impl<'a> MsbBits<'a> {
    /// A reader of `data`; running out of bits is a Corrupt error saying `truncated`.
    pub(crate) fn new(data: &'a [u8], truncated: &'static str) -> Self {
        MsbBits {
            data,
            pos: 0,
            acc: 0,
            n: 0,
            truncated,
        }
    }

    /// Tops up the buffer to at least 56 bits where the stream has them.
    fn refill(&mut self) {
        if let Some(word) = self.data.get(self.pos..self.pos + 8) {
            let mut be = [0; 8];
            be.copy_from_slice(word);
            self.acc |= u64::from_be_bytes(be) >> self.n;
            let take = (63 - self.n) / 8;
            self.pos += take as usize;
            self.n += take * 8;
            return;
        }
        while self.n <= 56 {
            let Some(&b) = self.data.get(self.pos) else {
                return;
            };
            self.acc |= (b as u64) << (56 - self.n);
            self.pos += 1;
            self.n += 8;
        }
    }

    /// The next `k` bits (0 to 32) as a number.
    #[inline]
    pub(crate) fn take(&mut self, k: u32) -> Result<u32> {
        if k == 0 {
            return Ok(0);
        }
        if self.n < k {
            self.refill();
            if self.n < k {
                return corrupt(self.truncated);
            }
        }
        let v = (self.acc >> (64 - k)) as u32;
        self.acc <<= k;
        self.n -= k;
        Ok(v)
    }

    /// A fundamental sequence: the number of 0 bits before the next 1 bit (which is consumed too).
    #[inline]
    pub(crate) fn fs(&mut self) -> Result<u64> {
        let mut count = 0u64;
        loop {
            let zeros = self.acc.leading_zeros();
            if zeros < self.n {
                count += zeros as u64;
                // zeros + 1 <= n <= 63 here, so the shift is in range.
                self.acc <<= zeros + 1;
                self.n -= zeros + 1;
                return Ok(count);
            }
            // Every buffered bit is 0: count them and read on.
            count += self.n as u64;
            self.acc = 0;
            self.n = 0;
            self.refill();
            if self.n == 0 {
                return corrupt(self.truncated);
            }
        }
    }
}
