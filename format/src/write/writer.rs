//! [`FileWriter`]: builds a complete HDF5 file (superblock v2, object headers v2) in memory.

use crate::array::Array;
use crate::dataspace::Dataspace;
use crate::datatype::Datatype;
use crate::error::{invalid, FormatError, Result};
use crate::io::UNDEF;
use crate::messages::Layout;
use crate::messages::LinkTarget;
use crate::superblock::{encode_v2, SB2_SIZE};
use crate::write::dataset::{dataset_messages, Plan};
use crate::write::dataset::{write_dataset, DatasetOptions};
use crate::write::object::{attribute_message, write_object};
use crate::write::sink::Sink;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

enum Node {
    Group {
        children: BTreeMap<String, Node>,
        attrs: Vec<(String, Array)>,
    },
    Dataset {
        array: Array,
        opts: DatasetOptions,
        attrs: Vec<(String, Array)>,
    },
    /// A 1-D dataset of object references to the objects at these absolute paths.
    Refs {
        targets: Vec<String>,
        attrs: Vec<(String, Array)>,
    },
    /// A soft or external link (no object of its own).
    Link(LinkTarget),
}

/// Addresses of the objects written so far by path, and the reference slots to patch with them.
#[derive(Default)]
struct RefPatches {
    /// False when the file has no references: paths are then not tracked at all.
    enabled: bool,
    addrs: HashMap<String, u64>,
    /// (position in the sink, target path) of each 8-byte reference.
    slots: Vec<(u64, String)>,
}

/// Splits an HDF5 path into its non-empty components.
pub fn components(path: &str) -> Result<Vec<&str>> {
    let parts: Vec<&str> = path
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

fn set_attr_in(attrs: &mut Vec<(String, Array)>, name: &str, value: Array) {
    if let Some(slot) = attrs.iter_mut().find(|(n, _)| n == name) {
        slot.1 = value;
    } else {
        attrs.push((name.to_string(), value));
    }
}

impl FileWriter {
    /// An empty file with only the root group.
    pub fn new() -> Self {
        FileWriter {
            root: Node::Group {
                children: BTreeMap::new(),
                attrs: Vec::new(),
            },
        }
    }

    fn group_mut(&mut self, parts: &[&str], create: bool) -> Result<&mut BTreeMap<String, Node>> {
        let mut node = &mut self.root;
        for (i, p) in parts.iter().enumerate() {
            let children = match node {
                Node::Group { children, .. } => children,
                Node::Dataset { .. } | Node::Refs { .. } => {
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
            if !children.contains_key(*p) {
                if !create {
                    return Err(FormatError::NotFound(parts[..=i].join("/")));
                }
                children.insert(
                    p.to_string(),
                    Node::Group {
                        children: BTreeMap::new(),
                        attrs: Vec::new(),
                    },
                );
            }
            node = match children.get_mut(*p) {
                Some(n) => n,
                None => return Err(FormatError::NotFound(parts[..=i].join("/"))),
            };
        }
        match node {
            Node::Group { children, .. } => Ok(children),
            Node::Dataset { .. } | Node::Refs { .. } => Err(FormatError::TypeMismatch(format!(
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
        let parts = components(path)?;
        let (name, parents) = match parts.split_last() {
            Some(x) => x,
            None => return invalid("dataset path is empty"),
        };
        // Validate now so that errors surface at the call, not at to_bytes().
        crate::write::dataset::plan(&array, &opts)?;
        let children = self.group_mut(parents, true)?;
        if children.contains_key(*name) {
            return invalid(format!("{path} already exists"));
        }
        children.insert(
            name.to_string(),
            Node::Dataset {
                array,
                opts,
                attrs: Vec::new(),
            },
        );
        Ok(())
    }

    /// Sets (or replaces) an attribute on "/" or any existing group or dataset.
    pub fn set_attr(&mut self, object_path: &str, name: &str, value: Array) -> Result<()> {
        if name.is_empty() {
            return invalid("attribute name is empty");
        }
        crate::convert::dtype_for(&value.data)?;
        if value.shape.iter().product::<u64>() != value.data.len() as u64 {
            return invalid("attribute shape does not match its data");
        }
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
            Node::Group { attrs, .. } | Node::Dataset { attrs, .. } | Node::Refs { attrs, .. } => {
                set_attr_in(attrs, name, value)
            }
            Node::Link(_) => {
                return invalid(format!(
                    "{object_path} is a soft or external link: links have no attributes"
                ))
            }
        }
        Ok(())
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

    /// Adds a 1-D dataset of object references (contiguous layout) to the groups or datasets at
    /// the absolute paths `targets` of this file (hard links only; resolved by `to_bytes`, which
    /// fails naming any target that does not exist). Readers get `Data::ObjectRef` addresses.
    pub fn write_object_refs(&mut self, path: &str, targets: &[&str]) -> Result<()> {
        let mut norm = Vec::with_capacity(targets.len());
        for t in targets {
            if !t.starts_with('/') {
                return invalid(format!(
                    "object reference target {t:?} is not an absolute path"
                ));
            }
            norm.push(format!("/{}", components(t)?.join("/")));
        }
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
                targets: norm,
                attrs: Vec::new(),
            },
        );
        Ok(())
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
        let mut sink = Sink::new(0);
        sink.buf.resize(SB2_SIZE, 0);
        let mut refs = RefPatches {
            enabled: has_refs(&self.root),
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
        Ok(sink.buf)
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

fn encode_attrs(sink: &mut Sink, attrs: &[(String, Array)]) -> Result<Vec<(String, Vec<u8>)>> {
    attrs
        .iter()
        .map(|(n, a)| Ok((n.clone(), attribute_message(sink, n, a)?)))
        .collect()
}

/// Whether any dataset of object references is in the tree.
fn has_refs(node: &Node) -> bool {
    match node {
        Node::Refs { .. } => true,
        Node::Group { children, .. } => children.values().any(has_refs),
        _ => false,
    }
}

fn write_node(sink: &mut Sink, node: &Node, path: &str, refs: &mut RefPatches) -> Result<u64> {
    let addr = match node {
        Node::Group { children, attrs } => {
            let mut links = Vec::with_capacity(children.len());
            for (name, child) in children {
                let target = match child {
                    Node::Link(t) => t.clone(),
                    _ if refs.enabled => {
                        let sub = format!("{}/{name}", path.trim_end_matches('/'));
                        LinkTarget::Hard(write_node(sink, child, &sub, refs)?)
                    }
                    _ => LinkTarget::Hard(write_node(sink, child, "", refs)?),
                };
                links.push((name.clone(), target));
            }
            let attrs = encode_attrs(sink, attrs)?;
            write_object(sink, vec![], Some(&links), &attrs)?
        }
        Node::Dataset { array, opts, attrs } => {
            let attrs = encode_attrs(sink, attrs)?;
            write_dataset(sink, array, opts, &attrs)?
        }
        Node::Refs { targets, attrs } => {
            let attrs = encode_attrs(sink, attrs)?;
            let layout = if targets.is_empty() {
                Layout::Contiguous {
                    addr: UNDEF,
                    size: 0,
                }
            } else {
                // Placeholders, patched with the targets' addresses once everything is written.
                let addr = sink.append(&vec![0u8; 8 * targets.len()]);
                for (i, t) in targets.iter().enumerate() {
                    refs.slots.push((addr + 8 * i as u64, t.clone()));
                }
                Layout::Contiguous {
                    addr,
                    size: 8 * targets.len() as u64,
                }
            };
            let plan = Plan {
                space: Dataspace {
                    dims: vec![targets.len() as u64],
                    max: None,
                    null: false,
                },
                dtype: Datatype::Reference { size: 8, kind: 0 },
                chunk: None,
                filters: vec![],
                compact: false,
            };
            write_object(sink, dataset_messages(&plan, &layout)?, None, &attrs)?
        }
        Node::Link(_) => return invalid("a soft or external link is not an object"),
    };
    if refs.enabled {
        refs.addrs.insert(path.to_string(), addr);
    }
    Ok(addr)
}
