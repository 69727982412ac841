//! The staging tree's manifest, `rocm-pin-build.json`: what was built, from which commit, with
//! which tools, and the ELF facts of every shared library in the install.

use std::collections::BTreeMap;

pub const MANIFEST_FILE: &str = "rocm-pin-build.json";

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BuildManifest {
    /// Full commit that was built.
    pub commit: String,
    /// Committer timestamp (seconds since the epoch); orders package versions.
    pub commit_time: i64,
    /// The `--source` given (URL or local path).
    pub source: String,
    /// From `<rocm path>/.info/version` when present.
    pub rocm_version: Option<String>,
    pub jobs: u32,
    /// Tool name → version line (cmake, c++ compiler, …).
    pub tools: BTreeMap<String, String>,
    /// Every shared library (real file, not symlink) in the install.
    pub libraries: Vec<ManifestLibrary>,
    /// `--llvm-dir`: the LLVM/Clang the tree was compiled for, when not `<rocm path>/llvm`
    /// (Debian's toolchain: `/usr/lib/llvm-22`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llvm_dir: Option<String>,
    /// The patch series applied on top of `commit`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PatchRecord>,
    /// True when built with `--no-backport-check` (the HSA library may lack the backport
    /// symbol); packages and marker carry it on, and `verify` fails unless told it is accepted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backport_check_skipped: bool,
    /// `--compiler-launcher` and the cache configuration it ran with (never changes the bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler_launcher: Option<LauncherRecord>,
}

pub(crate) use crate::rocm::PatchRecord;
pub(crate) use crate::toolchain::launcher::LauncherRecord;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ManifestLibrary {
    /// Relative to the staging directory, e.g. `lib/libamdhip64.so.7.2.53211-b539bf7`.
    pub path: String,
    /// Read from the ELF, never derived from the file name.
    pub soname: Option<String>,
    pub sha256: String,
    pub size: u64,
    pub needed: Vec<String>,
    /// Symlinks in the staging that point at this file (relative paths), e.g. `lib/libamdhip64.so.7`.
    pub links: Vec<String>,
    /// For the HSA library: whether the backport symbol is exported. None for other libraries.
    pub backport_symbol: Option<bool>,
}
