//! Shared object header messages: a message whose body lives in another object header, or in the file's
//! shared-message heaps (SOHM: a file creation property list can ask libhdf5 to store each distinct
//! dataspace, datatype, fill value, filter pipeline or attribute once), resolved to that body.

use crate::ctx::Ctx;
use crate::error::{corrupt, unsupported, Result};
use crate::io::{Cursor, UNDEF};
use crate::object_header::{self, mtype};
use std::borrow::Cow;

/// Superblock-extension message: where the shared-message table is.
const SHARED_MESSAGE_TABLE: u16 = 0x000F;

/// One index of the shared-message table: which message types it holds, and the fractal heap holding them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SohmIndex {
    types: u16,
    heap: u64,
}

/// Where a shared message's body is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SharedRef {
    /// In the object header at this address.
    Header(u64),
    /// In the shared-message heap, under this 8-byte heap ID.
    Heap([u8; 8]),
}

/// Decodes a shared message (versions 1-3).
pub(crate) fn parse_ref(data: &[u8], so: usize) -> Result<SharedRef> {
    let mut c = Cursor::new(data, "shared message");
    let v = c.u8()?;
    let t = c.u8()?;
    let addr = match (v, t) {
        (1, _) => {
            c.skip(6)?;
            c.addr(so)?
        }
        (2, _) | (3, 0 | 2) => c.addr(so)?,
        (3, 1) => {
            let mut id = [0u8; 8];
            id.copy_from_slice(c.bytes(8)?);
            return Ok(SharedRef::Heap(id));
        }
        (3, t) => return corrupt(format!("shared message of type {t}")),
        _ => return corrupt(format!("shared message version {v}")),
    };
    if addr == UNDEF {
        return corrupt("shared message with an undefined address");
    }
    Ok(SharedRef::Header(addr))
}

/// The bit of a message type in an index's type flags (libhdf5's `H5O_SHMESG_*_FLAG`: 1 << type), for the
/// types that can be shared.
fn type_flag(message: u16) -> Option<u16> {
    match message {
        mtype::DATASPACE | mtype::DATATYPE | mtype::FILL | mtype::FILTERS | mtype::ATTRIBUTE => {
            Some(1 << message)
        }
        _ => None,
    }
}

/// Reads the shared-message table named by the superblock extension at `ext` (none: an empty table).
pub(crate) fn read_table(ctx: &Ctx<'_>, ext: u64) -> Result<Vec<SohmIndex>> {
    if ext == UNDEF {
        return Ok(vec![]);
    }
    let oh = object_header::parse(ctx, ext)?;
    let Some(m) = oh.find(SHARED_MESSAGE_TABLE) else {
        return Ok(vec![]);
    };
    let mut c = Cursor::new(m.data, "shared message table message");
    let version = c.u8()?;
    if version != 0 {
        return unsupported(format!("shared message table message version {version}"));
    }
    let table = c.addr(ctx.so)?;
    let n = c.u8()?;
    let mut t = ctx.cursor(table, "shared message table")?;
    t.expect_sig(b"SMTB")?;
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let v = t.u8()?;
        if v != 0 {
            return unsupported(format!("shared message index version {v}"));
        }
        let _index_type = t.u8()?;
        let types = t.u16()?;
        t.skip(4 + 2 + 2 + 2)?; // minimum message size, list and B-tree cut-offs, message count
        let _index = t.addr(ctx.so)?;
        let heap = t.addr(ctx.so)?;
        out.push(SohmIndex { types, heap });
    }
    Ok(out)
}

/// The body of a message of type `message` stored in the shared-message heap under `id` (copied out of the
/// ID itself when it is a tiny object).
pub(crate) fn heap_body<'a>(
    ctx: &Ctx<'a>,
    table: &[SohmIndex],
    message: u16,
    id: &[u8],
) -> Result<Cow<'a, [u8]>> {
    let flag = type_flag(message).ok_or_else(|| {
        crate::FormatError::Corrupt(format!("message type {message} cannot be shared"))
    })?;
    let index = table
        .iter()
        .find(|i| i.types & flag != 0 && i.heap != UNDEF)
        .ok_or_else(|| {
            crate::FormatError::Corrupt(format!(
                "shared message of type {message} without a shared-message index for it"
            ))
        })?;
    let heap = crate::heap::fractal::FractalHeap::read(ctx, index.heap)?;
    let tiny = id.first().is_some_and(|b| (b >> 4) & 3 == 2);
    Ok(if tiny {
        Cow::Owned(heap.object_owned(ctx, id)?)
    } else {
        Cow::Borrowed(heap.object(ctx, id)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_references_decode() {
        let mut v3_heap = vec![3u8, 1];
        v3_heap.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            parse_ref(&v3_heap, 8).unwrap(),
            SharedRef::Heap([1, 2, 3, 4, 5, 6, 7, 8])
        );
        let mut v2 = vec![2u8, 0];
        v2.extend_from_slice(&0x1234u64.to_le_bytes());
        assert_eq!(parse_ref(&v2, 8).unwrap(), SharedRef::Header(0x1234));
        let mut v1 = vec![1u8, 0, 0, 0, 0, 0, 0, 0];
        v1.extend_from_slice(&0x40u64.to_le_bytes());
        assert_eq!(parse_ref(&v1, 8).unwrap(), SharedRef::Header(0x40));
        let mut undef = vec![2u8, 0];
        undef.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_ref(&undef, 8).is_err());
        assert!(parse_ref(&[4, 0], 8).is_err());
        assert!(parse_ref(&[3, 7, 0, 0], 8).is_err());
    }
}
