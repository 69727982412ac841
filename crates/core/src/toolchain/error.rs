//! The build machine's refusals: prerequisites that are missing, a compiler launcher that is
//! not on PATH. Each variant's text is what the user reads.

use crate::exit::ExitKind;

/// One build prerequisite that was looked for and not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MissingItem {
    /// What a person would call it, e.g. "C++ compiler".
    pub what: String,
    /// What was looked for, e.g. "program `cmake`" or "header <numa.h>".
    pub looked_for: String,
    /// The Debian package that provides it.
    pub package: String,
    /// Extra instruction when the package alone is not enough.
    pub note: Option<String>,
}

/// Why the build machine cannot build; nothing was built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolchainError {
    /// Build prerequisites are missing: every item with the Debian package that provides it.
    #[error("{}", missing_prerequisites_text(context, missing))]
    MissingPrerequisites {
        /// What was to be built or fetched, e.g. "ROCm runtime at /src/rocm-systems".
        context: String,
        missing: Vec<MissingItem>,
    },
    /// `--compiler-launcher TOOL` was asked for and TOOL is not on PATH.
    #[error(
        "--compiler-launcher {tool}: `{tool}` is not on PATH; install it (apt-get install -y \
         {package}) or build without a launcher"
    )]
    MissingLauncher { tool: String, package: String },
}

impl ToolchainError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub(crate) fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}

fn missing_prerequisites_text(context: &str, missing: &[MissingItem]) -> String {
    let mut msg = format!(
        "missing build prerequisites for {context} ({} item{}; nothing was built):",
        missing.len(),
        if missing.len() == 1 { "" } else { "s" }
    );
    for m in missing {
        msg.push_str(&format!(
            "\n  - {}: {} not found — Debian package `{}`",
            m.what, m.looked_for, m.package
        ));
        if let Some(note) = &m.note {
            msg.push_str(&format!(" ({note})"));
        }
    }
    let mut packages: Vec<&str> = missing.iter().map(|m| m.package.as_str()).collect();
    packages.sort_unstable();
    packages.dedup();
    msg.push_str(&format!(
        "\ninstall with: apt-get install -y {}",
        packages.join(" ")
    ));
    msg
}
