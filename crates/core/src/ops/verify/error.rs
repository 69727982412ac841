//! How `rocm-pin verify` ends when its report is not all green.

use crate::exit::ExitKind;

/// verify's verdict as an error: checks failed, or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// `rocm-pin verify` ran and some checks failed (exit 1).
    #[error("verify failed: {failed} check(s) failed ({})", names.join(", "))]
    VerifyFailed {
        /// How many checks failed.
        failed: usize,
        /// The distinct names of the failed checks, sorted.
        names: Vec<String>,
    },
    /// `rocm-pin verify` could not make some checks (an external tool failed) and no other
    /// check failed: the runtime was not judged (exit 2).
    #[error("verify could not check {} (environment error; the runtime was not judged)", names.join(", "))]
    VerifyEnvironment {
        /// The distinct names of the checks that could not be made, sorted.
        names: Vec<String>,
    },
}

impl VerifyError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        match self {
            VerifyError::VerifyFailed { .. } => ExitKind::CheckFailed,
            VerifyError::VerifyEnvironment { .. } => ExitKind::Usage,
        }
    }
}
