//! [`FileWriter`]: builds a complete HDF5 file (superblock v2, object headers v2) in memory.

use crate::array::{Array, Data};
use crate::datatype::Datatype;
use crate::error::{invalid, FormatError, Result};
use crate::io::UNDEF;
use crate::messages::Layout;
use crate::messages::LinkTarget;
use crate::region::Selection;
use crate::strings::StringColumn;
use crate::superblock::{encode_v2, SB2_SIZE};
use crate::write::dataset::{write_dataset, write_string_column, DatasetOptions};
use crate::write::object::{attribute_message_into, attribute_message_raw, write_object};
use crate::write::sink::{HeapSink, Sink};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::io::Write;

/// The members of a group being built (hashed: sorting once at write beats keeping them sorted).
type Children = FxHashMap<String, Node>;

enum Node {
    Group {
        /// By name; written in name order.
        children: Children,
        attrs: Attrs,
    },
    /// Boxed: a dataset's array and options would make every node, groups included, large.
    Dataset(Box<DatasetNode>),
    /// A 1-D dataset of object references to the objects at these absolute paths, or of region references
    /// to selections (serialised, one per target) of the datasets there.
    Refs { refs: Box<RefList>, attrs: Attrs },
    /// A soft or external link (no object of its own).
    Link(LinkTarget),
}

// Members are moved whenever a group's table grows: keep every node small (a group's table and attributes).
const _: () = assert!(std::mem::size_of::<Node>() <= 72);

/// What a dataset of references points at (boxed in [`Node::Refs`], so that every node stays small).
struct RefList {
    /// The targets' absolute paths.
    targets: Vec<String>,
    /// For region references, each target's selection, serialised.
    regions: Option<Vec<Vec<u8>>>,
}

/// An attribute of region references: its name, its targets' paths and their selections, serialised.
type RegionRefAttr = (String, Vec<String>, Vec<Vec<u8>>);

/// A dataset to be written: its values, storage options and attributes.
struct DatasetNode {
    values: Values,
    opts: DatasetOptions,
    attrs: Attrs,
}

/// A dataset's values: any array, or a packed column of strings.
enum Values {
    Array(Array),
    Strings(StringColumn),
}

impl Values {
    fn shape(&self) -> Vec<u64> {
        match self {
            Values::Array(a) => a.shape.clone(),
            Values::Strings(c) => vec![c.len() as u64],
        }
    }

    /// Roughly the bytes the values take in the file uncompressed, heap objects included.
    fn estimate(&self) -> usize {
        match self {
            Values::Array(a) => data_estimate(&a.data),
            // Per string: its element, its heap object's header and up to 7 bytes of padding.
            Values::Strings(c) => (16 + 16 + 7) * c.len() + c.text_len(),
        }
    }
}

/// Addresses of the objects written so far by path, and the reference slots to patch with them.
#[derive(Default)]
struct RefPatches {
    /// False when the file has no references: paths are then not tracked at all.
    enabled: bool,
    addrs: HashMap<String, u64>,
    /// The addresses an earlier pass found, which attributes of references are written with (0 in the first
    /// pass); `None` in the first pass.
    known: Option<HashMap<String, u64>>,
    /// (position in the sink, target path) of each 8-byte reference.
    slots: Vec<(u64, String)>,
}

/// A path's names, held inline up to 8 levels deep (no allocation for the usual path).
pub type Components<'a> = smallvec::SmallVec<[&'a str; 8]>;

/// Splits an HDF5 path into its non-empty components.
pub fn components(path: &str) -> Result<Components<'_>> {
    if path == "/" {
        // The root, as most attributes name their object.
        return Ok(Components::new());
    }
    let parts: Components<'_> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return invalid(format!("path {path:?} contains '..'"));
    }
    Ok(parts)
}

/// Builds a new HDF5 file.
pub struct FileWriter {
    root: Node,
}

impl Default for FileWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// The hash an attribute name is indexed by.
fn name_hash(name: &str) -> u64 {
    use std::hash::BuildHasher;
    let h = rustc_hash::FxBuildHasher.hash_one(name);
    // Unit tests keep three bits, so that names collide and the scan behind a collision runs.
    if cfg!(test) {
        h & 7
    } else {
        h
    }
}

/// Attributes below this count are found by a linear scan; from it on, through a name index.
const INDEX_ATTRS_FROM: usize = 16;

/// One object's attributes in the order they were first set, indexed by name once numerous.
#[derive(Default)]
struct Attrs {
    list: Vec<(String, Array)>,
    /// Reference attributes and the name index: boxed, so that a tree of plain objects stays small.
    more: Option<Box<AttrsMore>>,
}

/// The parts of [`Attrs`] most objects never need.
#[derive(Default)]
struct AttrsMore {
    /// Target paths of the attributes that hold object references, by attribute name.
    ref_targets: Vec<(String, Vec<String>)>,
    /// Target paths and serialised selections of the attributes that hold region references, by name.
    region_refs: Vec<RegionRefAttr>,
    /// Position in `list` by a hash of the name (the name itself is only in `list`); built once `list`
    /// reaches [`INDEX_ATTRS_FROM`]. A name whose hash another name holds already is not entered, and is
    /// found by a scan when the entry it hits turns out to be the other name.
    index: Option<FxHashMap<u64, usize>>,
}

impl Attrs {
    /// Target paths of the attributes that hold object references, by attribute name.
    fn ref_targets(&self) -> &[(String, Vec<String>)] {
        self.more.as_deref().map_or(&[], |m| &m.ref_targets)
    }

    /// Target paths and serialised selections of the attributes that hold region references, by name.
    fn region_refs(&self) -> &[RegionRefAttr] {
        self.more.as_deref().map_or(&[], |m| &m.region_refs)
    }

    fn more_mut(&mut self) -> &mut AttrsMore {
        self.more.get_or_insert_with(Default::default)
    }

    /// Sets attribute `name` to object references to `targets` (absolute, normalised paths; as many as
    /// `shape` holds, which the caller checked).
    fn set_refs(&mut self, name: &str, shape: &[u64], targets: Vec<String>) {
        let n = targets.len();
        self.set(
            name,
            Array {
                shape: shape.to_vec(),
                data: Data::ObjectRef(vec![0; n]),
            },
        );
        self.more_mut()
            .ref_targets
            .push((name.to_string(), targets));
    }

    /// Sets attribute `name` to region references to selections (serialised) of the datasets at `targets`.
    fn set_region_refs(
        &mut self,
        name: &str,
        shape: &[u64],
        targets: Vec<String>,
        regions: Vec<Vec<u8>>,
    ) {
        let none = crate::region::RegionRef {
            object: 0,
            selection: Selection::None,
        };
        self.set(
            name,
            Array {
                shape: shape.to_vec(),
                data: Data::RegionRef(vec![none; targets.len()]),
            },
        );
        self.more_mut()
            .region_refs
            .push((name.to_string(), targets, regions));
    }

    /// Sets or replaces attribute `name`.
    fn set(&mut self, name: &str, value: Array) {
        if let Some(m) = &mut self.more {
            m.ref_targets.retain(|(n, _)| n != name);
            m.region_refs.retain(|(n, _, _)| n != name);
        }
        let indexed = self.more.as_ref().is_some_and(|m| m.index.is_some());
        if !indexed && self.list.len() >= INDEX_ATTRS_FROM {
            let mut index = FxHashMap::default();
            index.reserve(2 * self.list.len());
            for (i, (n, _)) in self.list.iter().enumerate() {
                index.entry(name_hash(n)).or_insert(i);
            }
            self.more_mut().index = Some(index);
        }
        let list = &self.list;
        let scan = || list.iter().position(|(n, _)| n == name);
        let index = self.more.as_mut().and_then(|m| m.index.as_mut());
        let hash = index.is_some().then(|| name_hash(name));
        let found = match (&index, hash) {
            (Some(index), Some(h)) => match index.get(&h) {
                Some(&i) if list[i].0 == name => Some(i),
                Some(_) => scan(),
                None => None,
            },
            _ => scan(),
        };
        match found {
            Some(i) => self.list[i].1 = value,
            None => {
                if let (Some(index), Some(h)) = (index, hash) {
                    index.entry(h).or_insert(self.list.len());
                }
                self.list.push((name.to_string(), value));
            }
        }
    }

    fn estimated_bytes(&self) -> usize {
        self.list
            .iter()
            .map(|(n, a)| 64 + n.len() + data_estimate(&a.data))
            .sum()
    }
}

impl FileWriter {
    /// An empty file with only the root group.
    pub fn new() -> Self {
        FileWriter {
            root: Node::Group {
                children: Children::default(),
                attrs: Attrs::default(),
            },
        }
    }

    fn group_mut(&mut self, parts: &[&str], create: bool) -> Result<&mut Children> {
        let mut node = &mut self.root;
        for (i, p) in parts.iter().enumerate() {
            let children = match node {
                Node::Group { children, .. } => children,
                Node::Dataset(_) | Node::Refs { .. } => {
                    return Err(FormatError::TypeMismatch(format!(
                        "{} is a dataset, not a group",
                        parts[..i].join("/")
                    )))
                }
                Node::Link(_) => {
                    return Err(FormatError::TypeMismatch(format!(
                        "{} is a soft or external link, not a group",
                        parts[..i].join("/")
                    )))
                }
            };
            node = if create {
                // One search whether the group exists or not.
                children
                    .entry(p.to_string())
                    .or_insert_with(|| Node::Group {
                        children: Children::default(),
                        attrs: Attrs::default(),
                    })
            } else {
                match children.get_mut(*p) {
                    Some(n) => n,
                    None => return Err(FormatError::NotFound(parts[..=i].join("/"))),
                }
            };
        }
        match node {
            Node::Group { children, .. } => Ok(children),
            Node::Dataset(_) | Node::Refs { .. } => Err(FormatError::TypeMismatch(format!(
                "/{} is a dataset, not a group",
                parts.join("/")
            ))),
            Node::Link(_) => Err(FormatError::TypeMismatch(format!(
                "/{} is a soft or external link, not a group",
                parts.join("/")
            ))),
        }
    }

    /// Creates a group and any missing parents ("/" always exists).
    pub fn create_group(&mut self, path: &str) -> Result<()> {
        let parts = components(path)?;
        self.group_mut(&parts, true).map(|_| ())
    }

    /// Adds a dataset; parent groups are created as needed.
    pub fn write_dataset(&mut self, path: &str, array: Array, opts: DatasetOptions) -> Result<()> {
        // Validate now so that errors surface at the call, not at to_bytes().
        crate::write::dataset::plan(&array, &opts)?;
        self.add_dataset(path, Values::Array(array), opts)
    }

    /// Adds a one-dimensional dataset of variable-length UTF-8 strings from a packed column (what
    /// [`write_dataset`](Self::write_dataset) of [`Data::VarStr`] writes, without a `String` per value);
    /// parent groups are created as needed.
    pub fn write_strings(
        &mut self,
        path: &str,
        column: StringColumn,
        opts: DatasetOptions,
    ) -> Result<()> {
        crate::write::dataset::plan_strings(column.len(), &opts, 8)?;
        self.add_dataset(path, Values::Strings(column), opts)
    }

    /// Puts a dataset of validated values at `path` (a new name), creating parent groups as needed.
    fn add_dataset(&mut self, path: &str, values: Values, opts: DatasetOptions) -> Result<()> {
        let parts = components(path)?;
        let (name, parents) = match parts.split_last() {
            Some(x) => x,
            None => return invalid("dataset path is empty"),
        };
        let children = self.group_mut(parents, true)?;
        if children.contains_key(*name) {
            return invalid(format!("{path} already exists"));
        }
        children.insert(
            name.to_string(),
            Node::Dataset(Box::new(DatasetNode {
                values,
                opts,
                attrs: Attrs::default(),
            })),
        );
        Ok(())
    }

    /// The node at `path` ("/" is the root group), without following links.
    fn node(&self, path: &str) -> Option<&Node> {
        let mut node = &self.root;
        for p in components(path).ok()? {
            node = match node {
                Node::Group { children, .. } => children.get(p)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// True when a group, dataset or link is already at `path` ("/" always is).
    pub fn contains(&self, path: &str) -> bool {
        self.node(path).is_some()
    }

    /// True when the group or dataset at `object_path` has an attribute called `name`.
    pub fn has_attr(&self, object_path: &str, name: &str) -> bool {
        let attrs = match self.node(object_path) {
            Some(Node::Dataset(d)) => &d.attrs,
            Some(Node::Group { attrs, .. } | Node::Refs { attrs, .. }) => attrs,
            Some(Node::Link(_)) | None => return false,
        };
        attrs.list.iter().any(|(n, _)| n == name)
    }

    /// Sets (or replaces) an attribute on "/" or any existing group or dataset.
    pub fn set_attr(&mut self, object_path: &str, name: &str, value: Array) -> Result<()> {
        if name.is_empty() {
            return invalid("attribute name is empty");
        }
        crate::convert::dtype_for(&value.data)?;
        if !value.shape_matches() {
            return invalid("attribute shape does not match its data");
        }
        self.attrs_mut(object_path)?.set(name, value);
        Ok(())
    }

    /// The attributes of the group or dataset at `object_path`.
    fn attrs_mut(&mut self, object_path: &str) -> Result<&mut Attrs> {
        let parts = components(object_path)?;
        let node = match parts.split_last() {
            None => &mut self.root,
            Some((last, parents)) => {
                let children = self.group_mut(parents, false)?;
                match children.get_mut(*last) {
                    Some(n) => n,
                    None => return Err(FormatError::NotFound(object_path.to_string())),
                }
            }
        };
        match node {
            Node::Dataset(d) => Ok(&mut d.attrs),
            Node::Group { attrs, .. } | Node::Refs { attrs, .. } => Ok(attrs),
            Node::Link(_) => invalid(format!(
                "{object_path} is a soft or external link: links have no attributes"
            )),
        }
    }

    /// Adds a soft link at `path` to `target` (an absolute or relative HDF5 path, resolved
    /// when the link is followed; it need not exist). Parent groups are created as needed.
    pub fn soft_link(&mut self, path: &str, target: &str) -> Result<()> {
        if target.is_empty() || target.len() > u16::MAX as usize {
            return invalid(format!(
                "soft link target must be 1 to 65535 bytes, not {}",
                target.len()
            ));
        }
        self.add_link(path, LinkTarget::Soft(target.to_string()))
    }

    /// Adds an external link at `path` to the object `object` of the file `file` (a file name as
    /// HDF5 resolves it: relative to the linking file's folder or the search path).
    pub fn external_link(&mut self, path: &str, file: &str, object: &str) -> Result<()> {
        if file.is_empty() || object.is_empty() {
            return invalid("external link needs a file name and an object path");
        }
        if file.contains('\0') || object.contains('\0') {
            return invalid("external link file name or path contains a NUL byte");
        }
        if file.len() + object.len() + 3 > u16::MAX as usize {
            return invalid("external link file name and path longer than 65532 bytes");
        }
        self.add_link(
            path,
            LinkTarget::External {
                file: file.to_string(),
                path: object.to_string(),
            },
        )
    }

    /// Sets a 1-D attribute `name` of `object_path` holding object references to the groups or datasets at
    /// the absolute paths `targets` of this file (hard links only; resolved by `to_bytes`, which fails naming
    /// any target that does not exist). h5py reads them as `Reference`s, we as `Data::ObjectRef` addresses.
    pub fn set_attr_object_refs(
        &mut self,
        object_path: &str,
        name: &str,
        targets: &[&str],
    ) -> Result<()> {
        self.set_attr_object_refs_shaped(object_path, name, &[targets.len() as u64], targets)
    }

    /// [`Self::set_attr_object_refs`] with a shape of its own (`[]` for a scalar, as h5py writes
    /// `attrs["r"] = obj.ref`); the targets in row-major order.
    pub fn set_attr_object_refs_shaped(
        &mut self,
        object_path: &str,
        name: &str,
        shape: &[u64],
        targets: &[&str],
    ) -> Result<()> {
        let targets = ref_targets(targets)?;
        crate::write::dataset::check_ref_attr(name, shape, targets.len())?;
        let attrs = self.attrs_mut(object_path)?;
        attrs.set_refs(name, shape, targets);
        Ok(())
    }

    /// Adds a 1-D dataset of object references (contiguous layout) to the groups or datasets at
    /// the absolute paths `targets` of this file (hard links only; resolved by `to_bytes`, which
    /// fails naming any target that does not exist). Readers get `Data::ObjectRef` addresses.
    pub fn write_object_refs(&mut self, path: &str, targets: &[&str]) -> Result<()> {
        let norm = ref_targets(targets)?;
        self.add_refs(path, norm, None)
    }

    /// Adds a dataset of references at `path` (which must be free).
    fn add_refs(
        &mut self,
        path: &str,
        targets: Vec<String>,
        regions: Option<Vec<Vec<u8>>>,
    ) -> Result<()> {
        let parts = components(path)?;
        let (name, parents) = match parts.split_last() {
            Some(x) => x,
            None => return invalid("dataset path is empty"),
        };
        let children = self.group_mut(parents, true)?;
        if children.contains_key(*name) {
            return invalid(format!("{path} already exists"));
        }
        children.insert(
            name.to_string(),
            Node::Refs {
                refs: Box::new(RefList { targets, regions }),
                attrs: Attrs::default(),
            },
        );
        Ok(())
    }

    /// Adds a 1-D dataset (contiguous) of dataset region references: each to a selection of the dataset at an
    /// absolute path of this file, which must already be written here (its shape bounds the selection; an
    /// element outside it is an error). h5py reads them as `RegionReference`s, we as `Data::RegionRef`.
    pub fn write_region_refs(&mut self, path: &str, targets: &[(&str, Selection)]) -> Result<()> {
        let (norm, regions) = self.regions_of(targets)?;
        self.add_refs(path, norm, Some(regions))
    }

    /// Sets attribute `name` of `object_path` to region references (`shape` holding as many, `[]` for one) to
    /// selections of datasets already written here, as [`Self::write_region_refs`] takes them.
    pub fn set_attr_region_refs(
        &mut self,
        object_path: &str,
        name: &str,
        shape: &[u64],
        targets: &[(&str, Selection)],
    ) -> Result<()> {
        crate::write::dataset::check_ref_attr(name, shape, targets.len())?;
        let (norm, regions) = self.regions_of(targets)?;
        self.attrs_mut(object_path)?
            .set_region_refs(name, shape, norm, regions);
        Ok(())
    }

    /// The normalised target paths of region references and their selections serialised, each checked
    /// against its dataset's shape.
    fn regions_of(&self, targets: &[(&str, Selection)]) -> Result<(Vec<String>, Vec<Vec<u8>>)> {
        let paths: Vec<&str> = targets.iter().map(|(t, _)| *t).collect();
        let norm = ref_targets(&paths)?;
        let mut regions = Vec::with_capacity(targets.len());
        for (t, (_, sel)) in norm.iter().zip(targets) {
            let dims = match self.node(t) {
                Some(Node::Dataset(d)) => d.values.shape(),
                Some(Node::Refs { refs, .. }) => vec![refs.targets.len() as u64],
                Some(_) => {
                    return Err(FormatError::TypeMismatch(format!(
                        "region reference target {t} is not a dataset"
                    )))
                }
                None => {
                    return Err(FormatError::NotFound(format!(
                        "region reference target {t} (write the dataset first)"
                    )))
                }
            };
            let sel = sel
                .encode_within(&dims)
                .map_err(|e| e.context(&format!("region reference to {t}")))?;
            regions.push(sel);
        }
        Ok((norm, regions))
    }

    fn add_link(&mut self, path: &str, target: LinkTarget) -> Result<()> {
        let parts = components(path)?;
        let (name, parents) = match parts.split_last() {
            Some(x) => x,
            None => return invalid("link path is empty"),
        };
        let children = self.group_mut(parents, true)?;
        if children.contains_key(*name) {
            return invalid(format!("{path} already exists"));
        }
        children.insert(name.to_string(), Node::Link(target));
        Ok(())
    }

    /// Serialises the whole file.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let survey = survey(&self.root);
        if !survey.attr_refs {
            return Ok(self.write_pass(&survey, None)?.0);
        }
        // Attributes of references are written with their targets' addresses, which only a written file
        // knows: a first pass finds them (writing zeros), a second writes them. Attributes are never
        // compressed, so both passes place every object alike; a third is never needed.
        let (_, found) = self.write_pass(&survey, None)?;
        let (bytes, again) = self.write_pass(&survey, Some(found.clone()))?;
        if again != found {
            return invalid(
                "object addresses moved between the passes that write attribute references",
            );
        }
        Ok(bytes)
    }

    /// One serialisation; attributes of references take their targets' addresses from `known` (zeros when
    /// `None`). Returns the bytes and every object's address by path (when the file holds references).
    fn write_pass(
        &self,
        survey: &Survey,
        known: Option<HashMap<String, u64>>,
    ) -> Result<(Vec<u8>, HashMap<String, u64>)> {
        let mut sink = Sink::new(0);
        sink.buf.reserve(SB2_SIZE + survey.bytes);
        crate::hugepages::advise_spare(&mut sink.buf);
        sink.buf.resize(SB2_SIZE, 0);
        let mut refs = RefPatches {
            enabled: survey.refs,
            known,
            ..Default::default()
        };
        let root = write_node(&mut sink, &self.root, "/", &mut refs)?;
        for (pos, target) in &refs.slots {
            let addr = *refs.addrs.get(target).ok_or_else(|| {
                FormatError::NotFound(format!("object reference target {target}"))
            })?;
            let at = (*pos - sink.base) as usize;
            sink.buf[at..at + 8].copy_from_slice(&addr.to_le_bytes());
        }
        let eof = sink.pos();
        let sb = encode_v2(eof, root);
        sink.buf[..SB2_SIZE].copy_from_slice(&sb);
        Ok((sink.buf, refs.addrs))
    }

    /// Writes the file to `path` and fsyncs it (callers wanting atomicity write to a temporary
    /// name and rename).
    pub fn write_file(&self, path: &std::path::Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        let mut f = std::fs::File::create(path)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        Ok(())
    }
}

/// An object's attribute messages, encoded one after another into one buffer.
#[derive(Default)]
struct EncodedAttrs<'a> {
    buf: Vec<u8>,
    /// Each attribute's name and where its message ends in `buf`, in the order they were set.
    ends: Vec<(&'a str, usize)>,
}

impl<'a> EncodedAttrs<'a> {
    /// Each attribute's name and message.
    fn messages(&self) -> Vec<(&'a str, &[u8])> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&(name, end)| {
                let m = &self.buf[start..end];
                start = end;
                (name, m)
            })
            .collect()
    }
}

/// Each attribute's name and encoded message (heap data written to `sink`), in the order they were set.
#[inline]
fn encode_attrs<'a>(
    sink: &mut Sink,
    attrs: &'a Attrs,
    refs: &mut RefPatches,
) -> Result<EncodedAttrs<'a>> {
    if attrs.list.is_empty() {
        return Ok(EncodedAttrs::default());
    }
    encode_attr_list(sink, attrs, refs)
}

fn encode_attr_list<'a>(
    sink: &mut Sink,
    attrs: &'a Attrs,
    refs: &mut RefPatches,
) -> Result<EncodedAttrs<'a>> {
    let mut out = EncodedAttrs {
        buf: Vec::with_capacity(attrs.estimated_bytes()),
        ends: Vec::with_capacity(attrs.list.len()),
    };
    for (n, a) in &attrs.list {
        if let Some((_, targets, regions)) =
            attrs.region_refs().iter().find(|(name, _, _)| name == n)
        {
            // Heap objects whose first 8 bytes are patched with the targets' addresses once everything
            // is written (the message holds only their heap IDs).
            let ids = region_heap_objects(sink, targets, regions, refs);
            let m = attribute_message_raw(
                n,
                &Datatype::Reference { size: 12, kind: 1 },
                &a.shape,
                &ids?,
                sink.sizes,
            )?;
            out.buf.extend_from_slice(&m);
        } else {
            match attrs.ref_targets().iter().find(|(name, _)| name == n) {
                Some((_, targets)) => {
                    let mut raw = Vec::with_capacity(8 * targets.len());
                    for t in targets {
                        let addr = match &refs.known {
                            None => 0,
                            Some(known) => *known.get(t).ok_or_else(|| {
                                FormatError::NotFound(format!("object reference target {t}"))
                            })?,
                        };
                        raw.extend_from_slice(&addr.to_le_bytes());
                    }
                    let dt = Datatype::Reference { size: 8, kind: 0 };
                    let m = attribute_message_raw(n, &dt, &a.shape, &raw, sink.sizes)?;
                    out.buf.extend_from_slice(&m);
                }
                None => attribute_message_into(&mut out.buf, sink, n, a)?,
            }
        }
        out.ends.push((n.as_str(), out.buf.len()));
    }
    Ok(out)
}

/// A heap object per region reference (an 8-byte placeholder for its dataset's address, patched once every
/// object is written, then its selection); returns their heap IDs.
fn region_heap_objects(
    sink: &mut Sink,
    targets: &[String],
    regions: &[Vec<u8>],
    refs: &mut RefPatches,
) -> Result<Vec<u8>> {
    let mut ids = Vec::with_capacity(12 * targets.len());
    let mut heap = HeapSink::new(sink);
    for (t, sel) in targets.iter().zip(regions) {
        let mut body = vec![0u8; 8];
        body.extend_from_slice(sel);
        let (coll, index, at) = heap.put_located(&body)?;
        refs.slots.push((at, t.clone()));
        ids.extend_from_slice(&coll.to_le_bytes());
        ids.extend_from_slice(&index.to_le_bytes());
    }
    heap.finish();
    Ok(ids)
}

/// Absolute, normalised target paths of object references.
fn ref_targets(targets: &[&str]) -> Result<Vec<String>> {
    let mut norm = Vec::with_capacity(targets.len());
    for t in targets {
        if !t.starts_with('/') {
            return invalid(format!(
                "object reference target {t:?} is not an absolute path"
            ));
        }
        norm.push(format!("/{}", components(t)?.join("/")));
    }
    Ok(norm)
}

/// Roughly the bytes `data` takes in the file uncompressed, heap objects included.
fn data_estimate(data: &Data) -> usize {
    let elem = crate::convert::dtype_for(data).map_or(8, |d| d.size());
    let heap: usize = match data {
        // Each string is a heap object: a 16-byte header, the bytes padded to 8.
        Data::VarStr(v) => v.iter().map(|s| 16 + s.len().div_ceil(8) * 8).sum(),
        _ => 0,
    };
    data.len().saturating_mul(elem).saturating_add(heap)
}

/// What one walk of the tree finds before it is written.
struct Survey {
    /// Roughly the bytes the tree will take in the file (uncompressed), so that the output buffer
    /// is allocated once instead of growing by copies.
    bytes: usize,
    /// Whether any dataset or attribute of object or region references is in the tree.
    refs: bool,
    /// Whether any attribute of object references is in the tree.
    attr_refs: bool,
}

fn survey(node: &Node) -> Survey {
    let own = |attrs: &Attrs, bytes: usize, refs: bool| {
        let attr_refs = !attrs.ref_targets().is_empty();
        Survey {
            bytes: bytes + attrs.estimated_bytes(),
            refs: refs || attr_refs || !attrs.region_refs().is_empty(),
            attr_refs,
        }
    };
    match node {
        Node::Group { children, attrs } => {
            let mut s = own(attrs, 128, false);
            for (name, child) in children {
                let c = survey(child);
                s.bytes += 48 + name.len() + c.bytes;
                s.refs |= c.refs;
                s.attr_refs |= c.attr_refs;
            }
            s
        }
        Node::Dataset(d) => own(&d.attrs, 256 + d.values.estimate(), false),
        Node::Refs { attrs, .. } => own(attrs, 256, true),
        Node::Link(_) => Survey {
            bytes: 0,
            refs: false,
            attr_refs: false,
        },
    }
}

/// A name's first 8 bytes as a big-endian number (zero-padded): ordering by it, then by the whole name,
/// orders names as comparing them alone does, mostly without a `memcmp` call.
fn name_prefix(name: &str) -> u64 {
    let b = name.as_bytes();
    let mut p = [0u8; 8];
    let n = b.len().min(8);
    p[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(p)
}

fn write_node(sink: &mut Sink, node: &Node, path: &str, refs: &mut RefPatches) -> Result<u64> {
    let addr = match node {
        Node::Group { children, attrs } => {
            let mut members: Vec<(u64, &String, &Node)> = children
                .iter()
                .map(|(name, child)| (name_prefix(name), name, child))
                .collect();
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
            let mut links = Vec::with_capacity(members.len());
            for (_, name, child) in members {
                let target = match child {
                    Node::Link(t) => t.clone(),
                    _ if refs.enabled => {
                        let sub = format!("{}/{name}", path.trim_end_matches('/'));
                        LinkTarget::Hard(write_node(sink, child, &sub, refs)?)
                    }
                    _ => LinkTarget::Hard(write_node(sink, child, "", refs)?),
                };
                links.push((name.as_str(), target));
            }
            let encoded = encode_attrs(sink, attrs, refs)?;
            write_object(sink, vec![], Some(&links), &encoded.messages())?
        }
        Node::Dataset(d) => {
            let DatasetNode {
                values,
                opts,
                attrs,
            } = &**d;
            let encoded = encode_attrs(sink, attrs, refs)?;
            let attrs = encoded.messages();
            match values {
                Values::Array(array) => write_dataset(sink, array, opts, &attrs)?,
                Values::Strings(column) => write_string_column(sink, column, opts, &attrs)?,
            }
        }
        Node::Refs { refs: list, attrs } => {
            let RefList { targets, regions } = &**list;
            let encoded = encode_attrs(sink, attrs, refs)?;
            let attrs = encoded.messages();
            // Placeholders, patched with the targets' addresses once everything is written: the elements
            // themselves, or the first 8 bytes of each region's heap object.
            let raw = match regions {
                None => vec![0u8; 8 * targets.len()],
                Some(regions) => region_heap_objects(sink, targets, regions, refs)?,
            };
            let layout = if raw.is_empty() {
                Layout::Contiguous {
                    addr: UNDEF,
                    size: 0,
                }
            } else {
                let addr = sink.append(&raw);
                if regions.is_none() {
                    for (i, t) in targets.iter().enumerate() {
                        refs.slots.push((addr + 8 * i as u64, t.clone()));
                    }
                }
                Layout::Contiguous {
                    addr,
                    size: raw.len() as u64,
                }
            };
            let msgs = crate::write::dataset::refs_messages(
                targets.len() as u64,
                regions.is_some(),
                &layout,
                sink.sizes,
            )?;
            write_object(sink, msgs, None, &attrs)?
        }
        Node::Link(_) => return invalid("a soft or external link is not an object"),
    };
    if refs.enabled {
        refs.addrs.insert(path.to_string(), addr);
    }
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_and_has_attr_see_what_was_added() {
        let mut w = FileWriter::new();
        assert!(w.contains("/") && !w.contains("/g"));
        w.write_dataset(
            "/g/d",
            Array::vector(Data::U8(vec![1, 2])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.soft_link("/g/l", "/g/d").unwrap();
        w.set_attr("/g/d", "a", Array::scalar(Data::I32(vec![1])))
            .unwrap();
        w.set_attr("/", "r", Array::scalar(Data::I32(vec![2])))
            .unwrap();
        assert!(w.contains("/g") && w.contains("/g/d") && w.contains("g/l"));
        assert!(!w.contains("/g/d/x") && !w.contains("/g/l/x") && !w.contains("/h"));
        assert!(w.has_attr("/g/d", "a") && w.has_attr("/", "r"));
        assert!(!w.has_attr("/g/d", "b") && !w.has_attr("/g", "a") && !w.has_attr("/g/l", "a"));
        assert!(!w.has_attr("/nowhere", "a") && !w.contains("/../g"));
    }

    #[test]
    fn many_attributes_keep_their_order_and_take_new_values() {
        // Past the index's threshold, with names colliding in the index (tests hash to three bits).
        let mut a = Attrs::default();
        let value = |v: i32| Array::scalar(Data::I32(vec![v]));
        for i in 0..200 {
            a.set(&format!("a{i}"), value(i));
        }
        for i in (0..200).step_by(3) {
            a.set(&format!("a{i}"), value(-i));
        }
        a.set("late", value(7));
        assert_eq!(a.list.len(), 201);
        for (i, (name, v)) in a.list.iter().take(200).enumerate() {
            let i = i as i32;
            assert_eq!(name, &format!("a{i}"));
            let want = if i % 3 == 0 { -i } else { i };
            assert_eq!(v.data, Data::I32(vec![want]), "{name}");
        }
        assert_eq!(a.list[200].0, "late");
        assert!(a.more.as_ref().is_some_and(|m| m.index.is_some()));
    }
}
