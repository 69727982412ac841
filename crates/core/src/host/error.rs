//! The host adapters' refusals (dpkg database, apt, loader, local repository) not told apart further.

use crate::exit::ExitKind;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A host state or tool result that stops the operation, in the words of the check that found it.
    #[error("{0}")]
    Refused(String),
}

impl HostError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}

/// A refusal of a host adapter, as an `anyhow::Error` carrying [`HostError::Refused`] (exit 2).
pub(crate) fn refused(message: impl Into<String>) -> anyhow::Error {
    HostError::Refused(message.into()).into()
}
