//! Encoding values into a datatype someone else chose: rows appended to or written over a dataset in an
//! existing file take that dataset's element type, whatever writer defined it (big-endian or narrower
//! integers, enums with other base types or values, compounds with other member orders, offsets and gaps,
//! arrays, fixed strings with other padding, bitfields, opaque bytes, complex numbers, variable-length data).
//!
//! Values convert as libhdf5's `H5Dwrite` converts them where no information is lost: integers between
//! widths, signedness and byte orders when they fit (a value that does not fit is an error, not clamped),
//! integers to floats, floats between IEEE widths (rounded to nearest) and byte orders, enum members by
//! name, compound members by name. Everything else is a type mismatch naming both types.

use crate::array::Data;
use crate::convert::{dtype_for, encode, VlenSink};
use crate::datatype::{Datatype, StrPad};
use crate::error::{FormatError, Result};

/// Raw elements of `dt` (file byte order) holding `data`; variable-length bodies go to `sink`.
pub(crate) fn encode_as<S: VlenSink + ?Sized>(
    dt: &Datatype,
    data: &Data,
    sink: &mut S,
) -> Result<Vec<u8>> {
    // Values already of this exact type encode as the writer encodes them.
    if dtype_for(data).ok().as_ref() == Some(dt) {
        return encode(data, sink);
    }
    let n = data.len();
    let mismatch = || {
        FormatError::TypeMismatch(format!(
            "values of {} cannot be stored as {}",
            data.type_name(),
            dt.describe()
        ))
    };
    match dt {
        Datatype::Int { size, .. } => {
            let mut out = vec![0u8; n * size];
            // u128 values above i128's range convert only unsigned.
            if let Data::U128(v) = data {
                for (v, slot) in v.iter().zip(out.chunks_exact_mut(*size)) {
                    put_uint(dt, *v, slot)?;
                }
                return Ok(out);
            }
            let ints = integers(data).ok_or_else(mismatch)?;
            for (v, slot) in ints.iter().zip(out.chunks_exact_mut(*size)) {
                put_int(dt, *v, slot)?;
            }
            Ok(out)
        }
        Datatype::Enum { base, members } => {
            let Data::Enum {
                values,
                members: theirs,
            } = data
            else {
                return Err(mismatch());
            };
            let size = base.size();
            let mut out = vec![0u8; n * size];
            for (v, slot) in values.iter().zip(out.chunks_exact_mut(size)) {
                // The member of that value in the data's own table, then that member's value in the file's.
                let name = theirs
                    .iter()
                    .find(|(_, x)| x == v)
                    .map(|(name, _)| name)
                    .ok_or_else(|| {
                        FormatError::Invalid(format!("enum value {v} names no member"))
                    })?;
                let ours = members
                    .iter()
                    .find(|(m, _)| m == name)
                    .map(|(_, x)| *x)
                    .ok_or_else(|| {
                        FormatError::TypeMismatch(format!(
                            "enum member {name:?} is not a member of {}",
                            dt.describe()
                        ))
                    })?;
                put_int(base, i128::from(ours), slot)?;
            }
            Ok(out)
        }
        Datatype::Bitfield { size, be } => {
            let bits: Vec<u64> = match data {
                Data::Bitfield { values, .. } => values.clone(),
                Data::U128(v) => v
                    .iter()
                    .map(|x| {
                        u64::try_from(*x).map_err(|_| {
                            FormatError::Invalid(format!(
                                "bitfield value {x:#x} does not fit {size} bytes"
                            ))
                        })
                    })
                    .collect::<Result<_>>()?,
                _ => integers(data)
                    .ok_or_else(mismatch)?
                    .into_iter()
                    .map(|v| u64::try_from(v).map_err(|_| negative_bits(v)))
                    .collect::<Result<_>>()?,
            };
            let mut out = vec![0u8; n * size];
            for (v, slot) in bits.iter().zip(out.chunks_exact_mut(*size)) {
                if *size < 8 && *v >> (size * 8) != 0 {
                    return Err(FormatError::Invalid(format!(
                        "bitfield value {v:#x} does not fit {size} bytes"
                    )));
                }
                put_bytes(&v.to_le_bytes(), slot, *be);
            }
            Ok(out)
        }
        Datatype::Float { .. } => {
            let floats = floats(data).ok_or_else(mismatch)?;
            // bfloat16, FP8, x87 extended, binary128 and other layouts: rounded by IEEE's rules.
            let Some((size, be)) = dt.ieee_layout() else {
                return crate::float_layout::encode(dt, &floats);
            };
            let mut out = vec![0u8; n * size];
            for (v, slot) in floats.iter().zip(out.chunks_exact_mut(size)) {
                let le: Vec<u8> = match size {
                    2 => half::f16::from_f64(*v).to_le_bytes().to_vec(),
                    4 => (*v as f32).to_le_bytes().to_vec(),
                    _ => v.to_le_bytes().to_vec(),
                };
                put_bytes(&le, slot, be);
            }
            Ok(out)
        }
        Datatype::FixedStr { size, pad, .. } => {
            let values = match data {
                Data::FixedStr { values, .. } | Data::VarStr(values) => values,
                _ => return Err(mismatch()),
            };
            let fill = if *pad == StrPad::SpacePad { b' ' } else { 0 };
            let mut out = vec![fill; n * size];
            for (s, slot) in values.iter().zip(out.chunks_exact_mut(*size)) {
                let b = s.as_bytes();
                if b.len() > *size {
                    return Err(FormatError::Invalid(format!(
                        "string of {} bytes does not fit {}",
                        b.len(),
                        dt.describe()
                    )));
                }
                slot[..b.len()].copy_from_slice(b);
            }
            Ok(out)
        }
        Datatype::VarStr { size, .. } | Datatype::VarSeq(_, size)
            if *size != 8 + sink.offset_size() =>
        {
            Err(FormatError::Unsupported(format!(
                "writing variable-length elements of {size} bytes into a file of {}-byte addresses",
                sink.offset_size()
            )))
        }
        Datatype::VarStr { .. } => match data {
            Data::VarStr(_) => encode(data, sink),
            Data::FixedStr { values, .. } => encode(&Data::VarStr(values.clone()), sink),
            _ => Err(mismatch()),
        },
        Datatype::Compound { size, members } => {
            let Data::Compound(fields) = data else {
                return Err(mismatch());
            };
            let mut out = vec![0u8; n * size];
            for m in members {
                let column = fields
                    .iter()
                    .find(|(name, _)| *name == m.name)
                    .map(|(_, d)| d)
                    .ok_or_else(|| {
                        FormatError::TypeMismatch(format!(
                            "the values have no member {:?} of {}",
                            m.name,
                            dt.describe()
                        ))
                    })?;
                scatter(
                    &mut out,
                    *size,
                    m.offset,
                    &encode_as(&m.dtype, column, sink)?,
                )?;
            }
            Ok(out)
        }
        Datatype::Complex { size, base } => {
            // Read as the compound {r, i}: written back the same way.
            let Data::Compound(fields) = data else {
                return Err(mismatch());
            };
            let part = |name: &str| {
                fields
                    .iter()
                    .find(|(f, _)| f == name)
                    .map(|(_, d)| d)
                    .ok_or_else(mismatch)
            };
            let half_size = base.size();
            let mut out = vec![0u8; n * size];
            scatter(&mut out, *size, 0, &encode_as(base, part("r")?, sink)?)?;
            scatter(
                &mut out,
                *size,
                half_size,
                &encode_as(base, part("i")?, sink)?,
            )?;
            Ok(out)
        }
        Datatype::Array { dims, base } => match data {
            // Each element's values are contiguous and row-major: the inner values in order are the elements.
            Data::ArrayOf { dims: d, data } if d == dims => encode_as(base, data, sink),
            _ => Err(mismatch()),
        },
        Datatype::Opaque { size, .. } => match data {
            Data::Opaque { size: s, bytes, .. } if s == size => Ok(bytes.clone()),
            _ => Err(mismatch()),
        },
        Datatype::VarSeq(base, _) => {
            let Data::VarLen(seqs) = data else {
                return Err(mismatch());
            };
            let mut out = Vec::with_capacity(n * 16);
            for seq in seqs {
                let body = encode_as(base, seq, sink)?;
                let len = u32::try_from(seq.len()).map_err(|_| {
                    FormatError::Invalid("sequence of more than 2^32 elements".into())
                })?;
                let (coll, idx) = if seq.is_empty() {
                    (0, 0)
                } else {
                    sink.put(&body)?
                };
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(&coll.to_le_bytes()[..sink.offset_size()]);
                out.extend_from_slice(&idx.to_le_bytes());
            }
            Ok(out)
        }
        Datatype::Time { size, be } => time_values(*size, *be, data).ok_or_else(mismatch)?,
        Datatype::Reference { .. } => Err(FormatError::Unsupported(format!(
            "writing values as {}",
            dt.describe()
        ))),
    }
}

/// Elements of the time class as PyTables stores them, its one writer: 4 bytes, signed whole seconds; 8 bytes,
/// a timeval of signed seconds (high 32 bits) and microseconds (low 32 bits, the sign of the seconds' rest),
/// the seconds truncated toward zero and the microseconds rounded, as PyTables converts a float. `None` when
/// `data` holds no numbers.
fn time_values(size: usize, be: bool, data: &Data) -> Option<Result<Vec<u8>>> {
    let seconds = |v: f64| -> Result<i32> {
        let s = v.trunc();
        if !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&s) {
            return Err(FormatError::Invalid(format!(
                "time {v} is outside the 32-bit seconds of the time class"
            )));
        }
        Ok(s as i32)
    };
    let order = |le: [u8; 8], n: usize| -> Vec<u8> {
        let mut b = le[..n].to_vec();
        if be {
            b.reverse();
        }
        b
    };
    let values: Vec<f64> = match data {
        Data::F16(_) | Data::F32(_) | Data::F64(_) => floats(data)?,
        _ => integers(data)?.into_iter().map(|v| v as f64).collect(),
    };
    let mut out = Vec::with_capacity(values.len() * size);
    for v in values {
        let r = match size {
            4 => seconds(v).and_then(|s| {
                if f64::from(s) == v {
                    Ok(order(i64::from(s).to_le_bytes(), 4))
                } else {
                    Err(FormatError::Invalid(format!(
                        "time {v} is not a whole number of seconds (a 4-byte time holds seconds)"
                    )))
                }
            }),
            8 => seconds(v).map(|s| {
                let micros = ((v - f64::from(s)) * 1e6).round() as i64;
                let word = (u64::from(s as u32) << 32) | (micros as u64 & 0xffff_ffff);
                order(word.to_le_bytes(), 8)
            }),
            _ => Err(FormatError::Unsupported(format!(
                "writing time values of {size} bytes"
            ))),
        };
        match r {
            Ok(b) => out.extend_from_slice(&b),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(out))
}

fn negative_bits(v: i128) -> FormatError {
    FormatError::Invalid(format!("bitfield value {v} is negative"))
}

/// Copies `column` (elements of `column.len() / n` bytes) into each `stride`-byte element of `out` at
/// `offset`.
fn scatter(out: &mut [u8], stride: usize, offset: usize, column: &[u8]) -> Result<()> {
    let n = out.len() / stride.max(1);
    if n == 0 {
        return Ok(());
    }
    let width = column.len() / n;
    if width * n != column.len() || offset + width > stride {
        return Err(FormatError::Corrupt(
            "compound member outside its element".into(),
        ));
    }
    for (i, v) in column.chunks_exact(width).enumerate() {
        let at = i * stride + offset;
        out[at..at + width].copy_from_slice(v);
    }
    Ok(())
}

/// Writes little-endian `le` into `slot` in the slot's byte order, zero-extended where the slot is wider
/// (a bitfield of more than 8 bytes, say) and cut to the slot where it is narrower.
fn put_bytes(le: &[u8], slot: &mut [u8], be: bool) {
    let n = slot.len().min(le.len());
    slot[..n].copy_from_slice(&le[..n]);
    slot[n..].fill(0);
    if be {
        slot.reverse();
    }
}

/// Integer values of `data`, when it holds integers.
fn integers(data: &Data) -> Option<Vec<i128>> {
    fn all<T: Copy + Into<i128>>(v: &[T]) -> Vec<i128> {
        v.iter().map(|x| (*x).into()).collect()
    }
    Some(match data {
        Data::I8(v) => all(v),
        Data::I16(v) => all(v),
        Data::I32(v) => all(v),
        Data::I64(v) => all(v),
        Data::I128(v) => v.clone(),
        Data::U8(v) => all(v),
        Data::U16(v) => all(v),
        Data::U32(v) => all(v),
        Data::U64(v) => all(v),
        Data::Bitfield { values, .. } => all(values),
        _ => return None,
    })
}

/// Float values of `data`, when it holds floats or integers.
fn floats(data: &Data) -> Option<Vec<f64>> {
    Some(match data {
        Data::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
        Data::F32(v) => v.iter().map(|x| f64::from(*x)).collect(),
        Data::F64(v) => v.clone(),
        Data::U128(v) => v.iter().map(|x| *x as f64).collect(),
        _ => integers(data)?.into_iter().map(|v| v as f64).collect(),
    })
}

/// The sign, byte order, bit offset and precision of integer type `dt` for a slot of its size; the type must
/// fit the slot (and 128 bits).
fn int_layout(dt: &Datatype, slot: &[u8]) -> Result<(bool, bool, u32, u32)> {
    let Datatype::Int {
        signed,
        be,
        offset,
        precision,
        ..
    } = dt
    else {
        return Err(FormatError::TypeMismatch(format!(
            "enum base {} is not an integer",
            dt.describe()
        )));
    };
    let (o, p) = (u32::from(*offset), u32::from(*precision));
    let room = u32::try_from(slot.len() * 8).unwrap_or(u32::MAX);
    if p == 0 || o + p > room {
        return Err(FormatError::Corrupt(format!(
            "integer type of {} bytes with {p} bits at bit {offset}",
            slot.len()
        )));
    }
    Ok((*signed, *be, o, p))
}

/// Writes the low `p` bits of `bits`, shifted to bit `o`, into `slot` in its byte order; a field wider than
/// 128 bits gets `extend` (the sign of a negative value) in its bits from 128 on.
fn put_field(bits: u128, extend: bool, o: u32, p: u32, be: bool, slot: &mut [u8]) {
    if o + p <= 128 {
        let mask = if p >= 128 { !0 } else { (1u128 << p) - 1 };
        put_bytes(&((bits & mask) << o).to_le_bytes(), slot, be);
        return;
    }
    let mut le = vec![0u8; slot.len()];
    for j in 0..p {
        let one = if j < 128 {
            (bits >> j) & 1 == 1
        } else {
            extend
        };
        if one {
            let at = (o + j) as usize;
            le[at / 8] |= 1 << (at % 8);
        }
    }
    put_bytes(&le, slot, be);
}

/// Stores integer `v` in `slot` as the integer type `dt` defines it (precision bits at a bit offset, byte
/// order); a value outside the type's range is an error.
fn put_int(dt: &Datatype, v: i128, slot: &mut [u8]) -> Result<()> {
    if v >= 0 {
        return put_uint(dt, v as u128, slot);
    }
    let (signed, be, o, p) = int_layout(dt, slot)?;
    // The most negative value of p bits is -2^(p-1).
    if !signed || (p < 128 && v < -(1i128 << (p - 1))) {
        return Err(FormatError::Invalid(format!(
            "value {v} does not fit {}",
            dt.describe()
        )));
    }
    put_field(v as u128, true, o, p, be, slot);
    Ok(())
}

/// [`put_int`] of a non-negative value.
fn put_uint(dt: &Datatype, v: u128, slot: &mut [u8]) -> Result<()> {
    let (signed, be, o, p) = int_layout(dt, slot)?;
    let value_bits = 128 - v.leading_zeros();
    if value_bits > p - u32::from(signed) {
        return Err(FormatError::Invalid(format!(
            "value {v} does not fit {}",
            dt.describe()
        )));
    }
    put_field(v, false, o, p, be, slot);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::Member;

    /// Variable-length bodies kept in a list (collection 1, index = position).
    struct Bodies(Vec<Vec<u8>>);

    impl VlenSink for Bodies {
        fn put(&mut self, bytes: &[u8]) -> Result<(u64, u32)> {
            self.0.push(bytes.to_vec());
            Ok((1, self.0.len() as u32))
        }
    }

    fn int(size: usize, signed: bool, be: bool) -> Datatype {
        Datatype::Int {
            size,
            signed,
            be,
            offset: 0,
            precision: (size * 8) as u16,
        }
    }

    fn enc(dt: &Datatype, data: &Data) -> Result<Vec<u8>> {
        encode_as(dt, data, &mut Bodies(Vec::new()))
    }

    #[test]
    fn integers_change_width_and_byte_order_when_they_fit() {
        let be16 = int(2, true, true);
        assert_eq!(
            enc(&be16, &Data::I64(vec![1, -2])).unwrap(),
            [0, 1, 0xff, 0xfe]
        );
        assert!(matches!(
            enc(&be16, &Data::I64(vec![40_000])),
            Err(FormatError::Invalid(_))
        ));
        assert!(enc(&int(1, false, false), &Data::I8(vec![-1])).is_err());
        // Reduced precision at a bit offset.
        let packed = Datatype::Int {
            size: 2,
            signed: false,
            be: false,
            offset: 4,
            precision: 6,
        };
        assert_eq!(enc(&packed, &Data::U8(vec![0x3f])).unwrap(), [0xf0, 0x03]);
        assert!(enc(&packed, &Data::U8(vec![0x40])).is_err());
        assert!(enc(&be16, &Data::F32(vec![1.0])).is_err());
    }

    #[test]
    fn integers_reach_the_ends_of_128_bit_types() {
        let (i128be, u128le) = (int(16, true, true), int(16, false, false));
        assert_eq!(
            enc(&i128be, &Data::I128(vec![i128::MIN])).unwrap(),
            i128::MIN.to_be_bytes()
        );
        assert_eq!(
            enc(&i128be, &Data::U64(vec![u64::MAX])).unwrap(),
            i128::from(u64::MAX).to_be_bytes()
        );
        assert!(enc(&i128be, &Data::U128(vec![1 << 127])).is_err());
        assert_eq!(
            enc(&u128le, &Data::U128(vec![u128::MAX])).unwrap(),
            [0xff; 16]
        );
        assert!(enc(&u128le, &Data::I128(vec![-1])).is_err());
        // 72 bits at bit 5 of 10 bytes, signed: from -2^71 to 2^71 - 1.
        let odd = Datatype::Int {
            size: 10,
            signed: true,
            be: false,
            offset: 5,
            precision: 72,
        };
        let lowest = enc(&odd, &Data::I128(vec![-(1 << 71)])).unwrap();
        assert_eq!(lowest, ((1u128 << 71) << 5).to_le_bytes()[..10]);
        assert!(enc(&odd, &Data::I128(vec![-(1 << 71) - 1])).is_err());
        assert!(enc(&odd, &Data::I128(vec![1 << 71])).is_err());
        let back = crate::convert::decode(&odd, &lowest, 1, &NoVlen).unwrap();
        assert_eq!(back, Data::I128(vec![-(1 << 71)]));
    }

    #[test]
    fn odd_width_signed_integers_sign_extend() {
        for (size, want) in [
            (3usize, Data::I32(vec![-1, -2])),
            (5, Data::I64(vec![-1, -2])),
        ] {
            let dt = int(size, true, false);
            let mut raw = vec![0xff; size];
            raw.extend(vec![0xff; size]);
            raw[size] = 0xfe;
            let back = crate::convert::decode(&dt, &raw, 2, &NoVlen).unwrap();
            assert_eq!(back, want, "{size} bytes");
        }
    }

    struct NoVlen;

    impl crate::convert::VlenSource for NoVlen {
        fn offset_size(&self) -> usize {
            8
        }
        fn vlen_object(&self, _: u64, _: u32) -> Result<&[u8]> {
            Err(FormatError::Corrupt("no heap".into()))
        }
    }

    #[test]
    fn floats_round_to_the_stored_width_and_order() {
        let be32 = Datatype::ieee_float(4, true);
        assert_eq!(
            enc(&be32, &Data::F64(vec![1.5])).unwrap(),
            1.5f32.to_be_bytes()
        );
        let le16 = Datatype::ieee_float(2, false);
        assert_eq!(
            enc(&le16, &Data::I32(vec![3])).unwrap(),
            half::f16::from_f32(3.0).to_le_bytes()
        );
    }

    #[test]
    fn enums_map_by_member_name() {
        let dt = Datatype::Enum {
            base: Box::new(int(1, false, false)),
            members: vec![("a".into(), 10), ("b".into(), 20)],
        };
        let data = Data::Enum {
            values: vec![1, 0],
            members: vec![("a".into(), 0), ("b".into(), 1)],
        };
        assert_eq!(enc(&dt, &data).unwrap(), [20, 10]);
        let stranger = Data::Enum {
            values: vec![0],
            members: vec![("c".into(), 0)],
        };
        assert!(matches!(
            enc(&dt, &stranger),
            Err(FormatError::TypeMismatch(_))
        ));
    }

    #[test]
    fn compounds_match_members_by_name_at_the_file_offsets() {
        let dt = Datatype::Compound {
            size: 12,
            members: vec![
                Member {
                    name: "y".into(),
                    offset: 0,
                    dtype: Datatype::ieee_float(4, true),
                },
                Member {
                    name: "x".into(),
                    offset: 8,
                    dtype: int(2, false, false),
                },
            ],
        };
        let data = Data::Compound(vec![
            ("x".into(), Data::U16(vec![7])),
            ("y".into(), Data::F32(vec![2.0])),
        ]);
        let mut want = vec![0u8; 12];
        want[..4].copy_from_slice(&2.0f32.to_be_bytes());
        want[8..10].copy_from_slice(&7u16.to_le_bytes());
        assert_eq!(enc(&dt, &data).unwrap(), want);
        let short = Data::Compound(vec![("x".into(), Data::U16(vec![7]))]);
        assert!(matches!(
            enc(&dt, &short),
            Err(FormatError::TypeMismatch(_))
        ));
    }

    #[test]
    fn strings_pad_as_the_type_says() {
        let dt = Datatype::FixedStr {
            size: 4,
            pad: StrPad::SpacePad,
            utf8: false,
        };
        assert_eq!(enc(&dt, &Data::VarStr(vec!["ab".into()])).unwrap(), b"ab  ");
        assert!(enc(&dt, &Data::VarStr(vec!["abcde".into()])).is_err());
        let vl = Datatype::VarStr {
            utf8: true,
            size: crate::datatype::VLEN_SIZE,
        };
        let mut bodies = Bodies(Vec::new());
        let raw = encode_as(
            &vl,
            &Data::FixedStr {
                len: 3,
                values: vec!["xyz".into()],
            },
            &mut bodies,
        )
        .unwrap();
        assert_eq!(raw.len(), 16);
        assert_eq!(bodies.0, vec![b"xyz".to_vec()]);
    }

    #[test]
    fn arrays_bitfields_and_sequences() {
        let arr = Datatype::Array {
            dims: vec![2],
            base: Box::new(int(2, true, true)),
        };
        let data = Data::ArrayOf {
            dims: vec![2],
            data: Box::new(Data::I32(vec![1, 2])),
        };
        assert_eq!(enc(&arr, &data).unwrap(), [0, 1, 0, 2]);
        let wrong = Data::ArrayOf {
            dims: vec![1],
            data: Box::new(Data::I32(vec![1])),
        };
        assert!(enc(&arr, &wrong).is_err());
        let bits = Datatype::Bitfield { size: 2, be: true };
        assert_eq!(
            enc(
                &bits,
                &Data::Bitfield {
                    size: 4,
                    values: vec![0x0102]
                }
            )
            .unwrap(),
            [1, 2]
        );
        assert!(enc(&bits, &Data::U32(vec![0x10000])).is_err());
        // Wider than a u64 (a damaged file's, say): the value zero-extended, in either byte order.
        for be in [false, true] {
            let wide = Datatype::Bitfield { size: 16, be };
            let got = enc(&wide, &Data::U64(vec![0x0102])).unwrap();
            let mut want = [0u8; 16];
            want[..2].copy_from_slice(&[2, 1]);
            if be {
                want.reverse();
            }
            assert_eq!(got, want);
        }
        let seq = Datatype::VarSeq(Box::new(int(2, false, true)), crate::datatype::VLEN_SIZE);
        let mut bodies = Bodies(Vec::new());
        let raw = encode_as(
            &seq,
            &Data::VarLen(vec![Data::U8(vec![1, 2]), Data::U8(vec![])]),
            &mut bodies,
        )
        .unwrap();
        assert_eq!(raw.len(), 32);
        assert_eq!(bodies.0, vec![vec![0, 1, 0, 2]]);
    }
}
