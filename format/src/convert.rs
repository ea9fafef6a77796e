//! Conversion between raw element bytes (in a file datatype) and [`Data`].

use crate::array::Data;
use crate::datatype::{Datatype, StrPad};
use crate::error::{corrupt, invalid, unsupported, FormatError, Result};
use crate::heap::global::InOrder;
use crate::io::{le_uint, PutLe};
use crate::strings::StringColumn;
use half::f16;

/// Where variable-length element bodies live when reading (the global heap).
pub trait VlenSource {
    /// Size of file addresses.
    fn offset_size(&self) -> usize;
    /// The bytes of global-heap object `index` in the collection at `coll`.
    fn vlen_object(&self, coll: u64, index: u32) -> Result<&[u8]>;

    /// A reader of the objects of the collection at `coll` (by index), for a run of elements whose bodies
    /// share it: sources that look collections up under a lock do so once for the run, not per element.
    fn vlen_collection<'s>(&'s self, coll: u64) -> Result<VlenObjects<'s>> {
        Ok(Box::new(move |index| self.vlen_object(coll, index)))
    }

    /// A reader of the collection at `coll` object after object in stored order, where the source holds
    /// its bytes; `None` leaves every lookup to [`vlen_collection`](Self::vlen_collection).
    fn vlen_in_order(&self, _coll: u64) -> Option<crate::heap::global::InOrder<'_>> {
        None
    }
}

/// Objects of one global-heap collection, by index.
pub type VlenObjects<'s> = Box<dyn Fn(u32) -> Result<&'s [u8]> + 's>;

/// Where variable-length element bodies go when writing.
pub trait VlenSink {
    /// Stores `bytes` as one global-heap object; returns (collection address, index).
    fn put(&mut self, bytes: &[u8]) -> Result<(u64, u32)>;

    /// Bytes of the file's addresses (and so of a heap ID's collection address).
    fn offset_size(&self) -> usize {
        8
    }
}

fn raw_uint(raw: &[u8], be: bool) -> u64 {
    if be {
        let mut v = 0u64;
        for b in raw.iter().take(8) {
            v = (v << 8) | *b as u64;
        }
        v
    } else {
        le_uint(raw)
    }
}

fn adjust_int(v: u64, size: usize, signed: bool, offset: u16, precision: u16) -> i128 {
    let full = size * 8;
    let prec = (precision as usize).clamp(1, 64);
    let mut x = v;
    if offset as usize > 0 || prec < full {
        x = if (offset as usize) < 64 {
            x >> offset
        } else {
            0
        };
        if prec < 64 {
            x &= (1u64 << prec) - 1;
        }
    }
    if signed {
        if prec < 64 && x & (1u64 << (prec - 1)) != 0 {
            (x as i128) - (1i128 << prec)
        } else if prec == 64 {
            (x as i64) as i128
        } else {
            x as i128
        }
    } else {
        x as i128
    }
}

/// An integer of up to 16 bytes in either byte order (`raw` holds exactly its bytes).
fn raw_uint128(raw: &[u8], be: bool) -> u128 {
    let fold = |v: u128, b: &u8| (v << 8) | *b as u128;
    if be {
        raw.iter().take(16).fold(0, fold)
    } else {
        raw.iter().take(16).rev().fold(0, fold)
    }
}

/// The value of an integer of 9 or more bytes (`raw` holds exactly its bytes): its `precision` bits from bit
/// `offset`, sign-extended when `signed`, as the bits of a u128 (cast to i128 for a signed type). A value of a
/// wider type that needs more than 128 bits is an error.
fn any_wide_int(raw: &[u8], be: bool, signed: bool, offset: u16, precision: u16) -> Result<u128> {
    let size = raw.len();
    if size <= 16 {
        return Ok(wide_int(
            raw_uint128(raw, be),
            size,
            signed,
            offset,
            precision,
        ));
    }
    let le: std::borrow::Cow<[u8]> = if be {
        raw.iter().rev().copied().collect::<Vec<u8>>().into()
    } else {
        raw.into()
    };
    let bits = size * 8;
    let o = offset as usize;
    if o >= bits {
        return Ok(0);
    }
    let p = (precision as usize).clamp(1, bits - o);
    // Byte `k` of the field: its bits 8k..8k+8 (bits past the field's end included; masked below).
    let field = |k: usize| -> u8 {
        let at = o + 8 * k;
        let (i, shift) = (at / 8, at % 8);
        let lo = le.get(i).copied().unwrap_or(0) >> shift;
        let hi = match shift {
            0 => 0,
            _ => le.get(i + 1).copied().unwrap_or(0) << (8 - shift),
        };
        lo | hi
    };
    let mut v = (0..16).fold(0u128, |v, k| v | u128::from(field(k)) << (8 * k));
    let sign = signed && (field((p - 1) / 8) >> ((p - 1) % 8)) & 1 == 1;
    if p <= 128 {
        if p < 128 {
            v &= (1u128 << p) - 1;
            if sign {
                v |= !((1u128 << p) - 1);
            }
        }
        return Ok(v);
    }
    // Every bit from 128 on (and bit 127 of a signed value) must repeat the sign.
    let ext = if sign { 0xff } else { 0 };
    let partial = p % 8;
    let fits = (16..p / 8).all(|k| field(k) == ext)
        && (partial == 0 || (field(p / 8) ^ ext) & ((1 << partial) - 1) == 0)
        && (!signed || ((v >> 127) == 1) == sign);
    if !fits {
        return unsupported(format!(
            "a {size}-byte integer value that needs more than 128 bits"
        ));
    }
    Ok(v)
}

/// The value of a wide integer's `precision` bits from bit `offset`, sign-extended when `signed`; returned
/// as the bits of a u128 (cast to i128 for a signed type).
fn wide_int(v: u128, size: usize, signed: bool, offset: u16, precision: u16) -> u128 {
    let prec = (precision as usize).clamp(1, (size * 8).min(128));
    let x = if (offset as usize) < 128 {
        v >> offset
    } else {
        0
    };
    if prec == 128 {
        return x;
    }
    let x = x & ((1u128 << prec) - 1);
    if signed && x & (1u128 << (prec - 1)) != 0 {
        x | !((1u128 << prec) - 1)
    } else {
        x
    }
}

/// One integer element of an integer (or enum-base) datatype, as i64.
pub fn int_from_bytes(dt: &Datatype, raw: &[u8]) -> Result<i64> {
    match dt {
        Datatype::Int {
            size,
            signed,
            be,
            offset,
            precision,
        } => {
            if raw.len() < *size {
                return corrupt("short integer");
            }
            if *size > 8 {
                let bits = any_wide_int(&raw[..*size], *be, *signed, *offset, *precision)?;
                let v = if *signed {
                    i64::try_from(bits as i128).ok()
                } else {
                    i64::try_from(bits).ok()
                };
                return v.ok_or_else(|| {
                    crate::error::FormatError::Unsupported(format!(
                        "{}-byte enum value beyond 64 bits",
                        size
                    ))
                });
            }
            Ok(adjust_int(
                raw_uint(&raw[..*size], *be),
                *size,
                *signed,
                *offset,
                *precision,
            ) as i64)
        }
        other => unsupported(format!("enum base type {}", other.describe())),
    }
}

fn trim_fixed(b: &[u8], pad: StrPad) -> String {
    String::from_utf8_lossy(fixed_body(b, pad)).into_owned()
}

/// A fixed-length string element's bytes without its padding.
fn fixed_body(b: &[u8], pad: StrPad) -> &[u8] {
    match pad {
        StrPad::NullTerm | StrPad::NullPad => &b[..memchr::memchr(0, b).unwrap_or(b.len())],
        StrPad::SpacePad => {
            let end = b
                .iter()
                .rposition(|&x| x != b' ' && x != 0)
                .map(|i| i + 1)
                .unwrap_or(0);
            &b[..end]
        }
    }
}

macro_rules! ints {
    ($raw:expr, $size:expr, $be:expr, $t:ty, $ut:ty, $signed:expr, $fix:expr) => {{
        $raw.chunks_exact($size)
            .map(|c| {
                let v = raw_uint(c, $be);
                match $fix {
                    Some((o, p)) => adjust_int(v, $size, $signed, o, p) as $t,
                    None => v as $ut as $t,
                }
            })
            .collect::<Vec<$t>>()
    }};
}

/// Fixed-width elements through a byte-array constructor (compiles to plain loads).
fn fixed<const N: usize, T>(raw: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N)
        .map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            f(a)
        })
        .collect()
}

/// Little-endian plain-old-data elements: on little-endian hosts one bulk copy.
fn le_pod<const N: usize, T: bytemuck::Pod>(raw: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    if cfg!(target_endian = "little") {
        bytemuck::pod_collect_to_vec::<u8, T>(&raw[..raw.len() / N * N])
    } else {
        fixed::<N, T>(raw, f)
    }
}

/// Full-precision integers of a native width, either byte order.
fn fast_int(raw: &[u8], size: usize, signed: bool, be: bool) -> Option<Data> {
    macro_rules! pick {
        ($n:literal, $t:ty, $v:ident) => {
            Some(Data::$v(if be {
                fixed::<$n, $t>(raw, <$t>::from_be_bytes)
            } else {
                le_pod::<$n, $t>(raw, <$t>::from_le_bytes)
            }))
        };
    }
    match (size, signed) {
        (1, true) => pick!(1, i8, I8),
        (1, false) => Some(Data::U8(raw.to_vec())),
        (2, true) => pick!(2, i16, I16),
        (2, false) => pick!(2, u16, U16),
        (4, true) => pick!(4, i32, I32),
        (4, false) => pick!(4, u32, U32),
        (8, true) => pick!(8, i64, I64),
        (8, false) => pick!(8, u64, U64),
        _ => None,
    }
}

/// Decodes `n` elements of type `dt` from `raw` (exactly `n * dt.size()` bytes).
pub fn decode(dt: &Datatype, raw: &[u8], n: usize, src: &dyn VlenSource) -> Result<Data> {
    decode_depth(dt, raw, n, src, 0)
}

/// Calls `f` with the bytes of each variable-length string element of `raw` (`size` bytes an element), in
/// order: its global-heap object up to the element's length (a string ends early at a null byte: callers
/// cut there); empty for a null ID.
fn for_each_vlen_str(
    raw: &[u8],
    size: usize,
    src: &dyn VlenSource,
    mut f: impl FnMut(&[u8]),
) -> Result<()> {
    let so = src.offset_size();
    if size < 8 + so {
        return corrupt("variable-length element shorter than its length and heap ID");
    }
    // Elements' bodies come in runs from one collection: its reader is kept for the run. Writers store a
    // run's objects in the order its elements name them: those are read one after another, without an
    // index of the collection, for as long as the order holds.
    let mut objects: Option<(u64, VlenObjects<'_>)> = None;
    let mut in_order: Option<(u64, InOrder<'_>)> = None;
    for c in raw.chunks_exact(size) {
        let len = le_uint(&c[0..4]) as usize;
        let coll = le_uint(&c[4..4 + so]);
        let idx = le_uint(&c[4 + so..8 + so]) as u32;
        if len == 0 || coll == 0 {
            f(&[]);
            continue;
        }
        if idx == 1 && !matches!(&in_order, Some((at, _)) if *at == coll) {
            in_order = src.vlen_in_order(coll).map(|r| (coll, r));
        }
        if let Some((_, r)) = in_order.as_mut().filter(|(at, _)| *at == coll) {
            if let Some(obj) = r.take(idx) {
                f(&obj[..len.min(obj.len())]);
                continue;
            }
        }
        let get = match &objects {
            Some((at, get)) if *at == coll => get,
            _ => &objects.insert((coll, src.vlen_collection(coll)?)).1,
        };
        let obj = get(idx)?;
        f(&obj[..len.min(obj.len())]);
    }
    Ok(())
}

/// A string's bytes up to its first null byte (found a word at a time, not byte by byte).
fn until_null(body: &[u8]) -> &[u8] {
    match memchr::memchr(0, body) {
        Some(i) => &body[..i],
        None => body,
    }
}

/// The `n` string elements of `raw` (variable-length or fixed-length strings of type `dt`) packed into
/// one [`StringColumn`]; any other type is a [`FormatError::TypeMismatch`].
pub fn decode_strings(
    dt: &Datatype,
    raw: &[u8],
    n: usize,
    src: &dyn VlenSource,
) -> Result<StringColumn> {
    let mut col = StringColumn::new();
    decode_strings_into(dt, raw, n, src, &mut col)?;
    Ok(col)
}

/// [`decode_strings`] into `col`, whose buffers are reused (on an error it is left empty).
pub fn decode_strings_into(
    dt: &Datatype,
    raw: &[u8],
    n: usize,
    src: &dyn VlenSource,
    col: &mut StringColumn,
) -> Result<()> {
    let (mut text, mut ends) = col.take_parts();
    let size = dt.size();
    if size == 0 || raw.len() < n.saturating_mul(size) {
        return corrupt("element data shorter than its shape");
    }
    let raw = &raw[..n * size];
    ends.reserve(n);
    let mut keep = |b: &[u8]| {
        text.extend_from_slice(b);
        ends.push(text.len());
    };
    match dt {
        Datatype::VarStr { .. } => {
            for_each_vlen_str(raw, size, src, keep)?;
            // Null bytes end strings early: looked for once over all the bytes, then (rarely) cut.
            if memchr::memchr(0, &text).is_some() {
                let (whole, whole_ends) = (std::mem::take(&mut text), std::mem::take(&mut ends));
                let mut start = 0;
                for end in whole_ends {
                    text.extend_from_slice(until_null(&whole[start..end]));
                    ends.push(text.len());
                    start = end;
                }
            }
        }
        Datatype::FixedStr { pad, .. } => {
            for c in raw.chunks_exact(size) {
                keep(fixed_body(c, *pad));
            }
        }
        other => {
            return Err(FormatError::TypeMismatch(format!(
                "{} is not a string type",
                other.describe()
            )))
        }
    }
    col.set_parts(text, ends);
    Ok(())
}

fn decode_depth(
    dt: &Datatype,
    raw: &[u8],
    n: usize,
    src: &dyn VlenSource,
    depth: u32,
) -> Result<Data> {
    if depth > 16 {
        return corrupt("data nested too deeply");
    }
    let size = dt.size();
    // No HDF5 datatype has size 0 (a damaged file's may): refused even with no elements, as every
    // branch below steps through the data `size` bytes at a time.
    if size == 0 {
        return corrupt("zero-size datatype");
    }
    // Only an array whose dimensions overflow gets this size (`Datatype::size` saturates).
    if size == usize::MAX {
        return corrupt("array datatype whose size overflows");
    }
    if raw.len() < n.saturating_mul(size) {
        return corrupt("element data shorter than its shape");
    }
    let raw = &raw[..n * size];
    Ok(match dt {
        Datatype::Int {
            size,
            signed,
            be,
            offset,
            precision,
        } => {
            // Widths other than 1, 2, 4 and 8 bytes widen to the next, so their sign bit is extended too.
            let fix = if *offset != 0
                || (*precision as usize) < size * 8
                || !matches!(size, 1 | 2 | 4 | 8)
            {
                Some((*offset, *precision))
            } else {
                None
            };
            let s = *size;
            if fix.is_none() {
                if let Some(d) = fast_int(raw, s, *signed, *be) {
                    return Ok(d);
                }
            }
            match (s, signed) {
                (1, true) => Data::I8(ints!(raw, 1, *be, i8, u8, true, fix)),
                (1, false) => Data::U8(ints!(raw, 1, *be, u8, u8, false, fix)),
                (2, true) => Data::I16(ints!(raw, 2, *be, i16, u16, true, fix)),
                (2, false) => Data::U16(ints!(raw, 2, *be, u16, u16, false, fix)),
                (3..=4, true) => Data::I32(ints!(raw, s, *be, i32, u32, true, fix)),
                (3..=4, false) => Data::U32(ints!(raw, s, *be, u32, u32, false, fix)),
                (9.., _) => {
                    let (o, p) = (*offset, *precision);
                    let wide = raw
                        .chunks_exact(s)
                        .map(|c| any_wide_int(c, *be, *signed, o, p))
                        .collect::<Result<Vec<u128>>>()?;
                    if *signed {
                        Data::I128(wide.into_iter().map(|x| x as i128).collect())
                    } else {
                        Data::U128(wide)
                    }
                }
                (_, true) => Data::I64(ints!(raw, s, *be, i64, u64, true, fix)),
                (_, false) => Data::U64(ints!(raw, s, *be, u64, u64, false, fix)),
            }
        }
        Datatype::Float { .. } => match dt.ieee_layout() {
            Some((2, true)) => Data::F16(fixed::<2, _>(raw, f16::from_be_bytes)),
            Some((2, false)) => Data::F16(le_pod::<2, _>(raw, f16::from_le_bytes)),
            Some((4, true)) => Data::F32(fixed::<4, _>(raw, f32::from_be_bytes)),
            Some((4, false)) => Data::F32(le_pod::<4, _>(raw, f32::from_le_bytes)),
            Some((_, true)) => Data::F64(fixed::<8, _>(raw, f64::from_be_bytes)),
            Some((_, false)) => Data::F64(le_pod::<8, _>(raw, f64::from_le_bytes)),
            None => crate::float_layout::decode(dt, raw)?,
        },
        // Real and imaginary parts as the compound {r, i} h5py writes complex numbers as (before HDF5 2.0).
        Datatype::Complex { base, .. } => {
            let part = base.size();
            let mut re = Vec::with_capacity(n * part);
            let mut im = Vec::with_capacity(n * part);
            for c in raw.chunks_exact(size) {
                re.extend_from_slice(&c[..part]);
                im.extend_from_slice(&c[part..2 * part]);
            }
            Data::Compound(vec![
                ("r".into(), decode_depth(base, &re, n, src, depth + 1)?),
                ("i".into(), decode_depth(base, &im, n, src, depth + 1)?),
            ])
        }
        Datatype::FixedStr { size, pad, .. } => Data::FixedStr {
            len: *size,
            values: raw
                .chunks_exact(*size)
                .map(|c| trim_fixed(c, *pad))
                .collect(),
        },
        Datatype::VarStr { .. } => {
            let mut out = Vec::with_capacity(n);
            for_each_vlen_str(raw, size, src, |body| {
                let body = until_null(body);
                out.push(match std::str::from_utf8(body) {
                    Ok(s) => s.to_owned(),
                    Err(_) => String::from_utf8_lossy(body).into_owned(),
                })
            })?;
            Data::VarStr(out)
        }
        Datatype::VarSeq(base, _) => {
            let so = src.offset_size();
            if size < 8 + so {
                return corrupt("variable-length element shorter than its length and heap ID");
            }
            let bsize = base.size();
            let mut out = Vec::with_capacity(n);
            for c in raw.chunks_exact(size) {
                let len = le_uint(&c[0..4]) as usize;
                let coll = le_uint(&c[4..4 + so]);
                let idx = le_uint(&c[4 + so..8 + so]) as u32;
                if len == 0 || coll == 0 {
                    out.push(decode_depth(base, &[], 0, src, depth + 1)?);
                    continue;
                }
                let obj = src.vlen_object(coll, idx)?;
                if len.saturating_mul(bsize) > obj.len() {
                    return corrupt("variable-length sequence longer than its heap object");
                }
                out.push(decode_depth(base, obj, len, src, depth + 1)?);
            }
            Data::VarLen(out)
        }
        Datatype::Compound { size, members } => {
            let mut fields = Vec::with_capacity(members.len());
            for m in members {
                let ms = m.dtype.size();
                let mut buf = Vec::with_capacity(ms * n);
                for c in raw.chunks_exact(*size) {
                    buf.extend_from_slice(&c[m.offset..m.offset + ms]);
                }
                fields.push((
                    m.name.clone(),
                    decode_depth(&m.dtype, &buf, n, src, depth + 1)?,
                ));
            }
            Data::Compound(fields)
        }
        Datatype::Enum { base, members } => {
            let bs = base.size();
            let mut values = Vec::with_capacity(n);
            for c in raw.chunks_exact(bs) {
                values.push(int_from_bytes(base, c)?);
            }
            Data::Enum {
                values,
                members: members.clone(),
            }
        }
        Datatype::Array { dims, base } => {
            // `size` (base size times `per`) passed the length check above, so `n * per` fits.
            let per = size / base.size().max(1);
            Data::ArrayOf {
                dims: dims.clone(),
                data: Box::new(decode_depth(base, raw, n * per, src, depth + 1)?),
            }
        }
        Datatype::Opaque { size, tag } => Data::Opaque {
            size: *size,
            tag: tag.clone(),
            bytes: raw.to_vec(),
        },
        Datatype::Bitfield { size, be } => Data::Bitfield {
            size: *size,
            values: raw.chunks_exact(*size).map(|c| raw_uint(c, *be)).collect(),
        },
        Datatype::Reference { size, kind } => {
            match kind {
                0 => Data::ObjectRef(raw.chunks_exact(*size).map(le_uint).collect()),
                1 => {
                    // A global heap ID (collection address, object index) per element, 0 for a null one.
                    let so = src.offset_size();
                    if *size < so + 4 {
                        return corrupt("region reference shorter than a global heap ID");
                    }
                    let mut out = Vec::with_capacity(n);
                    for c in raw.chunks_exact(*size) {
                        let coll = le_uint(&c[..so]);
                        let idx = le_uint(&c[so..so + 4]) as u32;
                        out.push(if coll == 0 {
                            crate::region::RegionRef {
                                object: 0,
                                selection: crate::region::Selection::None,
                            }
                        } else {
                            crate::region::RegionRef::parse(src.vlen_object(coll, idx)?, so)?
                        });
                    }
                    Data::RegionRef(out)
                }
                _ => {
                    let so = src.offset_size();
                    let heap = |coll: u64, index: u32| src.vlen_object(coll, index);
                    let mut out = Vec::with_capacity(n);
                    for c in raw.chunks_exact(*size) {
                        out.push(crate::region::Reference::parse(c, so, &heap)?);
                    }
                    Data::Ref(out)
                }
            }
        }
        // PyTables' Time32 and Time64 columns, the time class's one writer: signed seconds, and a timeval
        // (seconds in the high 32 bits, microseconds in the low 32) read as float seconds.
        Datatype::Time { size: 4, be: true } => Data::I32(fixed::<4, _>(raw, i32::from_be_bytes)),
        Datatype::Time { size: 4, be: false } => Data::I32(le_pod::<4, _>(raw, i32::from_le_bytes)),
        Datatype::Time { size: 8, be } => {
            let timeval = |b: [u8; 8]| {
                let v = if *be {
                    i64::from_be_bytes(b)
                } else {
                    i64::from_le_bytes(b)
                };
                1e-6 * f64::from(v as i32) + (v >> 32) as f64
            };
            Data::F64(fixed::<8, _>(raw, timeval))
        }
        Datatype::Time { size, .. } => {
            return unsupported(format!("time datatype of {size} bytes"))
        }
    })
}

/// The datatype the writer uses for `data` (in a file of 8-byte addresses).
pub fn dtype_for(data: &Data) -> Result<Datatype> {
    dtype_for_sized(data, 8)
}

/// The datatype the writer uses for `data` in a file of `offset_size`-byte addresses (which set the size of
/// variable-length elements).
pub fn dtype_for_sized(data: &Data, offset_size: usize) -> Result<Datatype> {
    let vlen_size = 4 + offset_size + 4;
    let int = |size: usize, signed: bool| Datatype::Int {
        size,
        signed,
        be: false,
        offset: 0,
        precision: (size * 8) as u16,
    };
    let float = |size: usize| Datatype::ieee_float(size, false);
    Ok(match data {
        Data::I8(_) => int(1, true),
        Data::I16(_) => int(2, true),
        Data::I32(_) => int(4, true),
        Data::I64(_) => int(8, true),
        Data::I128(_) => int(16, true),
        Data::U8(_) => int(1, false),
        Data::U16(_) => int(2, false),
        Data::U32(_) => int(4, false),
        Data::U64(_) => int(8, false),
        Data::U128(_) => int(16, false),
        Data::F16(_) => float(2),
        Data::F32(_) => float(4),
        Data::F64(_) => float(8),
        Data::VarStr(_) => Datatype::VarStr {
            utf8: true,
            size: vlen_size,
        },
        Data::FixedStr { len, values } => {
            if *len == 0 {
                return invalid("fixed-length strings need len >= 1");
            }
            Datatype::FixedStr {
                size: *len,
                pad: StrPad::NullPad,
                utf8: values.iter().any(|s| !s.is_ascii()),
            }
        }
        Data::Compound(fields) => {
            if fields.is_empty() {
                return invalid("compound data needs at least one member");
            }
            let n = fields[0].1.len();
            let mut members = Vec::with_capacity(fields.len());
            let mut offset = 0usize;
            for (name, d) in fields {
                if d.len() != n {
                    return invalid(format!(
                        "compound member {name} has {} elements, expected {n}",
                        d.len()
                    ));
                }
                let dt = dtype_for_sized(d, offset_size)?;
                let sz = dt.size();
                members.push(crate::datatype::Member {
                    name: name.clone(),
                    offset,
                    dtype: dt,
                });
                offset += sz;
            }
            Datatype::Compound {
                size: offset,
                members,
            }
        }
        Data::Enum { values, members } => {
            let (lo, hi) = members
                .iter()
                .map(|(_, v)| *v)
                .chain(values.iter().copied())
                .fold((0i64, 0i64), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let size = if lo >= i8::MIN as i64 && hi <= i8::MAX as i64 {
                1
            } else if lo >= i16::MIN as i64 && hi <= i16::MAX as i64 {
                2
            } else if lo >= i32::MIN as i64 && hi <= i32::MAX as i64 {
                4
            } else {
                8
            };
            Datatype::Enum {
                base: Box::new(int(size, true)),
                members: members.clone(),
            }
        }
        Data::ArrayOf { dims, data } => {
            if dims.is_empty() || dims.contains(&0) {
                return invalid("array elements need non-empty, non-zero dims");
            }
            Datatype::Array {
                dims: dims.clone(),
                base: Box::new(dtype_for_sized(data, offset_size)?),
            }
        }
        Data::Opaque { size, tag, bytes } => {
            if *size == 0 || bytes.len() % size != 0 {
                return invalid("opaque data must be a whole number of elements");
            }
            Datatype::Opaque {
                size: *size,
                tag: tag.clone(),
            }
        }
        Data::Bitfield { size, .. } => {
            if !matches!(size, 1 | 2 | 4 | 8) {
                return invalid("bitfield size must be 1, 2, 4 or 8");
            }
            Datatype::Bitfield {
                size: *size,
                be: false,
            }
        }
        Data::VarLen(seqs) => {
            let base = match seqs.first() {
                Some(d) => dtype_for_sized(d, offset_size)?,
                None => int(1, false),
            };
            for d in seqs {
                if dtype_for_sized(d, offset_size)? != base {
                    return invalid(
                        "variable-length sequences must all have the same element type",
                    );
                }
            }
            Datatype::VarSeq(Box::new(base), vlen_size)
        }
        Data::ObjectRef(_) => {
            return unsupported("writing object references");
        }
        Data::RegionRef(_) | Data::Ref(_) => {
            return unsupported("writing region or HDF5 1.12 references");
        }
    })
}

/// Appends numeric `values` as little-endian bytes: copied as they are on a little-endian host (HDF5's on-disk
/// order is what the writer declares: LE), element by element with `put` elsewhere.
fn put_le<T: bytemuck::Pod>(out: &mut Vec<u8>, values: &[T], put: impl Fn(&mut Vec<u8>, &T)) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(values));
    } else {
        values.iter().for_each(|x| put(out, x));
    }
}

/// Appends to `out` one variable-length string element (length, heap ID) per body, each body stored
/// in `sink` as a heap object (an empty one as the null ID).
pub fn encode_vlen_strs<'a, S: VlenSink + ?Sized>(
    bodies: impl Iterator<Item = &'a [u8]>,
    sink: &mut S,
    out: &mut Vec<u8>,
) -> Result<()> {
    let so = sink.offset_size();
    if !(1..=8).contains(&so) {
        return invalid(format!("heap IDs of {so}-byte addresses"));
    }
    for b in bodies {
        let len = u32::try_from(b.len()).or_else(|_| invalid("string longer than 4 GiB"))?;
        let (coll, idx) = if b.is_empty() { (0, 0) } else { sink.put(b)? };
        // The element (length, collection address, index) assembled in a register and appended as 16
        // bytes, then the bytes past a narrower ID dropped: byte-wise assembly in memory would be read
        // back as one 16-byte load, which the CPU cannot forward from the smaller stores (a stall).
        let element = u128::from(len) | u128::from(coll) << 32 | u128::from(idx) << (32 + 8 * so);
        out.extend_from_slice(&element.to_le_bytes());
        out.truncate(out.len() - (8 - so));
    }
    Ok(())
}

/// Encodes `data` as raw little-endian elements of the writer's datatype for it (in the sink's file: its
/// address width sets variable-length elements').
pub fn encode<S: VlenSink + ?Sized>(data: &Data, sink: &mut S) -> Result<Vec<u8>> {
    let so = sink.offset_size();
    let elem = dtype_for_sized(data, so).map_or(8, |d| d.size());
    let mut out = Vec::with_capacity(data.len().saturating_mul(elem).min(1 << 30));
    crate::hugepages::advise_spare(&mut out);
    encode_into(data, sink, &mut out)?;
    Ok(out)
}

/// [`encode`] appending to `out` (what an attribute message does with its value, after its header).
pub fn encode_into<S: VlenSink + ?Sized>(
    data: &Data,
    sink: &mut S,
    out: &mut Vec<u8>,
) -> Result<()> {
    let so = sink.offset_size();
    let out_start = out.len();
    match data {
        Data::I8(v) => out.extend(v.iter().map(|x| *x as u8)),
        Data::U8(v) => out.extend_from_slice(v),
        Data::I16(v) => put_le(out, v, |o, x| o.put_u16(*x as u16)),
        Data::U16(v) => put_le(out, v, |o, x| o.put_u16(*x)),
        Data::I32(v) => put_le(out, v, |o, x| o.put_u32(*x as u32)),
        Data::U32(v) => put_le(out, v, |o, x| o.put_u32(*x)),
        Data::I64(v) => put_le(out, v, |o, x| o.put_u64(*x as u64)),
        Data::I128(v) => put_le(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Data::U128(v) => put_le(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Data::U64(v) => put_le(out, v, |o, x| o.put_u64(*x)),
        Data::F16(v) => put_le(out, v, |o, x| o.put_u16(x.to_bits())),
        Data::F32(v) => put_le(out, v, |o, x| o.put_u32(x.to_bits())),
        Data::F64(v) => put_le(out, v, |o, x| o.put_u64(x.to_bits())),
        Data::FixedStr { len, values } => {
            for s in values {
                let b = s.as_bytes();
                if b.len() > *len {
                    return invalid(format!(
                        "string of {} bytes does not fit fixed length {len}",
                        b.len()
                    ));
                }
                out.extend_from_slice(b);
                out.resize(out.len() + len - b.len(), 0);
            }
        }
        Data::VarStr(v) => encode_vlen_strs(v.iter().map(|s| s.as_bytes()), sink, out)?,
        Data::Compound(fields) => {
            let dt = dtype_for_sized(data, so)?;
            let (size, members) = match &dt {
                Datatype::Compound { size, members } => (*size, members),
                _ => return invalid("compound layout"),
            };
            let n = data.len();
            out.resize(out_start + n * size, 0);
            let rows = &mut out[out_start..];
            for ((_, d), m) in fields.iter().zip(members) {
                let buf = encode(d, sink)?;
                let ms = m.dtype.size();
                for i in 0..n {
                    rows[i * size + m.offset..i * size + m.offset + ms]
                        .copy_from_slice(&buf[i * ms..(i + 1) * ms]);
                }
            }
        }
        Data::Enum { values, .. } => {
            let size = dtype_for_sized(data, so)?.size();
            for v in values {
                out.extend_from_slice(&v.to_le_bytes()[..size]);
            }
        }
        Data::ArrayOf { data: inner, .. } => encode_into(inner, sink, out)?,
        Data::Opaque { bytes, .. } => out.extend_from_slice(bytes),
        Data::Bitfield { size, values } => {
            for v in values {
                out.extend_from_slice(&v.to_le_bytes()[..*size]);
            }
        }
        Data::VarLen(seqs) => {
            for d in seqs {
                let body = encode(d, sink)?;
                let (coll, idx) = if d.is_empty() {
                    (0, 0)
                } else {
                    sink.put(&body)?
                };
                out.put_u32(d.len() as u32);
                out.put_uint(coll, so);
                out.put_u32(idx);
            }
        }
        Data::ObjectRef(_) => return unsupported("writing object references"),
        Data::RegionRef(_) | Data::Ref(_) => {
            return unsupported("writing region or HDF5 1.12 references")
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::StrPad;

    /// `any_wide_int` bit by bit: the field's bits, sign-extended, or `None` past 128 bits.
    fn wide_reference(raw: &[u8], be: bool, signed: bool, o: usize, p: usize) -> Option<u128> {
        let le: Vec<u8> = if be {
            raw.iter().rev().copied().collect()
        } else {
            raw.to_vec()
        };
        let bit = |i: usize| (le[i / 8] >> (i % 8)) & 1 == 1;
        let sign = signed && bit(o + p - 1);
        let mut v = 0u128;
        for j in 0..128 {
            let b = if j < p { bit(o + j) } else { sign };
            v |= u128::from(b) << j;
        }
        let fits =
            (128..p).all(|j| bit(o + j) == sign) && (!signed || p <= 128 || bit(o + 127) == sign);
        fits.then_some(v)
    }

    #[test]
    fn integers_wider_than_16_bytes_read_as_bit_by_bit() {
        let mut rng = crate::test_rng::TestRng::new(17);
        for round in 0..4000 {
            let size = 17 + (rng.next() % 24) as usize;
            let bits = size * 8;
            let o = (rng.next() % (bits as u64 - 1)) as usize;
            let p = 1 + (rng.next() % (bits - o) as u64) as usize;
            let (be, signed) = (rng.next() & 1 == 1, rng.next() & 1 == 1);
            // Mostly values that fit: the high part all sign bits (or zeros); some random.
            let mut raw: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
            if round % 4 != 0 {
                let fill = if rng.next() & 1 == 1 { 0xff } else { 0 };
                for b in raw.iter_mut().skip((o + 120) / 8 + 1) {
                    *b = fill;
                }
                if be {
                    raw.reverse();
                }
            }
            let got = any_wide_int(&raw, be, signed, o as u16, p as u16).ok();
            assert_eq!(
                got,
                wide_reference(&raw, be, signed, o, p),
                "size {size} offset {o} precision {p} be {be} signed {signed}"
            );
        }
    }

    /// A file with no global heap: every variable-length reference is missing.
    struct NoHeap;

    impl VlenSource for NoHeap {
        fn offset_size(&self) -> usize {
            8
        }
        fn vlen_object(&self, coll: u64, _index: u32) -> Result<&[u8]> {
            corrupt(format!("no collection at {coll:#x}"))
        }
    }

    /// One collection at address 8 of `file`, read in stored order or by index.
    struct OneCollection {
        file: Vec<u8>,
    }

    impl VlenSource for OneCollection {
        fn offset_size(&self) -> usize {
            8
        }
        fn vlen_object(&self, coll: u64, index: u32) -> Result<&[u8]> {
            let ctx = self.ctx();
            let ix = crate::heap::global::read_collection(&ctx, coll)?;
            let (start, len) = ix
                .get(index as u16)
                .ok_or_else(|| crate::FormatError::Corrupt(format!("object {index} missing")))?;
            Ok(&self.file[start..start + len])
        }
        fn vlen_in_order(&self, coll: u64) -> Option<InOrder<'_>> {
            let block = crate::heap::global::collection_block(&self.ctx(), coll).ok()?;
            Some(InOrder::new(block, 8))
        }
    }

    impl OneCollection {
        fn ctx(&self) -> crate::ctx::Ctx<'_> {
            crate::ctx::Ctx {
                data: &self.file,
                so: 8,
                sl: 8,
                base: 0,
            }
        }
    }

    #[test]
    fn strings_read_alike_in_stored_order_or_any_other() {
        let mut file = vec![0u8; 8];
        let mut b = crate::heap::global::CollectionBuilder::start(&mut file);
        for s in ["one", "two", "three\0cut", "four"] {
            b.add(&mut file, s.as_bytes());
        }
        b.finish(&mut file);
        let src = OneCollection { file };
        let element = |len: u32, idx: u32| {
            let mut e = len.to_le_bytes().to_vec();
            e.extend_from_slice(&8u64.to_le_bytes());
            e.extend_from_slice(&idx.to_le_bytes());
            e
        };
        let dt = Datatype::VarStr {
            utf8: true,
            size: 16,
        };
        let orders: [&[u32]; 4] = [&[1, 2, 3, 4], &[3, 1, 2, 4], &[1, 2, 1, 2], &[2, 3, 4, 1]];
        let names = ["", "one", "two", "three", "four"];
        for order in orders {
            let mut raw = Vec::new();
            for &i in order {
                raw.extend(element(9, i));
            }
            // An empty element after them (a null heap ID).
            raw.extend([0u8; 16]);
            let want: Vec<String> = order
                .iter()
                .map(|&i| names[i as usize].to_string())
                .chain([String::new()])
                .collect();
            let got = decode(&dt, &raw, order.len() + 1, &src).unwrap();
            assert_eq!(got, Data::VarStr(want.clone()), "{order:?}");
            let col = decode_strings(&dt, &raw, order.len() + 1, &src).unwrap();
            assert_eq!(col.to_vec(), want, "{order:?}");
        }
        // An element naming an object the collection lacks is an error either way.
        let raw = [element(3, 1), element(3, 9)].concat();
        assert!(decode(&dt, &raw, 2, &src).is_err());
        assert!(decode_strings(&dt, &raw, 2, &src).is_err());
    }

    #[test]
    fn damaged_datatypes_are_errors_even_with_no_elements() {
        let int = |size| Datatype::Int {
            size,
            signed: true,
            be: false,
            offset: 0,
            precision: 8,
        };
        for dt in [
            Datatype::FixedStr {
                size: 0,
                pad: StrPad::NullTerm,
                utf8: false,
            },
            Datatype::Reference { size: 0, kind: 0 },
            Datatype::Array {
                dims: vec![0, 3],
                base: Box::new(int(2)),
            },
            // Dimensions whose product overflows.
            Datatype::Array {
                dims: vec![u64::MAX, u64::MAX],
                base: Box::new(int(2)),
            },
        ] {
            for n in [0, 1] {
                assert!(
                    decode(&dt, &[0u8; 64], n, &NoHeap).is_err(),
                    "{dt:?} with {n} elements"
                );
            }
        }
        // A sequence of 2-byte ints whose reference points at no heap: an error, not a panic.
        let seq = Datatype::VarSeq(Box::new(int(2)), 16);
        let mut raw = vec![0u8; 16];
        raw[0] = 1;
        raw[4] = 0x40;
        assert!(decode(&seq, &raw, 1, &NoHeap).is_err());
    }

    #[test]
    fn decoded_sizes_cover_what_decoding_allocates() {
        let int = |size| Datatype::Int {
            size,
            signed: false,
            be: false,
            offset: 0,
            precision: (size * 8) as u16,
        };
        assert_eq!(int(1).decoded_size(), 1);
        assert_eq!(int(3).decoded_size(), 4);
        let vs = Datatype::VarStr {
            utf8: true,
            size: 16,
        };
        assert!(vs.decoded_size() >= std::mem::size_of::<String>());
        assert!(
            Datatype::VarSeq(Box::new(int(1)), 16).decoded_size() >= std::mem::size_of::<Data>()
        );
        let fixed = Datatype::FixedStr {
            size: 1,
            pad: StrPad::NullPad,
            utf8: false,
        };
        assert!(fixed.decoded_size() > std::mem::size_of::<String>());
        let arr = Datatype::Array {
            dims: vec![u64::MAX, 2],
            base: Box::new(int(1)),
        };
        assert_eq!(arr.decoded_size(), usize::MAX);
    }
}
