//! [`H5File`]: a read-only HDF5 file over mmap'ed or owned bytes.

use crate::array::Array;
use crate::convert::VlenSource;
use crate::ctx::Ctx;
use crate::datatype::Datatype;
use crate::error::{corrupt, unsupported, FormatError, Result};
use crate::heap::global::{read_collection, CollectionIndex};
use crate::io::{Cursor, UNDEF};
use crate::messages::LinkTarget;
use crate::object_header::{self, mtype, ObjectHeader};
use crate::read::dataset::Dataset;
use crate::read::groups::{self, ObjectKind};
use crate::superblock::{self, Superblock};
use crate::write::writer::components;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

enum Storage {
    Map(memmap2::Mmap, std::fs::File),
    Bytes(Vec<u8>),
}

/// Reads of at least this many bytes are split over the threads of the rayon pool: one kernel copy
/// runs at the speed of one core, and half that when the buffer and the file are misaligned
/// relative to each other (64 MiB on this project's 2-core VM: 7.0 ms in one read, 4.6 ms in two).
const PARALLEL_READ_BYTES: usize = 8 << 20;
/// The smallest part of a split read.
const READ_PART_BYTES: usize = 4 << 20;

/// A read-only open HDF5 file.
pub struct H5File {
    storage: Storage,
    /// Where the file was opened from (`None` for bytes): virtual datasets name source files relative to it.
    path: Option<std::path::PathBuf>,
    sb: Superblock,
    gheap: Mutex<GlobalHeapCache>,
    links: Mutex<HashMap<u64, Arc<HashMap<String, LinkTarget>>>>,
    /// The shared-message table (SOHM), read at the first shared message stored in its heaps.
    sohm: std::sync::OnceLock<Vec<crate::read::shared::SohmIndex>>,
}

/// One link in a group.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    pub kind: EntryKind,
}

/// What a link leads to.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryKind {
    Group,
    Dataset,
    SoftLink(String),
    ExternalLink {
        file: String,
        path: String,
    },
    /// A committed (named) datatype.
    Datatype,
    /// User-defined link, or an object we cannot classify.
    Other,
}

impl From<ObjectKind> for EntryKind {
    fn from(k: ObjectKind) -> Self {
        match k {
            ObjectKind::Group => EntryKind::Group,
            ObjectKind::Dataset => EntryKind::Dataset,
            ObjectKind::Datatype => EntryKind::Datatype,
            ObjectKind::Other => EntryKind::Other,
        }
    }
}

/// Parsed global heap collections by address, plus the last one used (strings of one dataset
/// usually sit in one collection, so most lookups skip the map).
#[derive(Default)]
struct GlobalHeapCache {
    map: HashMap<u64, Arc<CollectionIndex>>,
    last: Option<(u64, Arc<CollectionIndex>)>,
}

/// Files up to this size are read into memory at open instead of being mapped.
const READ_SMALL_FILES_BELOW: u64 = 64 << 10;

/// Size of the first read of every open, which is the whole file for tiny files.
const PROBE_BYTES: usize = 4096;

/// Reads up to `buf.len()` bytes from the start of `f` (retrying interrupted reads); returns how many.
fn read_head(f: &std::fs::File, buf: &mut [u8]) -> Result<usize> {
    loop {
        match std::os::unix::fs::FileExt::read_at(f, buf, 0) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether `head`, a short first read, holds the whole file its superblock declares (so the file
/// needs no `stat` and no second read).
fn holds_whole_file(head: &[u8]) -> bool {
    match superblock::read(head) {
        Ok(sb) => sb
            .base
            .checked_add(sb.eof)
            .is_some_and(|end| end <= head.len() as u64),
        Err(_) => false,
    }
}

/// Soft links followed in a row before giving up.
const MAX_SOFT_HOPS: usize = 32;

impl H5File {
    /// Opens a file: reads it whole when it is at most 64 KiB, memory-maps it otherwise.
    pub fn open(path: &std::path::Path) -> Result<Self> {
        let f = std::fs::File::open(path)?;
        // The first read is the whole file for tiny files (an open of a small attribute file is
        // mostly system calls, and this spares the `stat`).
        let mut probe = [0u8; PROBE_BYTES];
        let n = read_head(&f, &mut probe)?;
        if n < PROBE_BYTES && holds_whole_file(&probe[..n]) {
            return Self::with_storage(Storage::Bytes(probe[..n].to_vec()))
                .map(|f| f.at_path(path));
        }
        let len = f.metadata()?.len();
        if len == 0 {
            return Err(FormatError::NotHdf5);
        }
        if len <= READ_SMALL_FILES_BELOW {
            // One read() is cheaper than mapping, faulting in and unmapping a few pages; the
            // probe's bytes are kept and only the rest is read.
            let mut buf = vec![0u8; len as usize];
            let head = n.min(buf.len());
            buf[..head].copy_from_slice(&probe[..head]);
            std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf[head..], head as u64)?;
            return Self::with_storage(Storage::Bytes(buf)).map(|f| f.at_path(path));
        }
        // SAFETY: the map is read-only; this crate's appender only ever writes past the committed
        // end of file or rewrites the superblock, and other writers modifying the file while it is
        // open is outside the contract (as with libhdf5).
        let map = unsafe { memmap2::MmapOptions::new().len(len as usize).map(&f)? };
        Self::with_storage(Storage::Map(map, f)).map(|f| f.at_path(path))
    }

    fn at_path(mut self, path: &std::path::Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }

    /// The path the file was opened from (`None` for a file opened from bytes).
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// Opens a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_storage(Storage::Bytes(bytes))
    }

    fn with_storage(storage: Storage) -> Result<Self> {
        let data: &[u8] = match &storage {
            Storage::Map(m, _) => m,
            Storage::Bytes(b) => b,
        };
        let sb = superblock::read(data)?;
        let f = H5File {
            storage,
            path: None,
            sb,
            gheap: Mutex::new(GlobalHeapCache::default()),
            links: Mutex::new(HashMap::new()),
            sohm: std::sync::OnceLock::new(),
        };
        // The root object header must parse.
        object_header::parse(&f.ctx(), f.sb.root)?;
        Ok(f)
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Map(m, _) => m,
            Storage::Bytes(b) => b,
        }
    }

    /// Copies `dst.len()` bytes at stored address `addr` into `dst` with positioned reads (for
    /// large reads the kernel copy beats faulting in mapped pages): one read, or, when `split` and
    /// from [`PARALLEL_READ_BYTES`], one per thread of the rayon pool over consecutive parts. Split
    /// only into a buffer the caller has used before: in a fresh one the threads' page faults
    /// contend (64 MiB on ext4: 10 ms in one read, 11–14 ms in two). Falls back to the in-memory
    /// bytes for files opened with [`from_bytes`](Self::from_bytes).
    pub(crate) fn read_into(&self, addr: u64, dst: &mut [u8], split: bool) -> Result<()> {
        let src = self.ctx().slice(addr, dst.len() as u64)?;
        match &self.storage {
            Storage::Map(_, f) => {
                use rayon::prelude::*;
                use std::os::unix::fs::FileExt;
                let abs = addr + self.sb.at;
                let parts = (dst.len() / READ_PART_BYTES).min(rayon::current_num_threads());
                let read = if split && dst.len() >= PARALLEL_READ_BYTES && parts > 1 {
                    // Whole pages per part, so every part keeps the buffer's alignment to the file.
                    let part = dst.len().div_ceil(parts).next_multiple_of(4096);
                    dst.par_chunks_mut(part)
                        .enumerate()
                        .all(|(i, chunk)| f.read_exact_at(chunk, abs + (i * part) as u64).is_ok())
                } else {
                    f.read_exact_at(dst, abs).is_ok()
                };
                if !read {
                    dst.copy_from_slice(src);
                }
            }
            Storage::Bytes(_) => dst.copy_from_slice(src),
        }
        Ok(())
    }

    /// Superblock information.
    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    pub(crate) fn ctx(&self) -> Ctx<'_> {
        Ctx {
            data: self.bytes(),
            so: self.sb.so,
            sl: self.sb.sl,
            base: self.sb.at,
        }
    }

    /// Address of the root group's object header.
    pub fn root_addr(&self) -> u64 {
        self.sb.root
    }

    /// Resolves a path to an object header address, following hard and soft links.
    pub fn resolve(&self, path: &str) -> Result<u64> {
        self.resolve_from(self.sb.root, path, 0)
    }

    fn resolve_from(&self, start: u64, path: &str, hops: usize) -> Result<u64> {
        if hops > MAX_SOFT_HOPS {
            return corrupt(format!("too many soft links resolving {path}"));
        }
        let ctx = self.ctx();
        let mut cur = if path.starts_with('/') {
            self.sb.root
        } else {
            start
        };
        let parts = components(path)?;
        for (i, p) in parts.iter().enumerate() {
            let link = self
                .lookup(&ctx, cur, p)?
                .ok_or_else(|| FormatError::NotFound(format!("/{}", parts[..=i].join("/"))))?;
            cur = match link {
                LinkTarget::Hard(a) => a,
                LinkTarget::Soft(t) => self.resolve_from(cur, &t, hops + 1)?,
                LinkTarget::External { file, path } => {
                    return unsupported(format!("following external link to {file}:{path}"))
                }
                LinkTarget::Other(t) => return unsupported(format!("user-defined link type {t}")),
            };
        }
        Ok(cur)
    }

    /// Finds link `name` in the group at `group`. Groups with many links (dense or symbol-table
    /// storage) are indexed once into a name map kept in a bounded per-file cache, so looking up
    /// many names in one big group is not quadratic.
    fn lookup(&self, ctx: &Ctx<'_>, group: u64, name: &str) -> Result<Option<LinkTarget>> {
        if let Some(map) = self.links.lock().ok().and_then(|c| c.get(&group).cloned()) {
            return Ok(map.get(name).cloned());
        }
        let oh = object_header::parse(ctx, group)?;
        let indexed = oh.find(mtype::SYMBOL_TABLE).is_some()
            || oh
                .find(mtype::LINK_INFO)
                .and_then(|m| crate::messages::parse_link_info(m.data, ctx.so).ok())
                .is_some_and(|i| i.heap != UNDEF);
        if !indexed {
            return groups::find_link(ctx, &oh, name);
        }
        let map: HashMap<String, LinkTarget> = groups::links(ctx, &oh)?
            .into_iter()
            .map(|l| (l.name, l.target))
            .collect();
        let found = map.get(name).cloned();
        if let Ok(mut c) = self.links.lock() {
            if c.len() >= 256 {
                c.clear();
            }
            c.insert(group, Arc::new(map));
        }
        Ok(found)
    }

    pub(crate) fn header_at(&self, addr: u64) -> Result<ObjectHeader<'_>> {
        object_header::parse(&self.ctx(), addr)
    }

    /// The links of a group, sorted by name.
    pub fn list(&self, group_path: &str) -> Result<Vec<Entry>> {
        let addr = self.resolve(group_path)?;
        Ok(self
            .list_at(addr, group_path)?
            .into_iter()
            .map(|(e, _)| e)
            .collect())
    }

    /// The links of the group whose object header is at `addr` (`what` names it in errors), sorted by name,
    /// each with its target's address when it is a hard link.
    pub(crate) fn list_at(&self, addr: u64, what: &str) -> Result<Vec<(Entry, Option<u64>)>> {
        let ctx = self.ctx();
        let oh = object_header::parse(&ctx, addr)?;
        if groups::kind(&oh) != ObjectKind::Group {
            return Err(FormatError::TypeMismatch(format!("{what} is not a group")));
        }
        let mut links = groups::links(&ctx, &oh)?;
        links.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = Vec::with_capacity(links.len());
        for l in links {
            let (kind, target) = match l.target {
                LinkTarget::Hard(a) => (
                    match object_header::parse(&ctx, a) {
                        Ok(h) => groups::kind(&h).into(),
                        Err(_) => EntryKind::Other,
                    },
                    Some(a),
                ),
                LinkTarget::Soft(s) => (EntryKind::SoftLink(s), None),
                LinkTarget::External { file, path } => {
                    (EntryKind::ExternalLink { file, path }, None)
                }
                LinkTarget::Other(_) => (EntryKind::Other, None),
            };
            out.push((Entry { name: l.name, kind }, target));
        }
        Ok(out)
    }

    /// True when the path resolves to an object.
    pub fn exists(&self, path: &str) -> bool {
        self.resolve(path).is_ok()
    }

    /// Whether the object at `path` is a group, a dataset or something else.
    pub fn kind(&self, path: &str) -> Result<EntryKind> {
        let oh = self.header_at(self.resolve(path)?)?;
        Ok(groups::kind(&oh).into())
    }

    /// The type held by the committed (named) datatype at `path`.
    pub fn named_datatype(&self, path: &str) -> Result<Datatype> {
        self.datatype_at(self.resolve(path)?)
    }

    /// The type held by the committed (named) datatype whose object header is at `addr`.
    pub fn datatype_at(&self, addr: u64) -> Result<Datatype> {
        let oh = self.header_at(addr)?;
        if groups::kind(&oh) != ObjectKind::Datatype {
            return Err(FormatError::TypeMismatch(format!(
                "object at {addr:#x} is not a committed datatype"
            )));
        }
        let m = oh
            .find(mtype::DATATYPE)
            .ok_or_else(|| FormatError::Corrupt("committed datatype without datatype".into()))?;
        self.datatype_msg(m.flags, m.data)
    }

    /// Reads one attribute of an object.
    pub fn attr(&self, object_path: &str, name: &str) -> Result<Array> {
        let addr = self.resolve(object_path)?;
        let oh = self.header_at(addr)?;
        crate::read::attrs::read_attr(self, &oh, name)?
            .ok_or_else(|| FormatError::NotFound(format!("attribute {name} of {object_path}")))
    }

    /// Names of an object's attributes (storage order for compact, name order for dense).
    pub fn attr_names(&self, object_path: &str) -> Result<Vec<String>> {
        let addr = self.resolve(object_path)?;
        let oh = self.header_at(addr)?;
        crate::read::attrs::attr_names(self, &oh)
    }

    /// Opens a dataset.
    pub fn dataset(&self, path: &str) -> Result<Dataset<'_>> {
        self.dataset_with_view(path, crate::VdsView::LastAvailable)
    }

    /// Opens a dataset; a virtual dataset that grows with its sources takes its extent in `view` (the same as
    /// [`H5File::dataset`] for every other dataset).
    pub fn dataset_with_view(&self, path: &str, view: crate::VdsView) -> Result<Dataset<'_>> {
        let addr = self.resolve(path)?;
        Dataset::open(self, addr, path, view)
    }

    /// One line per header message of the object at `addr` (type, flags, size, first bytes).
    pub fn debug_messages(&self, addr: u64) -> Result<Vec<String>> {
        let oh = self.header_at(addr)?;
        Ok(oh
            .messages
            .iter()
            .map(|m| {
                let head: Vec<String> =
                    m.data.iter().take(24).map(|b| format!("{b:02x}")).collect();
                format!(
                    "type {:>2} flags {:#04x} size {:>5}: {}",
                    m.mtype,
                    m.flags,
                    m.data.len(),
                    head.join(" ")
                )
            })
            .collect())
    }

    /// Opens the dataset whose object header is at `addr`.
    pub fn dataset_at(&self, addr: u64) -> Result<Dataset<'_>> {
        Dataset::open(
            self,
            addr,
            &format!("object at {addr:#x}"),
            crate::VdsView::LastAvailable,
        )
    }

    /// Resolves a (possibly shared) datatype message body.
    pub(crate) fn datatype_msg(&self, flags: u8, data: &[u8]) -> Result<Datatype> {
        let body = self.message_body(mtype::DATATYPE, flags, data)?;
        Datatype::parse(&mut Cursor::new(&body, "datatype message"))
    }

    /// The body of a message of type `message` with header flags `flags` and stored bytes `data`: `data`
    /// itself, or for a shared message (flag 0x02) the body it points to, in another object header or in the
    /// shared-message heap.
    pub(crate) fn message_body<'s>(
        &'s self,
        message: u16,
        flags: u8,
        data: &'s [u8],
    ) -> Result<std::borrow::Cow<'s, [u8]>> {
        use crate::read::shared::{self, SharedRef};
        if flags & 0x02 == 0 {
            return Ok(data.into());
        }
        match shared::parse_ref(data, self.sb.so)? {
            SharedRef::Header(addr) => {
                let oh = self.header_at(addr)?;
                let m = oh.find(message).ok_or_else(|| {
                    FormatError::Corrupt(format!(
                        "shared message of type {message} whose object header has none"
                    ))
                })?;
                if m.flags & 0x02 != 0 {
                    return unsupported("shared message pointing at another shared message");
                }
                Ok(m.data.into())
            }
            SharedRef::Heap(id) => self.sohm_object(message, &id),
        }
    }

    /// A message of type `message` stored in the shared-message heap under heap ID `id`.
    pub(crate) fn sohm_object(
        &self,
        message: u16,
        id: &[u8],
    ) -> Result<std::borrow::Cow<'_, [u8]>> {
        let table = match self.sohm.get() {
            Some(t) => t,
            None => {
                let t = crate::read::shared::read_table(&self.ctx(), self.sb.ext)?;
                self.sohm.get_or_init(|| t)
            }
        };
        crate::read::shared::heap_body(&self.ctx(), table, message, id)
    }
}

impl VlenSource for H5File {
    fn offset_size(&self) -> usize {
        self.sb.so
    }

    fn vlen_object(&self, coll: u64, index: u32) -> Result<&[u8]> {
        let missing =
            || FormatError::Corrupt(format!("global heap object {index} missing in {coll:#x}"));
        let slot = u16::try_from(index).map_err(|_| missing())?;
        // Looked up under the cache's lock, so the usual case (the collection of the previous object) costs
        // no reference counting.
        let (start, len) = self
            .with_collection(coll, |i| i.get(slot))?
            .ok_or_else(missing)?;
        start
            .checked_add(len)
            .and_then(|end| self.bytes().get(start..end))
            .ok_or_else(missing)
    }

    fn vlen_in_order(&self, coll: u64) -> Option<crate::heap::global::InOrder<'_>> {
        let ctx = self.ctx();
        let block = crate::heap::global::collection_block(&ctx, coll).ok()?;
        Some(crate::heap::global::InOrder::new(block, ctx.sl))
    }

    fn vlen_collection<'s>(&'s self, coll: u64) -> Result<crate::convert::VlenObjects<'s>> {
        let index = self.with_collection(coll, Arc::clone)?;
        let bytes = self.bytes();
        Ok(Box::new(move |idx: u32| {
            let missing =
                || FormatError::Corrupt(format!("global heap object {idx} missing in {coll:#x}"));
            let (start, len) = u16::try_from(idx)
                .ok()
                .and_then(|slot| index.get(slot))
                .ok_or_else(missing)?;
            start
                .checked_add(len)
                .and_then(|end| bytes.get(start..end))
                .ok_or_else(missing)
        }))
    }
}

impl H5File {
    /// `f` of the index of the global-heap collection at `coll`, read once and cached; called under the
    /// cache's lock.
    fn with_collection<R>(
        &self,
        coll: u64,
        f: impl FnOnce(&Arc<CollectionIndex>) -> R,
    ) -> Result<R> {
        let mut cache = self
            .gheap
            .lock()
            .map_err(|_| FormatError::Corrupt("global heap cache poisoned".into()))?;
        if !matches!(&cache.last, Some((a, _)) if *a == coll) {
            let i = match cache.map.get(&coll) {
                Some(i) => i.clone(),
                None => {
                    let i = Arc::new(read_collection(&self.ctx(), coll)?);
                    if cache.map.len() > 4096 {
                        cache.map.clear();
                    }
                    cache.map.insert(coll, i.clone());
                    i
                }
            };
            cache.last = Some((coll, i));
        }
        match &cache.last {
            Some((_, i)) => Ok(f(i)),
            None => Err(FormatError::Corrupt("global heap cache empty".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::{Array, Data};
    use crate::write::dataset::DatasetOptions;
    use crate::write::writer::FileWriter;

    fn file_with(values: usize) -> Vec<u8> {
        let mut w = FileWriter::new();
        w.set_attr("/", "a", Array::vector(Data::F64(vec![1.5, 2.5])))
            .unwrap();
        let v: Vec<f32> = (0..values).map(|i| i as f32).collect();
        w.write_dataset("/v", Array::vector(Data::F32(v)), DatasetOptions::default())
            .unwrap();
        w.to_bytes().unwrap()
    }

    fn open_bytes(dir: &std::path::Path, name: &str, bytes: &[u8]) -> Result<H5File> {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        H5File::open(&p)
    }

    #[test]
    fn tiny_and_small_files_open_whole_from_any_first_read() {
        let dir = tempfile::tempdir().unwrap();
        for values in [4, 2000, 20_000] {
            let bytes = file_with(values);
            let f = open_bytes(dir.path(), "f.h5", &bytes).unwrap();
            assert_eq!(f.bytes().len(), bytes.len());
            let a = f.attr("/", "a").unwrap();
            assert_eq!(a.data, Data::F64(vec![1.5, 2.5]));
            let v = f.dataset("/v").unwrap().read().unwrap();
            assert_eq!(v.len(), values, "{values} values");
        }
    }

    #[test]
    fn a_tiny_file_cut_short_is_an_error_and_trailing_bytes_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = file_with(4);
        assert!(bytes.len() < PROBE_BYTES);
        let cut = &bytes[..bytes.len() - 10];
        assert!(open_bytes(dir.path(), "cut.h5", cut)
            .and_then(|f| f.dataset("/v")?.read())
            .is_err());
        let mut padded = bytes.clone();
        padded.extend_from_slice(&[7u8; 100]);
        let f = open_bytes(dir.path(), "padded.h5", &padded).unwrap();
        assert_eq!(f.bytes().len(), padded.len());
        assert!(open_bytes(dir.path(), "empty.h5", &[]).is_err());
    }
}
