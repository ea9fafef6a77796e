//! Where the model files live: explicit folder, `CLAWHDF5_MODEL_DIR`, or the per-user cache.

use std::path::{Path, PathBuf};

use crate::EmbedError;

/// Name of the model folder inside the cache directory.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// Environment variable naming a model folder; checked after an explicit folder.
pub const MODEL_DIR_ENV: &str = "CLAWHDF5_MODEL_DIR";
/// The files a model folder must hold.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The per-user model cache: `$XDG_CACHE_HOME/clawhdf5/models`, else `$HOME/.cache/clawhdf5/models`.
/// `None` when neither variable is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = match non_empty("XDG_CACHE_HOME") {
        Some(xdg) => PathBuf::from(xdg),
        None => PathBuf::from(non_empty("HOME")?).join(".cache"),
    };
    Some(base.join("clawhdf5").join("models"))
}

/// The folder `clawhdf5 model fetch` installs all-MiniLM-L6-v2 into: `default_cache_dir()/all-MiniLM-L6-v2`.
pub fn default_model_dir() -> Option<PathBuf> {
    default_cache_dir().map(|d| d.join(MODEL_NAME))
}

/// True when `dir` holds every file in [`REQUIRED_FILES`].
pub fn has_model_files(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|f| dir.join(f).is_file())
}

/// Finds the model folder: `explicit` if given, else `$CLAWHDF5_MODEL_DIR`, else the cache folder.
///
/// An explicit folder or environment variable that lacks the files is an error (it is never silently
/// skipped); a missing model says how to fetch it.
pub fn resolve_model_dir(explicit: Option<&Path>) -> Result<PathBuf, EmbedError> {
    if let Some(dir) = explicit {
        return checked(dir.to_path_buf(), "explicit model directory");
    }
    if let Some(env_dir) = std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty()) {
        return checked(PathBuf::from(env_dir), MODEL_DIR_ENV);
    }
    match default_model_dir() {
        Some(dir) if has_model_files(&dir) => Ok(dir),
        Some(dir) => Err(EmbedError::ModelNotFound {
            searched: format!("{MODEL_DIR_ENV} (unset), {}", dir.display()),
        }),
        None => Err(EmbedError::ModelNotFound {
            searched: format!(
                "{MODEL_DIR_ENV} (unset), cache folder (neither XDG_CACHE_HOME nor HOME is set)"
            ),
        }),
    }
}

fn checked(dir: PathBuf, origin: &str) -> Result<PathBuf, EmbedError> {
    if has_model_files(&dir) {
        Ok(dir)
    } else {
        let missing: Vec<&str> = REQUIRED_FILES
            .iter()
            .copied()
            .filter(|f| !dir.join(f).is_file())
            .collect();
        Err(EmbedError::ModelNotFound {
            searched: format!(
                "{origin} {} (missing {})",
                dir.display(),
                missing.join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_dir_without_files_is_an_error_naming_the_files() {
        let tmp = tempfile::tempdir().unwrap();
        let err = resolve_model_dir(Some(tmp.path())).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("model.safetensors"), "{msg}");
        assert!(msg.contains("clawhdf5 model fetch"), "{msg}");
    }

    #[test]
    fn explicit_dir_with_files_is_used() {
        let tmp = tempfile::tempdir().unwrap();
        for f in REQUIRED_FILES {
            std::fs::write(tmp.path().join(f), b"x").unwrap();
        }
        assert_eq!(resolve_model_dir(Some(tmp.path())).unwrap(), tmp.path());
    }
}
