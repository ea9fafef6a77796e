//! The datatype message: parsing every class HDF5 defines and encoding the ones we write.

use crate::error::{corrupt, unsupported, Result};
use crate::io::{Cursor, PutLe};

/// String padding as stored in string datatypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrPad {
    NullTerm,
    NullPad,
    SpacePad,
}

/// A compound member.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    pub offset: usize,
    pub dtype: Datatype,
}

/// A parsed HDF5 datatype.
#[derive(Clone, Debug, PartialEq)]
pub enum Datatype {
    /// Fixed-point integer (`offset`/`precision` in bits for reduced precision).
    Int {
        size: usize,
        signed: bool,
        be: bool,
        offset: u16,
        precision: u16,
    },
    /// Floating point with its fields at bit positions within the element: IEEE f16/f32/f64, and the
    /// other layouts HDF5 2.0 predefines (bfloat16, FP8 E4M3/E5M2) or a writer defines.
    Float {
        size: usize,
        be: bool,
        sign_loc: u8,
        exp_loc: u8,
        exp_size: u8,
        mant_loc: u8,
        mant_size: u8,
        bias: u32,
        /// Mantissa normalisation: 0 none, 1 leading bit stored (set), 2 leading bit implied (IEEE).
        norm: u8,
    },
    /// Complex number (HDF5 2.0's class 11): real then imaginary part, each of the float type `base`.
    Complex { size: usize, base: Box<Datatype> },
    /// Fixed-length string of `size` bytes.
    FixedStr {
        size: usize,
        pad: StrPad,
        utf8: bool,
    },
    /// Variable-length string (global heap); `size` is its element's stored size (length, then the global
    /// heap ID: [`VLEN_SIZE`] in a file of 8-byte addresses, 12 bytes with 4-byte ones).
    VarStr { utf8: bool, size: usize },
    /// Variable-length sequence of `base`, each element stored in `.1` bytes (as [`Datatype::VarStr`]).
    VarSeq(Box<Datatype>, usize),
    /// Compound of named members at byte offsets.
    Compound { size: usize, members: Vec<Member> },
    /// Enumeration over an integer base type.
    Enum {
        base: Box<Datatype>,
        members: Vec<(String, i64)>,
    },
    /// Fixed-size array of `base`.
    Array { dims: Vec<u64>, base: Box<Datatype> },
    /// Opaque bytes with a tag.
    Opaque { size: usize, tag: String },
    /// Bitfield of `size` bytes.
    Bitfield { size: usize, be: bool },
    /// Reference (`kind` 0 = object, 1 = region; 2 and above: HDF5 1.12's revised references, each element
    /// naming its own kind); `size` bytes each.
    Reference { size: usize, kind: u8 },
    /// Time class (obsolete in HDF5, written by PyTables' time columns): read as PyTables reads it, 4 bytes
    /// as signed seconds since the epoch, 8 bytes as a timeval (seconds, microseconds) in float seconds.
    Time { size: usize, be: bool },
}

/// Elements of an array datatype with these dimensions, saturating at `usize::MAX`.
pub(crate) fn array_elements(dims: &[u64]) -> usize {
    usize::try_from(dims.iter().fold(1u64, |a, &d| a.saturating_mul(d))).unwrap_or(usize::MAX)
}

/// Bytes of a variable-length element in a file of 8-byte addresses: a 4-byte length, an 8-byte collection
/// address and a 4-byte object index.
pub const VLEN_SIZE: usize = 16;

/// The widest integer type read: 16-bit bit offset plus 16-bit precision (values of more than 128 bits are
/// refused element by element).
const MAX_INT_BYTES: usize = 2 * 65536 / 8;

impl Datatype {
    /// Element size in bytes.
    pub fn size(&self) -> usize {
        match self {
            Datatype::Int { size, .. }
            | Datatype::Float { size, .. }
            | Datatype::Complex { size, .. }
            | Datatype::FixedStr { size, .. }
            | Datatype::Compound { size, .. }
            | Datatype::Opaque { size, .. }
            | Datatype::Bitfield { size, .. }
            | Datatype::Reference { size, .. }
            | Datatype::Time { size, .. } => *size,
            Datatype::VarStr { size, .. } | Datatype::VarSeq(_, size) => *size,
            Datatype::Enum { base, .. } => base.size(),
            // Saturating: a damaged file's dims must not overflow (the data length check refuses it).
            Datatype::Array { dims, base } => array_elements(dims).saturating_mul(base.size()),
        }
    }

    /// Bytes one element takes in memory once decoded into [`crate::Data`] (at least its stored
    /// size): a string becomes a `String`, a variable-length sequence a `Data`, an enum or bitfield
    /// value a 64-bit integer. Reads bound this, not just the stored size, by the file's size.
    pub fn decoded_size(&self) -> usize {
        let decoded = match self {
            Datatype::Int { size, .. } => size.next_power_of_two().min(16),
            // Layouts other than IEEE's decode to f32 or f64 (see `crate::float_layout`).
            Datatype::Float { size, .. } => size.next_power_of_two().clamp(4, 8),
            Datatype::Complex { base, .. } => base.decoded_size().saturating_mul(2),
            Datatype::FixedStr { size, .. } => std::mem::size_of::<String>().saturating_add(*size),
            Datatype::VarStr { .. } => std::mem::size_of::<String>(),
            Datatype::VarSeq(..) => std::mem::size_of::<crate::Data>(),
            Datatype::Compound { members, .. } => members
                .iter()
                .fold(0usize, |a, m| a.saturating_add(m.dtype.decoded_size())),
            Datatype::Enum { .. }
            | Datatype::Bitfield { .. }
            | Datatype::Reference { .. }
            | Datatype::Time { .. } => 8,
            Datatype::Array { dims, base } => {
                array_elements(dims).saturating_mul(base.decoded_size())
            }
            Datatype::Opaque { .. } => 0,
        };
        decoded.max(self.size())
    }

    /// IEEE binary16/32/64 of `size` bytes in either byte order (what the writer produces).
    pub fn ieee_float(size: usize, be: bool) -> Datatype {
        let (exp_size, mant_size, bias) = match size {
            2 => (5, 10, 15),
            4 => (8, 23, 127),
            _ => (11, 52, 1023),
        };
        let size = if matches!(size, 2 | 4) { size } else { 8 };
        Datatype::Float {
            size,
            be,
            sign_loc: (size * 8 - 1) as u8,
            exp_loc: mant_size,
            exp_size,
            mant_loc: 0,
            mant_size,
            bias,
            norm: 2,
        }
    }

    /// `Some((size, big_endian))` when this is an IEEE binary16, binary32 or binary64 float, laid out bit
    /// for bit as IEEE defines it; `None` for any other type or float layout.
    pub fn ieee_layout(&self) -> Option<(usize, bool)> {
        match self {
            Datatype::Float { size, be, .. }
                if matches!(size, 2 | 4 | 8) && *self == Datatype::ieee_float(*size, *be) =>
            {
                Some((*size, *be))
            }
            _ => None,
        }
    }

    /// A short human-readable description ("i32le", "f64", "vlen-str", ...).
    pub fn describe(&self) -> String {
        match self {
            Datatype::Int {
                size, signed, be, ..
            } => format!(
                "{}{}{}",
                if *signed { "i" } else { "u" },
                size * 8,
                if *be { "be" } else { "" }
            ),
            Datatype::Float {
                size,
                be,
                exp_size,
                mant_size,
                ..
            } => {
                let name = if self.ieee_layout().is_some() {
                    format!("f{}", size * 8)
                } else if (*size, *exp_size, *mant_size) == (2, 8, 7) {
                    "bfloat16".into()
                } else if (*exp_size, *mant_size) == (15, 64) {
                    "f80".into() // x87 extended precision (numpy's longdouble), padded to `size`
                } else if (*size, *exp_size, *mant_size) == (16, 15, 112) {
                    "f128".into()
                } else {
                    format!("f{}e{exp_size}m{mant_size}", size * 8)
                };
                format!("{name}{}", if *be && *size > 1 { "be" } else { "" })
            }
            Datatype::Complex { base, .. } => format!("complex<{}>", base.describe()),
            Datatype::FixedStr { size, utf8, .. } => {
                format!("str[{}]{}", size, if *utf8 { " utf8" } else { "" })
            }
            Datatype::VarStr { .. } => "vlen-str".into(),
            Datatype::VarSeq(b, _) => format!("vlen<{}>", b.describe()),
            Datatype::Compound { members, .. } => format!(
                "compound{{{}}}",
                members
                    .iter()
                    .map(|m| format!("{}: {}", m.name, m.dtype.describe()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Datatype::Enum { base, .. } => format!("enum<{}>", base.describe()),
            Datatype::Array { dims, base } => format!("array{:?}<{}>", dims, base.describe()),
            Datatype::Opaque { size, .. } => format!("opaque[{size}]"),
            Datatype::Bitfield { size, .. } => format!("bitfield[{size}]"),
            Datatype::Reference { kind, .. } => match kind {
                0 => "object-ref".into(),
                1 => "region-ref".into(),
                _ => "ref".into(),
            },
            Datatype::Time { size, .. } => format!("time{}", size * 8),
        }
    }

    /// Parses a datatype message body.
    pub fn parse(c: &mut Cursor<'_>) -> Result<Datatype> {
        Self::parse_depth(c, 0)
    }

    fn parse_depth(c: &mut Cursor<'_>, depth: u32) -> Result<Datatype> {
        if depth > 16 {
            return corrupt("datatype nested too deeply");
        }
        let b0 = c.u8()?;
        let class = b0 & 0x0f;
        let version = b0 >> 4;
        let bits = c.uint(3)? as u32;
        let size = c.u32()? as usize;
        if version == 0 || version > 5 {
            return corrupt(format!("datatype version {version}"));
        }
        Ok(match class {
            0 => {
                let offset = c.u16()?;
                let precision = c.u16()?;
                // Offset and precision are 16-bit fields: a type wider than both together pads nothing.
                if size == 0 || size > MAX_INT_BYTES {
                    return unsupported(format!("integer of {size} bytes"));
                }
                Datatype::Int {
                    size,
                    signed: bits & 0x08 != 0,
                    be: bits & 0x01 != 0,
                    offset,
                    precision,
                }
            }
            1 => {
                let _offset = c.u16()?;
                let _precision = c.u16()?;
                let exp_loc = c.u8()?;
                let exp_size = c.u8()?;
                let mant_loc = c.u8()?;
                let mant_size = c.u8()?;
                let bias = c.u32()?;
                if bits & 0x40 != 0 {
                    return unsupported("VAX-endian floating point");
                }
                Datatype::Float {
                    size,
                    be: bits & 0x01 != 0,
                    sign_loc: (bits >> 8) as u8,
                    exp_loc,
                    exp_size,
                    mant_loc,
                    mant_size,
                    bias,
                    norm: ((bits >> 4) & 0x03) as u8,
                }
            }
            2 => {
                let _ = c.u16()?;
                Datatype::Time {
                    size,
                    be: bits & 0x01 != 0,
                }
            }
            3 => {
                let pad = match bits & 0x0f {
                    0 => StrPad::NullTerm,
                    1 => StrPad::NullPad,
                    _ => StrPad::SpacePad,
                };
                Datatype::FixedStr {
                    size,
                    pad,
                    utf8: (bits >> 4) & 0x0f == 1,
                }
            }
            4 => {
                let _ = c.u16()?;
                let _ = c.u16()?;
                Datatype::Bitfield {
                    size,
                    be: bits & 1 != 0,
                }
            }
            5 => {
                let taglen = (bits & 0xff) as usize;
                let raw = c.bytes(taglen)?;
                let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                Datatype::Opaque {
                    size,
                    tag: String::from_utf8_lossy(&raw[..end]).into_owned(),
                }
            }
            6 => {
                let n = (bits & 0xffff) as usize;
                let mut members = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let start = c.pos();
                    let name = String::from_utf8_lossy(c.cstr()?).into_owned();
                    if version < 3 {
                        let used = c.pos() - start;
                        let padded = used.div_ceil(8) * 8;
                        c.skip(padded - used)?;
                    }
                    let offset = if version >= 3 {
                        c.uint(crate::io::bytes_for(size as u64))? as usize
                    } else {
                        c.u32()? as usize
                    };
                    let mut dims = Vec::new();
                    if version == 1 {
                        let nd = c.u8()? as usize;
                        c.skip(3)?;
                        c.skip(4)?; // permutation
                        c.skip(4)?;
                        for i in 0..4 {
                            let d = c.u32()?;
                            if i < nd {
                                dims.push(d as u64);
                            }
                        }
                    }
                    let mut dtype = Self::parse_depth(c, depth + 1)?;
                    if !dims.is_empty() {
                        dtype = Datatype::Array {
                            dims,
                            base: Box::new(dtype),
                        };
                    }
                    if offset.saturating_add(dtype.size()) > size {
                        return corrupt(format!("compound member {name} beyond type size"));
                    }
                    members.push(Member {
                        name,
                        offset,
                        dtype,
                    });
                }
                Datatype::Compound { size, members }
            }
            7 => {
                let kind = (bits & 0x0f) as u8;
                // Version 4 is HDF5 1.12's reference type (H5T_STD_REF): kinds 2-4, whatever it says, as
                // each element carries its own.
                if version >= 4 && !(2..=4).contains(&kind) || version < 4 && kind > 1 {
                    return corrupt(format!(
                        "reference type {kind} in datatype version {version}"
                    ));
                }
                Datatype::Reference { size, kind }
            }
            8 => {
                let n = (bits & 0xffff) as usize;
                let base = Self::parse_depth(c, depth + 1)?;
                let mut names = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let start = c.pos();
                    let name = String::from_utf8_lossy(c.cstr()?).into_owned();
                    if version < 3 {
                        let used = c.pos() - start;
                        let padded = used.div_ceil(8) * 8;
                        c.skip(padded - used)?;
                    }
                    names.push(name);
                }
                let bsize = base.size();
                let mut members = Vec::with_capacity(names.len());
                for name in names {
                    let raw = c.bytes(bsize)?;
                    let v = crate::convert::int_from_bytes(&base, raw)?;
                    members.push((name, v));
                }
                Datatype::Enum {
                    base: Box::new(base),
                    members,
                }
            }
            9 => {
                let kind = bits & 0x0f;
                let base = Self::parse_depth(c, depth + 1)?;
                // A sequence length, then a global heap ID (an address of 2, 4 or 8 bytes and an index); any
                // other size is read as 8-byte addresses give it, as this reader always read it.
                let size = if matches!(size, 10 | 12) {
                    size
                } else {
                    VLEN_SIZE
                };
                if kind == 1 {
                    Datatype::VarStr {
                        utf8: (bits >> 8) & 0x0f == 1,
                        size,
                    }
                } else {
                    Datatype::VarSeq(Box::new(base), size)
                }
            }
            10 => {
                let nd = c.u8()? as usize;
                if version < 3 {
                    c.skip(3)?;
                }
                let mut dims = Vec::with_capacity(nd);
                for _ in 0..nd {
                    dims.push(c.u32()? as u64);
                }
                if version < 3 {
                    c.skip(4 * nd)?;
                }
                let base = Self::parse_depth(c, depth + 1)?;
                Datatype::Array {
                    dims,
                    base: Box::new(base),
                }
            }
            11 => {
                // Bit 0: both parts of one type (the only kind HDF5 2.0 makes); bits 1-2: the form.
                if bits & 0x01 == 0 {
                    return unsupported("complex number whose parts differ in type");
                }
                if (bits >> 1) & 0x03 != 0 {
                    return unsupported("complex number in polar or exponential form");
                }
                let base = Self::parse_depth(c, depth + 1)?;
                if !matches!(base, Datatype::Float { .. }) {
                    return corrupt(format!(
                        "complex number of a non-float part ({})",
                        base.describe()
                    ));
                }
                if base.size().checked_mul(2) != Some(size) {
                    return corrupt(format!(
                        "complex number of {size} bytes with parts of {} bytes",
                        base.size()
                    ));
                }
                Datatype::Complex {
                    size,
                    base: Box::new(base),
                }
            }
            other => return corrupt(format!("unknown datatype class {other}")),
        })
    }

    /// Encodes this datatype as a message body (only the classes the writer produces).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Datatype::Int {
                size, signed, be, ..
            } => {
                out.put_u8(0x10);
                out.put_uint(
                    (if *signed { 0x08 } else { 0 }) | (if *be { 1 } else { 0 }),
                    3,
                );
                out.put_u32(*size as u32);
                out.put_u16(0);
                out.put_u16((*size * 8) as u16);
            }
            Datatype::Float {
                size,
                be,
                sign_loc,
                exp_loc,
                exp_size,
                mant_loc,
                mant_size,
                bias,
                norm,
            } => {
                // Only IEEE layouts: what HDF5 1.10 and 1.14 read.
                if self.ieee_layout().is_none() {
                    return unsupported(format!("writing {}", self.describe()));
                }
                out.put_u8(0x11);
                let bits = u64::from(*norm) << 4 | u64::from(*sign_loc) << 8 | u64::from(*be);
                out.put_uint(bits, 3);
                out.put_u32(*size as u32);
                out.put_u16(0);
                out.put_u16((*size * 8) as u16);
                out.put_u8(*exp_loc);
                out.put_u8(*exp_size);
                out.put_u8(*mant_loc);
                out.put_u8(*mant_size);
                out.put_u32(*bias);
            }
            Datatype::FixedStr { size, pad, utf8 } => {
                let p = match pad {
                    StrPad::NullTerm => 0,
                    StrPad::NullPad => 1,
                    StrPad::SpacePad => 2,
                };
                out.put_u8(0x13);
                out.put_uint(p | if *utf8 { 0x10 } else { 0 }, 3);
                out.put_u32(*size as u32);
            }
            Datatype::VarStr { utf8, size } => {
                out.put_u8(0x19);
                out.put_uint(1 | if *utf8 { 0x100 } else { 0 }, 3);
                out.put_u32(*size as u32);
                // Base type: unsigned 8-bit integer, as libhdf5 writes it.
                Datatype::Int {
                    size: 1,
                    signed: false,
                    be: false,
                    offset: 0,
                    precision: 8,
                }
                .encode(out)?;
            }
            Datatype::Compound { size, members } => {
                out.put_u8(0x36);
                out.put_uint(members.len() as u64, 3);
                out.put_u32(*size as u32);
                let w = crate::io::bytes_for(*size as u64);
                for m in members {
                    out.extend_from_slice(m.name.as_bytes());
                    out.put_u8(0);
                    out.put_uint(m.offset as u64, w);
                    m.dtype.encode(out)?;
                }
            }
            Datatype::Enum { base, members } => {
                out.put_u8(0x38);
                out.put_uint(members.len() as u64, 3);
                out.put_u32(base.size() as u32);
                base.encode(out)?;
                for (name, _) in members {
                    out.extend_from_slice(name.as_bytes());
                    out.put_u8(0);
                }
                for (_, v) in members {
                    out.extend_from_slice(&v.to_le_bytes()[..base.size()]);
                }
            }
            Datatype::Array { dims, base } => {
                out.put_u8(0x3a);
                out.put_uint(0, 3);
                out.put_u32(self.size() as u32);
                out.put_u8(dims.len() as u8);
                for d in dims {
                    out.put_u32(*d as u32);
                }
                base.encode(out)?;
            }
            Datatype::Opaque { size, tag } => {
                let padded = (tag.len() + 1).div_ceil(8) * 8;
                out.put_u8(0x15);
                out.put_uint(padded as u64, 3);
                out.put_u32(*size as u32);
                out.extend_from_slice(tag.as_bytes());
                out.resize(out.len() + padded - tag.len(), 0);
            }
            Datatype::Bitfield { size, be } => {
                out.put_u8(0x14);
                out.put_uint(if *be { 1 } else { 0 }, 3);
                out.put_u32(*size as u32);
                out.put_u16(0);
                out.put_u16((*size * 8) as u16);
            }
            Datatype::VarSeq(base, size) => {
                out.put_u8(0x19);
                out.put_uint(0, 3);
                out.put_u32(*size as u32);
                base.encode(out)?;
            }
            Datatype::Reference {
                size: size @ (2 | 4 | 8),
                kind: 0,
            } => {
                // Version 1, class 7 (reference), type 0: object reference (an address of the file's width).
                out.put_u8(0x17);
                out.put_uint(0, 3);
                out.put_u32(*size as u32);
            }
            Datatype::Reference {
                size: size @ (6 | 8 | 12),
                kind: 1,
            } => {
                // Type 1: dataset region reference (a global heap ID: an address and an index).
                out.put_u8(0x17);
                out.put_uint(1, 3);
                out.put_u32(*size as u32);
            }
            other => return unsupported(format!("writing datatype {}", other.describe())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::Data;
    use crate::convert::dtype_for;

    fn roundtrip(dt: &Datatype) -> Datatype {
        let mut b = Vec::new();
        dt.encode(&mut b).unwrap();
        Datatype::parse(&mut Cursor::new(&b, "test")).unwrap()
    }

    #[test]
    fn written_types_parse_back() {
        for d in [
            Data::I8(vec![]),
            Data::U64(vec![]),
            Data::F16(vec![]),
            Data::F32(vec![]),
            Data::F64(vec![]),
            Data::VarStr(vec![]),
            Data::FixedStr {
                len: 7,
                values: vec![],
            },
            Data::Enum {
                values: vec![],
                members: vec![("A".into(), 1), ("B".into(), -300)],
            },
            Data::ArrayOf {
                dims: vec![2, 3],
                data: Box::new(Data::U16(vec![])),
            },
            Data::Opaque {
                size: 5,
                tag: "t".into(),
                bytes: vec![],
            },
            Data::VarLen(vec![Data::F32(vec![1.0])]),
            Data::Compound(vec![
                ("x".into(), Data::I32(vec![])),
                ("s".into(), Data::VarStr(vec![])),
            ]),
        ] {
            let dt = dtype_for(&d).unwrap();
            assert_eq!(roundtrip(&dt), dt, "{}", d.type_name());
        }
    }

    #[test]
    fn bad_class_is_an_error() {
        let b = [0x1f, 0, 0, 0, 4, 0, 0, 0];
        assert!(Datatype::parse(&mut Cursor::new(&b, "t")).is_err());
    }
}
