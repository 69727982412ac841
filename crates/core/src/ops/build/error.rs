//! The build's refusals: the source checkout, patches and the staging directory (the build
//! machine's are `toolchain::ToolchainError`, the real tree's `rocm::real_tree::RealTreeError`). Each variant's text is what the user reads.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::exit::ExitKind;

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

/// Why a build (or its fetch) refused; nothing was built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
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
    /// Another build holds the staging directory's lock.
    #[error(
        "another rocm-pin build is using {} (lock {}); wait for it or choose another --out",
        staging.display(),
        lock.display()
    )]
    StagingLocked { staging: PathBuf, lock: PathBuf },
    /// Any other refusal of the build, in the words of the check that refused it.
    #[error("{0}")]
    Refused(String),
}

impl BuildError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
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

fn patch_does_not_apply_text(e: &BuildError) -> String {
    let BuildError::PatchDoesNotApply {
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

/// Any other refusal of the build, as an `anyhow::Error` carrying [`BuildError::Refused`] (exit 2).
pub(crate) fn refused(message: impl Into<String>) -> anyhow::Error {
    BuildError::Refused(message.into()).into()
}
