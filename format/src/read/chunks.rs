//! Enumerating the chunks of a chunked dataset from its chunk index.

use crate::btree::v1::{self, ChunkEntry};
use crate::chunk_index::{btree2, earray, farray, Elem};
use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::UNDEF;
use crate::messages::ChunkIndex;

/// All allocated chunks of a dataset with shape `dims` and chunk shape `chunk`.
pub fn entries(
    ctx: &Ctx<'_>,
    index: &ChunkIndex,
    dims: &[u64],
    max_dims: &[Option<u64>],
    chunk: &[u64],
    elem: usize,
) -> Result<Vec<ChunkEntry>> {
    let chunk_bytes = chunk
        .iter()
        .try_fold(elem as u64, |a, &c| a.checked_mul(c))
        .ok_or_else(|| crate::FormatError::Corrupt("chunk size overflows".into()))?;
    let mut out = Vec::new();
    match index {
        ChunkIndex::BTreeV1 { addr } => {
            v1::chunks(ctx, *addr, dims.len(), &mut out)?;
        }
        ChunkIndex::Single {
            addr,
            filtered_size,
            mask,
        } => {
            if *addr != UNDEF {
                out.push(ChunkEntry {
                    offset: vec![0; dims.len()],
                    addr: *addr,
                    size: filtered_size.unwrap_or(chunk_bytes),
                    filter_mask: *mask,
                });
            }
        }
        ChunkIndex::Implicit { addr } => {
            if *addr != UNDEF {
                let grid: Vec<u64> = dims
                    .iter()
                    .zip(chunk)
                    .map(|(d, c)| d.div_ceil(*c))
                    .collect();
                let total = grid
                    .iter()
                    .try_fold(1u64, |a, &g| a.checked_mul(g))
                    .unwrap_or(u64::MAX);
                ctx.check_count(total, chunk_bytes, "implicit chunk index")?;
                for i in 0..total {
                    let mut rem = i;
                    let mut off = vec![0u64; dims.len()];
                    for d in (0..dims.len()).rev() {
                        off[d] = (rem % grid[d]) * chunk[d];
                        rem /= grid[d];
                    }
                    out.push(ChunkEntry {
                        offset: off,
                        addr: addr + i * chunk_bytes,
                        size: chunk_bytes,
                        filter_mask: 0,
                    });
                }
            }
        }
        ChunkIndex::FixedArray { addr } => {
            if *addr != UNDEF {
                let elems = farray::read(ctx, *addr)?;
                let grid = grid_of(max_dims, chunk);
                linear(&elems, &grid, chunk, chunk_bytes, &mut out)?;
            }
        }
        ChunkIndex::ExtensibleArray { addr } => {
            if *addr != UNDEF {
                let elems = earray::read(ctx, *addr)?;
                // The unlimited dimension is the slowest-varying one in the linear index.
                let unlim = unlim_dim(max_dims);
                let mut grid = grid_of(max_dims, chunk);
                let mut order: Vec<usize> = (0..dims.len()).collect();
                if let Some(u) = unlim {
                    order.remove(u);
                    order.insert(0, u);
                    grid[u] = u64::MAX;
                }
                for (i, e) in elems.iter().enumerate() {
                    if e.addr == UNDEF {
                        continue;
                    }
                    let mut rem = i as u64;
                    let mut off = vec![0u64; dims.len()];
                    for &d in order.iter().rev() {
                        if grid[d] == u64::MAX {
                            off[d] = rem * chunk[d];
                            rem = 0;
                        } else {
                            off[d] = (rem % grid[d].max(1)) * chunk[d];
                            rem /= grid[d].max(1);
                        }
                    }
                    out.push(ChunkEntry {
                        offset: off,
                        addr: e.addr,
                        size: e.size.unwrap_or(chunk_bytes),
                        filter_mask: e.mask,
                    });
                }
            }
        }
        ChunkIndex::BTreeV2 { addr } => {
            if *addr != UNDEF {
                for (scaled, e) in btree2::read(ctx, *addr, dims.len())? {
                    out.push(ChunkEntry {
                        offset: scaled
                            .iter()
                            .zip(chunk)
                            .map(|(s, c)| s.saturating_mul(*c))
                            .collect(),
                        addr: e.addr,
                        size: e.size.unwrap_or(chunk_bytes),
                        filter_mask: e.mask,
                    });
                }
            }
        }
    }
    for e in &out {
        if e.offset.len() != dims.len() || e.offset.iter().zip(chunk).any(|(o, c)| o % c != 0) {
            return corrupt("chunk offset not aligned to the chunk shape");
        }
    }
    Ok(out)
}

fn grid_of(max_dims: &[Option<u64>], chunk: &[u64]) -> Vec<u64> {
    max_dims
        .iter()
        .zip(chunk)
        .map(|(m, c)| m.unwrap_or(u64::MAX).div_ceil(*c))
        .collect()
}

fn unlim_dim(max_dims: &[Option<u64>]) -> Option<usize> {
    max_dims.iter().position(|m| m.is_none())
}

/// Maps a linear (row-major over `grid`) element list to chunk entries.
fn linear(
    elems: &[Elem],
    grid: &[u64],
    chunk: &[u64],
    chunk_bytes: u64,
    out: &mut Vec<ChunkEntry>,
) -> Result<()> {
    for (i, e) in elems.iter().enumerate() {
        if e.addr == UNDEF {
            continue;
        }
        let mut rem = i as u64;
        let mut off = vec![0u64; grid.len()];
        for d in (0..grid.len()).rev() {
            let g = grid[d].max(1);
            off[d] = (rem % g) * chunk[d];
            rem /= g;
        }
        if rem != 0 {
            return corrupt("fixed array has more elements than chunks");
        }
        out.push(ChunkEntry {
            offset: off,
            addr: e.addr,
            size: e.size.unwrap_or(chunk_bytes),
            filter_mask: e.mask,
        });
    }
    Ok(())
}
