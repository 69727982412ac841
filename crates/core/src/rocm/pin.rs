//! The pin's own names: the commit and repository the patched pair comes from (and the paths
//! of it the build checks out), the symbol that proves the backport and the switch that turns
//! it off, and the control fields rocm-pin's packages carry. A leaf of `rocm`, so
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

/// Sparse checkout paths the build needs from rocm-systems.
pub const SOURCE_PATHS: &[&str] = &[
    "projects/rocr-runtime",
    "projects/clr",
    "projects/hip",
    "shared",
    "cmake",
];

/// Runtime switch: turns the feature off without a reinstall (documented, not used by us).
pub const DISABLE_ENV: &str = "DEBUG_CLR_DISABLE_ORDERING_EDGE";

/// Control field present (`skipped`) when the build ran with `--no-backport-check`.
pub const BACKPORT_CHECK_FIELD: &str = "X-Rocm-Pin-Backport-Check";
/// Control field present when `package --allow-missing-symbols` let through a rebuilt library
/// lacking stock symbols: `<soname> <how many>, …` for that package's libraries.
pub const MISSING_SYMBOLS_FIELD: &str = "X-Rocm-Pin-Missing-Symbols";

/// The fields of rocm-pin's own packages a dpkg status reader keeps besides dpkg's.
pub const PIN_FIELDS: [&str; 3] = [COMMIT_FIELD, PATCHES_FIELD, FAMILY_FIELD];
