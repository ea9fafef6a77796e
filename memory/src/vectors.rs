//! The store's embeddings: row-major rows indexed by record row, kept in the store's precision (f16 by
//! default, so memory holds exactly what the file holds, at half the bytes of f32) and in fixed-size
//! shared chunks so a background index build can read a snapshot of the table while the store keeps
//! appending to it.

use std::ops::Range;
use std::sync::Arc;

use clawhdf5_ann::Row;
use half::f16;
use half::slice::HalfFloatSliceExt;

use crate::config::VectorPrecision;

const CHUNK_SHIFT: usize = 10;
/// Rows per chunk.
pub const CHUNK_ROWS: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_ROWS - 1;

/// The chunks, each `CHUNK_ROWS` rows (the last possibly shorter), in one precision.
#[derive(Clone, Debug, PartialEq)]
enum Chunks {
    F32(Vec<Arc<Vec<f32>>>),
    F16(Vec<Arc<Vec<f16>>>),
}

/// An element type the table can hold.
trait Elem: Copy + Clone + Default + Send + Sync + 'static {
    fn write(dst: &mut [Self], src: &[f32]);
    fn row(values: &[Self]) -> Row<'_>;
}

impl Elem for f32 {
    fn write(dst: &mut [f32], src: &[f32]) {
        dst.copy_from_slice(src);
    }
    fn row(values: &[f32]) -> Row<'_> {
        Row::F32(values)
    }
}

impl Elem for f16 {
    fn write(dst: &mut [f16], src: &[f32]) {
        // Hardware conversion where the CPU has it (F16C / NEON).
        dst.convert_from_f32_slice(src);
    }
    fn row(values: &[f16]) -> Row<'_> {
        Row::F16(values)
    }
}

/// Embeddings by record row. Cloning is cheap (chunks are shared, copied only when written afterwards).
#[derive(Clone, Debug, PartialEq)]
pub struct VectorTable {
    dim: usize,
    chunks: Chunks,
    present: Vec<bool>,
}

impl Default for VectorTable {
    fn default() -> Self {
        VectorTable::new(0)
    }
}

fn push_row<E: Elem>(chunks: &mut Vec<Arc<Vec<E>>>, row: usize, d: usize, v: Option<&[f32]>) {
    if row & CHUNK_MASK == 0 {
        chunks.push(Arc::new(Vec::with_capacity(CHUNK_ROWS * d)));
    }
    if let Some(last) = chunks.last_mut() {
        // Copies the chunk only when a snapshot still shares it.
        let chunk = Arc::make_mut(last);
        let at = chunk.len();
        chunk.resize(at + d, E::default());
        if let Some(v) = v.filter(|v| v.len() == d) {
            E::write(&mut chunk[at..], v);
        }
    }
}

/// [`push_row`] for each of `rows`, the chunks they start converted on every core.
fn push_rows<E: Elem>(
    chunks: &mut Vec<Arc<Vec<E>>>,
    row: usize,
    d: usize,
    rows: &[Option<&[f32]>],
) {
    use rayon::prelude::*;
    // The rows that fit in the last chunk go there first, so the rest start new chunks.
    let room = CHUNK_ROWS.wrapping_sub(row) & CHUNK_MASK;
    let (head, tail) = rows.split_at(room.min(rows.len()));
    for (i, v) in head.iter().enumerate() {
        push_row(chunks, row + i, d, *v);
    }
    let fresh: Vec<Arc<Vec<E>>> = tail
        .par_chunks(CHUNK_ROWS)
        .map(|part| {
            let mut chunk = Vec::with_capacity(CHUNK_ROWS * d);
            for v in part {
                let at = chunk.len();
                chunk.resize(at + d, E::default());
                if let Some(v) = v.filter(|v| v.len() == d) {
                    E::write(&mut chunk[at..], v);
                }
            }
            Arc::new(chunk)
        })
        .collect();
    chunks.extend(fresh);
}

fn set_row<E: Elem>(chunks: &mut [Arc<Vec<E>>], i: usize, d: usize, v: Option<&[f32]>) {
    let at = (i & CHUNK_MASK) * d;
    let chunk = Arc::make_mut(&mut chunks[i >> CHUNK_SHIFT]);
    let slot = &mut chunk[at..at + d];
    match v.filter(|v| v.len() == d) {
        Some(v) => E::write(slot, v),
        None => slot.fill(E::default()),
    }
}

fn run<E: Elem>(chunks: &[Arc<Vec<E>>], start: usize, take: usize, d: usize) -> Row<'_> {
    let chunk = &chunks[start >> CHUNK_SHIFT];
    let first = start & CHUNK_MASK;
    E::row(&chunk[first * d..(first + take) * d])
}

fn check_chunks<E>(dim: usize, rows: usize, chunks: &[Vec<E>]) -> Result<(), String> {
    let expected = if dim == 0 {
        0
    } else {
        rows.div_ceil(CHUNK_ROWS)
    };
    if chunks.len() != expected {
        return Err(format!(
            "{} chunks do not hold {rows} rows of dimension {dim}",
            chunks.len()
        ));
    }
    for (i, c) in chunks.iter().enumerate() {
        let want = CHUNK_ROWS.min(rows - i * CHUNK_ROWS) * dim;
        if c.len() != want {
            return Err(format!(
                "chunk {i} holds {} values, expected {want}",
                c.len()
            ));
        }
    }
    Ok(())
}

impl VectorTable {
    /// An empty f32 table of the given dimension (0 for a keyword-only store).
    pub fn new(dim: usize) -> Self {
        VectorTable::with_precision(dim, VectorPrecision::F32)
    }

    /// An empty table of the given dimension holding its rows in `precision`.
    pub fn with_precision(dim: usize, precision: VectorPrecision) -> Self {
        let chunks = match precision {
            VectorPrecision::F32 => Chunks::F32(Vec::new()),
            VectorPrecision::F16 => Chunks::F16(Vec::new()),
        };
        VectorTable {
            dim,
            chunks,
            present: Vec::new(),
        }
    }

    /// Build an f32 table from a flat row-major buffer and presence flags.
    pub fn from_parts(dim: usize, data: Vec<f32>, present: Vec<bool>) -> Result<Self, String> {
        if data.len() != dim * present.len() {
            return Err(format!(
                "{} values do not make {} rows of dimension {dim}",
                data.len(),
                present.len()
            ));
        }
        let chunks = if dim == 0 {
            Vec::new()
        } else {
            data.chunks(CHUNK_ROWS * dim).map(<[f32]>::to_vec).collect()
        };
        VectorTable::from_chunks(dim, chunks, present)
    }

    /// Build an f32 table from chunks of [`CHUNK_ROWS`] rows (the last may be shorter) and presence flags.
    pub fn from_chunks(
        dim: usize,
        chunks: Vec<Vec<f32>>,
        present: Vec<bool>,
    ) -> Result<Self, String> {
        check_chunks(dim, present.len(), &chunks)?;
        Ok(VectorTable {
            dim,
            chunks: Chunks::F32(chunks.into_iter().map(Arc::new).collect()),
            present,
        })
    }

    /// Build an f16 table from chunks of [`CHUNK_ROWS`] rows (the last may be shorter) and presence flags.
    pub fn from_half_chunks(
        dim: usize,
        chunks: Vec<Vec<f16>>,
        present: Vec<bool>,
    ) -> Result<Self, String> {
        check_chunks(dim, present.len(), &chunks)?;
        Ok(VectorTable {
            dim,
            chunks: Chunks::F16(chunks.into_iter().map(Arc::new).collect()),
            present,
        })
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The precision rows are held in.
    pub fn precision(&self) -> VectorPrecision {
        match self.chunks {
            Chunks::F32(_) => VectorPrecision::F32,
            Chunks::F16(_) => VectorPrecision::F16,
        }
    }

    /// Number of rows (with or without a vector).
    pub fn rows(&self) -> usize {
        self.present.len()
    }

    /// Bytes the rows take in memory.
    pub fn memory_bytes(&self) -> usize {
        match &self.chunks {
            Chunks::F32(c) => c.iter().map(|c| c.capacity() * 4).sum(),
            Chunks::F16(c) => c.iter().map(|c| c.capacity() * 2).sum(),
        }
    }

    /// Reads every cache line of the rows once (brings them into the CPU caches); returns a checksum.
    pub fn touch(&self) -> u64 {
        match &self.chunks {
            Chunks::F32(c) => c
                .iter()
                .flat_map(|c| c.iter().step_by(16))
                .map(|x| x.to_bits() as u64)
                .sum(),
            Chunks::F16(c) => c
                .iter()
                .flat_map(|c| c.iter().step_by(32))
                .map(|x| x.to_bits() as u64)
                .sum(),
        }
    }

    /// The rows in `range` as contiguous runs of values, in order (one run per chunk touched).
    pub fn runs(&self, range: Range<usize>) -> impl Iterator<Item = Row<'_>> + '_ {
        let d = self.dim;
        let end = range.end.min(self.rows());
        let mut start = range.start.min(end);
        std::iter::from_fn(move || {
            if start >= end || d == 0 {
                return None;
            }
            let take = (CHUNK_ROWS - (start & CHUNK_MASK)).min(end - start);
            let r = match &self.chunks {
                Chunks::F32(c) => run(c, start, take, d),
                Chunks::F16(c) => run(c, start, take, d),
            };
            start += take;
            Some(r)
        })
    }

    /// Whether row `i` has a vector.
    pub fn has(&self, i: usize) -> bool {
        self.present.get(i).copied().unwrap_or(false)
    }

    /// Row `i` (zeros when it has none; empty for a keyword-only table).
    pub fn row(&self, i: usize) -> Row<'_> {
        let d = self.dim;
        if d == 0 {
            return Row::F32(&[]);
        }
        match &self.chunks {
            Chunks::F32(c) => run(c, i, 1, d),
            Chunks::F16(c) => run(c, i, 1, d),
        }
    }

    /// Row `i` as f32 values.
    pub fn row_f32(&self, i: usize) -> Vec<f32> {
        self.row(i).to_f32().into_owned()
    }

    /// Append a row; `None` stores zeros and marks it absent.
    pub fn push(&mut self, v: Option<&[f32]>) {
        let d = self.dim;
        let row = self.rows();
        if d > 0 {
            match &mut self.chunks {
                Chunks::F32(c) => push_row(c, row, d, v),
                Chunks::F16(c) => push_row(c, row, d, v),
            }
        }
        self.present.push(matches!(v, Some(v) if v.len() == d));
    }

    /// [`Self::push`] each of `rows`, converting them on every core (for a large batch).
    pub fn push_many(&mut self, rows: &[Option<&[f32]>]) {
        let d = self.dim;
        if d > 0 {
            let at = self.rows();
            match &mut self.chunks {
                Chunks::F32(c) => push_rows(c, at, d, rows),
                Chunks::F16(c) => push_rows(c, at, d, rows),
            }
        }
        self.present
            .extend(rows.iter().map(|v| matches!(v, Some(v) if v.len() == d)));
    }

    /// Replace row `i`.
    pub fn set(&mut self, i: usize, v: Option<&[f32]>) {
        let d = self.dim;
        if i >= self.rows() || d == 0 {
            return;
        }
        match &mut self.chunks {
            Chunks::F32(c) => set_row(c, i, d, v),
            Chunks::F16(c) => set_row(c, i, d, v),
        }
        self.present[i] = matches!(v, Some(v) if v.len() == d);
    }

    /// Change the dimension of an empty-of-vectors table (first embedding seen by a keyword-only store).
    pub fn set_dim(&mut self, dim: usize) {
        let rows = self.rows();
        *self = VectorTable::with_precision(dim, self.precision());
        for _ in 0..rows {
            self.push(None);
        }
    }
}

/// Scale `v` to unit length (left as is when it is all zeros).
pub fn normalize(v: &mut [f32]) {
    let n = sum_of_squares(v).sqrt();
    if n > 0.0 && n.is_finite() {
        v.iter_mut().for_each(|x| *x /= n);
    } else if n.is_infinite() && all_finite(v) {
        // Finite values whose squares overflow f32.
        let n = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        v.iter_mut().for_each(|x| *x = (f64::from(*x) / n) as f32);
    }
}

/// Sum of the squares, in 16 running sums that the compiler keeps in vector registers (a single running sum
/// is one long chain of dependent additions).
fn sum_of_squares(v: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0f32; LANES];
    let mut chunks = v.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x * x;
        }
    }
    let rest: f32 = chunks.remainder().iter().map(|x| x * x).sum();
    acc.iter().sum::<f32>() + rest
}

/// Whether no value is NaN or infinite (one pass without early exit, so it vectorises).
pub fn all_finite(v: &[f32]) -> bool {
    v.iter().fold(true, |ok, x| ok & x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(r: Row<'_>) -> Vec<f32> {
        r.to_f32().into_owned()
    }

    #[test]
    fn push_many_matches_one_at_a_time() {
        let values: Vec<Vec<f32>> = (0..3 * CHUNK_ROWS + 5)
            .map(|i| vec![i as f32 * 0.25, -(i as f32), 1.0])
            .collect();
        let rows: Vec<Option<&[f32]>> = values
            .iter()
            .enumerate()
            .map(|(i, v)| match i % 7 {
                3 => None,
                5 => Some(&v[..2]),
                _ => Some(&v[..]),
            })
            .collect();
        for precision in [VectorPrecision::F32, VectorPrecision::F16] {
            // Starting on a chunk boundary, inside a chunk, and one row short of its end.
            for before in [0, 1, 7, CHUNK_ROWS - 1, CHUNK_ROWS] {
                let mut one = VectorTable::with_precision(3, precision);
                let mut many = VectorTable::with_precision(3, precision);
                for v in &rows[..before] {
                    one.push(*v);
                    many.push(*v);
                }
                for v in &rows[before..] {
                    one.push(*v);
                }
                many.push_many(&rows[before..]);
                assert_eq!(one, many, "{precision:?} after {before} rows");
            }
        }
        let mut empty = VectorTable::new(0);
        empty.push_many(&rows[..4]);
        assert_eq!(empty.rows(), 4);
    }

    #[test]
    fn push_set_and_read() {
        let mut t = VectorTable::new(2);
        t.push(Some(&[1.0, 2.0]));
        t.push(None);
        t.push(Some(&[1.0]));
        assert_eq!(t.rows(), 3);
        assert!(t.has(0) && !t.has(1) && !t.has(2));
        t.set(1, Some(&[3.0, 4.0]));
        assert_eq!(t.row(1), Row::F32(&[3.0, 4.0]));
        assert!(VectorTable::from_parts(2, vec![0.0; 3], vec![true]).is_err());
    }

    #[test]
    fn half_table_rounds_to_f16_and_reads_back() {
        let mut t = VectorTable::with_precision(3, VectorPrecision::F16);
        t.push(Some(&[0.5, -0.25, 0.1]));
        t.push(None);
        assert_eq!(t.precision(), VectorPrecision::F16);
        let back = t.row_f32(0);
        assert_eq!(back[..2], [0.5, -0.25]);
        assert!((back[2] - 0.1).abs() < 1e-3);
        assert!(matches!(t.row(0), Row::F16(_)));
        t.set(1, Some(&[1.0, 0.0, 0.0]));
        assert!(t.has(1));
        assert_eq!(t.row_f32(1), vec![1.0, 0.0, 0.0]);
        t.set(1, None);
        assert!(!t.has(1));
        assert_eq!(t.row_f32(1), vec![0.0; 3]);
        assert_eq!(t.memory_bytes(), CHUNK_ROWS * 3 * 2);
        let chunks = vec![vec![f16::from_f32(1.0); 6]];
        let h = VectorTable::from_half_chunks(3, chunks, vec![true, false]).unwrap();
        assert_eq!(h.row_f32(0), vec![1.0; 3]);
        assert!(
            VectorTable::from_half_chunks(3, vec![vec![f16::ZERO; 5]], vec![true, true]).is_err()
        );
    }

    #[test]
    fn rows_span_chunks_and_snapshots_stay_unchanged() {
        for precision in [VectorPrecision::F32, VectorPrecision::F16] {
            let n = CHUNK_ROWS * 2 + 5;
            let mut t = VectorTable::with_precision(3, precision);
            for i in 0..n {
                t.push(Some(&[i as f32, 0.0, 1.0]));
            }
            let snap = t.clone();
            t.set(1, Some(&[9.0, 9.0, 9.0]));
            t.push(Some(&[7.0, 7.0, 7.0]));
            assert_eq!(f32s(snap.row(1)), [1.0, 0.0, 1.0]);
            assert_eq!(snap.rows(), n);
            assert_eq!(f32s(t.row(1)), [9.0, 9.0, 9.0]);
            assert_eq!(f32s(t.row(n)), [7.0, 7.0, 7.0]);
            assert_eq!(f32s(t.row(CHUNK_ROWS + 3))[0], (CHUNK_ROWS + 3) as f32);
            let flat: Vec<f32> = t
                .runs(CHUNK_ROWS - 2..CHUNK_ROWS + 2)
                .flat_map(f32s)
                .collect();
            let want: Vec<f32> = (CHUNK_ROWS - 2..CHUNK_ROWS + 2)
                .flat_map(|i| [i as f32, 0.0, 1.0])
                .collect();
            assert_eq!(flat, want);
            assert_eq!(t.runs(CHUNK_ROWS - 2..CHUNK_ROWS + 2).count(), 2);
        }
        let mut t = VectorTable::new(3);
        for i in 0..CHUNK_ROWS + 7 {
            t.push(Some(&[i as f32, 0.0, 1.0]));
        }
        let back = VectorTable::from_parts(3, t.runs(0..t.rows()).flat_map(f32s).collect(), {
            (0..t.rows()).map(|i| t.has(i)).collect()
        })
        .unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn from_chunks_checks_sizes() {
        assert!(VectorTable::from_chunks(2, vec![vec![0.0; 4]], vec![true, true]).is_ok());
        assert!(VectorTable::from_chunks(2, vec![vec![0.0; 3]], vec![true, true]).is_err());
        assert!(VectorTable::from_chunks(2, vec![], vec![true]).is_err());
    }

    #[test]
    fn keyword_only_table_then_first_dimension() {
        let mut t = VectorTable::with_precision(0, VectorPrecision::F16);
        t.push(None);
        t.push(None);
        assert_eq!(t.row(1), Row::F32(&[]));
        t.set_dim(2);
        assert_eq!(t.rows(), 2);
        assert_eq!(t.precision(), VectorPrecision::F16);
        assert_eq!(f32s(t.row(1)), [0.0, 0.0]);
        t.set(0, Some(&[1.0, 0.0]));
        assert!(t.has(0) && !t.has(1));
    }

    #[test]
    fn normalizes_long_and_huge_vectors() {
        for len in [1, 15, 16, 17, 384, 1001] {
            let mut v: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin() + 0.01).collect();
            normalize(&mut v);
            let n: f64 = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            assert!((n - 1.0).abs() < 1e-5, "length {len}: norm {n}");
        }
        let mut big = vec![3e30f32, 4e30];
        normalize(&mut big);
        assert!(
            (big[0] - 0.6).abs() < 1e-6 && (big[1] - 0.8).abs() < 1e-6,
            "{big:?}"
        );
        assert!(all_finite(&big));
        assert!(!all_finite(&[1.0, f32::NAN]) && !all_finite(&[f32::INFINITY]));
    }

    #[test]
    fn normalizes() {
        let mut v = [3.0, 4.0];
        normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6);
        let mut z = [0.0, 0.0];
        normalize(&mut z);
        assert_eq!(z, [0.0, 0.0]);
    }
}
