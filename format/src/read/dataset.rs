//! [`Dataset`]: metadata of one dataset and reads of all of it or of a box of it.

use crate::array::{Array, Data};
use crate::btree::v1::ChunkEntry;
use crate::convert;
use crate::dataspace::Dataspace;
use crate::datatype::Datatype;
use crate::element::{needs_swap, swap_in_place, Element};
use crate::error::{corrupt, invalid, FormatError, Result};
use crate::filters;
use crate::io::{Cursor, UNDEF};
use crate::messages::{self, Filter, Layout};
use crate::object_header::mtype;
use crate::read::chunks;
use crate::read::file::H5File;
use crate::select::{copy_box, copy_points};
use half::f16;
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

/// Fetches a chunk's stored bytes by (address, size): borrowed from a mapping where it can be.
pub(crate) type Fetch<'f> = dyn Fn(u64, u64) -> Result<Cow<'f, [u8]>> + Sync + 'f;

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

    fn contains(&self, addr: u64) -> bool {
        self.map.contains_key(&addr)
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

/// Virtual and external datasets are read whole into memory; larger ones are refused.
const ASSEMBLED_MAX: u64 = 4 << 30;

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
    /// Where a contiguous dataset's bytes are when they are in external files.
    external: Option<Vec<crate::read::external::Segment>>,
    /// A virtual or external dataset's elements, read from their files at the first read.
    assembled: OnceLock<Vec<u8>>,
}

impl<'a> Dataset<'a> {
    pub(crate) fn open(
        file: &'a H5File,
        addr: u64,
        path: &str,
        view: crate::VdsView,
    ) -> Result<Self> {
        let ctx = file.ctx();
        let oh = file.header_at(addr)?;
        let not_ds = || FormatError::TypeMismatch(format!("{path} is not a dataset"));
        let ds = oh.find(mtype::DATASPACE).ok_or_else(not_ds)?;
        let dt = oh.find(mtype::DATATYPE).ok_or_else(not_ds)?;
        let lm = oh.find(mtype::LAYOUT).ok_or_else(not_ds)?;
        let ds_body = file.message_body(mtype::DATASPACE, ds.flags, ds.data)?;
        let space = Dataspace::parse(&mut Cursor::new(&ds_body, "dataspace"), ctx.sl)?;
        let dtype = file.datatype_msg(dt.flags, dt.data)?;
        let (layout_version, layout) = messages::parse_layout(lm.data, &ctx, space.dims.len())?;
        let mut space = space;
        if let Layout::Virtual { heap, index } = layout {
            // Mappings that grow with their sources set the extent (libhdf5 recomputes it at open too); a
            // mapping list that cannot be read leaves the stored extent, and the first read says why.
            if let Ok(Some(dims)) =
                crate::read::vds::current_dims(file, heap, index, &space.dims, view)
            {
                space.dims = dims;
            }
        }
        let filters = match oh.find(mtype::FILTERS) {
            Some(m) => {
                messages::parse_filters(&file.message_body(mtype::FILTERS, m.flags, m.data)?)?
            }
            None => vec![],
        };
        let fill = match oh.find(mtype::FILL) {
            Some(m) => messages::parse_fill(&file.message_body(mtype::FILL, m.flags, m.data)?)?,
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
        let external = match oh.find(mtype::EXTERNAL_FILES) {
            Some(m) if matches!(layout, Layout::Contiguous { .. }) => {
                Some(crate::read::external::parse(m.data, &ctx)?)
            }
            Some(_) => return corrupt("external data files for a dataset that is not contiguous"),
            None => None,
        };
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
            external,
            assembled: OnceLock::new(),
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

    /// "compact", "contiguous", "chunked" or "virtual".
    pub fn layout_kind(&self) -> &'static str {
        match self.layout {
            Layout::Compact(_) => "compact",
            Layout::Contiguous { .. } => "contiguous",
            Layout::Chunked { .. } => "chunked",
            Layout::Virtual { .. } => "virtual",
        }
    }

    /// A virtual or external dataset's elements (file byte order), read from their files at the first read
    /// (all of them, whatever part is asked for: such datasets are read whole, up to [`ASSEMBLED_MAX`]).
    fn assembled_bytes(&self) -> Result<&[u8]> {
        if let Some(b) = self.assembled.get() {
            return Ok(b);
        }
        let total = self
            .space
            .num_elements()?
            .saturating_mul(self.dtype.size() as u64);
        if total > ASSEMBLED_MAX {
            return crate::error::unsupported(format!(
                "reading {}, a {} dataset of {total} bytes (more than {} GiB are not read at once)",
                self.path,
                if self.external.is_some() {
                    "external"
                } else {
                    "virtual"
                },
                ASSEMBLED_MAX >> 30
            ));
        }
        let b = match (&self.layout, &self.external) {
            (Layout::Virtual { heap, index }, _) => {
                crate::read::vds::assemble(self, *heap, *index)?
            }
            (_, Some(segments)) => {
                let own = self.file.bytes().len() as u64;
                crate::read::external::read(segments, total, self.file.path(), |stored| {
                    own.saturating_add(stored)
                        .saturating_mul(1100)
                        .max(64 << 20)
                })?
            }
            _ => return corrupt("dataset whose bytes are in this file"),
        };
        Ok(self.assembled.get_or_init(|| b))
    }

    /// [`copy_points`] from the elements of a virtual or external dataset.
    fn assembled_points(
        &self,
        out: &mut [u8],
        out_shape: &[u64],
        pairs: &[Vec<(u64, u64)>],
    ) -> Result<()> {
        let d = self.assembled_bytes()?;
        copy_points(
            d,
            &self.space.dims,
            out,
            out_shape,
            pairs,
            self.dtype.size(),
        );
        Ok(())
    }

    /// [`copy_box`] from the elements of a virtual or external dataset.
    fn assembled_box(&self, start: &[u64], count: &[u64], out: &mut [u8]) -> Result<()> {
        let d = self.assembled_bytes()?;
        let dims = &self.space.dims;
        let zero = vec![0; dims.len()];
        copy_box(d, dims, start, out, count, &zero, count, self.dtype.size());
        Ok(())
    }

    /// Whether the dataset's bytes are in external data files.
    pub fn is_external(&self) -> bool {
        self.external.is_some()
    }

    /// The file this dataset lives in.
    pub(crate) fn file(&self) -> &'a H5File {
        self.file
    }

    /// The dataset's dataspace.
    pub(crate) fn space(&self) -> &Dataspace {
        &self.space
    }

    /// The fill value's bytes, if the dataset has one.
    pub(crate) fn fill_bytes(&self) -> Option<&[u8]> {
        self.fill.as_deref()
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

    /// The decoded bytes of one of the dataset's chunks (its whole nominal shape), read from the file without
    /// the chunk cache.
    pub(crate) fn decoded_chunk(&self, e: &ChunkEntry) -> Result<Vec<u8>> {
        let Some(chunk) = self.chunk() else {
            return corrupt("a chunk of a dataset that is not chunked");
        };
        let chunk_bytes = nominal_chunk_bytes(chunk, self.dtype.size())?;
        let ctx = self.file.ctx();
        let fetch =
            |a: u64, n: u64| -> Result<std::borrow::Cow<'_, [u8]>> { Ok(ctx.slice(a, n)?.into()) };
        match self.load_chunk(e, chunk_bytes, chunk_bytes, &fetch, false, false)? {
            ChunkBytes::Decoded(d) => Ok(d[..chunk_bytes].to_vec()),
            ChunkBytes::Mapped(m) => Ok(m[..chunk_bytes].to_vec()),
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

    /// A zeroed typed vector of `n` elements when the file type is a plain full-precision number
    /// (either byte order), plus whether its bytes need swapping after a raw copy.
    fn typed_zeroed(&self, n: usize) -> Option<(Data, bool)> {
        macro_rules! pick {
            ($t:ty, $v:ident) => {
                if let Some(be) = <$t as Element>::stored_byte_order(&self.dtype) {
                    return Some((Data::$v(vec![<$t>::default(); n]), needs_swap(be)));
                }
            };
        }
        pick!(f32, F32);
        pick!(f64, F64);
        pick!(f16, F16);
        pick!(u8, U8);
        pick!(i8, I8);
        pick!(u16, U16);
        pick!(i16, I16);
        pick!(u32, U32);
        pick!(i32, I32);
        pick!(u64, U64);
        pick!(i64, I64);
        None
    }

    /// Reads every element of a string dataset (variable- or fixed-length) into one packed
    /// [`StringColumn`](crate::StringColumn), row-major: no allocation per string, unlike [`read`](Self::read).
    pub fn read_strings(&self) -> Result<crate::StringColumn> {
        let mut col = crate::StringColumn::new();
        self.read_strings_into(&mut col)?;
        Ok(col)
    }

    /// [`read_strings`](Self::read_strings) into `column`, whose buffers are reused: reading strings
    /// again and again then allocates nothing once they are large enough (on an error it is left empty).
    pub fn read_strings_into(&self, column: &mut crate::StringColumn) -> Result<()> {
        if self.space.null {
            return convert::decode_strings_into(&self.dtype, &[], 0, self.file, column);
        }
        let zero = vec![0; self.space.dims.len()];
        let dims = self.space.dims.clone();
        self.read_strings_slice_into(&zero, &dims, column)
    }

    /// Reads the box at `start` of extent `count` of a string dataset into one packed
    /// [`StringColumn`](crate::StringColumn) (see [`read_strings`](Self::read_strings)).
    pub fn read_strings_slice(&self, start: &[u64], count: &[u64]) -> Result<crate::StringColumn> {
        let mut col = crate::StringColumn::new();
        self.read_strings_slice_into(start, count, &mut col)?;
        Ok(col)
    }

    /// [`read_strings_slice`](Self::read_strings_slice) into `column`, whose buffers are reused (on an
    /// error it is left empty).
    pub fn read_strings_slice_into(
        &self,
        start: &[u64],
        count: &[u64],
        column: &mut crate::StringColumn,
    ) -> Result<()> {
        column.clear();
        if !matches!(
            self.dtype,
            Datatype::VarStr { .. } | Datatype::FixedStr { .. }
        ) {
            return Err(FormatError::TypeMismatch(format!(
                "{} stores {}, not strings",
                self.path,
                self.dtype.describe()
            )));
        }
        let bytes = self.check_box(start, count)?;
        let n = count.iter().product::<u64>() as usize;
        if bytes == 0 {
            return convert::decode_strings_into(&self.dtype, &[], n, self.file, column);
        }
        // One run of a contiguous dataset is decoded where it lies in the file, not copied first.
        if let Some((addr, off)) = self.contiguous_run(start, count)? {
            let ctx = self.file.ctx();
            let raw = ctx.slice(addr + off, bytes as u64)?;
            return convert::decode_strings_into(&self.dtype, raw, n, self.file, column);
        }
        let mut raw = vec![0u8; bytes];
        self.fill_raw(start, count, &mut raw, true)?;
        convert::decode_strings_into(&self.dtype, &raw, n, self.file, column)
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
        // Plain numbers: the stored bytes go straight into the typed result (one positioned read
        // when the box is one run of a contiguous dataset), swapped in place if big-endian.
        if self.typed_zeroed(0).is_some() {
            let n = self.check_box(start, count)? / self.dtype.size().max(1);
            if let Some((mut data, swap)) = self.typed_zeroed(n) {
                if let Some(bytes) = data_bytes_mut(&mut data) {
                    crate::hugepages::advise(bytes);
                    self.fill_raw(start, count, bytes, true)?;
                    if swap {
                        swap_in_place(bytes, self.dtype.size());
                    }
                    return Ok(Array {
                        shape: count.to_vec(),
                        data,
                    });
                }
            }
        }
        let n = self.check_box(start, count)?;
        let mut raw = vec![0u8; n];
        self.fill_raw(start, count, &mut raw, true)?;
        let n = count.iter().product::<u64>() as usize;
        let data = convert::decode(&self.dtype, &raw, n, self.file)?;
        Ok(Array {
            shape: count.to_vec(),
            data,
        })
    }

    /// Reads the whole dataset into `out` (row-major, exactly one entry per element) without
    /// allocating, so callers that keep a buffer pay only the copy. `T` must be the stored number
    /// type (either byte order; big-endian values are swapped in place).
    pub fn read_into<T: Element>(&self, out: &mut [T]) -> Result<()> {
        if self.space.null {
            if out.is_empty() {
                return Ok(());
            }
            return invalid(format!("{} has a null dataspace: no elements", self.path));
        }
        let zero = vec![0; self.space.dims.len()];
        let dims = self.space.dims.clone();
        self.read_slice_into(&zero, &dims, out)
    }

    /// Reads the box at `start` of extent `count` into `out` (exactly the box's element count);
    /// see [`read_into`](Self::read_into).
    pub fn read_slice_into<T: Element>(
        &self,
        start: &[u64],
        count: &[u64],
        out: &mut [T],
    ) -> Result<()> {
        let be = T::stored_byte_order(&self.dtype).ok_or_else(|| {
            FormatError::TypeMismatch(format!(
                "{} stores {}, not {}",
                self.path,
                self.dtype.describe(),
                std::any::type_name::<T>()
            ))
        })?;
        let n = self.check_box(start, count)?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        if bytes.len() != n {
            return invalid(format!(
                "buffer of {} bytes for a selection of {n} bytes",
                bytes.len()
            ));
        }
        self.fill_raw(start, count, bytes, false)?;
        if needs_swap(be) {
            swap_in_place(bytes, self.dtype.size());
        }
        Ok(())
    }

    /// The stored address and byte offset of the box when it is one run of bytes of an allocated
    /// contiguous dataset (leading extents 1, then at most one partial dimension, then whole ones).
    fn contiguous_run(&self, start: &[u64], count: &[u64]) -> Result<Option<(u64, u64)>> {
        let addr = match &self.layout {
            Layout::Contiguous { addr, .. } if *addr != UNDEF && self.external.is_none() => *addr,
            _ => return Ok(None),
        };
        let dims = &self.space.dims;
        let r = dims.len();
        let k = count
            .iter()
            .position(|&c| c != 1)
            .unwrap_or(r.saturating_sub(1));
        if (k + 1..r).any(|i| start[i] != 0 || count[i] != dims[i]) {
            return Ok(None);
        }
        let elem = self.dtype.size() as u64;
        let total = self.space.num_elements()?.saturating_mul(elem);
        // The whole dataset's storage must lie in the file, whatever the box.
        self.file.ctx().slice(addr, total)?;
        let mut lin = 0u64;
        for i in 0..r {
            lin = lin * dims[i] + start[i];
        }
        Ok(Some((addr, lin * elem)))
    }

    /// Copies the box's stored bytes into `out` (exactly the box's size): one positioned read or
    /// one copy when the box is a single run of a contiguous dataset, box copies otherwise.
    /// `zeroed` says `out` is already all zero (a fresh buffer).
    fn fill_raw(&self, start: &[u64], count: &[u64], out: &mut [u8], zeroed: bool) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        if let Some((addr, off)) = self.contiguous_run(start, count)? {
            if out.len() >= BULK_READ_BYTES {
                // A fresh (zeroed) buffer is read in one piece; see `H5File::read_into`.
                return self.file.read_into(addr + off, out, !zeroed);
            }
            out.copy_from_slice(self.file.ctx().slice(addr + off, out.len() as u64)?);
            return Ok(());
        }
        self.fill_box(start, count, out, zeroed)
    }

    /// Reads a strided hyperslab (HDF5 semantics: `count` blocks of `block` every `stride`).
    /// Only the selected elements are copied and only the chunks holding some are decoded.
    pub fn read_hyperslab(
        &self,
        start: &[u64],
        stride: &[u64],
        count: &[u64],
        block: &[u64],
    ) -> Result<Array> {
        let dims = &self.space.dims;
        let r = dims.len();
        if stride.len() != r || count.len() != r || block.len() != r || start.len() != r {
            return invalid("hyperslab arguments must have the dataset's rank");
        }
        if stride.iter().zip(block).any(|(s, b)| *s == 0 || b > s) {
            return invalid("hyperslab stride must be >= block and > 0");
        }
        let mut out_shape = Vec::with_capacity(r);
        for d in 0..r {
            let n = count[d].checked_mul(block[d]);
            let end = match count[d] {
                0 => Some(start[d]),
                c => (c - 1)
                    .checked_mul(stride[d])
                    .and_then(|x| x.checked_add(block[d]))
                    .and_then(|x| x.checked_add(start[d])),
            };
            match (n, end) {
                (Some(n), Some(end)) if end <= dims[d] => out_shape.push(n),
                _ => {
                    return invalid(format!(
                        "hyperslab start {start:?} stride {stride:?} count {count:?} block \
                         {block:?} outside shape {dims:?}"
                    ))
                }
            }
        }
        // Blocks that touch (stride == block) or a single block: a plain box.
        if (0..r).all(|d| stride[d] == block[d] || count[d] <= 1) {
            return self.read_slice(start, &out_shape);
        }
        let nbytes = self.check_box(&vec![0; r], &out_shape)?;
        let n = nbytes / self.dtype.size().max(1);
        // The copy below lists each dimension's selected indices (16 bytes an index, and up to 24 more per
        // run along the last dimension): more than the data itself for narrow types, so that too must stay
        // within what the file can plausibly hold (a damaged file's tiny dataset of u8 can claim millions).
        // An empty selection builds none.
        let (len, limit) = self.decoded_limit();
        let lists = out_shape
            .iter()
            .map(|&d| d.saturating_mul(40))
            .fold(0u64, u64::saturating_add);
        if lists > limit && !out_shape.contains(&0) {
            return corrupt(format!(
                "strided selection of {out_shape:?} needs {lists} bytes of index lists, implausibly many \
                 for a file of {len} bytes"
            ));
        }
        // Each dimension's selection is described by its pattern; index lists are made only for the copy.
        let sel: Vec<Pattern> = (0..r)
            .map(|d| Pattern {
                start: start[d],
                stride: stride[d],
                block: block[d],
                len: out_shape[d],
            })
            .collect();
        let mut out = vec![0u8; nbytes];
        self.fill_points(&sel, &out_shape, &mut out)?;
        Ok(Array {
            shape: out_shape,
            data: convert::decode(&self.dtype, &out, n, self.file)?,
        })
    }

    /// Fills the zeroed `out` (shape `out_shape`) with the elements at the Cartesian product of
    /// the per-dimension selections `sel`.
    fn fill_points(&self, sel: &[Pattern], out_shape: &[u64], out: &mut [u8]) -> Result<()> {
        // An empty selection fills nothing; its other dimensions may be of any length (a damaged
        // file's), so no per-dimension list below is built for it.
        if out_shape.contains(&0) {
            return Ok(());
        }
        let dims = &self.space.dims;
        let r = dims.len();
        let elem = self.dtype.size();
        let total = self.space.num_elements()?.saturating_mul(elem as u64);
        // (index in the dataset, index in the selection) along each dimension: no longer than the
        // (non-empty) selection, whose size the caller checked against the file's.
        let all_pairs = || -> Vec<Vec<(u64, u64)>> {
            sel.iter()
                .map(|p| (0..p.len).map(|i| (p.at(i), i)).collect())
                .collect()
        };
        match &self.layout {
            Layout::Compact(d) => {
                if (d.len() as u64) < total {
                    return corrupt("compact data shorter than the dataset");
                }
                copy_points(d, dims, out, out_shape, &all_pairs(), elem);
            }
            Layout::Virtual { .. } => self.assembled_points(out, out_shape, &all_pairs())?,
            Layout::Contiguous { .. } if self.external.is_some() => {
                self.assembled_points(out, out_shape, &all_pairs())?
            }
            Layout::Contiguous { addr, .. } => {
                if *addr != UNDEF && total > 0 {
                    let src = self.file.ctx().slice(*addr, total)?;
                    copy_points(src, dims, out, out_shape, &all_pairs(), elem);
                } else {
                    self.prefill(out, true);
                }
            }
            Layout::Chunked { chunk, .. } => {
                let chunk = chunk.clone();
                let entries = self.chunk_index()?;
                // Per chunk and dimension, the range of `sel` inside the chunk.
                let mut hits: Vec<&ChunkEntry> = vec![];
                let mut ranges: Vec<Vec<(usize, usize)>> = vec![];
                for e in entries {
                    if e.offset.len() != r {
                        continue;
                    }
                    let rg: Vec<(usize, usize)> = (0..r)
                        .map(|d| {
                            let lo = e.offset[d];
                            let hi = lo.saturating_add(chunk[d]);
                            (sel[d].below(lo) as usize, sel[d].below(hi) as usize)
                        })
                        .collect();
                    if rg.iter().all(|(a, b)| a < b) && (0..r).all(|d| e.offset[d] < dims[d]) {
                        hits.push(e);
                        ranges.push(rg);
                    }
                }
                let covered: u64 = ranges
                    .iter()
                    .map(|rg| rg.iter().map(|(a, b)| (b - a) as u64).product::<u64>())
                    .sum();
                let distinct = hits
                    .iter()
                    .map(|e| e.offset.as_slice())
                    .collect::<HashSet<_>>()
                    .len()
                    == hits.len();
                if !distinct || covered != out_shape.iter().product::<u64>() {
                    self.prefill(out, true);
                }
                let chunk_bytes = nominal_chunk_bytes(&chunk, elem)?;
                let ctx = self.file.ctx();
                let fetch =
                    |a: u64, n: u64| -> Result<Cow<[u8]>> { Ok(Cow::Borrowed(ctx.slice(a, n)?)) };
                let loaded = self.load_chunks(&hits, chunk_bytes, dims, &fetch, true)?;
                for ((e, rg), d) in hits.iter().zip(&ranges).zip(&loaded) {
                    let pairs: Vec<Vec<(u64, u64)>> = (0..r)
                        .map(|k| {
                            (rg[k].0..rg[k].1)
                                .map(|i| (sel[k].at(i as u64) - e.offset[k], i as u64))
                                .collect()
                        })
                        .collect();
                    copy_points(d, &chunk, out, out_shape, &pairs, elem);
                }
            }
        }
        Ok(())
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
        let elems = crate::array::shape_elements(count)
            .ok_or_else(|| FormatError::Corrupt("selection size overflows".into()))?;
        let bytes = |per: usize| {
            elems
                .checked_mul(per as u64)
                .ok_or_else(|| FormatError::Corrupt("selection size overflows".into()))
        };
        let n = bytes(self.dtype.size())?;
        // What the selection takes once decoded (strings and sequences take more than their
        // stored references) is bounded by the file's size, not just its stored bytes.
        let decoded = bytes(self.dtype.decoded_size())?;
        let (len, limit) = self.decoded_limit();
        if decoded > limit {
            return corrupt(format!(
                "selection of {decoded} bytes (decoded) is implausibly large for a file of {len} bytes"
            ));
        }
        usize::try_from(n).map_err(|_| FormatError::Corrupt("selection size overflows".into()))
    }

    /// The file's size and the most bytes a selection or a decoded chunk may take: 1,100 times the file
    /// (deflate expands at most ~1,032 times), at least 64 MiB. A damaged or hostile file declaring more (a
    /// huge chunk shape, a codec header claiming gigabytes) is refused before anything that size is allocated.
    fn decoded_limit(&self) -> (u64, u64) {
        let len = self.file.bytes().len() as u64;
        (len, len.saturating_mul(1100).max(64 << 20))
    }

    pub(crate) fn read_box_raw(&self, start: &[u64], count: &[u64]) -> Result<Vec<u8>> {
        let n = self.check_box(start, count)?;
        let mut out = vec![0u8; n];
        self.fill_box(start, count, &mut out, true)?;
        Ok(out)
    }

    /// Writes the fill value over `out`; an all-zero fill only when `out` is not `zeroed` already.
    fn prefill(&self, out: &mut [u8], zeroed: bool) {
        match &self.fill {
            Some(f) if f.iter().any(|&b| b != 0) => {
                for c in out.chunks_exact_mut(f.len()) {
                    c.copy_from_slice(f);
                }
            }
            _ if !zeroed => out.fill(0),
            _ => {}
        }
    }

    /// Fills `out` (exactly the box's bytes) with the selected elements; `zeroed` says it is
    /// already all zero. Elements with no storage get the fill value.
    fn fill_box(&self, start: &[u64], count: &[u64], out: &mut [u8], zeroed: bool) -> Result<()> {
        let dims = &self.space.dims;
        let r = dims.len();
        let elem = self.dtype.size();
        let ctx = self.file.ctx();
        let total_bytes = self.space.num_elements()?.saturating_mul(elem as u64);
        match &self.layout {
            Layout::Compact(d) => {
                if (d.len() as u64) < total_bytes {
                    return corrupt("compact data shorter than the dataset");
                }
                copy_box(d, dims, start, out, count, &vec![0; r], count, elem);
            }
            Layout::Virtual { .. } => self.assembled_box(start, count, out)?,
            Layout::Contiguous { .. } if self.external.is_some() => {
                self.assembled_box(start, count, out)?
            }
            Layout::Contiguous { addr, .. } => {
                if *addr != UNDEF && total_bytes > 0 {
                    let src = ctx.slice(*addr, total_bytes)?;
                    copy_box(src, dims, start, out, count, &vec![0; r], count, elem);
                } else {
                    self.prefill(out, zeroed);
                }
            }
            Layout::Chunked { .. } => {
                if out.is_empty() {
                    return Ok(());
                }
                let all = self.chunk_index()?;
                let fetch =
                    |a: u64, n: u64| -> Result<Cow<[u8]>> { Ok(Cow::Borrowed(ctx.slice(a, n)?)) };
                self.chunked_box_cached(out, zeroed, dims, all, start, count, &fetch, true)?;
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
        fetch: &Fetch<'_>,
    ) -> Result<Vec<u8>> {
        let elem = self.dtype.size();
        let n = count.iter().product::<u64>() as usize * elem;
        let mut out = vec![0u8; n];
        self.chunked_box_cached(&mut out, true, dims, entries, start, count, fetch, false)?;
        Ok(out)
    }

    /// Copies the chunks overlapping the box into `out`; the parts no chunk covers get the fill
    /// value (`zeroed`: `out` is already all zero).
    #[allow(clippy::too_many_arguments)]
    fn chunked_box_cached(
        &self,
        out: &mut [u8],
        zeroed: bool,
        dims: &[u64],
        entries: &[ChunkEntry],
        start: &[u64],
        count: &[u64],
        fetch: &Fetch<'_>,
        use_cache: bool,
    ) -> Result<()> {
        let chunk = match &self.layout {
            Layout::Chunked { chunk, .. } => chunk,
            _ => return invalid("not a chunked dataset"),
        };
        let r = dims.len();
        let elem = self.dtype.size();
        let chunk_bytes = nominal_chunk_bytes(chunk, elem)?;
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
        // Chunks never overlap, so the box is covered when their overlaps add up to its volume.
        let covered: u64 = hits
            .iter()
            .map(|e| {
                (0..r)
                    .map(|i| {
                        (e.offset[i] + chunk[i]).min(start[i] + count[i])
                            - e.offset[i].max(start[i])
                    })
                    .product::<u64>()
            })
            .sum();
        let distinct = hits
            .iter()
            .map(|e| e.offset.as_slice())
            .collect::<HashSet<_>>()
            .len()
            == hits.len();
        let aligned = hits
            .iter()
            .all(|e| (0..r).all(|i| chunk[i] > 0 && e.offset[i] % chunk[i] == 0));
        if !(distinct && aligned && covered == count.iter().product::<u64>()) {
            self.prefill(out, zeroed);
        }
        if !self.filters.is_empty()
            && distinct
            && aligned
            && self.load_by_chunk_rows(
                out,
                chunk,
                &hits,
                (start, count, dims),
                chunk_bytes,
                fetch,
                use_cache,
            )?
        {
            return Ok(());
        }
        let loaded = self.load_chunks(&hits, chunk_bytes, dims, fetch, use_cache)?;
        for (e, d) in hits.iter().zip(&loaded) {
            let (sst, dst, cnt) = overlap(&e.offset, chunk, start, count);
            copy_box(d, chunk, &sst, out, count, &dst, &cnt, elem);
        }
        Ok(())
    }

    /// The decoded bytes (at least `chunk_bytes`) of each chunk in `hits`: unfiltered chunks of
    /// the committed file straight from the mapping, others fetched and decoded in parallel,
    /// through the dataset's chunk cache when `use_cache`.
    fn load_chunks(
        &self,
        hits: &[&ChunkEntry],
        chunk_bytes: usize,
        dims: &[u64],
        fetch: &Fetch<'_>,
        use_cache: bool,
    ) -> Result<Vec<ChunkBytes<'a>>> {
        self.check_needs(hits, chunk_bytes, dims)?;
        if self.filters.is_empty() && use_cache {
            let ctx = self.file.ctx();
            return hits
                .iter()
                .map(|e| {
                    if e.size < chunk_bytes as u64 {
                        return corrupt("chunk shorter than the chunk shape");
                    }
                    Ok(ChunkBytes::Mapped(ctx.slice(e.addr, chunk_bytes as u64)?))
                })
                .collect();
        }
        let keep = use_cache && cacheable(hits.len(), chunk_bytes);
        hits.par_iter()
            .map(|e| {
                let need = self.chunk_need(e, chunk_bytes, dims);
                self.load_chunk(e, chunk_bytes, need, fetch, use_cache, keep)
            })
            .collect()
    }

    /// The bytes of chunk `e` a read needs decoded: the whole chunk, or where the pipeline can stop early
    /// ([`filters::decodes_prefix`]) the prefix that holds its elements within the extent `dims` the read selects
    /// from (the dataset's, or the appender's). Writers may size chunks far beyond the data (PyTables sizes Blosc2
    /// chunks by the CPU's cache: hundreds of MiB for a few KiB of rows).
    fn chunk_need(&self, e: &ChunkEntry, chunk_bytes: usize, dims: &[u64]) -> usize {
        match self.chunk() {
            Some(chunk) if filters::decodes_prefix(&self.filters, e.filter_mask) => {
                in_extent_prefix(&e.offset, chunk, dims, self.dtype.size()).min(chunk_bytes)
            }
            _ => chunk_bytes,
        }
    }

    /// Refuses, before any codec allocates, a read whose chunks need more decoded bytes than the file's size
    /// makes plausible (see [`Self::chunk_need`]).
    fn check_needs(&self, hits: &[&ChunkEntry], chunk_bytes: usize, dims: &[u64]) -> Result<()> {
        let most = hits
            .iter()
            .map(|e| self.chunk_need(e, chunk_bytes, dims))
            .max()
            .unwrap_or(0);
        self.check_decoded_size(most)
    }

    /// Refuses a filtered chunk whose decoded size is implausible for the file, before any codec allocates.
    fn check_decoded_size(&self, chunk_bytes: usize) -> Result<()> {
        let (len, limit) = self.decoded_limit();
        if !self.filters.is_empty() && chunk_bytes as u64 > limit {
            return corrupt(format!(
                "chunk of {chunk_bytes} bytes (decoded) is implausibly large for a file of {len} bytes"
            ));
        }
        Ok(())
    }

    /// Decodes the chunks of a box one chunk row (chunks sharing their first-dimension offset) per task and
    /// copies each into its rows of `out` at once, so no task waits for the others and no decoded chunk outlives
    /// its copy. False (nothing done) when the box spans fewer than two chunk rows.
    #[allow(clippy::too_many_arguments)]
    fn load_by_chunk_rows(
        &self,
        out: &mut [u8],
        chunk: &[u64],
        hits: &[&ChunkEntry],
        (start, count, dims): (&[u64], &[u64], &[u64]),
        chunk_bytes: usize,
        fetch: &Fetch<'_>,
        use_cache: bool,
    ) -> Result<bool> {
        let r = count.len();
        if r == 0 {
            return Ok(false);
        }
        let mut rows: std::collections::BTreeMap<u64, Vec<&ChunkEntry>> = Default::default();
        for e in hits {
            rows.entry(e.offset[0]).or_default().push(e);
        }
        if rows.len() < 2 {
            return Ok(false);
        }
        self.check_needs(hits, chunk_bytes, dims)?;
        let elem = self.dtype.size();
        let row_bytes = count[1..].iter().product::<u64>() as usize * elem;
        // Each chunk row's slab of `out`: its first-dimension range within the box, in ascending order.
        let mut slabs = Vec::with_capacity(rows.len());
        let mut rest = out;
        let mut at = start[0];
        for (&off, entries) in &rows {
            let lo = off.max(start[0]);
            let hi = (off + chunk[0]).min(start[0] + count[0]);
            let skip = (lo - at) as usize * row_bytes;
            let (slab, tail) =
                std::mem::take(&mut rest)[skip..].split_at_mut((hi - lo) as usize * row_bytes);
            rest = tail;
            at = hi;
            slabs.push((slab, lo, hi, entries));
        }
        let keep = use_cache && cacheable(hits.len(), chunk_bytes);
        slabs
            .into_par_iter()
            .try_for_each(|(slab, lo0, hi0, entries)| -> Result<()> {
                let mut shape = count.to_vec();
                shape[0] = hi0 - lo0;
                for e in entries {
                    let (sst, mut dst, cnt) = overlap(&e.offset, chunk, start, count);
                    // The slab starts at this chunk row's first row of the box.
                    dst[0] = e.offset[0].max(start[0]) - lo0;
                    // A whole chunk whose elements are one run of the slab is decoded in place and
                    // not kept in the cache: the caller holds all of it (chunks a read takes only part
                    // of are the ones a neighbouring read will want again).
                    if cnt == chunk {
                        if let Some((at, n)) = contiguous_run(&shape, &dst, &cnt) {
                            let (at, n) = (at * elem, n * elem);
                            if n == chunk_bytes
                                && self.decode_in_place(
                                    e,
                                    fetch,
                                    use_cache,
                                    &mut slab[at..at + n],
                                )?
                            {
                                continue;
                            }
                        }
                    }
                    let need = self.chunk_need(e, chunk_bytes, dims);
                    let d = self.load_chunk(e, chunk_bytes, need, fetch, use_cache, keep)?;
                    copy_box(&d, chunk, &sst, slab, &shape, &dst, &cnt, elem);
                }
                Ok(())
            })?;
        Ok(true)
    }

    /// Decodes filtered chunk `e` straight into `out` (its decoded size). False, with nothing done, when the
    /// chunk is better taken from the chunk cache or the file mapping (see `load_chunk`).
    fn decode_in_place(
        &self,
        e: &ChunkEntry,
        fetch: &Fetch<'_>,
        use_cache: bool,
        out: &mut [u8],
    ) -> Result<bool> {
        let skipped = (0..self.filters.len()).all(|i| i < 32 && e.filter_mask & (1 << i) != 0);
        if self.filters.is_empty() || skipped {
            return Ok(false);
        }
        if use_cache && self.cache.lock().is_ok_and(|c| c.contains(e.addr)) {
            return Ok(false);
        }
        let stored = fetch(e.addr, e.size)?;
        filters::decode_into(
            &self.filters,
            e.filter_mask,
            &stored,
            self.dtype.size(),
            out,
        )?;
        Ok(true)
    }

    /// One chunk's decoded bytes (at least `chunk_bytes`), fetched with `fetch` and undone through the
    /// filters; taken from the dataset's chunk cache (or, stored unfiltered, from the file mapping) when
    /// `use_cache` (reads of the committed file), and put in the cache when `keep`.
    fn load_chunk(
        &self,
        e: &ChunkEntry,
        chunk_bytes: usize,
        need: usize,
        fetch: &Fetch<'_>,
        use_cache: bool,
        keep: bool,
    ) -> Result<ChunkBytes<'a>> {
        if use_cache {
            // A chunk decoded only in part (see `chunk_need`) serves a read that needs no more of it.
            if let Some(d) = self
                .cache
                .lock()
                .ok()
                .and_then(|c| c.get(e.addr))
                .filter(|d| d.len() >= need)
            {
                return Ok(ChunkBytes::Decoded(d));
            }
            // A chunk the writer stored unfiltered (every filter skipped: it would not compress) is read in
            // place, as an unfiltered dataset's chunks are.
            let skipped = (0..self.filters.len()).all(|i| i < 32 && e.filter_mask & (1 << i) != 0);
            if skipped && e.size >= chunk_bytes as u64 {
                return Ok(ChunkBytes::Mapped(
                    self.file.ctx().slice(e.addr, chunk_bytes as u64)?,
                ));
            }
        }
        let stored = fetch(e.addr, e.size)?;
        let d = if self.filters.is_empty() {
            if stored.len() < chunk_bytes {
                return corrupt("chunk shorter than the chunk shape");
            }
            stored[..chunk_bytes].to_vec()
        } else {
            let elem = self.dtype.size();
            let d = if need < chunk_bytes {
                filters::decode_prefix(
                    &self.filters,
                    e.filter_mask,
                    &stored,
                    elem,
                    chunk_bytes,
                    need,
                )?
            } else {
                filters::decode(&self.filters, e.filter_mask, &stored, elem, chunk_bytes)?
            };
            if d.len() < need {
                return corrupt("decoded chunk shorter than the chunk shape");
            }
            d
        };
        let d = Arc::new(d);
        if keep {
            if let Ok(mut c) = self.cache.lock() {
                c.put(e.addr, d.clone());
            }
        }
        Ok(ChunkBytes::Decoded(d))
    }

    /// The chunk index of a chunked dataset, built once per `Dataset`.
    fn chunk_index(&self) -> Result<&[ChunkEntry]> {
        let (chunk, index) = match &self.layout {
            Layout::Chunked { chunk, index } => (chunk, index),
            _ => return invalid("not a chunked dataset"),
        };
        if let Some(v) = self.index.get() {
            return Ok(v);
        }
        let v = chunks::entries(
            &self.file.ctx(),
            index,
            &self.space.dims,
            &self.max_dims(),
            chunk,
            self.dtype.size(),
        )?;
        Ok(self.index.get_or_init(|| v))
    }
}

/// Where the chunk at `offset` (of shape `chunk`) meets the box at `start` of extent `count`: the overlap's first
/// element within the chunk, its first element within the box, and its extent.
fn overlap(
    offset: &[u64],
    chunk: &[u64],
    start: &[u64],
    count: &[u64],
) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let r = count.len();
    let lo: Vec<u64> = (0..r).map(|i| offset[i].max(start[i])).collect();
    let hi: Vec<u64> = (0..r)
        .map(|i| (offset[i] + chunk[i]).min(start[i] + count[i]))
        .collect();
    (
        (0..r).map(|i| lo[i] - offset[i]).collect(),
        (0..r).map(|i| lo[i] - start[i]).collect(),
        (0..r).map(|i| hi[i] - lo[i]).collect(),
    )
}

/// Where a box of `cnt` elements at `dst` lies in a row-major array of `shape` when it is one run of
/// consecutive elements: (first element, elements), else `None`.
fn contiguous_run(shape: &[u64], dst: &[u64], cnt: &[u64]) -> Option<(usize, usize)> {
    let r = shape.len();
    // Leading dimensions of one element, then one of any extent, then dimensions taken whole.
    let k = cnt.iter().position(|&c| c != 1).unwrap_or(r);
    if (k + 1..r).any(|i| cnt[i] != shape[i]) {
        return None;
    }
    let mut at = 0u64;
    for i in 0..r {
        at = at.checked_mul(shape[i])?.checked_add(dst[i])?;
    }
    let n = cnt.iter().try_fold(1u64, |a, &c| a.checked_mul(c))?;
    Some((usize::try_from(at).ok()?, usize::try_from(n).ok()?))
}

/// Whether a read of `n` chunks of `chunk_bytes` should keep them in the chunk cache: not when they would fill
/// it, as a read of many chunks (a whole dataset, say) would only evict them again and keep their memory from
/// being reused.
fn cacheable(n: usize, chunk_bytes: usize) -> bool {
    n.saturating_mul(chunk_bytes) <= CHUNK_CACHE_BYTES
}

/// A chunk's decoded bytes: borrowed from the file mapping or owned (shared with the cache).
enum ChunkBytes<'m> {
    Mapped(&'m [u8]),
    Decoded(Arc<Vec<u8>>),
}

impl std::ops::Deref for ChunkBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ChunkBytes::Mapped(s) => s,
            ChunkBytes::Decoded(v) => v,
        }
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
        Data::F16(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::F32(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        Data::F64(v) => bytemuck::cast_slice_mut(v.as_mut_slice()),
        _ => return None,
    })
}

/// One dimension of a strided hyperslab: `len` selected indices, taken `block` at a time every
/// `stride` (≥ `block`, > 0) from `start`, ascending.
#[derive(Clone, Copy, Debug)]
struct Pattern {
    start: u64,
    stride: u64,
    block: u64,
    len: u64,
}

impl Pattern {
    /// The `i`-th selected index (`i < len`, so `block > 0`).
    fn at(&self, i: u64) -> u64 {
        self.start + (i / self.block) * self.stride + i % self.block
    }

    /// How many selected indices are below `x`.
    fn below(&self, x: u64) -> u64 {
        if x <= self.start {
            return 0;
        }
        let off = x - self.start;
        // Whole periods before `off`, then the part of the next block below it (block <= stride,
        // so the product stays below `off`).
        let n = (off / self.stride) * self.block + (off % self.stride).min(self.block);
        n.min(self.len)
    }
}

/// The bytes of a chunk (at `offset`, of shape `chunk`, row-major) up to and including its last element within
/// the dataset's extent `dims`: every element a read can ask of it lies in this prefix. 0 when the chunk lies
/// wholly outside the extent; saturates rather than overflows (the caller bounds it by the chunk's size).
fn in_extent_prefix(offset: &[u64], chunk: &[u64], dims: &[u64], elem: usize) -> usize {
    let r = chunk.len();
    if offset.len() != r || dims.len() != r {
        return usize::MAX;
    }
    let mut last = 0u64;
    for d in 0..r {
        let within = chunk[d].min(dims[d].saturating_sub(offset[d]));
        if within == 0 {
            return 0;
        }
        let stride = chunk[d + 1..]
            .iter()
            .fold(1u64, |a, &b| a.saturating_mul(b));
        last = last.saturating_add((within - 1).saturating_mul(stride));
    }
    usize::try_from(last.saturating_add(1).saturating_mul(elem as u64)).unwrap_or(usize::MAX)
}

/// Bytes of one whole chunk of shape `chunk` with `elem`-byte elements; an error when that overflows.
fn nominal_chunk_bytes(chunk: &[u64], elem: usize) -> Result<usize> {
    chunk
        .iter()
        .try_fold(elem as u64, |a, &d| a.checked_mul(d))
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| FormatError::Corrupt("chunk shape too large".into()))
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    /// The prefix ends with the chunk's last element inside the extent, whichever dimensions cut it.
    #[test]
    fn the_in_extent_prefix_holds_every_element_within_the_extent() {
        use super::in_extent_prefix as p;
        // Inside: the whole chunk. Cut in the first dimension: its first rows. Beyond: nothing.
        assert_eq!(p(&[0, 0], &[4, 5], &[8, 5], 2), 40);
        assert_eq!(p(&[4, 0], &[4, 5], &[6, 5], 2), 20);
        assert_eq!(p(&[8, 0], &[4, 5], &[8, 5], 2), 0);
        // Cut in the last dimension only: up to the last row's last element within it.
        assert_eq!(p(&[0, 5], &[4, 5], &[4, 8], 1), 3 * 5 + 3);
        // Against every element of small chunks: the largest in-extent element's offset, plus one.
        for dims in [[3u64, 7, 2], [5, 5, 5], [1, 9, 4]] {
            for off in [[0u64, 0, 0], [2, 4, 0], [0, 6, 2]] {
                let chunk = [3u64, 4, 3];
                let mut last = None;
                for i in 0..3 {
                    for j in 0..4 {
                        for k in 0..3 {
                            if off[0] + i < dims[0] && off[1] + j < dims[1] && off[2] + k < dims[2]
                            {
                                last = last.max(Some(i * 12 + j * 3 + k));
                            }
                        }
                    }
                }
                let want = last.map_or(0, |l| (l as usize + 1) * 4);
                assert_eq!(p(&off, &chunk, &dims, 4), want, "{dims:?} {off:?}");
            }
        }
    }

    /// The pattern answers what the explicit, ascending list of its indices would.
    #[test]
    fn a_pattern_matches_its_index_list() {
        for start in [0u64, 1, 5] {
            for stride in 1u64..5 {
                for block in 0..=stride {
                    for count in 0u64..5 {
                        let list: Vec<u64> = (0..count)
                            .flat_map(|c| (0..block).map(move |b| start + c * stride + b))
                            .collect();
                        let p = Pattern {
                            start,
                            stride,
                            block,
                            len: count * block,
                        };
                        for (i, &x) in list.iter().enumerate() {
                            assert_eq!(p.at(i as u64), x);
                        }
                        for x in 0..start + stride * count + 3 {
                            let want = list.partition_point(|&y| y < x) as u64;
                            assert_eq!(p.below(x), want, "{p:?} below {x}");
                        }
                    }
                }
            }
        }
    }
}
