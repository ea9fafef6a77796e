//! Extensible-array chunk index (`EAHD`/`EAIB`/`EASB`/`EADB`, data blocks optionally paged).

use super::{check_sum, decode_elem, Elem};
use crate::ctx::Ctx;
use crate::error::{corrupt, Result};
use crate::io::UNDEF;

struct Params {
    so: usize,
    esize: usize,
    filtered: bool,
    off_size: usize,
    page_bits: u32,
}

struct SuperInfo {
    ndblks: u64,
    dblk_nelmts: u64,
    start_dblk: u64,
}

/// Elements 0..n of the extensible array at `addr`, where n = elements realized.
pub fn read(ctx: &Ctx<'_>, addr: u64) -> Result<Vec<Elem>> {
    let so = ctx.so;
    let mut c = ctx.cursor(addr, "extensible array header")?;
    c.expect_sig(b"EAHD")?;
    let _v = c.u8()?;
    let client = c.u8()?;
    let esize = c.u8()? as usize;
    let max_bits = c.u8()? as u32;
    let iblk_elmts = c.u8()? as u64;
    let dblk_min = c.u8()? as u64;
    let sblk_min_ptrs = c.u8()? as u64;
    let page_bits = c.u8()? as u32;
    c.skip(4 * ctx.sl)?;
    let _max_idx = c.uint(ctx.sl)?;
    let realized = c.uint(ctx.sl)?;
    let iblk = c.addr(so)?;
    let hlen = c.pos();
    check_sum(
        ctx.slice(addr, hlen as u64)?,
        c.bytes(4)?,
        "extensible array header",
    )?;
    if esize < so
        || max_bits == 0
        || max_bits > 64
        || dblk_min == 0
        || !dblk_min.is_power_of_two()
        || sblk_min_ptrs == 0
        || !sblk_min_ptrs.is_power_of_two()
        || page_bits > 32
    {
        return corrupt("extensible array header parameters");
    }
    ctx.check_count(realized, esize as u64, "extensible array")?;
    if iblk == UNDEF || realized == 0 {
        return Ok(vec![]);
    }
    let p = Params {
        so,
        esize,
        filtered: client == 1,
        off_size: max_bits.div_ceil(8) as usize,
        page_bits,
    };
    // Super block table.
    let nsblks = 1 + max_bits.saturating_sub(dblk_min.trailing_zeros()) as u64;
    let mut info = Vec::with_capacity(nsblks as usize);
    let (mut start_idx, mut start_dblk) = (0u64, 0u64);
    for u in 0..nsblks.min(64) {
        let ndblks = 1u64 << (u / 2);
        let dblk_nelmts = dblk_min.saturating_mul(1u64 << u.div_ceil(2).min(62));
        info.push(SuperInfo {
            ndblks,
            dblk_nelmts,
            start_dblk,
        });
        start_idx = start_idx.saturating_add(ndblks.saturating_mul(dblk_nelmts));
        start_dblk = start_dblk.saturating_add(ndblks);
    }
    let iblock_nsblks = (2 * sblk_min_ptrs.trailing_zeros()) as u64;
    let ndblk_addrs = 2 * (sblk_min_ptrs - 1);
    let nsblk_addrs = nsblks.saturating_sub(iblock_nsblks);
    // Index block.
    let mut c = ctx.cursor(iblk, "extensible array index block")?;
    c.expect_sig(b"EAIB")?;
    c.skip(2 + so)?;
    let direct = c.bytes(iblk_elmts as usize * esize)?;
    let mut dblk_addrs = Vec::with_capacity(ndblk_addrs as usize);
    for _ in 0..ndblk_addrs {
        dblk_addrs.push(c.addr(so)?);
    }
    let mut sblk_addrs = Vec::with_capacity(nsblk_addrs as usize);
    for _ in 0..nsblk_addrs {
        sblk_addrs.push(c.addr(so)?);
    }
    let ilen = c.pos();
    let iblock_bytes = ctx.slice(iblk, ilen as u64 + 4)?;
    check_sum(
        &iblock_bytes[..ilen],
        &iblock_bytes[ilen..],
        "extensible array index block",
    )?;

    let mut out = Vec::with_capacity(realized as usize);
    for e in direct.chunks_exact(esize) {
        if out.len() as u64 >= realized {
            break;
        }
        out.push(decode_elem(e, so, p.filtered)?);
    }
    let undef = Elem {
        addr: UNDEF,
        size: None,
        mask: 0,
    };
    for (u, si) in info.iter().enumerate() {
        if out.len() as u64 >= realized {
            break;
        }
        let u = u as u64;
        // Data block addresses of this super block.
        let (addrs, bitmaps): (Vec<u64>, Vec<Vec<u8>>) = if u < iblock_nsblks {
            let a = (0..si.ndblks)
                .map(|k| {
                    dblk_addrs
                        .get((si.start_dblk + k) as usize)
                        .copied()
                        .unwrap_or(UNDEF)
                })
                .collect();
            (a, vec![])
        } else {
            let sa = sblk_addrs
                .get((u - iblock_nsblks) as usize)
                .copied()
                .unwrap_or(UNDEF);
            if sa == UNDEF {
                (vec![UNDEF; si.ndblks as usize], vec![])
            } else {
                read_super(ctx, &p, sa, si)?
            }
        };
        for (k, da) in addrs.iter().enumerate() {
            let remaining = realized - out.len() as u64;
            if remaining == 0 {
                break;
            }
            let want = si.dblk_nelmts.min(remaining);
            if *da == UNDEF {
                out.extend(std::iter::repeat_n(undef, want as usize));
                continue;
            }
            let bitmap = bitmaps.get(k).map(|b| b.as_slice());
            read_data_block(ctx, &p, *da, si.dblk_nelmts, want, bitmap, &mut out)?;
        }
    }
    Ok(out)
}

/// Data block addresses of a super block, plus each data block's page-init bitmap (if paged).
fn read_super(
    ctx: &Ctx<'_>,
    p: &Params,
    addr: u64,
    si: &SuperInfo,
) -> Result<(Vec<u64>, Vec<Vec<u8>>)> {
    let mut c = ctx.cursor(addr, "extensible array super block")?;
    c.expect_sig(b"EASB")?;
    c.skip(2 + p.so + p.off_size)?;
    let page_n = 1u64 << p.page_bits;
    let mut bitmaps = Vec::new();
    if si.dblk_nelmts > page_n {
        let npages = si.dblk_nelmts / page_n;
        for _ in 0..si.ndblks {
            bitmaps.push(c.bytes(npages.div_ceil(8) as usize)?.to_vec());
        }
    }
    let mut v = Vec::with_capacity(si.ndblks as usize);
    for _ in 0..si.ndblks {
        v.push(c.addr(p.so)?);
    }
    let len = c.pos();
    let b = ctx.slice(addr, len as u64 + 4)?;
    check_sum(&b[..len], &b[len..], "extensible array super block")?;
    Ok((v, bitmaps))
}

fn read_data_block(
    ctx: &Ctx<'_>,
    p: &Params,
    addr: u64,
    nelmts: u64,
    want: u64,
    bitmap: Option<&[u8]>,
    out: &mut Vec<Elem>,
) -> Result<()> {
    let prefix = 4 + 2 + p.so + p.off_size;
    let page_n = 1u64 << p.page_bits;
    let mut c = ctx.cursor(addr, "extensible array data block")?;
    c.expect_sig(b"EADB")?;
    if nelmts <= page_n {
        let n = nelmts as usize * p.esize;
        let b = ctx.slice(addr, (prefix + n + 4) as u64)?;
        check_sum(
            &b[..prefix + n],
            &b[prefix + n..],
            "extensible array data block",
        )?;
        for e in b[prefix..prefix + n]
            .chunks_exact(p.esize)
            .take(want as usize)
        {
            out.push(decode_elem(e, p.so, p.filtered)?);
        }
        return Ok(());
    }
    // Paged: prefix + checksum, then pages of page_n elements each followed by a checksum.
    let mut page_addr = addr + prefix as u64 + 4;
    let mut left = want;
    let psize = page_n as usize * p.esize;
    let mut page = 0usize;
    while left > 0 {
        let init = bitmap
            .map(|b| {
                b.get(page / 8)
                    .is_some_and(|x| x & (0x80 >> (page % 8)) != 0)
            })
            .unwrap_or(true);
        page += 1;
        if !init {
            let k = left.min(page_n) as usize;
            out.extend(std::iter::repeat_n(
                Elem {
                    addr: UNDEF,
                    size: None,
                    mask: 0,
                },
                k,
            ));
            left = left.saturating_sub(page_n);
            page_addr += (psize + 4) as u64;
            continue;
        }
        let b = ctx.slice(page_addr, (psize + 4) as u64)?;
        check_sum(&b[..psize], &b[psize..], "extensible array data block page")?;
        for e in b[..psize]
            .chunks_exact(p.esize)
            .take(left.min(page_n) as usize)
        {
            out.push(decode_elem(e, p.so, p.filtered)?);
        }
        left = left.saturating_sub(page_n);
        page_addr += (psize + 4) as u64;
    }
    Ok(())
}
