//! HDF5's szip filter (id 4): CCSDS 121.0-B adaptive entropy coding (Rice coding with an optional predictor),
//! in the layout libaec's SZIP-compatible API gives it. Decoded in full; encoded with the split-sample,
//! zero-block and uncompressed options (never the second extension, which decoders need not see).
//!
//! A stored chunk is the decoded size (4 bytes, little-endian) followed by the coded stream. The client data
//! (`cd_values`) are the option mask (`NN` 32: the nearest-neighbour predictor; `MSB` 16 / `LSB` 8: the byte
//! order of 9–32-bit samples; `EC`, `RAW`, `CHIP`, `K13` change nothing here), pixels per block (even, 2–32),
//! bits per pixel and pixels per scanline.
//!
//! libhdf5 takes the bits per pixel from the type's precision, rounding 25–32 up to 32 and 33–64 up to 64.
//! Samples of 32 or 64 bits are coded as 8-bit samples after a byte shuffle (all first bytes, then all
//! second bytes, ...); others as samples of 1, 2 or 4 bytes (in the mask's byte order). The samples form
//! scanlines of `pixels per scanline`, each (the last, shorter one too) padded up to a whole number of
//! blocks; a scanline is one reference sample interval (RSI). Decoding stops at the stored size. The
//! stream, read most significant bit first, is a sequence of blocks, each starting with an option id
//! (3 bits for samples up to 8 bits, 4 up to 16, 5 beyond):
//! - 0, then one bit: 0 a run of all-zero blocks, its length a fundamental sequence `n` (`n + 1` blocks for
//!   `n < 4`, `n` for `n > 4`, and 4 the rest of the 64-block segment or of the RSI); 1 the second
//!   extension (pairs coded together as one fundamental sequence);
//! - the all-ones id: the block's samples stored in full;
//! - otherwise split samples with `k = id - 1`: every sample's high part `v >> k` as a fundamental sequence
//!   (that many 0 bits, then a 1), then every sample's `k` low bits.
//!
//! With the predictor, a block starting an RSI begins (after the id and, for id 0, its bit) with the
//! reference sample in full; every later sample is coded as its difference from the one before, mapped to
//! an unsigned number (small differences of either sign to small numbers).

use crate::bits::{MsbBits, MsbWriter};
use crate::error::{corrupt, unsupported, Result};

/// Option-mask bit: the nearest-neighbour predictor ran before coding.
const NN_OPTION: u32 = 32;
/// Option-mask bit: samples of 9–32 bits are big-endian.
const MSB_OPTION: u32 = 16;
/// A zero-block count meaning "the rest of the segment or RSI".
const ROS: u64 = 5;
/// Blocks in a segment, the unit a "rest of segment" zero run ends at.
const SEGMENT: usize = 64;
/// The largest second-extension code (a pair summing to at most 12).
const SE_MAX: u64 = 90;

/// Decodes one stored szip chunk `data` with client data `cd`; `max_out` bounds the decoded size (the
/// chunk's nominal size).
pub fn decode(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let params = Params::new(cd)?;
    let Some((head, stream)) = data.split_first_chunk::<4>() else {
        return corrupt("szip chunk shorter than its size header");
    };
    let size = u32::from_le_bytes(*head) as usize;
    if size > max_out {
        return corrupt(format!(
            "szip chunk decodes to {size} bytes, more than the chunk's {max_out}"
        ));
    }
    match params.shuffled {
        Some(word) => {
            if !size.is_multiple_of(word) {
                return corrupt(format!(
                    "szip chunk of {size} bytes is not a whole number of {word}-byte elements"
                ));
            }
            let bytes = Decoder::new(&params, stream, size).run()?;
            Ok(unshuffle(&bytes, word))
        }
        None => {
            if !size.is_multiple_of(params.bytes) {
                return corrupt(format!(
                    "szip chunk of {size} bytes is not a whole number of {}-byte samples",
                    params.bytes
                ));
            }
            Decoder::new(&params, stream, size / params.bytes).run()
        }
    }
}

/// Encodes one chunk `data` (whole elements) with client data `cd`, as the decoder above reads it: samples
/// above the bits per pixel are dropped (libhdf5's conversion ignores those bits of a reduced-precision type).
pub fn encode(cd: &[u32], data: &[u8]) -> Result<Vec<u8>> {
    let p = Params::new(cd)?;
    let xmax = u32::MAX >> (32 - p.bits);
    let samples: Vec<u32> = match p.shuffled {
        Some(word) => {
            if !data.len().is_multiple_of(word) {
                return corrupt(format!(
                    "szip chunk of {} bytes is not a whole number of {word}-byte elements",
                    data.len()
                ));
            }
            let mut shuffled = vec![0u8; data.len()];
            crate::transpose::shuffle_bytes(data, word, &mut shuffled);
            shuffled.into_iter().map(u32::from).collect()
        }
        None => {
            if !data.len().is_multiple_of(p.bytes) {
                return corrupt(format!(
                    "szip chunk of {} bytes is not a whole number of {}-byte samples",
                    data.len(),
                    p.bytes
                ));
            }
            data.chunks_exact(p.bytes)
                .map(|c| {
                    let mut b = [0u8; 4];
                    if p.msb {
                        b[4 - p.bytes..].copy_from_slice(c);
                        u32::from_be_bytes(b) & xmax
                    } else {
                        b[..p.bytes].copy_from_slice(c);
                        u32::from_le_bytes(b) & xmax
                    }
                })
                .collect()
        }
    };
    let size = u32::try_from(data.len())
        .map_err(|_| crate::FormatError::Invalid("szip chunk of 4 GiB or more".into()))?;
    let mut out = MsbWriter::with_capacity(data.len() / 2 + 8);
    let mut coded = Vec::new();
    for line in samples.chunks(p.scanline) {
        // The scanline padded to whole blocks with its last sample (nothing to code after the predictor). A
        // short last scanline is padded only to its own blocks: the decoder stops at the chunk's size.
        let last = line.last().copied().unwrap_or(0);
        coded.resize(line.len().div_ceil(p.block) * p.block, 0);
        let mut prev = 0;
        for (i, c) in coded.iter_mut().enumerate() {
            let x = line.get(i).copied().unwrap_or(last);
            *c = if p.predict && i > 0 {
                map(prev, x, xmax)
            } else {
                x
            };
            prev = x;
        }
        encode_line(&p, &coded, &mut out);
    }
    let mut chunk = size.to_le_bytes().to_vec();
    chunk.extend(out.finish());
    Ok(chunk)
}

/// Codes one RSI's values (the predictor's output; with it, the first is the reference sample).
fn encode_line(p: &Params, values: &[u32], out: &mut MsbWriter) {
    let blocks: Vec<&[u32]> = values.chunks(p.block).collect();
    let mut b = 0;
    while b < blocks.len() {
        let reference = p.predict && b == 0;
        let skip = usize::from(reference);
        let zero = |blk: &[u32], from: usize| blk[from..].iter().all(|&v| v == 0);
        if zero(blocks[b], skip) {
            // A run of zero blocks, never past the end of its 64-block segment.
            let segment_end = ((b / SEGMENT) + 1) * SEGMENT;
            let end = segment_end.min(blocks.len());
            let mut run = 1;
            while b + run < end && zero(blocks[b + run], 0) {
                run += 1;
            }
            out.put(0, p.id_len);
            out.put(0, 1);
            if reference {
                out.put(u128::from(blocks[b][0]), p.bits);
            }
            let fs = match run {
                1..=4 => run as u64 - 1,
                // "The rest of the segment or RSI".
                _ if b + run == end => ROS - 1,
                _ => run as u64,
            };
            put_fs(out, fs);
            b += run;
            continue;
        }
        let blk = blocks[b];
        let coded = &blk[skip..];
        // The cheapest split, or the block stored whole.
        let kmax = (1u32 << p.id_len) - 3;
        let cost = |k: u32| -> u64 {
            coded
                .iter()
                .map(|&v| u64::from(v >> k) + 1 + u64::from(k))
                .sum()
        };
        let (k, bits) = (0..=kmax.min(p.bits - 1))
            .map(|k| (k, cost(k)))
            .min_by_key(|&(_, c)| c)
            .unwrap_or((0, u64::MAX));
        let whole = (p.block as u64) * u64::from(p.bits);
        if bits + u64::from(p.bits) * skip as u64 >= whole {
            out.put((1 << p.id_len) - 1, p.id_len);
            for &v in blk {
                out.put(u128::from(v), p.bits);
            }
        } else {
            out.put(u128::from(k + 1), p.id_len);
            if reference {
                out.put(u128::from(blk[0]), p.bits);
            }
            for &v in coded {
                put_fs(out, u64::from(v >> k));
            }
            if k > 0 {
                for &v in coded {
                    out.put(u128::from(v & ((1 << k) - 1)), k);
                }
            }
        }
        b += 1;
    }
}

/// A fundamental sequence: `n` zero bits, then a one.
fn put_fs(out: &mut MsbWriter, mut n: u64) {
    while n >= 32 {
        out.put(0, 32);
        n -= 32;
    }
    out.put(1, n as u32 + 1);
}

/// The predictor's mapping of sample `x` after `last` (both in `0..=xmax`): the inverse of [`unmap`].
fn map(last: u32, x: u32, xmax: u32) -> u32 {
    let theta = last.min(xmax - last);
    if x >= last {
        let d = x - last;
        if d <= theta {
            2 * d
        } else {
            theta + d
        }
    } else {
        let d = last - x;
        if d <= theta {
            2 * d - 1
        } else {
            theta + d
        }
    }
}

/// The coding parameters a chunk's client data give.
struct Params {
    /// Samples per block.
    block: usize,
    /// Bits per coded sample (8 for shuffled 32- and 64-bit elements).
    bits: u32,
    /// Bytes each coded sample takes in the output: 1, 2 or 4.
    bytes: usize,
    /// Real samples per scanline (RSI); the rest of the RSI's blocks is padding.
    scanline: usize,
    /// Blocks per RSI.
    rsi: usize,
    /// Samples per RSI, padding included.
    line: usize,
    /// Whether the predictor ran (a reference sample starts each RSI).
    predict: bool,
    /// Whether multi-byte samples are big-endian.
    msb: bool,
    /// Bits of a block's option id.
    id_len: u32,
    /// For 32- and 64-bit elements, their byte width (the samples are their shuffled bytes).
    shuffled: Option<usize>,
}

impl Params {
    /// Reads and checks the filter's four client-data values.
    fn new(cd: &[u32]) -> Result<Params> {
        let &[mask, block, bpp, scanline, ..] = cd else {
            return corrupt(format!(
                "szip filter with {} parameters (needs 4)",
                cd.len()
            ));
        };
        if block == 0 || block % 2 != 0 || block > 64 {
            return unsupported(format!("szip with {block} pixels per block"));
        }
        if scanline == 0 {
            return corrupt("szip filter with 0 pixels per scanline");
        }
        let shuffled = match bpp {
            32 | 64 => Some(bpp as usize / 8),
            1..=31 => None,
            _ => return unsupported(format!("szip with {bpp} bits per pixel")),
        };
        let bits = if shuffled.is_some() { 8 } else { bpp };
        let (bytes, id_len) = match bits {
            1..=8 => (1, 3),
            9..=16 => (2, 4),
            _ => (4, 5),
        };
        let (block, scanline) = (block as usize, scanline as usize);
        let rsi = scanline.div_ceil(block);
        let Some(line) = rsi.checked_mul(block) else {
            return corrupt(format!("szip scanline of {scanline} pixels"));
        };
        Ok(Params {
            block,
            bits,
            bytes,
            scanline,
            rsi,
            line,
            predict: mask & NN_OPTION != 0,
            msb: mask & MSB_OPTION != 0,
            id_len,
            shuffled,
        })
    }
}

/// Undoes libaec's byte interleaving of `word`-byte elements: byte `j` of element `i` was stored at
/// `j * count + i`.
fn unshuffle(bytes: &[u8], word: usize) -> Vec<u8> {
    let mut out = vec![0; bytes.len()];
    crate::transpose::unshuffle_bytes(bytes, word, &mut out);
    out
}

/// Turns the stream's coded values into output bytes: undoes the predictor, drops each RSI's padding and
/// stops at the decoded size.
struct Decoder<'a, 'p> {
    p: &'p Params,
    bits: MsbBits<'a>,
    out: Vec<u8>,
    /// Samples still to write.
    left: usize,
    /// Position in the current RSI, in samples (padding included).
    pos: usize,
    /// The last sample decoded (the predictor's prediction).
    last: u32,
    /// The largest sample value.
    xmax: u32,
}

impl<'a, 'p> Decoder<'a, 'p> {
    fn new(p: &'p Params, stream: &'a [u8], samples: usize) -> Self {
        Decoder {
            p,
            bits: MsbBits::new(stream, "szip stream truncated"),
            out: Vec::with_capacity(samples * p.bytes),
            left: samples,
            pos: 0,
            last: 0,
            xmax: u32::MAX >> (32 - p.bits),
        }
    }

    /// Decodes blocks until every sample is out.
    fn run(mut self) -> Result<Vec<u8>> {
        let mut values = [0u32; 64];
        while self.left > 0 {
            let block = self.pos / self.p.block;
            let reference = self.p.predict && self.pos == 0;
            let id = self.bits.take(self.p.id_len)?;
            if id == 0 {
                self.low_entropy(reference, block, &mut values)?;
            } else if id == (1 << self.p.id_len) - 1 {
                for v in values.iter_mut().take(self.p.block) {
                    *v = self.bits.take(self.p.bits)?;
                }
                self.emit_block(&mut values[..self.p.block]);
            } else {
                self.split(id - 1, reference, &mut values)?;
            }
        }
        Ok(self.out)
    }

    /// Option id 0: a run of zero blocks or a second-extension block.
    fn low_entropy(&mut self, reference: bool, block: usize, values: &mut [u32; 64]) -> Result<()> {
        let second_extension = self.bits.take(1)? == 1;
        let mut start = 0;
        if reference {
            values[0] = self.bits.take(self.p.bits)?;
            start = 1;
        }
        if second_extension {
            self.second_extension(start, values)?;
            self.emit_block(&mut values[..self.p.block]);
            return Ok(());
        }
        let run = match self.bits.fs()? + 1 {
            ROS => (self.p.rsi - block).min(SEGMENT - block % SEGMENT),
            n if n > ROS => (n - 1).try_into().unwrap_or(usize::MAX),
            n => n as usize,
        };
        if run > self.p.rsi - block {
            return corrupt("szip zero-block run past the end of its scanline");
        }
        // values[0] holds the reference sample, if any; the rest of the run is zeros.
        values[start..].fill(0);
        for _ in 0..run {
            if self.left == 0 {
                break;
            }
            self.emit_block(&mut values[..self.p.block]);
            // The predictor turned the block into samples in place.
            values.fill(0);
        }
        Ok(())
    }

    /// A second-extension block: each pair `(a, b)` coded as one fundamental sequence of
    /// `(a + b)(a + b + 1) / 2 + b`; after a reference sample, the first pair is only its `b`.
    fn second_extension(&mut self, start: usize, values: &mut [u32; 64]) -> Result<()> {
        let mut i = start;
        while i < self.p.block {
            let m = self.bits.fs()?;
            if m > SE_MAX {
                return corrupt("szip second-extension code out of range");
            }
            let mut sum = 0;
            while (sum + 1) * (sum + 2) / 2 <= m {
                sum += 1;
            }
            let b = (m - sum * (sum + 1) / 2) as u32;
            if i.is_multiple_of(2) {
                values[i] = sum as u32 - b;
                i += 1;
            }
            values[i] = b;
            i += 1;
        }
        Ok(())
    }

    /// Split samples: fundamental sequences for every sample's high part, then `k` low bits each.
    fn split(&mut self, k: u32, reference: bool, values: &mut [u32; 64]) -> Result<()> {
        let mut start = 0;
        if reference {
            values[0] = self.bits.take(self.p.bits)?;
            start = 1;
        }
        for v in &mut values[start..self.p.block] {
            // Truncated to 32 bits, as libaec does: see `unmap` on values wider than the sample.
            *v = (self.bits.fs()? as u32) << k;
        }
        for v in &mut values[start..self.p.block] {
            *v |= self.bits.take(k)?;
        }
        self.emit_block(&mut values[..self.p.block]);
        Ok(())
    }

    /// Takes one block's coded values (`values.len()` is the block size): undoes the predictor, writes the
    /// samples that are not padding, moves on.
    fn emit_block(&mut self, values: &mut [u32]) {
        if self.p.predict {
            // A block starting the RSI starts with its reference sample, stored as it is.
            let (mut last, rest) = match values.split_first_mut() {
                Some((first, rest)) if self.pos == 0 => (*first, rest),
                _ => (self.last, &mut values[..]),
            };
            for v in rest {
                last = unmap(last, *v, self.xmax);
                *v = last;
            }
            self.last = last;
        }
        let real = self.p.scanline.saturating_sub(self.pos);
        let n = real.min(values.len()).min(self.left);
        self.write(&values[..n]);
        self.left -= n;
        self.pos += values.len();
        if self.pos == self.p.line {
            self.pos = 0;
        }
    }

    /// Appends samples in their byte width and order.
    fn write(&mut self, samples: &[u32]) {
        let out = &mut self.out;
        match (self.p.bytes, self.p.msb) {
            (1, _) => out.extend(samples.iter().map(|&v| v as u8)),
            (2, true) => samples
                .iter()
                .for_each(|&v| out.extend_from_slice(&(v as u16).to_be_bytes())),
            (2, false) => samples
                .iter()
                .for_each(|&v| out.extend_from_slice(&(v as u16).to_le_bytes())),
            (_, true) => samples
                .iter()
                .for_each(|&v| out.extend_from_slice(&v.to_be_bytes())),
            (_, false) => samples
                .iter()
                .for_each(|&v| out.extend_from_slice(&v.to_le_bytes())),
        }
    }
}

/// Inverts the predictor's mapping of the difference from `last` (samples in `0..=xmax`): differences
/// within `theta`, the distance to the nearer end of the range, alternate `0, -1, +1, -2, ...`; larger ones
/// can only go one way and follow on.
///
/// libaec's encoder does not clip its input to the bits per pixel, and libhdf5 hands it the bits above a
/// reduced precision (a negative 20-bit integer's sign extension, say), so coded values and samples can be
/// wider than `xmax`. This follows libaec's 32-bit arithmetic exactly on those too (wrapping, the upper half
/// told by the sample's top bit), giving the bytes libhdf5 would.
#[inline]
fn unmap(last: u32, coded: u32, xmax: u32) -> u32 {
    // `top` is xmax when `last` is in the upper half of the range: theta is then `xmax - last`.
    let top = if last & (xmax / 2 + 1) != 0 { xmax } else { 0 };
    let theta = top ^ last;
    // Even codes step up by half, odd ones down by half rounded up (`!(c / 2)` is `-(c / 2) - 1`);
    // written without branches, as noisy data would mispredict them.
    let near = last.wrapping_add((coded / 2) ^ 0u32.wrapping_sub(coded % 2));
    // Beyond theta a difference can only point away from the nearer end: `coded` itself near the bottom,
    // `xmax - coded` near the top.
    let far = top ^ coded;
    if coded / 2 + coded % 2 <= theta {
        near
    } else {
        far
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::hex;

    /// Writes bits most significant first, for hand-made streams.
    #[derive(Default)]
    struct Writer {
        bytes: Vec<u8>,
        n: usize,
    }

    impl Writer {
        fn put(&mut self, value: u64, k: u32) -> &mut Self {
            for i in (0..k).rev() {
                if self.n.is_multiple_of(8) {
                    self.bytes.push(0);
                }
                let bit = ((value >> i) & 1) as u8;
                *self.bytes.last_mut().unwrap() |= bit << (7 - self.n % 8);
                self.n += 1;
            }
            self
        }

        fn fs(&mut self, count: u64) -> &mut Self {
            for _ in 0..count {
                self.put(0, 1);
            }
            self.put(1, 1)
        }

        fn chunk(&self, size: u32) -> Vec<u8> {
            let mut out = size.to_le_bytes().to_vec();
            out.extend_from_slice(&self.bytes);
            out
        }
    }

    // Chunks libhdf5 2.0 with libaec wrote (h5py `compression="szip"`), with their client data and values.

    #[test]
    fn predicted_bytes_with_a_padded_scanline() {
        // 20 u1 values, 8 pixels per block: one 20-pixel scanline padded to 24; split blocks with k = 3.
        let data = hex("14000000801f1bdb67278fdb6776681bf7c000");
        let want = hex("000306090c0f0104070a0d100205080b0e000306");
        assert_eq!(decode(&[169, 8, 8, 20], &data, 20).unwrap(), want);
    }

    #[test]
    fn constant_samples_are_a_reference_and_a_zero_run() {
        // 300 little-endian u2 sevens: reference 7, then "rest of segment" zero blocks.
        let data = hex("5802000000003840");
        let want: Vec<u8> = [7u8, 0].repeat(300);
        assert_eq!(decode(&[169, 8, 16, 300], &data, 600).unwrap(), want);
        // The same with the entropy coder only: split blocks with k = 2.
        let mut w = Writer::default();
        for _ in 0..38 {
            w.put(3, 4);
            for _ in 0..8 {
                w.fs(1);
            }
            w.put(0xffff, 16);
        }
        assert_eq!(
            decode(&[141, 8, 16, 300], &w.chunk(600), 600).unwrap(),
            want
        );
    }

    #[test]
    fn a_zero_run_covers_the_rest_of_the_scanline() {
        let data = hex("640000000080");
        assert_eq!(decode(&[141, 8, 8, 100], &data, 100).unwrap(), vec![0; 100]);
        // Counted runs: 3 blocks, then 5 (coded as 5), in one 64-pixel scanline.
        let mut w = Writer::default();
        w.put(0, 3).put(0, 1).fs(2).put(0, 3).put(0, 1).fs(5);
        assert_eq!(
            decode(&[141, 8, 8, 64], &w.chunk(64), 64).unwrap(),
            vec![0; 64]
        );
        // A run longer than what is left of the scanline is an error.
        let mut w = Writer::default();
        w.put(0, 3).put(0, 1).fs(9);
        assert!(decode(&[141, 8, 8, 64], &w.chunk(64), 64).is_err());
    }

    #[test]
    fn second_extension_pairs_and_uncompressed_blocks() {
        // 12-bit samples, 4 pixels per block, no predictor: a second-extension block (1, 2), (0, 0), then
        // an uncompressed block, big-endian.
        let mut w = Writer::default();
        w.put(0, 4).put(1, 1).fs(3 * 4 / 2 + 2).fs(0);
        w.put(15, 4)
            .put(0xabc, 12)
            .put(1, 12)
            .put(0, 12)
            .put(0xfff, 12);
        let got = decode(&[144, 4, 12, 8], &w.chunk(16), 16).unwrap();
        assert_eq!(
            got,
            hex("00010002000000000abc000100000fff"),
            "big-endian 12-bit samples"
        );
    }

    #[test]
    fn shuffled_doubles_and_32_bit_samples() {
        // Ten f8 values: 64 bits per pixel, coded as shuffled bytes. Written by hand as uncompressed
        // 8-bit blocks of the shuffled bytes, with the predictor off.
        let values: Vec<f64> = (0..10).map(|i| i as f64 / 9.0).collect();
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut shuffled = vec![0; raw.len()];
        for (i, b) in raw.iter().enumerate() {
            shuffled[(i % 8) * 10 + i / 8] = *b;
        }
        let mut w = Writer::default();
        for block in shuffled.chunks(8) {
            w.put(7, 3);
            for &b in block {
                w.put(b as u64, 8);
            }
        }
        assert_eq!(decode(&[136, 8, 64, 80], &w.chunk(80), 80).unwrap(), raw);
        // Four u4: 32 bits per pixel.
        let raw = hex("0100000002000000ffffff7f00000080");
        let mut shuffled = [0; 16];
        for (i, b) in raw.iter().enumerate() {
            shuffled[(i % 4) * 4 + i / 4] = *b;
        }
        let mut w = Writer::default();
        for block in shuffled.chunks(4) {
            w.put(7, 3);
            for &b in block {
                w.put(b as u64, 8);
            }
        }
        assert_eq!(decode(&[136, 4, 32, 16], &w.chunk(16), 16).unwrap(), raw);
    }

    #[test]
    fn the_predictor_mapping_round_trips() {
        for xmax in [7u32, 255, 65535] {
            for last in 0..=xmax.min(300) {
                let mut seen = vec![false; xmax as usize + 1];
                for coded in 0..=xmax {
                    let x = unmap(last, coded, xmax);
                    assert!(x <= xmax && !seen[x as usize], "{last} {coded}");
                    seen[x as usize] = true;
                }
            }
        }
    }

    #[test]
    fn values_wider_than_the_sample_follow_libaec() {
        // 4-bit samples, predictor on, 2-pixel blocks: reference 15, then a code of 20 (beyond xmax, as
        // libaec writes for input wider than its bits per pixel) gives 15 ^ 20 = 27, as libaec computes.
        let mut w = Writer::default();
        w.put(1, 3).put(15, 4).fs(20);
        assert_eq!(decode(&[160, 2, 4, 2], &w.chunk(2), 2).unwrap(), [15, 27]);
    }

    #[test]
    fn encoded_chunks_decode_to_their_samples() {
        let mut x = 0x2545_f491u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // (mask, pixels per block, bits per pixel, pixels per scanline), bytes per element.
        let cases = [
            ([NN_OPTION, 8, 8, 16], 1),
            ([0, 16, 8, 40], 1),
            ([NN_OPTION, 32, 16, 100], 2),
            ([NN_OPTION | MSB_OPTION, 8, 16, 24], 2),
            ([NN_OPTION, 32, 32, 64], 4),
            ([NN_OPTION | MSB_OPTION, 16, 20, 30], 4),
            ([0, 32, 64, 128], 8),
            ([NN_OPTION, 2, 12, 7], 2),
        ];
        for (cd, width) in cases {
            let xmax = if cd[2] >= 32 {
                u64::MAX
            } else {
                (1u64 << cd[2]) - 1
            };
            for kind in 0..5 {
                let n = 1 + (rnd() % 700) as usize;
                let mut data = Vec::with_capacity(n * width);
                let mut level = rnd() & xmax;
                for i in 0..n {
                    let v = match kind {
                        0 => 7 & xmax,     // constant: zero runs
                        1 => rnd() & xmax, // noise: blocks stored whole
                        2 => {
                            level = level.wrapping_add(rnd() % 5).wrapping_sub(2) & xmax;
                            level // a random walk: small differences
                        }
                        3 => (i as u64 / 50) & xmax, // steps
                        _ => {
                            if i % 97 == 0 {
                                xmax
                            } else {
                                0
                            }
                        } // spikes at the range's ends
                    };
                    let le = v.to_le_bytes();
                    if cd[0] & MSB_OPTION != 0 && width <= 4 {
                        data.extend(le[..width].iter().rev());
                    } else {
                        data.extend_from_slice(&le[..width]);
                    }
                }
                let chunk = encode(&cd, &data).unwrap();
                assert_eq!(
                    decode(&cd, &chunk, data.len()).unwrap(),
                    data,
                    "{cd:?} kind {kind}"
                );
                if kind == 0 && cd[0] & NN_OPTION != 0 {
                    // Constant samples after the predictor: a reference and zero runs.
                    assert!(
                        chunk.len() < 4 + data.len() / 4 + 8,
                        "{cd:?}: {} bytes",
                        chunk.len()
                    );
                }
            }
        }
        assert!(encode(&[NN_OPTION, 8, 16, 16], &[1, 2, 3]).is_err());
        // A scanline far longer than the chunk (a damaged file's, say) pads only the chunk's own blocks.
        let cd = [NN_OPTION, 8, 8, 1 << 30];
        let data: Vec<u8> = (0..100u8).collect();
        let chunk = encode(&cd, &data).unwrap();
        assert!(chunk.len() < 200, "{} bytes", chunk.len());
        assert_eq!(decode(&cd, &chunk, data.len()).unwrap(), data);
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let good = hex("14000000801f1bdb67278fdb6776681bf7c000");
        let cd = [169, 8, 8, 20];
        assert!(decode(&cd, &good[..3], 20).is_err(), "no size header");
        for cut in 4..good.len() - 1 {
            assert!(decode(&cd, &good[..cut], 20).is_err(), "cut at {cut}");
        }
        assert!(decode(&cd, &good, 19).is_err(), "size past max_out");
        assert!(decode(&[169, 8, 8], &good, 20).is_err(), "three parameters");
        assert!(decode(&[169, 7, 8, 20], &good, 20).is_err(), "odd block");
        assert!(decode(&[169, 0, 8, 20], &good, 20).is_err(), "no block");
        assert!(decode(&[169, 8, 40, 20], &good, 20).is_err(), "40 bits");
        assert!(decode(&[169, 8, 8, 0], &good, 20).is_err(), "no scanline");
        assert!(
            decode(&[169, 8, 16, 20], &hex("0300000000"), 20).is_err(),
            "odd size"
        );
        assert!(
            decode(&[169, 8, 64, 20], &hex("0c000000"), 20).is_err(),
            "partial f8"
        );
        // A fundamental sequence of nothing but zeros runs out of input.
        let zeros = [&[20u8, 0, 0, 0][..], &[0; 64][..]].concat();
        assert!(decode(&cd, &zeros, 20).is_err());
    }

    #[test]
    fn random_chunks_never_panic() {
        let mut rng = crate::test_rng::TestRng::new(11);
        let good = hex("14000000801f1bdb67278fdb6776681bf7c000");
        for round in 0..3000 {
            let mut data = good.clone();
            if round % 2 == 0 {
                let len = 4 + (rng.next() % 40) as usize;
                data = (0..len).map(|_| rng.next() as u8).collect();
                data[..4].copy_from_slice(&((rng.next() % 200) as u32).to_le_bytes());
            } else {
                for _ in 0..1 + rng.next() % 4 {
                    let i = 4 + (rng.next() as usize) % (data.len() - 4);
                    data[i] ^= 1 << (rng.next() % 8);
                }
            }
            let bpp = [1, 3, 8, 12, 16, 24, 31, 32, 64][(rng.next() % 9) as usize];
            let block = 2 * (1 + rng.next() % 16) as u32;
            let scanline = 1 + (rng.next() % 100) as u32;
            let mask = [141, 169, 149, 177][(rng.next() % 4) as usize];
            if let Ok(out) = decode(&[mask, block, bpp, scanline], &data, 160) {
                assert!(out.len() <= 160);
            }
        }
    }
}
