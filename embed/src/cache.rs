//! A persistent embedding cache keyed by (model id, sha256 of the text).
//!
//! File layout: the 8-byte magic `CLAWEMB1`, then records appended one after another:
//! `u32 body_len | body | u32 crc32(body)` with
//! `body = u16 id_len | model id (UTF-8) | 32-byte sha256(text) | u32 dim | dim × f32`, all
//! little-endian. Later records win. A record cut short at the very end of the file (a crash
//! during an append) is dropped and the file truncated to the last whole record; any other damage
//! (bad magic, checksum mismatch, inconsistent lengths) is a [`EmbedError::CacheCorrupt`] error.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{EmbedError, Embedder};

const MAGIC: &[u8; 8] = b"CLAWEMB1";
/// Largest record body accepted when reading (a 1M-dimensional vector).
const MAX_BODY: usize = 4 << 20;

/// sha256 of a text, the text half of a cache key.
pub fn text_hash(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Vectors persisted in an append-only file, looked up by (model id, text hash).
pub struct EmbeddingCache {
    path: PathBuf,
    file: File,
    entries: HashMap<String, HashMap<[u8; 32], Vec<f32>>>,
    count: usize,
}

impl EmbeddingCache {
    /// Opens the cache at `path`, creating it (and its folder) when missing.
    pub fn open(path: &Path) -> Result<Self, EmbedError> {
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| EmbedError::io(format!("creating {}", dir.display()), e))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| EmbedError::io(format!("opening {}", path.display()), e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| EmbedError::io(format!("reading {}", path.display()), e))?;
        let mut cache = EmbeddingCache {
            path: path.to_path_buf(),
            file,
            entries: HashMap::new(),
            count: 0,
        };
        if bytes.is_empty() {
            cache.append(MAGIC)?;
            return Ok(cache);
        }
        let good_len = cache.load(&bytes)?;
        if good_len < bytes.len() as u64 {
            cache
                .file
                .set_len(good_len)
                .map_err(|e| EmbedError::io(format!("truncating {}", path.display()), e))?;
        }
        Ok(cache)
    }

    fn corrupt(&self, offset: usize, reason: impl Into<String>) -> EmbedError {
        EmbedError::CacheCorrupt {
            path: self.path.clone(),
            offset: offset as u64,
            reason: reason.into(),
        }
    }

    /// Parses the whole file; returns the length of its intact prefix.
    fn load(&mut self, bytes: &[u8]) -> Result<u64, EmbedError> {
        if bytes.len() < MAGIC.len() {
            if MAGIC.starts_with(bytes) {
                // Crash while writing the header of a fresh file.
                return Ok(0);
            }
            return Err(self.corrupt(0, "not an embedding cache (bad magic)"));
        }
        if &bytes[..8] != MAGIC {
            return Err(self.corrupt(0, "not an embedding cache (bad magic)"));
        }
        let mut pos = 8;
        while pos < bytes.len() {
            let rest = &bytes[pos..];
            if rest.len() < 4 {
                return Ok(pos as u64);
            }
            let body_len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if body_len > MAX_BODY {
                return Err(self.corrupt(pos, format!("record length {body_len} is implausible")));
            }
            if rest.len() < 4 + body_len + 4 {
                return Ok(pos as u64);
            }
            let body = &rest[4..4 + body_len];
            let crc_bytes = &rest[4 + body_len..8 + body_len];
            let crc = u32::from_le_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
            if crc32fast::hash(body) != crc {
                return Err(self.corrupt(pos, "record checksum mismatch"));
            }
            let (id, hash, vector) = decode_body(body).map_err(|r| self.corrupt(pos, r))?;
            self.insert(id, hash, vector);
            pos += 8 + body_len;
        }
        Ok(pos as u64)
    }

    fn insert(&mut self, model_id: String, hash: [u8; 32], vector: Vec<f32>) {
        if self
            .entries
            .entry(model_id)
            .or_default()
            .insert(hash, vector)
            .is_none()
        {
            self.count += 1;
        }
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), EmbedError> {
        self.file
            .write_all(bytes)
            .map_err(|e| EmbedError::io(format!("appending to {}", self.path.display()), e))
    }

    /// The file backing this cache.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of cached vectors (all models).
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The vector cached for `text` under `model_id`, if any.
    pub fn get(&self, model_id: &str, text: &str) -> Option<&[f32]> {
        self.entries
            .get(model_id)?
            .get(&text_hash(text))
            .map(Vec::as_slice)
    }

    /// Stores `vector` for (`model_id`, `text`) and appends it to the file (no-op when identical).
    pub fn put(&mut self, model_id: &str, text: &str, vector: &[f32]) -> Result<(), EmbedError> {
        let hash = text_hash(text);
        if self
            .entries
            .get(model_id)
            .and_then(|m| m.get(&hash))
            .is_some_and(|v| v.as_slice() == vector)
        {
            return Ok(());
        }
        let record = encode_record(model_id, &hash, vector)?;
        self.append(&record)?;
        self.insert(model_id.to_string(), hash, vector.to_vec());
        Ok(())
    }

    /// Embeds `texts` with `embedder`, computing only the vectors not cached yet (each distinct
    /// missing text once, in one batch) and caching the new ones.
    pub fn embed_with_cache(
        &mut self,
        embedder: &dyn Embedder,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model_id = embedder.model_id().to_string();
        let mut missing: Vec<&str> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &t in texts {
            if self.get(&model_id, t).is_none() && seen.insert(t) {
                missing.push(t);
            }
        }
        if !missing.is_empty() {
            let vectors = embedder.embed_batch(&missing)?;
            if vectors.len() != missing.len() {
                return Err(EmbedError::WrongCount {
                    expected: missing.len(),
                    got: vectors.len(),
                });
            }
            for (t, v) in missing.iter().zip(&vectors) {
                if v.len() != embedder.dim() {
                    return Err(EmbedError::DimensionMismatch {
                        expected: embedder.dim(),
                        got: v.len(),
                    });
                }
                self.put(&model_id, t, v)?;
            }
        }
        texts
            .iter()
            .map(|t| {
                self.get(&model_id, t).map(<[f32]>::to_vec).ok_or_else(|| {
                    EmbedError::InvalidInput("cache lost a vector it just stored".into())
                })
            })
            .collect()
    }

    /// Forces appended records to disk (`fsync`).
    pub fn sync(&self) -> Result<(), EmbedError> {
        self.file
            .sync_data()
            .map_err(|e| EmbedError::io(format!("syncing {}", self.path.display()), e))
    }
}

fn encode_record(model_id: &str, hash: &[u8; 32], vector: &[f32]) -> Result<Vec<u8>, EmbedError> {
    let id_len = u16::try_from(model_id.len())
        .map_err(|_| EmbedError::InvalidInput("model id longer than 65535 bytes".into()))?;
    let body_len = 2 + model_id.len() + 32 + 4 + 4 * vector.len();
    if body_len > MAX_BODY {
        return Err(EmbedError::InvalidInput(format!(
            "vector of {} values is too long to cache",
            vector.len()
        )));
    }
    let mut body = Vec::with_capacity(body_len);
    body.extend_from_slice(&id_len.to_le_bytes());
    body.extend_from_slice(model_id.as_bytes());
    body.extend_from_slice(hash);
    body.extend_from_slice(&(vector.len() as u32).to_le_bytes());
    for v in vector {
        body.extend_from_slice(&v.to_le_bytes());
    }
    let mut rec = Vec::with_capacity(body_len + 8);
    rec.extend_from_slice(&(body_len as u32).to_le_bytes());
    rec.extend_from_slice(&body);
    rec.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    Ok(rec)
}

fn decode_body(body: &[u8]) -> Result<(String, [u8; 32], Vec<f32>), String> {
    if body.len() < 2 {
        return Err("record too short".into());
    }
    let id_len = u16::from_le_bytes([body[0], body[1]]) as usize;
    let rest = &body[2..];
    if rest.len() < id_len + 36 {
        return Err("record shorter than its model id".into());
    }
    let id = std::str::from_utf8(&rest[..id_len])
        .map_err(|_| "model id is not UTF-8".to_string())?
        .to_string();
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&rest[id_len..id_len + 32]);
    let d = &rest[id_len + 32..id_len + 36];
    let dim = u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize;
    let data = &rest[id_len + 36..];
    if data.len() != dim * 4 {
        return Err(format!("vector of {dim} values but {} bytes", data.len()));
    }
    let vector = data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok((id, hash, vector))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting {
        calls: AtomicUsize,
        texts: AtomicUsize,
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "test-model"
        }
        fn dim(&self) -> usize {
            3
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, 1.0, -1.0])
                .collect())
        }
    }

    #[test]
    fn vectors_survive_reopen_and_are_not_recomputed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sub/cache.bin");
        let emb = Counting {
            calls: AtomicUsize::new(0),
            texts: AtomicUsize::new(0),
        };
        {
            let mut c = EmbeddingCache::open(&path).unwrap();
            let v = c.embed_with_cache(&emb, &["a", "bb", "a"]).unwrap();
            assert_eq!(v[0], vec![1.0, 1.0, -1.0]);
            assert_eq!(v[1][0], 2.0);
            assert_eq!(v[2], v[0]);
            assert_eq!(emb.texts.load(Ordering::SeqCst), 2);
            assert_eq!(c.len(), 2);
        }
        let mut c = EmbeddingCache::open(&path).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("test-model", "bb"), Some(&[2.0f32, 1.0, -1.0][..]));
        assert_eq!(c.get("other-model", "bb"), None);
        c.embed_with_cache(&emb, &["a", "bb"]).unwrap();
        assert_eq!(emb.calls.load(Ordering::SeqCst), 1);
        c.embed_with_cache(&emb, &["ccc"]).unwrap();
        assert_eq!(emb.calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn torn_tail_is_dropped_but_flipped_bit_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("c.bin");
        {
            let mut c = EmbeddingCache::open(&path).unwrap();
            c.put("m", "one", &[1.0, 2.0]).unwrap();
            c.put("m", "two", &[3.0, 4.0]).unwrap();
        }
        let full = std::fs::read(&path).unwrap();
        // Cut the last record in half: the first survives, the file is repaired.
        std::fs::write(&path, &full[..full.len() - 5]).unwrap();
        {
            let c = EmbeddingCache::open(&path).unwrap();
            assert_eq!(c.len(), 1);
            assert_eq!(c.get("m", "two"), None);
        }
        let mut c = EmbeddingCache::open(&path).unwrap();
        c.put("m", "two", &[3.0, 4.0]).unwrap();
        drop(c);
        assert_eq!(std::fs::read(&path).unwrap(), full);
        // Flip a bit inside the first record's vector.
        let mut bad = full.clone();
        bad[8 + 4 + 2 + 1 + 32 + 4] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        let err = EmbeddingCache::open(&path).err().unwrap();
        assert!(
            matches!(err, EmbedError::CacheCorrupt { offset: 8, .. }),
            "{err}"
        );
        std::fs::write(&path, b"something else entirely").unwrap();
        assert!(matches!(
            EmbeddingCache::open(&path),
            Err(EmbedError::CacheCorrupt { offset: 0, .. })
        ));
    }
}
