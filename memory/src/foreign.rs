//! What other programs put in a store's file (h5py, HDFView, a user's script): attributes, groups, datasets and
//! links the store did not write. An incremental checkpoint leaves them where they are; a checkpoint that
//! rewrites the file whole carries them into the new file here, so annotating a memory file never costs the
//! annotations.
//!
//! The store owns its top-level groups ([`OWNED_GROUPS`]): anything inside them that the new snapshot does not
//! write is the store's own leftover (a dropped graph, a deleted extension) and is not carried. Elsewhere, and
//! for attributes on any object the snapshot writes, what the snapshot lacks is carried by value: datasets with
//! their shape, maximum shape, chunking and compression (deflate, shuffle, fletcher32, LZF, LZ4, zstd, bzip2,
//! Blosc, Blosc2, bitshuffle, LZO, reversible ZFP, FCIDECOMP; other filters, lossy ZFP among them, become deflate, which
//! keeps the values as they were read), attributes, soft and external links, and object
//! and region references (1-D datasets and attributes of them) remapped to the objects' paths. A second hard link to an object already carried, or a hard link
//! to one of the store's objects or to the root, becomes a soft link to that object's path (so a link cycle
//! ends there); groups nested deeper than 64 levels are left. What cannot be carried (committed datatypes,
//! HDF5 1.12 references, references inside compound, array or variable-length types, data the reader or writer
//! refuses) is listed in [`Carried::left`], and the caller keeps a
//! copy of the old file for it.
//!
//! References to the store's own objects (and to the root) are remapped like the others, to the objects the
//! snapshot writes at the same paths; incremental checkpoints keep every reference and second hard link valid
//! themselves (the appender rewrites those pointing at the objects it moves).

use clawhdf5_format::region::{RegionRef, Selection};
use std::collections::HashMap;
use std::path::PathBuf;

use clawhdf5_format::filters::{
    BITSHUFFLE, BLOSC, BLOSC2, BZIP2, DEFLATE, FCIDECOMP, FLETCHER32, LZ4, LZF, LZO, SHUFFLE, ZFP,
    ZSTD,
};
use clawhdf5_format::jpegls::fcidecomp_client_data;
use clawhdf5_format::{
    Array, Blosc2Codec, Blosc2Shuffle, BloscCodec, Codec, Data, DatasetOptions, Datatype,
    EntryKind, FileWriter, FormatError, H5File, ZfpMode,
};

/// The store's own top-level groups.
pub const OWNED_GROUPS: [&str; 6] = [
    "config",
    "dictionaries",
    "extensions",
    "index",
    "integrity",
    "records",
];

/// Groups nested deeper than this are left in the kept copy (the walk recurses once per level).
const MAX_DEPTH: usize = 64;

/// What rewrites carried over from the old file, and what they could not.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Carried {
    /// Groups, datasets and links carried.
    pub objects: usize,
    /// Attributes carried.
    pub attrs: usize,
    /// One line per object or attribute that could not be carried, saying why.
    pub left: Vec<String>,
    /// The copy of the file before the rewrite, kept beside the store when something could not be carried.
    pub kept: Option<PathBuf>,
}

impl Carried {
    /// Add a later rewrite's report to this one.
    pub fn add(&mut self, later: Carried) {
        self.objects += later.objects;
        self.attrs += later.attrs;
        self.left.extend(later.left);
        if later.kept.is_some() {
            self.kept = later.kept;
        }
    }
}

/// Add to `w` (the new snapshot, complete) whatever `old` holds that `w` does not, as described above.
pub fn carry(old: &H5File, w: &mut FileWriter) -> Carried {
    let mut c = Copier {
        old,
        w,
        out: Carried::default(),
        carried: HashMap::new(),
        refs: Vec::new(),
        attr_refs: Vec::new(),
        regions: Vec::new(),
        attr_regions: Vec::new(),
    };
    // References to the root follow it into the new file, like those to any object the snapshot writes.
    c.carried.insert(old.root_addr(), "/".to_string());
    c.seed("/");
    c.attrs("/");
    c.children("/", false, 0);
    c.write_refs();
    c.out
}

fn join(group: &str, name: &str) -> String {
    if group == "/" {
        format!("/{name}")
    } else {
        format!("{group}/{name}")
    }
}

struct Copier<'a> {
    old: &'a H5File,
    w: &'a mut FileWriter,
    out: Carried,
    /// Address (in the old file) of each object the new file has, the store's own or carried → its path there.
    carried: HashMap<u64, String>,
    /// Datasets of object references, written once every object has its new path: (path, addresses).
    refs: Vec<(String, Vec<u64>)>,
    /// Attributes of object references, likewise: (object path, name, shape, addresses).
    attr_refs: Vec<(String, String, Vec<u64>, Vec<u64>)>,
    /// Datasets of region references, likewise: (path, references).
    regions: Vec<(String, Vec<RegionRef>)>,
    /// Attributes of region references, likewise: (object path, name, shape, references).
    attr_regions: Vec<(String, String, Vec<u64>, Vec<RegionRef>)>,
}

impl Copier<'_> {
    fn leave(&mut self, what: String, why: impl std::fmt::Display) {
        self.out.left.push(format!("{what}: {why}"));
    }

    /// Carry the attributes of the old object at `path` that the new one lacks.
    fn attrs(&mut self, path: &str) {
        let names = match self.old.attr_names(path) {
            Ok(n) => n,
            Err(e) => return self.leave(format!("the attributes of {path}"), e),
        };
        for name in names {
            if self.w.has_attr(path, &name) {
                continue;
            }
            let what = || format!("attribute {name:?} of {path}");
            match self.old.attr(path, &name) {
                Ok(Array {
                    shape,
                    data: Data::ObjectRef(addrs),
                }) => self
                    .attr_refs
                    .push((path.to_string(), name.clone(), shape, addrs)),
                Ok(Array {
                    shape,
                    data: Data::RegionRef(regions),
                }) => self
                    .attr_regions
                    .push((path.to_string(), name.clone(), shape, regions)),
                Ok(a) if holds_refs(&a.data) => self.leave(what(), UNCARRIED_REFS),
                Ok(a) => match self.w.set_attr(path, &name, a) {
                    Ok(()) => self.out.attrs += 1,
                    Err(e) => self.leave(what(), e),
                },
                Err(e) => self.leave(what(), e),
            }
        }
    }

    /// Record the old addresses of the objects the snapshot writes, from `group` down, so that another
    /// program's hard link to one of them (or to the root) becomes a soft link to its path rather than a copy.
    fn seed(&mut self, group: &str) {
        if let Ok(addr) = self.old.resolve(group) {
            self.carried
                .entry(addr)
                .or_insert_with(|| group.to_string());
        }
        let Ok(entries) = self.old.list(group) else {
            return;
        };
        for e in entries {
            let p = join(group, &e.name);
            if !matches!(e.kind, EntryKind::Group | EntryKind::Dataset) || !self.w.contains(&p) {
                continue;
            }
            if let Ok(addr) = self.old.resolve(&p) {
                self.carried.entry(addr).or_insert_with(|| p.clone());
            }
            if e.kind == EntryKind::Group {
                self.seed(&p);
            }
        }
    }

    /// Walk the links of the old group at `group`, `depth` groups below the root; `owned` when it lies inside
    /// one of the store's groups.
    fn children(&mut self, group: &str, owned: bool, depth: usize) {
        let entries = match self.old.list(group) {
            Ok(e) => e,
            Err(e) => return self.leave(format!("the members of {group}"), e),
        };
        for e in entries {
            let p = join(group, &e.name);
            let owned = owned || (group == "/" && OWNED_GROUPS.contains(&e.name.as_str()));
            if self.w.contains(&p) {
                // The snapshot wrote this object: only attributes others added to it are carried.
                if matches!(e.kind, EntryKind::Group | EntryKind::Dataset) {
                    self.attrs(&p);
                }
                if e.kind == EntryKind::Group {
                    self.children(&p, owned, depth + 1);
                }
                continue;
            }
            if owned {
                // The store's own leftover (a dropped graph, a deleted extension, an old manifest).
                continue;
            }
            match e.kind {
                EntryKind::Group | EntryKind::Dataset => {
                    let addr = match self.old.resolve(&p) {
                        Ok(a) => a,
                        Err(err) => {
                            self.leave(p, err);
                            continue;
                        }
                    };
                    if let Some(first) = self.carried.get(&addr).cloned() {
                        // A second hard link to an object already carried, or one to the store's own.
                        self.link(&p, |w| w.soft_link(&p, &first));
                        continue;
                    }
                    if e.kind == EntryKind::Group {
                        if depth >= MAX_DEPTH {
                            self.leave(p, format!("nested deeper than {MAX_DEPTH} groups"));
                            continue;
                        }
                        if let Err(err) = self.w.create_group(&p) {
                            self.leave(p, err);
                            continue;
                        }
                        self.carried.insert(addr, p.clone());
                        self.out.objects += 1;
                        self.attrs(&p);
                        self.children(&p, false, depth + 1);
                    } else if self.dataset(&p) {
                        self.carried.insert(addr, p.clone());
                    }
                }
                EntryKind::SoftLink(target) => self.link(&p, |w| w.soft_link(&p, &target)),
                EntryKind::ExternalLink { file, path } => {
                    self.link(&p, |w| w.external_link(&p, &file, &path))
                }
                EntryKind::Datatype => self.leave(
                    format!("committed datatype {p}"),
                    "committed datatypes cannot be written",
                ),
                EntryKind::Other => {
                    self.leave(p, "a link or object of a kind that cannot be written")
                }
            }
        }
    }

    fn link(&mut self, path: &str, make: impl FnOnce(&mut FileWriter) -> Result<(), FormatError>) {
        match make(self.w) {
            Ok(()) => self.out.objects += 1,
            Err(e) => self.leave(path.to_string(), e),
        }
    }

    /// Carry the old dataset at `path` (its references wait for [`Copier::write_refs`]); true when done.
    fn dataset(&mut self, path: &str) -> bool {
        let (array, opts) = match self
            .old
            .dataset(path)
            .and_then(|d| Ok((d.read()?, options(&d))))
        {
            Ok(x) => x,
            Err(e) => {
                self.leave(format!("dataset {path}"), e);
                return false;
            }
        };
        let one_d = array.shape.len() == 1;
        match &array.data {
            Data::ObjectRef(addrs) if one_d => {
                self.refs.push((path.to_string(), addrs.clone()));
                return true;
            }
            Data::RegionRef(regions) if one_d => {
                self.regions.push((path.to_string(), regions.clone()));
                return true;
            }
            data if holds_refs(data) => {
                self.leave(format!("dataset {path}"), UNCARRIED_REFS);
                return false;
            }
            _ => {}
        }
        // The old layout first; should the writer refuse it (a chunk shape it does not take), its default.
        let written = match self.w.write_dataset(path, array.clone(), opts) {
            Ok(()) => Ok(()),
            Err(_) => self.w.write_dataset(path, array, DatasetOptions::default()),
        };
        match written {
            Ok(()) => {
                self.out.objects += 1;
                self.attrs(path);
                true
            }
            Err(e) => {
                self.leave(format!("dataset {path}"), e);
                false
            }
        }
    }

    /// Write the carried datasets of object references, each reference pointing at its object's path in the new
    /// file (an object the new file lacks leaves the dataset behind).
    fn write_refs(&mut self) {
        for (path, addrs) in std::mem::take(&mut self.refs) {
            let Some(targets) = paths_of(&self.carried, &addrs) else {
                self.leave(format!("dataset {path}"), UNKEPT_TARGET);
                continue;
            };
            match self.w.write_object_refs(&path, &targets) {
                Ok(()) => {
                    self.out.objects += 1;
                    self.attrs(&path);
                }
                Err(e) => self.leave(format!("dataset {path}"), e),
            }
        }
        for (path, name, shape, addrs) in std::mem::take(&mut self.attr_refs) {
            let what = format!("attribute {name:?} of {path}");
            let Some(targets) = paths_of(&self.carried, &addrs) else {
                self.leave(what, UNKEPT_TARGET);
                continue;
            };
            match self
                .w
                .set_attr_object_refs_shaped(&path, &name, &shape, &targets)
            {
                Ok(()) => self.out.attrs += 1,
                Err(e) => self.leave(what, e),
            }
        }
        // Region references last: their datasets (the store's, carried ones, datasets of object references)
        // are all written by now, and each selection is checked against its dataset's shape there.
        for (path, regions) in std::mem::take(&mut self.regions) {
            let what = format!("dataset {path}");
            let Some(targets) = regions_of(&self.carried, &regions) else {
                self.leave(what, UNKEPT_TARGET);
                continue;
            };
            match self.w.write_region_refs(&path, &targets) {
                Ok(()) => {
                    self.out.objects += 1;
                    self.attrs(&path);
                }
                Err(e) => self.leave(what, e),
            }
        }
        for (path, name, shape, regions) in std::mem::take(&mut self.attr_regions) {
            let what = format!("attribute {name:?} of {path}");
            let Some(targets) = regions_of(&self.carried, &regions) else {
                self.leave(what, UNKEPT_TARGET);
                continue;
            };
            match self.w.set_attr_region_refs(&path, &name, &shape, &targets) {
                Ok(()) => self.out.attrs += 1,
                Err(e) => self.leave(what, e),
            }
        }
    }
}

/// Why references not carried are left.
const UNCARRIED_REFS: &str =
    "it holds HDF5 1.12 references, or references inside compound, array or \
    variable-length types, which cannot be carried into a rewritten file";

/// Why references to objects the new file lacks are left.
const UNKEPT_TARGET: &str = "a reference in it points at no object the rewritten file keeps";

/// The new file's paths and the selections of the region references `regions` (addresses in the old file);
/// `None` when the new file lacks one's dataset, or one is null.
fn regions_of<'a>(
    carried: &'a HashMap<u64, String>,
    regions: &[RegionRef],
) -> Option<Vec<(&'a str, Selection)>> {
    regions
        .iter()
        .map(|r| Some((carried.get(&r.object)?.as_str(), r.selection.clone())))
        .collect()
}

/// The new file's paths of the objects at `addrs` in the old one; `None` when the new file lacks one.
fn paths_of<'a>(carried: &'a HashMap<u64, String>, addrs: &[u64]) -> Option<Vec<&'a str>> {
    addrs
        .iter()
        .map(|a| carried.get(a).map(String::as_str))
        .collect()
}

/// The filter options of a carried dataset that keep its chunking and compression where the writer can.
fn options(old: &clawhdf5_format::Dataset<'_>) -> DatasetOptions {
    let mut o = DatasetOptions {
        chunk: old.chunk().map(<[u64]>::to_vec),
        max_shape: old.max_shape().map(<[Option<u64>]>::to_vec),
        compact: old.layout_kind() == "compact",
        ..DatasetOptions::default()
    };
    let mut compressed = false;
    for f in old.filters() {
        let level = f.params.first().copied();
        match f.id {
            DEFLATE => o.deflate = Some(level.unwrap_or(4).min(9)),
            SHUFFLE => o.shuffle = true,
            FLETCHER32 => o.fletcher32 = true,
            LZF => o.codec = Some(Codec::Lzf),
            LZ4 => o.codec = Some(Codec::Lz4),
            ZSTD => o.codec = Some(Codec::Zstd(level.map_or(3, |l| l.clamp(1, 22) as i32))),
            BZIP2 => o.codec = Some(Codec::Bzip2(level.unwrap_or(9).clamp(1, 9))),
            BITSHUFFLE => {
                o.codec = Some(match f.params.get(4) {
                    Some(3) => {
                        Codec::BitshuffleZstd(f.params.get(5).map_or(3, |&l| l.clamp(1, 22) as i32))
                    }
                    _ => Codec::BitshuffleLz4,
                })
            }
            BLOSC => {
                let p = &f.params;
                let codec = match p.get(6) {
                    Some(0) => BloscCodec::BloscLz,
                    Some(2) => BloscCodec::Lz4Hc,
                    Some(3) => BloscCodec::Snappy,
                    Some(4) => BloscCodec::Zlib,
                    Some(5) => BloscCodec::Zstd,
                    _ => BloscCodec::Lz4,
                };
                o.codec = Some(Codec::Blosc {
                    codec,
                    level: p.get(4).copied().unwrap_or(5).clamp(1, 9),
                    shuffle: p.get(5).is_none_or(|&s| s != 0),
                });
            }
            BLOSC2 => {
                let p = &f.params;
                let codec = match p.get(6) {
                    Some(0) => Blosc2Codec::BloscLz,
                    Some(2) => Blosc2Codec::Lz4Hc,
                    Some(4) => Blosc2Codec::Zlib,
                    Some(5) => Blosc2Codec::Zstd,
                    _ => Blosc2Codec::Lz4,
                };
                let shuffle = match p.get(5) {
                    Some(0) => Blosc2Shuffle::None,
                    Some(2) => Blosc2Shuffle::Bit,
                    _ => Blosc2Shuffle::Byte,
                };
                o.codec = Some(Codec::Blosc2 {
                    codec,
                    level: p.get(4).copied().unwrap_or(5).clamp(1, 9),
                    shuffle,
                });
            }
            LZO => o.codec = Some(Codec::Lzo),
            // Reversible zfp stays zfp; a lossy stream's decoded values are carried exactly (by deflate),
            // not coded a second time.
            ZFP if matches!(ZfpMode::of_client_data(&f.params), Ok(ZfpMode::Reversible)) => {
                o.codec = Some(Codec::Zfp(ZfpMode::Reversible))
            }
            // FCIDECOMP is lossless: it stays, where the writer can code the chunk shape.
            FCIDECOMP
                if matches!(
                    old.dtype(),
                    Datatype::Int {
                        size: 2,
                        be: false,
                        ..
                    }
                ) && o
                    .chunk
                    .as_deref()
                    .is_some_and(|c| fcidecomp_client_data(c).is_ok()) =>
            {
                o.codec = Some(Codec::FciDecomp)
            }
            _ => compressed = true,
        }
    }
    if matches!(o.codec, Some(Codec::Zfp(_) | Codec::FciDecomp)) && o.shuffle {
        // The writer refuses zfp and JPEG-LS after a byte shuffle; deflate carries such a dataset.
        o.codec = None;
        compressed = true;
    }
    if compressed && o.deflate.is_none() && o.codec.is_none() {
        o.deflate = Some(4);
    }
    if o.deflate.is_some() && o.codec.is_some() {
        o.deflate = None;
    }
    if o.chunk.is_none() && (o.deflate.is_some() || o.codec.is_some() || o.shuffle || o.fletcher32)
    {
        o.deflate = None;
        o.codec = None;
        o.shuffle = false;
        o.fletcher32 = false;
    }
    o
}

/// Whether `d` holds references anywhere (their addresses mean nothing in another file).
fn holds_refs(d: &Data) -> bool {
    match d {
        Data::ObjectRef(_) | Data::RegionRef(_) | Data::Ref(_) => true,
        Data::Compound(m) => m.iter().any(|(_, d)| holds_refs(d)),
        Data::ArrayOf { data, .. } => holds_refs(data),
        Data::VarLen(v) => v.iter().any(holds_refs),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawhdf5_format::Array;

    fn vector(data: Data) -> Array {
        Array::vector(data)
    }

    /// A file as the store wrote it, plus what another program added.
    fn annotated() -> H5File {
        H5File::from_bytes(annotated_bytes()).unwrap()
    }

    fn annotated_bytes() -> Vec<u8> {
        let mut w = FileWriter::new();
        w.write_dataset(
            "/records/id",
            vector(Data::U64(vec![1, 2])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.set_attr("/", "schema_version", Array::scalar(Data::U32(vec![1])))
            .unwrap();
        // Ours, but dropped by the next snapshot.
        w.write_dataset(
            "/index/hnsw",
            vector(Data::U8(vec![0; 8])),
            DatasetOptions::default(),
        )
        .unwrap();
        // Added by someone else.
        w.set_attr("/", "owner", Array::scalar(Data::VarStr(vec!["bo".into()])))
            .unwrap();
        w.set_attr("/records/id", "unit", Array::scalar(Data::I32(vec![7])))
            .unwrap();
        w.write_dataset(
            "/mine/values",
            vector(Data::F64((0..100).map(f64::from).collect())),
            DatasetOptions {
                chunk: Some(vec![10]),
                deflate: Some(6),
                shuffle: true,
                max_shape: Some(vec![None]),
                ..DatasetOptions::default()
            },
        )
        .unwrap();
        w.write_dataset(
            "/mine/words",
            vector(Data::VarStr(vec!["x".into(), "yy".into()])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.set_attr("/mine", "why", Array::scalar(Data::U8(vec![1])))
            .unwrap();
        w.soft_link("/mine/latest", "/mine/values").unwrap();
        w.external_link("/mine/elsewhere", "other.h5", "/data")
            .unwrap();
        w.write_object_refs("/mine/refs", &["/mine/words", "/records/id"])
            .unwrap();
        w.write_object_refs("/mine/stale", &["/index/hnsw"])
            .unwrap();
        // Attributes of references, as h5py writes `attrs["r"] = obj.ref` (scalar) and lists of them.
        w.set_attr_object_refs_shaped("/", "pointer", &[], &["/mine/values"])
            .unwrap();
        w.set_attr_object_refs("/mine", "both", &["/records/id", "/mine/words"])
            .unwrap();
        w.set_attr_object_refs("/mine/words", "gone", &["/index/hnsw"])
            .unwrap();
        // Region references: to a carried dataset and the store's own, to the dropped graph, and an attribute.
        w.write_region_refs(
            "/mine/regions",
            &[
                ("/mine/values", Selection::Regular(vec![[10, 1, 5, 1]])),
                ("/records/id", Selection::Points(vec![vec![1]])),
            ],
        )
        .unwrap();
        w.write_region_refs("/mine/stale_regions", &[("/index/hnsw", Selection::All)])
            .unwrap();
        w.set_attr_region_refs("/mine", "slices", &[1], &[("/mine/words", Selection::All)])
            .unwrap();
        w.to_bytes().unwrap()
    }

    /// The next snapshot: the store's objects only.
    fn snapshot() -> FileWriter {
        let mut w = FileWriter::new();
        w.write_dataset(
            "/records/id",
            vector(Data::U64(vec![1, 2, 3])),
            DatasetOptions::default(),
        )
        .unwrap();
        w.set_attr("/", "schema_version", Array::scalar(Data::U32(vec![1])))
            .unwrap();
        w
    }

    #[test]
    fn carries_what_others_added_and_not_the_stores_leftovers() {
        let old = annotated();
        let mut w = snapshot();
        let c = carry(&old, &mut w);
        // mine, values, words, latest, elsewhere, refs, regions; the references to the dropped graph stay
        // behind.
        assert_eq!((c.objects, c.attrs), (7, 6), "{c:?}");
        assert_eq!(c.left.len(), 3, "{c:?}");
        assert!(c.left[0].contains("/mine/stale"), "{c:?}");
        assert!(c.left[1].contains("\"gone\" of /mine/words"), "{c:?}");
        assert!(c.left[2].contains("/mine/stale_regions"), "{c:?}");
        let f = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
        assert!(!f.exists("/index/hnsw"));
        assert_eq!(
            f.dataset("/records/id").unwrap().read().unwrap().data,
            Data::U64(vec![1, 2, 3])
        );
        assert_eq!(
            f.attr("/", "owner").unwrap().data,
            Data::VarStr(vec!["bo".into()])
        );
        assert_eq!(
            f.attr("/records/id", "unit").unwrap().data,
            Data::I32(vec![7])
        );
        assert_eq!(f.attr("/mine", "why").unwrap().data, Data::U8(vec![1]));
        let values = f.dataset("/mine/values").unwrap();
        assert_eq!(values.chunk(), Some(&[10u64][..]));
        assert_eq!(values.max_shape(), Some(&[None][..]));
        let ids: Vec<u16> = values.filters().iter().map(|f| f.id).collect();
        assert_eq!(ids, vec![SHUFFLE, DEFLATE]);
        assert_eq!(
            f.dataset("/mine/latest").unwrap().read().unwrap().data,
            Data::F64((0..100).map(f64::from).collect())
        );
        let links = f.list("/mine").unwrap();
        assert!(links.iter().any(|e| e.name == "elsewhere"
            && e.kind
                == EntryKind::ExternalLink {
                    file: "other.h5".into(),
                    path: "/data".into()
                }));
        let Data::ObjectRef(refs) = f.dataset("/mine/refs").unwrap().read().unwrap().data else {
            panic!("not references");
        };
        assert_eq!(
            refs,
            vec![
                f.resolve("/mine/words").unwrap(),
                f.resolve("/records/id").unwrap()
            ]
        );
        let pointer = f.attr("/", "pointer").unwrap();
        assert!(pointer.shape.is_empty());
        assert_eq!(
            pointer.data,
            Data::ObjectRef(vec![f.resolve("/mine/values").unwrap()])
        );
        assert_eq!(
            f.attr("/mine", "both").unwrap().data,
            Data::ObjectRef(vec![
                f.resolve("/records/id").unwrap(),
                f.resolve("/mine/words").unwrap()
            ])
        );
        let region = |path: &str, selection: Selection| RegionRef {
            object: f.resolve(path).unwrap(),
            selection,
        };
        assert_eq!(
            f.dataset("/mine/regions").unwrap().read().unwrap().data,
            Data::RegionRef(vec![
                region("/mine/values", Selection::Regular(vec![[10, 1, 5, 1]])),
                region("/records/id", Selection::Points(vec![vec![1]])),
            ])
        );
        assert_eq!(
            f.attr("/mine", "slices").unwrap().data,
            Data::RegionRef(vec![region("/mine/words", Selection::All)])
        );
    }

    /// Carrying out of damaged files: errors become lines of `left`, never a panic, and what is carried writes.
    #[test]
    fn damaged_files_are_carried_without_panics() {
        let good = annotated_bytes();
        let mut rng = clawhdf5_ann::rng::SplitMix64::new(0xC0FFEE);
        let (mut opened, mut written) = (0, 0);
        for _ in 0..3_000 {
            let mut bytes = good.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] = rng.next_u64() as u8;
            }
            if rng.below(8) == 0 {
                bytes.truncate(rng.below(bytes.len() as u64) as usize);
            }
            let Ok(old) = H5File::from_bytes(bytes) else {
                continue;
            };
            opened += 1;
            let mut w = snapshot();
            let _ = carry(&old, &mut w);
            if w.to_bytes().is_ok() {
                written += 1;
            }
        }
        assert!(
            opened > 1_000 && written > 500,
            "{opened} opened, {written} written"
        );
    }

    #[test]
    fn groups_nested_too_deep_are_left() {
        let mut w = FileWriter::new();
        let deep: String = (0..70).map(|i| format!("/n{i}")).collect();
        w.create_group(&deep).unwrap();
        let old = H5File::from_bytes(w.to_bytes().unwrap()).unwrap();
        let mut w = FileWriter::new();
        let c = carry(&old, &mut w);
        assert_eq!(c.objects, MAX_DEPTH, "{c:?}");
        assert_eq!(c.left.len(), 1, "{c:?}");
        assert!(c.left[0].contains("nested deeper than 64"), "{c:?}");
        let kept: String = (0..MAX_DEPTH).map(|i| format!("/n{i}")).collect();
        assert!(w.contains(&kept) && !w.contains(&format!("{kept}/n{MAX_DEPTH}")));
    }

    #[test]
    fn options_keep_chunking_and_compression() {
        let old = annotated();
        let d = old.dataset("/mine/words").unwrap();
        let o = options(&d);
        assert_eq!((o.chunk.clone(), o.deflate, o.codec), (None, None, None));
        let d = old.dataset("/mine/values").unwrap();
        let o = options(&d);
        assert_eq!(
            (o.deflate, o.shuffle, o.chunk),
            (Some(6), true, Some(vec![10]))
        );
    }
}
