//! Selections serialised as libhdf5 stores them in a dataset region reference's heap object, in versions that
//! HDF5 1.10 and later read: none and all (version 1), points and unions of blocks with 4-byte coordinates
//! (version 1), regular hyperslabs with 8-byte fields (version 2).

use crate::error::{invalid, unsupported, Result};
use crate::io::PutLe;
use crate::region::{Selection, UNLIMITED};

/// Selection types as libhdf5 numbers them.
const NONE: u32 = 0;
const POINTS: u32 = 1;
const HYPERSLABS: u32 = 2;
const ALL: u32 = 3;

impl Selection {
    /// The selection serialised for a region reference to a dataset of shape `dims`; an error names any
    /// element outside `dims`, a rank that differs, an empty block or count, or overlapping regular blocks.
    pub fn encode_within(&self, dims: &[u64]) -> Result<Vec<u8>> {
        let rank = dims.len();
        let mut out = Vec::new();
        match self {
            Selection::None | Selection::All => {
                out.put_u32(if matches!(self, Selection::None) {
                    NONE
                } else {
                    ALL
                });
                out.put_u32(1);
                out.put_u32(0);
                out.put_u32(0);
            }
            Selection::Points(points) => {
                version_1(&mut out, POINTS, rank, points.len(), rank)?;
                for p in points {
                    check_rank(p.len(), rank, "point")?;
                    for (&x, &d) in p.iter().zip(dims) {
                        if x >= d {
                            return invalid(format!(
                                "point {p:?} outside a dataset of shape {dims:?}"
                            ));
                        }
                        out.put_u32(small(x)?);
                    }
                }
            }
            Selection::Blocks(blocks) => {
                version_1(&mut out, HYPERSLABS, rank, blocks.len(), 2 * rank)?;
                for (lo, hi) in blocks {
                    check_rank(lo.len(), rank, "block corner")?;
                    check_rank(hi.len(), rank, "block corner")?;
                    let inside = lo
                        .iter()
                        .zip(hi)
                        .zip(dims)
                        .all(|((&a, &b), &d)| a <= b && b < d);
                    if !inside {
                        return invalid(format!(
                            "block {lo:?}..={hi:?} empty or outside a dataset of shape {dims:?}"
                        ));
                    }
                    for &x in lo.iter().chain(hi) {
                        out.put_u32(small(x)?);
                    }
                }
            }
            Selection::Regular(per_dim) => {
                check_rank(per_dim.len(), rank, "hyperslab")?;
                out.put_u32(HYPERSLABS);
                out.put_u32(2);
                out.push(1); // regular
                out.put_u32(length(4, rank, 32)?);
                out.put_u32(small(rank as u64)?);
                for (&[start, stride, count, block], &d) in per_dim.iter().zip(dims) {
                    check_regular(start, stride, count, block, d)?;
                    for v in [start, stride, count, block] {
                        out.put_u64(v);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The header of a version-1 point or block selection: `n` items of `per_item` 4-byte coordinates follow.
fn version_1(out: &mut Vec<u8>, kind: u32, rank: usize, n: usize, per_item: usize) -> Result<()> {
    out.put_u32(kind);
    out.put_u32(1);
    out.put_u32(0);
    out.put_u32(length(8, n.saturating_mul(per_item), 4)?);
    out.put_u32(small(rank as u64)?);
    out.put_u32(small(n as u64)?);
    Ok(())
}

fn check_rank(got: usize, want: usize, what: &str) -> Result<()> {
    if got != want {
        return invalid(format!("{what} of rank {got} in a dataset of rank {want}"));
    }
    Ok(())
}

/// One dimension of a regular hyperslab: blocks of `block` elements every `stride`, `count` times from `start`,
/// all inside `dim` elements and not overlapping.
fn check_regular(start: u64, stride: u64, count: u64, block: u64, dim: u64) -> Result<()> {
    let shown = || format!("start {start}, stride {stride}, count {count}, block {block}");
    if count == UNLIMITED || block == UNLIMITED {
        return unsupported("a region reference with an unlimited hyperslab");
    }
    if count == 0 || block == 0 || stride == 0 {
        return invalid(format!("empty hyperslab ({})", shown()));
    }
    if count > 1 && stride < block {
        return invalid(format!("hyperslab blocks overlap ({})", shown()));
    }
    let end = stride
        .checked_mul(count - 1)
        .and_then(|x| x.checked_add(start))
        .and_then(|x| x.checked_add(block));
    if end.is_none_or(|e| e > dim) {
        return invalid(format!(
            "hyperslab ({}) outside a dimension of {dim}",
            shown()
        ));
    }
    Ok(())
}

/// A count or coordinate in a 4-byte field.
fn small(v: u64) -> Result<u32> {
    u32::try_from(v).map_err(|_| {
        crate::FormatError::Unsupported(format!(
            "a point or block selection with a coordinate or count of {v} (past 4 bytes; use a regular hyperslab)"
        ))
    })
}

/// The length field: `fixed` bytes plus `n` fields of `each` bytes.
fn length(fixed: usize, n: usize, each: usize) -> Result<u32> {
    n.checked_mul(each)
        .and_then(|x| x.checked_add(fixed))
        .and_then(|x| u32::try_from(x).ok())
        .ok_or_else(|| crate::FormatError::Invalid("selection too large to serialise".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Cursor;

    fn round_trip(s: Selection, dims: &[u64]) {
        let bytes = s.encode_within(dims).unwrap();
        let back =
            Selection::parse(&mut Cursor::new(&bytes, "selection"), Some(dims.len())).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn selections_read_back_as_written() {
        round_trip(Selection::None, &[4, 5]);
        round_trip(Selection::All, &[4, 5]);
        round_trip(Selection::Points(vec![vec![0, 1], vec![3, 4]]), &[4, 5]);
        round_trip(
            Selection::Blocks(vec![(vec![0, 0], vec![1, 2]), (vec![3, 3], vec![3, 4])]),
            &[4, 5],
        );
        round_trip(
            Selection::Regular(vec![[1, 2, 2, 1], [0, 1, 1, 5]]),
            &[4, 5],
        );
        round_trip(Selection::Regular(vec![[0, 1, 1, 1 << 40]]), &[1 << 40]);
    }

    #[test]
    fn selections_outside_or_malformed_are_refused() {
        let dims = [4, 5];
        for bad in [
            Selection::Points(vec![vec![4, 0]]),
            Selection::Points(vec![vec![0]]),
            Selection::Blocks(vec![(vec![2, 0], vec![1, 0])]),
            Selection::Blocks(vec![(vec![0, 0], vec![0, 5])]),
            Selection::Regular(vec![[0, 1, 1, 1]]),
            Selection::Regular(vec![[0, 1, 0, 1], [0, 1, 1, 1]]),
            Selection::Regular(vec![[0, 1, 2, 2], [0, 1, 1, 1]]),
            Selection::Regular(vec![[3, 1, 2, 1], [0, 1, 1, 1]]),
            Selection::Regular(vec![[0, u64::MAX, 3, 1], [0, 1, 1, 1]]),
        ] {
            assert!(bad.encode_within(&dims).is_err(), "{bad:?}");
        }
        assert!(Selection::Points(vec![vec![1 << 33]])
            .encode_within(&[1 << 34])
            .is_err());
    }
}
