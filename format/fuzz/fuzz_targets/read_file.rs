//! Opens arbitrary bytes as an HDF5 file and reads everything reachable; must never panic.
#![no_main]

use clawhdf5_format::{EntryKind, H5File};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

fn walk(f: &H5File, path: &str, seen: &mut HashSet<u64>, budget: &mut usize) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    match f.resolve(path) {
        Ok(a) if seen.insert(a) => {}
        _ => return,
    }
    if let Ok(names) = f.attr_names(path) {
        for n in names.iter().take(64) {
            let _ = f.attr(path, n);
        }
    }
    let Ok(entries) = f.list(path) else { return };
    for e in entries.into_iter().take(256) {
        let child = format!("{}/{}", path.trim_end_matches('/'), e.name);
        match e.kind {
            EntryKind::Group => walk(f, &child, seen, budget),
            EntryKind::Dataset => {
                if let Ok(d) = f.dataset(&child) {
                    let _ = d.read();
                }
            }
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = H5File::from_bytes(data.to_vec()) {
        let mut seen = HashSet::new();
        let mut budget = 1000;
        walk(&f, "/", &mut seen, &mut budget);
    }
});
