//! The format layer's refusals (no ROCm knowledge here).

use std::path::PathBuf;

use crate::exit::ExitKind;

/// Why a package was not written.
#[derive(Debug, thiserror::Error)]
pub enum DebError {
    /// `deb build` was given an output that is not a regular file or a new path.
    #[error(
        "{}: is {kind}, not a regular file: a package is written only to a regular file or a \
         new path; give an output file name. Nothing written.",
        path.display()
    )]
    DebOutputNotRegular {
        path: PathBuf,
        /// What is there, e.g. "a character device", "a FIFO", "a symlink to a block device".
        kind: String,
    },
    /// A malformed package or archive, or an input the format layer refuses, in the words of
    /// the check that refused it.
    #[error("{0}")]
    Invalid(String),
}

impl DebError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}

/// A malformed package or a refused input, as an `anyhow::Error` carrying [`DebError::Invalid`] (exit 2).
pub(crate) fn invalid(message: impl Into<String>) -> anyhow::Error {
    DebError::Invalid(message.into()).into()
}
