//! The superblock: locating it (offset 0 or 512·2ⁿ), parsing versions 0–3, encoding version 2.

use crate::checksum::lookup3;
use crate::error::{corrupt, unsupported, FormatError, Result};
use crate::io::{Cursor, PutLe, UNDEF};
use crate::sizes::Sizes;

/// HDF5 file signature.
pub const SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Size in bytes of the version-2 superblock we write.
pub const SB2_SIZE: usize = 48;

/// What the reader needs from the superblock.
#[derive(Clone, Debug)]
pub struct Superblock {
    pub version: u8,
    pub so: usize,
    pub sl: usize,
    pub base: u64,
    pub eof: u64,
    /// Root group object header address.
    pub root: u64,
    /// Superblock extension address (v2/v3), or UNDEF.
    pub ext: u64,
    /// Absolute offset of the signature.
    pub at: u64,
    /// File driver information block address (v0/v1: set by the family and multi drivers), or UNDEF.
    pub driver: u64,
}

/// Finds and parses the superblock.
pub fn read(data: &[u8]) -> Result<Superblock> {
    let mut at = 0usize;
    loop {
        if at + 8 > data.len() {
            return Err(FormatError::NotHdf5);
        }
        if data[at..at + 8] == SIGNATURE {
            break;
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    let mut c = Cursor::new(&data[at..], "superblock");
    c.skip(8)?;
    let version = c.u8()?;
    match version {
        0 | 1 => {
            c.skip(4)?; // free-space, root sym table, reserved, shared header versions
            let so = c.u8()? as usize;
            let sl = c.u8()? as usize;
            check_sizes(so, sl)?;
            c.skip(1)?;
            c.skip(4)?; // group leaf/internal K
            c.skip(4)?; // consistency flags
            if version == 1 {
                c.skip(4)?;
            }
            let base = c.addr(so)?;
            let _free = c.addr(so)?;
            let eof = c.addr(so)?;
            let driver = c.addr(so)?;
            // Root group symbol table entry.
            // The root's symbol-table entry: its link name offset is a length (as libhdf5 writes it).
            let _name_off = c.uint(sl)?;
            let root = c.addr(so)?;
            Ok(Superblock {
                version,
                so,
                sl,
                base: if base == UNDEF { 0 } else { base },
                eof,
                root,
                ext: UNDEF,
                at: at as u64,
                driver,
            })
        }
        2 | 3 => {
            let so = c.u8()? as usize;
            let sl = c.u8()? as usize;
            check_sizes(so, sl)?;
            c.skip(1)?;
            let base = c.addr(so)?;
            let ext = c.addr(so)?;
            let eof = c.addr(so)?;
            let root = c.addr(so)?;
            let end = c.pos();
            let stored = c.u32()?;
            let computed = lookup3(&data[at..at + end], 0);
            if stored != computed {
                return corrupt("superblock checksum mismatch");
            }
            Ok(Superblock {
                version,
                so,
                sl,
                base: if base == UNDEF { 0 } else { base },
                eof,
                root,
                ext,
                at: at as u64,
                driver: UNDEF,
            })
        }
        v => unsupported(format!("superblock version {v}")),
    }
}

fn check_sizes(so: usize, sl: usize) -> Result<()> {
    if !matches!(so, 2 | 4 | 8) || !matches!(sl, 2 | 4 | 8) {
        return corrupt(format!("size of offsets {so} / lengths {sl}"));
    }
    Ok(())
}

/// Encodes a version-2 superblock (8-byte offsets and lengths, base 0, no extension).
pub fn encode_v2(eof: u64, root: u64) -> Vec<u8> {
    encode_v2_sized(2, Sizes::DEFAULT, 0, UNDEF, eof, root)
}

/// Encodes a version-2 or -3 superblock (`version`; a version-3 file's consistency flags clear) with the
/// file's field widths, base address, extension address, end of file and root group's header address.
pub fn encode_v2_sized(
    version: u8,
    sizes: Sizes,
    base: u64,
    ext: u64,
    eof: u64,
    root: u64,
) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + 4 * sizes.offsets);
    b.extend_from_slice(&SIGNATURE);
    b.put_u8(version);
    b.put_u8(sizes.offsets as u8);
    b.put_u8(sizes.lengths as u8);
    b.put_u8(0);
    for a in [base, ext, eof, root] {
        sizes.put_offset(&mut b, a);
    }
    let sum = lookup3(&b, 0);
    b.put_u32(sum);
    b
}

/// The tail of a version-0 or -1 superblock that a new root changes — end-of-file address, driver block
/// address (UNDEF) and the root group's symbol-table entry (link name offset `name_offset`, a length; the new
/// root's header, no cached symbol table: the new root holds its links itself) — with the file's field
/// widths, and its offset in the superblock.
pub fn encode_v0_tail(
    version: u8,
    eof: u64,
    root: u64,
    name_offset: u64,
    sizes: Sizes,
) -> Result<(u64, Vec<u8>)> {
    // Signature and versions (16), B-tree K values (4), flags (4), v1's indexed-storage K (4), then the
    // base and free-space addresses before the end of file.
    let at = 24 + if version == 1 { 4 } else { 0 } + 2 * sizes.offsets as u64;
    let mut b = Vec::with_capacity(3 * sizes.offsets + sizes.lengths + 24);
    sizes.put_offset(&mut b, eof);
    sizes.put_offset(&mut b, UNDEF);
    sizes.put_length(&mut b, name_offset, "the root entry's link name offset")?;
    sizes.put_offset(&mut b, root);
    b.put_u32(0);
    b.put_u32(0);
    b.extend_from_slice(&[0u8; 16]);
    Ok((at, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v0_and_v1_tails_land_where_the_reader_looks() {
        for version in [0u8, 1] {
            let mut b = vec![0u8; 4096];
            b[..8].copy_from_slice(&SIGNATURE);
            b[8] = version;
            b[13] = 8;
            b[14] = 8;
            let base = 24 + if version == 1 { 4 } else { 0 };
            b[base + 8..base + 16].copy_from_slice(&UNDEF.to_le_bytes());
            let (at, tail) = encode_v0_tail(version, 4096, 800, 0, Sizes::DEFAULT).unwrap();
            b[at as usize..at as usize + tail.len()].copy_from_slice(&tail);
            let sb = read(&b).unwrap();
            assert_eq!(
                (sb.version, sb.eof, sb.root, sb.driver),
                (version, 4096, 800, UNDEF)
            );
        }
    }

    #[test]
    fn superblocks_of_4_byte_fields_read_back() {
        let sizes = Sizes {
            offsets: 4,
            lengths: 4,
        };
        let mut b = encode_v2_sized(3, sizes, 0, UNDEF, 4096, 48);
        assert_eq!(b.len(), 12 + 4 * 4 + 4);
        b.resize(4096, 0);
        let sb = read(&b).unwrap();
        assert_eq!(
            (sb.version, sb.so, sb.sl, sb.eof, sb.root, sb.ext),
            (3, 4, 4, 4096, 48, UNDEF)
        );
        for (version, sizes) in [
            (0u8, sizes),
            (
                1,
                Sizes {
                    offsets: 4,
                    lengths: 8,
                },
            ),
            (
                0,
                Sizes {
                    offsets: 8,
                    lengths: 4,
                },
            ),
        ] {
            let mut b = vec![0u8; 4096];
            b[..8].copy_from_slice(&SIGNATURE);
            b[8] = version;
            b[13] = sizes.offsets as u8;
            b[14] = sizes.lengths as u8;
            let (at, tail) = encode_v0_tail(version, 4096, 800, 24, sizes).unwrap();
            b[at as usize..at as usize + tail.len()].copy_from_slice(&tail);
            let sb = read(&b).unwrap();
            assert_eq!(
                (sb.eof, sb.root, sb.driver),
                (4096, 800, UNDEF),
                "{sizes:?}"
            );
        }
    }

    #[test]
    fn v2_roundtrip_and_checksum() {
        let mut b = encode_v2(4096, 48);
        b.resize(4096, 0);
        let sb = read(&b).unwrap();
        assert_eq!(
            (sb.version, sb.eof, sb.root, sb.so, sb.at),
            (2, 4096, 48, 8, 0)
        );
        b[30] ^= 1;
        assert!(matches!(read(&b), Err(FormatError::Corrupt(_))));
    }

    #[test]
    fn signature_at_512_and_missing() {
        let mut b = vec![0u8; 512];
        b.extend_from_slice(&encode_v2(1024, 560));
        b.resize(2048, 0);
        assert_eq!(read(&b).unwrap().at, 512);
        assert!(matches!(read(&[0u8; 100]), Err(FormatError::NotHdf5)));
    }
}
