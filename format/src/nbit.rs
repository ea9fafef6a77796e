//! Decoding and encoding HDF5's N-bit filter (id 5), which libhdf5 always carries: for a datatype whose integers (or
//! floats) use only `precision` bits starting at bit `offset`, it stores just those bits of each value.
//!
//! A stored chunk is one bit stream, most significant bit of each byte first, with no header: element after
//! element, and within an element its parts in the order the datatype lists them (compound members in member
//! order, array cells in order). An integer or float part contributes its `precision` significant bits, most
//! significant first; any other part (strings, opaque, enums, references, ...) contributes all its bytes, eight
//! bits each. Decoding puts each part's bits back at its place and leaves every other bit zero; the
//! datatype's conversion then sign-extends reduced-precision integers as usual.
//!
//! The filter's client data (`cd_values`) describe the datatype as libhdf5's `set_local` callback wrote them:
//! 0 the number of values, 1 "stored as is" (every part at full precision), 2 elements per chunk, then the
//! top-level type. A type is its class (1 integer or float, 2 array, 3 compound, 4 stored whole) followed by:
//! integer or float: byte size, byte order (0 little, 1 big), precision, bit offset; array: byte size, then
//! its base type; compound: byte size, member count, then per member its byte offset and its type; stored
//! whole: byte size.

use crate::bits::{MsbBits, MsbWriter};
use crate::error::{corrupt, unsupported, Result};

/// Deepest nesting of array and compound types accepted in the client data.
const MAX_DEPTH: usize = 32;

/// One part of the datatype, as the client data describe it.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// An integer or float: its significant bits are packed.
    Atomic {
        size: usize,
        big_endian: bool,
        precision: u32,
        offset: u32,
    },
    /// `size` bytes of cells of `base`, one after another.
    Array { size: usize, base: Box<Part> },
    /// Members at byte offsets within `size` bytes.
    Compound {
        size: usize,
        members: Vec<(usize, Part)>,
    },
    /// Bytes stored whole.
    Whole { size: usize },
}

impl Part {
    fn size(&self) -> usize {
        match self {
            Part::Atomic { size, .. }
            | Part::Array { size, .. }
            | Part::Compound { size, .. }
            | Part::Whole { size } => *size,
        }
    }
}

/// Decodes one stored chunk `data` of the N-bit filter with client data `cd`; `max_out` bounds the decoded
/// size (the chunk's nominal size).
pub fn decode(cd: &[u32], data: &[u8], max_out: usize) -> Result<Vec<u8>> {
    let Some(part) = described_part(cd)? else {
        // Every part at full precision: libhdf5 stored the chunk as it came.
        if data.len() > max_out {
            return corrupt("nbit chunk larger than the chunk size");
        }
        return Ok(data.to_vec());
    };
    let n = cd[2] as usize;
    let out_len = n
        .checked_mul(part.size())
        .filter(|&len| len <= max_out)
        .ok_or_else(|| {
            crate::FormatError::Corrupt(format!(
                "nbit chunk of {n} elements of {} bytes exceeds the chunk size {max_out}",
                part.size()
            ))
        })?;
    let mut out = vec![0u8; out_len];
    let mut bits = MsbBits::new(data, "nbit chunk ends before its last element");
    let size = part.size();
    for cell in out.chunks_exact_mut(size) {
        unpack(&part, cell, &mut bits)?;
    }
    Ok(out)
}

/// The client data's datatype description, checked: `None` when the chunk is stored as it is.
fn described_part(cd: &[u32]) -> Result<Option<Part>> {
    if cd.len() < 5 {
        return corrupt(format!(
            "nbit filter with {} parameters (needs at least 5)",
            cd.len()
        ));
    }
    if cd[0] as usize != cd.len() {
        return corrupt(format!(
            "nbit filter says it has {} parameters but has {}",
            cd[0],
            cd.len()
        ));
    }
    if cd[1] != 0 {
        return Ok(None);
    }
    let mut params = Params { cd, at: 3 };
    let part = params.part(0)?;
    if params.at != cd.len() {
        return corrupt(format!(
            "nbit filter has {} parameters after its datatype",
            cd.len() - params.at
        ));
    }
    if matches!(part, Part::Whole { .. }) {
        return corrupt("nbit filter's top-level type is stored whole but marked as packed");
    }
    Ok(Some(part))
}

/// Encodes one chunk `data` (whole elements of the filter's datatype) as libhdf5's N-bit filter stores it:
/// each element's significant bits packed, most significant first; bits outside a value's precision are
/// dropped (libhdf5 drops them too).
pub fn encode(cd: &[u32], data: &[u8]) -> Result<Vec<u8>> {
    let Some(part) = described_part(cd)? else {
        return Ok(data.to_vec());
    };
    let size = part.size();
    if !data.len().is_multiple_of(size) {
        return corrupt(format!(
            "nbit chunk of {} bytes holds no whole number of {size}-byte elements",
            data.len()
        ));
    }
    let mut bits = MsbWriter::with_capacity(data.len());
    for cell in data.chunks_exact(size) {
        pack(&part, cell, &mut bits);
    }
    // libhdf5's stored size counts the byte after the last bit even when that bit ends a byte: one zero
    // byte more then, so that our chunks are the same bytes as libhdf5's.
    let aligned = bits.byte_aligned();
    let mut out = bits.finish();
    if aligned {
        out.push(0);
    }
    Ok(out)
}

/// Writes the stored bits of one value of `part` (`cell`, exactly `part.size()` bytes).
fn pack(part: &Part, cell: &[u8], bits: &mut MsbWriter) {
    match part {
        Part::Atomic {
            size,
            big_endian,
            precision,
            offset,
        } => {
            let mut le = [0u8; 16];
            le[..*size].copy_from_slice(cell);
            if *big_endian {
                le[..*size].reverse();
            }
            bits.put(u128::from_le_bytes(le) >> offset, *precision);
        }
        Part::Array { base, .. } => {
            for c in cell.chunks_exact(base.size()) {
                pack(base, c, bits);
            }
        }
        Part::Compound { members, .. } => {
            for (offset, member) in members {
                pack(member, &cell[*offset..*offset + member.size()], bits);
            }
        }
        Part::Whole { .. } => {
            for &b in cell {
                bits.put(u128::from(b), 8);
            }
        }
    }
}

/// Reads the type description from the client data.
struct Params<'a> {
    cd: &'a [u32],
    at: usize,
}

impl Params<'_> {
    fn next(&mut self) -> Result<u32> {
        let v = self.cd.get(self.at).copied().ok_or_else(|| {
            crate::FormatError::Corrupt("nbit filter's parameters end inside its datatype".into())
        })?;
        self.at += 1;
        Ok(v)
    }

    fn size(&mut self) -> Result<usize> {
        match self.next()? as usize {
            0 => corrupt("nbit filter's datatype has a part of 0 bytes"),
            s => Ok(s),
        }
    }

    fn part(&mut self, depth: usize) -> Result<Part> {
        if depth > MAX_DEPTH {
            return corrupt("nbit filter's datatype nests too deeply");
        }
        let class = self.next()?;
        let size = self.size()?;
        Ok(match class {
            1 => {
                let big_endian = match self.next()? {
                    0 => false,
                    1 => true,
                    o => return corrupt(format!("nbit filter's byte order {o}")),
                };
                let (precision, offset) = (self.next()?, self.next()?);
                if precision == 0 || precision as u64 + offset as u64 > size as u64 * 8 {
                    return corrupt(format!(
                        "nbit filter's {precision} bits at offset {offset} do not fit {size} bytes"
                    ));
                }
                if size > 16 {
                    return unsupported(format!("nbit filter on {size}-byte numbers"));
                }
                Part::Atomic {
                    size,
                    big_endian,
                    precision,
                    offset,
                }
            }
            2 => {
                let base = self.part(depth + 1)?;
                if size % base.size() != 0 {
                    return corrupt(format!(
                        "nbit filter's array of {size} bytes holds no whole number of {}-byte cells",
                        base.size()
                    ));
                }
                Part::Array {
                    size,
                    base: Box::new(base),
                }
            }
            3 => {
                let count = self.next()? as usize;
                // Each member takes at least three parameters, which bounds the count by the data.
                if count > self.cd.len() {
                    return corrupt(format!("nbit filter's compound of {count} members"));
                }
                let mut members = Vec::with_capacity(count);
                for _ in 0..count {
                    let offset = self.next()? as usize;
                    let member = self.part(depth + 1)?;
                    if offset
                        .checked_add(member.size())
                        .is_none_or(|end| end > size)
                    {
                        return corrupt(format!(
                            "nbit filter's compound member at byte {offset} runs past its {size} bytes"
                        ));
                    }
                    members.push((offset, member));
                }
                Part::Compound { size, members }
            }
            4 => Part::Whole { size },
            c => return corrupt(format!("nbit filter's datatype class {c}")),
        })
    }
}

/// Puts one value of `part`, read from `bits`, into `out` (exactly `part.size()` bytes, zeroed).
fn unpack(part: &Part, out: &mut [u8], bits: &mut MsbBits) -> Result<()> {
    match part {
        Part::Atomic {
            size,
            big_endian,
            precision,
            offset,
        } => {
            let value = read_wide(bits, *precision)? << offset;
            let le = value.to_le_bytes();
            if *big_endian {
                for (o, &b) in out.iter_mut().zip(le[..*size].iter().rev()) {
                    *o = b;
                }
            } else {
                out.copy_from_slice(&le[..*size]);
            }
        }
        Part::Array { base, .. } => {
            for cell in out.chunks_exact_mut(base.size()) {
                unpack(base, cell, bits)?;
            }
        }
        Part::Compound { members, .. } => {
            for (offset, member) in members {
                unpack(member, &mut out[*offset..*offset + member.size()], bits)?;
            }
        }
        Part::Whole { .. } => {
            for o in out.iter_mut() {
                *o = bits.take(8)? as u8;
            }
        }
    }
    Ok(())
}

/// The next `n` bits (at most 128) of `bits` as an integer.
fn read_wide(bits: &mut MsbBits, mut n: u32) -> Result<u128> {
    let mut v = 0u128;
    while n > 0 {
        let take = n.min(32);
        v = (v << take) | u128::from(bits.take(take)?);
        n -= take;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs `values` (already shifted down to their significant bits) of `bits` bits each, MSB first.
    fn pack(values: &[u64], bits: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut acc, mut have) = (0u128, 0u32);
        for &v in values {
            acc = (acc << bits) | v as u128;
            have += bits;
            while have >= 8 {
                have -= 8;
                out.push((acc >> have) as u8);
            }
        }
        if have > 0 {
            out.push((acc << (8 - have)) as u8);
        }
        out
    }

    fn atomic_cd(n: u32, size: u32, order: u32, precision: u32, offset: u32) -> Vec<u32> {
        vec![8, 0, n, 1, size, order, precision, offset]
    }

    #[test]
    fn little_and_big_endian_integers_come_back_at_their_offset() {
        let values = [0u64, 1, 0x7ff, 0x123, 0x7fe];
        let packed = pack(&values, 11);
        let le = decode(&atomic_cd(5, 4, 0, 11, 3), &packed, 20).unwrap();
        let be = decode(&atomic_cd(5, 4, 1, 11, 3), &packed, 20).unwrap();
        for (i, &v) in values.iter().enumerate() {
            let want = (v as u32) << 3;
            assert_eq!(le[i * 4..i * 4 + 4], want.to_le_bytes());
            assert_eq!(be[i * 4..i * 4 + 4], want.to_be_bytes());
        }
    }

    #[test]
    fn compound_and_array_parts_are_read_in_order() {
        // Compound of 8 bytes: a u16 with 5 bits at offset 2 (byte 0), then an array of two 1-byte cells
        // with 3 bits each (bytes 2-3), then 2 bytes stored whole (bytes 6-7).
        let mut cd = vec![
            0, 0, 1, 3, 8, 3, // header, compound of 8 bytes, 3 members
            0, 1, 2, 0, 5, 2, // byte 0: u16, 5 bits at offset 2
            2, 2, 2, 1, 1, 0, 3, 0, // byte 2: array of 2 bytes of 1-byte cells, 3 bits
            6, 4, 2, // byte 6: 2 bytes whole
        ];
        cd[0] = cd.len() as u32;
        // Bits: 5 bits 10110, 3 bits 101, 3 bits 011, 8 bits 0xab, 8 bits 0xcd.
        let mut bits = String::from("10110101011");
        bits += "1010101111001101";
        while bits.len() % 8 != 0 {
            bits.push('0');
        }
        let packed: Vec<u8> = bits
            .as_bytes()
            .chunks(8)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 2).unwrap())
            .collect();
        let out = decode(&cd, &packed, 8).unwrap();
        assert_eq!(out, [0b10110 << 2, 0, 0b101, 0b011, 0, 0, 0xab, 0xcd]);
    }

    #[test]
    fn encoding_packs_what_decoding_unpacks() {
        // The compound above: the element's significant bits, then the padding byte libhdf5 counts.
        let mut cd = vec![
            0, 0, 2, 3, 8, 3, 0, 1, 2, 0, 5, 2, 2, 2, 2, 1, 1, 0, 3, 0, 6, 4, 2,
        ];
        cd[0] = cd.len() as u32;
        let elements = [
            [0b10110 << 2 | 0b11, 0xff, 0b101, 0b1011, 9, 9, 0xab, 0xcd],
            [0b00001 << 2, 0, 0, 0b111, 0, 0, 0, 1],
        ];
        let data: Vec<u8> = elements.concat();
        let packed = encode(&cd, &data).unwrap();
        // 5 + 3 + 3 + 16 bits an element: 54 bits, 7 bytes.
        assert_eq!(packed.len(), 7);
        let back = decode(&cd, &packed, 16).unwrap();
        assert_eq!(
            back,
            [
                [0b10110 << 2, 0, 0b101, 0b011, 0, 0, 0xab, 0xcd],
                [0b00001 << 2, 0, 0, 0b111, 0, 0, 0, 1],
            ]
            .concat()
        );
        // Either byte order, at an offset, up to 16 bytes; a whole number of bytes gains libhdf5's extra one.
        for (size, order, precision, offset) in
            [(4, 0, 11, 3), (4, 1, 11, 3), (16, 1, 120, 5), (2, 0, 16, 0)]
        {
            let cd = atomic_cd(3, size, order, precision, offset);
            let data: Vec<u8> = (0..3 * size).map(|i| (i * 37 + 11) as u8).collect();
            let packed = encode(&cd, &data).unwrap();
            let bits = 3 * precision as usize;
            assert_eq!(packed.len(), bits / 8 + 1, "{size} {order} {precision}");
            let back = decode(&cd, &packed, data.len()).unwrap();
            assert_eq!(encode(&cd, &back).unwrap(), packed);
            assert_eq!(
                decode(&cd, &encode(&cd, &back).unwrap(), data.len()).unwrap(),
                back
            );
        }
        assert!(encode(&atomic_cd(3, 4, 0, 11, 3), &[0; 5]).is_err());
    }

    #[test]
    fn stored_as_is_when_flagged() {
        assert_eq!(
            decode(&[8, 1, 2, 1, 2, 0, 16, 0], &[1, 2, 3, 4], 4).unwrap(),
            [1, 2, 3, 4]
        );
        assert!(decode(&[8, 1, 2, 1, 2, 0, 16, 0], &[1, 2, 3, 4, 5], 4).is_err());
    }

    #[test]
    fn wide_values_round_trip() {
        let v = 0x0123_4567_89ab_cdefu64;
        let packed = pack(&[v >> 4], 60);
        let out = decode(&atomic_cd(1, 8, 0, 60, 4), &packed, 8).unwrap();
        assert_eq!(u64::from_le_bytes(out.try_into().unwrap()), v & !0xf);
    }

    #[test]
    fn bad_parameters_and_short_streams_are_errors() {
        let packed = pack(&[1, 2, 3], 7);
        for cd in [
            vec![],
            vec![8, 0, 3, 1, 4, 0, 7],            // count disagrees
            vec![8, 0, 3, 1, 4, 2, 7, 0],         // byte order 2
            vec![8, 0, 3, 1, 4, 0, 30, 3],        // bits past the element
            vec![8, 0, 3, 1, 4, 0, 0, 0],         // no bits
            vec![8, 0, 3, 1, 0, 0, 7, 0],         // zero-size element
            vec![8, 0, 3, 9, 4, 0, 7, 0],         // unknown class
            vec![8, 0, 4_000_000, 1, 4, 0, 7, 0], // more than the chunk holds
            vec![6, 0, 3, 2, 4, 2],               // array ends early
            vec![6, 0, 3, 3, 4, 9],               // compound ends early
            vec![5, 0, 1, 4, 4],                  // top level stored whole
        ] {
            assert!(decode(&cd, &packed, 12).is_err(), "{cd:?}");
        }
        // Four elements need 28 bits; three bytes hold 24.
        assert!(decode(&atomic_cd(4, 4, 0, 7, 0), &packed, 16).is_err());
        // A self-nesting array deeper than the limit.
        let mut deep = vec![0, 0, 1];
        for _ in 0..40 {
            deep.extend([2, 4]);
        }
        deep.extend([1, 4, 0, 7, 0]);
        deep[0] = deep.len() as u32;
        assert!(decode(&deep, &packed, 4).is_err());
    }
}
