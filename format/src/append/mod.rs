//! [`FileAppender`]: changes an existing file without rewriting it.
//!
//! Copy-on-write: every changed object (dataset header, chunk, chunk index, group header, heap
//! block) is written anew past the committed end of file; the parents of changed objects are
//! rewritten up to the root. [`FileAppender::commit`] writes all of that, fsyncs, then switches
//! the superblock (one 48-byte write holding the new root address, end of file and checksum; in a
//! version-0/1 superblock one 56-byte write of the end of file and the root's symbol-table entry)
//! and fsyncs again. A crash at any point leaves the previous state readable, because no byte
//! that state uses is ever overwritten before the switch. Space held by superseded versions is
//! not reclaimed (rewrite the file with [`FileWriter`](crate::FileWriter) to compact it);
//! [`FileAppender::superseded_bytes`] says how much raw data a session left behind.
//!
//! Because objects move, a commit also rewrites every reference to a moved object ([`refs`]): the objects
//! holding such references are rewritten too (datasets of references with their chunks stored unfiltered),
//! which may move further objects, until nothing more moves.

mod commit;
mod refs;
mod tree;

use crate::array::Array;
use crate::btree::v1::ChunkEntry;
use crate::convert;
use crate::dataspace::Dataspace;
use crate::datatype::Datatype;
use crate::encode_as::encode_as;
use crate::error::{invalid, unsupported, FormatError, Result};
use crate::io::Cursor;
use crate::messages::{ChunkIndex, Layout, LinkTarget};
use crate::object_header::mtype;
use crate::read::attrs::raw_attrs;
use crate::read::file::H5File;
use crate::read::groups::{self, ObjectKind};
use crate::region::Selection;
use crate::sizes::Sizes;
use crate::superblock;
use crate::write::dataset::{write_chunks, DatasetOptions};
use crate::write::object::attribute_message;
use crate::write::sink::{HeapSink, Sink};
use crate::write::writer::components;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Messages dropped when an object header is rewritten (they are regenerated).
fn regenerated(t: u16) -> bool {
    matches!(
        t,
        mtype::LINK
            | mtype::LINK_INFO
            | mtype::GROUP_INFO
            | mtype::SYMBOL_TABLE
            | mtype::ATTRIBUTE
            | mtype::ATTR_INFO
    )
}

type Msgs = Vec<(u16, u8, Vec<u8>)>;

struct GroupState {
    /// Committed object header address (`None` for a group created in this session).
    addr: Option<u64>,
    links: BTreeMap<String, LinkTarget>,
    attrs: AttrList,
    extra: Msgs,
    children: BTreeMap<String, Node>,
}

struct DatasetState {
    /// Committed object header address.
    addr: u64,
    /// Header messages other than attributes, in order.
    msgs: Msgs,
    attrs: AttrList,
    /// Set once the data changed: current shape and the full chunk list (chunked) or new layout.
    change: Option<DataChange>,
    /// The data holds references to moved objects: rewritten at commit.
    remap_data: bool,
}

enum DataChange {
    Chunked {
        dims: Vec<u64>,
        chunk: Vec<u64>,
        entries: Vec<ChunkEntry>,
        /// Leaves of the committed chunk B-tree, reused when unchanged.
        old_leaves: Vec<(u64, Vec<ChunkEntry>)>,
    },
    Layout(Layout),
}

enum Node {
    Group(GroupState),
    Dataset(DatasetState),
    /// A dataset created in this session (written at commit).
    New {
        array: Array,
        opts: DatasetOptions,
        attrs: Vec<(String, NewAttr)>,
        /// The committed dataset it replaces, whose references now point at it (or, when another object
        /// refers to it, a stand-in address that the commit's references use for it).
        replaces: Option<u64>,
        /// Set when `array` holds the addresses (committed or stand-in) of references' targets.
        refs: Option<NewRefs>,
    },
}

/// What the addresses of a dataset of references created in this session name.
enum NewRefs {
    /// Objects.
    Objects,
    /// Selections of datasets: one serialised selection per target.
    Regions(Vec<Vec<u8>>),
}

/// An attribute of a dataset created in this session.
enum NewAttr {
    /// A value, encoded at commit.
    Value(Array),
    /// An encoded attribute message (references, rewritten at commit).
    Message(Vec<u8>),
    /// Region references, encoded at commit.
    Regions(RegionAttr),
}

/// Where the tree keeps an object's attributes.
enum AttrTarget<'t> {
    /// A committed group or dataset, the root or a group created in this session: encoded messages.
    Loaded(&'t mut AttrList),
    /// A dataset created in this session: values encoded at commit.
    New(&'t mut Vec<(String, NewAttr)>),
}

/// An attribute of region references set in this session: its shape, and per reference its target's address
/// (committed or stand-in, mapped at commit) and its selection, serialised.
struct RegionAttr {
    shape: Vec<u64>,
    keys: Vec<u64>,
    sels: Vec<Vec<u8>>,
}

/// The attributes of a group or dataset the tree holds: encoded messages, and attributes of region
/// references (encoded at commit, when their targets' addresses are known).
#[derive(Default)]
struct AttrList {
    msgs: Vec<(String, Vec<u8>)>,
    regions: Vec<(String, RegionAttr)>,
}

impl AttrList {
    fn set(&mut self, name: &str, msg: Vec<u8>) {
        remove_named(&mut self.regions, name);
        set_named(&mut self.msgs, name, msg);
    }

    fn set_regions(&mut self, name: &str, regions: RegionAttr) {
        remove_named(&mut self.msgs, name);
        set_named(&mut self.regions, name, regions);
    }

    /// Whether `name` was there.
    fn delete(&mut self, name: &str) -> bool {
        remove_named(&mut self.msgs, name) | remove_named(&mut self.regions, name)
    }
}

/// Opens an existing file (ours) and changes it without rewriting it.
pub struct FileAppender {
    path: PathBuf,
    h5: H5File,
    sb: superblock::Superblock,
    root: GroupState,
    sink: Sink,
    dirty: bool,
    /// Bytes of raw data (chunks, contiguous data) this session replaced.
    superseded: u64,
    /// Stand-in addresses given to objects created in this session that references point at; the commit
    /// replaces each with the object's address.
    stand_ins: HashSet<u64>,
    /// This session set attributes of references.
    new_refs: bool,
    /// Where the tree holds each committed object it loaded.
    loaded: tree::Loaded,
    /// Hard links into each object of the committed file, counted when first needed.
    incoming: Option<HashMap<u64, u32>>,
    /// The flush to disk of bytes written ahead of the commit ([`Self::write_ahead`]), still running.
    early_sync: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

/// The first stand-in address (counting down) in a file of these field widths: below the undefined address,
/// above any address the file holds (its end of file is checked against the lowest at commit).
fn stand_in_top(sizes: Sizes) -> u64 {
    sizes.undef() - 1
}

fn set_named<T>(v: &mut Vec<(String, T)>, name: &str, value: T) {
    match v.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => v.push((name.to_string(), value)),
    }
}

fn remove_named<T>(v: &mut Vec<(String, T)>, name: &str) -> bool {
    let before = v.len();
    v.retain(|(n, _)| n != name);
    v.len() != before
}

impl FileAppender {
    /// Opens `path` for appending (4- or 8-byte addresses and lengths, in any combination; any superblock
    /// version, a version-0/1 file's changed groups being rewritten in the new link format libhdf5 1.8 and later
    /// read). Everything written takes the file's sizes of offsets and lengths; a commit whose values do not fit
    /// them fails with [`FormatError::TooWide`] before writing anything.
    pub fn open(path: &Path) -> Result<Self> {
        let h5 = H5File::open(path)?;
        let sb = h5.superblock().clone();
        if sb.version < 2 && sb.driver != crate::io::UNDEF {
            return unsupported(
                "appending to a file with a file-driver block (family or multi files)",
            );
        }
        // 2-byte addresses bound a file to 64 KiB, less than one dense-storage heap block of ours.
        if sb.so < 4 {
            return unsupported(format!(
                "appending to a file with {}-byte addresses (size of offsets below 4)",
                sb.so
            ));
        }
        // 2-byte lengths cannot describe the 64 KiB heap blocks of dense storage this crate writes.
        if sb.sl < 4 {
            return unsupported(format!(
                "appending to a file with {}-byte lengths (size of lengths below 4)",
                sb.sl
            ));
        }
        // Addresses are relative to the base, which a user block (h5py's `userblock_size`) moves to the
        // superblock; another base is refused.
        if sb.base != sb.at {
            return unsupported(
                "appending to a file whose base address is not its superblock's position",
            );
        }
        let sizes = Sizes {
            offsets: sb.so,
            lengths: sb.sl,
        };
        let file_len = h5.bytes().len() as u64;
        // New bytes go after both the committed EOF and anything a crashed commit left behind. The stored end
        // of file counts the user block (libhdf5 compares it with the file's size); the sink's addresses do not.
        let start = sb.eof.max(file_len).saturating_sub(sb.base);
        let root_addr = sb.root;
        let root = load_group(&h5, root_addr)?;
        Ok(FileAppender {
            path: path.to_path_buf(),
            h5,
            sb,
            root,
            sink: Sink::with_sizes(start, sizes),
            dirty: false,
            superseded: 0,
            stand_ins: HashSet::new(),
            new_refs: false,
            loaded: HashMap::from([(root_addr, Vec::new())]),
            incoming: None,
            early_sync: None,
        })
    }

    /// The link-name offset of a version-0/1 superblock's root entry (a length, after four addresses), kept
    /// as it was.
    fn root_name_offset(&self) -> Result<u64> {
        let at =
            self.sb.at as usize + 24 + if self.sb.version == 1 { 4 } else { 0 } + 4 * self.sb.so;
        self.h5
            .bytes()
            .get(at..at + self.sb.sl)
            .map(crate::io::le_uint)
            .ok_or_else(|| FormatError::Corrupt("superblock shorter than its root entry".into()))
    }
}

impl FileAppender {
    /// Creates a group (and missing parents).
    pub fn create_group(&mut self, path: &str) -> Result<()> {
        let parts = components(path)?;
        self.group_mut(&parts, true)?;
        self.dirty = true;
        Ok(())
    }

    /// Adds a new dataset (parents created as needed); fails if the path exists.
    pub fn write_dataset(&mut self, path: &str, array: Array, opts: DatasetOptions) -> Result<()> {
        self.put_dataset(path, array, opts, false)
    }

    /// Replaces a dataset (the old one is unlinked; its space is not reclaimed).
    pub fn replace_dataset(
        &mut self,
        path: &str,
        array: Array,
        opts: DatasetOptions,
    ) -> Result<()> {
        self.put_dataset(path, array, opts, true)
    }

    fn put_dataset(
        &mut self,
        path: &str,
        array: Array,
        opts: DatasetOptions,
        replace: bool,
    ) -> Result<()> {
        crate::write::dataset::plan_for(&array, &opts, self.sink.sizes.offsets)?;
        let parts = components(path)?;
        let (name, parents) = match parts.split_last() {
            Some(x) => x,
            None => return invalid("dataset path is empty"),
        };
        let at = self.canonical(parents, true)?;
        let h5 = &self.h5;
        let g = tree::group_at(&mut self.root, &at)?;
        let exists = g.links.contains_key(*name) || g.children.contains_key(*name);
        if exists && !replace {
            return invalid(format!("{path} already exists"));
        }
        if replace && exists {
            let is_group = match g.children.get(*name) {
                Some(Node::Group(_)) => true,
                Some(_) => false,
                None => match g.links.get(*name) {
                    Some(LinkTarget::Hard(a)) => {
                        let oh = h5.header_at(*a)?;
                        groups::kind(&oh) == ObjectKind::Group
                    }
                    _ => false,
                },
            };
            if is_group {
                return Err(FormatError::TypeMismatch(format!("{path} is a group")));
            }
        }
        // The committed dataset this one replaces: references to it follow to the new one.
        let replaces = match (g.children.get(*name), g.links.get(*name)) {
            _ if !replace => None,
            (Some(Node::Dataset(d)), _) => Some(d.addr),
            (Some(Node::New { replaces, .. }), _) => *replaces,
            (None, Some(LinkTarget::Hard(a))) => Some(*a),
            _ => None,
        };
        if replace && exists {
            self.superseded += self.committed_data_bytes(parents, name)?;
        }
        let g = tree::group_at(&mut self.root, &at)?;
        g.links.remove(*name);
        g.children.insert(
            name.to_string(),
            Node::New {
                array,
                opts,
                attrs: vec![],
                replaces,
                refs: None,
            },
        );
        self.dirty = true;
        Ok(())
    }

    /// Bytes of raw data this session replaced or unlinked (chunks and contiguous data of committed
    /// datasets); dead space once committed. Object headers and chunk indexes rewritten are not counted.
    pub fn superseded_bytes(&self) -> u64 {
        self.superseded
    }

    /// Raw data bytes of the committed, unchanged dataset `name` under `parents` (0 for anything else).
    fn committed_data_bytes(&mut self, parents: &[&str], name: &str) -> Result<u64> {
        let at = self.canonical(parents, false)?;
        let h5 = &self.h5;
        let g = tree::group_at(&mut self.root, &at)?;
        let addr = match (g.children.get(name), g.links.get(name)) {
            (Some(Node::Dataset(d)), _) if d.change.is_none() => d.addr,
            (None, Some(LinkTarget::Hard(a))) => *a,
            _ => return Ok(0),
        };
        if groups::kind(&h5.header_at(addr)?) != ObjectKind::Dataset {
            return Ok(0);
        }
        let d = h5.dataset_at(addr)?;
        Ok(match d.layout() {
            Layout::Contiguous { size, .. } => *size,
            Layout::Chunked { .. } => d.chunk_entries()?.iter().map(|c| c.size).sum(),
            Layout::Compact(_) | Layout::Virtual { .. } => 0,
        })
    }

    /// Sets (or replaces) an attribute on "/" or any group or dataset.
    pub fn set_attr(&mut self, object_path: &str, name: &str, value: Array) -> Result<()> {
        if name.is_empty() {
            return invalid("attribute name is empty");
        }
        convert::dtype_for(&value.data)?;
        if !value.shape_matches() {
            return invalid("attribute shape does not match its data");
        }
        // Encode first (needs the sink), then attach; a dataset created in this session keeps the value.
        if let AttrTarget::New(attrs) = self.attr_target(object_path)? {
            set_named(attrs, name, NewAttr::Value(value));
        } else {
            let msg = attribute_message(&mut self.sink, name, &value)?;
            if let AttrTarget::Loaded(attrs) = self.attr_target(object_path)? {
                attrs.set(name, msg);
            }
        }
        self.dirty = true;
        Ok(())
    }

    /// Sets (or replaces) attribute `name` of "/" or any group or dataset to object references to the groups
    /// and datasets at the absolute paths `targets` (row-major, `shape` `[]` for one reference, as h5py's
    /// `attrs["r"] = obj.ref`). Targets are taken as this session leaves them: objects created in it too.
    /// h5py reads them as `Reference`s, we as `Data::ObjectRef` addresses.
    pub fn set_attr_object_refs(
        &mut self,
        object_path: &str,
        name: &str,
        shape: &[u64],
        targets: &[&str],
    ) -> Result<()> {
        crate::write::dataset::check_ref_attr(name, shape, targets.len())?;
        components(object_path)?;
        let sizes = self.sink.sizes;
        let mut raw = Vec::with_capacity(sizes.offsets * targets.len());
        for t in targets {
            sizes.put_offset(&mut raw, self.ref_key(t)?);
        }
        let dt = Datatype::Reference {
            size: sizes.offsets,
            kind: 0,
        };
        let msg =
            crate::write::object::attribute_message_raw(name, &dt, shape, &raw, self.sink.sizes)?;
        match self.attr_target(object_path)? {
            AttrTarget::Loaded(attrs) => attrs.set(name, msg),
            AttrTarget::New(attrs) => set_named(attrs, name, NewAttr::Message(msg)),
        }
        self.new_refs = true;
        self.dirty = true;
        Ok(())
    }

    /// Adds a 1-D dataset (contiguous) of object references to the groups and datasets at the absolute paths
    /// `targets`, taken as this session leaves them (objects created in it too); fails if `path` exists.
    pub fn write_object_refs(&mut self, path: &str, targets: &[&str]) -> Result<()> {
        let keys = targets
            .iter()
            .map(|t| self.ref_key(t))
            .collect::<Result<Vec<u64>>>()?;
        self.put_refs(path, keys, NewRefs::Objects)
    }

    /// Adds a dataset of references at `path` (which must be free): the targets' addresses, resolved at commit.
    fn put_refs(&mut self, path: &str, keys: Vec<u64>, kind: NewRefs) -> Result<()> {
        let array = Array {
            shape: vec![keys.len() as u64],
            data: crate::Data::U64(keys),
        };
        self.put_dataset(path, array, DatasetOptions::default(), false)?;
        if let Node::New { refs, .. } = self.child(path)? {
            *refs = Some(kind);
        }
        self.new_refs = true;
        Ok(())
    }

    /// Adds a 1-D dataset (contiguous) of dataset region references: each to a selection of the dataset at an
    /// absolute path, taken as this session leaves it (one created in it too), whose current shape bounds the
    /// selection (an element outside it is an error); fails if `path` exists. h5py reads them as
    /// `RegionReference`s, we as `Data::RegionRef`.
    pub fn write_region_refs(&mut self, path: &str, targets: &[(&str, Selection)]) -> Result<()> {
        let (keys, regions) = self.region_targets(targets)?;
        self.put_refs(path, keys, NewRefs::Regions(regions))
    }

    /// Sets (or replaces) attribute `name` of "/" or any group or dataset to region references (`shape`
    /// holding as many, `[]` for one) to selections of datasets, as [`Self::write_region_refs`] takes them.
    pub fn set_attr_region_refs(
        &mut self,
        object_path: &str,
        name: &str,
        shape: &[u64],
        targets: &[(&str, Selection)],
    ) -> Result<()> {
        crate::write::dataset::check_ref_attr(name, shape, targets.len())?;
        components(object_path)?;
        let (keys, sels) = self.region_targets(targets)?;
        let regions = RegionAttr {
            shape: shape.to_vec(),
            keys,
            sels,
        };
        match self.attr_target(object_path)? {
            AttrTarget::Loaded(attrs) => attrs.set_regions(name, regions),
            AttrTarget::New(attrs) => set_named(attrs, name, NewAttr::Regions(regions)),
        }
        self.new_refs = true;
        self.dirty = true;
        Ok(())
    }

    /// Each region reference's target address (as [`Self::ref_key`] gives it) and serialised selection,
    /// checked against the target's current shape.
    fn region_targets(
        &mut self,
        targets: &[(&str, Selection)],
    ) -> Result<(Vec<u64>, Vec<Vec<u8>>)> {
        let mut keys = Vec::with_capacity(targets.len());
        let mut regions = Vec::with_capacity(targets.len());
        for (t, sel) in targets {
            keys.push(self.ref_key(t)?);
            let dims = match self.current_dims(t) {
                Err(FormatError::TypeMismatch(_)) => {
                    return Err(FormatError::TypeMismatch(format!(
                        "region reference target {t} is not a dataset"
                    )))
                }
                dims => dims?,
            };
            let sel = sel
                .encode_within(&dims)
                .map_err(|e| e.context(&format!("region reference to {t}")))?;
            regions.push(sel);
        }
        Ok((keys, regions))
    }

    /// The address by which this commit's references name the object at `target` (loaded into the tree, so
    /// that the commit writes it and learns its new address): its committed address, or a stand-in for an
    /// object created in this session.
    fn ref_key(&mut self, target: &str) -> Result<u64> {
        if !target.starts_with('/') {
            return invalid(format!(
                "object reference target {target:?} is not an absolute path"
            ));
        }
        if self.names_root(&components(target)?)? {
            return Ok(self.sb.root);
        }
        let stand_in = stand_in_top(self.sink.sizes) - self.stand_ins.len() as u64;
        let key = match self.child(target)? {
            Node::Group(g) => *g.addr.get_or_insert(stand_in),
            Node::Dataset(d) => d.addr,
            Node::New { replaces, .. } => *replaces.get_or_insert(stand_in),
        };
        if key == stand_in {
            self.stand_ins.insert(stand_in);
        }
        Ok(key)
    }

    /// Removes the link `path` (a dataset, a group with everything under it, or a soft or external link), as
    /// `del f[path]` does in h5py; the space the object held is not reclaimed.
    pub fn unlink(&mut self, path: &str) -> Result<()> {
        let parts = components(path)?;
        let (name, parents) = match parts.split_last() {
            Some(x) => x,
            None => return invalid("the root group cannot be unlinked"),
        };
        let g = self.group_mut(parents, false)?;
        let linked = g.links.remove(*name).is_some();
        let loaded = g.children.remove(*name);
        if !linked && loaded.is_none() {
            return Err(FormatError::NotFound(path.to_string()));
        }
        if let Some(node) = loaded {
            self.rehome(node)?;
        }
        self.dirty = true;
        Ok(())
    }

    /// Adds a soft link at `path` to `target` (a path, resolved when read; it may dangle).
    pub fn soft_link(&mut self, path: &str, target: &str) -> Result<()> {
        if target.is_empty() {
            return invalid("soft link target is empty");
        }
        self.add_link(path, LinkTarget::Soft(target.to_string()))
    }

    /// Adds an external link at `path` to `object` in the HDF5 file `file`.
    pub fn external_link(&mut self, path: &str, file: &str, object: &str) -> Result<()> {
        if file.is_empty() || object.is_empty() {
            return invalid("external link needs a file and an object path");
        }
        self.add_link(
            path,
            LinkTarget::External {
                file: file.to_string(),
                path: object.to_string(),
            },
        )
    }

    fn add_link(&mut self, path: &str, target: LinkTarget) -> Result<()> {
        let parts = components(path)?;
        let (name, parents) = match parts.split_last() {
            Some(x) => x,
            None => return invalid("link path is empty"),
        };
        let g = self.group_mut(parents, true)?;
        if g.links.contains_key(*name) || g.children.contains_key(*name) {
            return invalid(format!("{path} already exists"));
        }
        g.links.insert(name.to_string(), target);
        self.dirty = true;
        Ok(())
    }

    /// Deletes the attribute `name` of "/" or any group or dataset.
    pub fn delete_attr(&mut self, object_path: &str, name: &str) -> Result<()> {
        let removed = match self.attr_target(object_path)? {
            AttrTarget::Loaded(attrs) => attrs.delete(name),
            AttrTarget::New(attrs) => remove_named(attrs, name),
        };
        if !removed {
            return Err(FormatError::NotFound(format!("{object_path}@{name}")));
        }
        self.dirty = true;
        Ok(())
    }

    /// Current shape of a dataset, including rows appended in this session.
    pub fn shape(&mut self, dataset_path: &str) -> Result<Vec<u64>> {
        self.current_dims(dataset_path)
    }

    /// Makes room for about `bytes` more of this session's data before a large change, so the buffer the
    /// commit writes grows once instead of doubling (and copying) its way there.
    pub fn reserve(&mut self, bytes: usize) {
        self.sink.reserve(bytes);
    }

    /// Appends rows along dimension 0 of a chunked dataset whose dimension 0 can grow.
    pub fn append_rows(&mut self, dataset_path: &str, rows: Array) -> Result<()> {
        let cur = self.current_dims(dataset_path)?;
        let start = cur.first().copied().unwrap_or(0);
        self.put_rows(dataset_path, start, rows, true)
    }

    /// Overwrites rows `start..start + rows.shape[0]` (copy-on-write of the touched chunks).
    pub fn write_rows(&mut self, dataset_path: &str, start: u64, rows: Array) -> Result<()> {
        self.put_rows(dataset_path, start, rows, false)
    }

    /// Raw elements of the dataset at `path` (of type `dtype`, whoever defined it) holding `data`; their
    /// variable-length bodies go to this session's heap. A value the type cannot hold is an error.
    fn encode_rows(
        &mut self,
        path: &str,
        dtype: &Datatype,
        data: &crate::array::Data,
    ) -> Result<Vec<u8>> {
        let mut hs = HeapSink::new(&mut self.sink);
        let raw = encode_as(dtype, data, &mut hs).map_err(|e| match e {
            FormatError::TypeMismatch(why) => FormatError::TypeMismatch(format!("{path}: {why}")),
            other => other,
        })?;
        hs.finish();
        Ok(raw)
    }

    /// Writes rows over a contiguous or compact dataset already rewritten in this session: its new copy (in
    /// this session's bytes, or in its compact layout) is patched in place.
    fn patch_rewritten(
        &mut self,
        path: &str,
        start: u64,
        rows: &Array,
        append: bool,
        dtype: &Datatype,
        dims: &[u64],
    ) -> Result<()> {
        let end = start
            .checked_add(rows.shape[0])
            .ok_or_else(|| FormatError::Invalid("row range overflows".into()))?;
        if append {
            return invalid(format!(
                "{path} cannot grow along dimension 0 (needs a chunked dataset with a larger maximum shape)"
            ));
        }
        if end > dims[0] {
            return invalid(format!(
                "rows {start}..{end} outside {path} with {} rows",
                dims[0]
            ));
        }
        let raw = self.encode_rows(path, dtype, &rows.data)?;
        let row_bytes = dims[1..].iter().product::<u64>() as usize * dtype.size();
        let at = start as usize * row_bytes;
        let base = self.sink.base;
        let target: &mut [u8] = match self.child(path)? {
            Node::Dataset(DatasetState {
                change: Some(DataChange::Layout(Layout::Compact(bytes))),
                ..
            }) => bytes,
            Node::Dataset(DatasetState {
                change: Some(DataChange::Layout(Layout::Contiguous { addr, size })),
                ..
            }) if *addr >= base => {
                let from = (*addr - base) as usize;
                let to = from + *size as usize;
                self.sink.buf.get_mut(from..to).ok_or_else(|| {
                    FormatError::Corrupt(format!("{path}: rewritten data outside this session"))
                })?
            }
            _ => return unsupported(format!("rewriting rows of {path} twice in one session")),
        };
        target
            .get_mut(at..at + raw.len())
            .ok_or_else(|| FormatError::Corrupt(format!("{path}: rewritten data too short")))?
            .copy_from_slice(&raw);
        self.dirty = true;
        Ok(())
    }

    fn current_dims(&mut self, path: &str) -> Result<Vec<u64>> {
        let sizes = self.sink.sizes;
        match self.child(path)? {
            Node::Dataset(d) => match &d.change {
                Some(DataChange::Chunked { dims, .. }) => Ok(dims.clone()),
                _ => Ok(dataspace_of(&d.msgs, sizes)?.dims),
            },
            Node::New { array, .. } => Ok(array.shape.clone()),
            Node::Group(_) => Err(FormatError::TypeMismatch(format!("{path} is a group"))),
        }
    }

    fn put_rows(&mut self, path: &str, start: u64, rows: Array, append: bool) -> Result<()> {
        if rows.shape.is_empty() {
            return invalid("rows must have at least one dimension");
        }
        if !rows.shape_matches() {
            return invalid("rows shape does not match its data");
        }
        // Datasets created in this session are still in memory: edit them there.
        if let Node::New { array, refs, .. } = self.child(path)? {
            if refs.is_some() {
                return unsupported(format!("writing rows of {path}, a dataset of references"));
            }
            return edit_in_memory(array, start, rows, append);
        }
        let addr = match self.child(path)? {
            Node::Dataset(d) => d.addr,
            _ => {
                return Err(FormatError::TypeMismatch(format!(
                    "{path} is not a dataset"
                )))
            }
        };
        let (space, dtype, layout, filters) = {
            let d = self.h5.dataset_at(addr)?;
            if d.is_external() {
                return unsupported(format!("writing rows of {path}, stored in external files"));
            }
            (
                Dataspace {
                    dims: d.shape().to_vec(),
                    max: d.max_shape().map(|m| m.to_vec()),
                    null: false,
                },
                d.dtype().clone(),
                d.layout().clone(),
                d.filters().to_vec(),
            )
        };
        let rank = space.dims.len();
        if rows.shape.len() != rank || rows.shape[1..] != space.dims[1..] {
            return invalid(format!(
                "rows of shape {:?} do not fit dataset {path} of shape {:?}",
                rows.shape, space.dims
            ));
        }
        let elem = dtype.size();
        // Current state (possibly already changed in this session).
        let (dims, chunk, mut entries, old_leaves): (_, _, Vec<ChunkEntry>, Option<_>) =
            match self.child(path)? {
                Node::Dataset(DatasetState {
                    change:
                        Some(DataChange::Chunked {
                            dims,
                            chunk,
                            entries,
                            ..
                        }),
                    ..
                }) => (
                    dims.clone(),
                    chunk.clone(),
                    entries.clone(),
                    // The session's leaves stay where they are until the change is stored (an error
                    // before then leaves the session's state as it was).
                    None,
                ),
                Node::Dataset(DatasetState {
                    change: Some(DataChange::Layout(_)),
                    ..
                }) => {
                    // Already rewritten in this session: patch the new copy where it lies.
                    return self.patch_rewritten(path, start, &rows, append, &dtype, &space.dims);
                }
                _ => match &layout {
                    Layout::Chunked {
                        chunk,
                        index: ChunkIndex::BTreeV1 { addr: bt },
                    } => {
                        let leaves = crate::btree::v1::chunk_leaves(&self.h5.ctx(), *bt, rank)?;
                        let entries = leaves.iter().flat_map(|(_, v)| v.iter().cloned()).collect();
                        (space.dims.clone(), chunk.clone(), entries, Some(leaves))
                    }
                    Layout::Chunked { chunk, .. } => {
                        let d = self.h5.dataset_at(addr)?;
                        (
                            space.dims.clone(),
                            chunk.clone(),
                            d.chunk_entries()?,
                            Some(vec![]),
                        )
                    }
                    Layout::Virtual { .. } => {
                        return unsupported(format!("writing rows of {path}, a virtual dataset"))
                    }
                    _ => (space.dims.clone(), vec![], vec![], Some(vec![])),
                },
            };
        let n0 = rows.shape[0];
        let end = start
            .checked_add(n0)
            .ok_or_else(|| FormatError::Invalid("row range overflows".into()))?;
        if append {
            let max0 = space.max.as_ref().and_then(|m| m[0]).unwrap_or(u64::MAX);
            let fixed = space.max.is_none();
            if fixed || end > max0 || chunk.is_empty() {
                return invalid(format!(
                    "{path} cannot grow along dimension 0 (needs a chunked dataset with a larger maximum shape)"
                ));
            }
        } else if end > dims[0] {
            return invalid(format!(
                "rows {start}..{end} outside {path} with {} rows",
                dims[0]
            ));
        }
        let new_raw = self.encode_rows(path, &dtype, &rows.data)?;
        let row_bytes = dims[1..].iter().product::<u64>() as usize * elem;
        if chunk.is_empty() {
            // Contiguous or compact: rewrite the whole data with the rows patched in.
            let all = {
                let d = self.h5.dataset_at(addr)?;
                d.read_box_raw(&vec![0; rank], &dims)?
            };
            let mut all = all;
            let a = start as usize * row_bytes;
            all[a..a + new_raw.len()].copy_from_slice(&new_raw);
            if let Layout::Contiguous { size, .. } = &layout {
                self.superseded += size;
            }
            let new_layout = match layout {
                Layout::Compact(_) => Layout::Compact(all),
                _ => {
                    let size = all.len() as u64;
                    Layout::Contiguous {
                        addr: self.sink.append(&all),
                        size,
                    }
                }
            };
            if let Node::Dataset(d) = self.child(path)? {
                d.change = Some(DataChange::Layout(new_layout));
            }
            self.dirty = true;
            return Ok(());
        }
        // Chunked: rewrite the chunk bands [a, b) touched by [start, end).
        let c0 = chunk[0];
        let a = (start / c0) * c0;
        let new_dims0 = if append { end } else { dims[0] };
        let b = (end.div_ceil(c0) * c0).min(new_dims0);
        let mut band = vec![0u8; (b - a) as usize * row_bytes];
        crate::hugepages::advise(&mut band);
        let old_end = dims[0].min(b);
        if old_end > a {
            let mut s = vec![0u64; rank];
            s[0] = a;
            let mut c = dims.clone();
            c[0] = old_end - a;
            let old = read_raw_with(&self.h5, &self.sink, addr, &dims, &entries, &s, &c)?;
            band[..old.len()].copy_from_slice(&old);
        }
        let off = (start - a) as usize * row_bytes;
        band[off..off + new_raw.len()].copy_from_slice(&new_raw);
        let mut shape = dims.clone();
        shape[0] = b - a;
        let mut origin = vec![0u64; rank];
        origin[0] = a;
        // Room for the band's chunks as stored (filters rarely grow them much), grown once.
        self.sink.reserve(band.len() + band.len() / 8);
        let fresh = write_chunks(
            &mut self.sink,
            &band,
            &shape,
            &origin,
            &chunk,
            elem,
            &filters,
        )?;
        self.superseded += entries
            .iter()
            .filter(|e| e.offset[0] >= a && e.offset[0] < b)
            .map(|e| e.size)
            .sum::<u64>();
        entries.retain(|e| e.offset[0] < a || e.offset[0] >= b);
        entries.extend(fresh);
        entries.sort_by(|x, y| x.offset.cmp(&y.offset));
        let mut new_dims = dims.clone();
        new_dims[0] = new_dims0;
        if let Node::Dataset(d) = self.child(path)? {
            let old_leaves = match (old_leaves, d.change.take()) {
                (Some(leaves), _) => leaves,
                (None, Some(DataChange::Chunked { old_leaves, .. })) => old_leaves,
                (None, _) => vec![],
            };
            d.change = Some(DataChange::Chunked {
                dims: new_dims,
                chunk,
                entries,
                old_leaves,
            });
        }
        self.dirty = true;
        Ok(())
    }

    /// Writes the bytes this session has added so far (new data, chunks, heap objects) to the file, past its
    /// committed end where no reader looks, and starts flushing them to disk on another thread, so that the
    /// commit has less to write and to wait for. Nothing becomes visible before the commit; a session
    /// dropped without committing leaves the file as it was. A later change in this session that would
    /// rewrite bytes written ahead (rows of a dataset this session already wrote, appended again) fails
    /// with an error instead.
    pub fn write_ahead(&mut self) -> Result<()> {
        if self.sink.buf.is_empty() {
            return Ok(());
        }
        // Nothing is written that the commit would refuse to address.
        self.sink.sizes.check_offset(
            self.sink.pos() + self.sb.base,
            "the file's end (every address in it)",
        )?;
        let f = OpenOptions::new().write(true).open(&self.path)?;
        f.write_all_at(&self.sink.buf, self.sink.base + self.sb.base)?;
        self.sink.base += self.sink.buf.len() as u64;
        self.sink.buf.clear();
        let earlier = self.early_sync.take();
        self.early_sync = Some(std::thread::spawn(move || {
            if let Some(e) = earlier {
                e.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("an earlier flush panicked")))?;
            }
            f.sync_data()
        }));
        Ok(())
    }

    /// Writes all changes past the committed end, fsyncs, switches the superblock, fsyncs.
    pub fn commit(mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let root = self.write_all()?;
        // Stored as libhdf5 stores it: past the user block too.
        let new_eof = self.sink.pos() + self.sb.base;
        let superblock = self.superblock_update(new_eof, root)?;
        let f = OpenOptions::new().write(true).open(&self.path)?;
        f.write_all_at(&self.sink.buf, self.sink.base + self.sb.base)?;
        // An error of the flush of what was written ahead is this commit's error.
        if let Some(early) = self.early_sync.take() {
            early.join().map_err(|_| {
                FormatError::Invalid("the flush of data written ahead panicked".into())
            })??;
        }
        f.sync_all()?;
        // A version-0/1 superblock: the end of file and the root's symbol-table entry, one write within the
        // first sector; a version-2/3 one whole.
        let (at, bytes) = superblock;
        f.write_all_at(&bytes, self.sb.at + at)?;
        f.sync_all()?;
        Ok(())
    }
}

impl FileAppender {
    /// The superblock bytes that switch the file to the new root and end of file, and their offset in the
    /// superblock; an end of file (every address lies below it) or the stand-in addresses beyond the file's
    /// address width is an error, before anything is written.
    fn superblock_update(&self, new_eof: u64, root: u64) -> Result<(u64, Vec<u8>)> {
        let sizes = self.sink.sizes;
        sizes.check_offset(new_eof, "the file's end (every address in it)")?;
        let lowest_stand_in = stand_in_top(sizes) - self.stand_ins.len() as u64;
        if new_eof >= lowest_stand_in {
            return Err(FormatError::too_wide(
                "the file's end, among the addresses kept for new objects",
                new_eof,
                sizes.offsets,
            ));
        }
        if self.sb.version < 2 {
            let name_offset = self.root_name_offset()?;
            return superblock::encode_v0_tail(self.sb.version, new_eof, root, name_offset, sizes);
        }
        let sb = superblock::encode_v2_sized(
            self.sb.version,
            sizes,
            self.sb.base,
            self.sb.ext,
            new_eof,
            root,
        );
        Ok((0, sb))
    }
}

fn load_group(h5: &H5File, addr: u64) -> Result<GroupState> {
    let oh = h5.header_at(addr)?;
    let ctx = h5.ctx();
    let links = groups::links(&ctx, &oh)?
        .into_iter()
        .map(|l| (l.name, l.target))
        .collect();
    let attrs = AttrList {
        msgs: raw_attrs(h5, &oh)?,
        regions: vec![],
    };
    let extra = oh
        .messages
        .iter()
        .filter(|m| !regenerated(m.mtype))
        .map(|m| (m.mtype, m.flags, m.data.to_vec()))
        .collect();
    Ok(GroupState {
        addr: Some(addr),
        links,
        attrs,
        extra,
        children: BTreeMap::new(),
    })
}

fn load_node(h5: &H5File, addr: u64) -> Result<Node> {
    let oh = h5.header_at(addr)?;
    match groups::kind(&oh) {
        ObjectKind::Group => Ok(Node::Group(load_group(h5, addr)?)),
        ObjectKind::Dataset => {
            let attrs = AttrList {
                msgs: raw_attrs(h5, &oh)?,
                regions: vec![],
            };
            let msgs = oh
                .messages
                .iter()
                .filter(|m| m.mtype != mtype::ATTRIBUTE && m.mtype != mtype::ATTR_INFO)
                .map(|m| (m.mtype, m.flags, m.data.to_vec()))
                .collect();
            Ok(Node::Dataset(DatasetState {
                addr,
                msgs,
                attrs,
                change: None,
                remap_data: false,
            }))
        }
        ObjectKind::Datatype | ObjectKind::Other => unsupported(format!(
            "changing the object at {addr:#x} (not a group or dataset)"
        )),
    }
}

/// The dataspace among a dataset's header messages, stored with the file's length width.
fn dataspace_of(msgs: &Msgs, sizes: Sizes) -> Result<Dataspace> {
    let m = msgs
        .iter()
        .find(|m| m.0 == mtype::DATASPACE)
        .ok_or_else(|| FormatError::Corrupt("dataset without dataspace".into()))?;
    Dataspace::parse(&mut Cursor::new(&m.2, "dataspace"), sizes.lengths)
}

/// Reads raw elements of a box of a chunked dataset using an explicit chunk list, which may
/// include chunks written in this session (still in the sink).
fn read_raw_with(
    h5: &H5File,
    sink: &Sink,
    addr: u64,
    dims: &[u64],
    entries: &[ChunkEntry],
    start: &[u64],
    count: &[u64],
) -> Result<Vec<u8>> {
    let d = h5.dataset_at(addr)?;
    let ctx = h5.ctx();
    let fetch = |a: u64, n: u64| -> Result<std::borrow::Cow<[u8]>> {
        if a >= sink.base {
            let off = (a - sink.base) as usize;
            match sink.buf.get(off..off + n as usize) {
                Some(s) => Ok(s.into()),
                None => Err(FormatError::Corrupt(
                    "chunk outside the pending data".into(),
                )),
            }
        } else {
            Ok(ctx.slice(a, n)?.into())
        }
    };
    d.chunked_box(dims, entries, start, count, &fetch)
}

fn edit_in_memory(array: &mut Array, start: u64, rows: Array, append: bool) -> Result<()> {
    if rows.shape[1..] != array.shape[1..] || rows.data.type_name() != array.data.type_name() {
        return invalid("rows do not match the dataset's shape or type");
    }
    let row_elems = array.shape[1..].iter().product::<u64>() as usize;
    let n0 = array.shape[0];
    if append {
        let mut new = array.data.clone();
        append_data(&mut new, rows.data)?;
        array.shape[0] = n0 + rows.shape[0];
        array.data = new;
    } else {
        if start + rows.shape[0] > n0 {
            return invalid("rows outside the dataset");
        }
        let at = start as usize * row_elems;
        let head = array.data.slice(0, at);
        let tail_start = at + rows.data.len();
        let tail = array.data.slice(tail_start, array.data.len() - tail_start);
        let mut new = head;
        append_data(&mut new, rows.data)?;
        append_data(&mut new, tail)?;
        array.data = new;
    }
    Ok(())
}

fn append_data(a: &mut crate::Data, b: crate::Data) -> Result<()> {
    use crate::Data::*;
    match (a, b) {
        (I8(x), I8(y)) => x.extend(y),
        (I16(x), I16(y)) => x.extend(y),
        (I32(x), I32(y)) => x.extend(y),
        (I64(x), I64(y)) => x.extend(y),
        (I128(x), I128(y)) => x.extend(y),
        (U8(x), U8(y)) => x.extend(y),
        (U16(x), U16(y)) => x.extend(y),
        (U32(x), U32(y)) => x.extend(y),
        (U64(x), U64(y)) => x.extend(y),
        (U128(x), U128(y)) => x.extend(y),
        (F16(x), F16(y)) => x.extend(y),
        (F32(x), F32(y)) => x.extend(y),
        (F64(x), F64(y)) => x.extend(y),
        (VarStr(x), VarStr(y)) => x.extend(y),
        (
            FixedStr { len, values },
            FixedStr {
                len: l2,
                values: v2,
            },
        ) if *len == l2 => values.extend(v2),
        _ => return invalid("rows do not match the dataset's type"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Data, FileWriter};

    /// An appender on a small file whose sink pretends the file has 4-byte addresses and already ends
    /// `from_top` bytes below 4 GiB.
    fn near_4_gib(dir: &Path, from_top: u64) -> (PathBuf, FileAppender) {
        let path = dir.join("f.h5");
        let mut w = FileWriter::new();
        w.write_dataset(
            "/d",
            Array::vector(Data::U8(vec![1, 2, 3])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.write_file(&path).unwrap();
        let mut a = FileAppender::open(&path).unwrap();
        a.sink.sizes = Sizes {
            offsets: 4,
            lengths: 8,
        };
        a.sink.base = (1u64 << 32) - from_top;
        (path, a)
    }

    #[test]
    fn a_commit_past_the_address_width_is_a_typed_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut a) = near_4_gib(dir.path(), 64);
        let before = std::fs::read(&path).unwrap();
        a.write_dataset(
            "/big",
            Array::vector(Data::U8(vec![7; 4096])),
            DatasetOptions::default(),
        )
        .unwrap();
        match a.commit() {
            Err(FormatError::TooWide(o)) => {
                assert!(o.what.contains("end"), "{}", o.what);
                assert_eq!(o.bytes, 4);
                assert!(o.value > u64::from(u32::MAX), "{:#x}", o.value);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn data_written_ahead_is_committed_with_the_rest_or_dropped_unseen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.h5");
        let mut w = FileWriter::new();
        let opts = DatasetOptions {
            chunk: Some(vec![64]),
            max_shape: Some(vec![None]),
            ..DatasetOptions::default()
        };
        w.write_dataset("/d", Array::vector(Data::U32((0..100).collect())), opts)
            .unwrap();
        w.write_file(&path).unwrap();
        let before = std::fs::read(&path).unwrap();

        // Written ahead, then dropped: the file reads as before (bytes past its end are not part of it).
        let mut a = FileAppender::open(&path).unwrap();
        a.append_rows("/d", Array::vector(Data::U32((100..1000).collect())))
            .unwrap();
        a.write_ahead().unwrap();
        drop(a);
        let h = H5File::open(&path).unwrap();
        let d = h.dataset("/d").unwrap().read().unwrap();
        assert_eq!(d.data, Data::U32((0..100).collect()));
        assert_eq!(std::fs::read(&path).unwrap()[..before.len()], before[..]);

        // Written ahead, more changes, then committed: everything is there.
        let mut a = FileAppender::open(&path).unwrap();
        a.append_rows("/d", Array::vector(Data::U32((100..1000).collect())))
            .unwrap();
        a.write_ahead().unwrap();
        a.write_dataset(
            "/e",
            Array::vector(Data::VarStr(vec!["x".into(), "yz".into()])),
            DatasetOptions::default(),
        )
        .unwrap();
        a.write_ahead().unwrap();
        a.set_attr("/d", "n", Array::scalar(Data::U64(vec![1000])))
            .unwrap();
        a.commit().unwrap();
        let h = H5File::open(&path).unwrap();
        let d = h.dataset("/d").unwrap().read().unwrap();
        assert_eq!(d.data, Data::U32((0..1000).collect()));
        let e = h.dataset("/e").unwrap().read().unwrap();
        assert_eq!(e.data, Data::VarStr(vec!["x".into(), "yz".into()]));

        // Rows written ahead are not rewritten in the same session: appending to them again is refused, and
        // the file stays as committed.
        let committed = std::fs::read(&path).unwrap();
        let mut a = FileAppender::open(&path).unwrap();
        a.append_rows("/d", Array::vector(Data::U32(vec![1000, 1001])))
            .unwrap();
        a.write_ahead().unwrap();
        if a.append_rows("/d", Array::vector(Data::U32(vec![1002])))
            .is_ok()
        {
            a.commit().unwrap();
            let h = H5File::open(&path).unwrap();
            let d = h.dataset("/d").unwrap().read().unwrap();
            assert_eq!(d.data, Data::U32((0..1003).collect()));
        } else {
            drop(a);
            let h = H5File::open(&path).unwrap();
            let d = h.dataset("/d").unwrap().read().unwrap();
            assert_eq!(d.data, Data::U32((0..1000).collect()));
            assert_eq!(
                std::fs::read(&path).unwrap()[..committed.len()],
                committed[..]
            );
        }
    }

    #[test]
    fn writing_ahead_past_the_address_width_is_a_typed_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.h5");
        let mut w = FileWriter::new();
        let opts = DatasetOptions {
            chunk: Some(vec![1024]),
            max_shape: Some(vec![None]),
            ..DatasetOptions::default()
        };
        w.write_dataset("/d", Array::vector(Data::U8(vec![1; 10])), opts)
            .unwrap();
        w.write_file(&path).unwrap();
        let before = std::fs::read(&path).unwrap();
        let mut a = FileAppender::open(&path).unwrap();
        a.sink.sizes = Sizes {
            offsets: 4,
            lengths: 8,
        };
        a.sink.base = (1u64 << 32) - 64;
        a.append_rows("/d", Array::vector(Data::U8(vec![7; 4096])))
            .unwrap();
        let r = a.write_ahead();
        assert!(matches!(r, Err(FormatError::TooWide(_))), "{r:?}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn the_end_of_file_must_stay_below_the_stand_in_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let (_, a) = near_4_gib(dir.path(), 64);
        // The highest address below the undefined one is the first stand-in.
        let e = a.superblock_update((1u64 << 32) - 2, 0).unwrap_err();
        assert!(matches!(&e, FormatError::TooWide(o) if o.bytes == 4), "{e}");
        assert!(a.superblock_update((1u64 << 32) - 3, 0).is_ok());
    }
}
