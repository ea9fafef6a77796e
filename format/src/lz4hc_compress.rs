//! An LZ4 block compressor that searches harder than the fast one (what Blosc and Blosc2 call LZ4HC): hash
//! chains over every position of the last 64 KiB, as many candidates per position as the level allows, and a
//! lazy step that takes a literal when the next position starts a longer match. Its output is a plain LZ4
//! block, which every LZ4 decoder reads.
//!
//! The block format: sequences of a token (literal count in the high nibble, match length less 4 in the low
//! one, 15 meaning more bytes of 255 follow), the literals, a little-endian u16 distance and the length's extra
//! bytes. The last sequence is literals only; it holds at least the last 5 bytes, and no match starts in the
//! last 12 (LZ4's end-of-block rules).

/// Shortest match.
const MIN_MATCH: usize = 4;
/// The farthest a match reaches back.
const MAX_DISTANCE: usize = 65_535;
/// Bytes at the end that are always literals.
const LAST_LITERALS: usize = 5;
/// No match starts within this many bytes of the end.
const MATCH_LIMIT: usize = 12;
/// Bits of the chains' head table.
const HASH_BITS: u32 = 15;

/// Compresses `data` as one LZ4 block, searching up to `2^(level - 1)` earlier positions (at most 256) for
/// each match (levels 0 to 9; 0 and 1 search one).
pub(crate) fn compress(data: &[u8], level: u32) -> Vec<u8> {
    let depth = 1usize << level.clamp(1, 9).saturating_sub(1);
    let mut out = Vec::with_capacity(data.len() / 2 + 16);
    let mut finder = Finder::new(data, depth);
    let limit = data.len().saturating_sub(MATCH_LIMIT);
    let (mut i, mut lit_start) = (0usize, 0usize);
    while i < limit {
        let Some((mut dist, mut len)) = finder.best(i) else {
            i += 1;
            continue;
        };
        // Lazy: a longer match one byte later is worth a literal.
        while i + 1 < limit {
            match finder.best(i + 1) {
                Some((d2, l2)) if l2 > len + 1 => {
                    i += 1;
                    (dist, len) = (d2, l2);
                }
                _ => break,
            }
        }
        put_sequence(&mut out, &data[lit_start..i], Some((dist, len)));
        // Positions inside the match join the chains, so later matches may start there.
        finder.insert_until(i + len);
        i += len;
        lit_start = i;
    }
    put_sequence(&mut out, &data[lit_start..], None);
    out
}

/// Hash chains over the positions seen so far.
struct Finder<'a> {
    data: &'a [u8],
    depth: usize,
    /// Per hash, the latest position + 1 (0: none).
    head: Vec<u32>,
    /// Per position (modulo 64 Ki), the distance back to the previous position of the same hash (0: none).
    chain: Vec<u16>,
    /// Positions below this are in the chains.
    next: usize,
}

impl<'a> Finder<'a> {
    fn new(data: &'a [u8], depth: usize) -> Self {
        Finder {
            data,
            depth,
            head: vec![0; 1 << HASH_BITS],
            chain: vec![0; 1 << 16],
            next: 0,
        }
    }

    fn hash(&self, i: usize) -> usize {
        let d = self.data;
        let seq = u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
        (seq.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
    }

    /// Adds the positions before `end` (those with 4 bytes after them) to the chains.
    fn insert_until(&mut self, end: usize) {
        while self.next < end && self.next + MIN_MATCH <= self.data.len() {
            let i = self.next;
            let h = self.hash(i);
            let prev = self.head[h] as usize;
            let back = if prev == 0 { 0 } else { i + 1 - prev };
            self.chain[i & 0xffff] = if back > MAX_DISTANCE { 0 } else { back as u16 };
            self.head[h] = (i + 1) as u32;
            self.next += 1;
        }
    }

    /// The longest match for position `i` (distance, length), or `None` when none reaches 4 bytes; it ends
    /// before the last literals.
    fn best(&mut self, i: usize) -> Option<(usize, usize)> {
        self.insert_until(i);
        let d = self.data;
        let end = d.len() - LAST_LITERALS;
        let h = self.hash(i);
        let mut cand = match self.head[h] as usize {
            0 => return None,
            p => p - 1,
        };
        let mut best: Option<(usize, usize)> = None;
        for _ in 0..self.depth {
            let dist = i - cand;
            if dist == 0 || dist > MAX_DISTANCE {
                break;
            }
            let have = best.map_or(MIN_MATCH - 1, |b| b.1);
            // A candidate must at least match at the byte that would make it longer than the best so far.
            if i + have < end && d[cand + have] == d[i + have] {
                let mut len = 0;
                while i + len < end && d[cand + len] == d[i + len] {
                    len += 1;
                }
                if len > have {
                    best = Some((dist, len));
                }
            }
            let back = self.chain[cand & 0xffff] as usize;
            if back == 0 || back > cand {
                break;
            }
            cand -= back;
        }
        best.filter(|b| b.1 >= MIN_MATCH)
    }
}

/// Appends one sequence: `literals`, then the match (distance, length) if any.
fn put_sequence(out: &mut Vec<u8>, literals: &[u8], m: Option<(usize, usize)>) {
    let lit = literals.len();
    let ml = m.map_or(0, |(_, len)| len - MIN_MATCH);
    let token = ((lit.min(15) as u8) << 4) | if m.is_some() { ml.min(15) as u8 } else { 0 };
    out.push(token);
    if lit >= 15 {
        put_length(out, lit - 15);
    }
    out.extend_from_slice(literals);
    if let Some((dist, _)) = m {
        out.extend_from_slice(&(dist as u16).to_le_bytes());
        if ml >= 15 {
            put_length(out, ml - 15);
        }
    }
}

/// A length's extra bytes: 255 while at least that much remains, then the rest.
fn put_length(out: &mut Vec<u8>, mut n: usize) {
    while n >= 255 {
        out.push(255);
        n -= 255;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::compress;
    use crate::lz_parse::samples;
    use crate::test_rng::TestRng;

    fn round_trip(data: &[u8], level: u32) -> usize {
        let packed = compress(data, level);
        let back = lz4_flex::block::decompress(&packed, data.len()).unwrap();
        assert_eq!(back, data, "level {level}, {} bytes", data.len());
        packed.len()
    }

    #[test]
    fn every_input_decodes_back_with_lz4s_decoder() {
        let mut rng = TestRng::new(0x4c5a);
        let mut inputs = samples::small_alphabets(&mut rng, &[0, 1, 4, 5, 12, 13, 17, 100, 4096]);
        inputs.push(samples::text());
        inputs.push(samples::with_copies(
            &mut rng,
            2000,
            &[(1500, 300), (600, 500), (10, 10)],
            9,
        ));
        inputs.push(samples::with_copies(
            &mut rng,
            70_000,
            &[(65_535, 400), (65_536, 400), (66_000, 500)],
            3,
        ));
        inputs.push(vec![7u8; 100_000]);
        for data in &inputs {
            for level in [0, 1, 5, 9] {
                round_trip(data, level);
            }
        }
    }

    #[test]
    fn deeper_searches_compress_at_least_as_well_as_the_fast_compressor() {
        let mut rng = TestRng::new(9);
        let text = samples::text();
        let mixed =
            samples::with_copies(&mut rng, 3000, &[(2900, 200), (1000, 900), (4000, 60)], 40);
        for data in [text, mixed] {
            let fast = lz4_flex::block::compress(&data).len();
            let hc = round_trip(&data, 9);
            assert!(hc <= fast, "{hc} > {fast}");
            assert!(round_trip(&data, 9) <= round_trip(&data, 1));
        }
    }
}
