//! The pin's own names: the commit and repository the patched pair comes from, the symbol that
//! proves the backport, and the control fields rocm-pin's packages carry. A leaf of `rocm`, so
//! the family data ([`super::families`]) can name them without importing `rocm` itself.

/// ROCm/rocm-systems commit whose ROCr + CLR carry the ordering-edge backport.
pub const PIN_COMMIT: &str = "b539bf7eebfd99ad0a69668caa1f4037034d501f";
/// Upstream repository of the pinned commit.
pub const PIN_REPOSITORY: &str = "https://github.com/ROCm/rocm-systems.git";
/// Exported by a ROCr that has the ordering-edge signals; absent from stock 7.2.4.
pub const BACKPORT_SYMBOL: &str = "hsa_amd_signal_create_v2";

/// Control field carrying the full source commit in both replacement packages.
pub const COMMIT_FIELD: &str = "X-Rocm-Pin-Commit";
/// Control field listing the patch series applied on top of the commit, in order:
/// `<name> <sha256>, <name> <sha256>` (absent when none).
pub const PATCHES_FIELD: &str = "X-Rocm-Pin-Patches";

/// Control field naming the pinned family of a replacement other than the runtime pair
/// (`rccl`); absent from the pair's packages, whose bytes stay what they were.
pub const FAMILY_FIELD: &str = "X-Rocm-Pin-Family";
