//! How `install` treats a host whose ROCm version does not match ([`GateMode`]), and the gate's
//! wording: what it found and what mode `require` adds. Here, apart from the gate itself
//! ([`super::gate`]), so the gate and the error it raises (error.rs) share it without
//! either reaching into the other.

use std::path::Path;

use super::release::{version_matches, DEFAULT_ROCM_PATH};

/// Environment variable that sets the install mode.
pub const MODE_ENV: &str = "ROCM_PIN_MODE";

/// How `install` treats a host whose ROCm version does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GateMode {
    /// No match → refuse, non-zero exit (the default: fail closed).
    Require,
    /// No match → say why, write a skip record, exit 0.
    Auto,
    /// Do nothing, say so, exit 0.
    Off,
}

/// What the gate found, without what the mode makes of it: the start of every gate reason and
/// of the refusal's text.
pub fn finding_text(
    found: Option<&str>,
    wanted: &str,
    target_prefix: &str,
    version_file: &str,
    rocm_path_elsewhere: Option<&Path>,
) -> String {
    let mut text = match found {
        None => format!("{version_file} is missing: no ROCm {wanted} at {target_prefix}"),
        Some(v) if version_matches(v, wanted) => {
            format!("ROCm {v} at {target_prefix} matches {wanted}")
        }
        Some(v) => format!("ROCm {v} at {target_prefix} ({version_file}) does not match {wanted}"),
    };
    if let Some(p) = rocm_path_elsewhere {
        text.push_str(&format!(
            "; note: {} points to {}, not to the target prefix (multi-version host: the packages install into {target_prefix})",
            DEFAULT_ROCM_PATH,
            p.display()
        ));
    }
    text
}

/// What mode `require` adds to a finding that does not match.
pub const REQUIRE_REFUSES: &str =
    "; mode require refuses (use --mode auto or ROCM_PIN_MODE=auto to skip such hosts with exit 0)";
