//! [`FileWriter`]: builds a complete HDF5 file (superblock v2, object headers v2) in memory.

use crate::array::Array;
use crate::error::{invalid, FormatError, Result};
use crate::messages::LinkTarget;
use crate::superblock::{encode_v2, SB2_SIZE};
use crate::write::dataset::{write_dataset, DatasetOptions};
use crate::write::object::{attribute_message, write_object};
use crate::write::sink::Sink;
use std::collections::BTreeMap;
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
                Node::Dataset { .. } => {
                    return Err(FormatError::TypeMismatch(format!(
                        "{} is a dataset, not a group",
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
            Node::Dataset { .. } => Err(FormatError::TypeMismatch(format!(
                "/{} is a dataset, not a group",
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
            Node::Group { attrs, .. } | Node::Dataset { attrs, .. } => {
                set_attr_in(attrs, name, value)
            }
        }
        Ok(())
    }

    /// Serialises the whole file.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut sink = Sink::new(0);
        sink.buf.resize(SB2_SIZE, 0);
        let root = write_node(&mut sink, &self.root)?;
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

fn write_node(sink: &mut Sink, node: &Node) -> Result<u64> {
    match node {
        Node::Group { children, attrs } => {
            let mut links = Vec::with_capacity(children.len());
            for (name, child) in children {
                let a = write_node(sink, child)?;
                links.push((name.clone(), LinkTarget::Hard(a)));
            }
            let attrs = encode_attrs(sink, attrs)?;
            write_object(sink, vec![], Some(&links), &attrs)
        }
        Node::Dataset { array, opts, attrs } => {
            let attrs = encode_attrs(sink, attrs)?;
            write_dataset(sink, array, opts, &attrs)
        }
    }
}
