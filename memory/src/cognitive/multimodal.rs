//! Multimodal records: a memory that references media (image, audio, video) by URI, with a caption (saved
//! as the record's text, so keyword search finds it) and an embedding per modality space (e.g. an image
//! embedding and a caption embedding). Each modality has its own HNSW index (`clawhdf5-ann`), so
//! per-modality and cross-modal searches walk a graph instead of scanning every vector.
//!
//! Persisted by `AgentMemory` as store extensions: `cognitive_media_NNNN`, chunks of [`CHUNK`] media entries
//! (postcard), so saving one more medium rewrites one chunk only; and `cognitive_media_graph_<modality>`, each
//! modality's HNSW graph ([`Hnsw::to_bytes`], stamped with the number of vectors it indexes), written on
//! checkpoint and close. On open the graphs are loaded as they are; a graph older than the entries (a
//! crash between a save and the next checkpoint) is rebuilt from the entries' vectors, a damaged one is an error.

use std::collections::BTreeMap;

use clawhdf5_ann::{AnnError, FlatVectors, Hnsw, HnswParams, Metric, VectorStore};
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
    /// Every modality.
    pub const ALL: [Modality; 4] = [
        Modality::Text,
        Modality::Image,
        Modality::Audio,
        Modality::Video,
    ];

    /// Lower-case name (`text`, `image`, `audio`, `video`).
    pub fn name(self) -> &'static str {
        match self {
            Modality::Text => "text",
            Modality::Image => "image",
            Modality::Audio => "audio",
            Modality::Video => "video",
        }
    }

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
    /// The graph indexes every row (false while a store is being loaded).
    complete: bool,
    /// The graph changed since it was last persisted.
    dirty: bool,
    /// The graph was read from the file rather than built.
    loaded: bool,
}

fn hnsw_params() -> HnswParams {
    HnswParams {
        metric: Metric::Cosine,
        ..Default::default()
    }
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
    pub fn add(&mut self, entry: MediaEntry) -> Result<(), String> {
        self.push_entry(entry, true)
    }

    /// Add an entry; its vectors go into the HNSW graphs now (`index`) or in [`Self::finish_load`].
    fn push_entry(&mut self, mut entry: MediaEntry, index: bool) -> Result<(), String> {
        self.validate(&entry)?;
        for (_, v) in entry.embeddings.iter_mut() {
            *v = normalised(v)?;
        }
        let pos = self.entries.len() as u32;
        for (m, v) in &entry.embeddings {
            let ix = match self.indexes.get_mut(m) {
                Some(ix) => ix,
                None => {
                    let hnsw = Hnsw::new(v.len(), hnsw_params()).map_err(|e| e.to_string())?;
                    self.indexes.entry(*m).or_insert(ModalIndex {
                        vectors: FlatVectors::new(v.len()),
                        rows: Vec::new(),
                        hnsw,
                        complete: true,
                        dirty: false,
                        loaded: false,
                    })
                }
            };
            let row = ix.vectors.push(v).map_err(|e| e.to_string())?;
            ix.rows.push(pos);
            if index && ix.complete {
                ix.hnsw
                    .insert(row, &ix.vectors)
                    .map_err(|e| e.to_string())?;
                ix.dirty = true;
            } else {
                ix.complete = false;
            }
        }
        self.by_record.insert(entry.record_id, pos);
        self.entries.push(entry);
        let chunk = pos as usize / CHUNK;
        if !self.dirty_chunks.contains(&chunk) {
            self.dirty_chunks.push(chunk);
        }
        Ok(())
    }

    /// After the chunks are loaded: take each modality's persisted graph from `saved` when it indexes exactly
    /// the loaded vectors, else build the graph from the vectors (and mark it for persisting). A graph that
    /// does not decode is an error naming the modality.
    pub fn finish_load<'a>(
        &mut self,
        saved: impl Fn(Modality) -> Option<&'a [u8]>,
    ) -> Result<(), String> {
        for (&m, ix) in self.indexes.iter_mut() {
            if ix.complete {
                continue;
            }
            let rows = ix.rows.len() as u64;
            let from_file = match saved(m) {
                Some(bytes) => match Hnsw::from_bytes(bytes, rows) {
                    Ok(h) if h.dim() == ix.vectors.dim() && h.slots() == ix.rows.len() => Some(h),
                    Ok(_) => {
                        return Err(format!(
                            "{}: the {} graph does not match its vectors",
                            graph_name(m),
                            m.name()
                        ))
                    }
                    Err(AnnError::StaleIndex { .. }) => None,
                    Err(e) => return Err(format!("{}: {e}", graph_name(m))),
                },
                None => None,
            };
            match from_file {
                Some(h) => {
                    ix.hnsw = h;
                    ix.loaded = true;
                    ix.dirty = false;
                }
                None => {
                    ix.hnsw = Hnsw::build(&ix.vectors, hnsw_params()).map_err(|e| e.to_string())?;
                    ix.loaded = false;
                    ix.dirty = true;
                }
            }
            ix.complete = true;
        }
        Ok(())
    }

    /// Whether `m`'s graph was read from the file on open (false: built, or no such modality).
    pub fn graph_loaded(&self, m: Modality) -> bool {
        self.indexes.get(&m).is_some_and(|ix| ix.loaded)
    }

    /// Vectors indexed in modality `m`.
    pub fn indexed(&self, m: Modality) -> usize {
        self.indexes.get(&m).map_or(0, |ix| ix.hnsw.len())
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
        if !ix.complete {
            return Err(format!("the {} index is still loading", space.name()));
        }
        let q = normalised(query)?;
        let found = ix
            .hnsw
            .search(&ix.vectors, &q, k, k.saturating_mul(4).max(32), None)
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

    /// Graphs changed since the last call, as (extension name, bytes).
    pub fn take_dirty_graphs(&mut self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for (&m, ix) in self.indexes.iter_mut() {
            if ix.dirty && ix.complete {
                out.push((graph_name(m), ix.hnsw.to_bytes(ix.rows.len() as u64)));
                ix.dirty = false;
            }
        }
        out
    }

    /// Add the entries of one persisted chunk; call [`Self::finish_load`] after the last one.
    pub fn load_chunk(&mut self, bytes: &[u8]) -> Result<(), String> {
        let entries: Vec<MediaEntry> =
            postcard::from_bytes(bytes).map_err(|e| format!("media chunk does not decode: {e}"))?;
        for e in entries {
            self.push_entry(e, false)?;
        }
        self.dirty_chunks.clear();
        Ok(())
    }
}

/// Extension name of chunk `c`.
pub fn chunk_name(c: usize) -> String {
    format!("cognitive_media_{c:04}")
}

/// Extension name of modality `m`'s HNSW graph.
pub fn graph_name(m: Modality) -> String {
    format!("cognitive_media_graph_{}", m.name())
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
        back.finish_load(|_| None).unwrap();
        assert_eq!(back.get(1).unwrap().uri, "file:///m/1");
        assert!(back.load_chunk(b"\x07garbage").is_err());
    }

    fn many(n: u64) -> MediaIndex {
        let mut ix = MediaIndex::new();
        for i in 0..n {
            let a = i as f32 * 0.37;
            ix.add(entry(
                i + 1,
                Modality::Image,
                vec![(
                    Modality::Image,
                    vec![a.cos(), a.sin(), 0.1 * (i % 7) as f32],
                )],
            ))
            .unwrap();
        }
        ix
    }

    #[test]
    fn graphs_are_persisted_loaded_or_rebuilt() {
        let mut ix = many(300);
        let chunks = ix.take_dirty_chunks();
        assert_eq!(chunks.len(), 2, "300 entries span two chunks");
        let graphs = ix.take_dirty_graphs();
        assert_eq!(graphs.len(), 1);
        assert_eq!(graphs[0].0, "cognitive_media_graph_image");
        assert!(ix.take_dirty_graphs().is_empty(), "clean until changed");
        let q = [0.3f32.cos(), 0.3f32.sin(), 0.0];
        let ids = |h: Vec<MediaHit>| h.into_iter().map(|h| h.record_id).collect::<Vec<_>>();
        let want = ids(ix.search(Modality::Image, &q, 5).unwrap());

        let load = |graph: Option<&[u8]>| {
            let mut back = MediaIndex::new();
            for (_, b) in &chunks {
                back.load_chunk(b).unwrap();
            }
            back.finish_load(|m| graph.filter(|_| m == Modality::Image))
                .map(|()| back)
        };
        let back = load(Some(&graphs[0].1)).unwrap();
        assert!(back.graph_loaded(Modality::Image), "read, not rebuilt");
        assert_eq!(back.indexed(Modality::Image), 300);
        assert_eq!(ids(back.search(Modality::Image, &q, 5).unwrap()), want);

        // A graph saved before the last entries (a crash before the flush) is rebuilt.
        let mut older = many(299);
        let stale = older.take_dirty_graphs();
        let mut back = load(Some(&stale[0].1)).unwrap();
        assert!(!back.graph_loaded(Modality::Image));
        assert_eq!(back.indexed(Modality::Image), 300);
        assert_eq!(
            back.search(Modality::Image, &q, 1).unwrap()[0].record_id,
            want[0]
        );
        assert_eq!(
            back.take_dirty_graphs().len(),
            1,
            "the rebuilt graph is persisted"
        );
        // No graph at all: built.
        assert_eq!(load(None).unwrap().indexed(Modality::Image), 300);
        // A damaged graph is an error naming it.
        let mut bad = graphs[0].1.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0xff;
        let err = load(Some(&bad)).unwrap_err();
        assert!(err.contains("cognitive_media_graph_image"), "{err}");
    }
}
