//! A small deterministic generator (xorshift64) for the decoders' random-input tests, and hex decoding for their
//! recorded samples.

/// Deterministic pseudo-random numbers from a seed.
pub(crate) struct TestRng(u64);

impl TestRng {
    /// A generator started from `seed` (0 is replaced, as xorshift would stay at 0).
    pub(crate) fn new(seed: u64) -> Self {
        TestRng(seed.max(1))
    }

    /// The next number.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The bytes of a hex string (two digits a byte), for samples recorded from other writers.
pub(crate) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}
