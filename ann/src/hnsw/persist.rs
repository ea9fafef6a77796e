//! Saving and loading the graph. The bytes hold the graph, tombstones and (if enabled) the int8 copy,
//! never the f32 vectors, and are tied to the store's generation so a stale index is detected.
//!
//! Layout (little endian): magic `CLAWHNSW`, u32 version, u64 generation, u8 metric, u8 flags
//! (bit 0 quantize, bit 1 keep_pruned), u16 zero, u32 dim, u32 m, u32 ef_construction, u64 seed,
//! u32 slots, u32 entry (u32::MAX = none), u32 max_level, u64 live, `slots` level bytes (255 = absent),
//! `ceil(slots/64)` u64 tombstone words, `slots * (1 + 2m)` u32 level-0 links, per row with level L > 0
//! `L * (1 + m)` u32 upper links; if quantized: `slots * dim` i8 codes, `slots` f32 scales and
//! `slots` f32 squared norms; finally a CRC-32 of everything before it.

use super::{Hnsw, HnswParams, ABSENT, MAX_LEVEL};
use crate::error::AnnError;
use crate::filter::IdSet;
use crate::metric::Metric;
use crate::quant::Int8Vectors;

const MAGIC: &[u8; 8] = b"CLAWHNSW";
const VERSION: u32 = 1;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], AnnError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                AnnError::Corrupt(format!(
                    "truncated while reading {what} ({n} bytes at offset {})",
                    self.pos
                ))
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, AnnError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, AnnError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().unwrap_or_default(),
        ))
    }
    fn u32(&mut self, what: &str) -> Result<u32, AnnError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().unwrap_or_default(),
        ))
    }
    fn u64(&mut self, what: &str) -> Result<u64, AnnError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().unwrap_or_default(),
        ))
    }
    fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>, AnnError> {
        let bytes = self.take(
            n.checked_mul(4)
                .ok_or_else(|| AnnError::Corrupt(format!("{what} too large")))?,
            what,
        )?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, AnnError> {
        Ok(self
            .u32s(n, what)?
            .into_iter()
            .map(f32::from_bits)
            .collect())
    }
}

fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    out.reserve(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

impl Hnsw {
    /// Serialises the graph (not the f32 vectors) stamped with the store's `generation`.
    pub fn to_bytes(&self, generation: u64) -> Vec<u8> {
        let slots = self.levels.len();
        let mut out = Vec::with_capacity(
            64 + slots * (1 + (1 + self.m0()) * 4)
                + self.quant.as_ref().map_or(0, |q| q.memory_bytes()),
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&generation.to_le_bytes());
        out.push(self.params.metric.code());
        out.push(u8::from(self.quant.is_some()) | (u8::from(self.params.keep_pruned) << 1));
        out.extend_from_slice(&0u16.to_le_bytes());
        for v in [
            self.dim as u32,
            self.params.m as u32,
            self.params.ef_construction as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.params.seed.to_le_bytes());
        out.extend_from_slice(&(slots as u32).to_le_bytes());
        out.extend_from_slice(&self.entry.unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&(self.max_level as u32).to_le_bytes());
        out.extend_from_slice(&(self.live as u64).to_le_bytes());
        out.extend_from_slice(&self.levels);
        let words = slots.div_ceil(64);
        for i in 0..words {
            let w = self.deleted.words().get(i).copied().unwrap_or(0);
            out.extend_from_slice(&w.to_le_bytes());
        }
        put_u32s(&mut out, &self.links0);
        for (i, &l) in self.levels.iter().enumerate() {
            if l != ABSENT && l > 0 {
                put_u32s(&mut out, &self.upper[i]);
            }
        }
        if let Some(q) = &self.quant {
            // Rows past the copy's length (never the case after inserts) are written as zeros.
            let rows = q.len().min(slots);
            for id in 0..rows as u32 {
                out.extend(q.codes(id).map(|c| c as u8));
            }
            out.resize(out.len() + (slots - rows) * self.dim, 0);
            let (scales, norms) = q.scales_and_norms();
            let pad = |v: &[f32]| -> Vec<u32> {
                let mut b: Vec<u32> = v[..rows].iter().map(|x| x.to_bits()).collect();
                b.resize(slots, 0);
                b
            };
            put_u32s(&mut out, &pad(scales));
            put_u32s(&mut out, &pad(norms));
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Loads an index saved by [`Hnsw::to_bytes`]. Fails with [`AnnError::StaleIndex`] if it was saved
    /// for another store generation and [`AnnError::Corrupt`] if the bytes are damaged or inconsistent.
    pub fn from_bytes(bytes: &[u8], expected_generation: u64) -> Result<Hnsw, AnnError> {
        if bytes.len() < MAGIC.len() + 4 + 8 + 4 {
            return Err(AnnError::Corrupt(format!(
                "{} bytes is too short for an HNSW index",
                bytes.len()
            )));
        }
        if &bytes[..8] != MAGIC {
            return Err(AnnError::Corrupt(
                "bad magic (not a clawhdf5 HNSW index)".into(),
            ));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let mut r = Reader { buf: body, pos: 8 };
        let version = r.u32("version")?;
        if version != VERSION {
            return Err(AnnError::Corrupt(format!(
                "unsupported version {version} (this build reads {VERSION})"
            )));
        }
        let generation = r.u64("generation")?;
        let want_crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32fast::hash(body) != want_crc {
            return Err(AnnError::Corrupt("checksum mismatch".into()));
        }
        if generation != expected_generation {
            return Err(AnnError::StaleIndex {
                expected: expected_generation,
                found: generation,
            });
        }
        let metric = Metric::from_code(r.u8("metric")?)
            .ok_or_else(|| AnnError::Corrupt("unknown metric code".into()))?;
        let flags = r.u8("flags")?;
        r.u16("reserved")?;
        let dim = r.u32("dim")? as usize;
        let m = r.u32("m")? as usize;
        let ef_construction = r.u32("ef_construction")? as usize;
        let seed = r.u64("seed")?;
        let params = HnswParams {
            m,
            ef_construction,
            seed,
            metric,
            quantize: flags & 1 != 0,
            keep_pruned: flags & 2 != 0,
        };
        let mut h = Hnsw::new(dim, params)
            .map_err(|e| AnnError::Corrupt(format!("bad parameters: {e}")))?;
        let slots = r.u32("slots")? as usize;
        let entry = r.u32("entry")?;
        let max_level = r.u32("max_level")? as usize;
        let live = r.u64("live")?;
        let levels = r.take(slots, "levels")?.to_vec();
        let words: Vec<u64> = (0..slots.div_ceil(64))
            .map(|_| r.u64("tombstones"))
            .collect::<Result<_, _>>()?;
        let links0 = r.u32s(
            slots
                .checked_mul(1 + 2 * m)
                .ok_or_else(|| AnnError::Corrupt("size overflow".into()))?,
            "level-0 links",
        )?;
        let mut upper = vec![Vec::new(); slots];
        for (i, &l) in levels.iter().enumerate() {
            if l != ABSENT && l > 0 {
                if l as usize > MAX_LEVEL || l as usize > max_level {
                    return Err(AnnError::Corrupt(format!(
                        "row {i} has level {l} above the graph's {max_level}"
                    )));
                }
                upper[i] = r.u32s(l as usize * (1 + m), "upper links")?;
            }
        }
        if flags & 1 != 0 {
            let ncodes = slots
                .checked_mul(dim)
                .ok_or_else(|| AnnError::Corrupt("size overflow".into()))?;
            let codes: Vec<i8> = r
                .take(ncodes, "int8 codes")?
                .iter()
                .map(|&b| b as i8)
                .collect();
            let scales = r.f32s(slots, "int8 scales")?;
            let norms = r.f32s(slots, "int8 norms")?;
            h.quant = Some(
                Int8Vectors::from_parts(dim, &codes, scales, norms)
                    .ok_or_else(|| AnnError::Corrupt("int8 copy sizes disagree".into()))?,
            );
        }
        if r.pos != body.len() {
            return Err(AnnError::Corrupt(format!(
                "{} unexpected trailing bytes",
                body.len() - r.pos
            )));
        }
        h.levels = levels;
        h.links0 = links0;
        h.upper = upper;
        h.deleted = IdSet::from_words(words);
        h.max_level = max_level;
        h.entry = (entry != u32::MAX).then_some(entry);
        h.validate_graph(live)?;
        h.live = live as usize;
        Ok(h)
    }

    /// Checks every invariant search relies on, so a loaded index can never index out of bounds.
    fn validate_graph(&self, live: u64) -> Result<(), AnnError> {
        let slots = self.levels.len();
        let mut counted = 0u64;
        if self
            .deleted
            .iter()
            .any(|id| id as usize >= slots || !self.is_present(id))
        {
            return Err(AnnError::Corrupt(
                "tombstone on a row that is not in the graph".into(),
            ));
        }
        if self.max_level > MAX_LEVEL {
            return Err(AnnError::Corrupt(format!(
                "max level {} too high",
                self.max_level
            )));
        }
        match self.entry {
            None if self.levels.iter().any(|&l| l != ABSENT) => {
                return Err(AnnError::Corrupt("rows present but no entry point".into()))
            }
            Some(e)
                if !self.is_present(e) || self.levels[e as usize] as usize != self.max_level =>
            {
                return Err(AnnError::Corrupt(format!(
                    "entry point {e} is not a row at the top level"
                )))
            }
            _ => {}
        }
        for id in 0..slots as u32 {
            let l = self.levels[id as usize];
            if l == ABSENT {
                if self.links0[id as usize * (1 + self.m0())] != 0 {
                    return Err(AnnError::Corrupt(format!("absent row {id} has links")));
                }
                continue;
            }
            if !self.deleted.contains(id) {
                counted += 1;
            }
            for lv in 0..=l as usize {
                let stride_base = if lv == 0 {
                    id as usize * (1 + self.m0())
                } else {
                    (lv - 1) * (1 + self.params.m)
                };
                let count = if lv == 0 {
                    self.links0[stride_base]
                } else {
                    self.upper[id as usize][stride_base]
                } as usize;
                if count > self.cap(lv) {
                    return Err(AnnError::Corrupt(format!(
                        "row {id} has {count} links at level {lv}"
                    )));
                }
                for &n in self.links(id, lv) {
                    if !self.is_present(n) || (self.levels[n as usize] as usize) < lv {
                        return Err(AnnError::Corrupt(format!(
                            "row {id} links to {n}, which is not at level {lv}"
                        )));
                    }
                }
            }
        }
        if counted != live {
            return Err(AnnError::Corrupt(format!(
                "live count {live} disagrees with the graph ({counted})"
            )));
        }
        if let Some(q) = &self.quant {
            if q.len() != slots {
                return Err(AnnError::Corrupt(
                    "int8 copy has the wrong number of rows".into(),
                ));
            }
        }
        Ok(())
    }
}
