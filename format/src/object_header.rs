//! Object headers: parsing v1 and v2 (with continuation chunks, checksums verified), encoding v2.

use crate::checksum::lookup3;
use crate::ctx::Ctx;
use crate::error::{corrupt, invalid, Result};
use crate::io::{Cursor, PutLe};

/// Message type numbers.
pub mod mtype {
    pub const NIL: u16 = 0;
    pub const DATASPACE: u16 = 1;
    pub const LINK_INFO: u16 = 2;
    pub const DATATYPE: u16 = 3;
    pub const FILL_OLD: u16 = 4;
    pub const FILL: u16 = 5;
    pub const LINK: u16 = 6;
    pub const EXTERNAL_FILES: u16 = 7;
    pub const LAYOUT: u16 = 8;
    pub const GROUP_INFO: u16 = 10;
    pub const FILTERS: u16 = 11;
    pub const ATTRIBUTE: u16 = 12;
    pub const CONTINUATION: u16 = 16;
    pub const SYMBOL_TABLE: u16 = 17;
    pub const ATTR_INFO: u16 = 21;
}

/// One header message; `data` borrows the file bytes.
#[derive(Clone, Debug)]
pub struct Msg<'a> {
    pub mtype: u16,
    pub flags: u8,
    pub data: &'a [u8],
}

/// A parsed object header: its version and all its messages, continuation chunks included.
#[derive(Clone, Debug)]
pub struct ObjectHeader<'a> {
    pub version: u8,
    pub messages: Vec<Msg<'a>>,
}

impl<'a> ObjectHeader<'a> {
    /// First message of a type.
    pub fn find(&self, t: u16) -> Option<&Msg<'a>> {
        self.messages.iter().find(|m| m.mtype == t)
    }

    /// All messages of a type.
    pub fn all(&self, t: u16) -> impl Iterator<Item = &Msg<'a>> {
        self.messages.iter().filter(move |m| m.mtype == t)
    }
}

const MAX_CHUNKS: usize = 4096;

/// Parses the object header at `addr`.
pub fn parse<'a>(ctx: &Ctx<'a>, addr: u64) -> Result<ObjectHeader<'a>> {
    let mut c = ctx.cursor(addr, "object header")?;
    let first = c.bytes(4)?;
    let mut messages = Vec::new();
    let mut pending: Vec<(u64, u64)> = Vec::new();
    let version;
    if first == b"OHDR" {
        version = 2;
        let v = c.u8()?;
        if v != 2 {
            return corrupt(format!("object header v2 signature with version {v}"));
        }
        let flags = c.u8()?;
        if flags & 0x20 != 0 {
            c.skip(16)?;
        }
        if flags & 0x10 != 0 {
            c.skip(4)?;
        }
        let size = c.uint(1 << (flags & 3))? as usize;
        let start = c.pos();
        let body = c.bytes(size)?;
        let stored = c.u32()?;
        let whole = ctx.slice(addr, (start + size) as u64)?;
        if lookup3(whole, 0) != stored {
            return corrupt(format!("object header checksum mismatch at {addr:#x}"));
        }
        parse_v2_msgs(body, flags & 0x04 != 0, &mut messages, &mut pending, ctx)?;
        let mut seen = 0;
        while let Some((caddr, clen)) = pending.pop() {
            seen += 1;
            if seen > MAX_CHUNKS {
                return corrupt("too many object header continuation chunks");
            }
            let blk = ctx.slice(caddr, clen)?;
            if blk.len() < 8 || &blk[0..4] != b"OCHK" {
                return corrupt(format!("bad continuation chunk at {caddr:#x}"));
            }
            let n = blk.len();
            let stored = u32::from_le_bytes([blk[n - 4], blk[n - 3], blk[n - 2], blk[n - 1]]);
            if lookup3(&blk[..n - 4], 0) != stored {
                return corrupt(format!(
                    "continuation chunk checksum mismatch at {caddr:#x}"
                ));
            }
            parse_v2_msgs(
                &blk[4..n - 4],
                flags & 0x04 != 0,
                &mut messages,
                &mut pending,
                ctx,
            )?;
        }
    } else {
        let mut c = ctx.cursor(addr, "object header")?;
        version = c.u8()?;
        if version != 1 {
            return corrupt(format!("object header version {version} at {addr:#x}"));
        }
        c.skip(1)?;
        let _nmsgs = c.u16()?;
        c.skip(4)?;
        let size = c.u32()? as u64;
        c.skip(4)?;
        let body = ctx.slice(addr + 16, size)?;
        parse_v1_msgs(body, &mut messages, &mut pending, ctx)?;
        let mut seen = 0;
        while let Some((caddr, clen)) = pending.pop() {
            seen += 1;
            if seen > MAX_CHUNKS {
                return corrupt("too many object header continuation chunks");
            }
            let blk = ctx.slice(caddr, clen)?;
            parse_v1_msgs(blk, &mut messages, &mut pending, ctx)?;
        }
    }
    Ok(ObjectHeader { version, messages })
}

fn continuation(data: &[u8], ctx: &Ctx<'_>) -> Result<(u64, u64)> {
    let mut c = Cursor::new(data, "continuation message");
    Ok((c.addr(ctx.so)?, c.uint(ctx.sl)?))
}

fn parse_v1_msgs<'a>(
    body: &'a [u8],
    out: &mut Vec<Msg<'a>>,
    pending: &mut Vec<(u64, u64)>,
    ctx: &Ctx<'a>,
) -> Result<()> {
    let mut c = Cursor::new(body, "object header message");
    while c.remaining() >= 8 {
        let t = c.u16()?;
        let size = c.u16()? as usize;
        let flags = c.u8()?;
        c.skip(3)?;
        let data = c.bytes(size)?;
        push(t, flags, data, out, pending, ctx)?;
    }
    Ok(())
}

fn parse_v2_msgs<'a>(
    body: &'a [u8],
    crt_order: bool,
    out: &mut Vec<Msg<'a>>,
    pending: &mut Vec<(u64, u64)>,
    ctx: &Ctx<'a>,
) -> Result<()> {
    let hdr = if crt_order { 6 } else { 4 };
    let mut c = Cursor::new(body, "object header message");
    while c.remaining() >= hdr {
        let t = c.u8()? as u16;
        let size = c.u16()? as usize;
        let flags = c.u8()?;
        if crt_order {
            c.skip(2)?;
        }
        let data = c.bytes(size)?;
        push(t, flags, data, out, pending, ctx)?;
    }
    Ok(())
}

fn push<'a>(
    t: u16,
    flags: u8,
    data: &'a [u8],
    out: &mut Vec<Msg<'a>>,
    pending: &mut Vec<(u64, u64)>,
    ctx: &Ctx<'a>,
) -> Result<()> {
    if t == mtype::CONTINUATION {
        let cont = continuation(data, ctx)?;
        if pending.len() > MAX_CHUNKS {
            return corrupt("too many continuation messages");
        }
        pending.insert(0, cont);
    } else if t != mtype::NIL {
        if out.len() > 1_000_000 {
            return corrupt("too many object header messages");
        }
        out.push(Msg {
            mtype: t,
            flags,
            data,
        });
    }
    Ok(())
}

/// Encodes a version-2 object header holding `msgs` (type, flags, body) in one chunk.
pub fn encode_v2(msgs: &[(u16, u8, Vec<u8>)]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_v2_into(msgs, &mut out)?;
    Ok(out)
}

/// Appends a version-2 object header holding `msgs` (type, flags, body: owned or borrowed) to `out`
/// (checksum over the header alone).
pub fn encode_v2_into<B: AsRef<[u8]>>(msgs: &[(u16, u8, B)], out: &mut Vec<u8>) -> Result<()> {
    let mut body_len = 0usize;
    for (t, _, d) in msgs {
        let d = d.as_ref();
        if d.len() > u16::MAX as usize {
            return invalid(format!(
                "object header message type {t} of {} bytes exceeds 65535",
                d.len()
            ));
        }
        body_len += 4 + d.len();
    }
    let (flag, width) = if body_len <= 0xff {
        (0u8, 1)
    } else if body_len <= 0xffff {
        (1, 2)
    } else {
        (2, 4)
    };
    let start = out.len();
    out.reserve(6 + width + body_len + 4);
    out.extend_from_slice(b"OHDR");
    out.put_u8(2);
    out.put_u8(flag);
    out.put_uint(body_len as u64, width);
    for (t, f, d) in msgs {
        let d = d.as_ref();
        out.put_u8(*t as u8);
        out.put_u16(d.len() as u16);
        out.put_u8(*f);
        out.extend_from_slice(d);
    }
    let sum = lookup3(&out[start..], 0);
    out.put_u32(sum);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_roundtrip_and_checksum() {
        let msgs = vec![
            (mtype::DATASPACE, 0u8, vec![2, 0, 0, 0]),
            (mtype::LINK_INFO, 0, vec![0; 18]),
        ];
        let oh = encode_v2(&msgs).unwrap();
        let mut file = vec![0u8; 8];
        file.extend_from_slice(&oh);
        let ctx = Ctx {
            data: &file,
            so: 8,
            sl: 8,
            base: 0,
        };
        let h = parse(&ctx, 8).unwrap();
        assert_eq!(h.messages.len(), 2);
        assert_eq!(h.messages[1].data, &[0u8; 18][..]);
        file[12] ^= 0x40;
        let ctx = Ctx {
            data: &file,
            so: 8,
            sl: 8,
            base: 0,
        };
        assert!(parse(&ctx, 8).is_err());
    }
}
