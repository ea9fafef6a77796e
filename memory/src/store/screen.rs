//! The checks a batch's memories need before they become records that depend on no store state — each
//! memory's validation, its dedup key, its embedding checked finite and scaled to unit length — done on every
//! core for a large batch.

use rayon::prelude::*;

use crate::record::{NewMemory, Source};
use crate::vectors::{all_finite, normalize};

use super::dedup_key;

/// Batches of at least this many memories are screened on every core (smaller ones one by one, as they are
/// prepared).
pub(super) const SCREEN_IN_PARALLEL: usize = 1024;

/// What screening found for one memory of a batch.
#[derive(Clone, Copy, Debug)]
pub(super) struct Screen {
    /// It passed [`crate::validate::new_memory`].
    pub valid: bool,
    /// Its dedup key ([`dedup_key`] of what the record would hold).
    pub key: u64,
    /// Its embedding, if any, is finite and now of unit length.
    pub finite: bool,
}

/// Whether each memory passes [`crate::validate::new_memory`].
pub(super) fn validity(items: &[NewMemory]) -> Vec<bool> {
    let ok = |m: &NewMemory| crate::validate::new_memory(m).is_ok();
    if items.len() >= SCREEN_IN_PARALLEL {
        items.par_iter().map(ok).collect()
    } else {
        items.iter().map(ok).collect()
    }
}

/// Screen a large batch (`None` for a small one): `embeddings[i]` belongs to `items[i]`, and saves without an
/// agent belong to `default_agent`. Finite embeddings are normalised in place.
pub(super) fn screen(
    items: &[NewMemory],
    embeddings: &mut [Option<Vec<f32>>],
    valid: &[bool],
    default_agent: &str,
) -> Option<Vec<Screen>> {
    if items.len() < SCREEN_IN_PARALLEL || items.len() != embeddings.len() {
        return None;
    }
    Some(
        items
            .par_iter()
            .zip(embeddings.par_iter_mut())
            .zip(valid.par_iter())
            .map(|((m, e), &valid)| {
                let source = Source::parse(m.source.as_deref().unwrap_or(""));
                let key = dedup_key(
                    m.agent.as_deref().unwrap_or(default_agent),
                    m.session.as_deref().unwrap_or(""),
                    source.as_str(),
                    m.text.trim(),
                );
                let finite = e.as_mut().is_none_or(|e| {
                    let finite = all_finite(e);
                    if finite {
                        normalize(e);
                    }
                    finite
                });
                Screen { valid, key, finite }
            })
            .collect(),
    )
}
