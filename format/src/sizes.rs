//! The widths of a file's address fields ("size of offsets") and length fields ("size of lengths"), which
//! its superblock sets once for every structure in it; the encoders write each field at these widths.

use crate::error::{FormatError, Result};
use crate::io::UNDEF;

/// A file's size of offsets and size of lengths, in bytes (2, 4 or 8 each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Bytes of every address field.
    pub offsets: usize,
    /// Bytes of every length field.
    pub lengths: usize,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes::DEFAULT
    }
}

/// The largest value a little-endian field of `n` bytes holds.
fn field_max(n: usize) -> u64 {
    if n >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * n)) - 1
    }
}

impl Sizes {
    /// 8-byte offsets and lengths, as [`crate::FileWriter`] writes them.
    pub const DEFAULT: Sizes = Sizes {
        offsets: 8,
        lengths: 8,
    };

    /// The undefined address at the offset width (all ones).
    pub fn undef(&self) -> u64 {
        field_max(self.offsets)
    }

    /// The largest length a length field holds.
    pub fn max_length(&self) -> u64 {
        field_max(self.lengths)
    }

    /// Whether the address `a` fits an offset field (below the undefined address, which is all ones).
    pub fn offset_fits(&self, a: u64) -> bool {
        a < self.undef()
    }

    /// An error unless the address (or end of file) `a`, named by `what`, fits an offset field.
    pub fn check_offset(&self, a: u64, what: &str) -> Result<()> {
        if self.offset_fits(a) {
            return Ok(());
        }
        Err(FormatError::too_wide(what, a, self.offsets))
    }

    /// An error unless the length `v`, named by `what`, fits a length field.
    pub fn check_length(&self, v: u64, what: &str) -> Result<()> {
        if v <= self.max_length() {
            return Ok(());
        }
        Err(FormatError::too_wide(what, v, self.lengths))
    }

    /// Appends the address `a` ([`UNDEF`] as all ones) at the offset width. Callers keep every address below
    /// the end of file, which the appender checks against this width before it writes anything.
    #[inline]
    pub fn put_offset(&self, out: &mut Vec<u8>, a: u64) {
        if self.offsets == 8 {
            // The common width: one 8-byte store, UNDEF as it is.
            out.extend_from_slice(&a.to_le_bytes());
            return;
        }
        let v = if a == UNDEF { self.undef() } else { a };
        out.extend_from_slice(&v.to_le_bytes()[..self.offsets]);
    }

    /// Appends the length `v` at the length width; `what` names it in the error when it does not fit.
    #[inline]
    pub fn put_length(&self, out: &mut Vec<u8>, v: u64, what: &str) -> Result<()> {
        if self.lengths == 8 {
            out.extend_from_slice(&v.to_le_bytes());
            return Ok(());
        }
        self.check_length(v, what)?;
        out.extend_from_slice(&v.to_le_bytes()[..self.lengths]);
        Ok(())
    }

    /// Bytes of a variable-length element (sequence length, then the global heap ID: collection address and
    /// object index).
    pub fn vlen_size(&self) -> usize {
        4 + self.offsets + 4
    }

    /// Bytes of a global heap ID (collection address, object index): a region reference's element.
    pub fn heap_id_size(&self) -> usize {
        self.offsets + 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_take_their_width_and_undefined_is_all_ones() {
        let s = Sizes {
            offsets: 4,
            lengths: 2,
        };
        let mut b = Vec::new();
        s.put_offset(&mut b, 0x1234);
        s.put_offset(&mut b, UNDEF);
        s.put_length(&mut b, 7, "n").unwrap();
        assert_eq!(b, [0x34, 0x12, 0, 0, 0xff, 0xff, 0xff, 0xff, 7, 0]);
        assert_eq!(s.undef(), 0xffff_ffff);
        assert_eq!(Sizes::DEFAULT.undef(), UNDEF);
    }

    #[test]
    fn values_too_wide_are_typed_errors_naming_the_field() {
        let s = Sizes {
            offsets: 4,
            lengths: 4,
        };
        let mut b = Vec::new();
        let e = s.put_length(&mut b, 1 << 32, "dimension 0").unwrap_err();
        assert!(matches!(&e, FormatError::TooWide(o) if o.bytes == 4), "{e}");
        assert!(e.to_string().contains("dimension 0"), "{e}");
        assert!(b.is_empty());
        assert!(s.check_offset(0xffff_fffe, "end of file").is_ok());
        assert!(s.check_offset(0xffff_ffff, "end of file").is_err());
        assert!(Sizes::DEFAULT.check_length(u64::MAX, "x").is_ok());
    }
}
