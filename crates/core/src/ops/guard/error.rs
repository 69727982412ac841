//! The guard's error: why it was not armed.

use crate::exit::ExitKind;

/// Why the guard was not armed.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
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

impl GuardError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}
