//! The session's tree of loaded objects. Paths are walked through it, loading committed groups and datasets on
//! the way; a part of a path that names an object the tree already holds under another path (a second hard
//! link to it) continues from there. So every object is loaded, changed and written once, however many paths
//! name it, and its other links follow it when the commit moves it. An object unlinked at one path but still
//! linked at another keeps this session's changes there.

use super::{load_node, AttrTarget, FileAppender, GroupState, Node};
use crate::error::{invalid, unsupported, FormatError, Result};
use crate::messages::LinkTarget;
use crate::read::file::H5File;
use crate::read::groups::{self, ObjectKind};
use crate::write::writer::components;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Where the tree holds each committed object it loaded: its address → its path there.
pub(super) type Loaded = HashMap<u64, Vec<String>>;

/// The group at `path` in the tree (every part of it loaded).
pub(super) fn group_at<'g>(
    root: &'g mut GroupState,
    path: &[String],
) -> Result<&'g mut GroupState> {
    let mut g = root;
    for (i, p) in path.iter().enumerate() {
        g = match g.children.get_mut(p) {
            Some(Node::Group(s)) => s,
            Some(_) => {
                return Err(FormatError::TypeMismatch(format!(
                    "/{} is not a group",
                    path[..=i].join("/")
                )))
            }
            None => return Err(FormatError::NotFound(format!("/{}", path[..=i].join("/")))),
        };
    }
    Ok(g)
}

/// Whether the tree holds the committed object `addr` at `path` (a dataset replaced in this session counts
/// as the one replacing it).
fn holds(root: &GroupState, path: &[String], addr: u64) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return root.addr == Some(addr);
    };
    let mut g = root;
    for p in parents {
        match g.children.get(p) {
            Some(Node::Group(s)) => g = s,
            _ => return false,
        }
    }
    match g.children.get(last) {
        Some(Node::Group(s)) => s.addr == Some(addr),
        Some(Node::Dataset(d)) => d.addr == addr,
        Some(Node::New { replaces, .. }) => *replaces == Some(addr),
        None => false,
    }
}

/// Records where the tree holds each committed object under `g` (at `path`).
fn index(g: &GroupState, path: &mut Vec<String>, out: &mut Loaded) {
    if let Some(a) = g.addr {
        out.entry(a).or_insert_with(|| path.clone());
    }
    for (name, node) in &g.children {
        path.push(name.clone());
        match node {
            Node::Group(s) => index(s, path, out),
            Node::Dataset(d) => {
                out.entry(d.addr).or_insert_with(|| path.clone());
            }
            Node::New { replaces, .. } => {
                if let Some(a) = replaces {
                    out.entry(*a).or_insert_with(|| path.clone());
                }
            }
        }
        path.pop();
    }
}

/// How many hard links of the committed file name each object reachable from its root (the superblock's
/// link to the root counted).
fn committed_incoming(h5: &H5File) -> HashMap<u64, u32> {
    let mut incoming = HashMap::from([(h5.root_addr(), 1)]);
    let mut seen = HashSet::new();
    let mut stack = vec![h5.root_addr()];
    let ctx = h5.ctx();
    while let Some(addr) = stack.pop() {
        if !seen.insert(addr) {
            continue;
        }
        let Ok(oh) = h5.header_at(addr) else {
            continue;
        };
        if groups::kind(&oh) != ObjectKind::Group {
            continue;
        }
        for l in groups::links(&ctx, &oh).unwrap_or_default() {
            if let LinkTarget::Hard(a) = l.target {
                *incoming.entry(a).or_insert(0) += 1;
                stack.push(a);
            }
        }
    }
    incoming
}

impl FileAppender {
    /// Where the tree holds the committed object `addr`, if it does.
    fn loaded_at(&mut self, addr: u64) -> Option<Vec<String>> {
        match self.loaded.get(&addr) {
            None => return None,
            Some(p) if holds(&self.root, p, addr) => return Some(p.clone()),
            Some(_) => {}
        }
        // Unlinked or moved since it was recorded: index the tree anew.
        self.reindex();
        self.loaded.get(&addr).cloned()
    }

    fn reindex(&mut self) {
        self.loaded.clear();
        index(&self.root, &mut Vec::new(), &mut self.loaded);
    }

    /// `parts` walked through the tree, loading committed groups and datasets on the way, as the path at
    /// which the tree holds what they name: a part naming an object the tree holds under another path
    /// continues from that path. Missing groups are created when `create` is set (the last part too).
    pub(super) fn canonical(&mut self, parts: &[&str], create: bool) -> Result<Vec<String>> {
        let mut cur: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
        let mut i = 0;
        // Each redirect replaces a loaded prefix and keeps the parts after it, so the parts still to walk
        // shrink at every step: the walk ends even through link cycles.
        while i < cur.len() {
            let g = group_at(&mut self.root, &cur[..i])?;
            if g.children.contains_key(&cur[i]) {
                i += 1;
                continue;
            }
            match g.links.get(&cur[i]).cloned() {
                Some(LinkTarget::Hard(a)) => {
                    if let Some(there) = self.loaded_at(a) {
                        let rest = cur.split_off(i + 1);
                        cur = there;
                        i = cur.len();
                        cur.extend(rest);
                        continue;
                    }
                    let node = load_node(&self.h5, a)?;
                    group_at(&mut self.root, &cur[..i])?
                        .children
                        .insert(cur[i].clone(), node);
                    self.loaded.insert(a, cur[..=i].to_vec());
                }
                Some(_) => {
                    return unsupported(format!(
                        "changing objects through a soft or external link (/{})",
                        cur[..=i].join("/")
                    ))
                }
                None if create => {
                    g.children.insert(
                        cur[i].clone(),
                        Node::Group(GroupState {
                            addr: None,
                            links: BTreeMap::new(),
                            attrs: Default::default(),
                            extra: vec![],
                            children: BTreeMap::new(),
                        }),
                    );
                }
                None => return Err(FormatError::NotFound(format!("/{}", cur[..=i].join("/")))),
            }
            i += 1;
        }
        Ok(cur)
    }

    /// Walks to the group at `parts`, loading (and optionally creating) groups on the way.
    pub(super) fn group_mut(&mut self, parts: &[&str], create: bool) -> Result<&mut GroupState> {
        let path = self.canonical(parts, create)?;
        group_at(&mut self.root, &path)
    }

    /// Whether the path `parts` names the root group (perhaps through a hard link to it).
    pub(super) fn names_root(&mut self, parts: &[&str]) -> Result<bool> {
        Ok(parts.is_empty() || self.canonical(parts, false)?.is_empty())
    }

    /// Where the tree keeps the attributes of the object at `object_path` ("/" or any path to the root too),
    /// loaded into the tree.
    pub(super) fn attr_target(&mut self, object_path: &str) -> Result<AttrTarget<'_>> {
        let at = self.canonical(&components(object_path)?, false)?;
        let Some((name, parents)) = at.split_last() else {
            return Ok(AttrTarget::Loaded(&mut self.root.attrs));
        };
        match group_at(&mut self.root, parents)?.children.get_mut(name) {
            Some(Node::Group(g)) => Ok(AttrTarget::Loaded(&mut g.attrs)),
            Some(Node::Dataset(d)) => Ok(AttrTarget::Loaded(&mut d.attrs)),
            Some(Node::New { attrs, .. }) => Ok(AttrTarget::New(attrs)),
            None => Err(FormatError::NotFound(object_path.to_string())),
        }
    }

    /// The object at `path` (not the root) loaded into the tree.
    pub(super) fn child(&mut self, path: &str) -> Result<&mut Node> {
        let parts = components(path)?;
        if parts.is_empty() {
            return invalid("path names the root group");
        }
        let at = self.canonical(&parts, false)?;
        let Some((name, parents)) = at.split_last() else {
            return invalid(format!(
                "{path} names the root group (through a hard link); use \"/\""
            ));
        };
        group_at(&mut self.root, parents)?
            .children
            .get_mut(name)
            .ok_or_else(|| FormatError::NotFound(path.to_string()))
    }

    /// Keeps what this session changed in `node`, just unlinked, where the committed file links it (or the
    /// objects under it) at another path: the node moves there, so the other links see the changes.
    pub(super) fn rehome(&mut self, node: Node) -> Result<()> {
        let addr = match &node {
            Node::Group(g) => g.addr,
            Node::Dataset(d) => Some(d.addr),
            Node::New { .. } => None,
        };
        let Some(addr) = addr else {
            return Ok(());
        };
        let incoming = self
            .incoming
            .get_or_insert_with(|| committed_incoming(&self.h5));
        if incoming.get(&addr).is_some_and(|&n| n > 1) {
            self.reindex();
            if let Some(path) = self.path_to(addr) {
                let parts: Vec<&str> = path.iter().map(String::as_str).collect();
                if let Some((name, parents)) = parts.split_last() {
                    let g = self.group_mut(parents, false)?;
                    if !g.children.contains_key(*name) {
                        g.children.insert(name.to_string(), node);
                        self.reindex();
                        return Ok(());
                    }
                }
            }
        }
        // Not linked elsewhere: what is under it may be. (Index entries of dropped nodes go stale; lookups
        // check every entry they use, and index the tree anew on a stale one.)
        if let Node::Group(g) = node {
            for (_, child) in g.children {
                self.rehome(child)?;
            }
        }
        Ok(())
    }

    /// A path to the committed object `target` as this session leaves the links (the tree where it holds a
    /// group, the committed file elsewhere), if any still reaches it.
    fn path_to(&self, target: u64) -> Option<Vec<String>> {
        enum At<'t> {
            Tree(&'t GroupState),
            File(u64),
        }
        let ctx = self.h5.ctx();
        let mut seen = HashSet::new();
        let mut stack = vec![(At::Tree(&self.root), Vec::<String>::new())];
        while let Some((at, path)) = stack.pop() {
            let at = match at {
                At::File(a) => match self.loaded.get(&a) {
                    // The tree's version of a group it holds: its links as this session leaves them.
                    Some(p) if holds(&self.root, p, a) => {
                        let mut g = &self.root;
                        for part in p {
                            match g.children.get(part) {
                                Some(Node::Group(s)) => g = s,
                                _ => break,
                            }
                        }
                        At::Tree(g)
                    }
                    _ => At::File(a),
                },
                tree => tree,
            };
            let links: Vec<(String, Option<&Node>, Option<u64>)> = match at {
                At::Tree(g) => {
                    let mut names: Vec<&String> = g.links.keys().chain(g.children.keys()).collect();
                    names.sort();
                    names.dedup();
                    names
                        .into_iter()
                        .map(|n| {
                            let hard = match g.links.get(n) {
                                Some(LinkTarget::Hard(a)) => Some(*a),
                                _ => None,
                            };
                            (n.clone(), g.children.get(n), hard)
                        })
                        .collect()
                }
                At::File(a) => {
                    let Ok(oh) = self.h5.header_at(a) else {
                        continue;
                    };
                    if groups::kind(&oh) != ObjectKind::Group {
                        continue;
                    }
                    groups::links(&ctx, &oh)
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|l| match l.target {
                            LinkTarget::Hard(a) => Some((l.name, None, Some(a))),
                            _ => None,
                        })
                        .collect()
                }
            };
            for (name, node, hard) in links {
                let mut p = path.clone();
                p.push(name);
                match node {
                    Some(Node::Group(s)) => {
                        if s.addr == Some(target) {
                            return Some(p);
                        }
                        if s.addr.is_none_or(|a| seen.insert(a)) {
                            stack.push((At::Tree(s), p));
                        }
                    }
                    Some(Node::Dataset(d)) if d.addr == target => return Some(p),
                    Some(_) => {}
                    None => {
                        let Some(a) = hard else { continue };
                        if a == target {
                            return Some(p);
                        }
                        if seen.insert(a) {
                            stack.push((At::File(a), p));
                        }
                    }
                }
            }
        }
        None
    }
}
