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
//! (the fixed ones included), whatever its dataspace message says.

use crate::convert::VlenSource;
use crate::datatype::Datatype;
use crate::error::{corrupt, unsupported, FormatError, Result};
use crate::io::Cursor;
use crate::read::dataset::Dataset;
use crate::read::file::H5File;
use crate::region::{Selection, UNLIMITED};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One mapping of the list: which elements of which source dataset fill which elements of the virtual one.
#[derive(Clone, Debug)]
struct Mapping {
    file: String,
    dataset: String,
    /// The source selection (its rank is checked against the source's once the source is open).
    source: Selection,
    virtual_sel: Selection,
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
        Datatype::VarStr { .. } | Datatype::VarSeq(_) | Datatype::Reference { .. } => true,
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

/// The unlimited dimension of a regular selection (its count or its block unlimited), if any.
fn unlimited_dim(sel: &Selection) -> Option<usize> {
    match sel {
        Selection::Regular(d) => d
            .iter()
            .position(|x| x[2] == UNLIMITED || x[3] == UNLIMITED),
        _ => None,
    }
}

/// Whether `name` is printf-style (`%b` stands for a source's number).
fn is_printf(name: &str) -> bool {
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('b') => return true,
                // `%%` is a percent sign.
                _ => continue,
            }
        }
    }
    false
}

/// `name` with `%b` replaced by `k` and `%%` by `%`.
fn printf_name(name: &str, k: u64) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some('b')) => {
                chars.next();
                out.push_str(&k.to_string());
            }
            ('%', Some('%')) => {
                chars.next();
                out.push('%');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The first `n` coordinates of one dimension's regular pattern (start, stride, count, block; the count or
/// the block may be unlimited), as inclusive runs.
fn first_positions(pattern: [u64; 4], n: u64) -> Result<Vec<(u64, u64)>> {
    let [start, stride, count, block] = pattern;
    if n == 0 {
        return Ok(vec![]);
    }
    let end = |at: u64, len: u64| {
        at.checked_add(len - 1)
            .ok_or_else(|| FormatError::Corrupt("virtual dataset selection beyond 2^64".into()))
    };
    if block == UNLIMITED {
        if count != 1 {
            return unsupported("virtual dataset selection with an unlimited block repeated");
        }
        return Ok(vec![(start, end(start, n)?)]);
    }
    if block == 0 || (count > 1 && stride < block) {
        return corrupt("virtual dataset selection overlapping itself");
    }
    if n.div_ceil(block) > MAX_BLOCKS {
        return corrupt("virtual dataset selection of too many blocks");
    }
    let mut runs = Vec::new();
    let mut left = n;
    let mut k = 0u64;
    while left > 0 && k < count {
        let at = k
            .checked_mul(stride)
            .and_then(|x| x.checked_add(start))
            .ok_or_else(|| FormatError::Corrupt("virtual dataset selection beyond 2^64".into()))?;
        let len = left.min(block);
        runs.push((at, end(at, len)?));
        left -= len;
        k += 1;
    }
    Ok(runs)
}

/// How many coordinates of one dimension's pattern lie below `extent`.
fn positions_below(pattern: [u64; 4], extent: u64) -> u64 {
    let [start, stride, count, block] = pattern;
    if extent <= start || block == 0 || count == 0 {
        return 0;
    }
    let span = extent - start;
    if block == UNLIMITED {
        return span;
    }
    let stride = stride.max(1);
    let full = (span / stride).min(count);
    let mut n = full.saturating_mul(block);
    if full < count {
        n = n.saturating_add((span % stride).min(block));
    }
    n
}

/// Coordinates each dimension of a regular selection contributes, the unlimited one replaced by `runs`.
fn with_runs(d: &[[u64; 4]], dim: usize, runs: Vec<(u64, u64)>) -> Result<Selection> {
    let mut per: Vec<Vec<(u64, u64)>> = Vec::with_capacity(d.len());
    for (i, &p) in d.iter().enumerate() {
        if i == dim {
            per.push(runs.clone());
        } else {
            let n = p[2].saturating_mul(p[3]);
            per.push(first_positions(p, n)?);
        }
    }
    // Every box of the product of the dimensions' runs.
    let total = per
        .iter()
        .try_fold(1u64, |a, r| a.checked_mul(r.len() as u64))
        .filter(|&t| t <= MAX_BLOCKS)
        .ok_or_else(|| {
            FormatError::Corrupt("virtual dataset selection of too many blocks".into())
        })?;
    let mut blocks = Vec::with_capacity(total as usize);
    if total == 0 {
        return Ok(Selection::None);
    }
    let mut idx = vec![0usize; per.len()];
    loop {
        let lo = idx.iter().zip(&per).map(|(&i, r)| r[i].0).collect();
        let hi = idx.iter().zip(&per).map(|(&i, r)| r[i].1).collect();
        blocks.push((lo, hi));
        let mut d = per.len();
        loop {
            if d == 0 {
                return Ok(Selection::Blocks(blocks));
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < per[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Elements one position along `dim` of a regular selection stands for (the other dimensions' counts ×
/// blocks).
fn per_position(d: &[[u64; 4]], dim: usize) -> u64 {
    d.iter()
        .enumerate()
        .filter(|(i, _)| *i != dim)
        .fold(1u64, |a, (_, p)| {
            a.saturating_mul(p[2].saturating_mul(p[3]))
        })
}

/// Most printf-style sources looked for, per mapping.
const MAX_PRINTF_SOURCES: u64 = 1 << 16;

/// Most blocks a resolved selection is spelled out in.
const MAX_BLOCKS: u64 = 1 << 22;

/// The mappings with unlimited and printf-style ones resolved against the sources as they are now: every
/// selection in the result is finite. Source files are opened into `opened` (by name; `None` when missing).
fn resolve(
    file: &H5File,
    mappings: Vec<Mapping>,
    opened: &mut HashMap<String, Option<H5File>>,
) -> Result<Vec<Mapping>> {
    let open = |name: &str, opened: &mut HashMap<String, Option<H5File>>| {
        if name != "." && !opened.contains_key(name) {
            let f = H5File::open(&named_file(file.path(), name)).ok();
            opened.insert(name.to_string(), f);
        }
    };
    let mut out = Vec::with_capacity(mappings.len());
    for m in mappings {
        let printf = is_printf(&m.file) || is_printf(&m.dataset);
        let (Some(v_dim), Selection::Regular(v)) = (unlimited_dim(&m.virtual_sel), &m.virtual_sel)
        else {
            if printf || unlimited_dim(&m.source).is_some() {
                return corrupt("virtual dataset mapping unlimited on its source side only");
            }
            open(&m.file, opened);
            out.push(m);
            continue;
        };
        if printf {
            // Block k of the virtual selection from source k, until one is missing.
            let [start, stride, count, block] = v[v_dim];
            if count != UNLIMITED || block == UNLIMITED || unlimited_dim(&m.source).is_some() {
                return unsupported("printf-style virtual dataset mapping of this shape");
            }
            for k in 0..MAX_PRINTF_SOURCES {
                let (fname, dname) = (printf_name(&m.file, k), printf_name(&m.dataset, k));
                open(&fname, opened);
                let src = if fname == "." {
                    Some(file)
                } else {
                    opened.get(&fname).and_then(Option::as_ref)
                };
                if src.is_none_or(|f| f.dataset(&dname).is_err()) {
                    break;
                }
                let at = k
                    .checked_mul(stride)
                    .and_then(|x| x.checked_add(start))
                    .ok_or_else(|| {
                        FormatError::Corrupt("virtual dataset selection beyond 2^64".into())
                    })?;
                let mut d = v.clone();
                d[v_dim] = [at, 1, 1, block];
                out.push(Mapping {
                    file: fname,
                    dataset: dname,
                    source: m.source.clone(),
                    virtual_sel: Selection::Regular(d),
                });
            }
            continue;
        }
        // Unlimited: as many positions as the source selection has inside the source's extent (a missing
        // source maps none: its elements keep the fill value).
        let n_virtual = unlimited_positions(file, &m, v, v_dim, opened)?;
        let (Some(s_dim), Selection::Regular(s)) = (unlimited_dim(&m.source), &m.source) else {
            return unsupported("virtual dataset mapping unlimited on its virtual side only");
        };
        let n_src =
            n_virtual.saturating_mul(per_position(v, v_dim)) / per_position(s, s_dim).max(1);
        let source = with_runs(s, s_dim, first_positions(s[s_dim], n_src)?)?;
        let virtual_sel = with_runs(v, v_dim, first_positions(v[v_dim], n_virtual)?)?;
        out.push(Mapping {
            source,
            virtual_sel,
            ..m
        });
    }
    Ok(out)
}

/// The extent of a virtual dataset whose mappings grow with their sources (see the module's notes), or `None`
/// when none does (its dataspace message's extent stands).
pub(crate) fn current_dims(
    file: &H5File,
    heap: u64,
    index: u32,
    dims: &[u64],
) -> Result<Option<Vec<u64>>> {
    nested(|| current_dims_at(file, heap, index, dims))
}

fn current_dims_at(file: &H5File, heap: u64, index: u32, dims: &[u64]) -> Result<Option<Vec<u64>>> {
    let list = file.vlen_object(heap, index)?.to_vec();
    let mappings = parse_mappings(&list, file.superblock().sl, dims.len())?;
    let grows: Vec<usize> = mappings
        .iter()
        .filter_map(|m| unlimited_dim(&m.virtual_sel))
        .collect();
    if grows.is_empty() {
        return Ok(None);
    }
    let mut out = dims.to_vec();
    for &d in &grows {
        out[d] = 0;
    }
    let mut opened = HashMap::new();
    // The whole space any selection could reach: bounds are taken within it.
    let huge = vec![u64::MAX; dims.len()];
    for m in mappings {
        match (unlimited_dim(&m.virtual_sel), &m.virtual_sel) {
            (Some(v_dim), Selection::Regular(v)) => {
                let positions = if is_printf(&m.file) || is_printf(&m.dataset) {
                    // One block of the virtual pattern a source found.
                    let found = resolve(file, vec![m.clone()], &mut opened)?.len() as u64;
                    found.saturating_mul(v[v_dim][3])
                } else {
                    unlimited_positions(file, &m, v, v_dim, &mut opened)?
                };
                if let Some(last) = last_position(v[v_dim], positions) {
                    out[v_dim] = out[v_dim].max(last.saturating_add(1));
                }
            }
            // An "all" selection covers whatever the extent is: it reaches no further.
            (_, Selection::All) => {}
            // A fixed mapping reaches as far as its selection into every growing dimension.
            _ => {
                if let Some((origin, extent)) = m.virtual_sel.bounds(&huge) {
                    for &d in &grows {
                        out[d] = out[d].max(origin[d].saturating_add(extent[d]));
                    }
                }
            }
        }
    }
    Ok(Some(out))
}

/// How many positions along `v_dim` an unlimited mapping maps now: as many elements as its source selection
/// has inside the source's current extent, over the virtual side's elements a position (0 for a missing source).
fn unlimited_positions(
    file: &H5File,
    m: &Mapping,
    v: &[[u64; 4]],
    v_dim: usize,
    opened: &mut HashMap<String, Option<H5File>>,
) -> Result<u64> {
    let (Some(s_dim), Selection::Regular(s)) = (unlimited_dim(&m.source), &m.source) else {
        return unsupported("virtual dataset mapping unlimited on its virtual side only");
    };
    if m.file != "." && !opened.contains_key(&m.file) {
        let f = H5File::open(&named_file(file.path(), &m.file)).ok();
        opened.insert(m.file.clone(), f);
    }
    let src = if m.file == "." {
        Some(file)
    } else {
        opened.get(&m.file).and_then(Option::as_ref)
    };
    let Some(extent) = src
        .and_then(|f| f.dataset(&m.dataset).ok())
        .and_then(|d| d.shape().get(s_dim).copied())
    else {
        return Ok(0);
    };
    let elements = positions_below(s[s_dim], extent).saturating_mul(per_position(s, s_dim));
    let per_v = per_position(v, v_dim);
    if per_v == 0 || !elements.is_multiple_of(per_v) {
        return unsupported("unlimited virtual dataset mapping whose sides' slices differ in size");
    }
    Ok(elements / per_v)
}

/// The last of the first `n` coordinates of a pattern (start, stride, count, block; the count or the block
/// unlimited); `None` for none.
fn last_position(pattern: [u64; 4], n: u64) -> Option<u64> {
    let [start, stride, _, block] = pattern;
    let i = n.checked_sub(1)?;
    if block == UNLIMITED {
        return start.checked_add(i);
    }
    (i / block.max(1))
        .checked_mul(stride)
        .and_then(|x| x.checked_add(start))
        .and_then(|x| x.checked_add(i % block.max(1)))
}

fn assemble_at(ds: &Dataset<'_>, heap: u64, index: u32) -> Result<Vec<u8>> {
    let file = ds.file();
    let dims = ds.space().dims.clone();
    let elem = ds.dtype().size();
    let list = file.vlen_object(heap, index)?.to_vec();
    let mappings = parse_mappings(&list, file.superblock().sl, dims.len())?;
    let mut opened: HashMap<String, Option<H5File>> = HashMap::new();
    let mappings = resolve(file, mappings, &mut opened)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_names_take_the_source_number() {
        assert_eq!(printf_name("data_%b.h5", 12), "data_12.h5");
        assert_eq!(printf_name("%b/%b", 3), "3/3");
        assert_eq!(printf_name("100%%_%b", 0), "100%_0");
        assert_eq!(printf_name("plain%x", 5), "plain%x");
        assert!(is_printf("s%b") && is_printf("%%%b"));
        assert!(!is_printf("s%%b_x") && !is_printf("plain") && !is_printf("50%"));
    }

    #[test]
    fn unlimited_patterns_count_and_place_their_positions() {
        // Blocks of 2 every 4 from 2, unlimited count: 2,3 6,7 10,11 ...
        let p = [2, 4, UNLIMITED, 2];
        assert_eq!(positions_below(p, 2), 0);
        assert_eq!(positions_below(p, 3), 1);
        assert_eq!(positions_below(p, 9), 4);
        assert_eq!(positions_below(p, 11), 5);
        assert_eq!(first_positions(p, 5).unwrap(), [(2, 3), (6, 7), (10, 10)]);
        assert_eq!(last_position(p, 5), Some(10));
        assert_eq!(last_position(p, 0), None);
        // One unlimited block from 5.
        let b = [5, 1, 1, UNLIMITED];
        assert_eq!(positions_below(b, 9), 4);
        assert_eq!(first_positions(b, 4).unwrap(), [(5, 8)]);
        assert_eq!(last_position(b, 4), Some(8));
        // A finite count stops the pattern.
        assert_eq!(positions_below([0, 3, 2, 1], 100), 2);
        // Too many blocks to spell out.
        assert!(first_positions([0, 2, UNLIMITED, 1], 1 << 40).is_err());
    }

    #[test]
    fn resolved_runs_cover_the_other_dimensions() {
        // Rows 0.. (unlimited block) × columns 1 and 3: two boxes for 3 rows.
        let d = [[0, 1, 1, UNLIMITED], [1, 2, 2, 1]];
        let s = with_runs(&d, 0, vec![(0, 2)]).unwrap();
        assert_eq!(
            s,
            Selection::Blocks(vec![(vec![0, 1], vec![2, 1]), (vec![0, 3], vec![2, 3])])
        );
        assert_eq!(per_position(&d, 0), 2);
    }
}
