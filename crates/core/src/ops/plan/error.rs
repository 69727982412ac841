//! The plan's refusals: stock facts, the staging and the replacement plan that do not fit.

use crate::exit::ExitKind;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A stock set, staging or plan that cannot make the replacement packages, in the words of the check that refused it.
    #[error("{0}")]
    Refused(String),
}

impl PlanError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}

/// A refusal of the plan or the package step, as an `anyhow::Error` carrying [`PlanError::Refused`] (exit 2).
pub(crate) fn refused(message: impl Into<String>) -> anyhow::Error {
    PlanError::Refused(message.into()).into()
}
