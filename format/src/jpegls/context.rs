//! JPEG-LS coding parameters and the adaptive context statistics of one scan (T.87 A.2, A.6, A.7.2, C.2.4).

use super::header::Preset;
use crate::error::{corrupt, Result};

/// The 365 regular contexts plus the two run-interruption contexts.
pub(super) const CONTEXTS: usize = 367;
/// Bounds of a context's bias correction.
const MIN_C: i32 = -128;
const MAX_C: i32 = 127;
/// Index of the run-interruption context for `RItype` 0 (366 for `RItype` 1).
pub(super) const RUN_CONTEXT: usize = 365;

/// Run-length order of each `RUNindex` (the J array of T.87 A.7.1.1).
pub(super) const J: [u32; 32] = [
    0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15,
];

/// Parameters fixed for a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Params {
    pub maxval: i32,
    pub near: i32,
    pub t1: i32,
    pub t2: i32,
    pub t3: i32,
    pub reset: i32,
    /// Number of values an error is reduced to (T.87 A.2.1).
    pub range: i32,
    /// Bits of an escaped Golomb value.
    pub qbpp: u32,
    /// Longest Golomb code.
    pub limit: u32,
}

fn ceil_log2(v: u32) -> u32 {
    if v <= 1 {
        0
    } else {
        32 - (v - 1).leading_zeros()
    }
}

impl Params {
    /// The parameters of a scan of `precision`-bit samples with bound `near`, from the preset parameters
    /// in force (defaults where a value is zero, T.87 C.2.4.1.1).
    pub(super) fn new(precision: u32, near: u32, preset: Preset) -> Result<Params> {
        let maxval = if preset.maxval == 0 {
            (1u32 << precision) - 1
        } else {
            preset.maxval
        };
        if maxval < 1 || maxval > 65535 {
            return corrupt(format!("JPEG-LS MAXVAL {maxval}"));
        }
        let max_near = (maxval / 2).min(255);
        if near > max_near {
            return corrupt(format!("JPEG-LS NEAR {near} above its bound {max_near}"));
        }
        let (m, n) = (maxval as i32, near as i32);
        // Default thresholds (C.2.4.1.1.1) from the basic ones (3, 7, 21), each clamped into [lower, MAXVAL];
        // a threshold the stream gives is used as given, and the defaults after it are clamped to it.
        let clamp = |v: i32, lower: i32| if v > m || v < lower { lower } else { v };
        let default = |basic: i32, i: i32, lower: i32| {
            if m >= 128 {
                let factor = (m.min(4095) + 128) >> 8;
                clamp(factor * (basic - i) + i + (2 * i - 1) * n, lower)
            } else {
                let factor = 256 / (m + 1);
                clamp((basic / factor).max(i) + (2 * i - 1) * n, lower)
            }
        };
        let given = |v: u32| (v != 0).then_some(v as i32);
        let t1 = given(preset.t1).unwrap_or_else(|| default(3, 2, n + 1));
        let t2 = given(preset.t2).unwrap_or_else(|| default(7, 3, t1));
        let t3 = given(preset.t3).unwrap_or_else(|| default(21, 4, t2));
        let reset = given(preset.reset).unwrap_or(64);
        if !(n < t1 && t1 <= t2 && t2 <= t3 && t3 <= m) || reset < 3 || reset > m.max(255) {
            return corrupt(format!(
                "JPEG-LS thresholds T1={t1} T2={t2} T3={t3} RESET={reset} out of order"
            ));
        }
        let range = (m + 2 * n) / (2 * n + 1) + 1;
        let qbpp = ceil_log2(range as u32);
        let bpp = ceil_log2(maxval + 1).max(2);
        let limit = 2 * (bpp + bpp.max(8));
        Ok(Params {
            maxval: m,
            near: n,
            t1,
            t2,
            t3,
            reset,
            range,
            qbpp,
            limit,
        })
    }

    /// A local gradient quantised to −4…4 (A.3.3).
    #[inline]
    pub(super) fn quantize(&self, d: i32) -> i32 {
        if d <= -self.t3 {
            -4
        } else if d <= -self.t2 {
            -3
        } else if d <= -self.t1 {
            -2
        } else if d < -self.near {
            -1
        } else if d <= self.near {
            0
        } else if d < self.t1 {
            1
        } else if d < self.t2 {
            2
        } else if d < self.t3 {
            3
        } else {
            4
        }
    }

    /// A sample rebuilt from its prediction and (de-quantised) error, reduced modulo the range and clamped
    /// (A.4.5).
    #[inline]
    pub(super) fn rebuild(&self, px: i32, err: i32) -> i32 {
        let step = 2 * self.near + 1;
        let mut rx = px + err * step;
        if rx < -self.near {
            rx += self.range * step;
        } else if rx > self.maxval + self.near {
            rx -= self.range * step;
        }
        rx.clamp(0, self.maxval)
    }
}

/// The adaptive statistics of one scan.
pub(super) struct Contexts {
    /// Accumulated error magnitudes (64-bit: RESET may be as large as MAXVAL).
    pub a: [i64; CONTEXTS],
    /// Accumulated errors (bias).
    pub b: [i64; CONTEXTS],
    pub c: [i32; CONTEXTS],
    pub n: [i32; CONTEXTS],
    /// Negative errors seen by each run-interruption context.
    pub nn: [i32; 2],
}

impl Contexts {
    /// Fresh statistics (A.2.1).
    pub(super) fn new(p: &Params) -> Contexts {
        let a0 = i64::from(((p.range + 32) >> 6).max(2));
        Contexts {
            a: [a0; CONTEXTS],
            b: [0; CONTEXTS],
            c: [0; CONTEXTS],
            n: [1; CONTEXTS],
            nn: [0; 2],
        }
    }

    /// The Golomb parameter for a context whose accumulated magnitude is `a`.
    #[inline]
    pub(super) fn golomb_k(n: i32, a: i64) -> u32 {
        let mut k = 0;
        while k < 31 && (i64::from(n) << k) < a {
            k += 1;
        }
        k
    }

    /// Updates a regular context after an error `err` (A.6.1, A.6.2).
    #[inline]
    pub(super) fn update_regular(&mut self, q: usize, err: i32, p: &Params) {
        let step = i64::from(2 * p.near + 1);
        self.b[q] += i64::from(err) * step;
        self.a[q] += i64::from(err.abs());
        if self.n[q] == p.reset {
            self.a[q] >>= 1;
            self.b[q] >>= 1;
            self.n[q] >>= 1;
        }
        self.n[q] += 1;
        let n = i64::from(self.n[q]);
        if self.b[q] <= -n {
            self.b[q] += n;
            if self.c[q] > MIN_C {
                self.c[q] -= 1;
            }
            if self.b[q] <= -n {
                self.b[q] = -n + 1;
            }
        } else if self.b[q] > 0 {
            self.b[q] -= n;
            if self.c[q] < MAX_C {
                self.c[q] += 1;
            }
            if self.b[q] > 0 {
                self.b[q] = 0;
            }
        }
    }

    /// Updates a run-interruption context after a coded value `em` and error `err` (A.7.2.2).
    #[inline]
    pub(super) fn update_run(&mut self, ritype: usize, err: i32, em: i32, p: &Params) {
        let q = RUN_CONTEXT + ritype;
        if err < 0 {
            self.nn[ritype] += 1;
        }
        self.a[q] += i64::from((em + 1 - ritype as i32) >> 1);
        if self.n[q] == p.reset {
            self.a[q] >>= 1;
            self.n[q] >>= 1;
            self.nn[ritype] >>= 1;
        }
        self.n[q] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_thresholds_are_those_of_the_standard() {
        let p = Params::new(16, 0, Preset::default()).unwrap();
        assert_eq!((p.t1, p.t2, p.t3, p.reset), (18, 67, 276, 64));
        assert_eq!((p.range, p.qbpp, p.limit), (65536, 16, 64));
        let p = Params::new(8, 0, Preset::default()).unwrap();
        assert_eq!((p.t1, p.t2, p.t3), (3, 7, 21));
        assert_eq!((p.range, p.qbpp, p.limit), (256, 8, 32));
        let p = Params::new(12, 0, Preset::default()).unwrap();
        assert_eq!((p.t1, p.t2, p.t3), (18, 67, 276));
        let p = Params::new(8, 3, Preset::default()).unwrap();
        assert_eq!((p.t1, p.t2, p.t3), (12, 22, 42));
        assert_eq!(p.range, 38);
        // Small MAXVAL: thresholds scaled down, at least 2, 3, 4.
        let p = Params::new(4, 0, Preset::default()).unwrap();
        assert_eq!((p.t1, p.t2, p.t3), (2, 3, 4));
        let p = Params::new(2, 0, Preset::default()).unwrap();
        assert_eq!((p.t1, p.t2, p.t3), (2, 3, 3));
    }

    #[test]
    fn impossible_parameters_are_errors() {
        assert!(Params::new(8, 200, Preset::default()).is_err());
        let bad = Preset {
            t1: 50,
            t2: 10,
            ..Preset::default()
        };
        assert!(Params::new(8, 0, bad).is_err());
    }
}
