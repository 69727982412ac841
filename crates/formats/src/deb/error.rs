//! The Debian format's refusals.

use std::path::PathBuf;

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

/// A malformed package or a refused input, as an `anyhow::Error` carrying [`DebError::Invalid`].
pub(crate) fn invalid(message: impl Into<String>) -> anyhow::Error {
    DebError::Invalid(message.into()).into()
}
