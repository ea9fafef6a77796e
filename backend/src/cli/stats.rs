//! `clawhdf5 stats`: what a store holds.

use std::path::{Path, PathBuf};

use clawhdf5_memory::Store;

use super::StoreArg;

/// Arguments of `stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: StatsArgs) -> anyhow::Result<()> {
    let store = Store::open_read_only(&a.store.store)?;
    let s = store.stats();
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&s)?)?;
    } else {
        outln!("store:          {}", s.path.display())?;
        outln!("records:        {}", s.records)?;
        outln!("forgotten:      {}", s.tombstones)?;
        outln!("file size:      {} bytes", s.file_bytes)?;
        outln!("log size:       {} bytes", s.wal_bytes)?;
        outln!("schema version: {}", s.schema_version)?;
        outln!("generation:     {}", s.generation)?;
        match (&s.embedding_model, s.embedding_dim) {
            (Some(m), Some(d)) => outln!(
                "embeddings:     {} of {} ({m}, {d} dims)",
                s.embedded,
                s.records
            )?,
            (None, Some(d)) => {
                outln!("embeddings:     {} of {} ({d} dims)", s.embedded, s.records)?
            }
            _ => outln!("embeddings:     none (keyword-only)")?,
        }
        if s.graph_rows > 0 {
            outln!(
                "vector graph:   {} rows ({} searched exactly until folded in)",
                s.graph_rows,
                s.unindexed_rows
            )?;
        }
        for kept in kept_copies(&s.path) {
            outln!(
                "kept copy:      {} (a rewrite could not carry everything other programs had added; see its objects there)",
                kept.display()
            )?;
        }
    }
    Ok(())
}

/// Copies of the store's file that whole-file rewrites kept beside it (`STORE.before-GENERATION`), oldest first.
fn kept_copies(store: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (store.parent(), store.file_name()) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.before-", name.to_string_lossy());
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let generation = n.strip_prefix(&prefix)?.parse().ok()?;
            Some((generation, store.with_file_name(&n)))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_copies_are_the_stores_own_in_generation_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "m.h5.before-12",
            "m.h5.before-3",
            "m.h5.before-x",
            "other.h5.before-4",
            "m.h5",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let found = kept_copies(&dir.path().join("m.h5"));
        assert_eq!(
            found,
            vec![
                dir.path().join("m.h5.before-3"),
                dir.path().join("m.h5.before-12")
            ]
        );
        assert!(kept_copies(Path::new("/")).is_empty());
    }
}
