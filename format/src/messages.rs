//! Header messages other than datatype/dataspace: links, link/group/attribute info, attributes,
//! data layout, filter pipeline, fill value, symbol table.

use crate::ctx::Ctx;
use crate::dataspace::Dataspace;
use crate::datatype::Datatype;
use crate::error::{corrupt, unsupported, Result};
use crate::io::{bytes_for, Cursor, PutLe, UNDEF};
use crate::sizes::Sizes;

/// Where a link points.
#[derive(Clone, Debug, PartialEq)]
pub enum LinkTarget {
    /// Object header address.
    Hard(u64),
    Soft(String),
    External {
        file: String,
        path: String,
    },
    /// User-defined link type.
    Other(u8),
}

/// A parsed link message.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub name: String,
    pub target: LinkTarget,
    pub order: Option<u64>,
}

/// Parses a link message body.
pub fn parse_link(data: &[u8], so: usize) -> Result<Link> {
    let mut c = Cursor::new(data, "link message");
    let v = c.u8()?;
    if v != 1 {
        return corrupt(format!("link message version {v}"));
    }
    let flags = c.u8()?;
    let ltype = if flags & 0x08 != 0 { c.u8()? } else { 0 };
    let order = if flags & 0x04 != 0 {
        Some(c.u64()?)
    } else {
        None
    };
    if flags & 0x10 != 0 {
        c.skip(1)?;
    }
    let nlen = c.uint(1 << (flags & 3))? as usize;
    let name = String::from_utf8_lossy(c.bytes(nlen)?).into_owned();
    let target = match ltype {
        0 => LinkTarget::Hard(c.addr(so)?),
        1 => {
            let n = c.u16()? as usize;
            LinkTarget::Soft(String::from_utf8_lossy(c.bytes(n)?).into_owned())
        }
        64 => {
            let n = c.u16()? as usize;
            let b = c.bytes(n)?;
            if b.is_empty() {
                return corrupt("empty external link");
            }
            let mut parts = b[1..].split(|&x| x == 0);
            let file = String::from_utf8_lossy(parts.next().unwrap_or(&[])).into_owned();
            let path = String::from_utf8_lossy(parts.next().unwrap_or(&[])).into_owned();
            LinkTarget::External { file, path }
        }
        t => LinkTarget::Other(t),
    };
    Ok(Link {
        name,
        target,
        order,
    })
}

/// Encodes a link message (UTF-8 names, addresses at the file's offset width).
pub fn encode_link(name: &str, target: &LinkTarget, sizes: Sizes) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(16 + name.len());
    encode_link_into(&mut out, name, target, sizes)?;
    Ok(out)
}

/// [`encode_link`], appending the message body to `out` (a group's links share one buffer).
pub fn encode_link_into(
    out: &mut Vec<u8>,
    name: &str,
    target: &LinkTarget,
    sizes: Sizes,
) -> Result<()> {
    let nb = name.as_bytes();
    let w = bytes_for(nb.len() as u64);
    let wbits = match w {
        1 => 0u8,
        2 => 1,
        3 | 4 => 2,
        _ => 3,
    };
    let width = 1usize << wbits;
    let (ltype, has_type) = match target {
        LinkTarget::Hard(_) => (0u8, false),
        LinkTarget::Soft(_) => (1, true),
        LinkTarget::External { .. } => (64, true),
        LinkTarget::Other(t) => return unsupported(format!("writing user-defined link type {t}")),
    };
    out.put_u8(1);
    out.put_u8(wbits | 0x10 | if has_type { 0x08 } else { 0 });
    if has_type {
        out.put_u8(ltype);
    }
    out.put_u8(1); // UTF-8
    out.put_uint(nb.len() as u64, width);
    out.extend_from_slice(nb);
    match target {
        LinkTarget::Hard(a) => sizes.put_offset(out, *a),
        LinkTarget::Soft(s) => {
            out.put_u16(s.len() as u16);
            out.extend_from_slice(s.as_bytes());
        }
        LinkTarget::External { file, path } => {
            let n = 1 + file.len() + 1 + path.len() + 1;
            out.put_u16(n as u16);
            out.put_u8(0);
            out.extend_from_slice(file.as_bytes());
            out.put_u8(0);
            out.extend_from_slice(path.as_bytes());
            out.put_u8(0);
        }
        LinkTarget::Other(_) => {}
    }
    Ok(())
}

/// Fractal heap + name-index B-tree addresses of dense link or attribute storage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DenseInfo {
    pub heap: u64,
    pub name_btree: u64,
}

/// Parses a link-info message; `None` heap means compact storage.
pub fn parse_link_info(data: &[u8], so: usize) -> Result<DenseInfo> {
    let mut c = Cursor::new(data, "link info message");
    c.skip(1)?;
    let flags = c.u8()?;
    if flags & 1 != 0 {
        c.skip(8)?;
    }
    Ok(DenseInfo {
        heap: c.addr(so)?,
        name_btree: c.addr(so)?,
    })
}

/// Parses an attribute-info message.
pub fn parse_attr_info(data: &[u8], so: usize) -> Result<DenseInfo> {
    let mut c = Cursor::new(data, "attribute info message");
    c.skip(1)?;
    let flags = c.u8()?;
    if flags & 1 != 0 {
        c.skip(2)?;
    }
    Ok(DenseInfo {
        heap: c.addr(so)?,
        name_btree: c.addr(so)?,
    })
}

/// Encodes a link-info message (no creation-order tracking, 8-byte addresses).
pub fn encode_link_info(dense: Option<DenseInfo>) -> Vec<u8> {
    link_info_bytes(dense, Sizes::DEFAULT).to_vec()
}

/// A link-info message body held inline (a group's header borrows it without an allocation).
#[derive(Clone, Copy, Debug)]
pub struct LinkInfoBytes {
    buf: [u8; 18],
    len: usize,
}

impl std::ops::Deref for LinkInfoBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A link-info message: version 0, no flags, then the heap and name-index addresses at the file's offset
/// width (undefined for a compact group).
pub fn link_info_bytes(dense: Option<DenseInfo>, sizes: Sizes) -> LinkInfoBytes {
    let d = dense.unwrap_or(DenseInfo {
        heap: UNDEF,
        name_btree: UNDEF,
    });
    let so = sizes.offsets.min(8);
    let undef = sizes.undef();
    let field = |a: u64| if a == UNDEF { undef } else { a }.to_le_bytes();
    let mut buf = [0u8; 18];
    buf[2..2 + so].copy_from_slice(&field(d.heap)[..so]);
    buf[2 + so..2 + 2 * so].copy_from_slice(&field(d.name_btree)[..so]);
    LinkInfoBytes {
        buf,
        len: 2 + 2 * so,
    }
}

/// Encodes an attribute-info message (no creation-order tracking), addresses at the file's offset width.
pub fn encode_attr_info(dense: DenseInfo, sizes: Sizes) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 2 * sizes.offsets);
    out.extend_from_slice(&[0, 0]);
    sizes.put_offset(&mut out, dense.heap);
    sizes.put_offset(&mut out, dense.name_btree);
    out
}

/// Encodes a group-info message with default phase-change values.
pub fn encode_group_info() -> Vec<u8> {
    GROUP_INFO.to_vec()
}

/// The group-info message every group we write carries: version 0, no flags (no link-count or
/// estimate fields).
pub const GROUP_INFO: [u8; 2] = [0, 0];

/// A parsed attribute message.
#[derive(Clone, Debug)]
pub struct AttrMsg<'a> {
    pub name: String,
    pub dtype: Datatype,
    pub space: Dataspace,
    pub data: &'a [u8],
    /// Where `data` starts in the message body.
    pub data_at: usize,
}

fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// The fixed start of an attribute message and its name.
struct AttrHead<'a> {
    version: u8,
    flags: u8,
    name: &'a [u8],
    tsize: usize,
    ssize: usize,
}

impl AttrHead<'_> {
    fn name(&self) -> String {
        let end = self
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.name.len());
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }
}

/// Reads an attribute message up to the end of its name (the cursor is left at its datatype).
fn attribute_head<'a>(c: &mut Cursor<'a>) -> Result<AttrHead<'a>> {
    let version = c.u8()?;
    let flags = c.u8()?;
    let nsize = c.u16()? as usize;
    let tsize = c.u16()? as usize;
    let ssize = c.u16()? as usize;
    let name = match version {
        1 => c.bytes(pad8(nsize))?,
        2 => c.bytes(nsize)?,
        3 => {
            c.skip(1)?;
            c.bytes(nsize)?
        }
        _ => return corrupt(format!("attribute message version {version}")),
    };
    Ok(AttrHead {
        version,
        flags,
        name,
        tsize,
        ssize,
    })
}

/// The name of an attribute message, without parsing its datatype, dataspace or value (so that one attribute
/// of a type this reader does not support leaves its object's other attributes readable).
pub fn attribute_name(data: &[u8]) -> Result<String> {
    Ok(attribute_head(&mut Cursor::new(data, "attribute message"))?.name())
}

/// Parses an attribute message body (versions 1–3). Shared datatypes resolve through `shared`.
pub fn parse_attribute<'a>(
    data: &'a [u8],
    ctx: &Ctx<'a>,
    shared: &dyn Fn(u16, &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>>,
) -> Result<AttrMsg<'a>> {
    let mut c = Cursor::new(data, "attribute message");
    let head = attribute_head(&mut c)?;
    let (flags, name) = (head.flags, head.name());
    let (dt_b, ds_b) = match head.version {
        1 => (c.bytes(pad8(head.tsize))?, c.bytes(pad8(head.ssize))?),
        _ => (c.bytes(head.tsize)?, c.bytes(head.ssize)?),
    };
    // Flags 1 and 2: the datatype and the dataspace are shared messages.
    let dt_b = if flags & 1 != 0 {
        shared(crate::object_header::mtype::DATATYPE, dt_b)?
    } else {
        dt_b.into()
    };
    let dtype = Datatype::parse(&mut Cursor::new(&dt_b, "attribute datatype"))?;
    let ds_b = if flags & 2 != 0 {
        shared(crate::object_header::mtype::DATASPACE, ds_b)?
    } else {
        ds_b.into()
    };
    let space = Dataspace::parse(&mut Cursor::new(&ds_b, "attribute dataspace"), ctx.sl)?;
    let n = space.num_elements()?;
    let need = n.saturating_mul(dtype.size() as u64);
    if need > c.remaining() as u64 {
        return corrupt(format!("attribute {name}: data shorter than its shape"));
    }
    let data_at = data.len() - c.remaining();
    let data = c.bytes(need as usize)?;
    Ok(AttrMsg {
        name,
        dtype,
        space,
        data,
        data_at,
    })
}

/// How chunk addresses are indexed.
#[derive(Clone, Debug, PartialEq)]
pub enum ChunkIndex {
    BTreeV1 {
        addr: u64,
    },
    Single {
        addr: u64,
        filtered_size: Option<u64>,
        mask: u32,
    },
    Implicit {
        addr: u64,
    },
    FixedArray {
        addr: u64,
    },
    ExtensibleArray {
        addr: u64,
    },
    BTreeV2 {
        addr: u64,
    },
}

/// Data layout.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    Compact(Vec<u8>),
    Contiguous {
        addr: u64,
        size: u64,
    },
    Chunked {
        chunk: Vec<u64>,
        index: ChunkIndex,
    },
    /// A virtual dataset: its mapping list is global heap object `index` of the collection at `heap`.
    Virtual {
        heap: u64,
        index: u32,
    },
}

/// Parses a layout message (versions 1–5). `rank` is the dataspace rank.
pub fn parse_layout(data: &[u8], ctx: &Ctx<'_>, rank: usize) -> Result<(u8, Layout)> {
    let so = ctx.so;
    let sl = ctx.sl;
    let mut c = Cursor::new(data, "layout message");
    let v = c.u8()?;
    let layout = match v {
        1 | 2 => {
            let nd = c.u8()? as usize;
            let class = c.u8()?;
            c.skip(5)?;
            let addr = if class != 0 { c.addr(so)? } else { UNDEF };
            let mut dims = Vec::with_capacity(nd.min(33));
            for _ in 0..nd {
                dims.push(c.u32()? as u64);
            }
            match class {
                0 => {
                    let n = c.u32()? as usize;
                    Layout::Compact(c.bytes(n)?.to_vec())
                }
                1 => {
                    let Some(size) = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) else {
                        return corrupt("contiguous layout whose size overflows");
                    };
                    Layout::Contiguous { addr, size }
                }
                2 => {
                    dims.pop();
                    Layout::Chunked {
                        chunk: dims,
                        index: ChunkIndex::BTreeV1 { addr },
                    }
                }
                k => return corrupt(format!("layout class {k}")),
            }
        }
        3..=5 => {
            let class = c.u8()?;
            match class {
                0 => {
                    let n = c.u16()? as usize;
                    Layout::Compact(c.bytes(n)?.to_vec())
                }
                1 => Layout::Contiguous {
                    addr: c.addr(so)?,
                    size: c.uint(sl)?,
                },
                2 if v == 3 => {
                    let nd = c.u8()? as usize;
                    let addr = c.addr(so)?;
                    let mut dims = Vec::with_capacity(nd.min(33));
                    for _ in 0..nd {
                        dims.push(c.u32()? as u64);
                    }
                    dims.pop();
                    Layout::Chunked {
                        chunk: dims,
                        index: ChunkIndex::BTreeV1 { addr },
                    }
                }
                2 => {
                    let flags = c.u8()?;
                    let nd = c.u8()? as usize;
                    let w = c.u8()? as usize;
                    if !(1..=8).contains(&w) {
                        return corrupt("layout dimension width");
                    }
                    let mut dims = Vec::with_capacity(nd.min(33));
                    for _ in 0..nd {
                        dims.push(c.uint(w)?);
                    }
                    dims.pop();
                    let itype = c.u8()?;
                    let index = match itype {
                        1 => {
                            let (fs, mask) = if flags & 2 != 0 {
                                (Some(c.uint(sl)?), c.u32()?)
                            } else {
                                (None, 0)
                            };
                            ChunkIndex::Single {
                                addr: c.addr(so)?,
                                filtered_size: fs,
                                mask,
                            }
                        }
                        2 => ChunkIndex::Implicit { addr: c.addr(so)? },
                        3 => {
                            c.skip(1)?;
                            ChunkIndex::FixedArray { addr: c.addr(so)? }
                        }
                        4 => {
                            c.skip(5)?;
                            ChunkIndex::ExtensibleArray { addr: c.addr(so)? }
                        }
                        5 => {
                            c.skip(6)?;
                            ChunkIndex::BTreeV2 { addr: c.addr(so)? }
                        }
                        t => return corrupt(format!("chunk index type {t}")),
                    };
                    Layout::Chunked { chunk: dims, index }
                }
                3 if v >= 4 => Layout::Virtual {
                    heap: c.addr(so)?,
                    index: c.u32()?,
                },
                k => return corrupt(format!("layout class {k}")),
            }
        }
        _ => return corrupt(format!("layout message version {v}")),
    };
    if let Layout::Chunked { chunk, .. } = &layout {
        if chunk.len() != rank || chunk.contains(&0) {
            return corrupt("chunk dimensions do not match the dataspace");
        }
    }
    Ok((v, layout))
}

/// Encodes a layout message version 3 (chunked: v1 B-tree index at `addr`) with the file's field widths.
pub fn encode_layout(layout: &Layout, elem_size: usize, sizes: Sizes) -> Result<Vec<u8>> {
    let mut out = vec![3u8];
    match layout {
        Layout::Compact(d) => {
            out.put_u8(0);
            out.put_u16(d.len() as u16);
            out.extend_from_slice(d);
        }
        Layout::Contiguous { addr, size } => {
            out.put_u8(1);
            sizes.put_offset(&mut out, *addr);
            sizes.put_length(&mut out, *size, "the size of a contiguous dataset")?;
        }
        Layout::Chunked {
            chunk,
            index: ChunkIndex::BTreeV1 { addr },
        } => {
            out.put_u8(2);
            out.put_u8((chunk.len() + 1) as u8);
            sizes.put_offset(&mut out, *addr);
            for d in chunk {
                out.put_u32(*d as u32);
            }
            out.put_u32(elem_size as u32);
        }
        Layout::Chunked { .. } => return unsupported("writing chunk index other than B-tree v1"),
        Layout::Virtual { .. } => return unsupported("writing a virtual dataset's layout"),
    }
    Ok(out)
}

/// One filter of a pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    pub id: u16,
    pub flags: u16,
    pub name: String,
    pub params: Vec<u32>,
}

/// Parses a filter pipeline message (v1 or v2).
pub fn parse_filters(data: &[u8]) -> Result<Vec<Filter>> {
    let mut c = Cursor::new(data, "filter pipeline message");
    let v = c.u8()?;
    let n = c.u8()? as usize;
    if v == 1 {
        c.skip(6)?;
    } else if v != 2 {
        return corrupt(format!("filter pipeline version {v}"));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = c.u16()?;
        let nlen = if v == 1 || id >= 256 {
            c.u16()? as usize
        } else {
            0
        };
        let flags = c.u16()?;
        let nparams = c.u16()? as usize;
        let name_b = if v == 1 {
            c.bytes(pad8(nlen))?
        } else {
            c.bytes(nlen)?
        };
        let end = name_b.iter().position(|&b| b == 0).unwrap_or(name_b.len());
        let name = String::from_utf8_lossy(&name_b[..end]).into_owned();
        let mut params = Vec::with_capacity(nparams.min(64));
        for _ in 0..nparams {
            params.push(c.u32()?);
        }
        if v == 1 && nparams % 2 == 1 {
            c.skip(4)?;
        }
        out.push(Filter {
            id,
            flags,
            name,
            params,
        });
    }
    Ok(out)
}

/// Encodes a filter pipeline message version 2.
pub fn encode_filters(filters: &[Filter]) -> Vec<u8> {
    let mut out = vec![2u8, filters.len() as u8];
    for f in filters {
        out.put_u16(f.id);
        // Version 2 names only the filters outside the reserved range (null-terminated, unpadded).
        let name = (f.id >= 256 && !f.name.is_empty()).then_some(f.name.as_bytes());
        if f.id >= 256 {
            out.put_u16(name.map_or(0, |n| n.len() as u16 + 1));
        }
        out.put_u16(f.flags);
        out.put_u16(f.params.len() as u16);
        if let Some(n) = name {
            out.extend_from_slice(n);
            out.push(0);
        }
        for p in &f.params {
            out.put_u32(*p);
        }
    }
    out
}

/// Parses a fill-value message (new style, type 5), returning the fill bytes when defined.
pub fn parse_fill(data: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut c = Cursor::new(data, "fill value message");
    let v = c.u8()?;
    match v {
        1 | 2 => {
            c.skip(2)?;
            let defined = c.u8()?;
            if defined == 0 || c.remaining() < 4 {
                return Ok(None);
            }
            let n = c.u32()?;
            // Size 0 or -1 (0xffffffff): no value stored.
            if n == 0 || n == u32::MAX {
                return Ok(None);
            }
            Ok(Some(c.bytes(n as usize)?.to_vec()))
        }
        3 => {
            let flags = c.u8()?;
            if flags & 0x20 != 0 {
                let n = c.u32()? as usize;
                return Ok(Some(c.bytes(n)?.to_vec()));
            }
            Ok(None)
        }
        _ => corrupt(format!("fill value message version {v}")),
    }
}

/// Encodes a fill-value message v3: given allocation time, fill written if set, no value.
pub fn encode_fill(alloc_time: u8) -> Vec<u8> {
    vec![3, (alloc_time & 3) | (2 << 2)]
}

/// Parses a symbol-table message: (v1 B-tree address, local heap address).
pub fn parse_symbol_table(data: &[u8], so: usize) -> Result<(u64, u64)> {
    let mut c = Cursor::new(data, "symbol table message");
    Ok((c.addr(so)?, c.addr(so)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_contiguous_layout_whose_size_overflows_is_an_error() {
        // Version 2, rank 3, class 1 (contiguous), reserved, address, then three dimensions of 2^32 - 1
        // (their product, the size in elements, overflows 64 bits).
        let mut m = vec![2u8, 3, 1, 0, 0, 0, 0, 0];
        m.extend_from_slice(&0u64.to_le_bytes());
        for _ in 0..3 {
            m.extend_from_slice(&u32::MAX.to_le_bytes());
        }
        let file = [0u8; 64];
        let ctx = Ctx {
            data: &file,
            so: 8,
            sl: 8,
            base: 0,
        };
        let e = parse_layout(&m, &ctx, 3).unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
    }
}
