//! The version gate's errors: the verdicts that end a run.

use std::path::PathBuf;

use crate::exit::ExitKind;
use crate::rocm::gate_mode::REQUIRE_REFUSES;

/// The version gate's verdicts that end a run: a refusal (require) or a host it skipped.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The ROCm version gate refused this host (mode `require`).
    #[error("{finding}{}", REQUIRE_REFUSES)]
    GateRefused {
        /// The release found (AMD's version file's first line, or the one release of Debian's
        /// package versions); None when there is none.
        found: Option<String>,
        /// The ROCm version the packages were built for.
        required: String,
        /// What the gate found, in the flavour's terms ([`GateDecision::finding`](super::GateDecision::finding)).
        finding: String,
        /// Where `/opt/rocm` points when that is not the prefix (multi-version host).
        rocm_path_elsewhere: Option<PathBuf>,
    },
    /// The version gate skipped this host earlier; `reason` is its skip record (exit 3).
    #[error(
        "the version gate skipped this host ({reason}): the patched runtime is not installed by design"
    )]
    GateSkipped { reason: String },
}

impl GateError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        match self {
            GateError::GateRefused { .. } => ExitKind::Usage,
            GateError::GateSkipped { .. } => ExitKind::Skipped,
        }
    }
}
