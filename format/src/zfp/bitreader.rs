//! zfp's bit stream, read: bits least significant first within each byte, bytes in order (what zfp writes with
//! any stream word size on a little-endian machine).

use crate::error::{corrupt, Result};

/// Reads a zfp bit stream; running past its end is a Corrupt error.
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// The next bit to read, counted from the stream's first.
    pos: u64,
}

impl<'a> BitReader<'a> {
    /// A reader at the first bit of `data`.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        BitReader { data, pos: 0 }
    }

    /// Bits read or skipped so far.
    #[cfg(test)]
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// The next bit (0 or 1).
    #[inline]
    pub(crate) fn bit(&mut self) -> Result<u64> {
        let Some(&byte) = usize::try_from(self.pos >> 3)
            .ok()
            .and_then(|i| self.data.get(i))
        else {
            return truncated();
        };
        let b = (byte >> (self.pos & 7)) & 1;
        self.pos += 1;
        Ok(u64::from(b))
    }

    /// The next `n` bits (at most 64), the first read as the least significant.
    #[inline]
    pub(crate) fn bits(&mut self, n: u32) -> Result<u64> {
        debug_assert!(n <= 64);
        if n == 0 {
            return Ok(0);
        }
        // Up to 56 bits from one unaligned load where eight bytes remain.
        if n <= 56 {
            let at = usize::try_from(self.pos >> 3).unwrap_or(usize::MAX);
            if let Some(w) = at.checked_add(8).and_then(|end| self.data.get(at..end)) {
                let mut le = [0u8; 8];
                le.copy_from_slice(w);
                let v = u64::from_le_bytes(le) >> (self.pos & 7);
                self.pos += u64::from(n);
                return Ok(v & ((1u64 << n) - 1));
            }
        }
        let mut value = 0u64;
        let mut got = 0u32;
        while got < n {
            let Some(&byte) = usize::try_from(self.pos >> 3)
                .ok()
                .and_then(|i| self.data.get(i))
            else {
                return truncated();
            };
            let shift = (self.pos & 7) as u32;
            let take = (8 - shift).min(n - got);
            let part = (u64::from(byte) >> shift) & ((1u64 << take) - 1);
            value |= part << got;
            got += take;
            self.pos += u64::from(take);
        }
        Ok(value)
    }

    /// Moves `n` bits on without reading them (past the end is only an error once a bit is read there).
    pub(crate) fn skip(&mut self, n: u64) {
        self.pos = self.pos.saturating_add(n);
    }
}

/// The error of a read past the stream's end.
fn truncated<T>() -> Result<T> {
    corrupt("zfp stream ends before its last block")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_read_least_significant_first() {
        let data = [0b1010_0110u8, 0xff, 0x01, 0x80];
        let mut r = BitReader::new(&data);
        assert_eq!(r.bit().unwrap(), 0);
        assert_eq!(r.bit().unwrap(), 1);
        assert_eq!(r.bits(3).unwrap(), 0b001);
        assert_eq!(r.bits(5).unwrap(), 0b1_1101);
        assert_eq!(r.position(), 10);
        assert_eq!(r.bits(0).unwrap(), 0);
        assert_eq!(r.bits(14).unwrap(), 0b111_1111);
        r.skip(7);
        assert_eq!(r.bit().unwrap(), 1);
        assert!(r.bit().is_err());
    }

    #[test]
    fn wide_reads_cross_bytes() {
        let data: Vec<u8> = (0..16u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        let whole = u64::from_le_bytes(data[1..9].try_into().unwrap());
        let mut r = BitReader::new(&data);
        r.skip(8);
        assert_eq!(r.bits(64).unwrap(), whole);
        // The same bits one at a time, from an odd offset.
        let mut a = BitReader::new(&data);
        let mut b = BitReader::new(&data);
        a.skip(3);
        b.skip(3);
        let wide = a.bits(61).unwrap();
        let mut single = 0u64;
        for i in 0..61 {
            single |= b.bit().unwrap() << i;
        }
        assert_eq!(wide, single);
    }

    #[test]
    fn every_width_at_every_offset_equals_bit_by_bit_reads() {
        let mut rng = crate::test_rng::TestRng::new(0xb175);
        let data: Vec<u8> = (0..40).map(|_| rng.next() as u8).collect();
        for start in 0..80u64 {
            for n in 0..=64u32 {
                if start + u64::from(n) > 320 {
                    continue;
                }
                let mut a = BitReader::new(&data);
                a.skip(start);
                let mut b = BitReader::new(&data);
                b.skip(start);
                let mut single = 0u64;
                for i in 0..n {
                    single |= b.bit().unwrap() << i;
                }
                assert_eq!(a.bits(n).unwrap(), single, "{start} {n}");
                assert_eq!(a.pos, b.pos);
            }
        }
    }

    #[test]
    fn reading_past_the_end_is_an_error() {
        let mut r = BitReader::new(&[0xff]);
        assert!(r.bits(9).is_err());
        let mut r = BitReader::new(&[]);
        assert!(r.bit().is_err());
        r.skip(u64::MAX);
        r.skip(5);
        assert!(r.bits(1).is_err());
    }
}
