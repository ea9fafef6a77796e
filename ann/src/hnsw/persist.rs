//! Saving and loading the graph. The bytes hold the graph, tombstones and (if enabled) the int8 copy,
//! never the f32 vectors, and are tied to the store's generation so a stale index is detected.
//!
//! Layout (little endian): magic `CLAWHNSW`, u32 version, u64 generation, u8 metric, u8 flags
//! (bit 0 quantize, bit 1 keep_pruned), u16 zero, u32 dim, u32 m, u32 ef_construction, u64 seed,
//! u32 slots, u32 entry (u32::MAX = none), u32 max_level, u64 live, `slots` level bytes (255 = absent),
//! `ceil(slots/64)` u64 tombstone words, then the links:
//! - version 3 (written now): u64 byte length, then the lists as [`super::link_codec`] packs them (mutual
//!   links written once, Rice-coded gaps: about 1.2 bytes a link at 100K rows);
//! - version 2 (still read): u64 byte length, then for every present row and each of its levels from 0 up,
//!   a LEB128 count followed by the neighbour ids in ascending order, the first as a LEB128 value and each
//!   next one as the LEB128 gap from the previous (about 2 bytes a link at 100K rows);
//! - version 1 (still read): `slots * (1 + 2m)` u32 level-0 links, then per row with level L > 0
//!   `L * (1 + m)` u32 upper links.
//!
//! If quantized: `slots * dim` i8 codes, `slots` f32 scales and `slots` f32 squared norms; finally a CRC-32
//! of everything before it. Neighbour order inside a list is not kept (search does not depend on it).

use super::{Hnsw, HnswParams, ABSENT, MAX_LEVEL};
use crate::error::AnnError;
use crate::filter::IdSet;
use crate::metric::Metric;
use crate::quant::Int8Vectors;

const MAGIC: &[u8; 8] = b"CLAWHNSW";
const VERSION: u32 = 3;
/// The LEB128-gap layout of earlier files, still read.
const VERSION_LEB128: u32 = 2;
/// The fixed-width layout of earlier files, still read.
const VERSION_FIXED: u32 = 1;

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
    /// A LEB128-encoded u32.
    fn varint(&mut self, what: &str) -> Result<u32, AnnError> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.u8(what)?;
            let bits = u32::from(b & 0x7f);
            if shift == 28 && bits > 0x0f {
                return Err(AnnError::Corrupt(format!("{what}: value exceeds 32 bits")));
            }
            value |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(AnnError::Corrupt(format!("{what}: over-long varint")))
    }
    fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, AnnError> {
        Ok(self
            .u32s(n, what)?
            .into_iter()
            .map(f32::from_bits)
            .collect())
    }
}

#[cfg(test)]
fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends one neighbour list: its length, then its ids ascending as gaps (version 2).
#[cfg(test)]
fn put_list(out: &mut Vec<u8>, ids: &[u32], scratch: &mut Vec<u32>) {
    scratch.clear();
    scratch.extend_from_slice(ids);
    scratch.sort_unstable();
    put_varint(out, scratch.len() as u32);
    let mut prev = 0u32;
    for &id in scratch.iter() {
        put_varint(out, id - prev);
        prev = id;
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
        self.encode(generation, true)
    }

    /// Serialises the graph and tombstones only: the int8 copy is left out (and the flag saying it
    /// exists cleared), for owners that quantise again from their own vectors after loading.
    pub fn graph_bytes(&self, generation: u64) -> Vec<u8> {
        self.encode(generation, false)
    }

    fn encode(&self, generation: u64, include_int8: bool) -> Vec<u8> {
        let include_int8 = include_int8 && self.quant.is_some();
        let slots = self.levels.len();
        let mut out = Vec::with_capacity(
            64 + slots * (3 + self.m0() * 2)
                + if include_int8 {
                    self.quant.as_ref().map_or(0, |q| q.memory_bytes())
                } else {
                    0
                },
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&generation.to_le_bytes());
        out.push(self.params.metric.code());
        out.push(u8::from(include_int8) | (u8::from(self.params.keep_pruned) << 1));
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
        let links = super::link_codec::encode(self);
        out.extend_from_slice(&(links.len() as u64).to_le_bytes());
        out.extend_from_slice(&links);
        if include_int8 {
            self.put_int8(&mut out, slots);
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The bytes of an older format `version`, whose links `write_links` appends, to test that such files
    /// still load: today's encoding with its links section replaced and the checksum redone.
    #[cfg(test)]
    fn to_bytes_with_links(
        &self,
        generation: u64,
        version: u32,
        write_links: &dyn Fn(&mut Vec<u8>),
    ) -> Vec<u8> {
        let mut out = self.encode(generation, true);
        out.truncate(out.len() - 4);
        out[8..12].copy_from_slice(&version.to_le_bytes());
        let header = 8 + 4 + 8 + 4 + 12 + 8 + 4 + 4 + 4 + 8;
        let links_at = header + self.levels.len() + self.levels.len().div_ceil(64) * 8;
        let mut tail = out.split_off(links_at);
        let packed_len = u64::from_le_bytes(tail[..8].try_into().unwrap_or_default()) as usize;
        write_links(&mut out);
        out.extend_from_slice(&tail.split_off(8 + packed_len));
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The version-2 (LEB128 gaps) encoding.
    #[cfg(test)]
    pub(crate) fn to_bytes_leb128(&self, generation: u64) -> Vec<u8> {
        self.to_bytes_with_links(generation, VERSION_LEB128, &|out| {
            let mut links = Vec::new();
            let mut scratch = Vec::new();
            for (id, &l) in self.levels.iter().enumerate() {
                if l != ABSENT {
                    for lv in 0..=l as usize {
                        put_list(&mut links, self.links(id as u32, lv), &mut scratch);
                    }
                }
            }
            out.extend_from_slice(&(links.len() as u64).to_le_bytes());
            out.extend_from_slice(&links);
        })
    }

    /// The version-1 (fixed-width) encoding.
    #[cfg(test)]
    pub(crate) fn to_bytes_fixed_width(&self, generation: u64) -> Vec<u8> {
        self.to_bytes_with_links(generation, VERSION_FIXED, &|out| {
            put_u32s(out, &self.links0);
            for (i, &l) in self.levels.iter().enumerate() {
                if l != ABSENT && l > 0 {
                    put_u32s(out, &self.upper[i]);
                }
            }
        })
    }

    fn put_int8(&self, out: &mut Vec<u8>, slots: usize) {
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
            put_u32s(out, &pad(scales));
            put_u32s(out, &pad(norms));
        }
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
        if ![VERSION, VERSION_LEB128, VERSION_FIXED].contains(&version) {
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
        for (i, &l) in levels.iter().enumerate() {
            if l != ABSENT && (l as usize > MAX_LEVEL || l as usize > max_level) {
                return Err(AnnError::Corrupt(format!(
                    "row {i} has level {l} above the graph's {max_level}"
                )));
            }
        }
        let (links0, upper) = match version {
            VERSION_FIXED => read_fixed_links(&mut r, &levels, m)?,
            VERSION_LEB128 => read_packed_links(&mut r, &levels, m)?,
            _ => {
                let len = usize::try_from(r.u64("links length")?)
                    .map_err(|_| AnnError::Corrupt("links length too large".into()))?;
                super::link_codec::decode(r.take(len, "links")?, &levels, max_level, m)?
            }
        };
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

/// Reads version-1 links: fixed-width lists, level 0 for every slot, then upper levels per row.
fn read_fixed_links(
    r: &mut Reader<'_>,
    levels: &[u8],
    m: usize,
) -> Result<(Vec<u32>, Vec<Vec<u32>>), AnnError> {
    let links0 = r.u32s(
        levels
            .len()
            .checked_mul(1 + 2 * m)
            .ok_or_else(|| AnnError::Corrupt("size overflow".into()))?,
        "level-0 links",
    )?;
    let mut upper = vec![Vec::new(); levels.len()];
    for (i, &l) in levels.iter().enumerate() {
        if l != ABSENT && l > 0 {
            upper[i] = r.u32s(l as usize * (1 + m), "upper links")?;
        }
    }
    Ok((links0, upper))
}

/// Reads version-2 links (counts and ascending ids as LEB128 gaps) into the fixed-width in-memory lists.
fn read_packed_links(
    r: &mut Reader<'_>,
    levels: &[u8],
    m: usize,
) -> Result<(Vec<u32>, Vec<Vec<u32>>), AnnError> {
    let len = usize::try_from(r.u64("links length")?)
        .map_err(|_| AnnError::Corrupt("links length too large".into()))?;
    let mut links = Reader {
        buf: r.take(len, "links")?,
        pos: 0,
    };
    let slots = levels.len();
    let stride0 = 1 + 2 * m;
    let mut links0 = vec![
        0u32;
        slots
            .checked_mul(stride0)
            .ok_or_else(|| AnnError::Corrupt("size overflow".into()))?
    ];
    let mut upper = vec![Vec::new(); slots];
    for (id, &l) in levels.iter().enumerate() {
        if l == ABSENT {
            continue;
        }
        let mut up = vec![0u32; l as usize * (1 + m)];
        for lv in 0..=l as usize {
            let (cap, list) = if lv == 0 {
                (2 * m, &mut links0[id * stride0..(id + 1) * stride0])
            } else {
                let base = (lv - 1) * (1 + m);
                (m, &mut up[base..base + 1 + m])
            };
            let count = links.varint("link count")? as usize;
            if count > cap {
                return Err(AnnError::Corrupt(format!(
                    "row {id} has {count} links at level {lv}"
                )));
            }
            list[0] = count as u32;
            let mut prev = 0u32;
            for (k, slot) in list[1..=count].iter_mut().enumerate() {
                let gap = links.varint("link")?;
                if k > 0 && gap == 0 {
                    return Err(AnnError::Corrupt(format!(
                        "row {id} lists a neighbour twice at level {lv}"
                    )));
                }
                prev = prev
                    .checked_add(gap)
                    .filter(|&n| (n as usize) < slots)
                    .ok_or_else(|| {
                        AnnError::Corrupt(format!("row {id} links past the graph's {slots} rows"))
                    })?;
                *slot = prev;
            }
        }
        upper[id] = up;
    }
    if links.pos != links.buf.len() {
        return Err(AnnError::Corrupt(format!(
            "{} unexpected bytes after the links",
            links.buf.len() - links.pos
        )));
    }
    Ok((links0, upper))
}
