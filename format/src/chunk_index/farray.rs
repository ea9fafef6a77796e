//! Fixed-array chunk index (`FAHD`/`FADB`, optionally paged).

use super::{check_sum, decode_elem, Elem};
use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::UNDEF;

/// All elements of the fixed array at `addr` (index = linear chunk number).
pub fn read(ctx: &Ctx<'_>, addr: u64) -> Result<Vec<Elem>> {
    let so = ctx.so;
    let mut c = ctx.cursor(addr, "fixed array header")?;
    c.expect_sig(b"FAHD")?;
    let _v = c.u8()?;
    let client = c.u8()?;
    let esize = c.u8()? as usize;
    let page_bits = c.u8()? as u32;
    let n = c.uint(ctx.sl)?;
    let dblk = c.addr(so)?;
    let hlen = c.pos();
    check_sum(
        ctx.slice(addr, hlen as u64)?,
        c.bytes(4)?,
        "fixed array header",
    )?;
    let filtered = client == 1;
    if esize < so || page_bits > 32 {
        return corrupt("fixed array header parameters");
    }
    ctx.check_count(n, esize as u64, "fixed array")?;
    if dblk == UNDEF {
        return Ok(vec![]);
    }
    let n = n as usize;
    let page_n = 1usize << page_bits;
    let prefix = 4 + 1 + 1 + so;
    let mut out = Vec::with_capacity(n);
    if n <= page_n {
        let blk = ctx.slice(dblk, (prefix + n * esize + 4) as u64)?;
        check_sum(
            &blk[..prefix + n * esize],
            &blk[prefix + n * esize..],
            "fixed array data block",
        )?;
        if &blk[..4] != b"FADB" {
            return corrupt("bad fixed array data block signature");
        }
        for e in blk[prefix..prefix + n * esize].chunks_exact(esize) {
            out.push(decode_elem(e, so, filtered)?);
        }
        return Ok(out);
    }
    let npages = n.div_ceil(page_n);
    let bitmap = npages.div_ceil(8);
    let dlen = prefix + bitmap + 4;
    let blk = ctx.slice(dblk, dlen as u64)?;
    if &blk[..4] != b"FADB" {
        return corrupt("bad fixed array data block signature");
    }
    check_sum(
        &blk[..prefix + bitmap],
        &blk[prefix + bitmap..],
        "fixed array data block",
    )?;
    let mut page_addr = dblk + dlen as u64;
    for p in 0..npages {
        let cnt = page_n.min(n - p * page_n);
        let init = blk[prefix + p / 8] & (0x80 >> (p % 8)) != 0;
        let plen = cnt * esize + 4;
        if init {
            let page = ctx.slice(page_addr, plen as u64)?;
            check_sum(
                &page[..cnt * esize],
                &page[cnt * esize..],
                "fixed array page",
            )?;
            for e in page[..cnt * esize].chunks_exact(esize) {
                out.push(decode_elem(e, so, filtered)?);
            }
        } else {
            out.extend(std::iter::repeat_n(
                Elem {
                    addr: UNDEF,
                    size: None,
                    mask: 0,
                },
                cnt,
            ));
        }
        // Pages are laid out at full size, even the last one.
        page_addr += (page_n * esize + 4) as u64;
    }
    Ok(out)
}
