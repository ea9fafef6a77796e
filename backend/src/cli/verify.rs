//! `clawhdf5 verify`: check a signed store for tampering; `clawhdf5 keygen`: make a signing key.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clawhdf5_memory::integrity::{from_hex, hex, load_or_create_key};
use clawhdf5_memory::verify_store;

use super::StoreArg;

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Expected signer: the Ed25519 public key in hex (as printed by `keygen`).
    #[arg(long, value_name = "PUBKEY")]
    key: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn verify(a: VerifyArgs) -> anyhow::Result<()> {
    let key = match &a.key {
        Some(k) => Some(
            from_hex::<32>(k)
                .with_context(|| format!("--key {k:?} is not a 64-hex-digit public key"))?,
        ),
        None => None,
    };
    let Some(report) = verify_store(&a.store.store, key.as_ref())? else {
        bail!(
            "{} is not signed (write it with --sign-key FILE to sign its checkpoints)",
            a.store.store.display()
        );
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        outln!("signer:     {}", report.public_key)?;
        outln!("generation: {}", report.signed_generation)?;
        outln!(
            "signature:  {}",
            if report.signature_valid {
                "valid"
            } else {
                "INVALID"
            }
        )?;
        outln!(
            "merkle:     {}",
            if report.root_matches {
                "consistent"
            } else {
                "INCONSISTENT"
            }
        )?;
        for (what, ids) in [
            ("changed", &report.changed),
            ("added", &report.added),
            ("removed", &report.removed),
        ] {
            if !ids.is_empty() {
                outln!("{what}: {ids:?}")?;
            }
        }
    }
    if !report.ok() {
        bail!("verification failed: the store was modified after it was signed, or the signature is wrong");
    }
    if !a.json {
        outln!("ok: every record matches the signed checkpoint")?;
    }
    Ok(())
}

/// Arguments of `keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Where to write the secret key (64 hex digits, mode 0600); an existing file is reused.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn keygen(a: KeygenArgs) -> anyhow::Result<()> {
    let key = load_or_create_key(&a.out)?;
    outln!("{}", hex(&key.verifying_key().to_bytes()))?;
    Ok(())
}
