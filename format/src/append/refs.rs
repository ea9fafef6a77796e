//! References kept valid across copy-on-write. A reference names an object by its header's address, and a
//! commit writes every changed object anew, so each reference to a moved object is rewritten to point at the
//! new header: object references (8-byte addresses), dataset region references (a global heap object that
//! starts with the address) and HDF5 1.12 references (an inline token, or a heap blob that starts with one),
//! in attributes and in datasets, alone, as compound members, array elements or elements of variable-length
//! sequences (whose heap objects are copied with the new addresses); and hard links, where an object has more
//! than one (the root's counts the superblock's). References into other files, and objects the reader cannot
//! read, are left as they are.

use crate::convert::{VlenSink, VlenSource};
use crate::datatype::Datatype;
use crate::error::{unsupported, Result};
use crate::messages::{Layout, LinkTarget};
use crate::object_header::mtype;
use crate::read::attrs;
use crate::read::file::H5File;
use crate::read::groups::{self, ObjectKind};
use std::collections::{HashMap, HashSet};

/// Where one element of a datatype holds a reference.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Slot {
    /// An object address (reference kind 0) at this offset (`.0`), `.1` bytes wide (the file's address width
    /// as libhdf5 1.12 and later store it; 8 bytes in older files).
    Object(usize, usize),
    /// The global heap ID (collection address, object index) of a region reference (kind 1) at this offset.
    Region(usize),
    /// An HDF5 1.12 reference at this offset.
    Revised(usize),
    /// The descriptor of a variable-length sequence (length, heap ID) at `at`, whose elements of
    /// `elem` bytes hold references at `inner`.
    Seq {
        at: usize,
        elem: usize,
        inner: std::sync::Arc<[Slot]>,
    },
}

/// Slots per element beyond which a type's references are not followed (an array type of millions of them).
const MAX_SLOTS: usize = 1 << 16;

/// The reference slots of one element of `dt`, in order; empty when it holds none.
pub(super) fn slots(dt: &Datatype) -> Vec<Slot> {
    let mut out = Vec::new();
    push_slots(dt, 0, &mut out);
    if out.len() > MAX_SLOTS {
        out.clear();
    }
    out
}

fn push_slots(dt: &Datatype, base: usize, out: &mut Vec<Slot>) {
    if out.len() > MAX_SLOTS {
        return;
    }
    match dt {
        Datatype::Reference {
            size: size @ (2 | 4 | 8),
            kind: 0,
        } => out.push(Slot::Object(base, *size)),
        Datatype::Reference {
            size: 6 | 8 | 12,
            kind: 1,
        } => out.push(Slot::Region(base)),
        Datatype::Reference { size, kind } if *kind >= 2 && *size >= 18 => {
            out.push(Slot::Revised(base))
        }
        Datatype::VarSeq(inner, _) => {
            let one = slots(inner);
            if !one.is_empty() {
                out.push(Slot::Seq {
                    at: base,
                    elem: inner.size(),
                    inner: one.into(),
                });
            }
        }
        Datatype::Compound { members, .. } => {
            for m in members {
                push_slots(&m.dtype, base.saturating_add(m.offset), out);
            }
        }
        Datatype::Array { dims, base: inner } => {
            let before = out.len();
            push_slots(inner, 0, out);
            let one: Vec<Slot> = out.drain(before..).collect();
            if one.is_empty() {
                return;
            }
            let n = crate::datatype::array_elements(dims);
            for i in 0..n {
                if out.len() > MAX_SLOTS {
                    return;
                }
                let at = base.saturating_add(i.saturating_mul(inner.size()));
                out.extend(one.iter().map(|s| s.shifted(at)));
            }
        }
        _ => {}
    }
}

impl Slot {
    fn offset(&self) -> usize {
        match self {
            Slot::Object(o, _) | Slot::Region(o) | Slot::Revised(o) => *o,
            Slot::Seq { at, .. } => *at,
        }
    }

    fn shifted(&self, by: usize) -> Slot {
        match self {
            Slot::Object(o, n) => Slot::Object(o.saturating_add(by), *n),
            Slot::Region(o) => Slot::Region(o.saturating_add(by)),
            Slot::Revised(o) => Slot::Revised(o.saturating_add(by)),
            Slot::Seq { at, elem, inner } => Slot::Seq {
                at: at.saturating_add(by),
                elem: *elem,
                inner: inner.clone(),
            },
        }
    }
}

/// The heap object of the variable-length sequence whose descriptor lies in `elem` at `at`: its bytes (its
/// elements), and where the descriptor's heap ID lies; `None` for an empty or unreadable sequence.
fn sequence<'h>(h5: &'h H5File, elem: &[u8], at: usize) -> Option<(usize, &'h [u8])> {
    let len = u32_at(elem, at)?;
    let (coll, index) = heap_id_at(h5, elem, at + 4)?;
    if len == 0 || coll == 0 {
        return None;
    }
    Some((at + 4, h5.vlen_object(coll, index).ok()?))
}

/// The file's address width.
fn offset_size(h5: &H5File) -> usize {
    h5.superblock().so
}

/// The global heap ID (collection address of the file's width, object index) at `at`.
fn heap_id_at(h5: &H5File, b: &[u8], at: usize) -> Option<(u64, u32)> {
    let so = offset_size(h5);
    Some((token_at(b, at, so)?, u32_at(b, at + so)?))
}

/// Writes the global heap ID (`coll`, `index`) at `at`, the address at the file's width.
fn put_heap_id(h5: &H5File, b: &mut [u8], at: usize, coll: u64, index: u32) -> Result<()> {
    let so = offset_size(h5);
    put_token(b, at, so, coll)?;
    b[at + so..at + so + 4].copy_from_slice(&index.to_le_bytes());
    Ok(())
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A token of `n` bytes (little-endian) at `at`.
fn token_at(b: &[u8], at: usize, n: usize) -> Option<u64> {
    if n == 0 || n > 8 {
        return None;
    }
    Some(crate::io::le_uint(b.get(at..at + n)?))
}

/// Where a reference's target address lies: in the element itself, or in a global heap object.
enum Found<'h> {
    /// The element's own bytes, from this offset, `n` bytes long.
    Inline { at: usize, n: usize, target: u64 },
    /// A heap object (the element's heap ID at `id_at`) whose bytes from `at`, `n` long, hold the target.
    Heap {
        id_at: usize,
        body: &'h [u8],
        at: usize,
        n: usize,
        target: u64,
    },
}

impl Found<'_> {
    fn target(&self) -> u64 {
        match self {
            Found::Inline { target, .. } | Found::Heap { target, .. } => *target,
        }
    }
}

/// The reference in `elem` at `slot`; `None` for a null reference, one into another file, or one whose heap
/// object cannot be read.
fn find<'h>(h5: &'h H5File, elem: &[u8], slot: &Slot) -> Option<Found<'h>> {
    // Offsets past the element (a damaged compound's member) hold nothing; below it, the arithmetic
    // below cannot overflow.
    if slot.offset() >= elem.len() {
        return None;
    }
    match *slot {
        // A sequence is not one reference: its elements are walked where it is met.
        Slot::Seq { .. } => None,
        Slot::Object(o, n) => {
            let target = token_at(elem, o, n)?;
            let undefined = n < 8 && target == (1u64 << (8 * n)) - 1 || target == crate::io::UNDEF;
            (target != 0 && !undefined).then_some(Found::Inline { at: o, n, target })
        }
        Slot::Region(o) => {
            let (coll, index) = heap_id_at(h5, elem, o)?;
            if coll == 0 {
                return None;
            }
            let body = h5.vlen_object(coll, index).ok()?;
            let n = offset_size(h5);
            let target = token_at(body, 0, n)?;
            (target != 0).then_some(Found::Heap {
                id_at: o,
                body,
                at: 0,
                n,
                target,
            })
        }
        Slot::Revised(o) => {
            let kind = *elem.get(o)?;
            let flags = *elem.get(o + 1)?;
            if kind == 0 || flags & 0x01 != 0 {
                return None;
            }
            if kind == 2 {
                let n = *elem.get(o + 2)? as usize;
                let target = token_at(elem, o + 3, n)?;
                return Some(Found::Inline {
                    at: o + 3,
                    n,
                    target,
                });
            }
            let (coll, index) = heap_id_at(h5, elem, o + 6)?;
            let body = h5.vlen_object(coll, index).ok()?;
            let n = *body.first()? as usize;
            let target = token_at(body, 1, n)?;
            Some(Found::Heap {
                id_at: o + 6,
                body,
                at: 1,
                n,
                target,
            })
        }
    }
}

/// Every object the references in `raw` (elements of `elem` bytes with these slots) point at.
pub(super) fn collect_targets(
    h5: &H5File,
    slots: &[Slot],
    elem: usize,
    raw: &[u8],
    out: &mut HashSet<u64>,
) {
    if elem == 0 {
        return;
    }
    for e in raw.chunks_exact(elem) {
        for s in slots {
            if let Slot::Seq { at, elem, inner } = s {
                if let Some((_, body)) = sequence(h5, e, *at) {
                    collect_targets(h5, inner, *elem, body, out);
                }
            } else if let Some(f) = find(h5, e, s) {
                out.insert(f.target());
            }
        }
    }
}

/// Rewrites every reference in `raw` whose target `map` holds to point at the target's new address; region
/// and 1.12 blobs are copied to new heap objects in `heap`. A reference that `map` names gets a new value
/// (or heap object) even when its address stays the same, so that every pass of a commit writes as many bytes.
/// A reference to one of this session's `stand_ins` that `map` lacks (its object was unlinked) is an error.
pub(super) fn remap(
    h5: &H5File,
    slots: &[Slot],
    elem: usize,
    raw: &mut [u8],
    map: &HashMap<u64, u64>,
    stand_ins: &HashSet<u64>,
    heap: &mut dyn VlenSink,
) -> Result<()> {
    if elem == 0 {
        return Ok(());
    }
    for e in raw.chunks_exact_mut(elem) {
        for s in slots {
            if let Slot::Seq { at, elem, inner } = s {
                // A sequence naming a moved object is copied to a new heap object with the new addresses.
                let Some((id_at, body)) = sequence(h5, e, *at) else {
                    continue;
                };
                if !points_into(h5, inner, *elem, body, map) {
                    continue;
                }
                let mut copy = body.to_vec();
                remap(h5, inner, *elem, &mut copy, map, stand_ins, heap)?;
                let (coll, index) = heap.put(&copy)?;
                put_heap_id(h5, e, id_at, coll, index)?;
                continue;
            }
            let Some(found) = find(h5, e, s) else {
                continue;
            };
            let Some(&new) = map.get(&found.target()) else {
                if stand_ins.contains(&found.target()) {
                    return Err(unlinked_target());
                }
                continue;
            };
            match found {
                Found::Inline { at, n, .. } => put_token(e, at, n, new)?,
                Found::Heap {
                    id_at, body, at, n, ..
                } => {
                    let mut copy = body.to_vec();
                    put_token(&mut copy, at, n, new)?;
                    let (coll, index) = heap.put(&copy)?;
                    put_heap_id(h5, e, id_at, coll, index)?;
                }
            }
        }
    }
    Ok(())
}

/// The error of a reference to an object created and then unlinked in this session.
pub(super) fn unlinked_target() -> crate::error::FormatError {
    crate::error::FormatError::NotFound(
        "a reference's target, created and then unlinked in this session".into(),
    )
}

/// Writes `addr` as a little-endian token of `n` bytes at `at`.
fn put_token(b: &mut [u8], at: usize, n: usize, addr: u64) -> Result<()> {
    if n < 8 && addr >> (8 * n) != 0 {
        return unsupported(format!(
            "a reference token of {n} bytes cannot hold the address {addr:#x}"
        ));
    }
    b[at..at + n].copy_from_slice(&addr.to_le_bytes()[..n]);
    Ok(())
}

/// An object of the committed file holding references: in one of its attributes, or in its data.
pub(super) struct Holder {
    /// The object's header address.
    pub addr: u64,
    /// The object's path (components), as first reached from the root along hard links.
    pub path: Vec<String>,
    /// True when the references are in the dataset's data (not only in attributes).
    pub in_data: bool,
    /// The objects its references point at.
    pub targets: HashSet<u64>,
}

/// Objects at most this deep are walked (a link cycle ends at the visited check long before).
const MAX_DEPTH: usize = 512;

/// Every object reachable from the root along hard links that holds references, with what they point at.
/// Objects the reader cannot read are skipped.
pub(super) fn holders(h5: &H5File) -> Vec<Holder> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(h5.root_addr(), Vec::<String>::new())];
    let ctx = h5.ctx();
    // Hard links into each object (the superblock's to the root counted), and each group's hard link targets.
    let mut incoming: HashMap<u64, u32> = HashMap::from([(h5.root_addr(), 1)]);
    // Each group (as a holder of no target yet) and its hard links' targets.
    let mut linking: Vec<(Holder, Vec<u64>)> = Vec::new();
    while let Some((addr, path)) = stack.pop() {
        if !seen.insert(addr) {
            continue;
        }
        let Ok(oh) = h5.header_at(addr) else {
            continue;
        };
        let mut targets = HashSet::new();
        let _ = attrs::for_each_raw(h5, &oh, &mut |raw| {
            if let Ok(a) = attrs::parse(h5, raw) {
                let s = slots(&a.dtype);
                if !s.is_empty() {
                    collect_targets(h5, &s, a.dtype.size(), a.data, &mut targets);
                }
            }
            Ok(())
        });
        let mut in_data = false;
        match groups::kind(&oh) {
            ObjectKind::Group if path.len() < MAX_DEPTH => {
                if let Ok(links) = groups::links(&ctx, &oh) {
                    let mut hard = Vec::new();
                    for l in links {
                        if let LinkTarget::Hard(a) = l.target {
                            *incoming.entry(a).or_insert(0) += 1;
                            hard.push(a);
                            let mut p = path.clone();
                            p.push(l.name);
                            stack.push((a, p));
                        }
                    }
                    let group = Holder {
                        addr,
                        path: path.clone(),
                        in_data: false,
                        targets: HashSet::new(),
                    };
                    linking.push((group, hard));
                }
            }
            ObjectKind::Dataset => {
                let dt = oh
                    .find(mtype::DATATYPE)
                    .and_then(|m| h5.datatype_msg(m.flags, m.data).ok());
                if let Some(dt) = dt {
                    let s = slots(&dt);
                    if !s.is_empty() {
                        let mut held = HashSet::new();
                        data_targets(h5, addr, &s, dt.size(), &mut held);
                        in_data = !held.is_empty();
                        targets.extend(held);
                    }
                }
            }
            _ => {}
        }
        if !targets.is_empty() {
            out.push(Holder {
                addr,
                path,
                in_data,
                targets,
            });
        }
    }
    // A second hard link to an object is as much a reference as an object reference is: the group holding it
    // follows the object wherever a commit moves it (the commit rewrites links to moved objects).
    for (mut group, hard) in linking {
        group.targets = hard
            .into_iter()
            .filter(|a| incoming.get(a).is_some_and(|&n| n > 1))
            .collect();
        if !group.targets.is_empty() {
            out.push(group);
        }
    }
    out
}

/// The objects the references in the data of the dataset at `addr` point at: chunk by chunk (the chunks it
/// has), or its contiguous or compact data whole; nothing for a virtual dataset (its sources are datasets of
/// their own) or data that cannot be read.
fn data_targets(h5: &H5File, addr: u64, slots: &[Slot], elem: usize, out: &mut HashSet<u64>) {
    let Ok(d) = h5.dataset_at(addr) else {
        return;
    };
    match d.layout() {
        Layout::Chunked { .. } => {
            for e in d.chunk_entries().unwrap_or_default() {
                if let Ok(raw) = d.decoded_chunk(&e) {
                    collect_targets(h5, slots, elem, &raw, out);
                }
            }
        }
        Layout::Virtual { .. } => {}
        _ => {
            let shape = d.shape().to_vec();
            if let Ok(raw) = d.read_box_raw(&vec![0; shape.len()], &shape) {
                collect_targets(h5, slots, elem, &raw, out);
            }
        }
    }
}

/// Whether any reference in `raw` points at an object `map` holds (one that this commit moves).
pub(super) fn points_into(
    h5: &H5File,
    slots: &[Slot],
    elem: usize,
    raw: &[u8],
    map: &HashMap<u64, u64>,
) -> bool {
    elem != 0
        && raw.chunks_exact(elem).any(|e| {
            slots.iter().any(|s| match s {
                Slot::Seq { at, elem, inner } => sequence(h5, e, *at)
                    .is_some_and(|(_, body)| points_into(h5, inner, *elem, body, map)),
                s => find(h5, e, s).is_some_and(|f| map.contains_key(&f.target())),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::Member;

    #[test]
    fn slots_follow_compound_members_and_array_elements() {
        let obj = Datatype::Reference { size: 8, kind: 0 };
        let reg = Datatype::Reference { size: 12, kind: 1 };
        assert_eq!(slots(&obj), vec![Slot::Object(0, 8)]);
        let arr = Datatype::Array {
            dims: vec![3],
            base: Box::new(obj.clone()),
        };
        let int = Datatype::Int {
            size: 4,
            signed: true,
            be: false,
            offset: 0,
            precision: 32,
        };
        let c = Datatype::Compound {
            size: 48,
            members: vec![
                Member {
                    name: "i".into(),
                    offset: 0,
                    dtype: int.clone(),
                },
                Member {
                    name: "a".into(),
                    offset: 4,
                    dtype: arr,
                },
                Member {
                    name: "r".into(),
                    offset: 28,
                    dtype: reg,
                },
            ],
        };
        assert_eq!(
            slots(&c),
            vec![
                Slot::Object(4, 8),
                Slot::Object(12, 8),
                Slot::Object(20, 8),
                Slot::Region(28)
            ]
        );
        assert!(slots(&int).is_empty());
        assert_eq!(
            slots(&Datatype::VarSeq(Box::new(obj.clone()), 16)),
            vec![Slot::Seq {
                at: 0,
                elem: 8,
                inner: vec![Slot::Object(0, 8)].into()
            }]
        );
        assert!(slots(&Datatype::VarSeq(Box::new(int.clone()), 16)).is_empty());
    }

    #[test]
    fn tokens_too_wide_for_their_field_are_refused() {
        let mut b = [0u8; 8];
        put_token(&mut b, 0, 4, 0x1234_5678).unwrap();
        assert_eq!(&b[..4], &[0x78, 0x56, 0x34, 0x12]);
        assert!(put_token(&mut b, 0, 4, 1 << 32).is_err());
    }
}
