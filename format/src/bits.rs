//! Most-significant-bit-first bit streams: a reader shared by the decoders of bit-packed chunks (szip, N-bit)
//! and a writer for the N-bit encoder.

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

/// Writes bits most significant first into a byte vector; the last byte is padded with zero bits.
pub(crate) struct MsbWriter {
    out: Vec<u8>,
    /// Pending bits, right-aligned: the low `n` bits of `acc`, oldest first.
    acc: u64,
    n: u32,
}

impl MsbWriter {
    /// A writer whose output will take about `capacity` bytes.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        MsbWriter {
            out: Vec::with_capacity(capacity),
            acc: 0,
            n: 0,
        }
    }

    /// Appends the low `k` bits (at most 128) of `v`, most significant first.
    pub(crate) fn put(&mut self, v: u128, mut k: u32) {
        while k > 0 {
            let take = k.min(32);
            k -= take;
            let part = ((v >> k) as u64) & ((1u64 << take) - 1);
            self.acc = (self.acc << take) | part;
            self.n += take;
            while self.n >= 8 {
                self.n -= 8;
                self.out.push((self.acc >> self.n) as u8);
            }
            self.acc &= (1u64 << self.n) - 1;
        }
    }

    /// Whether the bits written so far end at a byte boundary.
    pub(crate) fn byte_aligned(&self) -> bool {
        self.n == 0
    }

    /// The bytes written, the last one padded with zeros.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push((self.acc << (8 - self.n)) as u8);
        }
        self.out
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;

    #[test]
    fn written_bits_read_back() {
        let widths = [1u32, 7, 8, 13, 32, 33, 64, 100, 128, 3];
        let mut w = MsbWriter::with_capacity(0);
        let values: Vec<u128> = widths
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let v = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128.rotate_left(i as u32 * 11);
                if k == 128 {
                    v
                } else {
                    v & ((1u128 << k) - 1)
                }
            })
            .collect();
        for (&v, &k) in values.iter().zip(&widths) {
            w.put(v, k);
        }
        let bytes = w.finish();
        let total: u32 = widths.iter().sum();
        assert_eq!(bytes.len(), total.div_ceil(8) as usize);
        let mut r = MsbBits::new(&bytes, "short");
        for (&v, &k) in values.iter().zip(&widths) {
            let mut got = 0u128;
            let mut left = k;
            while left > 0 {
                let t = left.min(32);
                got = (got << t) | u128::from(r.take(t).unwrap());
                left -= t;
            }
            assert_eq!(got, v, "{k} bits");
        }
    }
}
