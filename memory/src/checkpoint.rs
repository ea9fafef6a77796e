//! Incremental checkpoint: folds what changed since the last checkpoint into the existing HDF5 file through
//! the format crate's copy-on-write [`FileAppender`] — new rows appended, changed rows rewritten only in the
//! column groups they touched, new dictionary values, terms and extension states added — then one superblock
//! switch commits it. Its cost follows the change, not the store's size. A crash before the switch leaves the
//! previous checkpoint intact.

use std::collections::BTreeMap;
use std::path::Path;

use clawhdf5_format::{Array, Data, FileAppender, FormatError};

use crate::columns::{self, ColumnGroup};
use crate::config::StoreConfig;
use crate::dictionary::{Dictionaries, DICTIONARY_COLUMNS};
use crate::error::{format_err, MemoryError, Result};
use crate::integrity::SignedManifest;
use crate::pending::{FileState, Pending};
use crate::record::Record;
use crate::schema::{self, blob_options, StoreMeta};
use crate::vectors::VectorTable;

/// Changed rows closer than this are rewritten as one run (each run rewrites the chunks it touches anyway).
const RUN_GAP: usize = 64;

/// The store state an incremental checkpoint writes from.
pub struct Increment<'a> {
    /// Metadata of the new checkpoint (generation and LSN advanced).
    pub meta: &'a StoreMeta,
    /// Every record.
    pub records: &'a [Record],
    /// Every embedding.
    pub vectors: &'a VectorTable,
    /// Every extension state.
    pub extensions: &'a BTreeMap<String, Vec<u8>>,
    /// The keyword vocabulary.
    pub terms: &'a [String],
    /// The signature to store, when signed, and whether every hash row must be rewritten.
    pub manifest: Option<(&'a SignedManifest, bool)>,
    /// Graph bytes to store (stamped with `meta.generation`); `None` keeps the file's graph.
    pub graph: Option<(&'a [u8], usize)>,
}

/// About how many bytes the rows `rows` add to the file: their vectors, their texts as heap objects (a
/// 16-byte header and padding each) with a 16-byte reference, and the other columns before compression.
fn new_rows_bytes(records: &[Record], config: &StoreConfig, rows: std::ops::Range<usize>) -> usize {
    let vector = config
        .embedding_dim
        .map_or(0, |d| d as usize * config.vector_precision.bytes());
    let texts: usize = records.get(rows.clone()).map_or(0, |rs| {
        rs.iter().map(|r| r.text.len().next_multiple_of(8)).sum()
    });
    texts + rows.len() * (vector + 32 + 16 + OTHER_COLUMN_BYTES)
}

/// Bytes of a row's columns other than its text and vector, uncompressed (ids, times, codes, flags).
const OTHER_COLUMN_BYTES: usize = 96;

/// New rows' columns appended, uncommitted, to an appender of the store file ahead of the checkpoint that
/// commits them ([`stage_rows`]): a bulk save encodes them while its texts are tokenized.
pub struct StagedRows {
    app: FileAppender,
    rows: std::ops::Range<usize>,
}

/// Open an appender of the store file at `path`, append the columns of `records[rows]` to it and, when
/// `ahead`, write them ahead ([`FileAppender::write_ahead`]), for [`append`] to finish and commit; nothing
/// is visible in the file until then. Bytes written ahead cannot be read back by the appender, so `ahead`
/// must be false when the checkpoint will also rewrite rows changed in the chunks this append rewrites (see
/// [`must_stay_in_memory`]).
pub fn stage_rows(
    path: &Path,
    records: &[Record],
    vectors: &VectorTable,
    config: &StoreConfig,
    rows: std::ops::Range<usize>,
    dicts: &mut Dictionaries,
    ahead: bool,
) -> Result<StagedRows> {
    let mut app = FileAppender::open(path).map_err(format_err(path))?;
    append_new_rows(
        &mut app,
        path,
        records,
        vectors,
        config,
        rows.clone(),
        dicts,
    )?;
    // Their bytes go to the file (past its committed end) and start for the disk now, while the rest of the
    // checkpoint is prepared.
    if ahead {
        app.write_ahead().map_err(format_err(path))?;
    }
    Ok(StagedRows { app, rows })
}

/// Whether rows appended to a file of `file_rows` rows must stay in the appender's memory until the commit:
/// a row changed since the checkpoint lies in the file's last chunk of some column (every column has at most
/// [`schema::CHUNK_ROWS`] rows a chunk), which the append rewrites and the change then rewrites again.
pub fn must_stay_in_memory(pending: &Pending, file_rows: usize) -> bool {
    let last_chunks = file_rows.saturating_sub(schema::CHUNK_ROWS as usize);
    pending.changed_from(u32::try_from(last_chunks).unwrap_or(u32::MAX))
}

/// Append every column of `records[rows]` (rows past the file's last) to `app`.
fn append_new_rows(
    app: &mut FileAppender,
    path: &Path,
    records: &[Record],
    vectors: &VectorTable,
    config: &StoreConfig,
    rows: std::ops::Range<usize>,
    dicts: &mut Dictionaries,
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    app.reserve(new_rows_bytes(records, config, rows.clone()));
    for col in columns::build(records, vectors, config, rows, &columns::ALL_GROUPS, dicts)? {
        app.append_rows(&format!("/records/{}", col.name), col.array)
            .map_err(format_err(path))?;
    }
    Ok(())
}

/// Append `inc` to the store file at `path`, which holds `file`; returns what the file holds afterwards.
/// `staged` (from [`stage_rows`]) is used when it holds exactly the rows the file lacks, and dropped
/// otherwise.
pub fn append(
    path: &Path,
    inc: &Increment<'_>,
    file: &FileState,
    pending: &Pending,
    dicts: &mut Dictionaries,
    staged: Option<StagedRows>,
) -> Result<FileState> {
    let fmt = format_err(path);
    let config = &inc.meta.config;
    let n = inc.records.len();
    let old = file.rows;
    if old > n {
        return Err(MemoryError::InvalidInput(format!(
            "the file holds {old} rows, the store {n}"
        )));
    }
    let mut app = match staged {
        Some(s) if s.rows == (old..n) => s.app,
        _ => {
            let mut app = FileAppender::open(path).map_err(fmt)?;
            // New rows, every column.
            append_new_rows(
                &mut app,
                path,
                inc.records,
                inc.vectors,
                config,
                old..n,
                dicts,
            )?;
            app
        }
    };
    // Changed rows, only the columns of their kind of change.
    for (group, runs) in [
        (
            ColumnGroup::Text,
            Pending::runs(pending.text_rows.iter().copied(), old, RUN_GAP),
        ),
        (
            ColumnGroup::Meta,
            Pending::runs(pending.meta_rows.iter().copied(), old, RUN_GAP),
        ),
        (
            ColumnGroup::Access,
            Pending::runs(pending.access_rows.iter(), old, RUN_GAP),
        ),
    ] {
        for run in runs {
            let start = run.start as u64;
            for col in columns::build(inc.records, inc.vectors, config, run, &[group], dicts)? {
                let p = format!("/records/{}", col.name);
                app.write_rows(&p, start, col.array).map_err(fmt)?;
            }
        }
    }
    for (i, name) in DICTIONARY_COLUMNS.iter().enumerate() {
        let new = dicts.unpersisted(i);
        if !new.is_empty() {
            let values = Array::vector(Data::VarStr(new.to_vec()));
            app.append_rows(&format!("/dictionaries/{name}"), values)
                .map_err(fmt)?;
        }
    }
    app.set_attr(
        "/records",
        "count",
        Array::scalar(Data::U64(vec![n as u64])),
    )
    .map_err(fmt)?;
    for (name, value) in schema::root_attrs(inc.meta) {
        app.set_attr("/", name, value).map_err(fmt)?;
    }
    for (name, value) in schema::config_attrs(config) {
        app.set_attr("/config", name, value).map_err(fmt)?;
    }
    for name in &pending.extensions {
        if let Some(bytes) = inc.extensions.get(name) {
            app.replace_dataset(
                &format!("/extensions/{name}"),
                Array::vector(Data::U8(bytes.clone())),
                blob_options(bytes.len(), Some(4)),
            )
            .map_err(fmt)?;
        }
    }
    let term_ids = append_keywords(&mut app, inc, file, pending).map_err(fmt)?;
    if let Some((m, all_rows)) = inc.manifest {
        write_manifest(&mut app, m, all_rows, old, pending).map_err(fmt)?;
    }
    let (graph_slots, graph_epoch) = match inc.graph {
        Some((bytes, slots)) => {
            app.replace_dataset(
                "/index/hnsw",
                Array::vector(Data::U8(bytes.to_vec())),
                blob_options(bytes.len(), None),
            )
            .map_err(fmt)?;
            for (name, value) in schema::graph_attrs(inc.meta) {
                app.set_attr("/index/hnsw", name, value).map_err(fmt)?;
            }
            (slots, inc.meta.vector_epoch)
        }
        None => (file.graph_slots, file.graph_epoch),
    };
    let dead_bytes = file.dead_bytes + app.superseded_bytes();
    app.set_attr(
        "/",
        "dead_bytes",
        Array::scalar(Data::U64(vec![dead_bytes])),
    )
    .map_err(fmt)?;
    app.commit().map_err(fmt)?;
    dicts.mark_persisted();
    Ok(FileState {
        rows: n,
        terms: inc.terms.len(),
        term_ids,
        graph_slots,
        graph_epoch,
        has_embedding: file.has_embedding,
        signer: inc.manifest.map(|(m, _)| m.public_key),
        chunk_rows: file.chunk_rows,
        keywords_stale: false,
        dead_bytes,
    })
}

/// New terms, and the term ids of new and re-tokenised rows; returns the new length of the flat id list.
fn append_keywords(
    app: &mut FileAppender,
    inc: &Increment<'_>,
    file: &FileState,
    pending: &Pending,
) -> std::result::Result<u64, FormatError> {
    let new_terms = inc.terms.get(file.terms..).unwrap_or(&[]);
    if !new_terms.is_empty() {
        app.append_rows(
            "/index/bm25/terms",
            Array::vector(Data::VarStr(new_terms.to_vec())),
        )?;
    }
    let n = inc.records.len();
    let mut flat: Vec<u32> = Vec::new();
    let mut next = file.term_ids;
    let mut span = |ids: &[u32], flat: &mut Vec<u32>| {
        let start = next;
        crate::keyword_table::push_gaps(ids, flat);
        next += ids.len() as u64;
        (start, ids.len() as u32)
    };
    // Changed texts of rows already in the file: their new ids go at the end, the row points there.
    let mut changed: Vec<(u64, u64, u32)> = Vec::new();
    for (&row, ids) in pending.row_terms.range(..file.rows as u32) {
        let (s, l) = span(ids, &mut flat);
        changed.push((u64::from(row), s, l));
    }
    let mut starts = Vec::with_capacity(n - file.rows);
    let mut lens = Vec::with_capacity(n - file.rows);
    for row in file.rows..n {
        let ids = pending
            .row_terms
            .get(&(row as u32))
            .map_or(&[][..], Vec::as_slice);
        let (s, l) = span(ids, &mut flat);
        starts.push(s);
        lens.push(l);
    }
    if !flat.is_empty() {
        app.append_rows("/index/bm25/doc_terms", Array::vector(Data::U32(flat)))?;
    }
    if !starts.is_empty() {
        app.append_rows("/index/bm25/doc_start", Array::vector(Data::U64(starts)))?;
        app.append_rows("/index/bm25/doc_len", Array::vector(Data::U32(lens)))?;
    }
    for (row, s, l) in changed {
        app.write_rows(
            "/index/bm25/doc_start",
            row,
            Array::vector(Data::U64(vec![s])),
        )?;
        app.write_rows(
            "/index/bm25/doc_len",
            row,
            Array::vector(Data::U32(vec![l])),
        )?;
    }
    Ok(next)
}

/// The signature: every hash row (first signed checkpoint of this process), or new and changed rows only.
fn write_manifest(
    app: &mut FileAppender,
    m: &SignedManifest,
    all_rows: bool,
    old: usize,
    pending: &Pending,
) -> std::result::Result<(), FormatError> {
    if all_rows {
        let (ids, hashes) = schema::manifest_rows(&m.records)?;
        let opts = schema::chunked(&ids.shape, 8, true);
        app.replace_dataset("/integrity/ids", ids, opts)?;
        let opts = schema::chunked(&hashes.shape, 1, false);
        app.replace_dataset("/integrity/record_sha256", hashes, opts)?;
    } else {
        if m.records.len() > old {
            let (ids, hashes) = schema::manifest_rows(&m.records[old..])?;
            app.append_rows("/integrity/ids", ids)?;
            app.append_rows("/integrity/record_sha256", hashes)?;
        }
        let mut changed = pending.text_rows.clone();
        changed.extend(&pending.meta_rows);
        for run in Pending::runs(changed.iter().copied(), old, RUN_GAP) {
            let Some(entries) = m.records.get(run.clone()) else {
                continue;
            };
            let (_, hashes) = schema::manifest_rows(entries)?;
            app.write_rows("/integrity/record_sha256", run.start as u64, hashes)?;
        }
    }
    for (name, value) in schema::manifest_attrs(m) {
        app.set_attr("/integrity", name, value)?;
    }
    Ok(())
}
