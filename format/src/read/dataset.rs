//! [`Dataset`]: metadata of one dataset and reads of all of it or of a box of it.

use crate::array::{Array, Data};
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
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

/// Decoded chunks kept per dataset, least recently inserted evicted first.
struct ChunkCache {
    map: HashMap<u64, Arc<Vec<u8>>>,
    order: VecDeque<u64>,
    bytes: usize,
}

/// Bytes of decoded chunks a dataset keeps.
const CHUNK_CACHE_BYTES: usize = 32 << 20;

impl ChunkCache {
    fn get(&self, addr: u64) -> Option<Arc<Vec<u8>>> {
        self.map.get(&addr).cloned()
    }

    fn put(&mut self, addr: u64, data: Arc<Vec<u8>>) {
        if data.len() > CHUNK_CACHE_BYTES / 4 || self.map.contains_key(&addr) {
            return;
        }
        self.bytes += data.len();
        self.map.insert(addr, data);
        self.order.push_back(addr);
        while self.bytes > CHUNK_CACHE_BYTES {
            match self.order.pop_front() {
                Some(old) => {
                    if let Some(d) = self.map.remove(&old) {
                        self.bytes -= d.len();
                    }
                }
                None => break,
            }
        }
    }
}

/// Contiguous reads at least this large use one positioned read instead of the mapping.
const BULK_READ_BYTES: usize = 1 << 20;

/// An open dataset.
pub struct Dataset<'a> {
    cache: Mutex<ChunkCache>,
    index: OnceLock<Vec<ChunkEntry>>,
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
            cache: Mutex::new(ChunkCache {
                map: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
            index: OnceLock::new(),
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

    /// A zeroed typed vector of `n` elements when the file type is a plain little-endian number.
    fn typed_zeroed(&self, n: usize) -> Result<Option<Data>> {
        if !cfg!(target_endian = "little") {
            return Ok(None);
        }
        Ok(match &self.dtype {
            Datatype::Float {
                size,
                be: false,
                exp_size,
                mant_size,
                ..
            } => match (size, exp_size, mant_size) {
                (4, 8, 23) => Some(Data::F32(vec![0.0; n])),
                (8, 11, 52) => Some(Data::F64(vec![0.0; n])),
                _ => None,
            },
            Datatype::Int {
                size,
                signed,
                be: false,
                offset: 0,
                precision,
            } if *precision as usize == size * 8 => match (size, signed) {
                (1, false) => Some(Data::U8(vec![0; n])),
                (1, true) => Some(Data::I8(vec![0; n])),
                (2, false) => Some(Data::U16(vec![0; n])),
                (2, true) => Some(Data::I16(vec![0; n])),
                (4, false) => Some(Data::U32(vec![0; n])),
                (4, true) => Some(Data::I32(vec![0; n])),
                (8, false) => Some(Data::U64(vec![0; n])),
                (8, true) => Some(Data::I64(vec![0; n])),
                _ => None,
            },
            _ => None,
        })
    }

    /// Little-endian numeric elements read with one positioned read straight into the result.
    fn bulk_read(&self, addr: u64, n: usize) -> Result<Option<Data>> {
        if !cfg!(target_endian = "little") {
            return Ok(None);
        }
        macro_rules! go {
            ($t:ty, $v:ident) => {{
                let mut v: Vec<$t> = vec![<$t>::default(); n];
                self.file
                    .read_into(addr, bytemuck::cast_slice_mut(&mut v))?;
                Ok(Some(Data::$v(v)))
            }};
        }
        match &self.dtype {
            Datatype::Float {
                size,
                be: false,
                exp_size,
                mant_size,
                ..
            } => match (size, exp_size, mant_size) {
                (4, 8, 23) => go!(f32, F32),
                (8, 11, 52) => go!(f64, F64),
                _ => Ok(None),
            },
            Datatype::Int {
                size,
                signed,
                be: false,
                offset: 0,
                precision,
            } if *precision as usize == size * 8 => match (size, signed) {
                (1, false) => go!(u8, U8),
                (1, true) => go!(i8, I8),
                (2, false) => go!(u16, U16),
                (2, true) => go!(i16, I16),
                (4, false) => go!(u32, U32),
                (4, true) => go!(i32, I32),
                (8, false) => go!(u64, U64),
                (8, true) => go!(i64, I64),
                _ => Ok(None),
            },
            _ => Ok(None),
        }
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
        // Contiguous storage and whole trailing dimensions: the selection is one byte run in the
        // file; decode straight from the mapped bytes.
        let dims = &self.space.dims;
        if let Layout::Contiguous { addr, .. } = &self.layout {
            let r = dims.len();
            if *addr != UNDEF
                && r > 0
                && start.len() == r
                && count.len() == r
                && count[1..] == dims[1..]
                && start[1..].iter().all(|&x| x == 0)
                && start[0].checked_add(count[0]).is_some_and(|e| e <= dims[0])
            {
                let elem = self.dtype.size() as u64;
                let row = dims[1..].iter().try_fold(elem, |a, &d| a.checked_mul(d));
                let total = self.space.num_elements()?.checked_mul(elem);
                if let (Some(row), Some(total)) = (row, total) {
                    let ctx = self.file.ctx();
                    let all = ctx.slice(*addr, total)?;
                    let a = (start[0] * row) as usize;
                    let b = a + (count[0] * row) as usize;
                    let n = (count[0] * (row / elem.max(1))) as usize;
                    if b - a >= BULK_READ_BYTES {
                        if let Some(data) = self.bulk_read(*addr + a as u64, n)? {
                            return Ok(Array {
                                shape: count.to_vec(),
                                data,
                            });
                        }
                    }
                    let data = convert::decode(&self.dtype, &all[a..b], n, self.file)?;
                    return Ok(Array {
                        shape: count.to_vec(),
                        data,
                    });
                }
            }
        }
        // Plain little-endian numbers: gather straight into the typed result.
        if self.typed_zeroed(0)?.is_some() {
            let n = self.check_box(start, count)? / self.dtype.size().max(1);
            let mut data = self.typed_zeroed(n)?.unwrap_or(Data::U8(vec![]));
            if let Some(bytes) = data_bytes_mut(&mut data) {
                self.fill_box(start, count, bytes)?;
                return Ok(Array {
                    shape: count.to_vec(),
                    data,
                });
            }
        }
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

    /// Validates a box selection; returns its size in bytes.
    fn check_box(&self, start: &[u64], count: &[u64]) -> Result<usize> {
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
        let len = self.file.bytes().len() as u64;
        let limit = len.saturating_mul(1100).max(64 << 20);
        if n > limit {
            return corrupt(format!(
                "selection of {n} bytes is implausibly large for a file of {len} bytes"
            ));
        }
        Ok(n as usize)
    }

    pub(crate) fn read_box_raw(&self, start: &[u64], count: &[u64]) -> Result<Vec<u8>> {
        let n = self.check_box(start, count)?;
        let mut out = vec![0u8; n];
        self.fill_box(start, count, &mut out)?;
        Ok(out)
    }

    /// Writes the fill value over `out` (skipped when it is all zero: `out` starts zeroed).
    fn prefill(&self, out: &mut [u8]) {
        if let Some(f) = &self.fill {
            if f.iter().any(|&b| b != 0) {
                for c in out.chunks_exact_mut(f.len()) {
                    c.copy_from_slice(f);
                }
            }
        }
    }

    /// Fills the zeroed buffer `out` (exactly the box's bytes) with the selected elements.
    fn fill_box(&self, start: &[u64], count: &[u64], out: &mut [u8]) -> Result<()> {
        let dims = &self.space.dims;
        let r = dims.len();
        let elem = self.dtype.size();
        let ctx = self.file.ctx();
        let total_bytes = self.space.num_elements()?.saturating_mul(elem as u64);
        self.prefill(out);
        match &self.layout {
            Layout::Compact(d) => {
                if (d.len() as u64) < total_bytes {
                    return corrupt("compact data shorter than the dataset");
                }
                copy_box(d, dims, start, out, count, &vec![0; r], count, elem);
            }
            Layout::Contiguous { addr, .. } => {
                if *addr != UNDEF && total_bytes > 0 {
                    let src = ctx.slice(*addr, total_bytes)?;
                    copy_box(src, dims, start, out, count, &vec![0; r], count, elem);
                }
            }
            Layout::Chunked { chunk, index } => {
                if out.is_empty() {
                    return Ok(());
                }
                let all = match self.index.get() {
                    Some(v) => v,
                    None => {
                        let v = chunks::entries(&ctx, index, dims, &self.max_dims(), chunk, elem)?;
                        self.index.get_or_init(|| v)
                    }
                };
                let fetch = |a: u64, n: u64| -> Result<Vec<u8>> { Ok(ctx.slice(a, n)?.to_vec()) };
                self.chunked_box_cached(out, dims, all, start, count, &fetch, true)?;
            }
        }
        Ok(())
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
        let mut out = vec![0u8; n];
        self.prefill(&mut out);
        self.chunked_box_cached(&mut out, dims, entries, start, count, fetch, false)?;
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn chunked_box_cached(
        &self,
        out: &mut [u8],
        dims: &[u64],
        entries: &[ChunkEntry],
        start: &[u64],
        count: &[u64],
        fetch: &(dyn Fn(u64, u64) -> Result<Vec<u8>> + Sync),
        use_cache: bool,
    ) -> Result<()> {
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
                            && e.offset[d].saturating_add(chunk[d]) > start[d]
                            && e.offset[d] < dims[d]
                    })
            })
            .collect();
        if self.filters.is_empty() && use_cache {
            // Unfiltered chunks of the committed file: copy straight from the mapped bytes.
            let ctx = self.file.ctx();
            for e in &hits {
                if e.size < chunk_bytes as u64 {
                    return corrupt("chunk shorter than the chunk shape");
                }
                let d = ctx.slice(e.addr, chunk_bytes as u64)?;
                let lo: Vec<u64> = (0..r).map(|i| e.offset[i].max(start[i])).collect();
                let hi: Vec<u64> = (0..r)
                    .map(|i| (e.offset[i] + chunk[i]).min(start[i] + count[i]))
                    .collect();
                let cnt: Vec<u64> = (0..r).map(|i| hi[i] - lo[i]).collect();
                let sst: Vec<u64> = (0..r).map(|i| lo[i] - e.offset[i]).collect();
                let dst: Vec<u64> = (0..r).map(|i| lo[i] - start[i]).collect();
                copy_box(d, chunk, &sst, out, count, &dst, &cnt, elem);
            }
            return Ok(());
        }
        let decoded: Vec<Result<Arc<Vec<u8>>>> = hits
            .par_iter()
            .map(|e| {
                if use_cache {
                    if let Some(d) = self.cache.lock().ok().and_then(|c| c.get(e.addr)) {
                        return Ok(d);
                    }
                }
                let stored = fetch(e.addr, e.size)?;
                let d = if self.filters.is_empty() {
                    if stored.len() < chunk_bytes {
                        return corrupt("chunk shorter than the chunk shape");
                    }
                    let mut stored = stored;
                    stored.truncate(chunk_bytes);
                    stored
                } else {
                    let d =
                        filters::decode(&self.filters, e.filter_mask, &stored, elem, chunk_bytes)?;
                    if d.len() < chunk_bytes {
                        return corrupt("decoded chunk shorter than the chunk shape");
                    }
                    d
                };
                let d = Arc::new(d);
                if use_cache {
                    if let Ok(mut c) = self.cache.lock() {
                        c.put(e.addr, d.clone());
                    }
                }
                Ok(d)
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
            copy_box(&d, chunk, &sst, out, count, &dst, &cnt, elem);
        }
        Ok(())
    }
}

/// The bytes of a plain numeric vector (little-endian hosts only use this).
fn data_bytes_mut(d: &mut Data) -> Option<&mut [u8]> {
    Some(match d {
        Data::U8(v) => v.as_mut_slice(),
        Data::I8(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::U16(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::I16(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::U32(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::I32(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::U64(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::I64(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::F32(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::F64(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        _ => return None,
    })
}
