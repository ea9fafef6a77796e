//! Virtual datasets (layout class 3): the mapping list in the global heap, the dataspace selections it holds,
//! and assembling the dataset's elements from its source datasets, in this file or in others.
//!
//! Each mapping pairs a selection of the virtual dataset with a selection of a source dataset holding as many
//! elements; the two are walked in row-major order side by side (libhdf5's rule). Elements no mapping covers,
//! and those whose source file or dataset is missing, take the fill value, as libhdf5 gives them. Unlimited
//! selections and printf-style source names (`%b`) are refused as unsupported.

use crate::convert::VlenSource;
use crate::datatype::Datatype;
use crate::error::{corrupt, unsupported, FormatError, Result};
use crate::io::Cursor;
use crate::read::dataset::Dataset;
use crate::read::file::H5File;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A dataspace selection as libhdf5 serialises it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Selection {
    None,
    All,
    /// A regular hyperslab: per dimension start, stride, count, block.
    Regular(Vec<[u64; 4]>),
    /// A union of boxes, each (first corner, last corner), corners inclusive.
    Blocks(Vec<(Vec<u64>, Vec<u64>)>),
}

/// libhdf5's `H5S_UNLIMITED` in a field of `size` bytes (all bits set).
fn unlimited(v: u64, size: usize) -> bool {
    size < 8 && v == (1u64 << (8 * size)) - 1 || v == u64::MAX
}

impl Selection {
    /// Decodes one serialised selection (`H5S_select_serialize`'s format) of a space of rank `rank`.
    pub(crate) fn parse(c: &mut Cursor<'_>, rank: usize) -> Result<Selection> {
        let kind = c.u32()?;
        let version = c.u32()?;
        match kind {
            0 | 3 => {
                // Version 1, then 8 reserved bytes (a reserved word and a zero length).
                if version != 1 {
                    return corrupt(format!("selection version {version}"));
                }
                c.skip(8)?;
                Ok(if kind == 0 {
                    Selection::None
                } else {
                    Selection::All
                })
            }
            2 => Self::parse_hyperslab(c, version, rank),
            1 => unsupported("virtual dataset mapping with a point selection"),
            k => corrupt(format!("selection type {k}")),
        }
    }

    fn parse_hyperslab(c: &mut Cursor<'_>, version: u32, rank: usize) -> Result<Selection> {
        let (regular, size) = match version {
            1 => {
                c.skip(8)?; // reserved word, length
                (false, 4)
            }
            2 => {
                let flags = c.u8()?;
                c.skip(4)?; // length
                (flags & 1 != 0, 8)
            }
            3 => {
                let flags = c.u8()?;
                let size = c.u8()? as usize;
                if !matches!(size, 2 | 4 | 8) {
                    return corrupt(format!("hyperslab selection of {size}-byte numbers"));
                }
                (flags & 1 != 0, size)
            }
            v => return corrupt(format!("hyperslab selection version {v}")),
        };
        if c.u32()? as usize != rank {
            return corrupt("selection rank differs from its dataspace's");
        }
        if regular {
            let mut dims = Vec::with_capacity(rank);
            for _ in 0..rank {
                let mut d = [0u64; 4];
                for v in d.iter_mut() {
                    *v = c.uint(size)?;
                    if unlimited(*v, size) {
                        return unsupported("virtual dataset mapping with an unlimited selection");
                    }
                }
                dims.push(d);
            }
            return Ok(Selection::Regular(dims));
        }
        let n = c.uint(size)?;
        let each = 2u64.saturating_mul(rank as u64).saturating_mul(size as u64);
        if n.saturating_mul(each) > c.remaining() as u64 {
            return corrupt("hyperslab selection longer than its block");
        }
        let mut blocks = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let mut lo = Vec::with_capacity(rank);
            let mut hi = Vec::with_capacity(rank);
            for _ in 0..rank {
                lo.push(c.uint(size)?);
            }
            for _ in 0..rank {
                hi.push(c.uint(size)?);
            }
            if lo.iter().zip(&hi).any(|(a, b)| a > b) {
                return corrupt("hyperslab block whose end precedes its start");
            }
            blocks.push((lo, hi));
        }
        Ok(Selection::Blocks(blocks))
    }

    /// The selected elements' coordinates in `dims` as row-major indices into the box at `origin` of shape
    /// `extent` (which must hold them), in libhdf5's iteration order (row-major over the space). Elements
    /// outside `dims` are refused; at most `limit` elements.
    fn indices(
        &self,
        dims: &[u64],
        origin: &[u64],
        extent: &[u64],
        limit: u64,
    ) -> Result<Vec<u64>> {
        let linear = |p: &[u64]| {
            p.iter()
                .zip(origin)
                .zip(extent)
                .fold(0u64, |acc, ((&x, &o), &e)| acc * e + (x - o))
        };
        let outside = || FormatError::Corrupt("selection outside its dataspace".into());
        match self {
            Selection::None => Ok(vec![]),
            Selection::All => {
                let per: Vec<Vec<u64>> = dims.iter().map(|&d| (0..d).collect()).collect();
                product(&per, limit, linear)
            }
            Selection::Regular(d) => {
                if d.len() != dims.len() {
                    return Err(outside());
                }
                let mut per = Vec::with_capacity(d.len());
                for (&[start, stride, count, block], &dim) in d.iter().zip(dims) {
                    let n = count.saturating_mul(block);
                    // Distinct coordinates below `dim`: never more than it.
                    if n > limit || n > dim || (count > 1 && stride < block) {
                        return corrupt("hyperslab selection too large or overlapping itself");
                    }
                    let mut v = Vec::with_capacity(n as usize);
                    for k in 0..count {
                        for b in 0..block {
                            let x = start
                                .checked_add(k.saturating_mul(stride))
                                .and_then(|x| x.checked_add(b))
                                .filter(|&x| x < dim)
                                .ok_or_else(outside)?;
                            v.push(x);
                        }
                    }
                    per.push(v);
                }
                product(&per, limit, linear)
            }
            Selection::Blocks(blocks) => {
                let mut all = Vec::new();
                for (lo, hi) in blocks {
                    if lo.len() != dims.len() || hi.iter().zip(dims).any(|(h, d)| h >= d) {
                        return Err(outside());
                    }
                    let per: Vec<Vec<u64>> = lo
                        .iter()
                        .zip(hi)
                        .map(|(&a, &b)| (a..=b).collect())
                        .collect();
                    let left = limit.saturating_sub(all.len() as u64);
                    all.extend(product(&per, left, linear)?);
                }
                // The union, in row-major order.
                all.sort_unstable();
                all.dedup();
                Ok(all)
            }
        }
    }

    /// The smallest box holding the selection in `dims`: (first corner, shape); `None` when it is empty.
    fn bounds(&self, dims: &[u64]) -> Option<(Vec<u64>, Vec<u64>)> {
        let (lo, hi): (Vec<u64>, Vec<u64>) = match self {
            Selection::None => return None,
            Selection::All => {
                if dims.contains(&0) {
                    return None;
                }
                (vec![0; dims.len()], dims.iter().map(|d| d - 1).collect())
            }
            Selection::Regular(d) => {
                if d.iter().any(|x| x[2] == 0 || x[3] == 0) {
                    return None;
                }
                d.iter()
                    .map(|&[s, st, c, b]| {
                        (
                            s,
                            s.saturating_add((c - 1).saturating_mul(st))
                                .saturating_add(b - 1),
                        )
                    })
                    .unzip()
            }
            Selection::Blocks(blocks) => {
                let first = blocks.first()?;
                let mut lo = first.0.clone();
                let mut hi = first.1.clone();
                for (a, b) in blocks {
                    for i in 0..lo.len().min(a.len()).min(b.len()) {
                        lo[i] = lo[i].min(a[i]);
                        hi[i] = hi[i].max(b[i]);
                    }
                }
                (lo, hi)
            }
        };
        let shape = lo.iter().zip(&hi).map(|(a, b)| b - a + 1).collect();
        Some((lo, shape))
    }
}

/// Row-major indices (through `linear`) of the cartesian product of the per-dimension coordinate lists.
fn product(per: &[Vec<u64>], limit: u64, linear: impl Fn(&[u64]) -> u64) -> Result<Vec<u64>> {
    let n = per
        .iter()
        .fold(1u64, |a, v| a.saturating_mul(v.len() as u64));
    if n > limit {
        return corrupt("selection larger than the virtual dataset allows");
    }
    if n == 0 {
        return Ok(vec![]);
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut at = vec![0usize; per.len()];
    let mut p: Vec<u64> = per.iter().map(|v| v[0]).collect();
    loop {
        out.push(linear(&p));
        // Odometer, last dimension fastest.
        let mut d = per.len();
        loop {
            if d == 0 {
                return Ok(out);
            }
            d -= 1;
            at[d] += 1;
            if at[d] < per[d].len() {
                p[d] = per[d][at[d]];
                break;
            }
            at[d] = 0;
            p[d] = per[d][0];
        }
    }
}

/// One mapping of the list: which elements of which source dataset fill which elements of the virtual one.
#[derive(Clone, Debug)]
struct Mapping {
    file: String,
    dataset: String,
    /// The source selection, serialised: its rank is the source's, known once the source is open.
    source: Vec<u8>,
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
        let start = c.pos();
        skip_selection(&mut c)?;
        let source = body[start..c.pos()].to_vec();
        let virtual_sel = Selection::parse(&mut c, rank)?;
        out.push(Mapping {
            file,
            dataset,
            source,
            virtual_sel,
        });
    }
    Ok(out)
}

/// Steps over one serialised selection without knowing its rank.
fn skip_selection(c: &mut Cursor<'_>) -> Result<()> {
    let kind = c.u32()?;
    let version = c.u32()?;
    match (kind, version) {
        (0 | 3, _) => c.skip(8),
        (2, 1) => {
            c.skip(4)?;
            let len = c.u32()? as usize;
            c.skip(len)
        }
        (2, 2) => {
            c.skip(1)?;
            let len = c.u32()? as usize;
            c.skip(len)
        }
        (2, 3) => {
            let flags = c.u8()?;
            let size = c.u8()? as usize;
            let rank = c.u32()? as usize;
            if flags & 1 != 0 {
                c.skip(rank.saturating_mul(4).saturating_mul(size))
            } else {
                let n = c.uint(size)? as usize;
                c.skip(
                    n.saturating_mul(2)
                        .saturating_mul(rank)
                        .saturating_mul(size),
                )
            }
        }
        (1, _) => unsupported("virtual dataset mapping with a point selection"),
        (k, v) => corrupt(format!("selection type {k} version {v}")),
    }
}

/// Where a source file named `name` in the mapping list is: absolute names as they are; relative ones beside
/// the virtual dataset's file, else in the current directory (where libhdf5 also looks).
fn source_path(vds_file: Option<&Path>, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    if let Some(dir) = vds_file.and_then(Path::parent) {
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
    let depth = NESTING.with(|n| n.get());
    if depth >= MAX_NESTING {
        return corrupt("virtual dataset sources nested too deeply (a cycle?)");
    }
    NESTING.with(|n| n.set(depth + 1));
    let r = assemble_at(ds, heap, index);
    NESTING.with(|n| n.set(depth));
    r
}

fn assemble_at(ds: &Dataset<'_>, heap: u64, index: u32) -> Result<Vec<u8>> {
    let file = ds.file();
    let dims = ds.space().dims.clone();
    let elem = ds.dtype().size();
    let list = file.vlen_object(heap, index)?.to_vec();
    let mappings = parse_mappings(&list, file.superblock().sl, dims.len())?;
    let mut opened: HashMap<String, Option<H5File>> = HashMap::new();
    for m in &mappings {
        if m.file.contains('%') || m.dataset.contains('%') {
            return unsupported("virtual dataset with printf-style source names");
        }
        if m.file != "." && !opened.contains_key(&m.file) {
            let f = H5File::open(&source_path(file.path(), &m.file)).ok();
            opened.insert(m.file.clone(), f);
        }
    }
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
        let source = Selection::parse(
            &mut Cursor::new(&m.source, "virtual dataset source selection"),
            sdims.len(),
        )?;
        let Some((origin, extent)) = source.bounds(&sdims) else {
            continue;
        };
        let s_idx = source.indices(&sdims, &origin, &extent, elems_limit)?;
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
        let raw = src.read_box_raw(&origin, &extent)?;
        for (&s, &v) in s_idx.iter().zip(&v_idx) {
            let (s, v) = (s as usize * elem, v as usize * elem);
            out[v..v + elem].copy_from_slice(&raw[s..s + elem]);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regular(dims: &[[u64; 4]]) -> Selection {
        Selection::Regular(dims.to_vec())
    }

    #[test]
    fn selections_walk_in_row_major_order() {
        let dims = [4u64, 5];
        let s = regular(&[[1, 2, 2, 1], [0, 3, 2, 2]]);
        // Rows 1 and 3, columns 0,1 and 3,4.
        assert_eq!(
            s.indices(&dims, &[0, 0], &dims, 100).unwrap(),
            vec![5, 6, 8, 9, 15, 16, 18, 19]
        );
        assert_eq!(s.bounds(&dims), Some((vec![1, 0], vec![3, 5])));
        // Relative to that box.
        assert_eq!(
            s.indices(&dims, &[1, 0], &[3, 5], 100).unwrap(),
            vec![0, 1, 3, 4, 10, 11, 13, 14]
        );
        let b = Selection::Blocks(vec![(vec![2, 2], vec![3, 3]), (vec![0, 0], vec![2, 2])]);
        assert_eq!(
            b.indices(&dims, &[0, 0], &dims, 100).unwrap(),
            vec![0, 1, 2, 5, 6, 7, 10, 11, 12, 13, 17, 18]
        );
        assert_eq!(
            Selection::All
                .indices(&[2, 2], &[0, 0], &[2, 2], 9)
                .unwrap(),
            vec![0, 1, 2, 3]
        );
        assert!(regular(&[[3, 1, 2, 1], [0, 1, 1, 1]])
            .indices(&dims, &[0, 0], &dims, 100)
            .is_err());
        assert!(Selection::All
            .indices(&[100, 100], &[0, 0], &[100, 100], 99)
            .is_err());
    }

    #[test]
    fn hyperslab_encodings_decode() {
        // Version 3, regular, 4-byte numbers, rank 1: start 2, stride 3, count 4, block 1.
        let mut b = vec![2, 0, 0, 0, 3, 0, 0, 0, 1, 4, 1, 0, 0, 0];
        for v in [2u32, 3, 4, 1] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let s = Selection::parse(&mut Cursor::new(&b, "t"), 1).unwrap();
        assert_eq!(s, regular(&[[2, 3, 4, 1]]));
        let mut c = Cursor::new(&b, "t");
        skip_selection(&mut c).unwrap();
        assert_eq!(c.remaining(), 0);
        // Version 1 (irregular, 4-byte numbers): two blocks of rank 1.
        let mut b = vec![2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&(4u32 + 4 + 16).to_le_bytes());
        for v in [1u32, 2, 0, 1, 5, 6] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let s = Selection::parse(&mut Cursor::new(&b, "t"), 1).unwrap();
        assert_eq!(
            s,
            Selection::Blocks(vec![(vec![0], vec![1]), (vec![5], vec![6])])
        );
        let mut c = Cursor::new(&b, "t");
        skip_selection(&mut c).unwrap();
        assert_eq!(c.remaining(), 0);
        // An unlimited count is refused as unsupported, a wrong rank as corrupt.
        let mut u = vec![2, 0, 0, 0, 3, 0, 0, 0, 1, 4, 1, 0, 0, 0];
        for v in [0u32, 1, u32::MAX, 1] {
            u.extend_from_slice(&v.to_le_bytes());
        }
        let e = Selection::parse(&mut Cursor::new(&u, "t"), 1).unwrap_err();
        assert!(e.to_string().contains("unlimited"), "{e}");
        assert!(Selection::parse(&mut Cursor::new(&u, "t"), 2).is_err());
    }
}
