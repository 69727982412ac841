//! Exit-code contract shared by every subcommand.
//!
//! 0 success; 1 a check failed (verify, install's post-check, rollback's post-check);
//! 2 usage or environment error (bad input, missing tool, refused operation);
//! 3 the ROCm version gate skipped this host (verify after an `auto` skip).

use std::fmt;

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

/// An error that carries the exit code it should produce. Anything else maps to 2.
#[derive(Debug)]
pub struct ExitError {
    pub kind: ExitKind,
    pub message: String,
}

impl ExitError {
    pub fn new(kind: ExitKind, message: impl Into<String>) -> Self {
        ExitError {
            kind,
            message: message.into(),
        }
    }
    pub fn check_failed(message: impl Into<String>) -> Self {
        Self::new(ExitKind::CheckFailed, message)
    }
    pub fn skipped(message: impl Into<String>) -> Self {
        Self::new(ExitKind::Skipped, message)
    }
}

impl fmt::Display for ExitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

/// Bad input, a refused operation or an environment problem (exit 2), as an `anyhow::Error`
/// so it travels with `?` like any other error and keeps its exit code.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    ExitError::new(ExitKind::Usage, message).into()
}

/// Map any error to the process exit code.
pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    err.downcast_ref::<ExitError>()
        .map(|e| e.kind.code())
        .unwrap_or(2)
}
