//! Version-1 B-trees (`TREE`): walking group and chunk trees, writing chunk trees.

use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::{PutLe, UNDEF};
use crate::sizes::Sizes;

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

/// The leaf nodes of a chunk B-tree with their entries (for reusing unchanged leaves).
pub fn chunk_leaves(ctx: &Ctx<'_>, addr: u64, rank: usize) -> Result<Vec<(u64, Vec<ChunkEntry>)>> {
    let mut out = Vec::new();
    leaves_rec(ctx, addr, rank, MAX_DEPTH, &mut out)?;
    Ok(out)
}

fn leaves_rec(
    ctx: &Ctx<'_>,
    addr: u64,
    rank: usize,
    max_level: u32,
    out: &mut Vec<(u64, Vec<ChunkEntry>)>,
) -> Result<()> {
    if addr == UNDEF {
        return Ok(());
    }
    let mut c = ctx.cursor(addr, "v1 B-tree node")?;
    c.expect_sig(b"TREE")?;
    if c.u8()? != 1 {
        return corrupt("chunk B-tree node of the wrong type");
    }
    let level = c.u8()? as u32;
    if level >= max_level {
        return corrupt("v1 B-tree levels do not decrease");
    }
    if level == 0 {
        let mut v = Vec::new();
        chunks(ctx, addr, rank, &mut v)?;
        out.push((addr, v));
        return Ok(());
    }
    let n = c.u16()? as usize;
    c.skip(2 * ctx.so)?;
    let key_size = 8 + 8 * (rank + 1);
    for _ in 0..n {
        c.skip(key_size)?;
        let child = c.addr(ctx.so)?;
        leaves_rec(ctx, child, rank, level, out)?;
    }
    Ok(())
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
/// returns the root address (UNDEF when there are no chunks). Leaves of `reuse` whose entries
/// equal a new leaf's are referenced instead of rewritten. Sibling pointers are left undefined
/// (readers do not use them; libhdf5 skips undefined siblings when it edits the tree). Addresses take the
/// file's offset width (`sizes`); the keys' chunk offsets are 8 bytes whatever it is.
pub fn write_chunk_tree(
    entries: &[ChunkEntry],
    chunk: &[u64],
    base: u64,
    out: &mut Vec<u8>,
    reuse: &[(u64, Vec<ChunkEntry>)],
    sizes: Sizes,
) -> u64 {
    let so = sizes.offsets;
    if entries.is_empty() {
        return UNDEF;
    }
    let rank = chunk.len();
    let key_size = 8 + 8 * (rank + 1);
    let node_size = 8 + 2 * so + (CHUNK_FANOUT + 1) * key_size + CHUNK_FANOUT * so;
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
    let reusable: std::collections::HashMap<&[u64], (u64, &[ChunkEntry])> = reuse
        .iter()
        .filter_map(|(a, v)| v.first().map(|f| (f.offset.as_slice(), (*a, v.as_slice()))))
        .collect();
    // Level 0 items: (first key, child address).
    let mut items: Vec<(Vec<u8>, u64)> = entries.iter().map(|e| (leaf_key(e), e.addr)).collect();
    let mut level = 0u8;
    loop {
        let groups: Vec<&[(Vec<u8>, u64)]> = items.chunks(CHUNK_FANOUT).collect();
        let count = groups.len();
        let mut next = Vec::with_capacity(count);
        for (gi, g) in groups.iter().enumerate() {
            if level == 0 {
                let slice = &entries[gi * CHUNK_FANOUT..gi * CHUNK_FANOUT + g.len()];
                if let Some((a, old)) = reusable.get(slice[0].offset.as_slice()) {
                    if *old == slice {
                        next.push((g[0].0.clone(), *a));
                        continue;
                    }
                }
            }
            let addr = base + out.len() as u64;
            let mut node = Vec::with_capacity(node_size);
            node.extend_from_slice(b"TREE");
            node.put_u8(1);
            node.put_u8(level);
            node.put_u16(g.len() as u16);
            sizes.put_offset(&mut node, UNDEF);
            sizes.put_offset(&mut node, UNDEF);
            for (k, child) in g.iter() {
                node.extend_from_slice(k);
                sizes.put_offset(&mut node, *child);
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
            return next[0].1;
        }
        items = next;
        level += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: u64) -> Vec<ChunkEntry> {
        (0..n)
            .map(|i| ChunkEntry {
                offset: vec![i * 4],
                addr: 1000 + i * 16,
                size: 16,
                filter_mask: 0,
            })
            .collect()
    }

    #[test]
    fn multi_level_tree_roundtrips_and_reuses_leaves() {
        let e = entries(300);
        let mut file = vec![0u8; 64];
        let root = write_chunk_tree(&e, &[4], 0, &mut file, &[], Sizes::DEFAULT);
        file.resize(file.len() + 8, 0);
        let ctx = Ctx {
            data: &file,
            so: 8,
            sl: 8,
            base: 0,
        };
        let mut got = Vec::new();
        chunks(&ctx, root, 1, &mut got).unwrap();
        assert_eq!(got, e);
        let leaves = chunk_leaves(&ctx, root, 1).unwrap();
        assert_eq!(leaves.len(), 5);
        // Append 10 entries: only the last leaf and the root are rewritten.
        let e2 = entries(310);
        let before = file.len();
        let mut tail = Vec::new();
        let root2 = write_chunk_tree(&e2, &[4], before as u64, &mut tail, &leaves, Sizes::DEFAULT);
        let node_size = 8 + 16 + 65 * 24 + 64 * 8;
        assert_eq!(tail.len(), 2 * node_size);
        file.extend_from_slice(&tail);
        let ctx = Ctx {
            data: &file,
            so: 8,
            sl: 8,
            base: 0,
        };
        let mut got = Vec::new();
        chunks(&ctx, root2, 1, &mut got).unwrap();
        assert_eq!(got, e2);
    }
}

#[cfg(test)]
mod narrow_tests {
    use super::*;

    #[test]
    fn a_tree_of_4_byte_addresses_reads_back() {
        let e: Vec<ChunkEntry> = (0..200u64)
            .map(|i| ChunkEntry {
                offset: vec![i * 4, 0],
                addr: 1000 + i * 16,
                size: 16,
                filter_mask: 0,
            })
            .collect();
        let sizes = Sizes {
            offsets: 4,
            lengths: 4,
        };
        let mut file = vec![0u8; 64];
        let root = write_chunk_tree(&e, &[4, 2], 0, &mut file, &[], sizes);
        // Four leaves and a root, each node with 4-byte sibling and child addresses.
        let node_size = 8 + 8 + 65 * 32 + 64 * 4;
        assert_eq!(file.len(), 64 + 5 * node_size);
        let ctx = Ctx {
            data: &file,
            so: 4,
            sl: 4,
            base: 0,
        };
        let mut got = Vec::new();
        chunks(&ctx, root, 2, &mut got).unwrap();
        assert_eq!(got, e);
    }
}
