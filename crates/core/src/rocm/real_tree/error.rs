//! The real tree's errors: why it cannot be built with this toolchain, and what they name
//! (the request file, the offload targets missing from the compiler).

use std::path::PathBuf;

use crate::exit::ExitKind;

/// CLR's comgr request.
pub(crate) const COMGR_REQUEST_FILE: &str = "projects/clr/rocclr/cmake/ROCclrLC.cmake";

/// Offload targets one of the tree's hard-coded lists needs and the compiler does not support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetGap {
    /// The list's file, relative to the tree.
    pub file: &'static str,
    /// The CMake variable holding the list.
    pub var: &'static str,
    pub targets: Vec<String>,
}

/// Why the real tree cannot be built with this toolchain; nothing was built.
#[derive(Debug, thiserror::Error)]
pub enum RealTreeError {
    /// The comgr found does not satisfy the version the tree's `find_package` asks for.
    #[error(
        "comgr {found} (found at {}) does not satisfy the tree's request \
         `find_package(amd_comgr {requested} …)` at {}:{request_line}: comgr's CMake version file \
         ({}) calls {found} incompatible with {requested}. Nothing was built. Use a comgr \
         that satisfies it, or carry a patch for that file (--patch) if the tree works with \
         comgr {found}",
        found_in.display(),
        COMGR_REQUEST_FILE,
        version_file.display()
    )]
    ComgrIncompatible {
        found: String,
        /// The comgr CMake package directory.
        found_in: PathBuf,
        requested: String,
        /// Line of the request in the tree's request file.
        request_line: usize,
        version_file: PathBuf,
    },
    /// The compiler lacks offload targets the tree's hard-coded lists require.
    #[error(
        "{} does not support offload targets the tree's hard-coded lists require (nothing was \
         built):\n{}\nuse a newer LLVM (--llvm-dir), or carry a patch (--patch) removing them from \
         the list",
        clang.display(),
        gaps.iter()
            .map(|g| format!("  - {} in {} ({})", g.targets.join(", "), g.file, g.var))
            .collect::<Vec<_>>()
            .join("\n")
    )]
    UnsupportedOffloadTargets {
        clang: PathBuf,
        gaps: Vec<TargetGap>,
    },
    /// Any other refusal of the tree's checks, in the words of the check that refused it.
    #[error("{0}")]
    Refused(String),
}

impl RealTreeError {
    /// How a run that ends with this error exits ([`ExitKind::code`] maps it to the number).
    pub fn kind(&self) -> ExitKind {
        ExitKind::Usage
    }
}
