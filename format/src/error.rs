//! Error type shared by the reader and the writer.

/// Everything that can go wrong while reading or writing an HDF5 file.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Operating-system I/O failure.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// No HDF5 signature found at offset 0 or 512·2ⁿ.
    #[error("not an HDF5 file (no superblock signature found)")]
    NotHdf5,
    /// The file is damaged or truncated; the message says where.
    #[error("corrupt HDF5 file: {0}")]
    Corrupt(String),
    /// A valid HDF5 feature this crate does not implement, named.
    #[error("unsupported HDF5 feature: {0}")]
    Unsupported(String),
    /// No object at this path.
    #[error("not found: {0}")]
    NotFound(String),
    /// The object exists but is not of the kind the call needs.
    #[error("type mismatch: {0}")]
    TypeMismatch(String),
    /// The caller passed an invalid argument (bad shape, bad path, ...).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A value does not fit the file's field width (size of offsets or lengths): nothing was written. (Boxed,
    /// so that every `Result` of this crate stays as small as a `String` error makes it.)
    #[error("{} ({:#x}) does not fit the file's {}-byte fields", .0.what, .0.value, .0.bytes)]
    TooWide(Box<FieldOverflow>),
}

/// What [`FormatError::TooWide`] reports: a value too wide for the file's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldOverflow {
    /// What overflowed (an end of file, a dimension, a size).
    pub what: String,
    /// The value.
    pub value: u64,
    /// The field width in bytes.
    pub bytes: usize,
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, FormatError>;

/// Builds a [`FormatError::Corrupt`].
pub(crate) fn corrupt<T>(msg: impl Into<String>) -> Result<T> {
    Err(FormatError::Corrupt(msg.into()))
}

/// Builds a [`FormatError::Unsupported`].
pub(crate) fn unsupported<T>(msg: impl Into<String>) -> Result<T> {
    Err(FormatError::Unsupported(msg.into()))
}

/// Builds a [`FormatError::Invalid`].
pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(FormatError::Invalid(msg.into()))
}

impl FormatError {
    /// A [`FormatError::TooWide`]: `what` (`value`) does not fit fields of `bytes` bytes.
    pub(crate) fn too_wide(what: impl Into<String>, value: u64, bytes: usize) -> FormatError {
        FormatError::TooWide(Box::new(FieldOverflow {
            what: what.into(),
            value,
            bytes,
        }))
    }

    /// The same error with `what` (where it arose) before its message.
    pub(crate) fn context(self, what: &str) -> FormatError {
        match self {
            FormatError::Corrupt(m) => FormatError::Corrupt(format!("{what}: {m}")),
            FormatError::Unsupported(m) => FormatError::Unsupported(format!("{what}: {m}")),
            FormatError::NotFound(m) => FormatError::NotFound(format!("{what}: {m}")),
            FormatError::TypeMismatch(m) => FormatError::TypeMismatch(format!("{what}: {m}")),
            FormatError::Invalid(m) => FormatError::Invalid(format!("{what}: {m}")),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_stay_as_small_as_a_string_message() {
        // Every reader call returns a `Result`; a wider error makes each of them copy more (a 48-byte error
        // once slowed opening 10K small datasets by 7%).
        assert!(std::mem::size_of::<FormatError>() <= 32);
        let e = FormatError::too_wide("dimension 0", 1 << 33, 4);
        assert_eq!(
            e.to_string(),
            "dimension 0 (0x200000000) does not fit the file's 4-byte fields"
        );
    }
}
