//! The build machine's tooling (layer 2, beside `host`; docs/design.md "Layers"): probes for
//! programs, headers, libraries and Python modules ([`prereq`]) and the compiler launcher
//! ([`launcher`]). Generic: the ROCm recipe (`rocm::recipe`) says what to probe for, and
//! `ops::build` runs it.

mod error;
pub(crate) mod launcher;
pub(crate) mod prereq;

pub(crate) use error::{MissingItem, ToolchainError};
