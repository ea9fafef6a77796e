//! [`Dataset`]: metadata of one dataset and reads of all of it or of a box of it.

use crate::array::Array;
use crate::btree::v1::ChunkEntry;
use crate::convert;
use crate::dataspace::Dataspace;
use crate::datatype::Datatype;
use crate::error::{corrupt, invalid, FormatError, Result};
use crate::filters;
use crate::io::{Cursor, UNDEF};
use crate::messages::{self, Filter, Layout};
use crate::object_header::mtype;
use crate::read::chunks;
use crate::read::file::H5File;
use crate::select::copy_box;
use rayon::prelude::*;

/// An open dataset.
pub struct Dataset<'a> {
    file: &'a H5File,
    path: String,
    addr: u64,
    dtype: Datatype,
    space: Dataspace,
    layout: Layout,
    layout_version: u8,
    filters: Vec<Filter>,
    fill: Option<Vec<u8>>,
}

impl<'a> Dataset<'a> {
    pub(crate) fn open(file: &'a H5File, addr: u64, path: &str) -> Result<Self> {
        let ctx = file.ctx();
        let oh = file.header_at(addr)?;
        let not_ds = || FormatError::TypeMismatch(format!("{path} is not a dataset"));
        let ds = oh.find(mtype::DATASPACE).ok_or_else(not_ds)?;
        let dt = oh.find(mtype::DATATYPE).ok_or_else(not_ds)?;
        let lm = oh.find(mtype::LAYOUT).ok_or_else(not_ds)?;
        if ds.flags & 0x02 != 0 {
            return crate::error::unsupported("shared dataspace message");
        }
        let space = Dataspace::parse(&mut Cursor::new(ds.data, "dataspace"), ctx.sl)?;
        let dtype = file.datatype_msg(dt.flags, dt.data)?;
        let (layout_version, layout) = messages::parse_layout(lm.data, &ctx, space.dims.len())?;
        let filters = match oh.find(mtype::FILTERS) {
            Some(m) => messages::parse_filters(m.data)?,
            None => vec![],
        };
        let fill = match oh.find(mtype::FILL) {
            Some(m) => messages::parse_fill(m.data)?,
            None => match oh.find(mtype::FILL_OLD) {
                Some(m) if m.data.len() >= 4 => {
                    let n =
                        u32::from_le_bytes([m.data[0], m.data[1], m.data[2], m.data[3]]) as usize;
                    m.data.get(4..4 + n).map(|s| s.to_vec())
                }
                _ => None,
            },
        };
        let fill = fill.filter(|f| f.len() == dtype.size() && !f.is_empty());
        if oh.find(mtype::EXTERNAL_FILES).is_some() {
            return crate::error::unsupported("external data files");
        }
        Ok(Dataset {
            file,
            path: path.to_string(),
            addr,
            dtype,
            space,
            layout,
            layout_version,
            filters,
            fill,
        })
    }

    /// Maximum shape with every entry present (`None` = unlimited; defaults to the shape).
    fn max_dims(&self) -> Vec<Option<u64>> {
        match &self.space.max {
            Some(m) => m.clone(),
            None => self.space.dims.iter().map(|d| Some(*d)).collect(),
        }
    }

    /// Current shape.
    pub fn shape(&self) -> &[u64] {
        &self.space.dims
    }

    /// Maximum shape (`None` entry = unlimited); `None` when not stored (= shape).
    pub fn max_shape(&self) -> Option<&[Option<u64>]> {
        self.space.max.as_deref()
    }

    /// The file datatype.
    pub fn dtype(&self) -> &Datatype {
        &self.dtype
    }

    /// "compact", "contiguous" or "chunked".
    pub fn layout_kind(&self) -> &'static str {
        match self.layout {
            Layout::Compact(_) => "compact",
            Layout::Contiguous { .. } => "contiguous",
            Layout::Chunked { .. } => "chunked",
        }
    }

    /// Layout message version (3, 4 or 5).
    pub fn layout_version(&self) -> u8 {
        self.layout_version
    }

    /// Parsed layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Chunk shape of a chunked dataset.
    pub fn chunk(&self) -> Option<&[u64]> {
        match &self.layout {
            Layout::Chunked { chunk, .. } => Some(chunk),
            _ => None,
        }
    }

    /// Filter pipeline.
    pub fn filters(&self) -> &[Filter] {
        &self.filters
    }

    /// Object header address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Path this dataset was opened by.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The dataset's chunks (empty unless chunked).
    pub fn chunk_entries(&self) -> Result<Vec<ChunkEntry>> {
        match &self.layout {
            Layout::Chunked { chunk, index } => chunks::entries(
                &self.file.ctx(),
                index,
                &self.space.dims,
                &self.max_dims(),
                chunk,
                self.dtype.size(),
            ),
            _ => Ok(vec![]),
        }
    }

    /// Reads everything.
    pub fn read(&self) -> Result<Array> {
        let zero = vec![0; self.space.dims.len()];
        let dims = self.space.dims.clone();
        if self.space.null {
            return Ok(Array {
                shape: vec![],
                data: convert::decode(&self.dtype, &[], 0, self.file)?,
            });
        }
        self.read_slice(&zero, &dims)
    }

    /// Reads `count` rows starting at `start` along dimension 0.
    pub fn read_rows(&self, start: u64, count: u64) -> Result<Array> {
        if self.space.dims.is_empty() {
            return invalid("read_rows on a scalar dataset");
        }
        let mut s = vec![0; self.space.dims.len()];
        s[0] = start;
        let mut c = self.space.dims.clone();
        c[0] = count;
        self.read_slice(&s, &c)
    }

    /// Reads the box at `start` of extent `count` (one entry per dimension).
    pub fn read_slice(&self, start: &[u64], count: &[u64]) -> Result<Array> {
        let raw = self.read_box_raw(start, count)?;
        let n = count.iter().product::<u64>() as usize;
        let data = convert::decode(&self.dtype, &raw, n, self.file)?;
        Ok(Array {
            shape: count.to_vec(),
            data,
        })
    }

    /// Reads a strided hyperslab (HDF5 semantics: `count` blocks of `block` every `stride`).
    pub fn read_hyperslab(
        &self,
        start: &[u64],
        stride: &[u64],
        count: &[u64],
        block: &[u64],
    ) -> Result<Array> {
        let r = self.space.dims.len();
        if stride.len() != r || count.len() != r || block.len() != r || start.len() != r {
            return invalid("hyperslab arguments must have the dataset's rank");
        }
        if stride.iter().zip(block).any(|(s, b)| *s == 0 || b > s) {
            return invalid("hyperslab stride must be >= block and > 0");
        }
        // Bounding box, then pick the selected elements.
        let ext: Vec<u64> = (0..r)
            .map(|d| {
                if count[d] == 0 {
                    0
                } else {
                    (count[d] - 1) * stride[d] + block[d]
                }
            })
            .collect();
        let raw = self.read_box_raw(start, &ext)?;
        let elem = self.dtype.size();
        let out_shape: Vec<u64> = (0..r).map(|d| count[d] * block[d]).collect();
        let n = out_shape.iter().product::<u64>() as usize;
        let mut out = vec![0u8; n * elem];
        let mut idx = vec![0u64; r];
        if n > 0 {
            'outer: loop {
                let mut src = 0u64;
                let mut dst = 0u64;
                for d in 0..r {
                    let (blk, within) = (idx[d] / block[d], idx[d] % block[d]);
                    src = src * ext[d] + blk * stride[d] + within;
                    dst = dst * out_shape[d] + idx[d];
                }
                let (s, t) = (src as usize * elem, dst as usize * elem);
                out[t..t + elem].copy_from_slice(&raw[s..s + elem]);
                let mut d = r;
                loop {
                    if d == 0 {
                        break 'outer;
                    }
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < out_shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }
        Ok(Array {
            shape: out_shape,
            data: convert::decode(&self.dtype, &out, n, self.file)?,
        })
    }

    pub(crate) fn read_box_raw(&self, start: &[u64], count: &[u64]) -> Result<Vec<u8>> {
        let dims = &self.space.dims;
        let r = dims.len();
        if start.len() != r || count.len() != r {
            return invalid("selection rank differs from the dataset's");
        }
        for d in 0..r {
            if start[d].checked_add(count[d]).is_none_or(|e| e > dims[d]) {
                return invalid(format!(
                    "selection {:?}+{:?} outside shape {:?}",
                    start, count, dims
                ));
            }
        }
        let elem = self.dtype.size();
        let n = count
            .iter()
            .try_fold(1u64, |a, &c| a.checked_mul(c))
            .and_then(|n| n.checked_mul(elem as u64))
            .ok_or_else(|| FormatError::Corrupt("selection size overflows".into()))?;
        let ctx = self.file.ctx();
        let limit = (ctx.data.len() as u64).saturating_mul(1100).max(64 << 20);
        let total_elems = self.space.num_elements()?;
        if n > limit {
            return corrupt(format!(
                "selection of {n} bytes is implausibly large for a file of {} bytes",
                ctx.data.len()
            ));
        }
        let mut out = match &self.fill {
            Some(f) => f.repeat((n as usize) / elem.max(1)),
            None => vec![0u8; n as usize],
        };
        let total_bytes = total_elems.saturating_mul(elem as u64);
        match &self.layout {
            Layout::Compact(d) => {
                if (d.len() as u64) < total_bytes {
                    return corrupt("compact data shorter than the dataset");
                }
                copy_box(d, dims, start, &mut out, count, &vec![0; r], count, elem);
            }
            Layout::Contiguous { addr, .. } => {
                if *addr != UNDEF && total_bytes > 0 {
                    let src = ctx.slice(*addr, total_bytes)?;
                    copy_box(src, dims, start, &mut out, count, &vec![0; r], count, elem);
                }
            }
            Layout::Chunked { chunk, index } => {
                if n == 0 {
                    return Ok(out);
                }
                let all = chunks::entries(&ctx, index, dims, &self.max_dims(), chunk, elem)?;
                let fetch = |a: u64, n: u64| -> Result<Vec<u8>> { Ok(ctx.slice(a, n)?.to_vec()) };
                return self.chunked_box_into(out, dims, &all, start, count, &fetch);
            }
        }
        Ok(out)
    }

    /// Reads a box of a chunked dataset of shape `dims` from an explicit chunk list, fetching
    /// stored chunk bytes with `fetch(address, size)`.
    pub(crate) fn chunked_box(
        &self,
        dims: &[u64],
        entries: &[ChunkEntry],
        start: &[u64],
        count: &[u64],
        fetch: &(dyn Fn(u64, u64) -> Result<Vec<u8>> + Sync),
    ) -> Result<Vec<u8>> {
        let elem = self.dtype.size();
        let n = count.iter().product::<u64>() as usize * elem;
        let out = match &self.fill {
            Some(f) => f.repeat(n / elem.max(1)),
            None => vec![0u8; n],
        };
        self.chunked_box_into(out, dims, entries, start, count, fetch)
    }

    fn chunked_box_into(
        &self,
        mut out: Vec<u8>,
        dims: &[u64],
        entries: &[ChunkEntry],
        start: &[u64],
        count: &[u64],
        fetch: &(dyn Fn(u64, u64) -> Result<Vec<u8>> + Sync),
    ) -> Result<Vec<u8>> {
        let chunk = match &self.layout {
            Layout::Chunked { chunk, .. } => chunk,
            _ => return invalid("not a chunked dataset"),
        };
        let r = dims.len();
        let elem = self.dtype.size();
        let chunk_bytes = chunk.iter().product::<u64>() as usize * elem;
        let hits: Vec<&ChunkEntry> = entries
            .iter()
            .filter(|e| {
                e.offset.len() == r
                    && (0..r).all(|d| {
                        e.offset[d] < start[d] + count[d]
                            && e.offset[d] + chunk[d] > start[d]
                            && e.offset[d] < dims[d]
                    })
            })
            .collect();
        let decoded: Vec<Result<Vec<u8>>> = hits
            .par_iter()
            .map(|e| {
                let stored = fetch(e.addr, e.size)?;
                if self.filters.is_empty() {
                    if stored.len() < chunk_bytes {
                        return corrupt("chunk shorter than the chunk shape");
                    }
                    Ok(stored[..chunk_bytes].to_vec())
                } else {
                    let d =
                        filters::decode(&self.filters, e.filter_mask, &stored, elem, chunk_bytes)?;
                    if d.len() < chunk_bytes {
                        return corrupt("decoded chunk shorter than the chunk shape");
                    }
                    Ok(d)
                }
            })
            .collect();
        for (e, d) in hits.iter().zip(decoded) {
            let d = d?;
            let lo: Vec<u64> = (0..r).map(|i| e.offset[i].max(start[i])).collect();
            let hi: Vec<u64> = (0..r)
                .map(|i| (e.offset[i] + chunk[i]).min(start[i] + count[i]))
                .collect();
            let cnt: Vec<u64> = (0..r).map(|i| hi[i] - lo[i]).collect();
            let sst: Vec<u64> = (0..r).map(|i| lo[i] - e.offset[i]).collect();
            let dst: Vec<u64> = (0..r).map(|i| lo[i] - start[i]).collect();
            copy_box(&d, chunk, &sst, &mut out, count, &dst, &cnt, elem);
        }
        Ok(out)
    }
}
