//! A per-thread cache of short ASCII words' Snowball stems and stop-word flags, for the tokenizer: words
//! repeat, and most of a text's words were seen before. An open-addressing table of 32-byte slots holding
//! the word and its stem inline, so a lookup hashes one 16-byte key, reads one slot (rarely two) and
//! allocates nothing; a hash map of `String`s followed two pointers per word and compared through them.

/// Longest word (in bytes) the cache holds; longer words are stemmed each time.
pub const MAX_WORD: usize = 15;

/// Slots a new cache starts with.
const START_SLOTS: usize = 1 << 10;

/// Most slots a cache grows to (2 MiB); a full cache of this size is emptied and starts filling again.
const MAX_SLOTS: usize = 1 << 16;

/// A lower-case ASCII word of 1 to [`MAX_WORD`] bytes packed in 16 bytes: the bytes, zeros, then the
/// length in the last byte (so no key is 0, the empty slot's mark).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WordKey(u128);

impl WordKey {
    /// The key of `word` (already lower-case), or `None` when it is empty or longer than [`MAX_WORD`].
    pub fn new(word: &[u8]) -> Option<WordKey> {
        if word.is_empty() || word.len() > MAX_WORD {
            return None;
        }
        let mut b = [0u8; 16];
        b[..word.len()].copy_from_slice(word);
        b[15] = word.len() as u8;
        Some(WordKey(u128::from_le_bytes(b)))
    }

    /// The key of the bytes in `packed[..len]` whose other bytes are zero (`len` 1 to [`MAX_WORD`]).
    pub fn from_packed(mut packed: [u8; 16], len: usize) -> Option<WordKey> {
        if len == 0 || len > MAX_WORD {
            return None;
        }
        packed[15] = len as u8;
        Some(WordKey(u128::from_le_bytes(packed)))
    }

    fn slot_hash(self) -> u64 {
        let lo = self.0 as u64;
        let hi = (self.0 >> 64) as u64;
        (lo ^ hi.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    /// 0 when empty.
    key: u128,
    stem: [u8; MAX_WORD],
    /// Stem length in the low four bits; [`STOP`] set for a stop word.
    meta: u8,
}

const STOP: u8 = 0x80;

/// The table (see the module's documentation).
pub struct StemCache {
    slots: Vec<Slot>,
    used: usize,
}

impl Default for StemCache {
    fn default() -> Self {
        StemCache {
            slots: vec![Slot::default(); START_SLOTS],
            used: 0,
        }
    }
}

impl StemCache {
    fn home(&self, key: WordKey) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (key.slot_hash() >> (64 - bits)) as usize
    }

    /// The stem of `key`'s word and whether it is a stop word, if cached.
    pub fn get(&self, key: WordKey) -> Option<(&[u8], bool)> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let s = &self.slots[i];
            if s.key == key.0 {
                let len = usize::from(s.meta & 0x0F);
                return Some((&s.stem[..len], s.meta & STOP != 0));
            }
            if s.key == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Cache `stem` (ignored when longer than [`MAX_WORD`]) and the stop flag for `key`'s word.
    pub fn insert(&mut self, key: WordKey, stem: &str, stop: bool) {
        if stem.len() > MAX_WORD {
            return;
        }
        if 2 * (self.used + 1) > self.slots.len() {
            if self.slots.len() < MAX_SLOTS {
                self.grow();
            } else {
                self.slots.fill(Slot::default());
                self.used = 0;
            }
        }
        let mut slot = Slot {
            key: key.0,
            stem: [0; MAX_WORD],
            meta: stem.len() as u8 | if stop { STOP } else { 0 },
        };
        slot.stem[..stem.len()].copy_from_slice(stem.as_bytes());
        if self.place(slot) {
            self.used += 1;
        }
    }

    /// Put `slot` in its key's place; `false` when the key was there already (replaced).
    fn place(&mut self, slot: Slot) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.home(WordKey(slot.key));
        loop {
            let s = &mut self.slots[i];
            if s.key == 0 || s.key == slot.key {
                let new = s.key == 0;
                *s = slot;
                return new;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let doubled = vec![Slot::default(); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for s in old.into_iter().filter(|s| s.key != 0) {
            self.place(s);
        }
    }

    /// Words cached.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cover_one_to_fifteen_bytes_and_no_more() {
        assert_eq!(WordKey::new(b""), None);
        assert_eq!(WordKey::new(b"abcdefghijklmnop"), None);
        let k = WordKey::new(b"abcdefghijklmno").unwrap();
        assert_ne!(k, WordKey::new(b"abcdefghijklmn").unwrap());
        let mut packed = [0u8; 16];
        packed[..3].copy_from_slice(b"run");
        assert_eq!(WordKey::from_packed(packed, 3), WordKey::new(b"run"));
        assert_eq!(WordKey::from_packed(packed, 0), None);
        // A word and the same word with a trailing zero byte differ by their lengths.
        assert_ne!(WordKey::new(b"a"), WordKey::new(b"a\0"));
    }

    #[test]
    fn answers_what_was_put_in_and_nothing_else() {
        let mut c = StemCache::default();
        assert_eq!(c.len(), 0);
        c.insert(WordKey::new(b"running").unwrap(), "run", false);
        c.insert(WordKey::new(b"the").unwrap(), "the", true);
        assert_eq!(
            c.get(WordKey::new(b"running").unwrap()),
            Some((&b"run"[..], false))
        );
        assert_eq!(
            c.get(WordKey::new(b"the").unwrap()),
            Some((&b"the"[..], true))
        );
        assert_eq!(c.get(WordKey::new(b"runner").unwrap()), None);
        // Again with another stem: replaced, not added.
        c.insert(WordKey::new(b"the").unwrap(), "th", false);
        assert_eq!(
            c.get(WordKey::new(b"the").unwrap()),
            Some((&b"th"[..], false))
        );
        assert_eq!(c.len(), 2);
        // A stem too long to hold is not cached.
        c.insert(WordKey::new(b"x").unwrap(), "sixteen-bytes-xx", false);
        assert_eq!(c.get(WordKey::new(b"x").unwrap()), None);
    }

    #[test]
    fn grows_then_empties_itself_when_full() {
        let mut c = StemCache::default();
        let word = |i: usize| format!("w{i}");
        for i in 0..MAX_SLOTS / 2 {
            c.insert(
                WordKey::new(word(i).as_bytes()).unwrap(),
                &word(i),
                i % 3 == 0,
            );
        }
        assert_eq!(c.len(), MAX_SLOTS / 2);
        assert_eq!(c.slots.len(), MAX_SLOTS);
        for i in (0..MAX_SLOTS / 2).step_by(97) {
            let w = word(i);
            assert_eq!(
                c.get(WordKey::new(w.as_bytes()).unwrap()),
                Some((w.as_bytes(), i % 3 == 0))
            );
        }
        c.insert(WordKey::new(b"more").unwrap(), "more", false);
        assert_eq!(c.len(), 1);
        assert_eq!(c.get(WordKey::new(b"w0").unwrap()), None);
        assert_eq!(
            c.get(WordKey::new(b"more").unwrap()),
            Some((&b"more"[..], false))
        );
    }
}
