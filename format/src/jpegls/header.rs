//! The marker segments of a JPEG-LS codestream (ITU-T T.87): the frame header (SOF55), preset coding
//! parameters (LSE), scan headers (SOS), and the segments a decoder skips (APPn, COM).

use crate::error::{corrupt, unsupported, Result};

/// The frame: sample precision, size and components.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Frame {
    /// Bits per sample (2–16).
    pub precision: u32,
    /// Lines.
    pub rows: usize,
    /// Samples per line.
    pub cols: usize,
    /// Component identifiers, in frame order.
    pub components: Vec<u8>,
}

/// Preset coding parameters (LSE id 1); zero means "the default".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Preset {
    pub maxval: u32,
    pub t1: u32,
    pub t2: u32,
    pub t3: u32,
    pub reset: u32,
}

/// A scan header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Scan {
    /// Component identifiers coded in the scan.
    pub components: Vec<u8>,
    /// Near-lossless bound (0: lossless).
    pub near: u32,
    /// Interleave mode: 0 none, 1 line, 2 sample.
    pub interleave: u8,
}

/// One parsed segment.
pub(super) enum Segment {
    Frame(Frame),
    Preset(Preset),
    /// A scan header; its entropy-coded data starts at `data_start`.
    Scan(Scan, usize),
    End,
}

/// Reads marker segments from a codestream.
pub(super) struct Markers<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Markers<'a> {
    /// Positions after the SOI marker (which must start the stream).
    pub(super) fn new(data: &'a [u8]) -> Result<Self> {
        if data.get(..2) != Some(&[0xFF, 0xD8]) {
            return corrupt("JPEG-LS stream does not start with an SOI marker");
        }
        Ok(Markers { data, pos: 2 })
    }

    /// Moves to `pos` (the end of a scan's entropy-coded data).
    pub(super) fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// The next segment that matters to decoding; APPn and COM segments are skipped.
    pub(super) fn next(&mut self) -> Result<Segment> {
        loop {
            let Some(&first) = self.data.get(self.pos) else {
                return corrupt("JPEG-LS stream ends without an EOI marker");
            };
            if first != 0xFF {
                return corrupt(format!(
                    "JPEG-LS stream: expected a marker at byte {}, found 0x{first:02X}",
                    self.pos
                ));
            }
            // Fill bytes (0xFF) may precede a marker.
            let mut at = self.pos + 1;
            while self.data.get(at) == Some(&0xFF) {
                at += 1;
            }
            let Some(&marker) = self.data.get(at) else {
                return corrupt("JPEG-LS stream ends inside a marker");
            };
            self.pos = at + 1;
            match marker {
                0xD9 => return Ok(Segment::End),
                0xF7 => return self.frame().map(Segment::Frame),
                0xF8 => {
                    if let Some(p) = self.preset()? {
                        return Ok(Segment::Preset(p));
                    }
                }
                0xDA => {
                    let scan = self.scan()?;
                    return Ok(Segment::Scan(scan, self.pos));
                }
                0xDD => {
                    let body = self.body()?;
                    if body.len() < 2 {
                        return corrupt("JPEG-LS DRI segment too short");
                    }
                    if body.iter().any(|&b| b != 0) {
                        return unsupported("JPEG-LS streams with restart intervals");
                    }
                }
                0xE0..=0xEF | 0xFE => {
                    self.body()?;
                }
                0xC0..=0xCF if marker != 0xC4 && marker != 0xC8 && marker != 0xCC => {
                    return unsupported(format!(
                        "JPEG streams other than JPEG-LS (frame marker 0x{marker:02X})"
                    ));
                }
                0xF9 => return unsupported("JPEG-LS extensions (SOF57)"),
                _ => {
                    return corrupt(format!("JPEG-LS stream: unexpected marker 0x{marker:02X}"));
                }
            }
        }
    }

    /// The body of the segment at `pos` (after its 2-byte length), advancing past it.
    fn body(&mut self) -> Result<&'a [u8]> {
        let len = match self.data.get(self.pos..self.pos + 2) {
            Some(b) => usize::from(u16::from_be_bytes([b[0], b[1]])),
            None => return corrupt("JPEG-LS stream ends inside a segment length"),
        };
        if len < 2 {
            return corrupt("JPEG-LS segment length below 2");
        }
        let Some(body) = self.data.get(self.pos + 2..self.pos + len) else {
            return corrupt("JPEG-LS segment runs past the end of the stream");
        };
        self.pos += len;
        Ok(body)
    }

    fn frame(&mut self) -> Result<Frame> {
        let b = self.body()?;
        if b.len() < 6 {
            return corrupt("JPEG-LS frame header too short");
        }
        let precision = u32::from(b[0]);
        let rows = usize::from(u16::from_be_bytes([b[1], b[2]]));
        let cols = usize::from(u16::from_be_bytes([b[3], b[4]]));
        let n = usize::from(b[5]);
        if !(2..=16).contains(&precision) {
            return corrupt(format!(
                "JPEG-LS sample precision {precision} (2–16 allowed)"
            ));
        }
        if rows == 0 {
            return unsupported("JPEG-LS frames whose line count is given later (DNL)");
        }
        if cols == 0 || n == 0 {
            return corrupt("JPEG-LS frame with no samples per line or no components");
        }
        if b.len() != 6 + 3 * n {
            return corrupt("JPEG-LS frame header length does not match its component count");
        }
        let components: Vec<u8> = (0..n).map(|i| b[6 + 3 * i]).collect();
        for i in 0..n {
            if b[7 + 3 * i] != 0x11 {
                return unsupported("JPEG-LS components with subsampling");
            }
        }
        Ok(Frame {
            precision,
            rows,
            cols,
            components,
        })
    }

    /// An LSE segment: its preset coding parameters, or `None` for ids a lossless decoder of this kind
    /// may ignore (none); mapping tables and oversize dimensions are refused.
    fn preset(&mut self) -> Result<Option<Preset>> {
        let b = self.body()?;
        match b.first() {
            Some(1) if b.len() == 11 => {
                let v = |i: usize| u32::from(u16::from_be_bytes([b[i], b[i + 1]]));
                Ok(Some(Preset {
                    maxval: v(1),
                    t1: v(3),
                    t2: v(5),
                    t3: v(7),
                    reset: v(9),
                }))
            }
            Some(1) => corrupt("JPEG-LS preset parameters segment of the wrong length"),
            Some(2 | 3) => unsupported("JPEG-LS mapping tables"),
            Some(4) => unsupported("JPEG-LS frames over 65,535 lines or columns"),
            Some(id) => corrupt(format!("JPEG-LS LSE segment of unknown id {id}")),
            None => corrupt("empty JPEG-LS LSE segment"),
        }
    }

    fn scan(&mut self) -> Result<Scan> {
        let b = self.body()?;
        let Some(&n) = b.first() else {
            return corrupt("empty JPEG-LS scan header");
        };
        let n = usize::from(n);
        if n == 0 || b.len() != 4 + 2 * n {
            return corrupt("JPEG-LS scan header length does not match its component count");
        }
        let components: Vec<u8> = (0..n).map(|i| b[1 + 2 * i]).collect();
        if (0..n).any(|i| b[2 + 2 * i] != 0) {
            return unsupported("JPEG-LS scans with mapping tables");
        }
        let near = u32::from(b[1 + 2 * n]);
        let interleave = b[2 + 2 * n];
        if b[3 + 2 * n] & 0x0F != 0 {
            return unsupported("JPEG-LS point transform");
        }
        if interleave > 2 {
            return corrupt(format!("JPEG-LS interleave mode {interleave}"));
        }
        Ok(Scan {
            components,
            near,
            interleave,
        })
    }
}

/// Where the entropy-coded data starting at `from` ends: the first 0xFF followed by a byte with its top bit
/// set (a stuffed 0xFF is followed by a byte below 0x80), or the end of `data`.
pub(super) fn scan_end(data: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(off) = data.get(i..).and_then(|d| memchr::memchr(0xFF, d)) {
        let at = i + off;
        match data.get(at + 1) {
            Some(&b) if b & 0x80 != 0 => return at,
            Some(_) => i = at + 2,
            None => return data.len(),
        }
    }
    data.len()
}
