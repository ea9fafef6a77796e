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
    0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 9, 10, 11, 12, 13,
    14, 15,
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
        if !(1..=65535).contains(&maxval) {
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

    /// A local gradient quantised to −4…4 (A.3.3), as a sum of comparisons (no branches).
    #[inline(always)]
    pub(super) fn quantize(&self, d: i32) -> i32 {
        i32::from(d > self.near)
            + i32::from(d >= self.t1)
            + i32::from(d >= self.t2)
            + i32::from(d >= self.t3)
            - i32::from(d < -self.near)
            - i32::from(d <= -self.t1)
            - i32::from(d <= -self.t2)
            - i32::from(d <= -self.t3)
    }

    /// The prediction of a regular-mode sample: the median edge detector over its neighbours, moved by the
    /// context's bias correction `c` (subtracted in a context of negative sign) and clamped (A.4).
    #[inline(always)]
    pub(super) fn predict(&self, (ra, rb, rc): (i32, i32, i32), c: i32, negative: bool) -> i32 {
        let px = if rc >= ra.max(rb) {
            ra.min(rb)
        } else if rc <= ra.min(rb) {
            ra.max(rb)
        } else {
            ra + rb - rc
        };
        if negative { px - c } else { px + c }.clamp(0, self.maxval)
    }

    /// A sample rebuilt from its prediction and (de-quantised) error, reduced modulo the range and clamped
    /// (A.4.5).
    #[inline(always)]
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

/// One context's statistics.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stats {
    /// Accumulated error magnitudes (64-bit: RESET may be as large as MAXVAL).
    pub a: i64,
    /// Accumulated errors (bias).
    pub b: i64,
    /// Bias correction.
    pub c: i32,
    /// Errors seen (since the last halving).
    pub n: i32,
}

/// The adaptive statistics of one scan.
pub(super) struct Contexts {
    pub s: [Stats; CONTEXTS],
    /// Negative errors seen by each run-interruption context.
    pub nn: [i32; 2],
}

impl Contexts {
    /// Fresh statistics (A.2.1).
    pub(super) fn new(p: &Params) -> Contexts {
        let a = i64::from(((p.range + 32) >> 6).max(2));
        Contexts {
            s: [Stats {
                a,
                b: 0,
                c: 0,
                n: 1,
            }; CONTEXTS],
            nn: [0; 2],
        }
    }

    /// The Golomb parameter for a context that saw `n` errors of accumulated magnitude `a`: the least k with
    /// n·2^k ≥ a. Its estimate from the two values' top bits is exact or one short.
    #[inline(always)]
    pub(super) fn golomb_k(n: i32, a: i64) -> u32 {
        let n = n.max(1) as u64;
        let a = a.max(0) as u64;
        let k = n.leading_zeros().saturating_sub(a.leading_zeros());
        k + u32::from((n << k) < a)
    }

    /// Updates a regular context after an error `err` (A.6.1, A.6.2).
    #[inline(always)]
    pub(super) fn update_regular(&mut self, q: usize, err: i32, p: &Params) {
        let s = &mut self.s[q];
        s.b += i64::from(err) * i64::from(2 * p.near + 1);
        s.a += i64::from(err.abs());
        if s.n == p.reset {
            s.a >>= 1;
            s.b >>= 1;
            s.n >>= 1;
        }
        s.n += 1;
        let n = i64::from(s.n);
        if s.b <= -n {
            s.b += n;
            if s.c > MIN_C {
                s.c -= 1;
            }
            if s.b <= -n {
                s.b = -n + 1;
            }
        } else if s.b > 0 {
            s.b -= n;
            if s.c < MAX_C {
                s.c += 1;
            }
            if s.b > 0 {
                s.b = 0;
            }
        }
    }

    /// Updates a run-interruption context after a coded value `em` and error `err` (A.7.2.2).
    #[inline]
    pub(super) fn update_run(&mut self, ritype: usize, err: i32, em: i32, p: &Params) {
        let s = &mut self.s[RUN_CONTEXT + ritype];
        if err < 0 {
            self.nn[ritype] += 1;
        }
        s.a += i64::from((em + 1 - ritype as i32) >> 1);
        if s.n == p.reset {
            s.a >>= 1;
            s.n >>= 1;
            self.nn[ritype] >>= 1;
        }
        s.n += 1;
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
    fn quantisation_and_golomb_parameters_match_their_definitions() {
        for (precision, near) in [(16, 0), (8, 0), (8, 3), (2, 0), (12, 5)] {
            let p = Params::new(precision, near, Preset::default()).unwrap();
            let (t1, t2, t3, n) = (p.t1, p.t2, p.t3, p.near);
            for d in -p.maxval - 1..=p.maxval + 1 {
                let want = if d <= -t3 {
                    -4
                } else if d <= -t2 {
                    -3
                } else if d <= -t1 {
                    -2
                } else if d < -n {
                    -1
                } else if d <= n {
                    0
                } else if d < t1 {
                    1
                } else if d < t2 {
                    2
                } else if d < t3 {
                    3
                } else {
                    4
                };
                assert_eq!(p.quantize(d), want, "d {d}");
            }
        }
        for n in 1..300 {
            for a in (0..5000).chain([1 << 20, (1 << 31) - 1, 1 << 35]) {
                let mut k = 0;
                while (i64::from(n) << k) < a {
                    k += 1;
                }
                assert_eq!(Contexts::golomb_k(n, a), k, "n {n} a {a}");
            }
        }
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
