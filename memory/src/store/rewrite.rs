//! Rewriting the store file whole: the new file is written beside the store, fsynced and renamed into place.
//! A bulk save whose checkpoint rewrites the file writes everything but the keyword index ahead, on one core
//! while the other tokenizes its texts ([`write_ahead`]); the checkpoint then adds the keyword index to that
//! file and renames it into place ([`Store::finish_ahead`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::columns::{self, Prebuilt};
use crate::dictionary::Dictionaries;
use crate::error::{format_err, io_err, MemoryError, Result};
use crate::foreign::{self, Carried};
use crate::format::{Array, Data, FileAppender, H5File};
use crate::integrity::SignedManifest;
use crate::keyword_table::KeywordTable;
use crate::pending::FileState;
use crate::record::Record;
use crate::schema::{self, StoreMeta, StoreView};
use crate::vectors::VectorTable;
use crate::wal::sync_dir;

use super::lock::share_data_file;
use super::Store;

/// A new store file written and fsynced beside the store, not yet renamed into place (removed if dropped so).
pub(super) struct Written {
    tmp: Unfinished,
    dicts: Dictionaries,
    carried: Carried,
}

/// A bulk save's file written ahead of its checkpoint: every part of the store but the keyword index, for
/// the state `meta` of `rows` rows.
pub struct WrittenAhead {
    written: Written,
    meta: StoreMeta,
    rows: usize,
}

impl WrittenAhead {
    /// Whether the file was written for a checkpoint to `meta` of `rows` rows.
    pub(super) fn fits(&self, meta: &StoreMeta, rows: usize) -> bool {
        self.meta == *meta && self.rows == rows
    }
}

/// Write every part of a store but its keyword index (and graph and signature: the caller makes sure it has
/// neither) beside `path`, for the checkpoint to `meta`. Runs beside tokenizing, so it builds its columns too.
pub fn write_ahead(
    path: &Path,
    meta: StoreMeta,
    records: &[Record],
    vectors: &VectorTable,
    extensions: &BTreeMap<String, Vec<u8>>,
) -> Result<WrittenAhead> {
    let prebuilt = columns::prebuild(records, vectors, &meta.config)?;
    let view = StoreView {
        meta: &meta,
        records,
        vectors,
        extensions,
        manifest: None,
        hnsw: None,
        keywords: None,
    };
    let written = write_beside(path, &view, Some(prebuilt))?;
    Ok(WrittenAhead {
        written,
        meta,
        rows: records.len(),
    })
}

/// Write the store beside `path` (as `<path>.tmp`) and fsync it. What other programs added to the file being
/// replaced is carried into the new one ([`foreign::carry`]).
fn write_beside(path: &Path, view: &StoreView<'_>, prebuilt: Option<Prebuilt>) -> Result<Written> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    // A write that fails (a full disk, say) leaves no partial file behind to hold the space it took.
    let unfinished = Unfinished(Some(tmp.clone()));
    let (mut w, dicts) = schema::snapshot_writer(&tmp, view, prebuilt)?;
    let mut carried = Carried::default();
    if path.exists() {
        match H5File::open(path) {
            Ok(old) => carried = foreign::carry(&old, &mut w),
            Err(e) => carried.left.push(format!(
                "{}: unreadable, nothing carried: {e}",
                path.display()
            )),
        }
    }
    w.write_file(&tmp).map_err(format_err(&tmp))?;
    Ok(Written {
        tmp: unfinished,
        dicts,
        carried,
    })
}

/// Rename a written file over `path` and fsync the directory. When some of the old file's foreign objects
/// could not be carried, the old file is kept beside the store as `<path>.before-<generation>` (the report
/// names it). The new file is renamed into place already holding the shared lock that keeps libhdf5 writers
/// off it (returned).
fn install(
    path: &Path,
    mut written: Written,
    generation: u64,
) -> Result<(Dictionaries, Carried, Option<File>)> {
    let tmp = written.tmp.path()?.to_path_buf();
    let data_lock = share_data_file(&tmp)?;
    let mut carried = written.carried;
    if !carried.left.is_empty() {
        let mut kept = path.as_os_str().to_owned();
        kept.push(format!(".before-{generation}"));
        let kept = PathBuf::from(kept);
        if kept.exists() {
            std::fs::remove_file(&kept).map_err(io_err(&kept))?;
        }
        if std::fs::hard_link(path, &kept).is_err() {
            std::fs::copy(path, &kept).map_err(io_err(&kept))?;
        }
        carried.kept = Some(kept);
    }
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    written.tmp.0 = None;
    sync_dir(path)?;
    Ok((written.dicts, carried, data_lock))
}

/// Write the store beside `path`, fsync it, rename it over `path` and fsync the directory ([`install`]).
pub(super) fn write_atomically(
    path: &Path,
    view: &StoreView<'_>,
    prebuilt: Option<Prebuilt>,
) -> Result<(Dictionaries, Carried, Option<File>)> {
    let written = write_beside(path, view, prebuilt)?;
    install(path, written, view.meta.generation)
}

impl Store {
    /// Write the whole store to a new file and rename it into place.
    pub(super) fn rewrite(
        &mut self,
        meta: &StoreMeta,
        manifest: Option<&SignedManifest>,
        prebuilt: Option<Prebuilt>,
    ) -> Result<()> {
        let n = self.records.len();
        let keywords = KeywordTable::from_index(&self.bm25, n);
        let hnsw = self.index.persist(meta.generation);
        let view = StoreView {
            meta,
            records: &self.records,
            vectors: &self.vectors,
            extensions: &self.extensions,
            manifest,
            hnsw: hnsw.as_deref(),
            keywords: Some(&keywords),
        };
        let installed = write_atomically(&self.path, &view, prebuilt)?;
        let graph_slots = match hnsw {
            Some(_) => self.index.graph().map_or(0, |h| h.slots()),
            None => 0,
        };
        self.adopt(installed, meta, &keywords, graph_slots, manifest, 0);
        Ok(())
    }

    /// Add the keyword index to a file written ahead for the checkpoint to `meta` (which [`WrittenAhead::fits`])
    /// and rename it into place.
    pub(super) fn finish_ahead(&mut self, ahead: WrittenAhead, meta: &StoreMeta) -> Result<()> {
        let keywords = KeywordTable::from_index(&self.bm25, self.records.len());
        let tmp = ahead.written.tmp.path()?.to_path_buf();
        let fmt = format_err(&tmp);
        let mut app = FileAppender::open(&tmp).map_err(&fmt)?;
        schema::write_keywords(&mut app, &keywords, &meta.config).map_err(&fmt)?;
        let dead_bytes = app.superseded_bytes();
        app.set_attr(
            "/",
            "dead_bytes",
            Array::scalar(Data::U64(vec![dead_bytes])),
        )
        .map_err(&fmt)?;
        app.commit().map_err(&fmt)?;
        let installed = install(&self.path, ahead.written, meta.generation)?;
        self.adopt(installed, meta, &keywords, 0, None, dead_bytes);
        Ok(())
    }

    /// Take on a file just renamed into place, written for `meta` with `keywords`.
    fn adopt(
        &mut self,
        (dicts, carried, data_lock): (Dictionaries, Carried, Option<File>),
        meta: &StoreMeta,
        keywords: &KeywordTable,
        graph_slots: usize,
        manifest: Option<&SignedManifest>,
        dead_bytes: u64,
    ) {
        let n = self.records.len();
        self.dicts = dicts;
        self.foreign.add(carried);
        self.data_lock = data_lock;
        self.file = FileState {
            rows: n,
            terms: keywords.terms.len(),
            term_ids: keywords.doc_terms.len() as u64,
            graph_slots,
            graph_epoch: meta.vector_epoch,
            has_embedding: meta.config.embedding_dim.is_some(),
            signer: manifest.map(|m| m.public_key),
            chunk_rows: schema::chunk_rows(n as u64),
            keywords_stale: false,
            dead_bytes,
        };
    }
}

/// A file that is removed when this is dropped still holding it (best effort).
struct Unfinished(Option<PathBuf>);

impl Unfinished {
    /// The file, while it is held.
    fn path(&self) -> Result<&Path> {
        self.0.as_deref().ok_or_else(|| {
            MemoryError::InvalidInput("the new store file is already installed".into())
        })
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}
