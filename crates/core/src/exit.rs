//! How a run ends, in the words every layer may use (layer 0, docs/design.md "Layers"):
//! the three error endings ([`ExitKind`], the one table of exit codes), the plain-message
//! failures that are no domain's ([`Failure`]), and the fact of whether a failed operation had
//! changed the host ([`HostChange`]). Each domain turns its own typed error into an
//! `anyhow::Error` directly; `error.rs`, at the top, finds it in the chain and maps it to the
//! exit code.

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
    /// The one table of exit codes (signals aside: 128+signal, `error::exit_code_for`).
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

/// Signals end a run with 128+signal, as a shell reports a process a signal killed.
pub const SIGNAL_EXIT_BASE: i32 = 128;
/// The signal Ctrl-C sends (exit 130).
pub const CTRL_C_SIGNAL: i32 = libc::SIGINT;

/// The exit statuses as users read them (`--help` of every subcommand, the man page's EXIT
/// STATUS): the codes come from [`ExitKind::code`], so this text cannot drift from the table.
pub fn exit_status_rows() -> Vec<(String, &'static str)> {
    vec![
        ("0".into(), "success"),
        (
            ExitKind::CheckFailed.code().to_string(),
            "a check ran and failed (verify, status, a post-check of install or rollback, a demo step)",
        ),
        (
            ExitKind::Usage.code().to_string(),
            "bad input, a refused operation or an environment problem (the message says what to do)",
        ),
        (
            ExitKind::Skipped.code().to_string(),
            "the ROCm version gate skipped this host (--mode auto on a host that is not ROCm 7.2.4)",
        ),
        (
            (SIGNAL_EXIT_BASE + CTRL_C_SIGNAL).to_string(),
            "interrupted by Ctrl-C, after cleaning up; 128+N for signal N (143: SIGTERM)",
        ),
    ]
}

/// [`exit_status_rows`] as the `Exit status:` block of `--help`.
pub fn exit_status_help() -> String {
    let mut text = String::from("Exit status:");
    for (code, meaning) in exit_status_rows() {
        text.push_str(&format!("\n  {code:>3}  {meaning}"));
    }
    text
}

/// The run stopped because of a signal (Ctrl-C), after cleaning up: it exits 128+signal, as a
/// shell reports a process the signal killed (130 for SIGINT), not as a failed check.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Interrupted {
    pub signal: i32,
    pub message: String,
}

impl Interrupted {
    pub fn code(&self) -> i32 {
        SIGNAL_EXIT_BASE + self.signal
    }
}

/// A plain-message failure of one of the three kinds, for what no domain error names.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Bad input, a refused operation or an environment problem not told apart further (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A check ran and failed (exit 1).
    #[error("{0}")]
    CheckFailed(String),
    /// The version gate skipped this host (exit 3).
    #[error("{0}")]
    Skipped(String),
}

impl Failure {
    /// A plain-message failure of `kind`.
    pub fn new(kind: ExitKind, message: impl Into<String>) -> Self {
        let message = message.into();
        match kind {
            ExitKind::CheckFailed => Failure::CheckFailed(message),
            ExitKind::Usage => Failure::Usage(message),
            ExitKind::Skipped => Failure::Skipped(message),
        }
    }

    pub fn check_failed(message: impl Into<String>) -> Self {
        Failure::CheckFailed(message.into())
    }

    pub fn skipped(message: impl Into<String>) -> Self {
        Failure::Skipped(message.into())
    }

    /// How a run that ends with this failure exits.
    pub fn kind(&self) -> ExitKind {
        match self {
            Failure::Usage(_) => ExitKind::Usage,
            Failure::CheckFailed(_) => ExitKind::CheckFailed,
            Failure::Skipped(_) => ExitKind::Skipped,
        }
    }
}

/// Bad input, a refused operation or an environment problem (exit 2), as an `anyhow::Error`
/// so it travels with `?` like any other error and keeps its exit code.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Failure::Usage(message.into()).into()
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
        AfterChange {
            changed: self,
            error: err,
        }
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
    err.chain()
        .find_map(|e| e.downcast_ref::<AfterChange>())
        .map(|a| a.changed)
}

/// The first link of `err`'s chain of causes that `pick` accepts, outermost first. An
/// [`AfterChange`] is looked through: its own causes are those of the error it carries.
pub fn find_map<'a, T>(
    err: &'a anyhow::Error,
    pick: &impl Fn(&'a (dyn std::error::Error + 'static)) -> Option<T>,
) -> Option<T> {
    for link in err.chain() {
        if let Some(a) = link.downcast_ref::<AfterChange>() {
            return find_map(&a.error, pick);
        }
        if let Some(found) = pick(link) {
            return Some(found);
        }
    }
    None
}

/// The error of type `E` wherever it sits in `err`'s chain of causes (the outermost one).
pub fn find<E: std::error::Error + 'static>(err: &anyhow::Error) -> Option<&E> {
    find_map(err, &|link| link.downcast_ref::<E>())
}
