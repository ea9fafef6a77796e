//! The record columns under `/records`: how each field of a row range becomes an HDF5 array, and which
//! columns a kind of change touches (so a checkpoint rewrites only those).

use std::ops::Range;

use clawhdf5_ann::Row;
use clawhdf5_format::{Array, Data};
use half::f16;

use crate::config::{StoreConfig, VectorPrecision};
use crate::dictionary::{column_value, Dictionaries, DICTIONARY_COLUMNS};
use crate::error::{MemoryError, Result};
use crate::record::Record;
use crate::vectors::VectorTable;

/// Stored in place of "no event time".
pub const NONE_TIME: i64 = i64::MIN;

/// Which kind of change rewrites a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnGroup {
    /// Set when the record is saved, never changed.
    Fixed,
    /// The text and what derives from it (embedding).
    Text,
    /// Tags, importance, tier, supersession, tombstone.
    Meta,
    /// Access statistics.
    Access,
}

/// One column's rows, ready to write.
pub struct Column {
    /// Dataset name under `/records`.
    pub name: &'static str,
    /// The rows.
    pub array: Array,
    /// Compress with deflate + shuffle.
    pub deflate: bool,
}

/// The groups every column belongs to, in file order (embedding columns only when the store has vectors).
pub const COLUMN_GROUPS: [(&str, ColumnGroup); 20] = [
    ("id", ColumnGroup::Fixed),
    ("text", ColumnGroup::Text),
    ("source", ColumnGroup::Fixed),
    ("agent", ColumnGroup::Fixed),
    ("session", ColumnGroup::Fixed),
    ("origin_path", ColumnGroup::Fixed),
    ("origin_start_line", ColumnGroup::Fixed),
    ("origin_end_line", ColumnGroup::Fixed),
    ("tags", ColumnGroup::Meta),
    ("event_time", ColumnGroup::Fixed),
    ("created_at", ColumnGroup::Fixed),
    ("importance", ColumnGroup::Meta),
    ("access_count", ColumnGroup::Access),
    ("last_access", ColumnGroup::Access),
    ("tier", ColumnGroup::Meta),
    ("supersedes", ColumnGroup::Fixed),
    ("superseded_by", ColumnGroup::Meta),
    ("tombstone", ColumnGroup::Meta),
    ("embedding", ColumnGroup::Text),
    ("has_embedding", ColumnGroup::Text),
];

/// Every column group.
pub const ALL_GROUPS: [ColumnGroup; 4] = [
    ColumnGroup::Fixed,
    ColumnGroup::Text,
    ColumnGroup::Meta,
    ColumnGroup::Access,
];

/// The column groups that only writes change (searches change access statistics).
pub const WRITTEN_GROUPS: [ColumnGroup; 3] =
    [ColumnGroup::Fixed, ColumnGroup::Text, ColumnGroup::Meta];

/// Every row's columns but the access statistics, built ahead of a full rewrite (a bulk save builds them on
/// one core while the other tokenizes its texts), with the fresh dictionaries their codes refer to.
pub struct Prebuilt {
    /// Rows the columns hold (the whole store when built).
    pub rows: usize,
    /// The columns of [`WRITTEN_GROUPS`], in file order.
    pub columns: Vec<Column>,
    /// Dictionaries built from nothing, holding every value the columns refer to.
    pub dicts: Dictionaries,
}

/// Build [`Prebuilt`] columns of every record.
pub fn prebuild(
    records: &[Record],
    vectors: &VectorTable,
    config: &StoreConfig,
) -> Result<Prebuilt> {
    let mut dicts = Dictionaries::default();
    let columns = build(
        records,
        vectors,
        config,
        0..records.len(),
        &WRITTEN_GROUPS,
        &mut dicts,
    )?;
    Ok(Prebuilt {
        rows: records.len(),
        columns,
        dicts,
    })
}

/// Where a column comes in file order (its place in [`COLUMN_GROUPS`]).
pub fn position(name: &str) -> usize {
    COLUMN_GROUPS
        .iter()
        .position(|(n, _)| *n == name)
        .unwrap_or(COLUMN_GROUPS.len())
}

/// Build the columns of `groups` for `rows`; dictionary columns are encoded through `dicts` (new values are
/// added to it).
pub fn build(
    records: &[Record],
    vectors: &VectorTable,
    config: &StoreConfig,
    rows: Range<usize>,
    groups: &[ColumnGroup],
    dicts: &mut Dictionaries,
) -> Result<Vec<Column>> {
    let rs = records.get(rows.clone()).ok_or_else(|| {
        MemoryError::InvalidInput(format!("rows {rows:?} outside {} records", records.len()))
    })?;
    let mut out = Vec::new();
    for (name, group) in COLUMN_GROUPS {
        if !groups.contains(&group) {
            continue;
        }
        if let Some(col) = DICTIONARY_COLUMNS.iter().position(|c| *c == name) {
            let codes = rs
                .iter()
                .map(|r| dicts.code(col, column_value(col, r)))
                .collect();
            out.push(Column {
                name,
                array: Array::vector(Data::U32(codes)),
                deflate: true,
            });
            continue;
        }
        let (data, deflate) = match name {
            "id" => (Data::U64(rs.iter().map(|r| r.id).collect()), true),
            "text" => (
                Data::VarStr(rs.iter().map(|r| r.text.clone()).collect()),
                true,
            ),
            "origin_start_line" => (
                Data::U32(
                    rs.iter()
                        .map(|r| r.origin.as_ref().map_or(0, |o| o.start_line))
                        .collect(),
                ),
                true,
            ),
            "origin_end_line" => (
                Data::U32(
                    rs.iter()
                        .map(|r| r.origin.as_ref().map_or(0, |o| o.end_line))
                        .collect(),
                ),
                true,
            ),
            "event_time" => (
                Data::I64(
                    rs.iter()
                        .map(|r| r.event_time.unwrap_or(NONE_TIME))
                        .collect(),
                ),
                true,
            ),
            "created_at" => (Data::I64(rs.iter().map(|r| r.created_at).collect()), true),
            "importance" => (Data::F32(rs.iter().map(|r| r.importance).collect()), true),
            "access_count" => (Data::U32(rs.iter().map(|r| r.access_count).collect()), true),
            "last_access" => (Data::I64(rs.iter().map(|r| r.last_access).collect()), true),
            "tier" => (Data::U8(rs.iter().map(|r| r.tier.code()).collect()), true),
            "supersedes" => (
                Data::U64(rs.iter().map(|r| r.supersedes.unwrap_or(0)).collect()),
                true,
            ),
            "superseded_by" => (
                Data::U64(rs.iter().map(|r| r.superseded_by.unwrap_or(0)).collect()),
                true,
            ),
            "tombstone" => (
                Data::U8(rs.iter().map(|r| u8::from(r.tombstone)).collect()),
                true,
            ),
            "embedding" | "has_embedding" => {
                let Some(dim) = config.embedding_dim else {
                    continue;
                };
                if vectors.dim() != dim as usize || vectors.rows() != records.len() {
                    return Err(MemoryError::InvalidInput(format!(
                        "vector table is {}x{}, store has {} rows of dimension {dim}",
                        vectors.rows(),
                        vectors.dim(),
                        records.len()
                    )));
                }
                if name == "has_embedding" {
                    let has = rows.clone().map(|i| u8::from(vectors.has(i))).collect();
                    (Data::U8(has), true)
                } else {
                    let data = match config.vector_precision {
                        VectorPrecision::F16 => {
                            let mut out = Vec::with_capacity(rows.len() * dim as usize);
                            for run in vectors.runs(rows.clone()) {
                                match run {
                                    Row::F16(v) => out.extend_from_slice(v),
                                    Row::F32(v) => out.extend(v.iter().map(|&x| f16::from_f32(x))),
                                }
                            }
                            Data::F16(out)
                        }
                        VectorPrecision::F32 => {
                            let mut out = Vec::with_capacity(rows.len() * dim as usize);
                            for run in vectors.runs(rows.clone()) {
                                out.extend_from_slice(&run.to_f32());
                            }
                            Data::F32(out)
                        }
                    };
                    let array = Array::matrix(rs.len() as u64, u64::from(dim), data)
                        .map_err(|e| MemoryError::InvalidInput(e.to_string()))?;
                    out.push(Column {
                        name,
                        array,
                        deflate: false,
                    });
                    continue;
                }
            }
            _ => continue,
        };
        out.push(Column {
            name,
            array: Array::vector(data),
            deflate,
        });
    }
    Ok(out)
}
