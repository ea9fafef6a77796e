//! Inspection helpers behind `clawhdf5 h5 ls` and `clawhdf5 h5 dump --json`.

use crate::array::{Array, Data};
use crate::datatype::Datatype;
use crate::error::Result;
use crate::filters::filter_name;
use crate::read::dataset::Dataset;
use crate::read::file::{EntryKind, H5File};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::ops::ControlFlow;

fn f64_json(v: f64) -> Value {
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or_else(|| Value::String(format!("{v}")))
}

/// Element `i` of `data` as JSON (strings as strings, NaN/inf as strings).
fn elem_json(data: &Data, i: usize) -> Value {
    match data {
        Data::I8(v) => json!(v[i]),
        Data::I16(v) => json!(v[i]),
        Data::I32(v) => json!(v[i]),
        Data::I64(v) => json!(v[i]),
        Data::U8(v) => json!(v[i]),
        Data::U16(v) => json!(v[i]),
        Data::U32(v) => json!(v[i]),
        Data::U64(v) => json!(v[i]),
        // As a number while it fits 64 bits (JSON readers take no more), else as a decimal string.
        Data::I128(v) => i64::try_from(v[i]).map_or_else(|_| json!(v[i].to_string()), |x| json!(x)),
        Data::U128(v) => u64::try_from(v[i]).map_or_else(|_| json!(v[i].to_string()), |x| json!(x)),
        Data::F16(v) => f64_json(v[i].to_f64()),
        Data::F32(v) => f64_json(v[i] as f64),
        Data::F64(v) => f64_json(v[i]),
        Data::VarStr(v) => json!(v[i]),
        Data::FixedStr { values, .. } => json!(values[i]),
        Data::Compound(fields) => {
            let mut m = Map::new();
            for (n, d) in fields {
                m.insert(n.clone(), elem_json(d, i));
            }
            Value::Object(m)
        }
        Data::Enum { values, .. } => json!(values[i]),
        Data::ArrayOf { dims, data } => {
            let per = dims.iter().product::<u64>() as usize;
            let sub = data.slice(i * per, per);
            nested(&sub, dims)
        }
        Data::Opaque { size, bytes, .. } => {
            json!(bytes[i * size..(i + 1) * size].to_vec())
        }
        Data::Bitfield { values, .. } => json!(values[i]),
        Data::ObjectRef(v) => json!({ "ref": v[i] }),
        Data::RegionRef(v) => json!({ "ref": region_json(&v[i]) }),
        Data::Ref(v) => json!({ "ref": reference_json(&v[i]) }),
        Data::VarLen(v) => {
            let d = &v[i];
            nested(d, &[d.len() as u64])
        }
    }
}

/// An HDF5 1.12 reference as JSON: null, or its object with the region, attribute or other file it names.
fn reference_json(r: &crate::region::Reference) -> Value {
    use crate::region::Reference;
    match r {
        Reference::Null => Value::Null,
        Reference::Object(a) => json!({ "object": a }),
        Reference::Region(r) => region_json(r),
        Reference::Attribute { object, name } => json!({ "object": object, "attribute": name }),
        Reference::External { file, target } => {
            let mut v = reference_json(target);
            if let Value::Object(m) = &mut v {
                m.insert("file".into(), json!(file));
            }
            v
        }
    }
}

fn nested(data: &Data, shape: &[u64]) -> Value {
    fn rec(data: &Data, shape: &[u64], offset: usize) -> Value {
        match shape.split_first() {
            None => elem_json(data, offset),
            Some((first, rest)) => {
                let step = rest.iter().product::<u64>() as usize;
                Value::Array(
                    (0..*first as usize)
                        .map(|k| rec(data, rest, offset + k * step))
                        .collect(),
                )
            }
        }
    }
    if (shape.iter().product::<u64>() as usize) > data.len() {
        return Value::Null;
    }
    rec(data, shape, 0)
}

/// An array as nested JSON lists (a scalar as a bare value).
pub fn array_to_json(a: &Array) -> Value {
    nested(&a.data, &a.shape)
}

fn shape_str(shape: &[u64], max: Option<&[Option<u64>]>) -> String {
    let parts: Vec<String> = shape
        .iter()
        .enumerate()
        .map(|(i, d)| match max.and_then(|m| m.get(i)) {
            Some(None) => format!("{d}/Inf"),
            Some(Some(m)) if m != d => format!("{d}/{m}"),
            _ => format!("{d}"),
        })
        .collect();
    if shape.is_empty() {
        "SCALAR".into()
    } else {
        format!("{{{}}}", parts.join(", "))
    }
}

/// A region reference as JSON: the object's address and the selection (null for a null reference).
fn region_json(r: &crate::region::RegionRef) -> Value {
    use crate::region::Selection;
    if r.object == 0 {
        return Value::Null;
    }
    let selection = match &r.selection {
        Selection::None => json!("none"),
        Selection::All => json!("all"),
        Selection::Regular(d) => json!({ "hyperslab": d.iter().map(|x| json!({
            "start": x[0], "stride": x[1], "count": x[2], "block": x[3]
        })).collect::<Vec<_>>() }),
        Selection::Blocks(b) => json!({ "blocks": b }),
        Selection::Points(p) => json!({ "points": p }),
    };
    json!({ "object": r.object, "selection": selection })
}

/// One h5ls-style line for an object (shown as `label`) of kind `kind`; `dataset` opens it when it is one,
/// `datatype` reads it when it is a committed datatype.
fn entry_line<'f>(
    label: &str,
    kind: &EntryKind,
    dataset: impl FnOnce() -> Result<Dataset<'f>>,
    datatype: impl FnOnce() -> Result<Datatype>,
) -> String {
    match kind {
        EntryKind::Group => format!("{label:<24} Group"),
        EntryKind::Dataset => match dataset() {
            Ok(d) => format!(
                "{label:<24} Dataset {} {}",
                shape_str(d.shape(), d.max_shape()),
                d.dtype().describe()
            ),
            Err(err) => format!("{label:<24} Dataset (unreadable: {err})"),
        },
        EntryKind::SoftLink(t) => format!("{label:<24} Soft Link {{{t}}}"),
        EntryKind::ExternalLink { file, path } => {
            format!("{label:<24} External Link {{{file}/{path}}}")
        }
        EntryKind::Datatype => match datatype() {
            Ok(t) => format!("{label:<24} Type {}", t.describe()),
            Err(err) => format!("{label:<24} Type (unreadable: {err})"),
        },
        EntryKind::Other => format!("{label:<24} Other"),
    }
}

/// One line per link of the group at `path` (h5ls style: name, kind, shape, type).
pub fn ls(file: &H5File, path: &str) -> Result<Vec<String>> {
    let kind = file.kind(path)?;
    if matches!(kind, EntryKind::Dataset | EntryKind::Datatype) {
        let name = path.rsplit('/').next().unwrap_or(path);
        return Ok(vec![entry_line(
            name,
            &kind,
            || file.dataset(path),
            || file.named_datatype(path),
        )]);
    }
    let base = path.trim_end_matches('/');
    Ok(file
        .list(path)?
        .iter()
        .map(|e| {
            let member = format!("{base}/{}", e.name);
            entry_line(
                &e.name,
                &e.kind,
                || file.dataset(&member),
                || file.named_datatype(&member),
            )
        })
        .collect())
}

/// [`ls_recursive_each`] collected into lines.
pub fn ls_recursive(file: &H5File, path: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    ls_recursive_each(file, path, &mut |line| {
        out.push(line);
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// Every object at and below `path`, depth first in name order, one line each named by its full path
/// (h5ls -r style), handed to `emit` as it is found (which may stop the walk). Soft and external links are
/// listed, not followed. A group reached again through another hard link is listed as "Group, same as
/// FIRST-PATH" and not entered twice, so a cycle of hard links ends and every group is read once; a group
/// that cannot be read gets its error on its own line and the walk goes on.
pub fn ls_recursive_each(
    file: &H5File,
    path: &str,
    emit: &mut dyn FnMut(String) -> ControlFlow<()>,
) -> Result<()> {
    let kind = file.kind(path)?;
    let top = match path.trim_end_matches('/') {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    let mut seen = HashMap::new();
    // Objects still to print, next one last: an explicit stack (pre-order, members in name order), so a
    // deeply nested file cannot exhaust the thread's stack. Objects are reached by address, never by
    // resolving their path again, so a deep file costs no more than a wide one.
    let mut pending = vec![(top, kind, Some(file.resolve(path)?))];
    while let Some((full, kind, addr)) = pending.pop() {
        let line = match (&kind, addr) {
            (EntryKind::Group, Some(addr)) => match seen.get(&addr) {
                Some(first) => format!("{full:<24} Group, same as {first}"),
                None => {
                    seen.insert(addr, full.clone());
                    match file.list_at(addr, &full) {
                        Ok(members) => {
                            for (m, target) in members.into_iter().rev() {
                                let child = match full.as_str() {
                                    "/" => format!("/{}", m.name),
                                    g => format!("{g}/{}", m.name),
                                };
                                pending.push((child, m.kind, target));
                            }
                            entry_line(
                                &full,
                                &kind,
                                || file.dataset_at(addr),
                                || file.datatype_at(addr),
                            )
                        }
                        Err(err) => format!("{full:<24} Group (members unreadable: {err})"),
                    }
                }
            },
            (_, Some(addr)) => entry_line(
                &full,
                &kind,
                || file.dataset_at(addr),
                || file.datatype_at(addr),
            ),
            (_, None) => entry_line(
                &full,
                &kind,
                || file.dataset(&full),
                || file.named_datatype(&full),
            ),
        };
        if emit(line).is_break() {
            break;
        }
    }
    Ok(())
}

fn attrs_json(file: &H5File, path: &str) -> Result<Value> {
    let mut m = Map::new();
    for n in file.attr_names(path)? {
        let v = match file.attr(path, &n) {
            Ok(a) => array_to_json(&a),
            Err(e) => json!({ "error": e.to_string() }),
        };
        m.insert(n, v);
    }
    Ok(Value::Object(m))
}

/// A JSON description of one object: attributes, and for datasets dtype, shape, layout,
/// filters and the values; for groups the links.
pub fn dump_json(file: &H5File, object: &str) -> Result<Value> {
    match file.kind(object)? {
        EntryKind::Dataset => {
            let d = file.dataset(object)?;
            let value = array_to_json(&d.read()?);
            Ok(json!({
                "path": object,
                "kind": "dataset",
                "dtype": d.dtype().describe(),
                "shape": d.shape(),
                "max_shape": d.max_shape().map(|m| m.iter().map(|x| match x { Some(v) => json!(v), None => Value::Null }).collect::<Vec<_>>()),
                "layout": d.layout_kind(),
                "chunks": d.chunk(),
                "filters": d.filters().iter().map(|f| json!({"id": f.id, "name": filter_name(f.id), "params": f.params})).collect::<Vec<_>>(),
                "attributes": attrs_json(file, object)?,
                "value": value,
            }))
        }
        EntryKind::Group => {
            let links: Vec<Value> = file
                .list(object)?
                .into_iter()
                .map(|e| {
                    let kind = match e.kind {
                        EntryKind::Group => json!("group"),
                        EntryKind::Dataset => json!("dataset"),
                        EntryKind::SoftLink(t) => json!({ "soft": t }),
                        EntryKind::ExternalLink { file, path } => {
                            json!({ "external": { "file": file, "path": path } })
                        }
                        EntryKind::Datatype => json!("datatype"),
                        EntryKind::Other => json!("other"),
                    };
                    json!({ "name": e.name, "kind": kind })
                })
                .collect();
            Ok(json!({
                "path": object,
                "kind": "group",
                "attributes": attrs_json(file, object)?,
                "links": links,
            }))
        }
        EntryKind::Datatype => Ok(json!({
            "path": object,
            "kind": "datatype",
            "dtype": file.named_datatype(object)?.describe(),
            "attributes": attrs_json(file, object)?,
        })),
        _ => {
            Ok(json!({ "path": object, "kind": "other", "attributes": attrs_json(file, object)? }))
        }
    }
}
