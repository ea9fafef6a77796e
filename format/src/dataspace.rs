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
        let mut body = Vec::with_capacity(4 + 2 * sizes.lengths * self.dims.len());
        body.put_u8(2);
        body.put_u8(self.dims.len() as u8);
        body.put_u8(if self.max.is_some() { 1 } else { 0 });
        body.put_u8(if self.null {
            2
        } else if self.dims.is_empty() {
            0
        } else {
            1
        });
        for (i, d) in self.dims.iter().enumerate() {
            sizes.put_length(&mut body, *d, &format!("dimension {i} of a dataspace"))?;
        }
        if let Some(m) = &self.max {
            for (i, v) in m.iter().enumerate() {
                let what = format!("maximum dimension {i} of a dataspace");
                sizes.put_length_or_all_ones(&mut body, *v, &what)?;
            }
        }
        out.extend_from_slice(&body);
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
            matches!(e, crate::FormatError::TooWide { bytes: 4, .. }),
            "{e}"
        );
        assert_eq!(b, [9]);
    }
}
