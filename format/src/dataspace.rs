//! The dataspace message: shape and maximum shape.

use crate::error::{corrupt, Result};
use crate::io::{Cursor, PutLe};
use crate::sizes::Sizes;

/// A dataspace: `None` max entry = unlimited. `null` spaces hold no elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataspace {
    pub dims: Vec<u64>,
    pub max: Option<Vec<Option<u64>>>,
    pub null: bool,
}

impl Dataspace {
    /// Number of elements (0 for a null space).
    pub fn num_elements(&self) -> Result<u64> {
        if self.null {
            return Ok(0);
        }
        self.dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| crate::FormatError::Corrupt("dataspace size overflows".into()))
    }

    /// Parses a dataspace message body (`sl` = size of lengths).
    pub fn parse(c: &mut Cursor<'_>, sl: usize) -> Result<Dataspace> {
        let version = c.u8()?;
        let rank = c.u8()? as usize;
        let flags = c.u8()?;
        let mut null = false;
        match version {
            1 => {
                c.skip(5)?;
            }
            2 => {
                let t = c.u8()?;
                null = t == 2;
            }
            v => return corrupt(format!("dataspace version {v}")),
        }
        if rank > 32 {
            return corrupt(format!("dataspace rank {rank}"));
        }
        let mut dims = Vec::with_capacity(rank);
        for _ in 0..rank {
            dims.push(c.uint(sl)?);
        }
        let max = if flags & 1 != 0 {
            let mut m = Vec::with_capacity(rank);
            for _ in 0..rank {
                let v = c.addr(sl)?;
                m.push(if v == u64::MAX { None } else { Some(v) });
            }
            Some(m)
        } else {
            None
        };
        Ok(Dataspace { dims, max, null })
    }

    /// Encodes as a version-2 message body (8-byte lengths).
    pub fn encode(&self, out: &mut Vec<u8>) {
        // Every value fits 8-byte lengths.
        let _ = self.encode_sized(out, Sizes::DEFAULT);
    }

    /// Encodes as a version-2 message body with the file's length width (unlimited maximum dimensions all
    /// ones); a dimension too large for it is an error and leaves `out` as it was.
    pub fn encode_sized(&self, out: &mut Vec<u8>, sizes: Sizes) -> Result<()> {
        // Checked first, so that nothing is written on an error; the field is named only then.
        let most = sizes.max_length();
        for (i, &d) in self.dims.iter().enumerate() {
            if d > most {
                sizes.check_length(d, &format!("dimension {i} of a dataspace"))?;
            }
        }
        for (i, v) in self.max.iter().flatten().enumerate() {
            match v {
                Some(v) if *v > most => {
                    sizes.check_length(*v, &format!("maximum dimension {i} of a dataspace"))?
                }
                _ => {}
            }
        }
        out.reserve(4 + 2 * sizes.lengths * self.dims.len());
        out.put_u8(2);
        out.put_u8(self.dims.len() as u8);
        out.put_u8(if self.max.is_some() { 1 } else { 0 });
        out.put_u8(if self.null {
            2
        } else if self.dims.is_empty() {
            0
        } else {
            1
        });
        let n = sizes.lengths.min(8);
        for &d in &self.dims {
            out.extend_from_slice(&d.to_le_bytes()[..n]);
        }
        for v in self.max.iter().flatten() {
            out.extend_from_slice(&v.unwrap_or(u64::MAX).to_le_bytes()[..n]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_lengths_hold_dimensions_and_unlimited_is_all_ones() {
        let sizes = Sizes {
            offsets: 8,
            lengths: 4,
        };
        let space = Dataspace {
            dims: vec![3, 5],
            max: Some(vec![None, Some(7)]),
            null: false,
        };
        let mut b = Vec::new();
        space.encode_sized(&mut b, sizes).unwrap();
        assert_eq!(b.len(), 4 + 4 * 4);
        assert_eq!(&b[12..16], &[0xff; 4]);
        assert_eq!(
            Dataspace::parse(&mut Cursor::new(&b, "t"), 4).unwrap(),
            space
        );
        let wide = Dataspace {
            dims: vec![1 << 32],
            max: None,
            null: false,
        };
        let mut b = vec![9];
        let e = wide.encode_sized(&mut b, sizes).unwrap_err();
        assert!(
            matches!(&e, crate::FormatError::TooWide(o) if o.bytes == 4),
            "{e}"
        );
        assert_eq!(b, [9]);
    }
}
