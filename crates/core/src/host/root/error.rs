//! Why a path does not resolve inside a root, and why a file under a root was not read: the
//! resolver's and the reader's refusals, in the words a user reads.

use std::fmt;
use std::path::PathBuf;

use super::limits::{FileKind, MAX_HOPS};

/// Why a path does not resolve inside a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// A component is missing (a dangling link, or a path that does not exist).
    Missing {
        asked: PathBuf,
        missing: PathBuf,
        hops: Vec<PathBuf>,
    },
    /// More than `MAX_HOPS` symlinks (a loop, as the kernel would report `ELOOP`).
    Loop { asked: PathBuf },
    /// The link or a directory on the way cannot be read.
    Unreadable { path: PathBuf, error: String },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Missing {
                asked,
                missing,
                hops,
            } => {
                write!(
                    f,
                    "{} does not resolve: {} does not exist (dangling)",
                    asked.display(),
                    missing.display()
                )?;
                if hops.len() > 1 {
                    write!(f, " (chain: {})", chain(hops))?;
                }
                Ok(())
            }
            ResolveError::Loop { asked } => write!(
                f,
                "{}: too many levels of symbolic links (more than {MAX_HOPS})",
                asked.display()
            ),
            ResolveError::Unreadable { path, error } => {
                write!(f, "cannot read {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// `a -> b -> c`
pub fn chain(hops: &[PathBuf]) -> String {
    hops.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// Why a file under a root was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadProblem {
    /// The path does not resolve inside the root (missing, dangling, a loop).
    Resolve(ResolveError),
    /// The path names something that is not a regular file.
    NotRegular { what: &'static str },
    /// The file is larger than its kind's cap.
    TooLarge { kind: FileKind, cap: u64 },
    /// A `/proc` magic link (`/proc/self/fd/0`) on the way; never followed.
    MagicLink,
    /// The path itself is not acceptable (a NUL byte in it).
    BadPath,
    /// The open or read failed.
    Io(String),
    /// The root itself cannot be used: it does not exist, or is no directory (the words).
    RootUnusable(String),
}

/// A refused or failed read of `path` (in-root) under `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootReadError {
    pub root: PathBuf,
    pub path: PathBuf,
    pub problem: ReadProblem,
}

impl RootReadError {
    /// True when the file simply does not exist (callers for which absence is normal).
    pub fn is_missing(&self) -> bool {
        matches!(
            self.problem,
            ReadProblem::Resolve(ResolveError::Missing { .. })
        )
    }
}

impl fmt::Display for RootReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!("{} (in root {})", self.path.display(), self.root.display());
        match &self.problem {
            ReadProblem::Resolve(e) => write!(f, "{e} (in root {})", self.root.display()),
            ReadProblem::NotRegular { what } => write!(
                f,
                "{at} is {what}, not a regular file; refused (rocm-pin reads only regular \
                 files under a root): replace it with the regular file"
            ),
            ReadProblem::TooLarge { kind, cap } => write!(
                f,
                "{at} is larger than the {cap}-byte limit for a {}; refused, not truncated",
                kind.describe()
            ),
            ReadProblem::MagicLink => write!(
                f,
                "{at} goes through a /proc magic link or too many symlinks; refused (a link \
                 into /proc/*/fd would reach this process's own files)"
            ),
            ReadProblem::BadPath => write!(f, "{at}: the path contains a NUL byte; refused"),
            ReadProblem::Io(e) => write!(f, "cannot read {at}: {e}"),
            ReadProblem::RootUnusable(why) => write!(
                f,
                "root {} {why}: give the directory of a Debian system tree (a chroot or an \
                 unpacked image), or leave the option out for this host",
                self.root.display()
            ),
        }
    }
}

impl std::error::Error for RootReadError {}

/// Why the root directory itself could not be opened, in a user's words.
pub(super) fn root_problem(e: &std::io::Error) -> ReadProblem {
    match e.raw_os_error() {
        Some(libc::ENOENT) => ReadProblem::RootUnusable("does not exist".into()),
        Some(libc::ENOTDIR) => ReadProblem::RootUnusable("is not a directory".into()),
        _ => ReadProblem::RootUnusable(format!("cannot be opened ({e})")),
    }
}
