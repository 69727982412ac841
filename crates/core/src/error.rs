//! The one error type of the library, and the exit-code contract shared by every subcommand.
//!
//! 0 success; 1 a check failed (verify, install's post-check, rollback's post-check);
//! 2 usage or environment error (bad input, missing tool, refused operation);
//! 3 the ROCm version gate skipped this host (verify after an `auto` skip).
//!
//! Refusals that callers and tests tell apart are variants with the facts as fields; the
//! rest carry their message in [`Error::Usage`], [`Error::CheckFailed`] or [`Error::Skipped`].
//! Each variant's text is what the user reads on stderr (`rocm-pin: error: …`). Functions
//! return `anyhow::Result` so context can be added on the way up; [`exit_code_for`] finds our
//! error anywhere in the chain.

use std::fmt;
use std::path::{Path, PathBuf};

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
    pub fn code(self) -> i32 {
        match self {
            ExitKind::CheckFailed => 1,
            ExitKind::Usage => 2,
            ExitKind::Skipped => 3,
        }
    }
}

/// One build prerequisite that was looked for and not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingItem {
    /// What a person would call it, e.g. "C++ compiler".
    pub what: String,
    /// What was looked for, e.g. "program `cmake`" or "header <numa.h>".
    pub looked_for: String,
    /// The Debian package that provides it.
    pub package: String,
    /// Extra instruction when the package alone is not enough.
    pub note: Option<String>,
}

/// Why an input file or directory was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadInput {
    /// The directory cannot be listed (the OS error).
    Unlistable(String),
    /// The file cannot be read (the OS error).
    Unreadable(String),
    /// Nothing but whitespace in it.
    Empty,
    /// A patch directory without a `*.patch` or `*.diff` file.
    NoPatchFiles,
}

/// Offload targets one of the tree's hard-coded lists needs and the compiler does not support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetGap {
    /// The list's file, relative to the tree.
    pub file: &'static str,
    /// The CMake variable holding the list.
    pub var: &'static str,
    pub targets: Vec<String>,
}

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

/// How the .debs given to install fail to be one pair from one `rocm-pin package` run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DebSetProblem {
    /// A .deb without our commit field.
    #[error(
        "{} ({package}) is not a rocm-pin replacement package (no {} field); make it with `rocm-pin package`",
        deb.display(),
        crate::rocm::COMMIT_FIELD
    )]
    NotOurs { deb: PathBuf, package: String },
    /// No .deb ships the provenance marker (the HSA half was not given).
    #[error(
        "none of the given .debs ships the provenance marker */{}: give both replacement packages (the HSA one carries it)",
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
        "the marker names {package} {version} but it was not given: install both replacement packages in one run"
    )]
    NotGiven { package: String, version: String },
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

    /// Build prerequisites are missing: every item with the Debian package that provides it.
    #[error("{}", missing_prerequisites_text(context, missing))]
    MissingPrerequisites {
        /// What was to be built or fetched, e.g. "ROCm runtime at /src/rocm-systems".
        context: String,
        missing: Vec<MissingItem>,
    },
    /// `--compiler-launcher TOOL` was asked for and TOOL is not on PATH.
    #[error(
        "--compiler-launcher {tool}: `{tool}` is not on PATH; install it (apt-get install -y \
         {package}) or build without a launcher"
    )]
    MissingLauncher { tool: String, package: String },
    /// The ROCm version gate refused this host (mode `require`).
    #[error("{}", gate_refusal_text(found.as_deref(), required, prefix, version_file, rocm_path_elsewhere.as_deref()))]
    GateRefused {
        /// First line of the target prefix's version file; None when it is missing.
        found: Option<String>,
        /// The ROCm version the packages were built for.
        required: String,
        /// The prefix the packages install into.
        prefix: String,
        /// The version file read, inside the prefix.
        version_file: String,
        /// Where `/opt/rocm` points when that is not the prefix (multi-version host).
        rocm_path_elsewhere: Option<PathBuf>,
    },
    /// The version gate skipped this host earlier; `reason` is its skip record (exit 3).
    #[error(
        "the version gate skipped this host ({reason}): the patched runtime is not installed by design"
    )]
    GateSkipped { reason: String },
    /// `--commit` is not a full commit id.
    #[error(
        "--commit {given:?} is not a full commit id (40 hex digits): the manifest records \
         exactly what was built, so abbreviations and branch names are refused"
    )]
    NotACommit { given: String },
    /// A local source checkout is at another commit than the one to build.
    #[error(
        "source {} is at commit {head}, not the requested {wanted}: check out exactly that \
         commit (git -C {} checkout --detach {wanted}) or pass --commit {head} if that is \
         the code you mean to build",
        checkout.display(),
        checkout.display()
    )]
    WrongCommit {
        checkout: PathBuf,
        head: String,
        wanted: String,
    },
    /// A local source checkout has changes in the build paths: the commit would not be the code.
    #[error("{}", dirty_checkout_text(checkout, commit, paths, changes))]
    DirtyCheckout {
        checkout: PathBuf,
        commit: String,
        /// The build paths checked.
        paths: Vec<String>,
        /// `git status --porcelain` lines, one per changed or untracked file.
        changes: Vec<String>,
    },
    /// `--out` holds something other than a rocm-pin staging: it is left alone.
    #[error(
        "--out {} is not empty and is not a rocm-pin staging directory; choose a new or empty \
         directory",
        out.display()
    )]
    ForeignOutDir { out: PathBuf },
    /// A URL source needs an installed ROCm to build against, and the ROCm path does not exist.
    #[error(
        "ROCm path {} does not exist; nothing was fetched. The runtime at {url} builds against an \
         installed ROCm (its LLVM, comgr and device libraries): build inside the ROCm \
         {rocm_version} image or on a ROCm host, or give --rocm-path DIR (see docs/building.md)",
        rocm_path.display()
    )]
    NoRocmToBuildAgainst {
        rocm_path: PathBuf,
        url: String,
        /// The ROCm release the pin targets.
        rocm_version: String,
    },
    /// The comgr found does not satisfy the version the tree's `find_package` asks for.
    #[error(
        "comgr {found} (found at {}) does not satisfy the tree's request \
         `find_package(amd_comgr {requested} …)` at {}:{request_line}: comgr's CMake version file \
         ({}) calls {found} incompatible with {requested}. Nothing was built. Use a comgr \
         that satisfies it, or carry a patch for that file (--patch) if the tree works with \
         comgr {found}",
        found_in.display(),
        crate::build::real_tree::COMGR_REQUEST_FILE,
        version_file.display()
    )]
    ComgrIncompatible {
        found: String,
        /// The comgr CMake package directory.
        found_in: PathBuf,
        requested: String,
        /// Line of the request in the tree's request file.
        request_line: usize,
        version_file: PathBuf,
    },
    /// The compiler lacks offload targets the tree's hard-coded lists require.
    #[error(
        "{} does not support offload targets the tree's hard-coded lists require (nothing was \
         built):\n{}\nuse a newer LLVM (--llvm-dir), or carry a patch (--patch) removing them from \
         the list",
        clang.display(),
        gaps.iter()
            .map(|g| format!("  - {} in {} ({})", g.targets.join(", "), g.file, g.var))
            .collect::<Vec<_>>()
            .join("\n")
    )]
    UnsupportedOffloadTargets {
        clang: PathBuf,
        gaps: Vec<TargetGap>,
    },
    /// An input file or directory that cannot be used (`what` names the option, e.g. "patch").
    #[error("{what} {}{why}", path.display())]
    BadInputFile {
        what: &'static str,
        path: PathBuf,
        why: BadInput,
    },
    /// A patch of the series does not apply to the commit.
    #[error("{}", patch_does_not_apply_text(self))]
    PatchDoesNotApply {
        /// 1-based position in the series.
        index: usize,
        total: usize,
        name: String,
        path: PathBuf,
        commit: String,
        /// The tree files git named.
        files: Vec<String>,
        command: String,
        git_stderr: String,
    },
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
    /// Another build holds the staging directory's lock.
    #[error(
        "another rocm-pin build is using {} (lock {}); wait for it or choose another --out",
        staging.display(),
        lock.display()
    )]
    StagingLocked { staging: PathBuf, lock: PathBuf },
    /// `rocm-pin verify` ran and some checks failed (exit 1).
    #[error("verify failed: {failed} check(s) failed ({})", names.join(", "))]
    VerifyFailed {
        /// How many checks failed.
        failed: usize,
        /// The distinct names of the failed checks, sorted.
        names: Vec<String>,
    },
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
    /// Unpacking an image would pass one of its limits (`verify --image-limit KEY=N`).
    #[error(
        "{place}: {entry:?} would pass the image limit {limit}={max} (it needs {needed}); refused \
         before writing it. If the image is trusted, raise the limit: --image-limit {limit}=N"
    )]
    ImageLimit {
        /// What was being unpacked: "the image archive", "layer 2 of 5 (sha256:…)".
        place: String,
        /// The entry (or blob) that would pass the limit.
        entry: String,
        /// The limit's `--image-limit` key.
        limit: &'static str,
        max: u64,
        needed: u64,
    },
    /// A blob of an image does not hash to the digest that names it.
    #[error(
        "{blob} does not match its digest {expected} (got {actual}): the image is corrupt or was \
         tampered with"
    )]
    ImageDigestMismatch {
        /// Which blob: "layer 2 of 5 (sha256:…)", "the config", "layer 1's diff_id".
        blob: String,
        expected: String,
        actual: String,
    },
    /// SIGINT, SIGTERM or SIGHUP ended the run; its temporary files were removed (exit
    /// 128+signal).
    #[error("interrupted by signal {signal}; the temporary image root was removed")]
    Interrupted { signal: i32 },
    /// A file under a root was refused (not a regular file, over its size cap, a magic link)
    /// or could not be read (exit 2).
    #[error("{0}")]
    RootRead(#[from] crate::host::root::RootReadError),
    /// A value read from a file inside a root (a `Package:` name, an md5sums path, a marker
    /// key) is not one a sound root can hold, so it is never used as a path (exit 2).
    #[error("{} (in root {}): {why}: {value:?}; refused", file.display(), root.display())]
    BadRootValue {
        root: PathBuf,
        /// The in-root file the value was read from.
        file: PathBuf,
        value: String,
        why: &'static str,
    },
    /// `rocm-pin verify` could not make some checks (an external tool failed) and no other
    /// check failed: the runtime was not judged (exit 2).
    #[error("verify could not check {} (environment error; the runtime was not judged)", names.join(", "))]
    VerifyEnvironment {
        /// The distinct names of the checks that could not be made, sorted.
        names: Vec<String>,
    },
    /// `rocm-pin guard on` on a host whose runtime fails verify (or that the gate skipped):
    /// the guard would fail every later apt and dpkg run, so it is not armed.
    #[error(
        "the guard was not armed: {}; armed now it would fail every later apt and dpkg run. Repair first (`rocm-pin verify` names how; `rocm-pin install` reinstalls), then `rocm-pin guard on`",
        match skipped {
            Some(reason) => format!("the version gate skipped this host ({reason}), there is no patched runtime to guard"),
            None => format!("verify fails now ({})", failed.join(", ")),
        }
    )]
    GuardRefused {
        /// The names of the failed checks, in the order run.
        failed: Vec<String>,
        /// The skip record's reason when the gate skipped this host.
        skipped: Option<String>,
    },
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

impl Error {
    /// Which of the three error endings this is.
    pub fn kind(&self) -> ExitKind {
        match self {
            Error::CheckFailed(_) | Error::VerifyFailed { .. } => ExitKind::CheckFailed,
            Error::Skipped(_) | Error::GateSkipped { .. } => ExitKind::Skipped,
            Error::Usage(_)
            | Error::MissingPrerequisites { .. }
            | Error::MissingLauncher { .. }
            | Error::GateRefused { .. }
            | Error::NotACommit { .. }
            | Error::WrongCommit { .. }
            | Error::DirtyCheckout { .. }
            | Error::ForeignOutDir { .. }
            | Error::NoRocmToBuildAgainst { .. }
            | Error::ComgrIncompatible { .. }
            | Error::UnsupportedOffloadTargets { .. }
            | Error::BadInputFile { .. }
            | Error::PatchDoesNotApply { .. }
            | Error::Downgrade { .. }
            | Error::DebSet(_)
            | Error::BadName { .. }
            | Error::RepoConflicts(_)
            | Error::KeyExists { .. }
            | Error::StagingLocked { .. }
            | Error::DebOutputNotRegular { .. }
            | Error::SigningKeyUnusable { .. }
            | Error::ImageLimit { .. }
            | Error::ImageDigestMismatch { .. }
            | Error::Interrupted { .. }
            | Error::RootRead(_)
            | Error::BadRootValue { .. }
            | Error::VerifyEnvironment { .. }
            | Error::GuardRefused { .. } => ExitKind::Usage,
        }
    }

    /// The process exit code this error ends the run with.
    pub fn exit_code(&self) -> i32 {
        if let Error::Interrupted { signal } = self {
            // What a shell reports for a process a signal ended.
            return 128 + signal;
        }
        self.kind().code()
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

/// The former name of [`Error`]; modules not yet converted still build their errors through it.
pub type ExitError = Error;

/// Bad input, a refused operation or an environment problem (exit 2), as an `anyhow::Error`
/// so it travels with `?` like any other error and keeps its exit code.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Error::Usage(message.into()).into()
}

/// Our error, wherever it sits in `err`'s chain of causes.
pub fn find(err: &anyhow::Error) -> Option<&Error> {
    err.chain().find_map(|e| e.downcast_ref::<Error>())
}

/// Map any error to the process exit code: our error's anywhere in the chain, else 2.
pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    find(err).map_or(ExitKind::Usage.code(), Error::exit_code)
}

impl fmt::Display for BadInput {
    /// The tail after "`what` `path`": each reads on from the path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadInput::Unlistable(e) => write!(f, ": cannot list it: {e}"),
            BadInput::Unreadable(e) => write!(f, ": cannot read it: {e}"),
            BadInput::Empty => f.write_str(" is empty"),
            BadInput::NoPatchFiles => f.write_str(": no *.patch or *.diff file in it"),
        }
    }
}

fn missing_prerequisites_text(context: &str, missing: &[MissingItem]) -> String {
    let mut msg = format!(
        "missing build prerequisites for {context} ({} item{}; nothing was built):",
        missing.len(),
        if missing.len() == 1 { "" } else { "s" }
    );
    for m in missing {
        msg.push_str(&format!(
            "\n  - {}: {} not found — Debian package `{}`",
            m.what, m.looked_for, m.package
        ));
        if let Some(note) = &m.note {
            msg.push_str(&format!(" ({note})"));
        }
    }
    let mut packages: Vec<&str> = missing.iter().map(|m| m.package.as_str()).collect();
    packages.sort_unstable();
    packages.dedup();
    msg.push_str(&format!(
        "\ninstall with: apt-get install -y {}",
        packages.join(" ")
    ));
    msg
}

fn gate_refusal_text(
    found: Option<&str>,
    required: &str,
    prefix: &str,
    version_file: &str,
    rocm_path_elsewhere: Option<&Path>,
) -> String {
    let mut text =
        crate::rocm::finding_text(found, required, prefix, version_file, rocm_path_elsewhere);
    text.push_str(crate::rocm::REQUIRE_REFUSES);
    text
}

fn join_lines(conflicts: &[RepoConflict]) -> String {
    conflicts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n  ")
}

fn dirty_checkout_text(
    checkout: &Path,
    commit: &str,
    paths: &[String],
    changes: &[String],
) -> String {
    const SHOWN: usize = 20;
    let shown = changes
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n    ");
    let more = if changes.len() > SHOWN {
        format!("\n    … and {} more", changes.len() - SHOWN)
    } else {
        String::new()
    };
    format!(
        "source {} has uncommitted changes or untracked files in the build paths ({}); the \
         recorded commit {commit} would not be the code built. Commit, stash or remove them \
         (git stash -u), then build again:\n    {shown}{more}",
        checkout.display(),
        paths.join(" ")
    )
}

fn patch_does_not_apply_text(e: &Error) -> String {
    let Error::PatchDoesNotApply {
        index,
        total,
        name,
        path,
        commit,
        files,
        command,
        git_stderr,
    } = e
    else {
        return String::new();
    };
    format!(
        "patch {index} of {total} ({name}, {}) does not apply to {commit}{}: nothing was built; rebase the \
         patch on that commit or drop it\n  command: {command}\n  git: {}",
        path.display(),
        if files.is_empty() {
            String::new()
        } else {
            format!(" (in {})", files.join(", "))
        },
        git_stderr.trim().replace('\n', "\n       ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

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
                Error::MissingPrerequisites {
                    context: "t".into(),
                    missing: vec![],
                },
                2,
            ),
            (
                Error::MissingLauncher {
                    tool: "ccache".into(),
                    package: "ccache".into(),
                },
                2,
            ),
            (
                Error::GateRefused {
                    found: None,
                    required: "7.2.4".into(),
                    prefix: "/opt/rocm-7.2.4".into(),
                    version_file: "/opt/rocm-7.2.4/.info/version".into(),
                    rocm_path_elsewhere: None,
                },
                2,
            ),
            (Error::GateSkipped { reason: "r".into() }, 3),
            (
                Error::DirtyCheckout {
                    checkout: p.clone(),
                    commit: "c".into(),
                    paths: vec![],
                    changes: vec![],
                },
                2,
            ),
        ]
    }

    fn build_install_and_repo_variants() -> Vec<(Error, i32)> {
        let p = PathBuf::from("/x");
        vec![
            (Error::ForeignOutDir { out: p.clone() }, 2),
            (
                Error::ComgrIncompatible {
                    found: "3.0".into(),
                    found_in: p.clone(),
                    requested: "2.8".into(),
                    request_line: 1,
                    version_file: p.clone(),
                },
                2,
            ),
            (
                Error::UnsupportedOffloadTargets {
                    clang: p.clone(),
                    gaps: vec![],
                },
                2,
            ),
            (
                Error::NoRocmToBuildAgainst {
                    rocm_path: p.clone(),
                    url: "u".into(),
                    rocm_version: "7.2.4".into(),
                },
                2,
            ),
            (
                Error::NotACommit {
                    given: "main".into(),
                },
                2,
            ),
            (
                Error::WrongCommit {
                    checkout: p.clone(),
                    head: "a".into(),
                    wanted: "b".into(),
                },
                2,
            ),
            (
                Error::BadInputFile {
                    what: "patch",
                    path: p.clone(),
                    why: BadInput::Empty,
                },
                2,
            ),
            (
                Error::PatchDoesNotApply {
                    index: 1,
                    total: 1,
                    name: "a.patch".into(),
                    path: p.clone(),
                    commit: "c".into(),
                    files: vec![],
                    command: "git apply".into(),
                    git_stderr: String::new(),
                },
                2,
            ),
            (
                Error::Downgrade {
                    package: "p".into(),
                    installed: "2".into(),
                    installed_commit: "c".into(),
                    offered: "1".into(),
                },
                2,
            ),
            (Error::DebSet(DebSetProblem::NoMarker), 2),
            (
                Error::BadName {
                    what: "suite",
                    name: "a/b".into(),
                },
                2,
            ),
            (Error::RepoConflicts(vec![]), 2),
            (Error::KeyExists { path: p.clone() }, 2),
            (
                Error::StagingLocked {
                    staging: p.clone(),
                    lock: p,
                },
                2,
            ),
            (
                Error::VerifyFailed {
                    failed: 1,
                    names: vec!["n".into()],
                },
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
        let inner: anyhow::Result<()> = Err(Error::GateSkipped { reason: "r".into() }.into());
        let outer = inner
            .context("reading the host")
            .context("rocm-pin verify")
            .unwrap_err();
        assert_eq!(exit_code_for(&outer), 3);
        assert!(matches!(find(&outer), Some(Error::GateSkipped { reason }) if reason == "r"));
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
                Error::Downgrade {
                    package: package.into(),
                    installed: installed.into(),
                    installed_commit: commit.into(),
                    offered: version.into(),
                },
                format!(
                    "{} {} is installed (commit {}); the given .deb is the older {version}: that is a downgrade to an earlier commit pin. Nothing changed. If going back to that pin is what you want, run again with --allow-downgrade.",
                    package, installed, commit
                ),
            ),
            (
                Error::NotACommit { given: "main".into() },
                format!(
                    "--commit {:?} is not a full commit id (40 hex digits): the manifest records \
                     exactly what was built, so abbreviations and branch names are refused",
                    "main"
                ),
            ),
            (
                Error::WrongCommit {
                    checkout: d.into(),
                    head: "h".into(),
                    wanted: "w".into(),
                },
                format!(
                    "source {} is at commit {}, not the requested {}: check out exactly that \
                     commit (git -C {} checkout --detach {}) or pass --commit {} if that is \
                     the code you mean to build",
                    d.display(), "h", "w", d.display(), "w", "h"
                ),
            ),
            (
                Error::MissingLauncher {
                    tool: "ccache".into(),
                    package: "ccache".into(),
                },
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
                Error::ForeignOutDir { out: d.into() },
                format!(
                    "--out {} is not empty and is not a rocm-pin staging directory; choose a new or \
                     empty directory",
                    d.display()
                ),
            ),
            (
                Error::NoRocmToBuildAgainst {
                    rocm_path: d.into(),
                    url: "u".into(),
                    rocm_version: "7.2.4".into(),
                },
                format!(
                    "ROCm path {} does not exist; nothing was fetched. The runtime at {} builds \
                     against an installed ROCm (its LLVM, comgr and device libraries): build inside the \
                     ROCm {} image or on a ROCm host, or give --rocm-path DIR (see docs/building.md)",
                    d.display(), "u", "7.2.4"
                ),
            ),
            (
                Error::StagingLocked {
                    staging: d.into(),
                    lock: d.join("lock"),
                },
                format!(
                    "another rocm-pin build is using {} (lock {}); wait for it or choose another --out",
                    d.display(),
                    d.join("lock").display()
                ),
            ),
            (
                Error::RepoConflicts(vec![
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
                ]),
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
                Error::DirtyCheckout {
                    checkout: d.into(),
                    commit: "c".into(),
                    paths: vec!["p1".into(), "p2".into()],
                    changes: (0..22).map(|i| format!("?? f{i}")).collect(),
                },
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
                Error::VerifyFailed {
                    failed: 3,
                    names: vec!["a".into(), "b".into()],
                },
                "verify failed: 3 check(s) failed (a, b)".to_string(),
            ),
        ]);
    }
}
