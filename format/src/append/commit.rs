//! A commit's writes: the session's tree of changed objects goes into the sink, each object written anew
//! (copy-on-write), parents after children, up to the root. When references point at objects the commit
//! moves, it writes twice: the first pass finds every object's new address, the second writes the
//! references with them (reusing the first pass's compressed chunks of new datasets).

use super::refs;
use super::{
    dataspace_of, AttrList, DataChange, DatasetState, FileAppender, GroupState, Msgs, NewAttr,
    NewRefs, Node, RegionAttr,
};
use crate::array::Array;
use crate::btree::v1::write_chunk_tree;
use crate::datatype::Datatype;
use crate::error::{invalid, unsupported, FormatError, Result};
use crate::io::Cursor;
use crate::messages::{self, ChunkIndex, Layout, LinkTarget};
use crate::object_header::mtype;
use crate::read::file::H5File;
use crate::write::dataset::write_dataset;
use crate::write::object::{attribute_message, write_object};
use crate::write::sink::{HeapSink, Replay, Sink};
use std::collections::{HashMap, HashSet};

impl FileAppender {
    /// Writes the tree into the sink; returns the root's address. References to moved objects are kept
    /// valid: a first pass finds every object's new address, a second writes the references with them.
    /// References have fixed sizes and their datasets' chunks are stored unfiltered, so both passes place
    /// every object alike.
    pub(super) fn write_all(&mut self) -> Result<u64> {
        let holders = self.load_reference_holders();
        if !holders && !self.new_refs {
            let mut pass = Pass {
                h5: &self.h5,
                map: None,
                stand_ins: &self.stand_ins,
                moved: Vec::new(),
            };
            return write_group(&mut self.sink, &self.root, &mut pass);
        }
        let start = self.sink.buf.len();
        let mut stay = HashMap::new();
        tree_addrs(&self.root, &mut |a| {
            stay.insert(a, a);
        });
        let mut pass = Pass {
            h5: &self.h5,
            map: Some(&stay),
            stand_ins: &self.stand_ins,
            moved: Vec::new(),
        };
        // New datasets' filtered chunks are recorded, and the second pass reuses them where it stores them
        // alike (their data does not change between the passes), so that nothing is compressed twice.
        self.sink.recorded = Some(HashMap::new());
        let first = write_group(&mut self.sink, &self.root, &mut pass);
        let chunks = self.sink.recorded.take().unwrap_or_default();
        let first = first?;
        let found = pass.moved;
        let mut map = HashMap::new();
        for (old, new) in &found {
            // The tree holds each committed object once (tree.rs), so each old address has one new one.
            map.entry(*old).or_insert(*new);
        }
        self.sink.replay = Some(Replay {
            start: self.sink.base + start as u64,
            bytes: self.sink.buf.split_off(start),
            chunks,
        });
        let mut pass = Pass {
            h5: &self.h5,
            map: Some(&map),
            stand_ins: &self.stand_ins,
            moved: Vec::new(),
        };
        let root = write_group(&mut self.sink, &self.root, &mut pass);
        self.sink.replay = None;
        let root = root?;
        if root != first || pass.moved != found {
            return invalid("object addresses moved between the passes that rewrite references");
        }
        Ok(root)
    }

    /// Loads into the tree (so that commit rewrites them) the objects whose references point at objects the
    /// commit moves, until no more move; true when any was loaded.
    fn load_reference_holders(&mut self) -> bool {
        let holders = refs::holders(&self.h5);
        let mut done = vec![false; holders.len()];
        let mut any = false;
        loop {
            let mut moved = HashSet::new();
            tree_addrs(&self.root, &mut |a| {
                moved.insert(a);
            });
            let mut grew = false;
            for (h, done) in holders.iter().zip(done.iter_mut()) {
                if *done || h.targets.is_disjoint(&moved) {
                    continue;
                }
                *done = true;
                any = true;
                grew = true;
                if moved.contains(&h.addr) {
                    // Already in the tree (perhaps by another of its paths): that node is the one written.
                    if h.in_data {
                        mark_remap(&mut self.root, h.addr);
                    }
                    continue;
                }
                // Reached through a group the tree holds under another path (a second hard link), the walk
                // continues from there: the group is not loaded (and written) twice.
                let path = format!("/{}", h.path.join("/"));
                // A holder unlinked or replaced in this session, or reached through a link the session
                // changed, is not this commit's to keep.
                if let Ok(Node::Dataset(d)) = self.child(&path) {
                    d.remap_data |= h.in_data;
                }
            }
            if !grew {
                return any;
            }
        }
    }
}

/// Marks the tree's datasets committed at `addr` for their references to be rewritten.
fn mark_remap(g: &mut GroupState, addr: u64) {
    for node in g.children.values_mut() {
        match node {
            Node::Group(s) => mark_remap(s, addr),
            Node::Dataset(d) if d.addr == addr => d.remap_data = true,
            _ => {}
        }
    }
}

/// Calls `f` with the committed address of every object in the tree (the root included).
fn tree_addrs(g: &GroupState, f: &mut dyn FnMut(u64)) {
    if let Some(a) = g.addr {
        f(a);
    }
    for node in g.children.values() {
        match node {
            Node::Group(s) => tree_addrs(s, f),
            Node::Dataset(d) => f(d.addr),
            Node::New { replaces, .. } => {
                if let Some(a) = replaces {
                    f(*a)
                }
            }
        }
    }
}

/// An attribute's name and encoded message.
type EncodedAttr = (String, Vec<u8>);

/// One pass of a commit's writes.
struct Pass<'a> {
    h5: &'a H5File,
    /// Old address → new one of every object the commit moves, when references to them are rewritten.
    map: Option<&'a HashMap<u64, u64>>,
    /// Stand-in addresses of objects created in this session: each must be in `map`.
    stand_ins: &'a HashSet<u64>,
    /// (committed address, new address) of every object written, in order.
    moved: Vec<(u64, u64)>,
}

impl Pass<'_> {
    /// Attribute messages with their references rewritten (as they are when no map is set).
    fn attrs<'m>(
        &self,
        sink: &mut Sink,
        attrs: &'m [(String, Vec<u8>)],
    ) -> Result<std::borrow::Cow<'m, [EncodedAttr]>> {
        let Some(map) = self.map else {
            return Ok(attrs.into());
        };
        let mut out = attrs.to_vec();
        for (_, raw) in &mut out {
            let Ok(a) = crate::read::attrs::parse(self.h5, raw) else {
                continue;
            };
            let slots = refs::slots(&a.dtype);
            if slots.is_empty() {
                continue;
            }
            let (at, len, elem) = (a.data_at, a.data.len(), a.dtype.size());
            let mut data = a.data.to_vec();
            let mut hs = HeapSink::new(sink);
            refs::remap(
                self.h5,
                &slots,
                elem,
                &mut data,
                map,
                self.stand_ins,
                &mut hs,
            )?;
            hs.finish();
            raw[at..at + len].copy_from_slice(&data);
        }
        Ok(out.into())
    }

    /// All the attribute messages of `list`: its messages with their references rewritten, then its
    /// attributes of region references encoded.
    fn all_attrs<'m>(
        &self,
        sink: &mut Sink,
        list: &'m AttrList,
    ) -> Result<std::borrow::Cow<'m, [EncodedAttr]>> {
        let msgs = self.attrs(sink, &list.msgs)?;
        if list.regions.is_empty() {
            return Ok(msgs);
        }
        let mut out = msgs.into_owned();
        for (n, r) in &list.regions {
            out.push((n.clone(), self.region_attr(sink, n, r)?));
        }
        Ok(out.into())
    }

    /// The message of an attribute of region references set in this session.
    fn region_attr(&self, sink: &mut Sink, name: &str, r: &RegionAttr) -> Result<Vec<u8>> {
        let ids = self.region_ids(sink, &r.keys, &r.sels)?;
        let dt = Datatype::Reference {
            size: sink.sizes.heap_id_size(),
            kind: 1,
        };
        crate::write::object::attribute_message_raw(name, &dt, &r.shape, &ids, sink.sizes)
    }

    /// A heap object per region reference (its dataset's address as this pass maps it, then its selection);
    /// returns their heap IDs.
    fn region_ids(&self, sink: &mut Sink, keys: &[u64], sels: &[Vec<u8>]) -> Result<Vec<u8>> {
        let sizes = sink.sizes;
        let mut ids = Vec::with_capacity(sizes.heap_id_size() * keys.len());
        let mut hs = HeapSink::new(sink);
        for (key, sel) in keys.iter().zip(sels) {
            let addr = match self.map.and_then(|m| m.get(key)) {
                Some(a) => *a,
                None if self.stand_ins.contains(key) => return Err(refs::unlinked_target()),
                None => *key,
            };
            let mut body = Vec::with_capacity(sizes.offsets + sel.len());
            sizes.put_offset(&mut body, addr);
            body.extend_from_slice(sel);
            let (coll, index, _) = hs.put_located(&body)?;
            sizes.put_offset(&mut ids, coll);
            ids.extend_from_slice(&index.to_le_bytes());
        }
        hs.finish();
        Ok(ids)
    }

    /// The data of the committed dataset at `addr` with its references rewritten, as a change of layout: a
    /// chunked dataset's chunks that hold references to moved objects are stored anew, unfiltered (every
    /// filter marked skipped, so that they take the same bytes whatever addresses they hold); its other chunks
    /// stay where they are.
    fn remapped_data(&self, sink: &mut Sink, addr: u64) -> Result<DataChange> {
        let map = match self.map {
            Some(m) => m,
            None => return invalid("rewriting references without their new addresses"),
        };
        let d = self.h5.dataset_at(addr)?;
        let dims = d.shape().to_vec();
        let elem = d.dtype().size();
        let slots = refs::slots(d.dtype());
        let remap = |sink: &mut Sink, raw: &mut [u8]| -> Result<()> {
            let mut hs = HeapSink::new(sink);
            refs::remap(self.h5, &slots, elem, raw, map, self.stand_ins, &mut hs)?;
            hs.finish();
            Ok(())
        };
        Ok(match d.layout() {
            Layout::Chunked { chunk, .. } => {
                let n = d.filters().len();
                if n > 32 {
                    return unsupported("rewriting references in chunks of more than 32 filters");
                }
                let skip_all = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
                let mut entries = d.chunk_entries()?;
                for e in &mut entries {
                    let mut raw = d.decoded_chunk(e)?;
                    if !refs::points_into(self.h5, &slots, elem, &raw, map) {
                        continue;
                    }
                    remap(sink, &mut raw)?;
                    e.addr = sink.append(&raw);
                    e.size = raw.len() as u64;
                    e.filter_mask = skip_all;
                }
                DataChange::Chunked {
                    dims,
                    chunk: chunk.clone(),
                    entries,
                    old_leaves: vec![],
                }
            }
            Layout::Virtual { .. } => {
                return unsupported("rewriting references in a virtual dataset")
            }
            layout => {
                let mut raw = d.read_box_raw(&vec![0; dims.len()], &dims)?;
                remap(sink, &mut raw)?;
                match layout {
                    Layout::Compact(_) => DataChange::Layout(Layout::Compact(raw)),
                    _ => DataChange::Layout(Layout::Contiguous {
                        size: raw.len() as u64,
                        addr: if raw.is_empty() {
                            crate::io::UNDEF
                        } else {
                            sink.append(&raw)
                        },
                    }),
                }
            }
        })
    }
}

fn write_group(sink: &mut Sink, g: &GroupState, pass: &mut Pass) -> Result<u64> {
    let mut links = g.links.clone();
    // Hard links to objects this commit moves (a second link to one of them) follow it; links to children
    // written here are set below.
    if let Some(map) = pass.map {
        for target in links.values_mut() {
            if let LinkTarget::Hard(a) = target {
                if let Some(&new) = map.get(a) {
                    *a = new;
                }
            }
        }
    }
    for (name, node) in &g.children {
        let addr = match node {
            Node::Group(s) => write_group(sink, s, pass)?,
            Node::Dataset(d) => write_changed_dataset(sink, d, pass)?,
            Node::New {
                array,
                opts,
                attrs,
                replaces,
                refs,
            } => {
                let mut enc = Vec::with_capacity(attrs.len());
                for (n, a) in attrs {
                    match a {
                        NewAttr::Value(v) => enc.push((n.clone(), attribute_message(sink, n, v)?)),
                        NewAttr::Message(m) => enc.push((n.clone(), m.clone())),
                        NewAttr::Regions(_) => {}
                    }
                }
                // The references rewritten (a copy), or the messages as they are.
                let remapped = match pass.attrs(sink, &enc)? {
                    std::borrow::Cow::Owned(v) => Some(v),
                    std::borrow::Cow::Borrowed(_) => None,
                };
                let mut enc = remapped.unwrap_or(enc);
                for (n, a) in attrs {
                    if let NewAttr::Regions(r) = a {
                        enc.push((n.clone(), pass.region_attr(sink, n, r)?));
                    }
                }
                let addr = match refs {
                    Some(kind) => write_ref_dataset(sink, array, kind, &enc, pass)?,
                    None => write_dataset(sink, array, opts, &enc)?,
                };
                if let Some(old) = replaces {
                    pass.moved.push((*old, addr));
                }
                addr
            }
        };
        links.insert(name.clone(), LinkTarget::Hard(addr));
    }
    let links: Vec<(&str, LinkTarget)> =
        links.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let attrs = pass.all_attrs(sink, &g.attrs)?;
    let addr = write_object(sink, g.extra.clone(), Some(&links), &attrs)?;
    if let Some(old) = g.addr {
        pass.moved.push((old, addr));
    }
    Ok(addr)
}

/// Writes a dataset of object or region references created in this session (contiguous), its targets'
/// addresses rewritten as the pass maps them.
fn write_ref_dataset(
    sink: &mut Sink,
    array: &Array,
    kind: &NewRefs,
    attrs: &[(String, Vec<u8>)],
    pass: &Pass,
) -> Result<u64> {
    let crate::Data::U64(keys) = &array.data else {
        return invalid("a dataset of references holds addresses");
    };
    let raw = match kind {
        NewRefs::Objects => {
            let so = sink.sizes.offsets;
            let mut raw = Vec::with_capacity(so * keys.len());
            for k in keys {
                sink.sizes.put_offset(&mut raw, *k);
            }
            if let Some(map) = pass.map {
                let mut hs = HeapSink::new(sink);
                let slots = [refs::Slot::Object(0, so)];
                refs::remap(pass.h5, &slots, so, &mut raw, map, pass.stand_ins, &mut hs)?;
                hs.finish();
            }
            raw
        }
        NewRefs::Regions(regions) => pass.region_ids(sink, keys, regions)?,
    };
    let layout = Layout::Contiguous {
        size: raw.len() as u64,
        addr: if raw.is_empty() {
            crate::io::UNDEF
        } else {
            sink.append(&raw)
        },
    };
    let region = matches!(kind, NewRefs::Regions(_));
    let msgs =
        crate::write::dataset::refs_messages(keys.len() as u64, region, &layout, sink.sizes)?;
    write_object(sink, msgs, None, attrs)
}

fn write_changed_dataset(sink: &mut Sink, d: &DatasetState, pass: &mut Pass) -> Result<u64> {
    let mut msgs = d.msgs.clone();
    let remapped;
    let change = if d.remap_data {
        if d.change.is_some() {
            return unsupported("rewriting references in a dataset changed in the same session");
        }
        remapped = pass.remapped_data(sink, d.addr)?;
        Some(&remapped)
    } else {
        d.change.as_ref()
    };
    match change {
        None => {}
        Some(DataChange::Layout(layout)) => {
            let elem = elem_size(&msgs)?;
            let body = messages::encode_layout(layout, elem, sink.sizes)?;
            replace_msg(&mut msgs, mtype::LAYOUT, body);
        }
        Some(DataChange::Chunked {
            dims,
            chunk,
            entries,
            old_leaves,
        }) => {
            let elem = elem_size(&msgs)?;
            let mut space = dataspace_of(&msgs, sink.sizes)?;
            space.dims = dims.clone();
            let mut sb = Vec::new();
            space.encode_sized(&mut sb, sink.sizes)?;
            replace_msg(&mut msgs, mtype::DATASPACE, sb);
            let base = sink.base;
            let root =
                write_chunk_tree(entries, chunk, base, &mut sink.buf, old_leaves, sink.sizes);
            let layout = Layout::Chunked {
                chunk: chunk.clone(),
                index: ChunkIndex::BTreeV1 { addr: root },
            };
            replace_msg(
                &mut msgs,
                mtype::LAYOUT,
                messages::encode_layout(&layout, elem, sink.sizes)?,
            );
        }
    }
    let attrs = pass.all_attrs(sink, &d.attrs)?;
    let addr = write_object(sink, msgs, None, &attrs)?;
    pass.moved.push((d.addr, addr));
    Ok(addr)
}

fn elem_size(msgs: &Msgs) -> Result<usize> {
    let m = msgs
        .iter()
        .find(|m| m.0 == mtype::DATATYPE)
        .ok_or_else(|| FormatError::Corrupt("dataset without datatype".into()))?;
    if m.1 & 0x02 != 0 {
        return unsupported("appending to a dataset with a committed (shared) datatype");
    }
    Ok(Datatype::parse(&mut Cursor::new(&m.2, "datatype"))?.size())
}

fn replace_msg(msgs: &mut Msgs, t: u16, body: Vec<u8>) {
    match msgs.iter_mut().find(|m| m.0 == t) {
        Some(m) => m.2 = body,
        None => msgs.push((t, 0, body)),
    }
}
