//! Refusals about the .debs of ours given to install (nothing changed): raised while reading
//! them (here) and by install and the pin-move rules above.

use std::path::PathBuf;

use crate::exit::ExitKind;

/// How the .debs given to install fail to be one pair from one `rocm-pin package` run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DebSetProblem {
    /// A .deb without our commit field.
    #[error(
        "{} ({package}) is not a rocm-pin replacement package (no {} field); make it with `rocm-pin package`",
        deb.display(),
        crate::rocm::COMMIT_FIELD
    )]
    NotOurs { deb: PathBuf, package: String },
    /// No .deb ships the provenance marker (the HSA half was not given).
    #[error(
        "none of the given .debs ships the provenance marker */{}: give every replacement package of one `rocm-pin package` run (one of them carries it)",
        crate::rocm::MARKER_RELPATH
    )]
    NoMarker,
    /// A .deb the marker does not name: it comes from another run.
    #[error(
        "{} ({package}) is not named in the marker of commit {marker_commit}: the .debs come from different `rocm-pin package` runs",
        deb.display()
    )]
    NotInMarker {
        deb: PathBuf,
        package: String,
        marker_commit: String,
    },
    /// A .deb whose version or commit differs from what the marker records for it.
    #[error(
        "{}: version {version} / commit {commit} do not match the marker ({marker_version} / {marker_commit})",
        deb.display()
    )]
    DisagreesWithMarker {
        deb: PathBuf,
        version: String,
        commit: String,
        marker_version: String,
        marker_commit: String,
    },
    /// The marker names a package that was not given.
    #[error(
        "the marker names {package} {version} but it was not given: install every package the marker names in one run"
    )]
    NotGiven { package: String, version: String },
}

/// Why install refused the given .debs.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    /// Installing an older version of our package over a newer one without `--allow-downgrade`.
    #[error(
        "{package} {installed} is installed (commit {installed_commit}); the given .deb is the older \
         {offered}: that is a downgrade to an earlier commit pin. Nothing changed. If going back \
         to that pin is what you want, run again with --allow-downgrade."
    )]
    Downgrade {
        package: String,
        installed: String,
        installed_commit: String,
        offered: String,
    },
    /// The .debs given to install are not one matching pair of our replacement packages.
    #[error("{0}")]
    DebSet(DebSetProblem),
}

impl InstallError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub(crate) fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}
