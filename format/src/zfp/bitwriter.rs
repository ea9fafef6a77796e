//! zfp's bit stream, written: bits least significant first within each byte, bytes in order (what zfp writes
//! on a little-endian machine, and with the byte-sized stream words H5Z-ZFP builds it with on any machine).

/// Writes a zfp bit stream into a growing buffer.
#[derive(Debug, Default)]
pub(crate) struct BitWriter {
    bytes: Vec<u8>,
    /// Bits written so far.
    bits: u64,
}

impl BitWriter {
    /// An empty stream with room for about `bytes` bytes.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        BitWriter {
            bytes: Vec::with_capacity(bytes),
            bits: 0,
        }
    }

    /// Bits written so far.
    #[cfg(test)]
    pub(crate) fn position(&self) -> u64 {
        self.bits
    }

    /// Appends bit `b` (its lowest); returns it, as zfp's `stream_write_bit` does.
    #[inline]
    pub(crate) fn bit(&mut self, b: u64) -> u64 {
        let b = b & 1;
        let shift = (self.bits & 7) as u32;
        if shift == 0 {
            self.bytes.push(b as u8);
        } else if let Some(last) = self.bytes.last_mut() {
            *last |= (b as u8) << shift;
        }
        self.bits += 1;
        b
    }

    /// Appends the low `n` bits (at most 64) of `value`, least significant first; returns `value >> n`, as
    /// zfp's `stream_write_bits` does.
    #[inline]
    pub(crate) fn bits(&mut self, value: u64, n: u32) -> u64 {
        debug_assert!(n <= 64);
        let mut left = n;
        let mut v = value;
        while left > 0 {
            let shift = (self.bits & 7) as u32;
            let take = (8 - shift).min(left);
            let part = (v & ((1u64 << take) - 1)) as u8;
            if shift == 0 {
                self.bytes.push(part);
            } else if let Some(last) = self.bytes.last_mut() {
                *last |= part << shift;
            }
            self.bits += u64::from(take);
            v = if take == 64 { 0 } else { v >> take };
            left -= take;
        }
        if n >= 64 {
            0
        } else {
            value >> n
        }
    }

    /// Appends `n` zero bits.
    pub(crate) fn pad(&mut self, n: u64) {
        let end = self.bits.saturating_add(n);
        let bytes = usize::try_from(end.div_ceil(8)).unwrap_or(usize::MAX);
        self.bytes.resize(bytes, 0);
        self.bits = end;
    }

    /// The stream, its last byte padded with zero bits.
    pub(crate) fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::bitreader::BitReader;
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let mut rng = crate::test_rng::TestRng::new(0xb1_77);
        let mut w = BitWriter::default();
        let mut items = Vec::new();
        for _ in 0..2000 {
            let n = (rng.next() % 65) as u32;
            let v = rng.next();
            match rng.next() % 4 {
                0 => {
                    w.bit(v);
                    items.push((v & 1, 1, false));
                }
                1 => {
                    let p = rng.next() % 20;
                    w.pad(p);
                    items.push((0, p as u32, true));
                }
                _ => {
                    let rest = w.bits(v, n);
                    assert_eq!(rest, if n == 64 { 0 } else { v >> n });
                    let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
                    items.push((v & mask, n, false));
                }
            }
        }
        let total = w.position();
        let bytes = w.finish();
        assert_eq!(bytes.len() as u64, total.div_ceil(8));
        let mut r = BitReader::new(&bytes);
        for (v, n, _) in items {
            assert_eq!(r.bits(n).unwrap(), v);
        }
    }

    #[test]
    fn bits_fill_bytes_least_significant_first() {
        let mut w = BitWriter::default();
        w.bit(0);
        w.bit(1);
        w.bits(0b001, 3);
        w.bits(0b1_1101, 5);
        assert_eq!(w.finish(), vec![0b1010_0110, 0b11]);
    }
}
