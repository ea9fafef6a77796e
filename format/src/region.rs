//! Dataspace selections as libhdf5 serialises them (none, all, hyperslabs regular or not, points), and
//! dataset region references, which pair an object with such a selection.

use crate::error::{corrupt, unsupported, FormatError, Result};
use crate::io::Cursor;

/// A dataset region reference: the object header it points at (0 for a null reference) and the elements it
/// selects there.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionRef {
    /// Address of the referenced object's header; 0 for a null reference.
    pub object: u64,
    /// The selected elements ([`Selection::None`] for a null reference).
    pub selection: Selection,
}

impl RegionRef {
    /// Decodes the global heap object a region reference points at: the object's address, then its selection.
    pub(crate) fn parse(bytes: &[u8], offset_size: usize) -> Result<RegionRef> {
        let mut c = Cursor::new(bytes, "region reference");
        let object = c.addr(offset_size)?;
        let selection = Selection::parse(&mut c, None)?;
        Ok(RegionRef { object, selection })
    }
}

/// An HDF5 1.12 reference (`H5T_STD_REF`), each element of one of three kinds or null.
#[derive(Clone, Debug, PartialEq)]
pub enum Reference {
    /// A null reference.
    Null,
    /// An object: the address of its header.
    Object(u64),
    /// A dataset region.
    Region(RegionRef),
    /// An attribute: its object's header address and its name.
    Attribute { object: u64, name: String },
    /// A reference into another file: that file's name as stored, and the reference there (an object, a
    /// region or an attribute, its addresses those of that file).
    External {
        file: String,
        target: Box<Reference>,
    },
}

impl Reference {
    /// Decodes one stored element: kind, flags, then the encoded reference inline (objects in this file) or the
    /// length and global heap ID of its blob (the rest: regions, attributes, and any reference into another
    /// file, whose blob names that file after the object's token); `heap` fetches a heap object by (collection,
    /// index).
    pub(crate) fn parse<'h>(
        elem: &[u8],
        offset_size: usize,
        heap: &dyn Fn(u64, u32) -> Result<&'h [u8]>,
    ) -> Result<Reference> {
        let mut c = Cursor::new(elem, "reference");
        let kind = c.u8()?;
        if kind == 0 {
            return Ok(Reference::Null);
        }
        let flags = c.u8()?;
        let external = flags & 0x01 != 0;
        let blob;
        let mut b = if kind == 2 && !external {
            c
        } else {
            let _len = c.u32()?;
            let coll = c.addr(offset_size)?;
            let index = c.u32()?;
            blob = heap(coll, index)?;
            Cursor::new(blob, "reference")
        };
        let token = b.u8()? as usize;
        if token == 0 || token > 8 {
            return corrupt(format!("reference token of {token} bytes"));
        }
        let object = crate::io::le_uint(b.bytes(token)?);
        let file = if external {
            let n = b.u16()? as usize;
            Some(String::from_utf8_lossy(b.bytes(n)?).into_owned())
        } else {
            None
        };
        let target = match kind {
            2 => Reference::Object(object),
            3 => {
                // The selection's length, the dataspace's rank, then the selection.
                let _len = b.u32()?;
                let rank = b.u32()? as usize;
                let selection = Selection::parse(&mut b, Some(rank))?;
                Reference::Region(RegionRef { object, selection })
            }
            4 => {
                let n = b.u16()? as usize;
                let name = String::from_utf8_lossy(b.bytes(n)?).into_owned();
                Reference::Attribute { object, name }
            }
            k => return corrupt(format!("reference of kind {k}")),
        };
        Ok(match file {
            Some(file) => Reference::External {
                file,
                target: Box::new(target),
            },
            None => target,
        })
    }
}

/// A serialised rank: at most HDF5's 32, and `want` when given.
fn checked_rank(rank: u32, want: Option<usize>) -> Result<usize> {
    let rank = rank as usize;
    if rank > 32 || want.is_some_and(|w| w != rank) {
        return corrupt(format!("selection of rank {rank}"));
    }
    Ok(rank)
}

/// A selection of a dataspace's elements, as libhdf5 serialises it (in region references and virtual datasets).
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// No element.
    None,
    /// Every element.
    All,
    /// A regular hyperslab: per dimension start, stride, count, block.
    Regular(Vec<[u64; 4]>),
    /// A union of boxes, each (first corner, last corner), corners inclusive.
    Blocks(Vec<(Vec<u64>, Vec<u64>)>),
    /// Single elements, in their order.
    Points(Vec<Vec<u64>>),
}

/// An unlimited count or block of a [`Selection::Regular`] (a virtual dataset's unlimited mapping).
pub const UNLIMITED: u64 = u64::MAX;

/// libhdf5's `H5S_UNLIMITED` in a field of `size` bytes (all bits set).
fn unlimited(v: u64, size: usize) -> bool {
    size < 8 && v == (1u64 << (8 * size)) - 1 || v == u64::MAX
}

impl Selection {
    /// Decodes one serialised selection (`H5S_select_serialize`'s format); hyperslabs and points carry their
    /// rank, which must be `rank` when given.
    pub(crate) fn parse(c: &mut Cursor<'_>, rank: Option<usize>) -> Result<Selection> {
        Self::parse_with(c, rank, false)
    }

    /// [`Self::parse`] that also takes a regular hyperslab's unlimited count or block (a virtual dataset's
    /// unlimited mapping), kept as [`UNLIMITED`].
    pub(crate) fn parse_unlimited(c: &mut Cursor<'_>, rank: Option<usize>) -> Result<Selection> {
        Self::parse_with(c, rank, true)
    }

    fn parse_with(
        c: &mut Cursor<'_>,
        rank: Option<usize>,
        unlimited_ok: bool,
    ) -> Result<Selection> {
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
            2 => Self::parse_hyperslab(c, version, rank, unlimited_ok),
            1 => Self::parse_points(c, version, rank),
            k => corrupt(format!("selection type {k}")),
        }
    }

    fn parse_points(c: &mut Cursor<'_>, version: u32, rank: Option<usize>) -> Result<Selection> {
        let size = match version {
            1 => {
                c.skip(8)?; // reserved word, length
                4
            }
            2 => {
                let size = c.u8()? as usize;
                if !matches!(size, 2 | 4 | 8) {
                    return corrupt(format!("point selection of {size}-byte numbers"));
                }
                size
            }
            v => return corrupt(format!("point selection version {v}")),
        };
        let r = checked_rank(c.u32()?, rank)?;
        let n = c.uint(size)?;
        if n.saturating_mul(r as u64).saturating_mul(size as u64) > c.remaining() as u64 {
            return corrupt("point selection longer than its block");
        }
        let mut points = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let mut p = Vec::with_capacity(r);
            for _ in 0..r {
                p.push(c.uint(size)?);
            }
            points.push(p);
        }
        Ok(Selection::Points(points))
    }

    fn parse_hyperslab(
        c: &mut Cursor<'_>,
        version: u32,
        rank: Option<usize>,
        unlimited_ok: bool,
    ) -> Result<Selection> {
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
        let rank = checked_rank(c.u32()?, rank)?;
        if regular {
            let mut dims = Vec::with_capacity(rank);
            for _ in 0..rank {
                let mut d = [0u64; 4];
                for (i, v) in d.iter_mut().enumerate() {
                    *v = c.uint(size)?;
                    if unlimited(*v, size) {
                        // Only a count (2) or a block (3) may be unlimited.
                        if !unlimited_ok || i < 2 {
                            return unsupported("selection with an unlimited count or block");
                        }
                        *v = UNLIMITED;
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

    /// The selected elements of a dataspace of shape `dims`, as row-major element indices in libhdf5's order
    /// (row-major for hyperslabs, list order for points); more than `limit` elements is an error, as is an
    /// element outside `dims`.
    pub fn linear_indices(&self, dims: &[u64], limit: u64) -> Result<Vec<u64>> {
        self.indices(dims, &vec![0; dims.len()], dims, limit)
    }

    /// The selected elements' coordinates in `dims` as row-major indices into the box at `origin` of shape
    /// `extent` (which must hold them), in libhdf5's iteration order (row-major over the space). Elements
    /// outside `dims` are refused; at most `limit` elements.
    pub(crate) fn indices(
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
                if dims.iter().any(|&d| d > limit) {
                    return corrupt("selection larger than allowed");
                }
                let per: Vec<Vec<u64>> = dims.iter().map(|&d| (0..d).collect()).collect();
                product(&per, limit, linear)
            }
            Selection::Points(points) => {
                if points.len() as u64 > limit {
                    return corrupt("selection larger than allowed");
                }
                points
                    .iter()
                    .map(|p| {
                        if p.len() != dims.len() || p.iter().zip(dims).any(|(x, d)| x >= d) {
                            return Err(outside());
                        }
                        Ok(linear(p))
                    })
                    .collect()
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
                    if lo.iter().zip(hi).any(|(&a, &b)| b - a >= limit) {
                        return corrupt("selection larger than allowed");
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
    pub(crate) fn bounds(&self, dims: &[u64]) -> Option<(Vec<u64>, Vec<u64>)> {
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
            Selection::Points(points) => {
                let first = points.first()?;
                let mut lo = first.clone();
                let mut hi = first.clone();
                for p in points {
                    for i in 0..lo.len().min(p.len()) {
                        lo[i] = lo[i].min(p[i]);
                        hi[i] = hi[i].max(p[i]);
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
        let p = Selection::Points(vec![vec![3, 4], vec![0, 1]]);
        assert_eq!(p.indices(&dims, &[0, 0], &dims, 100).unwrap(), vec![19, 1]);
        assert_eq!(p.bounds(&dims), Some((vec![0, 1], vec![4, 4])));
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
        assert!(Selection::All
            .indices(&[1 << 40, 1], &[0, 0], &[1 << 40, 1], 1000)
            .is_err());
    }

    #[test]
    fn encodings_decode() {
        // Hyperslab version 3, regular, 4-byte numbers, rank 1: start 2, stride 3, count 4, block 1.
        let mut b = vec![2, 0, 0, 0, 3, 0, 0, 0, 1, 4, 1, 0, 0, 0];
        for v in [2u32, 3, 4, 1] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let mut c = Cursor::new(&b, "t");
        assert_eq!(
            Selection::parse(&mut c, Some(1)).unwrap(),
            regular(&[[2, 3, 4, 1]])
        );
        assert_eq!(c.remaining(), 0);
        // Hyperslab version 1 (irregular, 4-byte numbers): two blocks of rank 1.
        let mut b = vec![2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&(4u32 + 4 + 16).to_le_bytes());
        for v in [1u32, 2, 0, 1, 5, 6] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let mut c = Cursor::new(&b, "t");
        assert_eq!(
            Selection::parse(&mut c, None).unwrap(),
            Selection::Blocks(vec![(vec![0], vec![1]), (vec![5], vec![6])])
        );
        assert_eq!(c.remaining(), 0);
        // Points version 1: rank 2, two points.
        let mut b = vec![1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        for v in [2u32, 2, 1, 1, 5, 9] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(
            Selection::parse(&mut Cursor::new(&b, "t"), Some(2)).unwrap(),
            Selection::Points(vec![vec![1, 1], vec![5, 9]])
        );
        // An unlimited count is refused as unsupported, a wrong rank as corrupt.
        let mut u = vec![2, 0, 0, 0, 3, 0, 0, 0, 1, 4, 1, 0, 0, 0];
        for v in [0u32, 1, u32::MAX, 1] {
            u.extend_from_slice(&v.to_le_bytes());
        }
        let e = Selection::parse(&mut Cursor::new(&u, "t"), Some(1)).unwrap_err();
        assert!(e.to_string().contains("unlimited"), "{e}");
        assert!(Selection::parse(&mut Cursor::new(&u, "t"), Some(2)).is_err());
    }

    #[test]
    fn revised_references_decode_and_refuse_what_they_cannot_hold() {
        let no_heap = |_: u64, _: u32| -> Result<&'static [u8]> { corrupt("no heap") };
        let mut object = vec![2u8, 0, 8];
        object.extend_from_slice(&0xb3u64.to_le_bytes());
        object.resize(18, 0);
        assert_eq!(
            Reference::parse(&object, 8, &no_heap).unwrap(),
            Reference::Object(0xb3)
        );
        assert_eq!(
            Reference::parse(&[0; 18], 8, &no_heap).unwrap(),
            Reference::Null
        );
        // Into another file; a token of no bytes; a heap blob that is not there.
        assert!(Reference::parse(&[2, 1, 8, 0, 0], 8, &no_heap).is_err());
        assert!(Reference::parse(&[2, 0, 0, 0, 0], 8, &no_heap).is_err());
        let mut attr = vec![4u8, 0, 15, 0, 0, 0];
        attr.extend_from_slice(&0x40u64.to_le_bytes());
        attr.extend_from_slice(&2u32.to_le_bytes());
        assert!(Reference::parse(&attr, 8, &no_heap).is_err());
        let blob: &'static [u8] = &[8, 0xb3, 0, 0, 0, 0, 0, 0, 0, 4, 0, b'n', b'o', b't', b'e'];
        let heap = |coll: u64, index: u32| -> Result<&'static [u8]> {
            assert_eq!((coll, index), (0x40, 2));
            Ok(blob)
        };
        assert_eq!(
            Reference::parse(&attr, 8, &heap).unwrap(),
            Reference::Attribute {
                object: 0xb3,
                name: "note".into()
            }
        );
    }
}
