//! The Debian format's refusals: a package not written or not readable ([`DebError`]), a
//! version dpkg would refuse ([`VersionError`]), a deb822 paragraph or relationship field
//! that does not parse ([`ControlError`]), a timestamp no Debian date can carry
//! ([`DateError`]). Each is also reachable where it is raised (`deb::version::VersionError`, …).

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

/// Why a string is not a Debian version (`dpkg --compare-versions` would refuse it too).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid version {input:?}: {reason}")]
pub struct VersionError {
    pub input: String,
    pub reason: String,
}

/// Why a deb822 paragraph or one of its fields does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ControlError {
    #[error("line {line}: {reason}")]
    Syntax { line: usize, reason: String },
    #[error("field {field:?}: {reason}")]
    Field { field: String, reason: String },
    #[error("missing required field {0}")]
    Missing(String),
}

pub(super) fn syntax(line: usize, reason: impl Into<String>) -> ControlError {
    ControlError::Syntax {
        line,
        reason: reason.into(),
    }
}

pub(super) fn field_err(field: &str, reason: impl Into<String>) -> ControlError {
    ControlError::Field {
        field: field.to_string(),
        reason: reason.into(),
    }
}

/// Why a timestamp cannot be written as a Debian date.
#[derive(Debug, thiserror::Error)]
pub enum DateError {
    #[error("timestamp {0} is outside the dates Debian files can carry")]
    OutOfRange(i64),
}
