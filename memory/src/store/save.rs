//! Saving memories: single, prepared ahead, batched and bulk, with validation and deduplication.

use crate::bm25::{Bm25Index, UNKNOWN_TERM};
use crate::error::{MemoryError, Result};
use crate::record::{now_ms, NewMemory, Record, Source, Tier};
use crate::save_ahead::{PreparedSave, SaveKit};
use crate::tokenize::{Terms, Tokenizer};
use crate::vectors::normalize;
use crate::wal::{Durability, DurableTicket, WalEntry, WalOp};

use super::checkpointing::Staged;
use super::screen::{self, Screen};
use super::{dedup_key, SaveOutcome, Store, BULK_ROWS};

/// A validated new memory, or the id of the stored record it duplicates.
enum Prepared {
    /// The record, and its dedup key.
    New(Box<Record>, u64),
    Duplicate(u64),
}

/// A batch whose tokens include at least this many the keyword index does not know yet gives its new terms
/// their ids in one pass on every core
/// ([`Bm25Index::add_new_terms`](crate::bm25::Bm25Index::add_new_terms)) instead of one lookup per token
/// while indexing. (At 4,096 a fresh store's batch of 1,000 conversation turns, 33,000 tokens, took the
/// parallel pass and spent 2.4-4.4 ms in it against about 1.2 ms more indexing without it, on a 2-core VM.)
const NEW_TERMS_IN_PARALLEL: usize = 1 << 16;

/// Batches of at least this many saves are tokenized on every core; smaller ones on the saving thread,
/// where handing them to the pool cost more than it saved (1,000 conversation turns: 3.5-4.3 ms on the
/// saving thread against 3.8-7.3 ms through the pool, on a 2-core VM).
const TOKENIZE_IN_PARALLEL: usize = 4096;

/// Batches of at least this many saves are written to the log by its syncer thread while the saving thread
/// indexes them (smaller ones are written by the saving thread when it waits: a hand-over costs more than
/// their indexing).
const WRITE_WHILE_INDEXING: usize = 64;

impl Store {
    /// Save a memory and wait until it is durable (per the store's durability mode).
    pub fn save(&mut self, m: NewMemory) -> Result<SaveOutcome> {
        let (outcome, ticket) = self.save_deferred(m)?;
        if let Some(t) = ticket {
            t.wait()?;
        }
        self.maybe_checkpoint()?;
        Ok(outcome)
    }

    /// Save without waiting: returns the ticket to wait on (outside any lock, so concurrent saves share an
    /// fsync). `None` when the memory was a duplicate and nothing was written.
    pub fn save_deferred(
        &mut self,
        mut m: NewMemory,
    ) -> Result<(SaveOutcome, Option<DurableTicket>)> {
        let mut embedding = m.embedding.take();
        let mut embedded_by = None;
        if embedding.is_none() && !m.text.trim().is_empty() {
            if let Some(embedder) = self.opts.embedder.clone() {
                // Refused before the model runs on it (otherwise `prepare` checks it, once).
                crate::validate::new_memory(&m)?;
                if self.dedup.contains_key(&self.dedup_key_of(&m)) {
                    embedding = None;
                } else {
                    self.check_model(embedder.as_ref())?;
                    embedding = Some(
                        embedder
                            .embed_one(m.text.trim())
                            .map_err(|e| MemoryError::Embedding(e.to_string()))?,
                    );
                    embedded_by = Some(embedder.model_id().to_string());
                }
            }
        }
        self.save_new(m, embedding, None, embedded_by.as_deref())
    }

    /// The common end of a single save: validate `m` (with `embedding`) into a record or find its duplicate,
    /// note the model that embedded it, log and apply it (with its text's `terms` when known already).
    fn save_new(
        &mut self,
        m: NewMemory,
        embedding: Option<Vec<f32>>,
        terms: Option<Terms>,
        embedded_by: Option<&str>,
    ) -> Result<(SaveOutcome, Option<DurableTicket>)> {
        let record = match self.prepare(m, embedding, self.meta.next_id, None)? {
            Prepared::Duplicate(id) => {
                return Ok((
                    SaveOutcome {
                        id,
                        deduplicated: true,
                    },
                    None,
                ))
            }
            Prepared::New(r, _) => r,
        };
        if let Some(model) = embedded_by {
            self.note_model_id(model)?;
        }
        let id = record.id;
        let ticket = self.log_and_apply_terms(WalOp::save(record, self.half_log()), terms)?;
        // New rows join the graph in the background (searched exactly until then).
        self.maintain_index();
        Ok((
            SaveOutcome {
                id,
                deduplicated: false,
            },
            Some(ticket),
        ))
    }

    /// What preparing a save ahead of this store's lock needs (its tokenizer settings and embedder), detached
    /// from it: see [`SaveKit::prepare`] and [`Self::save_prepared`].
    pub fn save_kit(&self) -> SaveKit {
        SaveKit::new(
            self.meta.config.tokenizer.clone(),
            self.opts.embedder.clone(),
        )
    }

    /// [`Self::save_deferred`] for a memory whose text was tokenized (and embedded, when this store embeds)
    /// ahead by a [`SaveKit`]: what is left is validation, the log append and the in-memory update. Terms made
    /// under other tokenizer settings are ignored and the text tokenized again.
    pub fn save_prepared(
        &mut self,
        p: PreparedSave,
    ) -> Result<(SaveOutcome, Option<DurableTicket>)> {
        let PreparedSave {
            mut memory,
            terms,
            tokenizer,
            embedded_by,
        } = p;
        if let Some(model) = &embedded_by {
            self.check_model_id(model)?;
        }
        let embedding = memory.embedding.take();
        let terms = terms.filter(|_| tokenizer == self.meta.config.tokenizer);
        self.save_new(memory, embedding, terms, embedded_by.as_deref())
    }

    /// Save many memories at once: one log write and one wait for durability, texts embedded in one batch
    /// when the store has an embedder. Duplicates (of stored records or within the batch) are reported, not
    /// stored twice. The vector graph is not updated here: new rows are searched exactly until the next
    /// single save, [`Self::build_index`] or close folds them in. Nothing is saved if any memory is invalid.
    pub fn save_batch(&mut self, items: Vec<NewMemory>) -> Result<Vec<SaveOutcome>> {
        self.save_many(items, true)?.into_iter().collect()
    }

    /// Save several independent memories (say, concurrent requests a server collected) with one log write and
    /// one wait for durability (group commit): each gets its own outcome, and an invalid one fails alone,
    /// unlike [`Self::save_batch`]. The outer error means nothing was saved (the log write or fsync failed,
    /// or the batch could not be embedded). New rows join the vector graph in the background, as single
    /// saves do.
    pub fn save_each(&mut self, items: Vec<NewMemory>) -> Result<Vec<Result<SaveOutcome>>> {
        self.save_many(items, false)
    }

    /// [`Self::save_batch`] (`all_or_nothing`) and [`Self::save_each`].
    fn save_many(
        &mut self,
        mut items: Vec<NewMemory>,
        all_or_nothing: bool,
    ) -> Result<Vec<Result<SaveOutcome>>> {
        self.writer()?;
        // An invalid memory is refused before the embedder spends anything on it (a text over the limit can be
        // megabytes); `prepare` below reports the same error in its place.
        let valid = screen::validity(&items);
        if all_or_nothing {
            if let Some((m, _)) = items.iter().zip(&valid).find(|(_, ok)| !**ok) {
                crate::validate::new_memory(m)?;
            }
        }
        // Moved, not copied: a batch's vectors are most of its bytes.
        let mut embeddings: Vec<Option<Vec<f32>>> =
            items.iter_mut().map(|m| m.embedding.take()).collect();
        if let Some(embedder) = self.opts.embedder.clone() {
            let missing: Vec<usize> = (0..items.len())
                .filter(|&i| embeddings[i].is_none() && valid[i])
                .collect();
            if !missing.is_empty() {
                self.check_model(embedder.as_ref())?;
                let texts: Vec<&str> = missing.iter().map(|&i| items[i].text.trim()).collect();
                let vs = embedder
                    .embed_batch(&texts)
                    .map_err(|e| MemoryError::Embedding(e.to_string()))?;
                for (i, v) in missing.into_iter().zip(vs) {
                    embeddings[i] = Some(v);
                }
                self.note_model(embedder.as_ref())?;
            }
        }
        let screens = screen::screen(&items, &mut embeddings, &valid, &self.opts.default_agent);
        // Validate everything first, so a bad item leaves the store untouched.
        let mut outcomes: Vec<Result<SaveOutcome>> = Vec::with_capacity(items.len());
        let mut records = Vec::new();
        let mut keys = Vec::new();
        let mut in_batch: crate::FastMap<u64, usize> = crate::FastMap::default();
        let mut next_id = self.meta.next_id;
        let mut batch_dim = self.meta.config.embedding_dim.map(|d| d as usize);
        for (i, (m, e)) in items.into_iter().zip(embeddings).enumerate() {
            if let Some(v) = &e {
                match batch_dim {
                    Some(d) if d != v.len() => {
                        let err = MemoryError::Embedding(format!(
                            "embedding has {} dimensions, expected {d}",
                            v.len()
                        ));
                        if all_or_nothing {
                            return Err(err);
                        }
                        outcomes.push(Err(err));
                        continue;
                    }
                    _ => batch_dim = Some(v.len()),
                }
            }
            let screened = screens.as_ref().and_then(|s| s.get(i).copied());
            let prepared = match self.prepare(m, e, next_id, screened) {
                Ok(p) => p,
                Err(err) if all_or_nothing => return Err(err),
                Err(err) => {
                    outcomes.push(Err(err));
                    continue;
                }
            };
            match prepared {
                Prepared::Duplicate(id) => outcomes.push(Ok(SaveOutcome {
                    id,
                    deduplicated: true,
                })),
                Prepared::New(r, key) => {
                    // Same hash and the same memory (the hash alone could collide).
                    let earlier = in_batch
                        .get(&key)
                        .map(|&i| &records[i])
                        .filter(|e: &&Record| {
                            e.text == r.text
                                && e.session == r.session
                                && e.agent == r.agent
                                && e.source == r.source
                        });
                    if let Some(e) = earlier {
                        outcomes.push(Ok(SaveOutcome {
                            id: e.id,
                            deduplicated: true,
                        }));
                        continue;
                    }
                    in_batch.insert(key, records.len());
                    outcomes.push(Ok(SaveOutcome {
                        id: r.id,
                        deduplicated: false,
                    }));
                    next_id += 1;
                    records.push(*r);
                    keys.push(key);
                }
            }
        }
        if records.is_empty() {
            return Ok(outcomes);
        }
        self.poll_index();
        self.drain_pending_access();
        let bulk = all_or_nothing
            && records.len() >= BULK_ROWS
            && self.opts.durability == Durability::EverySave;
        if bulk {
            return self.save_in_file(records, keys, outcomes);
        }
        let half = self.half_log();
        let ops: Vec<WalOp> = records
            .into_iter()
            .map(|r| WalOp::save(Box::new(r), half))
            .collect();
        // Tokenising, and looking up the terms the keyword index knows, is most of a save's CPU: a large
        // batch's texts are done on every core first.
        let mut tokens = terms_of(&self.tokenizer, &self.bm25, &ops, |op| {
            op.saved().map(|r| r.text.as_str())
        });
        intern_new_terms(&mut self.bm25, &mut tokens);
        let (first, ticket) = self.append_healing(|w| w.append_many(&ops))?;
        if ops.len() >= WRITE_WHILE_INDEXING {
            // The log's syncer thread writes the batch while this thread indexes it.
            ticket.begin();
        }
        for (i, (op, toks)) in ops.into_iter().zip(tokens).enumerate() {
            let lsn = first + i as u64;
            self.last_lsn = self.last_lsn.max(lsn);
            match op.into_saved() {
                Ok(r) => {
                    if let Some(e) = &r.embedding {
                        self.ensure_dim(e.len())?;
                    }
                    self.index_record(*r, Some(toks));
                }
                Err(op) => self.apply(WalEntry { lsn, op })?,
            }
        }
        ticket.wait()?;
        if !all_or_nothing {
            self.maintain_index();
        }
        self.maybe_checkpoint()?;
        Ok(outcomes)
    }

    /// A large batch goes straight into the HDF5 file: one incremental checkpoint makes it durable, and the
    /// log, which would hold a second copy of every record and vector, is skipped. Should the checkpoint fail,
    /// the error is returned and the batch is not acknowledged, but the records stay in memory and a later
    /// checkpoint may still write them.
    fn save_in_file(
        &mut self,
        records: Vec<Record>,
        keys: Vec<u64>,
        outcomes: Vec<Result<SaveOutcome>>,
    ) -> Result<Vec<Result<SaveOutcome>>> {
        // The batch's embeddings share one dimension (`save_many` checked), so the first one sets it.
        if let Some(dim) = records
            .iter()
            .find_map(|r| r.embedding.as_ref().map(Vec::len))
        {
            self.ensure_dim(dim)?;
        }
        self.reserve(records.len());
        let first = self.records.len();
        let rows: Vec<Option<&[f32]>> = records.iter().map(|r| r.embedding.as_deref()).collect();
        self.vectors.push_many(&rows);
        // The f32 embeddings, now in the vector table, are freed on the other core during the join below.
        let mut spent = Vec::with_capacity(records.len());
        for (mut r, key) in records.into_iter().zip(keys) {
            spent.push(r.embedding.take());
            self.push_record(r, Some(key));
        }
        let rows = first..self.records.len();
        // The columns of the rows the file lacks (the batch's, and any logged since the last checkpoint) are
        // encoded and written ahead on one core while the other tokenizes the batch's texts and adds them to
        // the keyword index (kept in memory when the checkpoint must rewrite a changed row in a chunk this
        // append rewrites too). When the checkpoint will rewrite the whole file, every row's columns are
        // built for it instead.
        let stage = !self.needs_full_rewrite();
        let ahead = !crate::checkpoint::must_stay_in_memory(&self.pending, self.file.rows);
        let unfiled = self.file.rows.min(first)..rows.end;
        // The checkpoint records an LSN past everything logged so far (none of the batch is in the log).
        let next = self.writer()?.next_lsn();
        self.last_lsn = self.last_lsn.max(next);
        // A full rewrite writes the new file but its keyword index ahead, unless the file must hold what
        // only the checkpoint will have: a signature, or a vector graph.
        let file_ahead = (!stage
            && self.opts.signing_key.is_none()
            && self.index.graph().is_none()
            && !self.index.busy())
        .then(|| self.next_meta(self.checkpoint_lsn()));
        let ((), staged) = {
            let Store {
                tokenizer,
                bm25,
                pending,
                records,
                vectors,
                dicts,
                path,
                meta,
                extensions,
                ..
            } = self;
            let records: &[Record] = records;
            rayon::join(
                || {
                    let mut tokens = terms_of(tokenizer, bm25, &records[rows.clone()], |r| {
                        (!r.tombstone).then_some(r.text.as_str())
                    });
                    intern_new_terms(bm25, &mut tokens);
                    for (row, terms) in rows.zip(tokens) {
                        if !records[row].tombstone {
                            super::indexing::index_terms(bm25, pending, row as u32, terms);
                        }
                    }
                },
                || {
                    let staged = if stage {
                        crate::checkpoint::stage_rows(
                            path,
                            records,
                            vectors,
                            &meta.config,
                            unfiled,
                            dicts,
                            ahead,
                        )
                        .map(|r| Staged::Rows(Box::new(r)))
                    } else if let Some(next) = file_ahead {
                        super::rewrite::write_ahead(path, next, records, vectors, extensions)
                            .map(|f| Staged::File(Box::new(f)))
                    } else {
                        crate::columns::prebuild(records, vectors, &meta.config)
                            .map(|c| Staged::Columns(Box::new(c)))
                    };
                    drop(spent);
                    staged
                },
            )
        };
        // Rows whose staging failed are appended by the checkpoint itself (which rewrites the file when
        // appending fails).
        self.checkpoint_staged(false, staged.ok())?;
        Ok(outcomes)
    }

    fn dedup_key_of(&self, m: &NewMemory) -> u64 {
        let agent = m.agent.as_deref().unwrap_or(&self.opts.default_agent);
        let source = Source::parse(m.source.as_deref().unwrap_or(""));
        dedup_key(
            agent,
            m.session.as_deref().unwrap_or(""),
            source.as_str(),
            m.text.trim(),
        )
    }

    /// Validate a new memory and turn it into the record it would become (id `id`), or find its duplicate.
    /// The memory's fields are moved into the record, not copied.
    /// `screen`, when given, holds what [`screen::screen`] found for it (its embedding already normalised).
    fn prepare(
        &mut self,
        m: NewMemory,
        embedding: Option<Vec<f32>>,
        id: u64,
        screen: Option<Screen>,
    ) -> Result<Prepared> {
        if !screen.is_some_and(|s| s.valid) {
            crate::validate::new_memory(&m)?;
        }
        let text = m.text.trim();
        let key = screen.map_or_else(|| self.dedup_key_of(&m), |s| s.key);
        if let Some(&id) = self.dedup.get(&key) {
            // The key is a hash: confirm the stored record really is the same memory.
            let same = self.by_id.get(&id).is_some_and(|&row| {
                let r = &self.records[row as usize];
                r.text == text
                    && r.session == m.session.as_deref().unwrap_or("")
                    && r.agent == m.agent.as_deref().unwrap_or(&self.opts.default_agent)
                    && r.source == Source::parse(m.source.as_deref().unwrap_or(""))
            });
            if same {
                return Ok(Prepared::Duplicate(id));
            }
        }
        let source = Source::parse(m.source.as_deref().unwrap_or(""));
        let text = if text.len() == m.text.len() {
            m.text
        } else {
            text.to_string()
        };
        let agent = m.agent.unwrap_or_else(|| self.opts.default_agent.clone());
        let mut embedding = embedding;
        if let Some(e) = embedding.as_mut() {
            if !screen.map_or_else(|| crate::vectors::all_finite(e), |s| s.finite) {
                return Err(MemoryError::InvalidInput(
                    "embedding contains NaN or infinity".into(),
                ));
            }
            match self.meta.config.embedding_dim {
                Some(d) if d as usize != e.len() => {
                    return Err(MemoryError::Embedding(format!(
                        "embedding has {} dimensions, the store holds {d}-dimensional vectors",
                        e.len()
                    )))
                }
                _ if e.is_empty() => return Err(MemoryError::Embedding("empty embedding".into())),
                _ => {}
            }
            if screen.is_none() {
                normalize(e);
            }
        }
        Ok(Prepared::New(
            Box::new(Record {
                id,
                text,
                source,
                agent,
                session: m.session.unwrap_or_default(),
                origin: m.origin,
                tags: m.tags,
                event_time: m.event_time,
                created_at: now_ms(),
                importance: m.importance.unwrap_or(0.5),
                access_count: 0,
                last_access: 0,
                tier: Tier::Working,
                supersedes: None,
                superseded_by: None,
                tombstone: false,
                embedding,
            }),
            key,
        ))
    }
}

/// The terms of each item's text (none for an item without one), with the ids the keyword index already has
/// for them; on every core for a large batch.
fn terms_of<T: Sync>(
    tokenizer: &Tokenizer,
    bm25: &Bm25Index,
    items: &[T],
    text: impl Fn(&T) -> Option<&str> + Sync,
) -> Vec<(Terms, Vec<u32>)> {
    use rayon::prelude::*;
    let one = |item: &T| {
        let terms = text(item).map_or_else(Terms::default, |t| tokenizer.terms(t));
        let known = bm25.known_ids(terms.iter());
        (terms, known)
    };
    if items.len() >= TOKENIZE_IN_PARALLEL {
        items.par_iter().map(one).collect()
    } else {
        items.iter().map(one).collect()
    }
}

/// Give a batch's new terms their ids in one pass on every core when there are many of them.
fn intern_new_terms(bm25: &mut Bm25Index, tokens: &mut [(Terms, Vec<u32>)]) {
    let unknown: usize = tokens
        .iter()
        .map(|(_, ids)| ids.iter().filter(|&&id| id == UNKNOWN_TERM).count())
        .sum();
    if unknown >= NEW_TERMS_IN_PARALLEL {
        bm25.add_new_terms(tokens);
    }
}
