//! In-memory values: typed element vectors ([`Data`]) with a shape ([`Array`]).

use crate::error::{invalid, Result};
use half::f16;

/// Element data, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// Integers of 9 to 16 bytes (HDF5's 128-bit `H5T_STD_I128*`, or a writer's odd width), signed.
    I128(Vec<i128>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    /// Integers of 9 to 16 bytes, unsigned.
    U128(Vec<u128>),
    F16(Vec<f16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Variable-length UTF-8 strings (global heap).
    VarStr(Vec<String>),
    /// Fixed-size strings of `len` bytes each (values without padding).
    FixedStr {
        len: usize,
        values: Vec<String>,
    },
    /// Compound elements, stored column-wise: one `Data` per member, each with one entry per element
    /// (array members hold `dims`-many values per element, flattened).
    Compound(Vec<(String, Data)>),
    /// Enumeration: integer values plus the (name, value) table of the type.
    Enum {
        values: Vec<i64>,
        members: Vec<(String, i64)>,
    },
    /// Fixed-size array elements: each element is an array of shape `dims`; `data` is flattened.
    ArrayOf {
        dims: Vec<u64>,
        data: Box<Data>,
    },
    /// Opaque elements of `size` bytes each, with the type's tag.
    Opaque {
        size: usize,
        tag: String,
        bytes: Vec<u8>,
    },
    /// Bitfield elements of `size` bytes each, as unsigned integers.
    Bitfield {
        size: usize,
        values: Vec<u64>,
    },
    /// Object references (file addresses of the referenced object headers).
    ObjectRef(Vec<u64>),
    /// Dataset region references: an object and a selection of its elements each.
    RegionRef(Vec<crate::region::RegionRef>),
    /// HDF5 1.12 references (`H5T_STD_REF`): objects, regions or attributes, element by element.
    Ref(Vec<crate::region::Reference>),
    /// Variable-length sequences: one `Data` per element.
    VarLen(Vec<Data>),
}

impl Data {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::I8(v) => v.len(),
            Data::I16(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::I128(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::U16(v) => v.len(),
            Data::U32(v) => v.len(),
            Data::U64(v) => v.len(),
            Data::U128(v) => v.len(),
            Data::F16(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::VarStr(v) => v.len(),
            Data::FixedStr { values, .. } => values.len(),
            Data::Compound(fields) => fields.first().map(|(_, d)| d.len()).unwrap_or(0),
            Data::Enum { values, .. } => values.len(),
            Data::ArrayOf { dims, data } => {
                let per: u64 = dims.iter().product();
                if per == 0 {
                    0
                } else {
                    data.len() / per as usize
                }
            }
            Data::Opaque { size, bytes, .. } => {
                if *size == 0 {
                    0
                } else {
                    bytes.len() / size
                }
            }
            Data::Bitfield { values, .. } => values.len(),
            Data::ObjectRef(v) => v.len(),
            Data::RegionRef(v) => v.len(),
            Data::Ref(v) => v.len(),
            Data::VarLen(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A short name of the element type ("i32", "f64", "vlen-str", ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Data::I8(_) => "i8",
            Data::I16(_) => "i16",
            Data::I32(_) => "i32",
            Data::I64(_) => "i64",
            Data::I128(_) => "i128",
            Data::U8(_) => "u8",
            Data::U16(_) => "u16",
            Data::U32(_) => "u32",
            Data::U64(_) => "u64",
            Data::U128(_) => "u128",
            Data::F16(_) => "f16",
            Data::F32(_) => "f32",
            Data::F64(_) => "f64",
            Data::VarStr(_) => "vlen-str",
            Data::FixedStr { .. } => "fixed-str",
            Data::Compound(_) => "compound",
            Data::Enum { .. } => "enum",
            Data::ArrayOf { .. } => "array",
            Data::Opaque { .. } => "opaque",
            Data::Bitfield { .. } => "bitfield",
            Data::ObjectRef(_) => "object-ref",
            Data::RegionRef(_) => "region-ref",
            Data::Ref(_) => "ref",
            Data::VarLen(_) => "vlen-seq",
        }
    }

    /// Elements `start..start+count` (caller guarantees the range is in bounds).
    pub(crate) fn slice(&self, start: usize, count: usize) -> Data {
        let r = start..start + count;
        match self {
            Data::I8(v) => Data::I8(v[r].to_vec()),
            Data::I16(v) => Data::I16(v[r].to_vec()),
            Data::I32(v) => Data::I32(v[r].to_vec()),
            Data::I64(v) => Data::I64(v[r].to_vec()),
            Data::I128(v) => Data::I128(v[r].to_vec()),
            Data::U8(v) => Data::U8(v[r].to_vec()),
            Data::U16(v) => Data::U16(v[r].to_vec()),
            Data::U32(v) => Data::U32(v[r].to_vec()),
            Data::U64(v) => Data::U64(v[r].to_vec()),
            Data::U128(v) => Data::U128(v[r].to_vec()),
            Data::F16(v) => Data::F16(v[r].to_vec()),
            Data::F32(v) => Data::F32(v[r].to_vec()),
            Data::F64(v) => Data::F64(v[r].to_vec()),
            Data::VarStr(v) => Data::VarStr(v[r].to_vec()),
            Data::FixedStr { len, values } => Data::FixedStr {
                len: *len,
                values: values[r].to_vec(),
            },
            Data::Compound(f) => Data::Compound(
                f.iter()
                    .map(|(n, d)| (n.clone(), d.slice(start, count)))
                    .collect(),
            ),
            Data::Enum { values, members } => Data::Enum {
                values: values[r].to_vec(),
                members: members.clone(),
            },
            Data::ArrayOf { dims, data } => {
                let per = dims.iter().product::<u64>() as usize;
                Data::ArrayOf {
                    dims: dims.clone(),
                    data: Box::new(data.slice(start * per, count * per)),
                }
            }
            Data::Opaque { size, tag, bytes } => Data::Opaque {
                size: *size,
                tag: tag.clone(),
                bytes: bytes[start * size..(start + count) * size].to_vec(),
            },
            Data::Bitfield { size, values } => Data::Bitfield {
                size: *size,
                values: values[r].to_vec(),
            },
            Data::ObjectRef(v) => Data::ObjectRef(v[r].to_vec()),
            Data::RegionRef(v) => Data::RegionRef(v[r].to_vec()),
            Data::Ref(v) => Data::Ref(v[r].to_vec()),
            Data::VarLen(v) => Data::VarLen(v[r].to_vec()),
        }
    }
}

/// An n-dimensional array: a shape plus row-major element data.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Dimensions; empty for a scalar.
    pub shape: Vec<u64>,
    /// Elements, row-major; `shape.iter().product()` of them.
    pub data: Data,
}

macro_rules! accessor {
    ($name:ident, $variant:ident, $t:ty) => {
        /// The elements if they are of this type.
        pub fn $name(&self) -> Option<&[$t]> {
            match &self.data {
                Data::$variant(v) => Some(v),
                _ => None,
            }
        }
    };
}

/// Elements a shape holds (0 when any dimension is 0, however large the others); `None` when the product
/// overflows.
pub fn shape_elements(shape: &[u64]) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
}

impl Array {
    /// Whether the shape's product is the element count (an overflowing shape never is).
    pub fn shape_matches(&self) -> bool {
        shape_elements(&self.shape) == Some(self.data.len() as u64)
    }

    /// A scalar (shape `[]`); `data` should hold one element.
    pub fn scalar(data: Data) -> Self {
        Array {
            shape: vec![],
            data,
        }
    }

    /// A 1-D array of all of `data`.
    pub fn vector(data: Data) -> Self {
        Array {
            shape: vec![data.len() as u64],
            data,
        }
    }

    /// A 2-D array; fails unless `rows * cols` equals the element count.
    pub fn matrix(rows: u64, cols: u64, data: Data) -> Result<Self> {
        Self::new(vec![rows, cols], data)
    }

    /// An array of any shape; fails unless the shape's product equals the element count.
    pub fn new(shape: Vec<u64>, data: Data) -> Result<Self> {
        let n = shape_elements(&shape).unwrap_or(u64::MAX);
        if n != data.len() as u64 {
            return invalid(format!(
                "shape {:?} holds {} elements but data has {}",
                shape,
                n,
                data.len()
            ));
        }
        Ok(Array { shape, data })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    accessor!(as_u128, U128, u128);
    accessor!(as_i128, I128, i128);
    accessor!(as_u64, U64, u64);
    accessor!(as_i64, I64, i64);
    accessor!(as_u32, U32, u32);
    accessor!(as_i32, I32, i32);
    accessor!(as_u16, U16, u16);
    accessor!(as_i16, I16, i16);
    accessor!(as_u8, U8, u8);
    accessor!(as_i8, I8, i8);
    accessor!(as_f16, F16, f16);
    accessor!(as_f32, F32, f32);
    accessor!(as_f64, F64, f64);

    /// The strings of a variable-length or fixed-length string array.
    pub fn as_strings(&self) -> Option<&[String]> {
        match &self.data {
            Data::VarStr(v) => Some(v),
            Data::FixedStr { values, .. } => Some(values),
            _ => None,
        }
    }
}
