//! Virtual datasets that grow with their sources: unlimited mappings and printf-style source names resolved
//! against the sources as they are now, and the extent the dataset takes from them in either of libhdf5's
//! views (see [`super::vds`]'s notes).

use crate::error::{corrupt, unsupported, FormatError, Result};
use crate::read::file::H5File;
use crate::read::vds::{named_file, Mapping, VdsView};
use crate::region::{Selection, UNLIMITED};
use std::collections::HashMap;

/// The extent of a virtual dataset of `mappings` whose stored extent is `dims`, where mappings grow with their
/// sources, in `view`; `None` when none does (the stored extent stands).
pub(super) fn extent(
    file: &H5File,
    mappings: Vec<Mapping>,
    dims: &[u64],
    view: VdsView,
) -> Result<Option<Vec<u64>>> {
    let grows: Vec<usize> = mappings
        .iter()
        .filter_map(|m| unlimited_dim(&m.virtual_sel))
        .collect();
    if grows.is_empty() {
        return Ok(None);
    }
    // Per dimension: how far the growing mappings reach (the largest, or in the first-missing view the
    // smallest), and how far the fixed ones do (a floor in either view).
    let mut growing: Vec<Option<u64>> = vec![None; dims.len()];
    let mut fixed = vec![0u64; dims.len()];
    let mut opened = HashMap::new();
    // The whole space any selection could reach: bounds are taken within it.
    let huge = vec![u64::MAX; dims.len()];
    for m in mappings {
        match (unlimited_dim(&m.virtual_sel), &m.virtual_sel) {
            (Some(v_dim), Selection::Regular(v)) => {
                let pattern = v[v_dim];
                let reach = if is_printf(&m.file) || is_printf(&m.dataset) {
                    // Block k of the virtual pattern from source k, as many as are found.
                    let found = resolve(file, vec![m.clone()], &mut opened, None)?.len() as u64;
                    match (view, found) {
                        (_, 0) => 0,
                        // The first missing source's block starts where the extent ends.
                        (VdsView::FirstMissing, _) => {
                            found.saturating_mul(pattern[1]).saturating_add(pattern[0])
                        }
                        (VdsView::LastAvailable, _) => {
                            end_of(pattern, found.saturating_mul(pattern[3]))
                        }
                    }
                } else {
                    match (view, unlimited_positions(file, &m, v, v_dim, &mut opened)?) {
                        (_, None) => 0,
                        (VdsView::FirstMissing, Some(n)) => first_missing_end(pattern, n),
                        (VdsView::LastAvailable, Some(n)) => end_of(pattern, n),
                    }
                };
                let slot = &mut growing[v_dim];
                *slot = Some(match (*slot, view) {
                    (None, _) => reach,
                    (Some(r), VdsView::FirstMissing) => r.min(reach),
                    (Some(r), VdsView::LastAvailable) => r.max(reach),
                });
            }
            // An "all" selection covers whatever the extent is: it reaches no further.
            (_, Selection::All) => {}
            // A fixed mapping reaches as far as its selection into every growing dimension.
            _ => {
                if let Some((origin, extent)) = m.virtual_sel.bounds(&huge) {
                    for &d in &grows {
                        fixed[d] = fixed[d].max(origin[d].saturating_add(extent[d]));
                    }
                }
            }
        }
    }
    let mut out = dims.to_vec();
    for &d in &grows {
        out[d] = growing[d].unwrap_or(0).max(fixed[d]);
    }
    Ok(Some(out))
}

/// The source selection of a printf-style block (`v`'s box along every dimension, a block of it along `v_dim`)
/// whose first `keep` positions along `v_dim` remain: the first elements of `source` (in row-major order, as
/// libhdf5 pairs a mapping's elements), as many as those positions hold. `None` unless both the kept virtual
/// elements and the source's first elements are boxes: the block's dimensions before `v_dim` are 1, and the
/// source (all of a dataset of shape `src_shape`, or one box) is cut along its first dimension longer than 1
/// into whole rows.
fn cut_source(
    source: &Selection,
    src_shape: &[u64],
    v: &[[u64; 4]],
    v_dim: usize,
    keep: u64,
) -> Option<Selection> {
    if v.iter().enumerate().any(|(i, x)| i != v_dim && x[2] != 1)
        || v[..v_dim].iter().any(|x| x[3] != 1)
    {
        return None;
    }
    let n = v[v_dim + 1..]
        .iter()
        .try_fold(keep, |a, x| a.checked_mul(x[3]))?;
    let mut boxes: Vec<[u64; 4]> = match source {
        Selection::All => src_shape.iter().map(|&len| [0, 1, 1, len]).collect(),
        Selection::Regular(s) if s.iter().all(|x| x[2] == 1) => s.clone(),
        _ => return None,
    };
    if boxes.is_empty() {
        return None;
    }
    let j = boxes.iter().position(|x| x[3] > 1).unwrap_or(0);
    let row = boxes[j + 1..]
        .iter()
        .try_fold(1u64, |a, x| a.checked_mul(x[3]))?;
    if row == 0 || n % row != 0 || n / row > boxes.get(j)?[3] {
        return None;
    }
    boxes[j][3] = n / row;
    Some(Selection::Regular(boxes))
}

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
/// selection in the result is finite, and with `extent` none reaches past it (the first-missing view's extent
/// can end before some mapping does). Source files are opened into `opened` (by name; `None` when missing).
pub(super) fn resolve(
    file: &H5File,
    mappings: Vec<Mapping>,
    opened: &mut HashMap<String, Option<H5File>>,
    extent: Option<&[u64]>,
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
                let Some(src_shape) = src
                    .and_then(|f| f.dataset(&dname).ok())
                    .map(|d| d.shape().to_vec())
                else {
                    break;
                };
                let at = k
                    .checked_mul(stride)
                    .and_then(|x| x.checked_add(start))
                    .ok_or_else(|| {
                        FormatError::Corrupt("virtual dataset selection beyond 2^64".into())
                    })?;
                let end = extent.and_then(|e| e.get(v_dim)).copied();
                if end.is_some_and(|end| at >= end) {
                    break;
                }
                let mut d = v.clone();
                d[v_dim] = [at, 1, 1, block];
                let mut source = m.source.clone();
                if let Some(end) = end.filter(|&end| at.saturating_add(block) > end) {
                    // The first-missing view's extent cuts this block: its first rows map from the source's
                    // first elements.
                    d[v_dim][3] = end - at;
                    source = cut_source(&source, &src_shape, v, v_dim, end - at).ok_or_else(|| {
                        FormatError::Unsupported(
                            "printf-style virtual dataset mapping of this shape cut short by the first-missing view"
                                .into(),
                        )
                    })?;
                }
                out.push(Mapping {
                    file: fname,
                    dataset: dname,
                    source,
                    virtual_sel: Selection::Regular(d),
                });
            }
            continue;
        }
        // Unlimited: as many positions as the source selection has inside the source's extent (a missing
        // source maps none: its elements keep the fill value).
        let mut n_virtual = unlimited_positions(file, &m, v, v_dim, opened)?.unwrap_or(0);
        if let Some(end) = extent.and_then(|e| e.get(v_dim)) {
            n_virtual = n_virtual.min(positions_below(v[v_dim], *end));
        }
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

/// How many positions along `v_dim` an unlimited mapping maps now: as many elements as its source selection
/// has inside the source's current extent, over the virtual side's elements a position (`None` for a
/// missing source).
fn unlimited_positions(
    file: &H5File,
    m: &Mapping,
    v: &[[u64; 4]],
    v_dim: usize,
    opened: &mut HashMap<String, Option<H5File>>,
) -> Result<Option<u64>> {
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
        return Ok(None);
    };
    let elements = positions_below(s[s_dim], extent).saturating_mul(per_position(s, s_dim));
    let per_v = per_position(v, v_dim);
    if per_v == 0 || !elements.is_multiple_of(per_v) {
        return unsupported("unlimited virtual dataset mapping whose sides' slices differ in size");
    }
    Ok(Some(elements / per_v))
}

/// Where the first `n` coordinates of a pattern end: one past the last (0 for none).
fn end_of(pattern: [u64; 4], n: u64) -> u64 {
    last_position(pattern, n).map_or(0, |p| p.saturating_add(1))
}

/// Where the first-missing view ends a pattern that has `n` coordinates of data: past the last, or — when the
/// last block is whole — at the next block's start (the pattern's start when `n` is 0), as libhdf5 takes it.
fn first_missing_end(pattern: [u64; 4], n: u64) -> u64 {
    let [start, stride, _, block] = pattern;
    if block == UNLIMITED || block == stride || block == 0 {
        return start.saturating_add(n);
    }
    let (whole, rest) = (n / block, n % block);
    let at = whole.saturating_mul(stride).saturating_add(start);
    if rest > 0 {
        at.saturating_add(rest)
    } else {
        at
    }
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
