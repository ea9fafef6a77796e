//! The entropy-coded segment of a JPEG-LS scan, read most significant bit first. After every 0xFF byte the
//! encoder stuffs a 0 bit, so the next byte carries 7 bits; an 0xFF followed by a byte with its top bit set is a
//! marker and ends the segment.

use crate::error::{corrupt, Result};

/// Bits the reader may supply past the segment's end (as zeros) before the scan is declared truncated:
/// read-ahead only, a valid scan never consumes them.
const SLACK_BITS: u64 = 64;

/// Reads the bits of one scan's entropy-coded segment.
pub(super) struct ScanBits<'a> {
    data: &'a [u8],
    /// Next byte to load.
    pos: usize,
    /// Loaded bits, left-aligned: the next bit is bit 63.
    acc: u64,
    /// How many bits of `acc` are loaded.
    nbits: u32,
    /// The byte last loaded was 0xFF (the next carries 7 bits).
    after_ff: bool,
    /// The segment ended (marker or end of data); zeros are loaded from here on.
    ended: bool,
    /// Zero bits loaded past the end.
    phantom: u64,
}

impl<'a> ScanBits<'a> {
    /// A reader of the segment that starts at `data[0]`.
    pub(super) fn new(data: &'a [u8]) -> Self {
        let mut r = ScanBits {
            data,
            pos: 0,
            acc: 0,
            nbits: 0,
            after_ff: false,
            ended: false,
            phantom: 0,
        };
        r.refill();
        r
    }

    /// Loads bytes until at least 57 bits are held.
    fn refill(&mut self) {
        // Eight bytes without an 0xFF among them (most of a stream) load at once.
        if !self.after_ff && !self.ended && self.nbits < 57 {
            if let Some(chunk) = self.data.get(self.pos..self.pos + 8) {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                let word = u64::from_be_bytes(word);
                let inv = !word;
                let has_ff = inv.wrapping_sub(0x0101_0101_0101_0101) & !inv & 0x8080_8080_8080_8080;
                if has_ff == 0 {
                    let take = (64 - self.nbits) / 8;
                    let bits = 8 * take;
                    let top = if bits == 64 {
                        word
                    } else {
                        word >> (64 - bits)
                    };
                    self.acc |= top << (64 - self.nbits - bits);
                    self.nbits += bits;
                    self.pos += take as usize;
                    return;
                }
            }
        }
        while self.nbits <= 56 {
            if !self.ended {
                match self.data.get(self.pos) {
                    Some(&b) if self.after_ff => {
                        // Stuffed: its top bit is the 0 the encoder inserted.
                        self.acc |= u64::from(b & 0x7F) << (57 - self.nbits);
                        self.nbits += 7;
                        self.pos += 1;
                        self.after_ff = false;
                        continue;
                    }
                    Some(0xFF) if self.data.get(self.pos + 1).is_some_and(|&n| n & 0x80 != 0) => {
                        // A marker: the segment ends before it.
                        self.ended = true;
                    }
                    Some(&b) => {
                        self.acc |= u64::from(b) << (56 - self.nbits);
                        self.nbits += 8;
                        self.pos += 1;
                        self.after_ff = b == 0xFF;
                        continue;
                    }
                    None => self.ended = true,
                }
            }
            self.nbits += 8;
            self.phantom += 8;
        }
    }

    /// Fails once the decoder has consumed bits past the segment's end.
    pub(super) fn check(&self) -> Result<()> {
        if self.overrun() {
            return corrupt("JPEG-LS scan: entropy-coded data ends before the scan's last sample");
        }
        Ok(())
    }

    /// Whether more bits were consumed than the segment holds.
    fn overrun(&self) -> bool {
        self.phantom > u64::from(self.nbits)
    }

    /// One bit.
    #[inline]
    pub(super) fn bit(&mut self) -> u32 {
        if self.nbits == 0 {
            self.refill();
        }
        let b = (self.acc >> 63) as u32;
        self.acc <<= 1;
        self.nbits -= 1;
        b
    }

    /// The next `n` bits (0 ≤ n ≤ 32) as an unsigned value, the first read as the most significant.
    #[inline]
    pub(super) fn bits(&mut self, n: u32) -> u32 {
        if n == 0 {
            return 0;
        }
        if self.nbits < n {
            self.refill();
        }
        let v = (self.acc >> (64 - n)) as u32;
        self.acc <<= n;
        self.nbits -= n;
        v
    }

    /// Counts 0 bits up to and including the next 1 bit; returns the count of zeros. Stops counting (and
    /// returns `max + 1`) past `max` zeros, which no valid code has.
    #[inline]
    pub(super) fn zeros(&mut self, max: u32) -> u32 {
        let mut count = 0u32;
        loop {
            if self.nbits == 0 {
                self.refill();
            }
            let lz = self.acc.leading_zeros().min(self.nbits);
            if lz < self.nbits {
                self.acc <<= lz + 1;
                self.nbits -= lz + 1;
                return count + lz;
            }
            count += lz;
            self.acc = 0;
            self.nbits = 0;
            if count > max || self.ended && self.phantom > SLACK_BITS {
                return max + 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stuffed_bytes_carry_seven_bits_and_markers_end_the_segment() {
        // 0xFF then 0x7F (stuffed: 7 data bits 1111111), then 0x00, then a marker FF D9.
        let data = [0xFF, 0x7F, 0x00, 0xFF, 0xD9];
        let mut r = ScanBits::new(&data);
        assert_eq!(r.bits(8), 0xFF);
        assert_eq!(r.bits(7), 0x7F);
        assert_eq!(r.bits(8), 0);
        r.check().unwrap();
        assert_eq!(r.bits(8), 0, "past the marker: zeros");
        assert_eq!(r.bits(32), 0);
        assert_eq!(r.bits(32), 0);
        assert_eq!(r.bits(32), 0);
        assert!(r.check().is_err());
    }

    #[test]
    fn whole_words_and_single_bytes_load_the_same_bits() {
        // Runs of bytes with and without 0xFF (stuffed after it), read in every grouping.
        let mut data = Vec::new();
        for i in 0..200u32 {
            let b = (i.wrapping_mul(2_654_435_761) >> 24) as u8;
            data.push(b);
            if b == 0xFF {
                data.push(b & 0x5A);
            }
        }
        let mut want = Vec::new();
        let mut after_ff = false;
        for &b in &data {
            let n = if after_ff { 7 } else { 8 };
            for i in (0..n).rev() {
                want.push((b >> i) & 1);
            }
            after_ff = b == 0xFF;
        }
        for step in 1..=13u32 {
            let mut r = ScanBits::new(&data);
            let mut got = Vec::new();
            while got.len() + step as usize <= want.len() {
                let v = r.bits(step);
                for i in (0..step).rev() {
                    got.push(((v >> i) & 1) as u8);
                }
            }
            assert_eq!(got, want[..got.len()], "step {step}");
            r.check().unwrap();
        }
    }

    #[test]
    fn zeros_count_across_loads_and_stop_at_the_bound() {
        let data = [0x00, 0x00, 0x00, 0x01, 0x80];
        let mut r = ScanBits::new(&data);
        assert_eq!(r.zeros(100), 31);
        assert_eq!(r.bit(), 1);
        let mut r = ScanBits::new(&[0u8; 64]);
        assert_eq!(r.zeros(40), 41);
    }
}
