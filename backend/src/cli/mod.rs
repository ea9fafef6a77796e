//! Subcommands of the `clawhdf5` program.

/// `println!` that hands back the write's error instead of panicking: output piped into a program that stops
/// reading (`clawhdf5 export … | head`) ends the command quietly (see [`closed_output`]).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

mod embed;
mod h5;
mod mcp;
mod records;
mod save;
mod search;
mod serve;
mod stats;
mod verify;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// clawhdf5: an agent's memory in one HDF5 file.
#[derive(Debug, Parser)]
#[command(name = "clawhdf5", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Save one memory; prints {"id": N} once it is durable.
    Save(save::SaveArgs),
    /// Search the store; best results first.
    Search(search::SearchArgs),
    /// Record count, file size and schema version of a store.
    Stats(stats::StatsArgs),
    /// Print one memory by id.
    Get(records::GetArgs),
    /// Forget a memory by id, or what a query finds.
    Forget(records::ForgetArgs),
    /// Write every memory as JSON lines.
    Export(records::ExportArgs),
    /// Read memories from JSON lines (as written by export).
    Import(records::ImportArgs),
    /// Check a signed store for tampering; reports changed, added and removed records.
    Verify(verify::VerifyArgs),
    /// Create (or show) an Ed25519 signing key; prints its public key.
    Keygen(verify::KeygenArgs),
    /// Print embedding vectors of texts (checks the local model set-up).
    Embed(embed::EmbedArgs),
    /// Install or locate the local embedding model.
    #[command(subcommand)]
    Model(embed::ModelCommand),
    /// Inspect any HDF5 file: list groups, dump datasets as JSON.
    #[command(subcommand)]
    H5(h5::H5Command),
    /// Model Context Protocol server over stdio (tools memory_search, memory_get, memory_store, memory_forget).
    Mcp(mcp::McpArgs),
    /// JSON-RPC 2.0 server over stdio (one store per agent under --dir); what the OpenClaw plugin runs.
    Serve(serve::ServeArgs),
}

/// Options shared by every command that works on one store file.
#[derive(Debug, clap::Args)]
pub struct StoreArg {
    /// The store's HDF5 file.
    #[arg(long, value_name = "PATH")]
    pub store: PathBuf,
}

/// Options for commands that write a store.
#[derive(Debug, clap::Args)]
pub struct WriteOpts {
    /// Sign every checkpoint with this Ed25519 key file (created if missing; see `keygen`).
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    #[command(flatten)]
    pub embed: embed::EmbedOpts,
}

impl WriteOpts {
    /// Store options with the signing key loaded.
    pub fn store_options(&self) -> anyhow::Result<clawhdf5_memory::StoreOptions> {
        let signing_key = match &self.sign_key {
            Some(p) => Some(clawhdf5_memory::integrity::load_or_create_key(p)?),
            None => None,
        };
        Ok(clawhdf5_memory::StoreOptions {
            signing_key,
            embedder: self.embed.load()?,
            ..Default::default()
        })
    }
}

/// Close a store whose changes this command has already made durable in its log (every change is fsynced there
/// before it is acknowledged). A close that cannot fold the log into the HDF5 file (a full disk, say) loses
/// nothing and does not fail the command: it is told on standard error, and the next writable open folds it.
pub fn close_durable(store: clawhdf5_memory::Store) {
    if let Err(e) = store.close() {
        eprintln!(
            "clawhdf5: warning: the changes are saved in the store's log, but folding the log into the HDF5 \
             file failed ({}); the next command that opens the store for writing folds it",
            one_line(&anyhow::Error::new(e))
        );
    }
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Save(a) => save::run(a),
        Command::Search(a) => search::run(a),
        Command::Stats(a) => stats::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Mcp(a) => mcp::run(a),
        Command::Embed(a) => embed::embed(a),
        Command::Model(c) => embed::model(c),
        Command::H5(c) => h5::run(c),
        Command::Get(a) => records::get(a),
        Command::Verify(a) => verify::verify(a),
        Command::Keygen(a) => verify::keygen(a),
        Command::Forget(a) => records::forget(a),
        Command::Export(a) => records::export(a),
        Command::Import(a) => records::import(a),
    }
}

/// The first non-empty line of a message, without clap's "error: " prefix.
pub fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// Whether `e` is a write to standard output that failed because its reader went away (a closed pipe): the
/// program then stops quietly, as Unix tools do.
pub fn closed_output(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An error and its causes on one line.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}
