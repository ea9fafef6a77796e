//! Signed checkpoints: a SHA-256 per record, a Merkle root over them, and an Ed25519 signature of the root,
//! stored in the file; verification reports which records were changed, added or removed since signing.

use std::collections::BTreeMap;
use std::path::Path;

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::error::{io_err, MemoryError, Result};
use crate::record::Record;

/// What a signature covers: record ids with their hashes, the Merkle root and the signed generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedManifest {
    /// (record id, SHA-256 of the record's canonical encoding), in row order.
    pub records: Vec<(u64, [u8; 32])>,
    /// Merkle root over the record hashes.
    pub root: [u8; 32],
    /// Checkpoint generation the signature was made at.
    pub generation: u64,
    /// Ed25519 public key.
    pub public_key: [u8; 32],
    /// Ed25519 signature over `generation || root`.
    pub signature: [u8; 64],
}

/// SHA-256 of a record's content: every field except access statistics (which change on reads) and the
/// embedding (derived from the text).
pub fn record_hash(r: &Record) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut field = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    field(&r.id.to_le_bytes());
    field(r.text.as_bytes());
    field(r.source.as_str().as_bytes());
    field(r.agent.as_bytes());
    field(r.session.as_bytes());
    match &r.origin {
        Some(o) => {
            field(o.path.as_bytes());
            field(&o.start_line.to_le_bytes());
            field(&o.end_line.to_le_bytes());
        }
        None => field(b""),
    }
    for t in &r.tags {
        field(t.as_bytes());
    }
    field(&r.event_time.unwrap_or(i64::MIN).to_le_bytes());
    field(&r.created_at.to_le_bytes());
    field(&r.supersedes.unwrap_or(0).to_le_bytes());
    field(&r.superseded_by.unwrap_or(0).to_le_bytes());
    field(&[u8::from(r.tombstone)]);
    h.finalize().into()
}

/// Merkle root: pairwise SHA-256 up the tree, an odd node carried up unchanged; the empty tree hashes to
/// SHA-256 of nothing.
pub fn merkle_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.is_empty() {
        return Sha256::digest([]).into();
    }
    let mut level: Vec<[u8; 32]> = leaves.to_vec();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [a, b] => {
                    let mut h = Sha256::new();
                    h.update([1u8]);
                    h.update(a);
                    h.update(b);
                    h.finalize().into()
                }
                [a] => *a,
                _ => unreachable!("chunks(2) yields one or two"),
            })
            .collect();
    }
    level[0]
}

fn message(generation: u64, root: &[u8; 32]) -> Vec<u8> {
    let mut m = b"clawhdf5-checkpoint-v1".to_vec();
    m.extend_from_slice(&generation.to_le_bytes());
    m.extend_from_slice(root);
    m
}

/// Sign the live state of `records` at `generation`.
pub fn sign(records: &[Record], generation: u64, key: &SigningKey) -> SignedManifest {
    let list: Vec<(u64, [u8; 32])> = records.iter().map(|r| (r.id, record_hash(r))).collect();
    sign_hashes(list, generation, key)
}

/// Sign already computed `(id, record_hash)` pairs, in row order, at `generation`.
pub fn sign_hashes(
    list: Vec<(u64, [u8; 32])>,
    generation: u64,
    key: &SigningKey,
) -> SignedManifest {
    let leaves: Vec<[u8; 32]> = list.iter().map(|x| x.1).collect();
    let root = merkle_root(&leaves);
    let signature = key.sign(&message(generation, &root));
    SignedManifest {
        records: list,
        root,
        generation,
        public_key: key.verifying_key().to_bytes(),
        signature: signature.to_bytes(),
    }
}

/// Outcome of verifying a store against its signed manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// The signature over the manifest is valid (for the expected key, when one was given).
    pub signature_valid: bool,
    /// The manifest's record hashes reproduce its Merkle root.
    pub root_matches: bool,
    /// The public key the manifest was signed with (hex).
    pub public_key: String,
    /// Generation the manifest was signed at.
    pub signed_generation: u64,
    /// Ids whose content differs from what was signed.
    pub changed: Vec<u64>,
    /// Ids present now but not signed.
    pub added: Vec<u64>,
    /// Ids signed but no longer present.
    pub removed: Vec<u64>,
}

impl VerifyReport {
    /// True when nothing was tampered with.
    pub fn ok(&self) -> bool {
        self.signature_valid
            && self.root_matches
            && self.changed.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
    }
}

/// Check `records` against `manifest`; `expected_key` pins the signer.
pub fn verify(
    records: &[Record],
    manifest: &SignedManifest,
    expected_key: Option<&[u8; 32]>,
) -> VerifyReport {
    let leaves: Vec<[u8; 32]> = manifest.records.iter().map(|x| x.1).collect();
    let root_matches = merkle_root(&leaves) == manifest.root;
    let key_ok = expected_key.is_none_or(|k| k == &manifest.public_key);
    let signature_valid = key_ok
        && VerifyingKey::from_bytes(&manifest.public_key)
            .map(|vk| {
                vk.verify(
                    &message(manifest.generation, &manifest.root),
                    &Signature::from_bytes(&manifest.signature),
                )
                .is_ok()
            })
            .unwrap_or(false);
    let signed: BTreeMap<u64, [u8; 32]> = manifest.records.iter().copied().collect();
    let mut report = VerifyReport {
        signature_valid,
        root_matches,
        public_key: hex(&manifest.public_key),
        signed_generation: manifest.generation,
        ..Default::default()
    };
    let mut seen = std::collections::BTreeSet::new();
    for r in records {
        seen.insert(r.id);
        match signed.get(&r.id) {
            Some(h) if *h == record_hash(r) => {}
            Some(_) => report.changed.push(r.id),
            None => report.added.push(r.id),
        }
    }
    report.removed = signed
        .keys()
        .filter(|id| !seen.contains(id))
        .copied()
        .collect();
    report
}

/// Lower-case hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parse hex into exactly N bytes.
pub fn from_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.trim();
    if s.len() != 2 * N || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Load a signing key (64 hex characters, the Ed25519 seed) from a file, or create one there (mode 0600).
pub fn load_or_create_key(path: &Path) -> Result<SigningKey> {
    if path.exists() {
        let s = std::fs::read_to_string(path).map_err(io_err(path))?;
        let seed = from_hex::<32>(&s).ok_or_else(|| {
            MemoryError::InvalidInput(format!(
                "{} does not hold a 64-hex-digit Ed25519 seed",
                path.display()
            ))
        })?;
        return Ok(SigningKey::from_bytes(&seed));
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| MemoryError::InvalidInput(format!("no randomness for a key: {e}")))?;
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    use std::io::Write;
    let mut f = opts.open(path).map_err(io_err(path))?;
    f.write_all(hex(&seed).as_bytes()).map_err(io_err(path))?;
    f.sync_all().map_err(io_err(path))?;
    Ok(SigningKey::from_bytes(&seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Source, Tier};

    fn rec(id: u64, text: &str) -> Record {
        Record {
            id,
            text: text.into(),
            source: Source::Conversation,
            agent: "main".into(),
            session: String::new(),
            origin: None,
            tags: vec![],
            event_time: None,
            created_at: 5,
            importance: 0.5,
            access_count: 0,
            last_access: 0,
            tier: Tier::Working,
            supersedes: None,
            superseded_by: None,
            tombstone: false,
            embedding: None,
        }
    }

    #[test]
    fn untouched_store_verifies() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let recs = vec![rec(1, "a"), rec(2, "b"), rec(3, "c")];
        let m = sign(&recs, 4, &key);
        let r = verify(&recs, &m, Some(&key.verifying_key().to_bytes()));
        assert!(r.ok(), "{r:?}");
    }

    #[test]
    fn tampering_is_located() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let recs = vec![rec(1, "a"), rec(2, "b"), rec(3, "c")];
        let m = sign(&recs, 4, &key);
        let mut now = recs.clone();
        now[1].text = "B".into();
        now.remove(2);
        now.push(rec(9, "new"));
        let r = verify(&now, &m, None);
        assert!(!r.ok());
        assert!(r.signature_valid);
        assert_eq!(r.changed, vec![2]);
        assert_eq!(r.removed, vec![3]);
        assert_eq!(r.added, vec![9]);
    }

    #[test]
    fn forged_manifest_fails_signature() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let recs = vec![rec(1, "a")];
        let mut m = sign(&recs, 1, &key);
        m.root[0] ^= 1;
        assert!(!verify(&recs, &m, None).signature_valid);
        let other = SigningKey::from_bytes(&[8u8; 32])
            .verifying_key()
            .to_bytes();
        let m = sign(&recs, 1, &key);
        assert!(!verify(&recs, &m, Some(&other)).signature_valid);
    }

    #[test]
    fn access_statistics_do_not_change_the_hash() {
        let a = rec(1, "x");
        let mut b = a.clone();
        b.access_count = 9;
        b.last_access = 99;
        assert_eq!(record_hash(&a), record_hash(&b));
    }

    #[test]
    fn merkle_root_depends_on_order_and_content() {
        let l = [[1u8; 32], [2u8; 32], [3u8; 32]];
        assert_ne!(merkle_root(&l), merkle_root(&[l[1], l[0], l[2]]));
        assert_eq!(merkle_root(&l), merkle_root(&l));
    }

    #[test]
    fn key_file_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k/signing.key");
        let a = load_or_create_key(&p).unwrap();
        let b = load_or_create_key(&p).unwrap();
        assert_eq!(a.to_bytes(), b.to_bytes());
        std::fs::write(&p, "nonsense").unwrap();
        assert!(load_or_create_key(&p).is_err());
        assert_eq!(from_hex::<2>("0aff"), Some([10, 255]));
        assert_eq!(from_hex::<2>("0af"), None);
    }
}
