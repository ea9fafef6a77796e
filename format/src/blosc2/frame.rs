//! A Blosc2 contiguous frame: its header, its metalayers and its chunk offsets index.
//!
//! A msgpack header at fixed places: the magic `b2frame\0` at 2, the header's size (i32, big-endian)
//! at 11, the frame's size (u64) at 16, flags at 25–28 (bits 4–5 of the first: the size of the chunk offsets,
//! 1 = 64-bit; the low four bits of the second: the frame type, 0 = contiguous), the decoded and the
//! compressed sizes of the data (i64) at 30 and 39, the element size at 48, the chunk size at 58, and from 87
//! the metalayers: a map of names to offsets of `bin32` values. The chunks follow the header; after them (at
//! header size + compressed size) an index chunk holds each chunk's offset (i64, from the end of the header),
//! or, when the offset's top bit is set, a chunk of one special value (low three bits: 1 zeros, 2 NaNs,
//! 4 uninitialised) that is not stored. Without a `b2nd` (or older `caterva`) metalayer the chunks' bytes are
//! the data, one after another.

use super::b2nd::{b2nd, check_shape, prefix_cut, Nd};
use super::chunk::{chunk_prefix, special, MAX_PAST_WANT};
use crate::error::{corrupt, unsupported, Result};

/// Where a frame's metalayers start (the fixed part of its header ends there).
pub(super) const FRAME_METALAYERS: usize = 87;
/// A b2nd array's most dimensions (c-blosc2's limit).
const MAX_DIMS: usize = 8;

/// A msgpack reader over a frame's header, every read bounds-checked.
struct Cursor<'a> {
    /// The bytes read.
    data: &'a [u8],
    /// Where the next read starts.
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at `at` in `data`.
    fn new(data: &'a [u8], at: usize) -> Self {
        Cursor { data, at }
    }

    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let Some(b) = self
            .at
            .checked_add(n)
            .and_then(|end| self.data.get(self.at..end))
        else {
            return corrupt("blosc2 frame header cut short");
        };
        self.at += n;
        Ok(b)
    }

    /// The next byte.
    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// A big-endian unsigned integer of `n` bytes (at most 8).
    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b)))
    }

    /// A msgpack integer of any width.
    fn int(&mut self) -> Result<i64> {
        let m = self.byte()?;
        let v = match m {
            0x00..=0x7f => i64::from(m),
            0xe0..=0xff => i64::from(m as i8),
            0xcc => self.be(1)? as i64,
            0xcd => self.be(2)? as i64,
            0xce => self.be(4)? as i64,
            0xcf => i64::try_from(self.be(8)?).unwrap_or(-1),
            0xd0 => i64::from(self.be(1)? as u8 as i8),
            0xd1 => i64::from(self.be(2)? as u16 as i16),
            0xd2 => i64::from(self.be(4)? as u32 as i32),
            0xd3 => self.be(8)? as i64,
            _ => return corrupt(format!("blosc2 frame header: 0x{m:02x} is not an integer")),
        };
        Ok(v)
    }

    /// A msgpack integer that must be at least `min`.
    fn count(&mut self, min: i64) -> Result<u64> {
        let v = self.int()?;
        if v < min {
            return corrupt(format!(
                "blosc2 frame header: {v} where at least {min} belongs"
            ));
        }
        Ok(v as u64)
    }

    /// The length of a msgpack array.
    fn array(&mut self) -> Result<usize> {
        self.container(0x90, 0xdc, "an array")
    }

    /// The number of entries of a msgpack map.
    fn map(&mut self) -> Result<usize> {
        self.container(0x80, 0xde, "a map")
    }

    /// The size of a msgpack container whose fix form starts at marker `fix` (16 of them) and whose 16- and
    /// 32-bit forms are markers `wide` and `wide + 1`.
    fn container(&mut self, fix: u8, wide: u8, what: &str) -> Result<usize> {
        let m = self.byte()?;
        if (fix..=fix + 0x0f).contains(&m) {
            Ok(usize::from(m & 0x0f))
        } else if m == wide {
            Ok(self.be(2)? as usize)
        } else if m == wide + 1 {
            Ok(self.be(4)? as usize)
        } else {
            corrupt(format!("blosc2 frame header: 0x{m:02x} is not {what}"))
        }
    }

    /// A msgpack string's bytes.
    fn str(&mut self) -> Result<&'a [u8]> {
        let m = self.byte()?;
        let n = match m {
            0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            _ => return corrupt(format!("blosc2 frame header: 0x{m:02x} is not a string")),
        };
        self.take(n)
    }

    /// The value of the fixed-width field whose msgpack marker is at `at`.
    fn field(data: &'a [u8], at: usize, marker: u8, n: usize) -> Result<u64> {
        let mut c = Cursor::new(data, at);
        if c.byte()? != marker {
            return corrupt(format!(
                "blosc2 frame header: no 0x{marker:02x} at byte {at}"
            ));
        }
        c.be(n)
    }
}

/// Reads the `b2nd` (or `caterva`) metalayer of a frame's header (`header`, the frame's first bytes), if any.
fn metalayer(header: &[u8]) -> Result<Option<Nd>> {
    if header.len() <= FRAME_METALAYERS {
        return Ok(None);
    }
    let mut c = Cursor::new(header, FRAME_METALAYERS);
    if c.array()? < 2 {
        return corrupt("blosc2 frame metalayers: too short a list");
    }
    c.int()?;
    let entries = c.map()?;
    let mut found = None;
    for _ in 0..entries {
        let name = c.str()?;
        let offset = c.int()?;
        if name == b"b2nd" || name == b"caterva" {
            found = Some(offset);
        }
    }
    let Some(offset) = found else {
        return Ok(None);
    };
    let Ok(offset) = usize::try_from(offset) else {
        return corrupt("blosc2 frame: negative metalayer offset");
    };
    let mut c = Cursor::new(header, offset);
    if c.byte()? != 0xc6 {
        return corrupt("blosc2 frame: b2nd metalayer is not binary");
    }
    let len = c.be(4)? as usize;
    let mut c = Cursor::new(c.take(len)?, 0);
    if c.array()? < 5 {
        return corrupt("blosc2 b2nd metalayer: too few entries");
    }
    c.int()?;
    let ndim = c.count(0)? as usize;
    if ndim > MAX_DIMS {
        return unsupported(format!("b2nd array of {ndim} dimensions"));
    }
    let mut dims = |min: i64| -> Result<Vec<u64>> {
        if c.array()? != ndim {
            return corrupt("blosc2 b2nd metalayer: a shape of the wrong rank");
        }
        (0..ndim).map(|_| c.count(min)).collect()
    };
    let shape = dims(0)?;
    let chunks = dims(1)?;
    let blocks = dims(1)?;
    Ok(Some(Nd {
        shape,
        chunks,
        blocks,
    }))
}

/// Decodes a contiguous frame: its chunks one after another, or its b2nd array in C order.
pub(super) fn frame(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    frame_prefix(cd, data, max_out, usize::MAX)
}

/// Like [`frame`], but only the first `want` bytes (in C order) are needed: the chunks, blocks and (in a b2nd
/// array) rows that hold them are decoded and no more, allocating at most 16 MiB past `want`.
pub(super) fn frame_prefix(
    cd: &[u32],
    data: &[u8],
    max_out: usize,
    want: usize,
) -> Result<Vec<u8>> {
    let header_size = Cursor::field(data, 10, 0xd2, 4)? as usize;
    let frame_size = Cursor::field(data, 15, 0xcf, 8)?;
    let Some(frame) = usize::try_from(frame_size).ok().and_then(|n| data.get(..n)) else {
        return corrupt("blosc2 frame shorter than its stated size");
    };
    let flags = Cursor::field(frame, 24, 0xa4, 4)?;
    let (general, frame_type) = ((flags >> 24) as u8, (flags >> 16) as u8);
    if (general >> 4) & 3 != 1 {
        let bits = 32 << ((general >> 4) & 3);
        return unsupported(format!("blosc2 frame with {bits}-bit chunk offsets"));
    }
    if frame_type & 0x0f != 0 {
        return unsupported("blosc2 sparse frame");
    }
    let size = |at: usize| -> Result<usize> {
        let v = Cursor::field(frame, at, 0xd3, 8)? as i64;
        usize::try_from(v).map_or_else(|_| corrupt("blosc2 frame: negative size"), Ok)
    };
    let (total, compressed) = (size(29)?, size(38)?);
    let typesize = Cursor::field(frame, 47, 0xd2, 4)? as u32 as usize;
    let chunk_size = Cursor::field(frame, 57, 0xd2, 4)? as u32 as usize;
    if header_size < FRAME_METALAYERS || header_size > frame.len() || chunk_size > i32::MAX as usize
    {
        return corrupt("blosc2 frame: bad header size");
    }
    let nd = metalayer(&frame[..header_size])?;
    if nd.is_none() && total > max_out {
        return corrupt("blosc2 frame decodes to more than the chunk size");
    }
    // The chunk offsets: a Blosc2 chunk of i64s after the data chunks.
    let nchunks = if total == 0 {
        0
    } else if chunk_size > 0 {
        total.div_ceil(chunk_size)
    } else {
        frame.len()
    };
    let Some(index) = header_size
        .checked_add(compressed)
        .and_then(|at| frame.get(at..))
    else {
        return corrupt("blosc2 frame: chunk index past its end");
    };
    // A b2nd array cut after the rows that hold the first `want` bytes, when a prefix is asked for.
    let cut = match &nd {
        Some(nd) if want < total => prefix_cut(nd, chunk_size, typesize, nchunks, want),
        _ => None,
    };
    // The chunks that hold the first `want` bytes: all of them unless a prefix is asked for.
    let needed = match (&nd, &cut) {
        _ if want >= total => nchunks,
        (None, _) if chunk_size > 0 => want.div_ceil(chunk_size).min(nchunks),
        (Some(_), Some((_, kept))) => *kept,
        _ => nchunks,
    };
    let offsets = if nchunks == 0 {
        Vec::new()
    } else {
        // Every chunk holds at least one of the output's bytes (a b2nd chunk at least one element).
        let index_bytes = nchunks.min(max_out.max(1)).saturating_mul(8);
        let index_want = if needed == nchunks {
            usize::MAX
        } else {
            needed.saturating_mul(8)
        };
        chunk_prefix(index, index_bytes, None, index_want)?
    };
    let full = needed == nchunks;
    if offsets.len() % 8 != 0
        || (chunk_size > 0 && full && offsets.len() / 8 != nchunks)
        || offsets.len() / 8 < needed
    {
        return corrupt("blosc2 frame: chunk index of the wrong size");
    }
    let chunks = &frame[header_size..];
    // Chunk `i`: its bytes, or the kind of its special value.
    let locate = |i: usize| -> Result<Piece<'_>> {
        let Some(o) = offsets.get(i * 8..i * 8 + 8) else {
            return corrupt("blosc2 frame: chunk past its index");
        };
        let off = i64::from_le_bytes([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]]);
        if off >= 0 {
            let Some(c) = usize::try_from(off).ok().and_then(|o| chunks.get(o..)) else {
                return corrupt("blosc2 frame: chunk past its end");
            };
            return Ok(Piece::Chunk(c));
        }
        Ok(Piece::Special(o[7] & 0x07))
    };
    // Chunk `i` decoded to `nbytes` bytes, of which the first `need` are needed.
    let get = |i: usize, nbytes: usize, need: usize| -> Result<Vec<u8>> {
        match locate(i)? {
            Piece::Chunk(c) => chunk_prefix(c, nbytes, None, need),
            Piece::Special(kind) => {
                let n = if need >= nbytes {
                    nbytes
                } else {
                    need.div_ceil(typesize.max(1))
                        .saturating_mul(typesize.max(1))
                        .min(nbytes)
                };
                special(kind, typesize, n, &[])
            }
        }
    };
    let Some(nd) = nd else {
        // Plain frame: the chunks' bytes in order, up to the chunk that completes the bytes wanted.
        let n = offsets.len() / 8;
        let goal = total.min(want);
        let mut out = Vec::new();
        for i in 0..n {
            if out.len() >= goal {
                break;
            }
            let left = total - out.len().min(total);
            let size = if chunk_size > 0 {
                chunk_size.min(left)
            } else {
                left
            };
            let c = get(i, size, goal - out.len())?;
            if c.len() > size || (c.len() < size && out.len() + c.len() < goal) {
                return corrupt("blosc2 frame: chunks do not add up to its size");
            }
            if out.is_empty() {
                out = c;
            } else {
                out.extend_from_slice(&c);
            }
        }
        if out.len() < goal || out.len() > total {
            return corrupt("blosc2 frame: chunks do not add up to its size");
        }
        return Ok(out);
    };
    if want >= total {
        return b2nd(
            cd,
            &nd,
            chunk_size,
            typesize,
            offsets.len() / 8,
            max_out,
            locate,
        );
    }
    // A prefix: only the cut array's chunks are asked of `locate`, and nothing is held past 16 MiB beyond it.
    let bound = max_out.min(want.saturating_add(MAX_PAST_WANT));
    match cut {
        Some((cut, kept)) => {
            check_shape(cd, &nd)?;
            b2nd(&[], &cut, chunk_size, typesize, kept, bound, locate)
        }
        None => b2nd(cd, &nd, chunk_size, typesize, nchunks, bound, locate),
    }
}

/// A frame's chunk: its bytes (from its start to the frame's end), or a special value not stored (its kind).
pub(super) enum Piece<'a> {
    /// A stored chunk's bytes.
    Chunk(&'a [u8]),
    /// A special value's kind (as [`special`] takes).
    Special(u8),
}

#[cfg(test)]
mod tests {
    use crate::blosc2::decode;
    use crate::blosc2::test_util::{frame, stored};

    #[test]
    fn plain_frames_join_their_chunks() {
        let f = frame(
            &[
                Some(stored(&[1, 2, 3, 4], 1)),
                None,
                Some(stored(&[5, 6], 1)),
            ],
            10,
            4,
            1,
            None,
        );
        assert_eq!(decode(&[], &f, 10).unwrap(), [1, 2, 3, 4, 0, 0, 0, 0, 5, 6]);
        assert!(decode(&[], &f, 9).is_err(), "bound");
        assert!(decode(&[], &f[..f.len() - 1], 10).is_err(), "cut short");
        let mut bad = f.clone();
        bad[25] = 0x22;
        let e = decode(&[], &bad, 10).unwrap_err().to_string();
        assert!(e.contains("128-bit chunk offsets"), "{e}");
    }
}
