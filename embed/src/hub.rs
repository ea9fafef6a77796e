//! Downloading all-MiniLM-L6-v2 from the Hugging Face hub: `config.json`, `tokenizer.json` and
//! `model.safetensors` from the repository's `resolve` URLs, streamed to disk with the sha256 of
//! the weights checked before anything is installed.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::fetch::MODEL_SAFETENSORS_SHA256;
use crate::EmbedError;

/// The hub's public address (the only place it is written).
pub const HUB_DEFAULT_URL: &str = "https://huggingface.co";
/// Environment variable replacing [`HUB_DEFAULT_URL`] (a mirror, or a local server in tests).
pub const HUB_URL_ENV: &str = "CLAWHDF5_HUB_URL";
/// The hub repository of the model.
pub const HUB_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The files downloaded, in order (the weights last, as they are the large one).
pub const HUB_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Where and what to download from a hub.
#[derive(Debug, Clone)]
pub struct HubSource {
    /// Base URL, e.g. [`HUB_DEFAULT_URL`]; files come from `{base}/{repo}/resolve/{revision}/{file}`.
    pub base_url: String,
    /// Repository, e.g. [`HUB_REPO`].
    pub repo: String,
    /// Branch, tag or commit.
    pub revision: String,
    /// Expected hex sha256 of `model.safetensors`.
    pub safetensors_sha256: String,
    /// Limit on connecting and on each whole file transfer.
    pub timeout: Duration,
}

impl HubSource {
    /// The model's hub repository at [`HUB_URL_ENV`] (if set and not empty) or [`HUB_DEFAULT_URL`].
    pub fn from_env() -> Self {
        HubSource {
            base_url: hub_base_url(std::env::var(HUB_URL_ENV).ok()),
            repo: HUB_REPO.to_string(),
            revision: "main".to_string(),
            safetensors_sha256: MODEL_SAFETENSORS_SHA256.to_string(),
            timeout: Duration::from_secs(600),
        }
    }

    /// URL of one file of the repository.
    pub fn file_url(&self, file: &str) -> String {
        format!(
            "{}/{}/resolve/{}/{file}",
            self.base_url.trim_end_matches('/'),
            self.repo,
            self.revision
        )
    }

    /// Downloads [`HUB_FILES`] into the (existing, empty) folder `out` and checks the weights'
    /// sha256; on error, `out` may hold partial files (the caller discards it).
    pub(crate) fn download_into(&self, out: &Path) -> Result<(), EmbedError> {
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(self.timeout.min(Duration::from_secs(30)))
            .timeout(self.timeout)
            .build()
            .map_err(|e| EmbedError::Fetch(format!("cannot build an HTTP client: {e}")))?;
        for file in HUB_FILES {
            let url = self.file_url(file);
            let dest = out.join(file);
            let sha = download(&client, &url, &dest)?;
            if file == "model.safetensors" && sha != self.safetensors_sha256 {
                return Err(EmbedError::Checksum {
                    path: dest,
                    expected: self.safetensors_sha256.clone(),
                    actual: sha,
                });
            }
        }
        Ok(())
    }
}

/// The base URL from the value of [`HUB_URL_ENV`]: that value when set and not blank, else the default.
fn hub_base_url(env_value: Option<String>) -> String {
    env_value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| HUB_DEFAULT_URL.to_string())
}

/// GETs `url` into `dest` (following redirects) and returns the hex sha256 of what was written.
fn download(
    client: &reqwest::blocking::Client,
    url: &str,
    dest: &Path,
) -> Result<String, EmbedError> {
    let mut resp = client
        .get(url)
        .send()
        .map_err(|e| EmbedError::Fetch(format!("GET {url}: {e}")))?;
    let status = resp.status();
    if !status.is_success() {
        let mut body = String::new();
        let _ = resp.by_ref().take(300).read_to_string(&mut body);
        return Err(EmbedError::Fetch(format!(
            "GET {url}: HTTP {}{}",
            status.as_u16(),
            if body.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", body.trim())
            }
        )));
    }
    let expected_len = resp.content_length();
    let mut file = std::fs::File::create(dest)
        .map_err(|e| EmbedError::io(format!("creating {}", dest.display()), e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut written = 0u64;
    loop {
        let n = resp
            .read(&mut buf)
            .map_err(|e| EmbedError::Fetch(format!("GET {url}: reading the body: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(|e| EmbedError::io(format!("writing {}", dest.display()), e))?;
        written += n as u64;
    }
    if let Some(len) = expected_len.filter(|&len| len != written) {
        return Err(EmbedError::Fetch(format!(
            "GET {url}: body cut short ({written} of {len} bytes)"
        )));
    }
    file.sync_all()
        .map_err(|e| EmbedError::io(format!("flushing {}", dest.display()), e))?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_comes_from_the_variable_unless_blank() {
        assert_eq!(hub_base_url(None), HUB_DEFAULT_URL);
        assert_eq!(hub_base_url(Some("  ".into())), HUB_DEFAULT_URL);
        assert_eq!(
            hub_base_url(Some("http://127.0.0.1:9".into())),
            "http://127.0.0.1:9"
        );
    }

    #[test]
    fn file_urls_follow_the_resolve_layout() {
        let mut s = HubSource::from_env();
        s.base_url = "http://h:1/".into();
        assert_eq!(
            s.file_url("tokenizer.json"),
            "http://h:1/sentence-transformers/all-MiniLM-L6-v2/resolve/main/tokenizer.json"
        );
    }
}
