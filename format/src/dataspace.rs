//! The dataspace message: shape and maximum shape.

use crate::error::{corrupt, Result};
use crate::io::{Cursor, PutLe};

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
        for d in &self.dims {
            out.put_u64(*d);
        }
        if let Some(m) = &self.max {
            for v in m {
                out.put_u64(v.unwrap_or(u64::MAX));
            }
        }
    }
}
