//! Answering searches: gathering keyword and vector candidates, fusing them, and logging access.

use crate::error::{MemoryError, Result};
use crate::record::now_ms;
use crate::search::{fuse, Candidates, SearchHit, SearchMode, SearchQuery};
use crate::vectors::normalize;
use crate::wal::WalOp;

use super::{Store, ROW_FORGOTTEN, ROW_SUPERSEDED};

impl Store {
    /// Rank records for a query. Never writes the HDF5 file; in a writable store the returned records' access
    /// statistics are logged.
    pub fn search(&self, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        let hits = self.search_candidates(q)?;
        let ids: Vec<u64> = hits.iter().map(|h| h.record.id).collect();
        self.record_access(&ids)?;
        Ok(hits)
    }

    /// Log that these records were returned to a caller (access count and last access, through the log). A
    /// no-op on a read-only store or an empty list.
    pub fn record_access(&self, ids: &[u64]) -> Result<()> {
        if let (Some(wal), false) = (&self.wal, ids.is_empty()) {
            let at = now_ms();
            let logged = wal.append(&WalOp::Access {
                ids: ids.to_vec(),
                at,
            });
            match logged {
                Ok(_) => {}
                // A log that refuses appends since a write of it failed (a full disk) cannot take access
                // statistics either. They only inform ranking, so the search still answers; the next change
                // makes the log usable again.
                Err(_) if wal.failure().is_some() => return Ok(()),
                Err(e) => return Err(e),
            }
            self.pending_access
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((ids.to_vec(), at));
        }
        Ok(())
    }

    /// Like [`search`](Self::search) without logging access: for layers that pick their own results from a
    /// larger candidate pool and log only what they return.
    pub fn search_candidates(&self, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        // No more than every record can be returned: a huge `k` means "all", not a huge allocation.
        let k = q.k.min(self.records.len());
        // A blank question without a vector or a filter asks for nothing: the model's vector of an empty text
        // would return arbitrary records. With a filter (a date-only question becomes a time range and a blank
        // text) the filter's records are what was asked for.
        let blank = q.embedding.is_none() && q.text.trim().is_empty();
        if k == 0 || (blank && q.filter.is_empty()) {
            return Ok(Vec::new());
        }
        // Forgotten and superseded rows are excluded from the flags alone; the records are read only when the
        // filter asks about their fields (most searches have no such filter).
        let hidden = ROW_FORGOTTEN
            | if q.filter.include_superseded {
                0
            } else {
                ROW_SUPERSEDED
            };
        let fields = !q.filter.is_empty();
        debug_assert_eq!(self.row_flags.len(), self.records.len());
        let allow = |row: u32| match self.row_flags.get(row as usize) {
            Some(&f) if f & hidden == 0 => !fields || q.filter.matches(&self.records[row as usize]),
            _ => false,
        };
        let pool = k.saturating_mul(4).max(50).min(self.records.len());
        let mut cand = Candidates::default();
        if q.mode != SearchMode::Vector {
            let toks = self.tokenizer.tokens(&q.text);
            cand.keyword = self.bm25.search(&toks, pool, &allow);
        }
        if q.mode != SearchMode::Keyword && self.vectors.dim() > 0 {
            let embedded;
            let query_vec = match (&q.embedding, &self.opts.embedder) {
                (Some(e), _) => Some(e.as_slice()),
                (None, Some(embedder)) => {
                    self.check_model(embedder.as_ref())?;
                    embedded = embedder
                        .embed_one(&q.text)
                        .map_err(|e| MemoryError::Embedding(e.to_string()))?;
                    Some(embedded.as_slice())
                }
                (None, None) => None,
            };
            match query_vec {
                Some(e) => cand.vector = self.vector_candidates(e, pool, &allow)?,
                None if q.mode == SearchMode::Vector => return Err(MemoryError::Embedding(
                    "vector search needs a query embedding or an embedder, and there is neither"
                        .into(),
                )),
                None => {}
            }
        } else if q.mode == SearchMode::Vector
            && q.embedding.is_none()
            && self.opts.embedder.is_none()
        {
            return Err(MemoryError::Embedding(
                "vector search needs a query embedding or an embedder, and there is neither".into(),
            ));
        }
        let c = &self.meta.config;
        let fused = fuse(
            &cand,
            q.mode,
            c.fusion_vector_weight,
            c.fusion_keyword_weight,
            c.rrf_k,
        );
        let hits: Vec<SearchHit> = fused
            .into_iter()
            .filter(|f| q.min_score.is_none_or(|m| f.1 >= m))
            .take(k)
            .map(|(row, score, ks, vs)| SearchHit {
                score,
                keyword_score: ks,
                vector_score: vs,
                record: self.records[row as usize].clone(),
            })
            .collect();
        Ok(hits)
    }

    fn vector_candidates(
        &self,
        query: &[f32],
        pool: usize,
        allow: &(dyn Fn(u32) -> bool + Sync),
    ) -> Result<Vec<(u32, f32)>> {
        if self.vectors.dim() == 0 {
            return Ok(Vec::new());
        }
        if query.len() != self.vectors.dim() {
            return Err(MemoryError::Embedding(format!(
                "query embedding has {} dimensions, the store holds {}-dimensional vectors",
                query.len(),
                self.vectors.dim()
            )));
        }
        let mut q = query.to_vec();
        normalize(&mut q);
        let ef = (self.meta.config.hnsw_ef_search as usize).max(pool);
        self.index.search(&self.vectors, &q, pool, ef, allow)
    }

    /// Query vectors for `texts` from one forward pass of the store's embedder, when a search in `mode` would
    /// embed its query itself (the store holds vectors, has an embedder, and the mode is not keyword-only);
    /// `None` otherwise.
    pub fn embed_queries(&self, texts: &[&str], mode: SearchMode) -> Result<Option<Vec<Vec<f32>>>> {
        let Some(embedder) = &self.opts.embedder else {
            return Ok(None);
        };
        if mode == SearchMode::Keyword || self.vectors.dim() == 0 {
            return Ok(None);
        }
        self.check_model(embedder.as_ref())?;
        embedder
            .embed_batch(texts)
            .map(Some)
            .map_err(|e| MemoryError::Embedding(e.to_string()))
    }
}
