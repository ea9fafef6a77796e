//! JPEG-LS encoding, lossless (NEAR = 0), one scan per component: the inverse of [`super::scan`], with the
//! same context modelling, so the streams are those any conforming encoder writes for these parameters.

use super::context::{Contexts, Params, J, RUN_CONTEXT};

/// Writes bits most significant first, stuffing a 0 bit after every 0xFF byte.
struct BitWriter {
    out: Vec<u8>,
    /// Pending bits, right-aligned.
    acc: u64,
    nbits: u32,
}

impl BitWriter {
    fn new(out: Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            nbits: 0,
        }
    }

    /// Appends the low `n` bits of `v` (n ≤ 32).
    #[inline]
    fn put(&mut self, v: u32, n: u32) {
        if n == 0 {
            return;
        }
        self.acc = (self.acc << n) | u64::from(v & (u32::MAX >> (32 - n)));
        self.nbits += n;
        self.drain();
    }

    /// `n` zero bits, then a 1.
    #[inline]
    fn unary(&mut self, mut n: u32) {
        while n > 24 {
            self.put(0, 24);
            n -= 24;
        }
        self.put(1, n + 1);
    }

    /// Moves whole bytes out of `acc`: 8 bits a byte, 7 after an 0xFF.
    #[inline]
    fn drain(&mut self) {
        loop {
            let width = if self.out.last() == Some(&0xFF) { 7 } else { 8 };
            if self.nbits < width {
                return;
            }
            self.nbits -= width;
            self.out
                .push(((self.acc >> self.nbits) & ((1 << width) - 1)) as u8);
        }
    }

    /// Pads the last byte with zero bits (and stuffs a zero byte after a final 0xFF, so the marker that
    /// follows is not read as stuffed data).
    fn finish(mut self) -> Vec<u8> {
        let width = if self.out.last() == Some(&0xFF) { 7 } else { 8 };
        if self.nbits > 0 {
            self.put(0, width - self.nbits);
        }
        if self.out.last() == Some(&0xFF) {
            self.out.push(0);
        }
        self.out
    }
}

/// Appends the scan of one `rows` × `cols` plane of samples to `out`.
pub(super) fn encode_plane(
    out: Vec<u8>,
    p: &Params,
    rows: usize,
    cols: usize,
    samples: &[u16],
) -> Vec<u8> {
    debug_assert_eq!(samples.len(), rows * cols);
    debug_assert_eq!(p.near, 0);
    let mut w = BitWriter::new(out);
    let mut ctx = Contexts::new(p);
    let mut prev = vec![0i32; cols + 2];
    let mut cur = vec![0i32; cols + 2];
    let mut run_index = 0usize;
    for row in samples.chunks_exact(cols) {
        prev[cols + 1] = prev[cols];
        for (c, &s) in cur[1..=cols].iter_mut().zip(row) {
            *c = i32::from(s);
        }
        cur[0] = prev[1];
        let mut i = 1;
        while i <= cols {
            let (ra, rb, rc, rd) = (cur[i - 1], prev[i], prev[i - 1], prev[i + 1]);
            let q = 81 * p.quantize(rd - rb) + 9 * p.quantize(rb - rc) + p.quantize(rc - ra);
            if q == 0 {
                i = run(&mut w, p, &mut ctx, &prev, &cur, i, &mut run_index);
                continue;
            }
            regular(&mut w, p, &mut ctx, q, (ra, rb, rc), cur[i]);
            i += 1;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    w.finish()
}

/// The error reduced into the range's symmetric window (A.4.5).
#[inline]
fn reduce(p: &Params, mut e: i32) -> i32 {
    if e < 0 {
        e += p.range;
    }
    if e >= (p.range + 1) / 2 {
        e -= p.range;
    }
    e
}

fn regular(
    w: &mut BitWriter,
    p: &Params,
    ctx: &mut Contexts,
    q: i32,
    (ra, rb, rc): (i32, i32, i32),
    x: i32,
) {
    let negative = q < 0;
    let q = q.unsigned_abs() as usize;
    let px = p.predict((ra, rb, rc), ctx.s[q].c, negative);
    let e = reduce(p, if negative { px - x } else { x - px });
    let k = Contexts::golomb_k(ctx.s[q].n, ctx.s[q].a);
    let m = if k == 0 && 2 * ctx.s[q].b <= -i64::from(ctx.s[q].n) {
        if e >= 0 {
            2 * e + 1
        } else {
            -2 * (e + 1)
        }
    } else if e >= 0 {
        2 * e
    } else {
        -2 * e - 1
    };
    golomb(w, m as u32, k, p.limit, p.qbpp);
    ctx.update_regular(q, e, p);
}

/// Codes the run starting at sample `i` and the sample that ends it before the line does; returns the next
/// sample's index.
fn run(
    w: &mut BitWriter,
    p: &Params,
    ctx: &mut Contexts,
    prev: &[i32],
    cur: &[i32],
    i: usize,
    run_index: &mut usize,
) -> usize {
    let cols = cur.len() - 2;
    let value = cur[i - 1];
    let len = cur[i..=cols].iter().take_while(|&&v| v == value).count();
    let mut left = len;
    while left >= 1 << J[*run_index] {
        w.put(1, 1);
        left -= 1 << J[*run_index];
        *run_index = (*run_index + 1).min(31);
    }
    let at = i + len;
    if at > cols {
        if left > 0 {
            w.put(1, 1);
        }
        return at;
    }
    w.put(0, 1);
    w.put(left as u32, J[*run_index]);
    // The run-interruption sample.
    let (ra, rb, x) = (value, prev[at], cur[at]);
    let ritype = usize::from(ra == rb);
    let px = if ritype == 1 { ra } else { rb };
    let flip = ritype == 0 && ra > rb;
    let e = reduce(p, if flip { px - x } else { x - px });
    let q = RUN_CONTEXT + ritype;
    let s = ctx.s[q];
    let temp = if ritype == 0 {
        s.a
    } else {
        s.a + i64::from(s.n >> 1)
    };
    let k = Contexts::golomb_k(s.n, temp);
    let nn = ctx.nn[ritype];
    let map = (k == 0 && e > 0 && 2 * nn < s.n) || (e < 0 && (2 * nn >= s.n || k != 0));
    let em = 2 * e.abs() - ritype as i32 - i32::from(map);
    golomb(w, em as u32, k, p.limit - J[*run_index] - 1, p.qbpp);
    ctx.update_run(ritype, e, em, p);
    *run_index = run_index.saturating_sub(1);
    at + 1
}

/// A limited-length Golomb code (A.5.3).
#[inline]
fn golomb(w: &mut BitWriter, m: u32, k: u32, limit: u32, qbpp: u32) {
    let max_prefix = limit - qbpp - 1;
    let prefix = m >> k;
    if prefix < max_prefix {
        w.unary(prefix);
        w.put(m, k);
    } else {
        w.unary(max_prefix);
        w.put(m - 1, qbpp);
    }
}
