//! Decoding one component's scan line by line: the regular mode (context modelling, median prediction,
//! Golomb-coded errors) and the run mode (T.87 A.3–A.7).

use super::bits::ScanBits;
use super::context::{Contexts, Params, J, RUN_CONTEXT};
use crate::error::{corrupt, Result};

/// Decodes a `rows` × `cols` plane from `bits` into `out`, row-major: one byte a sample when `wide` is false,
/// else two (little-endian).
pub(super) fn decode_plane(
    bits: &mut ScanBits<'_>,
    p: &Params,
    rows: usize,
    cols: usize,
    wide: bool,
    out: &mut [u8],
) -> Result<()> {
    let row_bytes = cols * (1 + usize::from(wide));
    debug_assert_eq!(out.len(), rows * row_bytes);
    let mut ctx = Contexts::new(p);
    // Lines with one sample of padding each side: index 0 is "left of the first sample", cols + 1 "right of
    // the last". The line above the first is all zeros.
    let mut prev = vec![0i32; cols + 2];
    let mut cur = vec![0i32; cols + 2];
    let mut run_index = 0usize;
    let q = Quantizer::new(p, rows * cols);
    for row in out.chunks_exact_mut(row_bytes) {
        // The first sample's left neighbour is the one above it; the last sample's upper right is its upper
        // neighbour. `prev[0]` already holds the left neighbour the line above had (its upper-left value).
        prev[cols + 1] = prev[cols];
        cur[0] = prev[1];
        decode_line(bits, p, &q, &mut ctx, &prev, &mut cur, &mut run_index)?;
        bits.check()?;
        if wide {
            for (o, &v) in row.chunks_exact_mut(2).zip(&cur[1..=cols]) {
                o.copy_from_slice(&(v as u16).to_le_bytes());
            }
        } else {
            for (o, &v) in row.iter_mut().zip(&cur[1..=cols]) {
                *o = v as u8;
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Ok(())
}

/// Decodes samples 1..=cols of `cur` given the line above.
fn decode_line(
    bits: &mut ScanBits<'_>,
    p: &Params,
    quant: &Quantizer,
    ctx: &mut Contexts,
    prev: &[i32],
    cur: &mut [i32],
    run_index: &mut usize,
) -> Result<()> {
    let cols = cur.len() - 2;
    let mut i = 1;
    while i <= cols {
        let (ra, rb, rc, rd) = (cur[i - 1], prev[i], prev[i - 1], prev[i + 1]);
        // The three quantised gradients as one signed index: its sign is that of the first non-zero one
        // (|9·q2 + q3| < 81, |q3| < 9), so the context and its sign come without branches.
        let q = 81 * quant.get(p, rd - rb) + 9 * quant.get(p, rb - rc) + quant.get(p, rc - ra);
        if q == 0 {
            i = run_mode(bits, p, ctx, prev, cur, i, run_index)?;
            continue;
        }
        cur[i] = regular(bits, p, ctx, q, (ra, rb, rc))?;
        i += 1;
    }
    Ok(())
}

/// Gradient quantisation: a table over every difference of two samples for planes large enough to repay
/// filling it, the comparisons otherwise.
struct Quantizer {
    table: Vec<i8>,
}

impl Quantizer {
    fn new(p: &Params, samples: usize) -> Quantizer {
        let span = 2 * p.maxval as usize + 1;
        let table = if samples >= span / 4 {
            (-p.maxval..=p.maxval)
                .map(|d| p.quantize(d) as i8)
                .collect()
        } else {
            Vec::new()
        };
        Quantizer { table }
    }

    #[inline(always)]
    fn get(&self, p: &Params, d: i32) -> i32 {
        match self.table.get((d + p.maxval) as usize) {
            Some(&q) => i32::from(q),
            None => p.quantize(d),
        }
    }
}

/// One sample in the regular mode.
#[inline(always)]
fn regular(
    bits: &mut ScanBits<'_>,
    p: &Params,
    ctx: &mut Contexts,
    q: i32,
    (ra, rb, rc): (i32, i32, i32),
) -> Result<i32> {
    // The context's sign: the first non-zero gradient made positive.
    let negative = q < 0;
    let q = q.unsigned_abs() as usize;
    let px = p.predict((ra, rb, rc), ctx.s[q].c, negative);
    let k = Contexts::golomb_k(ctx.s[q].n, ctx.s[q].a);
    let m = golomb(bits, k, p.limit, p)?;
    // The mapping of A.5.2 undone without branches: even values are the non-negative errors, odd ones the
    // negative (0, -1, 1, -2, ...); in the inverted mapping (NEAR 0, k 0, a context biased negative) every
    // error is the complement of that.
    let zigzag = (m >> 1) ^ -(m & 1);
    let inverted = p.near == 0 && k == 0 && 2 * ctx.s[q].b <= -i64::from(ctx.s[q].n);
    let err = zigzag ^ -i32::from(inverted);
    ctx.update_regular(q, err, p);
    Ok(p.rebuild(px, if negative { -err } else { err }))
}

/// The run starting at sample `i`, and the sample that interrupts it if the line does not end first;
/// returns the index of the next sample to decode.
fn run_mode(
    bits: &mut ScanBits<'_>,
    p: &Params,
    ctx: &mut Contexts,
    prev: &[i32],
    cur: &mut [i32],
    i: usize,
    run_index: &mut usize,
) -> Result<usize> {
    let cols = cur.len() - 2;
    let value = cur[i - 1];
    let left = cols + 1 - i;
    let mut len = 0usize;
    let mut interrupted = false;
    while len < left {
        if bits.bit() == 1 {
            let seg = 1usize << J[*run_index];
            let take = seg.min(left - len);
            len += take;
            if take == seg {
                *run_index = (*run_index + 1).min(31);
            }
        } else {
            len += bits.bits(J[*run_index]) as usize;
            if len >= left {
                return corrupt("JPEG-LS run longer than the rest of its line");
            }
            interrupted = true;
            break;
        }
    }
    cur[i..i + len].fill(value);
    let at = i + len;
    if !interrupted {
        return Ok(at);
    }
    // The run-interruption sample (A.7.2).
    let (ra, rb) = (value, prev[at]);
    let ritype = usize::from((ra - rb).abs() <= p.near);
    let px = if ritype == 1 { ra } else { rb };
    let q = RUN_CONTEXT + ritype;
    let temp = if ritype == 0 {
        ctx.s[q].a
    } else {
        ctx.s[q].a + i64::from(ctx.s[q].n >> 1)
    };
    let k = Contexts::golomb_k(ctx.s[q].n, temp);
    let limit = p.limit - J[*run_index] - 1;
    let em = golomb(bits, k, limit, p)?;
    let t = em + ritype as i32;
    let map = t & 1;
    let magnitude = (t + map) >> 1;
    let err = if (k != 0 || 2 * ctx.nn[ritype] >= ctx.s[q].n) == (map == 1) {
        -magnitude
    } else {
        magnitude
    };
    ctx.update_run(ritype, err, em, p);
    let err = if ritype == 0 && ra > rb { -err } else { err };
    cur[at] = p.rebuild(px, err);
    *run_index = run_index.saturating_sub(1);
    Ok(at + 1)
}

/// A limited-length Golomb code with parameter `k` (A.5.3): a unary prefix, then `k` bits, or after the
/// longest prefix an escaped `qbpp`-bit value. A mapped error is never above the range (the bound keeps a
/// damaged stream's statistics from overflowing).
#[inline(always)]
fn golomb(bits: &mut ScanBits<'_>, k: u32, limit: u32, p: &Params) -> Result<i32> {
    let max_prefix = limit.saturating_sub(p.qbpp + 1);
    let prefix = bits.zeros(max_prefix);
    let value = if prefix < max_prefix {
        if k > 24 {
            return corrupt("JPEG-LS Golomb parameter out of range");
        }
        (u64::from(prefix) << k) | u64::from(bits.bits(k))
    } else if prefix == max_prefix {
        u64::from(bits.bits(p.qbpp)) + 1
    } else {
        return corrupt("JPEG-LS Golomb code longer than the limit");
    };
    if value > 2 * p.range as u64 {
        return corrupt("JPEG-LS error value beyond the sample range");
    }
    Ok(value as i32)
}
