//! Contiguous datasets stored in external files (the External Data Files message, h5py's `external=`): the
//! file list, and reading the dataset's bytes from it. Names are looked up beside the HDF5 file, else in the
//! current directory (where libhdf5 looks by default); bytes past the end of an external file read as zeros,
//! as libhdf5 reads them, and a missing file (or one that is not a regular file) is an error naming it.

use crate::ctx::Ctx;
use crate::error::{corrupt, FormatError, Result};
use crate::heap::local::LocalHeap;
use crate::io::Cursor;
use std::path::Path;

/// One slot of the list: `size` bytes at `offset` in the file `name` (`u64::MAX`: to the end of the file).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Segment {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

/// Parses an External Data Files message body.
pub(crate) fn parse(data: &[u8], ctx: &Ctx<'_>) -> Result<Vec<Segment>> {
    let mut c = Cursor::new(data, "external data files message");
    let version = c.u8()?;
    if version != 1 {
        return corrupt(format!("external data files message version {version}"));
    }
    c.skip(3)?;
    let _allocated = c.u16()?;
    let used = c.u16()?;
    let heap = LocalHeap::read(ctx, c.addr(ctx.so)?)?;
    let mut out = Vec::with_capacity(used as usize);
    for _ in 0..used {
        let name = heap.string(c.uint(ctx.sl)?)?;
        let offset = c.uint(ctx.sl)?;
        let size = c.uint(ctx.sl)?;
        let size = if size == u64::MAX >> (64 - 8 * ctx.sl as u32) {
            u64::MAX
        } else {
            size
        };
        out.push(Segment {
            name: String::from_utf8_lossy(name).into_owned(),
            offset,
            size,
        });
    }
    Ok(out)
}

/// The first `total` bytes of the data the segments hold, end to end; `limit` bounds `total` together with
/// the bytes the external files hold. `hdf5_file` is where the HDF5 file lives (relative names start there).
pub(crate) fn read(
    segments: &[Segment],
    total: u64,
    hdf5_file: Option<&Path>,
    limit: impl Fn(u64) -> u64,
) -> Result<Vec<u8>> {
    let mut files = Vec::with_capacity(segments.len());
    let mut stored = 0u64;
    for s in segments {
        let path = crate::read::vds::named_file(hdf5_file, &s.name);
        let f = std::fs::File::open(&path).map_err(|e| {
            FormatError::Io(std::io::Error::new(
                e.kind(),
                format!("external data file {}: {e}", path.display()),
            ))
        })?;
        let meta = f.metadata()?;
        // Not a pipe or a device a damaged or hostile file could name, whose reads might never end.
        if !meta.is_file() {
            return corrupt(format!(
                "external data file {} is not a regular file",
                path.display()
            ));
        }
        stored = stored.saturating_add(meta.len());
        files.push(f);
    }
    let held: u64 = segments.iter().fold(0u64, |a, s| a.saturating_add(s.size));
    if total > held {
        return corrupt(format!(
            "dataset of {total} bytes in external files holding {held}"
        ));
    }
    if total > limit(stored) {
        return corrupt(format!(
            "dataset of {total} bytes, more than its external files can hold"
        ));
    }
    let mut out = vec![0u8; total as usize];
    let mut at = 0usize;
    for (s, f) in segments.iter().zip(&files) {
        if at == out.len() {
            break;
        }
        let n = (out.len() - at).min(usize::try_from(s.size).unwrap_or(usize::MAX));
        let dst = &mut out[at..at + n];
        // Past the file's end stays zero.
        let mut got = 0usize;
        while got < n {
            let r = std::os::unix::fs::FileExt::read_at(
                f,
                &mut dst[got..],
                s.offset.saturating_add(got as u64),
            );
            match r {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        at += n;
    }
    Ok(out)
}
