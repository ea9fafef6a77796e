//! Virtual datasets (layout class 3): the mapping list in the global heap, the dataspace selections it holds,
//! and assembling the dataset's elements from its source datasets, in this file or in others.
//!
//! Each mapping pairs a selection of the virtual dataset with a selection of a source dataset holding as many
//! elements; the two are walked in row-major order side by side (libhdf5's rule). Elements no mapping covers,
//! and those whose source file or dataset is missing, take the fill value, as libhdf5 gives them.
//!
//! Mappings may grow with their sources, as libhdf5 reads them (its default view, "last available"):
//! - an unlimited mapping (one dimension of each selection has an unlimited count or block) maps as many
//!   positions of its virtual selection as its source selection has within the source's current extent,
//!   a partial last block included;
//! - a printf-style mapping (`%b` in the source file or dataset name) maps block k of its virtual selection
//!   (unlimited count) to source k, for k = 0, 1, ... up to the first source missing.
//!
//! The dataset's extent in a dimension such mappings grow along is then the largest any mapping reaches
//! (the fixed ones included), whatever its dataspace message says. libhdf5's other view, "first missing"
//! ([`VdsView::FirstMissing`], asked for with [`crate::H5File::dataset_with_view`]), takes the smallest reach
//! of the growing mappings instead — a missing source reaching nowhere, an empty one to its first position, a
//! whole last block to the next block's start — never less than the fixed mappings reach; mappings are then
//! cut to that extent (a printf-style block cut in two keeps the source's first elements, where both sides are
//! boxes).

use crate::convert::VlenSource;
use crate::datatype::Datatype;
use crate::error::{corrupt, unsupported, FormatError, Result};
use crate::io::Cursor;
use crate::read::dataset::Dataset;
use crate::read::file::H5File;
use crate::read::vds_growth as growth;
use crate::region::Selection;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How the extent of a virtual dataset that grows with its sources is set (libhdf5's `H5Pset_virtual_view`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VdsView {
    /// As far as any growing mapping reaches, gaps taking the fill value (libhdf5's default).
    #[default]
    LastAvailable,
    /// Up to the first position some growing mapping has no data for.
    FirstMissing,
}

/// One mapping of the list: which elements of which source dataset fill which elements of the virtual one.
#[derive(Clone, Debug)]
pub(crate) struct Mapping {
    pub(crate) file: String,
    pub(crate) dataset: String,
    /// The source selection (its rank is checked against the source's once the source is open).
    pub(crate) source: Selection,
    pub(crate) virtual_sel: Selection,
}

/// Decodes a virtual dataset's mapping list (global heap object, versions 0 and 1) for a dataset of rank
/// `rank`.
fn parse_mappings(bytes: &[u8], size_len: usize, rank: usize) -> Result<Vec<Mapping>> {
    if bytes.len() < 4 {
        return corrupt("virtual dataset mapping list too short");
    }
    let body = &bytes[..bytes.len() - 4];
    let stored = u32::from_le_bytes([
        bytes[bytes.len() - 4],
        bytes[bytes.len() - 3],
        bytes[bytes.len() - 2],
        bytes[bytes.len() - 1],
    ]);
    if crate::checksum::lookup3(body, 0) != stored {
        return corrupt("virtual dataset mapping list checksum mismatch");
    }
    let mut c = Cursor::new(body, "virtual dataset mapping list");
    let version = c.u8()?;
    if version > 1 {
        return unsupported(format!("virtual dataset mapping list version {version}"));
    }
    let n = c.uint(size_len)?;
    if n > c.remaining() as u64 {
        return corrupt("virtual dataset mapping list shorter than its entries");
    }
    let mut out: Vec<Mapping> = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let flags = if version >= 1 { c.u8()? } else { 0 };
        let name = |c: &mut Cursor<'_>, shared: bool, out: &[Mapping], file: bool| {
            if shared {
                let i = c.uint(size_len)? as usize;
                let m = out.get(i).ok_or_else(|| {
                    FormatError::Corrupt("mapping names an entry after it".into())
                })?;
                Ok::<String, FormatError>(if file {
                    m.file.clone()
                } else {
                    m.dataset.clone()
                })
            } else {
                Ok(String::from_utf8_lossy(c.cstr()?).into_owned())
            }
        };
        let file = if flags & 0x04 != 0 {
            ".".to_string()
        } else {
            name(&mut c, flags & 0x01 != 0, &out, true)?
        };
        let dataset = name(&mut c, flags & 0x02 != 0, &out, false)?;
        let source = Selection::parse_unlimited(&mut c, None)?;
        let virtual_sel = Selection::parse_unlimited(&mut c, Some(rank))?;
        out.push(Mapping {
            file,
            dataset,
            source,
            virtual_sel,
        });
    }
    Ok(out)
}

/// Where a file another file names is (a virtual dataset's source, an external data file): absolute names
/// as they are; relative ones beside the naming file, else in the current directory (where libhdf5 looks).
pub(crate) fn named_file(naming_file: Option<&Path>, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    if let Some(dir) = naming_file.and_then(Path::parent) {
        let beside = dir.join(p);
        if beside.exists() {
            return beside;
        }
    }
    p.to_path_buf()
}

/// Whether elements of `dt` point into their file (variable-length data, references), so that their bytes
/// mean nothing in another file.
fn points_into_file(dt: &Datatype) -> bool {
    match dt {
        Datatype::VarStr { .. } | Datatype::VarSeq(..) | Datatype::Reference { .. } => true,
        Datatype::Compound { members, .. } => members.iter().any(|m| points_into_file(&m.dtype)),
        Datatype::Array { base, .. } | Datatype::Enum { base, .. } => points_into_file(base),
        _ => false,
    }
}

/// Virtual datasets whose sources are virtual datasets, nested at most this deep (a cycle ends here).
const MAX_NESTING: usize = 8;

thread_local! {
    static NESTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Builds the whole virtual dataset `ds` (file byte order), its mapping list being object `index` of the
/// global heap collection at `heap`.
pub(crate) fn assemble(ds: &Dataset<'_>, heap: u64, index: u32) -> Result<Vec<u8>> {
    nested(|| assemble_at(ds, heap, index))
}

/// Runs `f` one level deeper into virtual datasets' sources; too deep (a cycle) is an error.
fn nested<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    let depth = NESTING.with(|n| n.get());
    if depth >= MAX_NESTING {
        return corrupt("virtual dataset sources nested too deeply (a cycle?)");
    }
    NESTING.with(|n| n.set(depth + 1));
    let r = f();
    NESTING.with(|n| n.set(depth));
    r
}

/// The extent of a virtual dataset whose mappings grow with their sources (see the module's notes), or `None`
/// when none does (its dataspace message's extent stands).
pub(crate) fn current_dims(
    file: &H5File,
    heap: u64,
    index: u32,
    dims: &[u64],
    view: VdsView,
) -> Result<Option<Vec<u64>>> {
    nested(|| {
        let list = file.vlen_object(heap, index)?.to_vec();
        let mappings = parse_mappings(&list, file.superblock().sl, dims.len())?;
        growth::extent(file, mappings, dims, view)
    })
}

fn assemble_at(ds: &Dataset<'_>, heap: u64, index: u32) -> Result<Vec<u8>> {
    let file = ds.file();
    let dims = ds.space().dims.clone();
    let elem = ds.dtype().size();
    let list = file.vlen_object(heap, index)?.to_vec();
    let mappings = parse_mappings(&list, file.superblock().sl, dims.len())?;
    let mut opened: HashMap<String, Option<H5File>> = HashMap::new();
    let mappings = growth::resolve(file, mappings, &mut opened, Some(&dims))?;
    // The same bound as other decoded data: proportional to the bytes the sources hold.
    let stored: u64 = file.bytes().len() as u64
        + opened
            .values()
            .flatten()
            .map(|f| f.bytes().len() as u64)
            .sum::<u64>();
    let limit = stored.saturating_mul(1100).max(64 << 20);
    let n = ds.space().num_elements()?;
    let total = n.saturating_mul(elem as u64);
    if total > limit {
        return corrupt(format!(
            "virtual dataset of {total} bytes, more than its sources can hold"
        ));
    }
    let mut out = vec![0u8; total as usize];
    if let Some(f) = ds.fill_bytes() {
        for c in out.chunks_exact_mut(f.len()) {
            c.copy_from_slice(f);
        }
    }
    // Selections are walked as lists of 8-byte indices: each list no larger than half the bound.
    let elems_limit = limit / 16;
    for m in mappings {
        let src_file = if m.file == "." {
            Some(file)
        } else {
            opened.get(&m.file).and_then(Option::as_ref)
        };
        // A missing source file or dataset leaves the fill value (libhdf5 reads it the same way).
        let Some(src) = src_file.and_then(|f| f.dataset(&m.dataset).ok()) else {
            continue;
        };
        if m.file != "." && points_into_file(ds.dtype()) {
            return unsupported(format!(
                "virtual dataset of {} from another file",
                ds.dtype().describe()
            ));
        }
        if src.dtype() != ds.dtype() {
            return unsupported(format!(
                "virtual dataset of {} with a source of {} ({})",
                ds.dtype().describe(),
                src.dtype().describe(),
                m.dataset
            ));
        }
        let sdims = src.shape().to_vec();
        let source = &m.source;
        let Some((origin, extent)) = source.bounds(&sdims) else {
            continue;
        };
        // The selection may reach past the source's current extent (a source smaller than its mapping): the
        // elements out there keep the fill value, as libhdf5 gives them. Walk it in a space that holds it,
        // and read only the part of its box inside the source.
        let reach: Vec<u64> = origin
            .iter()
            .zip(&extent)
            .map(|(o, e)| o.saturating_add(*e))
            .collect();
        let space: Vec<u64> = sdims.iter().zip(&reach).map(|(&d, &r)| d.max(r)).collect();
        let inside: Vec<u64> = origin
            .iter()
            .zip(&reach)
            .zip(&sdims)
            .map(|((o, r), d)| (*r).min(*d).saturating_sub(*o))
            .collect();
        let s_idx = source.indices(&space, &origin, &extent, elems_limit)?;
        let v_idx = m
            .virtual_sel
            .indices(&dims, &vec![0; dims.len()], &dims, elems_limit)?;
        if s_idx.len() != v_idx.len() {
            return corrupt(format!(
                "virtual dataset mapping of {} elements onto {}",
                s_idx.len(),
                v_idx.len()
            ));
        }
        if inside.contains(&0) || inside.len() != extent.len() {
            continue;
        }
        let raw = src.read_box_raw(&origin, &inside)?;
        let clipped = inside != extent;
        for (&s, &v) in s_idx.iter().zip(&v_idx) {
            // From the selection box's row-major index to the readable part's, when they differ.
            let s = if clipped {
                let mut rest = s;
                let mut at = 0u64;
                let mut scale = 1u64;
                let mut out_of_source = false;
                for (e, i) in extent.iter().zip(&inside).rev() {
                    let x = rest % e;
                    rest /= e;
                    out_of_source |= x >= *i;
                    at += x * scale;
                    scale *= i;
                }
                if out_of_source {
                    continue;
                }
                at
            } else {
                s
            };
            let (s, v) = (s as usize * elem, v as usize * elem);
            out[v..v + elem].copy_from_slice(&raw[s..s + elem]);
        }
    }
    Ok(out)
}
