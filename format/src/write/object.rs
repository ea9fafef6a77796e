//! Writing one object header with its links and attributes, choosing compact storage up to 8
//! entries and dense storage (fractal heap + v2 B-tree) beyond.

use crate::array::Array;
use crate::checksum::lookup3;
use crate::convert;
use crate::dataspace::Dataspace;
use crate::error::Result;
use crate::heap::fractal::{write_heap, HeapKind};
use crate::io::PutLe;
use crate::messages::{self, DenseInfo, LinkTarget};
use crate::object_header::{encode_v2, mtype};
use crate::write::sink::{HeapSink, Sink};

/// Links or attributes beyond this count go to dense storage (libhdf5's default).
pub const MAX_COMPACT: usize = 8;

/// Compact attribute messages larger than this force dense storage.
const MAX_COMPACT_ATTR_BYTES: usize = 64 * 1024 - 1024;

/// Encodes an attribute value as a complete attribute message body (vlen data go to the heap).
pub fn attribute_message(sink: &mut Sink, name: &str, value: &Array) -> Result<Vec<u8>> {
    let dt = convert::dtype_for(&value.data)?;
    let mut dtb = Vec::new();
    dt.encode(&mut dtb)?;
    let mut dsb = Vec::new();
    Dataspace {
        dims: value.shape.clone(),
        max: None,
        null: false,
    }
    .encode(&mut dsb);
    let mut hs = HeapSink::new(sink);
    let raw = convert::encode(&value.data, &mut hs)?;
    hs.finish();
    Ok(messages::encode_attribute(name, &dtb, &dsb, &raw))
}

/// Writes an object header holding `core` messages, plus `links` (groups only) and attribute
/// messages `attrs` (name, encoded body); returns its address.
pub fn write_object(
    sink: &mut Sink,
    mut core: Vec<(u16, u8, Vec<u8>)>,
    links: Option<&[(String, LinkTarget)]>,
    attrs: &[(String, Vec<u8>)],
) -> Result<u64> {
    if let Some(links) = links {
        if links.len() <= MAX_COMPACT {
            core.push((mtype::LINK_INFO, 0, messages::encode_link_info(None)));
            core.push((mtype::GROUP_INFO, 0, messages::encode_group_info()));
            for (name, t) in links {
                core.push((mtype::LINK, 0, messages::encode_link(name, t)?));
            }
        } else {
            let mut objs = Vec::with_capacity(links.len());
            for (name, t) in links {
                objs.push(messages::encode_link(name, t)?);
            }
            let heap = write_heap(&objs, HeapKind::Links, sink.pos(), &mut sink.buf)?;
            let mut recs: Vec<(u32, &str, Vec<u8>)> = links
                .iter()
                .zip(heap.ids)
                .map(|((name, _), id)| (lookup3(name.as_bytes(), 0), name.as_str(), id))
                .collect();
            recs.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            let records: Vec<Vec<u8>> = recs
                .into_iter()
                .map(|(h, _, id)| {
                    let mut r = Vec::with_capacity(11);
                    r.put_u32(h);
                    r.extend_from_slice(&id);
                    r
                })
                .collect();
            let base = sink.base;
            let bt = crate::btree::v2::write_single_leaf(5, 11, &records, base, &mut sink.buf)?;
            core.push((
                mtype::LINK_INFO,
                0,
                messages::encode_link_info(Some(DenseInfo {
                    heap: heap.header,
                    name_btree: bt,
                })),
            ));
            core.push((mtype::GROUP_INFO, 0, messages::encode_group_info()));
        }
    }
    let big = attrs.iter().any(|(_, m)| m.len() > MAX_COMPACT_ATTR_BYTES);
    if attrs.len() <= MAX_COMPACT && !big {
        for (_, m) in attrs {
            core.push((mtype::ATTRIBUTE, 0, m.clone()));
        }
    } else {
        let objs: Vec<Vec<u8>> = attrs.iter().map(|(_, m)| m.clone()).collect();
        let heap = write_heap(&objs, HeapKind::Attributes, sink.pos(), &mut sink.buf)?;
        let mut recs: Vec<(u32, &str, u32, Vec<u8>)> = attrs
            .iter()
            .zip(heap.ids)
            .enumerate()
            .map(|(i, ((name, _), id))| (lookup3(name.as_bytes(), 0), name.as_str(), i as u32, id))
            .collect();
        recs.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let records: Vec<Vec<u8>> = recs
            .into_iter()
            .map(|(h, _, order, id)| {
                let mut r = Vec::with_capacity(17);
                r.extend_from_slice(&id);
                r.put_u8(0);
                r.put_u32(order);
                r.put_u32(h);
                r
            })
            .collect();
        let base = sink.base;
        let bt = crate::btree::v2::write_single_leaf(8, 17, &records, base, &mut sink.buf)?;
        core.push((
            mtype::ATTR_INFO,
            0,
            messages::encode_attr_info(DenseInfo {
                heap: heap.header,
                name_btree: bt,
            }),
        ));
    }
    let oh = encode_v2(&core)?;
    Ok(sink.append(&oh))
}
