//! Multimodal records: a memory that references media (image, audio, video) by URI, with a caption (saved
//! as the record's text, so keyword search finds it) and an embedding per modality space (e.g. an image
//! embedding and a caption embedding). Each modality has its own HNSW index (`clawhdf5-ann`), so
//! per-modality and cross-modal searches walk a graph instead of scanning every vector.
//!
//! Persisted by `AgentMemory` as store extensions `cognitive_media_NNNN`, chunks of [`CHUNK`] media entries
//! (postcard), so saving one more medium rewrites one chunk only. Indexes are rebuilt on open.

use std::collections::BTreeMap;

use clawhdf5_ann::{FlatVectors, Hnsw, HnswParams, Metric};
use serde::{Deserialize, Serialize};

use super::sketch::dot;

/// Media entries per persisted chunk.
pub const CHUNK: usize = 256;

/// A modality (embedding space).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Modality {
    /// Text (captions, transcripts).
    Text,
    /// Images.
    Image,
    /// Audio.
    Audio,
    /// Video.
    Video,
}

impl Modality {
    /// Parse `text`, `image`, `audio` or `video`.
    pub fn parse(s: &str) -> Option<Modality> {
        Some(match s {
            "text" => Modality::Text,
            "image" => Modality::Image,
            "audio" => Modality::Audio,
            "video" => Modality::Video,
            _ => return None,
        })
    }
}

/// One media memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MediaEntry {
    /// Record holding the caption.
    pub record_id: u64,
    /// What the media is.
    pub kind: Modality,
    /// Where it lives (path or URI).
    pub uri: String,
    /// MIME type, if known.
    pub mime: Option<String>,
    /// Caption.
    pub caption: String,
    /// Embeddings by modality space.
    pub embeddings: Vec<(Modality, Vec<f32>)>,
}

struct ModalIndex {
    vectors: FlatVectors,
    /// Row -> position in `MediaIndex::entries`.
    rows: Vec<u32>,
    hnsw: Hnsw,
}

/// All media entries with one HNSW index per modality.
#[derive(Default)]
pub struct MediaIndex {
    entries: Vec<MediaEntry>,
    by_record: BTreeMap<u64, u32>,
    indexes: BTreeMap<Modality, ModalIndex>,
    dirty_chunks: Vec<usize>,
}

impl std::fmt::Debug for MediaIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaIndex")
            .field("entries", &self.entries.len())
            .finish()
    }
}

/// A media search result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MediaHit {
    /// Record holding the caption.
    pub record_id: u64,
    /// Cosine similarity.
    pub score: f32,
    /// Modality space it matched in.
    pub matched: Modality,
}

fn normalised(v: &[f32]) -> Result<Vec<f32>, String> {
    if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
        return Err("embedding is empty or holds NaN/infinity".into());
    }
    let n = dot(v, v).sqrt();
    if n == 0.0 {
        return Err("embedding is all zeros".into());
    }
    Ok(v.iter().map(|x| x / n).collect())
}

impl MediaIndex {
    /// Empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of media entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Media entry of a record.
    pub fn get(&self, record_id: u64) -> Option<&MediaEntry> {
        self.by_record
            .get(&record_id)
            .map(|&i| &self.entries[i as usize])
    }

    /// Check an entry before it is saved: embeddings finite, non-zero, one per modality, dimensions matching
    /// the existing index of their modality.
    pub fn validate(&self, entry: &MediaEntry) -> Result<(), String> {
        let mut seen = Vec::new();
        for (m, v) in &entry.embeddings {
            if seen.contains(m) {
                return Err(format!("two {m:?} embeddings for one medium"));
            }
            seen.push(*m);
            normalised(v)?;
            if let Some(ix) = self.indexes.get(m) {
                if ix.hnsw.dim() != v.len() {
                    return Err(format!(
                        "{m:?} embedding has {} dimensions, the index holds {}",
                        v.len(),
                        ix.hnsw.dim()
                    ));
                }
            }
        }
        if entry.uri.trim().is_empty() {
            return Err("a media memory needs a URI".into());
        }
        Ok(())
    }

    /// Add an entry (validated) and index its embeddings.
    pub fn add(&mut self, mut entry: MediaEntry) -> Result<(), String> {
        self.validate(&entry)?;
        for (_, v) in entry.embeddings.iter_mut() {
            *v = normalised(v)?;
        }
        let pos = self.entries.len() as u32;
        for (m, v) in &entry.embeddings {
            let ix = match self.indexes.get_mut(m) {
                Some(ix) => ix,
                None => {
                    let hnsw = Hnsw::new(
                        v.len(),
                        HnswParams {
                            metric: Metric::Cosine,
                            ..Default::default()
                        },
                    )
                    .map_err(|e| e.to_string())?;
                    self.indexes.entry(*m).or_insert(ModalIndex {
                        vectors: FlatVectors::new(v.len()),
                        rows: Vec::new(),
                        hnsw,
                    })
                }
            };
            let row = ix.vectors.push(v).map_err(|e| e.to_string())?;
            ix.rows.push(pos);
            ix.hnsw
                .insert(row, &ix.vectors)
                .map_err(|e| e.to_string())?;
        }
        self.by_record.insert(entry.record_id, pos);
        self.entries.push(entry);
        let chunk = pos as usize / CHUNK;
        if !self.dirty_chunks.contains(&chunk) {
            self.dirty_chunks.push(chunk);
        }
        Ok(())
    }

    /// Nearest media in one modality space.
    pub fn search(
        &self,
        space: Modality,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<MediaHit>, String> {
        let Some(ix) = self.indexes.get(&space) else {
            return Ok(Vec::new());
        };
        if query.len() != ix.hnsw.dim() {
            return Err(format!(
                "query has {} dimensions, the {space:?} index holds {}",
                query.len(),
                ix.hnsw.dim()
            ));
        }
        let q = normalised(query)?;
        let found = ix
            .hnsw
            .search(&ix.vectors, &q, k, (4 * k).max(32), None)
            .map_err(|e| e.to_string())?;
        Ok(found
            .into_iter()
            .map(|n| MediaHit {
                record_id: self.entries[ix.rows[n.id as usize] as usize].record_id,
                score: 1.0 - n.distance,
                matched: space,
            })
            .collect())
    }

    /// Cross-modal search: a query embedding from a shared space (e.g. a CLIP text embedding) searched in every
    /// modality index of the same dimension; each medium appears once, with its best match.
    pub fn search_all(&self, query: &[f32], k: usize) -> Result<Vec<MediaHit>, String> {
        let mut best: BTreeMap<u64, MediaHit> = BTreeMap::new();
        for (&m, ix) in &self.indexes {
            if ix.hnsw.dim() != query.len() {
                continue;
            }
            for h in self.search(m, query, k)? {
                match best.get(&h.record_id) {
                    Some(b) if b.score >= h.score => {}
                    _ => {
                        best.insert(h.record_id, h);
                    }
                }
            }
        }
        let mut out: Vec<MediaHit> = best.into_values().collect();
        out.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.record_id.cmp(&b.record_id))
        });
        out.truncate(k);
        Ok(out)
    }

    /// Chunks changed since the last call, as (extension name, bytes).
    pub fn take_dirty_chunks(&mut self) -> Vec<(String, Vec<u8>)> {
        let chunks = std::mem::take(&mut self.dirty_chunks);
        chunks
            .into_iter()
            .map(|c| {
                let end = ((c + 1) * CHUNK).min(self.entries.len());
                let bytes =
                    postcard::to_allocvec(&self.entries[c * CHUNK..end]).unwrap_or_default();
                (chunk_name(c), bytes)
            })
            .collect()
    }

    /// Add the entries of one persisted chunk.
    pub fn load_chunk(&mut self, bytes: &[u8]) -> Result<(), String> {
        let entries: Vec<MediaEntry> =
            postcard::from_bytes(bytes).map_err(|e| format!("media chunk does not decode: {e}"))?;
        for e in entries {
            self.add(e)?;
        }
        self.dirty_chunks.clear();
        Ok(())
    }
}

/// Extension name of chunk `c`.
pub fn chunk_name(c: usize) -> String {
    format!("cognitive_media_{c:04}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, kind: Modality, emb: Vec<(Modality, Vec<f32>)>) -> MediaEntry {
        MediaEntry {
            record_id: id,
            kind,
            uri: format!("file:///m/{id}"),
            mime: None,
            caption: format!("caption {id}"),
            embeddings: emb,
        }
    }

    #[test]
    fn per_modality_and_cross_modal() {
        let mut ix = MediaIndex::new();
        ix.add(entry(
            1,
            Modality::Image,
            vec![(Modality::Image, vec![1.0, 0.0, 0.0])],
        ))
        .unwrap();
        ix.add(entry(
            2,
            Modality::Audio,
            vec![(Modality::Audio, vec![0.0, 1.0, 0.0])],
        ))
        .unwrap();
        ix.add(entry(
            3,
            Modality::Image,
            vec![
                (Modality::Image, vec![0.0, 0.0, 1.0]),
                (Modality::Text, vec![1.0, 1.0]),
            ],
        ))
        .unwrap();
        let h = ix.search(Modality::Image, &[0.9, 0.1, 0.0], 1).unwrap();
        assert_eq!(h[0].record_id, 1);
        let h = ix.search_all(&[0.1, 0.9, 0.0], 2).unwrap();
        assert_eq!(h[0].record_id, 2);
        assert_eq!(h[0].matched, Modality::Audio);
        assert_eq!(
            ix.search(Modality::Text, &[1.0, 0.9], 1).unwrap()[0].record_id,
            3
        );
        assert!(ix.search(Modality::Video, &[1.0], 1).unwrap().is_empty());
        assert!(ix.search(Modality::Image, &[1.0], 1).is_err());
    }

    #[test]
    fn bad_entries_are_refused_and_chunks_round_trip() {
        let mut ix = MediaIndex::new();
        assert!(ix
            .add(entry(
                1,
                Modality::Image,
                vec![(Modality::Image, vec![0.0, 0.0])]
            ))
            .is_err());
        assert!(ix
            .add(entry(
                1,
                Modality::Image,
                vec![(Modality::Image, vec![f32::NAN])]
            ))
            .is_err());
        ix.add(entry(
            1,
            Modality::Image,
            vec![(Modality::Image, vec![1.0, 0.0])],
        ))
        .unwrap();
        assert!(ix
            .add(entry(
                2,
                Modality::Image,
                vec![(Modality::Image, vec![1.0, 0.0, 0.0])]
            ))
            .is_err());
        let chunks = ix.take_dirty_chunks();
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].0, "cognitive_media_0000");
        let mut back = MediaIndex::new();
        back.load_chunk(&chunks[0].1).unwrap();
        assert_eq!(back.get(1).unwrap().uri, "file:///m/1");
        assert!(back.load_chunk(b"\x07garbage").is_err());
    }
}
