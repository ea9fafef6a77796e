//! [`Element`]: native numeric types that a caller's buffer holds, matched against file datatypes,
//! so reads can land straight in that buffer without a per-element conversion.

use crate::datatype::Datatype;
use half::f16;

mod sealed {
    pub trait Sealed {}
}

/// A plain number type (`u8`…`u64`, `i8`…`i64`, `f16`, `f32`, `f64`) that
/// [`Dataset::read_into`](crate::Dataset::read_into) fills in place.
pub trait Element: bytemuck::Pod + sealed::Sealed {
    /// `Some(big_endian)` when `dt` stores exactly this type at full precision, else `None`.
    fn stored_byte_order(dt: &Datatype) -> Option<bool>;
}

macro_rules! int_element {
    ($t:ty, $size:expr, $signed:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            fn stored_byte_order(dt: &Datatype) -> Option<bool> {
                match dt {
                    Datatype::Int {
                        size,
                        signed,
                        be,
                        offset: 0,
                        precision,
                    } if *size == $size
                        && *signed == $signed
                        && *precision as usize == $size * 8 =>
                    {
                        Some(*be)
                    }
                    _ => None,
                }
            }
        }
    };
}

int_element!(u8, 1, false);
int_element!(i8, 1, true);
int_element!(u16, 2, false);
int_element!(i16, 2, true);
int_element!(u32, 4, false);
int_element!(i32, 4, true);
int_element!(u64, 8, false);
int_element!(i64, 8, true);

macro_rules! float_element {
    ($t:ty, $size:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            fn stored_byte_order(dt: &Datatype) -> Option<bool> {
                match dt.ieee_layout() {
                    Some(($size, be)) => Some(be),
                    _ => None,
                }
            }
        }
    };
}

float_element!(f16, 2);
float_element!(f32, 4);
float_element!(f64, 8);

/// Reverses the bytes of every `size`-byte element of `bytes` in place.
pub(crate) fn swap_in_place(bytes: &mut [u8], size: usize) {
    if size > 1 {
        for c in bytes.chunks_exact_mut(size) {
            c.reverse();
        }
    }
}

/// True when elements stored with byte order `be` need swapping on this host.
pub(crate) fn needs_swap(be: bool) -> bool {
    be != cfg!(target_endian = "big")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_types_and_byte_order() {
        let f64be = Datatype::ieee_float(8, true);
        assert_eq!(f64::stored_byte_order(&f64be), Some(true));
        assert_eq!(f32::stored_byte_order(&f64be), None);
        // bfloat16 is two bytes but not binary16.
        let bf16 = Datatype::Float {
            size: 2,
            be: false,
            sign_loc: 15,
            exp_loc: 7,
            exp_size: 8,
            mant_loc: 0,
            mant_size: 7,
            bias: 127,
            norm: 2,
        };
        assert_eq!(f16::stored_byte_order(&bf16), None);
        let i16le = Datatype::Int {
            size: 2,
            signed: true,
            be: false,
            offset: 0,
            precision: 16,
        };
        assert_eq!(i16::stored_byte_order(&i16le), Some(false));
        assert_eq!(u16::stored_byte_order(&i16le), None);
        let reduced = Datatype::Int {
            size: 2,
            signed: true,
            be: false,
            offset: 0,
            precision: 12,
        };
        assert_eq!(i16::stored_byte_order(&reduced), None);
    }

    #[test]
    fn swaps_each_element() {
        let mut b = vec![1, 2, 3, 4, 5, 6, 7, 8];
        swap_in_place(&mut b, 4);
        assert_eq!(b, vec![4, 3, 2, 1, 8, 7, 6, 5]);
    }
}
