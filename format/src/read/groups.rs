//! Group links: link messages (compact), dense links (fractal heap + v2 B-tree), symbol tables.

use crate::btree::{v1, v2::BTreeV2};
use crate::checksum::lookup3;
use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::heap::fractal::FractalHeap;
use crate::heap::local::LocalHeap;
use crate::io::{Cursor, UNDEF};
use crate::messages::{self, Link, LinkTarget};
use crate::object_header::{mtype, ObjectHeader};

/// Coarse object classification from its header messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Group,
    Dataset,
    /// A committed (named) datatype.
    Datatype,
    Other,
}

/// Classifies an object header.
pub fn kind(oh: &ObjectHeader<'_>) -> ObjectKind {
    if oh.find(mtype::LAYOUT).is_some() {
        ObjectKind::Dataset
    } else if oh.find(mtype::LINK_INFO).is_some()
        || oh.find(mtype::SYMBOL_TABLE).is_some()
        || oh.find(mtype::LINK).is_some()
        || oh.find(mtype::GROUP_INFO).is_some()
    {
        ObjectKind::Group
    } else if oh.find(mtype::DATATYPE).is_some() && oh.find(mtype::DATASPACE).is_none() {
        ObjectKind::Datatype
    } else if oh.find(mtype::DATASPACE).is_some() {
        ObjectKind::Dataset
    } else {
        // An object header with only attributes (or nothing) is an empty old-style group
        // only when it has a symbol table; otherwise we cannot tell.
        ObjectKind::Other
    }
}

/// Every link of a group, in storage order.
pub fn links(ctx: &Ctx<'_>, oh: &ObjectHeader<'_>) -> Result<Vec<Link>> {
    let mut out = Vec::new();
    for m in oh.all(mtype::LINK) {
        out.push(messages::parse_link(m.data, ctx.so)?);
    }
    if let Some(li) = oh.find(mtype::LINK_INFO) {
        let info = messages::parse_link_info(li.data, ctx.so)?;
        if info.heap != UNDEF && info.name_btree != UNDEF {
            let heap = FractalHeap::read(ctx, info.heap)?;
            let bt = BTreeV2::read(ctx, info.name_btree)?;
            if bt.btype != 5 || bt.rec_size < 5 {
                return corrupt("link name index is not a type-5 B-tree");
            }
            bt.for_each(ctx, &mut |rec| {
                let obj = heap.object_owned(ctx, &rec[4..])?;
                out.push(messages::parse_link(&obj, ctx.so)?);
                Ok(())
            })?;
        }
    }
    if let Some(st) = oh.find(mtype::SYMBOL_TABLE) {
        let (btree, heap_addr) = messages::parse_symbol_table(st.data, ctx.so)?;
        let heap = LocalHeap::read(ctx, heap_addr)?;
        let mut nodes = Vec::new();
        v1::group_leaves(ctx, btree, &mut nodes)?;
        for n in nodes {
            read_symbol_node(ctx, n, &heap, &mut out)?;
        }
    }
    Ok(out)
}

fn read_symbol_node(
    ctx: &Ctx<'_>,
    addr: u64,
    heap: &LocalHeap<'_>,
    out: &mut Vec<Link>,
) -> Result<()> {
    let mut c = ctx.cursor(addr, "symbol table node")?;
    c.expect_sig(b"SNOD")?;
    let v = c.u8()?;
    if v != 1 {
        return corrupt(format!("symbol node version {v}"));
    }
    c.skip(1)?;
    let n = c.u16()? as usize;
    for _ in 0..n {
        let name_off = c.uint(ctx.sl)?;
        let obj = c.addr(ctx.so)?;
        let cache = c.u32()?;
        c.skip(4)?;
        let scratch = c.bytes(16)?;
        let name = String::from_utf8_lossy(heap.string(name_off)?).into_owned();
        let target = if cache == 2 {
            let off = Cursor::new(scratch, "symbol scratch").u32()? as u64;
            LinkTarget::Soft(String::from_utf8_lossy(heap.string(off)?).into_owned())
        } else {
            LinkTarget::Hard(obj)
        };
        out.push(Link {
            name,
            target,
            order: None,
        });
    }
    Ok(())
}

/// Finds one link by name (dense groups are searched by name hash).
pub fn find_link(ctx: &Ctx<'_>, oh: &ObjectHeader<'_>, name: &str) -> Result<Option<LinkTarget>> {
    for m in oh.all(mtype::LINK) {
        let l = messages::parse_link(m.data, ctx.so)?;
        if l.name == name {
            return Ok(Some(l.target));
        }
    }
    if let Some(li) = oh.find(mtype::LINK_INFO) {
        let info = messages::parse_link_info(li.data, ctx.so)?;
        if info.heap != UNDEF && info.name_btree != UNDEF {
            let heap = FractalHeap::read(ctx, info.heap)?;
            let bt = BTreeV2::read(ctx, info.name_btree)?;
            if bt.btype != 5 || bt.rec_size < 5 {
                return corrupt("link name index is not a type-5 B-tree");
            }
            let h = lookup3(name.as_bytes(), 0).to_le_bytes();
            let mut found = None;
            bt.for_each(ctx, &mut |rec| {
                if found.is_none() && rec[..4] == h {
                    let obj = heap.object_owned(ctx, &rec[4..])?;
                    let l = messages::parse_link(&obj, ctx.so)?;
                    if l.name == name {
                        found = Some(l.target);
                    }
                }
                Ok(())
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
    }
    if oh.find(mtype::SYMBOL_TABLE).is_some() {
        for l in links(ctx, oh)? {
            if l.name == name {
                return Ok(Some(l.target));
            }
        }
    }
    Ok(None)
}
