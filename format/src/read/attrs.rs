//! Attributes: compact attribute messages and dense storage (fractal heap + v2 B-tree).

use crate::array::Array;
use crate::btree::v2::BTreeV2;
use crate::convert;
use crate::error::{corrupt, Result};
use crate::heap::fractal::FractalHeap;
use crate::io::UNDEF;
use crate::messages::{self, AttrMsg};
use crate::object_header::{mtype, ObjectHeader};
use crate::read::file::H5File;

/// Calls `f` with every raw attribute message body of an object (compact then dense).
pub fn for_each_raw(
    file: &H5File,
    oh: &ObjectHeader<'_>,
    f: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let ctx = file.ctx();
    for m in oh.all(mtype::ATTRIBUTE) {
        f(&file.message_body(mtype::ATTRIBUTE, m.flags, m.data)?)?;
    }
    if let Some(ai) = oh.find(mtype::ATTR_INFO) {
        let info = messages::parse_attr_info(ai.data, ctx.so)?;
        if info.heap != UNDEF && info.name_btree != UNDEF {
            let heap = FractalHeap::read(&ctx, info.heap)?;
            let bt = BTreeV2::read(&ctx, info.name_btree)?;
            if bt.btype != 8 || bt.rec_size < 8 {
                return corrupt("attribute name index is not a type-8 B-tree");
            }
            bt.for_each(&ctx, &mut |rec| {
                // Flag 0x02: the ID is one of the shared-message heap's, not this object's heap's.
                if rec.len() > 8 && rec[8] & 0x02 != 0 {
                    return f(&file.sohm_object(mtype::ATTRIBUTE, &rec[..8])?);
                }
                let obj = heap.object_owned(&ctx, &rec[..8])?;
                f(&obj)
            })?;
        }
    }
    Ok(())
}

/// Parses a raw attribute message body, resolving shared datatypes and dataspaces.
pub(crate) fn parse<'a>(file: &'a H5File, raw: &'a [u8]) -> Result<AttrMsg<'a>> {
    let ctx = file.ctx();
    messages::parse_attribute(raw, &ctx, &|message, b| file.message_body(message, 0x02, b))
}

/// Decodes a parsed attribute's value.
pub fn decode(file: &H5File, a: &AttrMsg<'_>) -> Result<Array> {
    let n = a.space.num_elements()? as usize;
    let data = convert::decode(&a.dtype, a.data, n, file)?;
    // A null dataspace (h5py.Empty) becomes a shape-[] array with no elements.
    Ok(Array {
        shape: if a.space.null {
            vec![]
        } else {
            a.space.dims.clone()
        },
        data,
    })
}

/// Reads the attribute called `name`, if present.
pub fn read_attr(file: &H5File, oh: &ObjectHeader<'_>, name: &str) -> Result<Option<Array>> {
    let mut out = None;
    for_each_raw(file, oh, &mut |raw| {
        // Only the wanted attribute is parsed past its name: another one of an unsupported type does
        // not make this one unreadable.
        if out.is_none() && messages::attribute_name(raw)? == name {
            out = Some(decode(file, &parse(file, raw)?)?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// Names of all attributes.
pub fn attr_names(file: &H5File, oh: &ObjectHeader<'_>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for_each_raw(file, oh, &mut |raw| {
        out.push(messages::attribute_name(raw)?);
        Ok(())
    })?;
    Ok(out)
}

/// (name, raw message body) of every attribute — used to carry attributes over unchanged.
pub fn raw_attrs(file: &H5File, oh: &ObjectHeader<'_>) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for_each_raw(file, oh, &mut |raw| {
        out.push((messages::attribute_name(raw)?, raw.to_vec()));
        Ok(())
    })?;
    Ok(out)
}
