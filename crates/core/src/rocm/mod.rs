//! ALL ROCm knowledge lives here: the pinned commit, the backport symbol, the library families
//! and the stock packages that own them, prefix and `/opt/rocm` chain resolution, `.info/version`
//! parsing and the version gate. Nothing else in the crate hard-codes a ROCm name or path.
//!
//! One file per concept, the lower ones leaves (none imports this module, none imports another
//! in a circle):
//! - `pin`: the pin's own names (commit, repository, backport symbol, control fields);
//!   `pin_status`: the dpkg status read with those fields.
//! - `release`: the target release, `/opt/rocm` resolution, releases read from versions.
//! - `flavour`: who packaged the stock runtime, and what the flavours differ in, as data.
//! - `families`: the library families and the pinned families (the runtime pair, RCCL).
//! - `package_names`, `library_paths`: what a package name or a library path says.
//! - `layout`: where a stock runtime lives and where our marker goes; `marker`: the marker.
//! - `gate_mode`: how install treats a version mismatch, and the gate's wording.
//! - Rules over a host or a tree: `gate`, `inplace`, `stock_runtime`, `upgrades`, `wheels`,
//!   `recipe` (which projects of rocm-systems are built, how, and what the build machine
//!   needs) and `real_tree` (the real tree's checks against the toolchain).

pub mod families;
mod flavour;
pub mod gate;
mod gate_mode;
pub(crate) mod inplace;
mod layout;
mod library_paths;
mod marker;
mod package_names;
mod pin;
mod pin_status;
pub(crate) mod real_tree;
pub(crate) mod recipe;
mod release;
pub mod stock_runtime;
pub(crate) mod upgrades;
pub mod wheels;

pub use families::{
    family_of, half_description, is_ours_of, pair_family, stock_base_name, Half, LibraryFamily,
    PinnedFamily, FAMILIES,
};
pub use flavour::{
    flavour_spec, InPlaceSearch, LoaderRegistration, ReleaseSource, RuntimeLibraryDir,
    StockFlavour, StockFlavourSpec, StockNaming, STOCK_FLAVOURS,
};
pub use gate_mode::{finding_text, GateMode, MODE_ENV, REQUIRE_REFUSES};
pub use layout::{
    is_marker_path, RuntimeLayout, INPLACE_COMMIT_RELPATH, INPLACE_SONAMES_RELPATH, MARKER_RELPATH,
    MARKER_STATE_DIR, MULTIARCH_PREFIX,
};
pub use library_paths::{
    commit_hint_of_file_name, is_multiarch_lib_dir, prefix_of_runtime_path,
    runtime_library_family_at, runtime_library_family_in, runtime_library_location, soname_major,
};
pub use marker::{
    patches_field, Marker, MarkerLibrary, PatchRecord, ReplacedPackage, ADOPTED_SOURCE,
};
pub use package_names::{
    per_library_package_name, replacement_name, stock_package_by_name, StockPackageName,
    DEFAULT_SUFFIX,
};
pub use pin::{
    BACKPORT_CHECK_FIELD, BACKPORT_SYMBOL, COMMIT_FIELD, DISABLE_ENV, FAMILY_FIELD,
    MISSING_SYMBOLS_FIELD, PATCHES_FIELD, PIN_COMMIT, PIN_FIELDS, PIN_REPOSITORY, SOURCE_PATHS,
};
pub use pin_status::{read_status, read_status_with_depends};
pub use real_tree::RealTreeError;
pub use release::{
    release_of_package_version, release_of_prefix, release_of_stock_version, resolve_rocm_path,
    version_file, version_matches, versioned_prefix, DEFAULT_ROCM_PATH, TARGET_ROCM_VERSION,
    VERSION_RELPATH,
};
