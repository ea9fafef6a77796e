//! Writing one object header with its links and attributes, choosing compact storage up to 8
//! entries and dense storage (fractal heap + v2 B-tree) beyond.

use crate::array::Array;
use crate::checksum::lookup3;
use crate::convert;
use crate::dataspace::Dataspace;
use crate::datatype::Datatype;
use crate::error::Result;
use crate::heap::fractal::{write_heap, HeapKind};
use crate::io::{PutLe, UNDEF};
use crate::messages::{self, DenseInfo, LinkTarget};
use crate::object_header::{encode_v2_into, mtype};
use crate::sizes::Sizes;
use crate::write::sink::{HeapSink, Sink};

/// Links or attributes beyond this count go to dense storage (libhdf5's default).
pub const MAX_COMPACT: usize = 8;

/// Compact attribute messages larger than this force dense storage.
const MAX_COMPACT_ATTR_BYTES: usize = 64 * 1024 - 1024;

/// Encodes an attribute value as a complete attribute message body (vlen data go to the heap).
pub fn attribute_message(sink: &mut Sink, name: &str, value: &Array) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    attribute_message_into(&mut out, sink, name, value)?;
    Ok(out)
}

/// [`attribute_message`] appended to `out`, the value encoded in place after the message's header (what a
/// writer of many attributes does: one buffer for all their messages). On error `out` may hold part of it.
pub fn attribute_message_into(
    out: &mut Vec<u8>,
    sink: &mut Sink,
    name: &str,
    value: &Array,
) -> Result<()> {
    let dt = convert::dtype_for_sized(&value.data, sink.sizes.offsets)?;
    let sizes = sink.sizes;
    attribute_header_into(out, name, &dt, &value.shape, sizes)?;
    let mut hs = HeapSink::new(sink);
    convert::encode_into(&value.data, &mut hs, out)?;
    hs.finish();
    Ok(())
}

/// An attribute message of type `dt` and shape `shape` holding the raw elements `raw` (file byte order), its
/// dataspace at the file's length width.
pub fn attribute_message_raw(
    name: &str,
    dt: &Datatype,
    shape: &[u64],
    raw: &[u8],
    sizes: Sizes,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(9 + name.len() + 48 + 8 * shape.len() + raw.len());
    attribute_header_into(&mut out, name, dt, shape, sizes)?;
    out.extend_from_slice(raw);
    Ok(out)
}

/// Everything of an attribute message but its elements, appended to `out`.
fn attribute_header_into(
    out: &mut Vec<u8>,
    name: &str,
    dt: &Datatype,
    shape: &[u64],
    sizes: Sizes,
) -> Result<()> {
    // Version 3: version, flags, name/datatype/dataspace sizes, name encoding (UTF-8), then the
    // NUL-terminated name, the datatype, the dataspace and the data, unpadded.
    let start = out.len();
    out.put_u8(3);
    out.put_u8(0);
    out.put_u16((name.len() + 1) as u16);
    out.put_u16(0); // datatype size, patched below
    out.put_u16(0); // dataspace size, patched below
    out.put_u8(1);
    out.extend_from_slice(name.as_bytes());
    out.put_u8(0);
    let at = out.len();
    dt.encode(out)?;
    let tsize = out.len() - at;
    let at = out.len();
    Dataspace {
        dims: shape.to_vec(),
        max: None,
        null: false,
    }
    .encode_sized(out, sizes)?;
    let ssize = out.len() - at;
    if tsize > u16::MAX as usize || ssize > u16::MAX as usize {
        return crate::error::invalid(format!(
            "attribute {name:?}: datatype or dataspace description too large"
        ));
    }
    out[start + 4..start + 6].copy_from_slice(&(tsize as u16).to_le_bytes());
    out[start + 6..start + 8].copy_from_slice(&(ssize as u16).to_le_bytes());
    Ok(())
}

/// Writes an object header holding `core` messages, plus `links` (groups only) and attribute
/// messages `attrs` (name, encoded body); returns its address.
pub fn write_object<N: AsRef<str>, M: AsRef<[u8]>>(
    sink: &mut Sink,
    core: Vec<(u16, u8, Vec<u8>)>,
    links: Option<&[(&str, LinkTarget)]>,
    attrs: &[(N, M)],
) -> Result<u64> {
    // The bodies made here live in these locals and the header borrows every body, so a small
    // object costs no allocation per message (an empty group: none at all).
    let sizes = sink.sizes;
    let mut link_info = None;
    // Every link message body goes into one buffer; `link_ends[i]` is where link `i`'s ends.
    let mut link_bytes = Vec::new();
    let mut link_ends: smallvec::SmallVec<[usize; MAX_COMPACT]> = smallvec::SmallVec::new();
    if let Some(links) = links {
        link_bytes.reserve(links.len() * (16 + sizes.offsets));
        link_ends.reserve_exact(links.len());
        for (name, t) in links {
            messages::encode_link_into(&mut link_bytes, name, t, sizes)?;
            link_ends.push(link_bytes.len());
        }
    }
    let link_body = |i: usize| &link_bytes[if i == 0 { 0 } else { link_ends[i - 1] }..link_ends[i]];
    let mut compact_links = 0;
    if let Some(links) = links {
        if links.len() <= MAX_COMPACT {
            link_info = Some(messages::link_info_bytes(None, sizes));
            compact_links = links.len();
        } else {
            let objs: Vec<&[u8]> = (0..links.len()).map(link_body).collect();
            let heap = write_heap(&objs, HeapKind::Links, sink.pos(), &mut sink.buf, sizes)?;
            let mut recs: Vec<(u32, &str, &[u8])> = links
                .iter()
                .enumerate()
                .map(|(i, (name, _))| (lookup3(name.as_bytes(), 0), *name, heap.id(i)))
                .collect();
            recs.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            let mut records = Vec::with_capacity(recs.len() * 11);
            for (h, _, id) in recs {
                records.put_u32(h);
                records.extend_from_slice(id);
            }
            let base = sink.base;
            let bt =
                crate::btree::v2::write_single_leaf(5, 11, &records, base, &mut sink.buf, sizes)?;
            link_info = Some(messages::link_info_bytes(
                Some(DenseInfo {
                    heap: heap.header,
                    name_btree: bt,
                }),
                sizes,
            ));
        }
    }
    let big = attrs
        .iter()
        .any(|(_, m)| m.as_ref().len() > MAX_COMPACT_ATTR_BYTES);
    let compact_attrs = attrs.len() <= MAX_COMPACT && !big;
    let mut attr_info = None;
    if !compact_attrs {
        let objs: Vec<&[u8]> = attrs.iter().map(|(_, m)| m.as_ref()).collect();
        let heap = write_heap(
            &objs,
            HeapKind::Attributes,
            sink.pos(),
            &mut sink.buf,
            sizes,
        )?;
        let mut recs: Vec<(u32, &str, u32)> = attrs
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                let name = name.as_ref();
                (lookup3(name.as_bytes(), 0), name, i as u32)
            })
            .collect();
        recs.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut records = Vec::with_capacity(recs.len() * 17);
        for (h, _, order) in recs {
            records.extend_from_slice(heap.id(order as usize));
            records.put_u8(0);
            records.put_u32(order);
            records.put_u32(h);
        }
        let base = sink.base;
        let bt = crate::btree::v2::write_single_leaf(8, 17, &records, base, &mut sink.buf, sizes)?;
        attr_info = Some(messages::encode_attr_info(
            DenseInfo {
                heap: heap.header,
                name_btree: bt,
            },
            sizes,
        ));
    }
    // Core messages first, then the group's link messages, then the attributes.
    let compact_info;
    // Held inline for the usual object (up to 8 compact links or attributes besides its core messages).
    let mut msgs: smallvec::SmallVec<[(u16, u8, &[u8]); 16]> = smallvec::SmallVec::new();
    msgs.reserve(core.len() + 3 + compact_links + attrs.len().min(MAX_COMPACT));
    msgs.extend(core.iter().map(|(t, f, d)| (*t, *f, d.as_slice())));
    if let Some(info) = &link_info {
        msgs.push((mtype::LINK_INFO, 0, info));
        msgs.push((mtype::GROUP_INFO, 0, &messages::GROUP_INFO));
        msgs.extend((0..compact_links).map(|i| (mtype::LINK, 0, link_body(i))));
    }
    // libhdf5 counts the attributes of a v2 object header through its attribute-info message alone
    // (`H5Oget_info`'s `num_attrs`, h5py's `len(attrs)`, h5repack's copy, and the count it keeps when it
    // adds or deletes attributes), so compact attributes get one too, its addresses undefined.
    match &attr_info {
        Some(info) => msgs.push((mtype::ATTR_INFO, 0, info)),
        None if attrs.is_empty() => {}
        None => {
            compact_info = messages::encode_attr_info(
                DenseInfo {
                    heap: UNDEF,
                    name_btree: UNDEF,
                },
                sizes,
            );
            msgs.push((mtype::ATTR_INFO, 0, &compact_info));
            msgs.extend(attrs.iter().map(|(_, m)| (mtype::ATTRIBUTE, 0, m.as_ref())))
        }
    }
    let addr = sink.pos();
    encode_v2_into(&msgs, &mut sink.buf)?;
    Ok(addr)
}
