//! The greedy LZ77 parse our LZO1X and BloscLZ compressors share: a hash table of 4-byte sequences finds,
//! position by position, an earlier occurrence within reach; a match runs as far as the bytes agree. Where
//! matches are scarce the scan skips ahead faster, so incompressible input costs little time.

/// Bits of the hash table's index.
const HASH_BITS: u32 = 14;

/// What a parse may produce.
pub(crate) struct Limits {
    /// The farthest a match may reach back.
    pub max_distance: usize,
    /// Bytes at the end that no match may cover (left to a last literal run).
    pub keep_tail: usize,
    /// Whether a match may start at the input's first byte.
    pub match_at_start: bool,
}

/// Parses `data` into literal runs and matches, in order: `on_match(literals, distance, length)` for each match
/// (its length at least 4), with the literals that precede it; returns the literals after the last one.
pub(crate) fn greedy<'a>(
    data: &'a [u8],
    limits: &Limits,
    mut on_match: impl FnMut(&'a [u8], usize, usize),
) -> &'a [u8] {
    let end = data.len().saturating_sub(limits.keep_tail);
    let mut table = vec![0u32; 1 << HASH_BITS];
    let (mut i, mut lit_start, mut misses) = (0usize, 0usize, 0usize);
    while i + 4 <= end {
        let seq = read_u32(data, i);
        let h = hash(seq);
        let cand = table[h] as usize;
        table[h] = i as u32;
        let found = (i > 0 || limits.match_at_start)
            && cand < i
            && i - cand <= limits.max_distance
            && read_u32(data, cand) == seq;
        if !found {
            misses += 1;
            i += 1 + (misses >> 5);
            continue;
        }
        misses = 0;
        let mut len = 4;
        while i + len < end && data[cand + len] == data[i + len] {
            len += 1;
        }
        on_match(&data[lit_start..i], i - cand, len);
        let next = i + len;
        // Later matches may start inside this one.
        if next + 2 <= data.len() {
            table[hash(read_u32(data, next - 2))] = (next - 2) as u32;
        }
        i = next;
        lit_start = next;
    }
    &data[lit_start..]
}

/// A little-endian u32 at `i` (4 bytes must be there).
fn read_u32(data: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]])
}

/// The hash table's slot for a 4-byte sequence.
fn hash(seq: u32) -> usize {
    (seq.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// Inputs the compressors' tests share.
#[cfg(test)]
pub(crate) mod samples {
    use crate::test_rng::TestRng;

    /// `base` random bytes, then for each `(back, len)` a copy of the `len` bytes that start `back` bytes
    /// before the end so far, each followed by up to `gap` random bytes.
    pub(crate) fn with_copies(
        rng: &mut TestRng,
        base: usize,
        copies: &[(usize, usize)],
        gap: u64,
    ) -> Vec<u8> {
        let mut out: Vec<u8> = (0..base).map(|_| rng.next() as u8).collect();
        for &(back, len) in copies {
            let at = out.len() - back;
            out.extend_from_within(at..at + len);
            out.extend((0..(rng.next() % gap) as usize).map(|_| rng.next() as u8));
        }
        out
    }

    /// English-like text that repeats with small changes.
    pub(crate) fn text() -> Vec<u8> {
        (0..3000)
            .flat_map(|i| format!("the quick brown fox {i} jumps ").into_bytes())
            .collect()
    }

    /// Bytes of each length in `lens` over alphabets of 1 to 8 symbols.
    pub(crate) fn small_alphabets(rng: &mut TestRng, lens: &[usize]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for alphabet in 1..9u64 {
            for &len in lens {
                out.push((0..len).map(|_| (rng.next() % alphabet) as u8).collect());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{greedy, Limits};

    #[test]
    fn matches_and_literals_cover_the_input_within_the_limits() {
        let mut rng = crate::test_rng::TestRng::new(0x1a2b);
        let mut data: Vec<u8> = (0..5_000).map(|_| (rng.next() % 5) as u8).collect();
        data.extend_from_within(..3_000);
        for (max_distance, keep_tail, match_at_start) in
            [(100, 0, true), (49_151, 1, false), (8, 7, true)]
        {
            let limits = Limits {
                max_distance,
                keep_tail,
                match_at_start,
            };
            let mut out = Vec::new();
            let rest = greedy(&data, &limits, |lit, dist, len| {
                assert!(dist <= max_distance && len >= 4 && dist <= out.len() + lit.len());
                out.extend_from_slice(lit);
                for _ in 0..len {
                    out.push(out[out.len() - dist]);
                }
            });
            assert!(rest.len() >= keep_tail);
            out.extend_from_slice(rest);
            assert_eq!(out, data);
        }
    }
}
