//! Version-1 B-trees (`TREE`): walking group and chunk trees, writing chunk trees.

use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::{PutLe, UNDEF};

/// One chunk as recorded in a chunk index.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkEntry {
    /// Element offsets of the chunk's first element, one per dataset dimension.
    pub offset: Vec<u64>,
    pub addr: u64,
    /// Stored (filtered) size in bytes.
    pub size: u64,
    pub filter_mask: u32,
}

const MAX_DEPTH: u32 = 64;

/// Collects the leaf children of a group B-tree (symbol node addresses).
pub fn group_leaves(ctx: &Ctx<'_>, addr: u64, out: &mut Vec<u64>) -> Result<()> {
    walk(ctx, addr, 0, ctx.sl, MAX_DEPTH, &mut |_, child| {
        out.push(child);
        Ok(())
    })
}

/// Collects every chunk of a chunk B-tree for a dataset of `rank` dimensions.
pub fn chunks(ctx: &Ctx<'_>, addr: u64, rank: usize, out: &mut Vec<ChunkEntry>) -> Result<()> {
    let key_size = 8 + 8 * (rank + 1);
    walk(ctx, addr, 1, key_size, MAX_DEPTH, &mut |key, child| {
        let size = u32::from_le_bytes([key[0], key[1], key[2], key[3]]) as u64;
        let mask = u32::from_le_bytes([key[4], key[5], key[6], key[7]]);
        let offset = (0..rank)
            .map(|i| crate::io::le_uint(&key[8 + 8 * i..16 + 8 * i]))
            .collect();
        out.push(ChunkEntry {
            offset,
            addr: child,
            size,
            filter_mask: mask,
        });
        Ok(())
    })
}

fn walk(
    ctx: &Ctx<'_>,
    addr: u64,
    node_type: u8,
    key_size: usize,
    max_level: u32,
    f: &mut dyn FnMut(&[u8], u64) -> Result<()>,
) -> Result<()> {
    if addr == UNDEF {
        return Ok(());
    }
    let mut c = ctx.cursor(addr, "v1 B-tree node")?;
    c.expect_sig(b"TREE")?;
    let t = c.u8()?;
    if t != node_type {
        return corrupt(format!("v1 B-tree node type {t}, expected {node_type}"));
    }
    let level = c.u8()? as u32;
    if level >= max_level {
        return corrupt("v1 B-tree levels do not decrease");
    }
    let n = c.u16()? as usize;
    c.skip(2 * ctx.so)?;
    for _ in 0..n {
        let key = c.bytes(key_size)?;
        let child = c.addr(ctx.so)?;
        if level == 0 {
            f(key, child)?;
        } else {
            walk(ctx, child, node_type, key_size, level, f)?;
        }
    }
    Ok(())
}

/// Entries per node we write (libhdf5's default 2·K for chunk trees, K = 32).
pub const CHUNK_FANOUT: usize = 64;

/// Writes a chunk B-tree for `entries` (sorted by offset) into `out` at file address `base`;
/// returns the root address (UNDEF when there are no chunks).
pub fn write_chunk_tree(
    entries: &[ChunkEntry],
    chunk: &[u64],
    base: u64,
    out: &mut Vec<u8>,
) -> u64 {
    if entries.is_empty() {
        return UNDEF;
    }
    let rank = chunk.len();
    let key_size = 8 + 8 * (rank + 1);
    let node_size = 8 + 16 + (CHUNK_FANOUT + 1) * key_size + CHUNK_FANOUT * 8;
    let leaf_key = |e: &ChunkEntry| {
        let mut k = Vec::with_capacity(key_size);
        k.put_u32(e.size as u32);
        k.put_u32(e.filter_mask);
        for o in &e.offset {
            k.put_u64(*o);
        }
        k.put_u64(0);
        k
    };
    let mut last_key = Vec::with_capacity(key_size);
    last_key.put_u32(0);
    last_key.put_u32(0);
    if let Some(e) = entries.last() {
        for (o, c) in e.offset.iter().zip(chunk) {
            last_key.put_u64(o + c);
        }
    }
    last_key.put_u64(0);
    // Level 0 items: (first key, child address).
    let mut items: Vec<(Vec<u8>, u64)> = entries.iter().map(|e| (leaf_key(e), e.addr)).collect();
    let mut level = 0u8;
    loop {
        let groups: Vec<&[(Vec<u8>, u64)]> = items.chunks(CHUNK_FANOUT).collect();
        let start = base + out.len() as u64;
        let count = groups.len();
        let mut next = Vec::with_capacity(count);
        for (gi, g) in groups.iter().enumerate() {
            let addr = start + (gi * node_size) as u64;
            let mut node = Vec::with_capacity(node_size);
            node.extend_from_slice(b"TREE");
            node.put_u8(1);
            node.put_u8(level);
            node.put_u16(g.len() as u16);
            node.put_u64(if gi == 0 {
                UNDEF
            } else {
                addr - node_size as u64
            });
            node.put_u64(if gi + 1 == count {
                UNDEF
            } else {
                addr + node_size as u64
            });
            for (k, child) in g.iter() {
                node.extend_from_slice(k);
                node.put_u64(*child);
            }
            // Right key: first key of the next group, or the tree's final key.
            match groups.get(gi + 1) {
                Some(ng) => node.extend_from_slice(&ng[0].0),
                None => node.extend_from_slice(&last_key),
            }
            node.resize(node_size, 0);
            out.extend_from_slice(&node);
            next.push((g[0].0.clone(), addr));
        }
        if count == 1 {
            return start;
        }
        items = next;
        level += 1;
    }
}
