//! The one error type of the library, and the exit-code contract shared by every subcommand.
//!
//! 0 success; 1 a check failed (verify, install's post-check, rollback's post-check);
//! 2 usage or environment error (bad input, missing tool, refused operation);
//! 3 the ROCm version gate skipped this host (verify after an `auto` skip).
//!
//! Each domain owns its errors and their wording (`build::BuildError`, `host::gate::GateError`,
//! `repo::RepoError`, `deb::DebError`, …), each with `kind()`; [`Error`] wraps them, next to
//! plain-message [`Error::Usage`], [`Error::CheckFailed`] and [`Error::Skipped`]. Each text is
//! what the user reads on stderr (`rocm-pin: error: …`). [`ExitKind::code`] is the one table of
//! exit numbers and [`exit_code_for`], which `main` calls, finds our error anywhere in an
//! `anyhow` chain. Whether an operation had changed the host when it failed is a fact carried
//! by [`Error::AfterChange`] ([`HostChange`]), never read from an exit code.

use std::fmt;

/// The three ways a run can end in error, each with its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// A check ran and failed (exit 1).
    CheckFailed,
    /// Bad input, refused operation or environment problem (exit 2).
    Usage,
    /// The version gate skipped this host (exit 3).
    Skipped,
}

impl ExitKind {
    /// The one table of exit codes (signals aside: 128+signal, [`Error::exit_code`]).
    pub fn code(self) -> i32 {
        match self {
            ExitKind::CheckFailed => 1,
            ExitKind::Usage => 2,
            ExitKind::Skipped => 3,
        }
    }

    /// The exit code of a verdict: 0 when it is no error, else its kind's code.
    pub fn code_of(verdict: Option<ExitKind>) -> i32 {
        verdict.map_or(0, ExitKind::code)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input, a refused operation or an environment problem not told apart further (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A check ran and failed (exit 1).
    #[error("{0}")]
    CheckFailed(String),
    /// The version gate skipped this host (exit 3).
    #[error("{0}")]
    Skipped(String),
    /// A file under a root was refused (not a regular file, over its size cap, a magic link)
    /// or could not be read (exit 2).
    #[error("{0}")]
    RootRead(#[from] crate::host::root::RootReadError),
    /// An operation that changes the host (install, adopt, rollback, guard) failed; the fact
    /// of whether it had changed the host by then travels with the error. Reads and exits as
    /// the error inside.
    #[error(transparent)]
    AfterChange(AfterChange),
    /// A build's refusal (prerequisites, source, patches, the tree, staging).
    #[error(transparent)]
    Build(#[from] crate::ops::build::BuildError),
    /// The version gate refused or skipped this host.
    #[error(transparent)]
    Gate(#[from] crate::ops::gate::GateError),
    /// install refused the given .debs.
    #[error(transparent)]
    Install(#[from] crate::ops::install_error::InstallError),
    /// `rocm-pin repo` refused.
    #[error(transparent)]
    Repo(#[from] crate::ops::repo::RepoError),
    /// The format layer refused to write a package.
    #[error(transparent)]
    Deb(#[from] crate::deb::DebError),
    /// Unpacking an image passed a limit, met a bad digest or was interrupted.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    /// verify's checks failed or could not be made.
    #[error(transparent)]
    Verify(#[from] crate::ops::verify::VerifyError),
    /// The guard was not armed.
    #[error(transparent)]
    Guard(#[from] crate::ops::guard::GuardError),
    /// A value read from a file inside a root that a sound root cannot hold (exit 2).
    #[error(transparent)]
    BadRootValue(#[from] crate::host::status::BadRootValue),
    /// The plan or the package step refused.
    #[error(transparent)]
    Plan(#[from] crate::ops::plan::PlanError),
    /// A host adapter refused.
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
    /// An ELF file could not be read.
    #[error(transparent)]
    Elf(#[from] crate::elf::ElfError),
}

/// Whether an operation had changed the host (its packages, loader cache, apt and dpkg
/// configuration) when it ended. Files under rocm-pin's own state directory do not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostChange {
    Unchanged,
    Changed,
}

impl HostChange {
    /// `err` carrying this fact, unless a deeper step already stated its own (that one knows
    /// better: apt that failed before dpkg ran leaves the host unchanged).
    pub fn attach(self, err: anyhow::Error) -> anyhow::Error {
        if host_change(&err).is_some() {
            return err;
        }
        Error::AfterChange(AfterChange {
            changed: self,
            error: err,
        })
        .into()
    }
}

/// An error with the fact of whether the host had changed when it happened. Its text, causes
/// and exit code are those of `error`: the fact is for callers (adopt keeps its resume record
/// unless the host is known to be unchanged), not for the user.
#[derive(Debug)]
pub struct AfterChange {
    pub changed: HostChange,
    pub error: anyhow::Error,
}

impl fmt::Display for AfterChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for AfterChange {
    /// The wrapped error's cause: the wrapper shows as the wrapped error itself, so the chain
    /// a user reads is unchanged.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// Whether the host had changed when `err` happened, as the failing operation stated it;
/// None when no operation that changes the host stated it.
pub fn host_change(err: &anyhow::Error) -> Option<HostChange> {
    err.chain().find_map(|e| match e.downcast_ref::<Error>() {
        Some(Error::AfterChange(a)) => Some(a.changed),
        _ => None,
    })
}

impl Error {
    /// Which of the three error endings this is: each domain says for its own errors.
    pub fn kind(&self) -> ExitKind {
        match self {
            Error::CheckFailed(_) => ExitKind::CheckFailed,
            Error::Skipped(_) => ExitKind::Skipped,
            Error::Usage(_) | Error::RootRead(_) | Error::BadRootValue(_) => ExitKind::Usage,
            Error::AfterChange(a) => find(&a.error).map_or(ExitKind::Usage, Error::kind),
            Error::Build(e) => e.kind(),
            Error::Gate(e) => e.kind(),
            Error::Install(e) => e.kind(),
            Error::Repo(e) => e.kind(),
            Error::Deb(e) => e.kind(),
            Error::Image(e) => e.kind(),
            Error::Verify(e) => e.kind(),
            Error::Guard(e) => e.kind(),
            Error::Plan(e) => e.kind(),
            Error::Host(e) => e.kind(),
            Error::Elf(e) => e.kind(),
        }
    }

    /// The process exit code this error ends the run with: its kind's code, or 128+signal
    /// for a run a signal ended. The only place an exit number is chosen.
    pub fn exit_code(&self) -> i32 {
        match self {
            // What a shell reports for a process a signal ended.
            Error::Image(crate::image::ImageError::Interrupted { signal }) => 128 + signal,
            Error::AfterChange(a) => exit_code_for(&a.error),
            _ => self.kind().code(),
        }
    }

    /// A plain-message error of `kind`.
    pub fn new(kind: ExitKind, message: impl Into<String>) -> Self {
        let message = message.into();
        match kind {
            ExitKind::CheckFailed => Error::CheckFailed(message),
            ExitKind::Usage => Error::Usage(message),
            ExitKind::Skipped => Error::Skipped(message),
        }
    }

    pub fn check_failed(message: impl Into<String>) -> Self {
        Error::CheckFailed(message.into())
    }

    pub fn skipped(message: impl Into<String>) -> Self {
        Error::Skipped(message.into())
    }
}

/// Bad input, a refused operation or an environment problem (exit 2), as an `anyhow::Error`
/// so it travels with `?` like any other error and keeps its exit code.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Error::Usage(message.into()).into()
}

/// Our error, wherever it sits in `err`'s chain of causes.
/// An [`Error::AfterChange`] is looked through: the error found is the one it carries.
pub fn find(err: &anyhow::Error) -> Option<&Error> {
    match err.chain().find_map(|e| e.downcast_ref::<Error>())? {
        Error::AfterChange(a) => find(&a.error),
        found => Some(found),
    }
}

/// Map any error to the process exit code: our error's anywhere in the chain, else 2.
pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    find(err).map_or(ExitKind::Usage.code(), Error::exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::build::{BadInput, BuildError};
    use crate::ops::gate::GateError;
    use crate::ops::install_error::{DebSetProblem, InstallError};
    use crate::ops::repo::{RepoConflict, RepoError};
    use crate::ops::verify::VerifyError;
    use anyhow::Context;
    use std::path::{Path, PathBuf};

    fn every_variant() -> Vec<(Error, i32)> {
        let mut v = general_and_gate_variants();
        v.extend(build_install_and_repo_variants());
        v
    }

    fn general_and_gate_variants() -> Vec<(Error, i32)> {
        let p = PathBuf::from("/x");
        vec![
            (Error::Usage("u".into()), 2),
            (Error::CheckFailed("c".into()), 1),
            (Error::Skipped("s".into()), 3),
            (
                Error::Build(BuildError::MissingPrerequisites {
                    context: "t".into(),
                    missing: vec![],
                }),
                2,
            ),
            (
                Error::Build(BuildError::MissingLauncher {
                    tool: "ccache".into(),
                    package: "ccache".into(),
                }),
                2,
            ),
            (
                Error::Gate(GateError::GateRefused {
                    found: None,
                    required: "7.2.4".into(),
                    prefix: "/opt/rocm-7.2.4".into(),
                    version_file: "/opt/rocm-7.2.4/.info/version".into(),
                    rocm_path_elsewhere: None,
                }),
                2,
            ),
            (
                Error::Gate(GateError::GateSkipped { reason: "r".into() }),
                3,
            ),
            (
                Error::Build(BuildError::DirtyCheckout {
                    checkout: p.clone(),
                    commit: "c".into(),
                    paths: vec![],
                    changes: vec![],
                }),
                2,
            ),
        ]
    }

    fn build_install_and_repo_variants() -> Vec<(Error, i32)> {
        let p = PathBuf::from("/x");
        vec![
            (
                Error::Build(BuildError::ForeignOutDir { out: p.clone() }),
                2,
            ),
            (
                Error::Build(BuildError::ComgrIncompatible {
                    found: "3.0".into(),
                    found_in: p.clone(),
                    requested: "2.8".into(),
                    request_line: 1,
                    version_file: p.clone(),
                }),
                2,
            ),
            (
                Error::Build(BuildError::UnsupportedOffloadTargets {
                    clang: p.clone(),
                    gaps: vec![],
                }),
                2,
            ),
            (
                Error::Build(BuildError::NoRocmToBuildAgainst {
                    rocm_path: p.clone(),
                    url: "u".into(),
                    rocm_version: "7.2.4".into(),
                }),
                2,
            ),
            (
                Error::Build(BuildError::NotACommit {
                    given: "main".into(),
                }),
                2,
            ),
            (
                Error::Build(BuildError::WrongCommit {
                    checkout: p.clone(),
                    head: "a".into(),
                    wanted: "b".into(),
                }),
                2,
            ),
            (
                Error::Build(BuildError::BadInputFile {
                    what: "patch",
                    path: p.clone(),
                    why: BadInput::Empty,
                }),
                2,
            ),
            (
                Error::Build(BuildError::PatchDoesNotApply {
                    index: 1,
                    total: 1,
                    name: "a.patch".into(),
                    path: p.clone(),
                    commit: "c".into(),
                    files: vec![],
                    command: "git apply".into(),
                    git_stderr: String::new(),
                }),
                2,
            ),
            (
                Error::Install(InstallError::Downgrade {
                    package: "p".into(),
                    installed: "2".into(),
                    installed_commit: "c".into(),
                    offered: "1".into(),
                }),
                2,
            ),
            (
                Error::Install(InstallError::DebSet(DebSetProblem::NoMarker)),
                2,
            ),
            (
                Error::Repo(RepoError::BadName {
                    what: "suite",
                    name: "a/b".into(),
                }),
                2,
            ),
            (Error::Repo(RepoError::RepoConflicts(vec![])), 2),
            (Error::Repo(RepoError::KeyExists { path: p.clone() }), 2),
            (
                Error::Build(BuildError::StagingLocked {
                    staging: p.clone(),
                    lock: p,
                }),
                2,
            ),
            (
                Error::Verify(VerifyError::VerifyFailed {
                    failed: 1,
                    names: vec!["n".into()],
                }),
                1,
            ),
        ]
    }

    #[test]
    fn each_variant_ends_the_run_with_its_exit_code() {
        for (e, code) in every_variant() {
            assert_eq!(e.exit_code(), code, "{e:?}");
            let wrapped = anyhow::Error::from(e);
            assert_eq!(exit_code_for(&wrapped), code, "{wrapped:?}");
        }
    }

    #[test]
    fn the_exit_code_is_found_under_any_context() {
        let inner: anyhow::Result<()> =
            Err(Error::Gate(GateError::GateSkipped { reason: "r".into() }).into());
        let outer = inner
            .context("reading the host")
            .context("rocm-pin verify")
            .unwrap_err();
        assert_eq!(exit_code_for(&outer), 3);
        assert!(
            matches!(find(&outer), Some(Error::Gate(GateError::GateSkipped { reason })) if reason == "r")
        );
        // Not ours at all: an environment error, exit 2.
        assert_eq!(exit_code_for(&anyhow::anyhow!("disk on fire")), 2);
        let io = std::fs::read("/nonexistent/rocm-pin").context("reading");
        assert_eq!(exit_code_for(&io.unwrap_err()), 2);
    }

    #[test]
    fn plain_constructors_keep_their_kind() {
        for kind in [ExitKind::CheckFailed, ExitKind::Usage, ExitKind::Skipped] {
            let e = Error::new(kind, "m");
            assert_eq!(e.kind(), kind);
            assert_eq!(e.to_string(), "m");
        }
        assert_eq!(exit_code_for(&usage("u")), 2);
    }

    /// The host-changed fact rides along without changing what the user reads (the message,
    /// each cause line, the exit code) or what `find` sees; the deepest statement wins.
    #[test]
    fn the_host_changed_fact_travels_without_changing_text_or_exit_code() {
        let inner = || -> anyhow::Error {
            anyhow::Error::from(Error::check_failed("apt-get install failed"))
                .context("running apt")
        };
        let lines = |e: &anyhow::Error| e.chain().map(|c| c.to_string()).collect::<Vec<_>>();
        let plain = inner();
        assert_eq!(host_change(&plain), None);
        let tagged = HostChange::Changed.attach(inner());
        assert_eq!(host_change(&tagged), Some(HostChange::Changed));
        assert_eq!(lines(&tagged), lines(&plain));
        assert_eq!(exit_code_for(&tagged), 1);
        assert!(
            matches!(find(&tagged), Some(Error::CheckFailed(m)) if m == "apt-get install failed")
        );
        // A later, outer statement does not overwrite the deeper one; context keeps it.
        let outer = HostChange::Unchanged
            .attach(tagged)
            .context("installing the adopted packages");
        assert_eq!(host_change(&outer), Some(HostChange::Changed));
        assert_eq!(exit_code_for(&outer), 1);
        let untyped = HostChange::Unchanged.attach(anyhow::anyhow!("disk on fire"));
        assert_eq!(exit_code_for(&untyped), 2);
        assert_eq!(untyped.to_string(), "disk on fire");
        let skipped = HostChange::Changed.attach(Error::skipped("s").into());
        assert_eq!(exit_code_for(&skipped), 3);
    }

    fn assert_texts(cases: Vec<(Error, String)>) {
        for (e, want) in cases {
            assert_eq!(e.to_string(), want, "{e:?}");
        }
    }

    /// The texts users read (and the integration tests grep) are the ones the message-built
    /// errors had: each expected string below is the format string the call site used before.
    #[test]
    fn install_and_source_errors_read_as_the_messages_they_replaced() {
        let d = Path::new("/src/rocm systems");
        let (version, package, installed, commit) = ("1+pin1", "hsa-rocr-pinned", "1+pin2", "c2");
        assert_texts(vec![
            (
                Error::Install(InstallError::Downgrade {
                    package: package.into(),
                    installed: installed.into(),
                    installed_commit: commit.into(),
                    offered: version.into(),
                }),
                format!(
                    "{} {} is installed (commit {}); the given .deb is the older {version}: that is a downgrade to an earlier commit pin. Nothing changed. If going back to that pin is what you want, run again with --allow-downgrade.",
                    package, installed, commit
                ),
            ),
            (
                Error::Build(BuildError::NotACommit { given: "main".into() }),
                format!(
                    "--commit {:?} is not a full commit id (40 hex digits): the manifest records \
                     exactly what was built, so abbreviations and branch names are refused",
                    "main"
                ),
            ),
            (
                Error::Build(BuildError::WrongCommit {
                    checkout: d.into(),
                    head: "h".into(),
                    wanted: "w".into(),
                }),
                format!(
                    "source {} is at commit {}, not the requested {}: check out exactly that \
                     commit (git -C {} checkout --detach {}) or pass --commit {} if that is \
                     the code you mean to build",
                    d.display(), "h", "w", d.display(), "w", "h"
                ),
            ),
            (
                Error::Build(BuildError::MissingLauncher {
                    tool: "ccache".into(),
                    package: "ccache".into(),
                }),
                format!(
                    "--compiler-launcher {}: `{}` is not on PATH; install it (apt-get install -y {}) \
                     or build without a launcher",
                    "ccache", "ccache", "ccache"
                ),
            ),
        ]);
    }

    /// As above, for the build and repository errors.
    #[test]
    fn build_and_repo_errors_read_as_the_messages_they_replaced() {
        let d = Path::new("/src/rocm systems");
        assert_texts(vec![
            (
                Error::Build(BuildError::ForeignOutDir { out: d.into() }),
                format!(
                    "--out {} is not empty and is not a rocm-pin staging directory; choose a new or \
                     empty directory",
                    d.display()
                ),
            ),
            (
                Error::Build(BuildError::NoRocmToBuildAgainst {
                    rocm_path: d.into(),
                    url: "u".into(),
                    rocm_version: "7.2.4".into(),
                }),
                format!(
                    "ROCm path {} does not exist; nothing was fetched. The runtime at {} builds \
                     against an installed ROCm (its LLVM, comgr and device libraries): build inside the \
                     ROCm {} image or on a ROCm host, or give --rocm-path DIR (see docs/building.md)",
                    d.display(), "u", "7.2.4"
                ),
            ),
            (
                Error::Build(BuildError::StagingLocked {
                    staging: d.into(),
                    lock: d.join("lock"),
                }),
                format!(
                    "another rocm-pin build is using {} (lock {}); wait for it or choose another --out",
                    d.display(),
                    d.join("lock").display()
                ),
            ),
            (
                Error::Repo(RepoError::RepoConflicts(vec![
                    RepoConflict::ChangedVersion {
                        deb: d.into(),
                        name: "n".into(),
                        version: "v".into(),
                        arch: "a".into(),
                        place: "the repository",
                        published_sha256: "s1".into(),
                        sha256: "s2".into(),
                    },
                    RepoConflict::StrayPoolFile { path: d.into() },
                ])),
                format!(
                    "refused, nothing written:\n  {}",
                    [
                        format!(
                            "{}: {} {} ({}) is already in {} with different contents (sha256 {}, this file {}); \
                             a published version must never change: bump the version",
                            d.display(), "n", "v", "a", "the repository", "s1", "s2"
                        ),
                        format!(
                            "{} already exists with different contents but is not in the index; \
                             remove it or start a new repository",
                            d.display()
                        )
                    ]
                    .join("\n  ")
                ),
            ),
            (
                Error::Build(BuildError::DirtyCheckout {
                    checkout: d.into(),
                    commit: "c".into(),
                    paths: vec!["p1".into(), "p2".into()],
                    changes: (0..22).map(|i| format!("?? f{i}")).collect(),
                }),
                format!(
                    "source {} has uncommitted changes or untracked files in the build paths ({}); the \
                     recorded commit {} would not be the code built. Commit, stash or remove them \
                     (git stash -u), then build again:\n    {}{}",
                    d.display(),
                    "p1 p2",
                    "c",
                    (0..20).map(|i| format!("?? f{i}")).collect::<Vec<_>>().join("\n    "),
                    "\n    … and 2 more"
                ),
            ),
            (
                Error::Verify(VerifyError::VerifyFailed {
                    failed: 3,
                    names: vec!["a".into(), "b".into()],
                }),
                "verify failed: 3 check(s) failed (a, b)".to_string(),
            ),
        ]);
    }
}
