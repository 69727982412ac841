//! `rocm-pin repo`'s refusals (nothing written).

use std::fmt;
use std::path::PathBuf;

use crate::exit::ExitKind;

/// Why `rocm-pin repo` refuses to add a package (nothing is written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepoConflict {
    /// Same name, version and architecture as a published (or earlier given) package, other bytes.
    #[error(
        "{}: {name} {version} ({arch}) is already in {place} with different contents (sha256 \
         {published_sha256}, this file {sha256}); a published version must never change: bump \
         the version",
        deb.display()
    )]
    ChangedVersion {
        deb: PathBuf,
        name: String,
        version: String,
        arch: String,
        /// "the repository" or "an earlier argument".
        place: &'static str,
        published_sha256: String,
        sha256: String,
    },
    /// A file in the pool where the package would go, not in the index, with other bytes.
    #[error(
        "{} already exists with different contents but is not in the index; remove it or start a \
         new repository",
        path.display()
    )]
    StrayPoolFile { path: PathBuf },
}

/// Why `rocm-pin repo` refused.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// A suite or component name that cannot be a path component and a Release value.
    #[error("invalid {what} name {name:?}: use letters, digits and . _ + - only")]
    BadName { what: &'static str, name: String },
    /// Packages that would change what a repository already publishes.
    #[error("refused, nothing written:\n  {}", join_lines(.0))]
    RepoConflicts(Vec<RepoConflict>),
    /// `repo keygen` would overwrite a key file.
    #[error(
        "{} already exists: refusing to overwrite a key; choose another --out",
        path.display()
    )]
    KeyExists { path: PathBuf },
    /// `repo --sign-key` names a key whose signatures apt would refuse.
    #[error(
        "{}: the signing key {fingerprint} {problem}: apt would refuse every signature made with it. {}",
        path.display(),
        problem.remedy()
    )]
    SigningKeyUnusable {
        path: PathBuf,
        fingerprint: String,
        problem: KeyValidityProblem,
    },
    /// Any other refusal of `rocm-pin repo`, in the words of the check that refused it.
    #[error("{0}")]
    Refused(String),
}

impl RepoError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}

/// Why an OpenPGP signing key cannot make signatures that verify now (times in seconds since
/// the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValidityProblem {
    Expired {
        at: i64,
    },
    /// When the revocation signature was made, if it says.
    Revoked {
        at: Option<i64>,
    },
    /// The key's creation time is in the future.
    NotYetValid {
        from: i64,
    },
}

impl KeyValidityProblem {
    /// What to do about it.
    pub fn remedy(&self) -> &'static str {
        match self {
            KeyValidityProblem::Expired { .. } => {
                "Extend it (gpg --quick-set-expire FINGERPRINT 1y) and export it again, or give another --sign-key."
            }
            KeyValidityProblem::Revoked { .. } => "Give another --sign-key.",
            KeyValidityProblem::NotYetValid { .. } => {
                "Check this machine's clock, or give another --sign-key."
            }
        }
    }
}

impl fmt::Display for KeyValidityProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let when = |secs: i64| {
            crate::deb::date::release_date(secs).unwrap_or_else(|_| format!("{secs} (epoch)"))
        };
        match self {
            KeyValidityProblem::Expired { at } => write!(f, "expired on {}", when(*at)),
            KeyValidityProblem::Revoked { at: Some(at) } => {
                write!(f, "was revoked on {}", when(*at))
            }
            KeyValidityProblem::Revoked { at: None } => f.write_str("is revoked"),
            KeyValidityProblem::NotYetValid { from } => {
                write!(f, "is not valid until {}", when(*from))
            }
        }
    }
}

fn join_lines(conflicts: &[RepoConflict]) -> String {
    conflicts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Any other refusal of `rocm-pin repo`, as an `anyhow::Error` carrying [`RepoError::Refused`] (exit 2).
pub(crate) fn refused(message: impl Into<String>) -> anyhow::Error {
    RepoError::Refused(message.into()).into()
}
