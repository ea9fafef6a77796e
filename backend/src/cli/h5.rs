//! `clawhdf5 h5 ls|dump`: inspect any HDF5 file (a store or not) with our own reader.

use std::ops::ControlFlow;
use std::path::PathBuf;

use clawhdf5_memory::format::{inspect, H5File};

/// `h5` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum H5Command {
    /// List a group's members (default: the root group); with -r, everything below it by full path.
    Ls {
        /// HDF5 file.
        file: PathBuf,
        /// Group path.
        #[arg(default_value = "/")]
        object: String,
        /// List every group and dataset below OBJECT, each by its full path (like h5ls -r).
        #[arg(short, long)]
        recursive: bool,
    },
    /// Print a dataset or group: dtype, shape, layout, filters, attributes and values.
    Dump {
        /// HDF5 file.
        file: PathBuf,
        /// Object path.
        object: String,
        /// Print JSON (the default and only format for now, kept for scripts).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(c: H5Command) -> anyhow::Result<()> {
    match c {
        H5Command::Ls {
            file,
            object,
            recursive,
        } => {
            let f = H5File::open(&file)?;
            if recursive {
                // Printed as found: a large file's listing starts at once and never sits whole in memory.
                let mut failed = None;
                inspect::ls_recursive_each(&f, &object, &mut |line| match outln!("{line}") {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        failed = Some(e);
                        ControlFlow::Break(())
                    }
                })?;
                if let Some(e) = failed {
                    return Err(e.into());
                }
            } else {
                for line in inspect::ls(&f, &object)? {
                    outln!("{line}")?;
                }
            }
        }
        H5Command::Dump { file, object, .. } => {
            let f = H5File::open(&file)?;
            outln!(
                "{}",
                serde_json::to_string_pretty(&inspect::dump_json(&f, &object)?)?
            )?;
        }
    }
    Ok(())
}
