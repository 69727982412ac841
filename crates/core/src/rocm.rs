//! ALL ROCm knowledge lives here: the pinned commit, the backport symbol, the library families
//! and the stock packages that own them, prefix and `/opt/rocm` chain resolution, `.info/version`
//! parsing and the version gate. Nothing else in the crate hard-codes a ROCm name or path.
//!
//! Submodules: `recipe` (which projects of rocm-systems are built, how, and what the build
//! machine needs) and `real_tree` (the real tree's checks against the toolchain).

pub mod families;
mod flavour;
pub mod gate;
pub(crate) mod inplace;
mod pin;
pub(crate) mod real_tree;
pub(crate) mod recipe;
pub mod stock_runtime;
pub(crate) mod upgrades;
pub mod wheels;

pub use families::{
    family_of, half_description, is_ours_of, pair_family, stock_base_name, Half, LibraryFamily,
    PinnedFamily, FAMILIES,
};
pub use flavour::StockFlavour;
pub use pin::{
    BACKPORT_SYMBOL, COMMIT_FIELD, FAMILY_FIELD, PATCHES_FIELD, PIN_COMMIT, PIN_REPOSITORY,
};
pub use real_tree::RealTreeError;

use std::path::{Path, PathBuf};

use crate::host::root::{Missing, Root};
use crate::host::status::{self, StatusEntry};

/// The ROCm release the pinned pair is built for.
pub const TARGET_ROCM_VERSION: &str = "7.2.4";
/// Default flavor: replacement packages are named `<stock>-<flavor>`.
pub const DEFAULT_FLAVOR: &str = "pinned";
/// Default ROCm install path; always resolved through its symlink chain before use.
pub const DEFAULT_ROCM_PATH: &str = "/opt/rocm";

/// The versioned prefix of ROCm `release` in AMD's layout (`/opt/rocm-7.2.4`).
pub fn versioned_prefix(release: &str) -> String {
    format!("{DEFAULT_ROCM_PATH}-{release}")
}
/// Sparse checkout paths the build needs from rocm-systems.
pub const SOURCE_PATHS: &[&str] = &[
    "projects/rocr-runtime",
    "projects/clr",
    "projects/hip",
    "shared",
    "cmake",
];
/// Provenance marker, relative to the prefix; shipped by the HSA replacement only.
pub const MARKER_RELPATH: &str = ".info/rocm-pin.json";
/// The ROCm version file, relative to the prefix.
pub const VERSION_RELPATH: &str = ".info/version";
/// Environment variable that sets the install mode.
pub const MODE_ENV: &str = "ROCM_PIN_MODE";
/// Runtime switch: turns the feature off without a reinstall (documented, not used by us).
pub const DISABLE_ENV: &str = "DEBUG_CLR_DISABLE_ORDERING_EDGE";

/// Resolve a ROCm path through its whole symlink chain (`/opt/rocm -> /etc/alternatives/rocm ->
/// /opt/rocm-7.2.4`), relative to `root` (a chroot or `/`): absolute link targets are
/// interpreted inside `root`. Returns the resolved path *inside* root (e.g. `/opt/rocm-7.2.4`)
/// and every hop for reporting.
pub fn resolve_rocm_path(root: &Root, path: &Path) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    let resolved = root.resolve(path, Missing::Fail)?;
    Ok((resolved.path, resolved.hops))
}

/// Does a `.info/version` content name the target release? `7.2.4`, `7.2.4-42`, `7.2.4+123`
/// match `7.2.4`; `7.2.40`, `7.2.3`, `10.0.0` do not (same rule as the seed's
/// `^7\.2\.4([+-]|$)`, which the review checked).
pub fn version_matches(version_file_content: &str, target: &str) -> bool {
    let v = version_file_content.lines().next().unwrap_or("").trim();
    match v.strip_prefix(target) {
        Some(rest) => rest.is_empty() || rest.starts_with('-') || rest.starts_with('+'),
        None => false,
    }
}

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

/// Control field present (`skipped`) when the build ran with `--no-backport-check`.
pub const BACKPORT_CHECK_FIELD: &str = "X-Rocm-Pin-Backport-Check";
/// Control field present when `package --allow-missing-symbols` let through a rebuilt library
/// lacking stock symbols: `<soname> <how many>, …` for that package's libraries.
pub const MISSING_SYMBOLS_FIELD: &str = "X-Rocm-Pin-Missing-Symbols";

/// What provenance records for one patch of the series (the marker's, the manifest's and the
/// [`PATCHES_FIELD`]'s item).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PatchRecord {
    /// File name of the patch (no directory), e.g. `0001-rocclr-accept-comgr-3.patch`.
    pub name: String,
    pub sha256: String,
}

/// The fields of rocm-pin's own packages a dpkg status reader keeps besides dpkg's.
pub const PIN_FIELDS: [&str; 3] = [COMMIT_FIELD, PATCHES_FIELD, FAMILY_FIELD];

/// The dpkg status file under `root`, keeping [`PIN_FIELDS`].
pub fn read_status(root: &Root) -> anyhow::Result<Vec<StatusEntry>> {
    status::read_status_with(root, &PIN_FIELDS)
}

/// The dpkg status file keeping [`PIN_FIELDS`] and `Depends`: what install and status read
/// once for the gate, the stock match, the release hold and the screen.
pub fn read_status_with_depends(root: &Root) -> anyhow::Result<Vec<StatusEntry>> {
    status::read_status_with(
        root,
        &[COMMIT_FIELD, PATCHES_FIELD, FAMILY_FIELD, "Depends"],
    )
}

/// The [`PATCHES_FIELD`] value for a series (None when empty).
pub fn patches_field(patches: &[PatchRecord]) -> Option<String> {
    (!patches.is_empty()).then(|| {
        patches
            .iter()
            .map(|p| format!("{} {}", p.name, p.sha256))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// `hip-runtime-amd` + `pinned` → `hip-runtime-amd-pinned`.
/// The ROCm release a set of packages was made for, from its versioned prefix
/// (`/opt/rocm-6.3.0` → `6.3.0`); [`TARGET_ROCM_VERSION`] when the prefix carries none.
pub fn release_of_prefix(prefix: &str) -> String {
    prefix
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .and_then(|dir| dir.strip_prefix("rocm-"))
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .unwrap_or(TARGET_ROCM_VERSION)
        .to_string()
}

pub fn replacement_name(stock_name: &str, flavor: &str) -> String {
    format!("{stock_name}-{flavor}")
}

/// One stock package a replacement stands in for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplacedPackage {
    /// Stock name, e.g. `hsa-rocr` or `hip-runtime-amd7.2.4`.
    pub stock_name: String,
    /// Exact stock version our Provides carries, e.g. `1.18.0.70204-93~24.04`.
    pub stock_version: String,
    pub architecture: String,
    /// Our package, e.g. `hsa-rocr-pinned`.
    pub package: String,
    /// Our version, e.g. `1.18.0.70204-93~24.04+pin1764720000.gb539bf7`.
    pub version: String,
}

/// One rebuilt library as installed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MarkerLibrary {
    /// Absolute installed path of the real file, e.g. `/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.53211-b539bf7`.
    pub path: String,
    /// SONAME read from the ELF, e.g. `libamdhip64.so.7`.
    pub soname: String,
    pub sha256: String,
    /// Stock versioned filenames kept as hard links to `path` (absolute).
    pub aliases: Vec<String>,
    /// The replacement package that ships it.
    pub package: String,
}

/// The provenance marker `<prefix>/.info/rocm-pin.json`, shipped by the HSA replacement only.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Marker {
    /// Full source commit; equals `X-Rocm-Pin-Commit` in both controls.
    pub commit: String,
    /// Committer timestamp of `commit` (orders pins).
    pub commit_time: i64,
    pub flavor: String,
    /// The real versioned prefix, e.g. `/opt/rocm-7.2.4`.
    pub prefix: String,
    pub replaced: Vec<ReplacedPackage>,
    pub libraries: Vec<MarkerLibrary>,
    /// sha256 of every payload file of both packages (absolute path → hex), except the marker.
    pub files: std::collections::BTreeMap<String, String>,
    /// rocm-pin version that made the packages.
    pub tool_version: String,
    /// The patch series applied on top of `commit` (from the build manifest), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PatchRecord>,
    /// The build ran with `--no-backport-check`: `verify` fails unless told it is accepted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backport_check_skipped: bool,
    /// Stock symbols the packaged libraries lack (`name@VERSION`) by SONAME, let through by
    /// `package --allow-missing-symbols`; verify and status warn, verify's ABI check names the
    /// installed programs that need one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub missing_symbols: std::collections::BTreeMap<String, Vec<String>>,
    /// Where an adoption took the libraries from ("adopted from an in-place patch …", the
    /// staging's `Origin::Adopted`); None for a pair built by `rocm-pin build`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Marker {
    /// The layout the marker's libraries were installed into (from the first library's
    /// directory): Debian's multiarch directory, else AMD's `<prefix>/lib`.
    pub fn layout(&self) -> RuntimeLayout {
        self.libraries
            .first()
            .and_then(|l| l.path.rsplit_once('/'))
            .map(|(dir, _)| RuntimeLayout::of_library_dir(dir))
            .unwrap_or_else(|| RuntimeLayout::versioned_prefix(&self.prefix))
    }
}

/// The source of a staging made by `rocm-pin adopt` (recorded in the marker) starts with this.
pub const ADOPTED_SOURCE: &str = "adopted from an in-place patch";

/// The runtime library family of `path` when it is a replaceable runtime library of the target
/// prefix: directly in `<prefix>/lib/` (not `lib/asan/`, not `/usr/lib`, not another
/// `/opt/rocm-*` tree) and named like a family member. This is the stock-discovery rule: a
/// package owning such a path is a replacement target.
pub fn runtime_library_family_at(prefix: &str, path: &str) -> Option<&'static LibraryFamily> {
    runtime_library_family_in(&format!("{}/lib", prefix.trim_end_matches('/')), path)
}

/// [`runtime_library_family_at`] for a library directory given as it is (`/opt/rocm-7.2.4/lib`,
/// `/usr/lib/x86_64-linux-gnu`): the family of `path` when it lies directly in `lib_dir`.
pub fn runtime_library_family_in(lib_dir: &str, path: &str) -> Option<&'static LibraryFamily> {
    let name = path.strip_prefix(&format!("{}/", lib_dir.trim_end_matches('/')))?;
    if name.contains('/') {
        return None;
    }
    family_of(name)
}

/// The SONAME major of `libamdhip64.so.7` → `Some("7")`; None when the soname has no version.
pub fn soname_major(soname: &str) -> Option<&str> {
    soname
        .split_once(".so.")
        .map(|(_, rest)| rest.split('.').next().unwrap_or(rest))
}

/// The ROCm prefix a stock file list installs into: the `/opt/rocm-X.Y.Z` holding a runtime
/// library in its `lib/`. None when no such path is listed.
pub fn prefix_of_runtime_path(path: &str) -> Option<String> {
    let (dir, name) = path.rsplit_once('/')?;
    let prefix = dir.strip_suffix("/lib")?;
    let leaf = prefix.rsplit('/').next()?;
    (leaf.starts_with("rocm-") && prefix.starts_with("/opt/") && family_of(name).is_some())
        .then(|| prefix.to_string())
}

/// The in-place method's commit marker (relative to the prefix), written by the seed's
/// Dockerfile block next to the hard links it makes over the stock file names.
pub const INPLACE_COMMIT_RELPATH: &str = ".info/atom-rocm-runtime-commit";
/// The in-place method's soname list (relative to the prefix), one soname per line.
pub const INPLACE_SONAMES_RELPATH: &str = ".info/atom-rocm-runtime-sonames";
/// The short git hash CLR puts in the HIP library's file name when built without a ROCm patch
/// version (`libamdhip64.so.7.2.53211-b539bf7` → `b539bf7`). None when the name carries none.
pub fn commit_hint_of_file_name(file_name: &str) -> Option<&str> {
    let (_, tail) = file_name.rsplit_once('-')?;
    (tail.len() >= 7 && tail.bytes().all(|b| b.is_ascii_hexdigit())).then_some(tail)
}

/// The ROCm release a stock package version encodes in its 5-digit release component
/// (`7.2.53211.70205-1~24.04` → `7.2.5`, `1.18.0.70204-93~24.04` → `7.2.4`). None when the
/// version has no such component.
pub fn release_of_stock_version(version: &str) -> Option<String> {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
    let last = upstream.rsplit('.').next()?;
    let n: u32 = (last.len() == 5).then(|| last.parse().ok()).flatten()?;
    Some(format!("{}.{}.{}", n / 10000, (n / 100) % 100, n % 100))
}

// ---------------------------------------------------------------------------------------------
// Stock flavours (docs/flavours.md): who packaged the stock runtime. Everything the flavours
// differ in is data in STOCK_FLAVOURS; discovery (rocm::stock_runtime) reads only this table.

/// How a flavour names its stock runtime packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StockNaming {
    /// One package per half: a fixed base name, optionally followed by the ROCm release for
    /// multi-version installs (`hip-runtime-amd7.2.4`). Anything else after the base
    /// (`-asan`, `-dev`, `-pinned`) is another package.
    PerHalf {
        hsa: &'static str,
        hip: &'static str,
    },
    /// One package per library, Debian Policy 8.1: the library's SONAME stem followed by its
    /// SONAME major, with a `-` between when the stem ends in a digit (`libamdhip64-7`,
    /// `libhiprtc7`, `libhiprtc-builtins7`, `libhsa-runtime64-1`).
    PerLibrary,
}

/// Where a flavour installs the runtime libraries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeLibraryDir {
    /// `/opt/rocm-<release>/lib/` (found on the loader path through an ld.so.conf.d entry).
    VersionedPrefixLib,
    /// `/usr/lib/<multiarch triplet>/` (on the loader path already).
    Multiarch,
}

/// Where a flavour's ROCm release is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseSource {
    /// `<prefix>/.info/version`, else the 5-digit release component of the stock version
    /// (`1.18.0.70204-93~24.04` → 7.2.4).
    VersionFile,
    /// The upstream part of the stock packages' versions (`7.2.4+dfsg-1~exp1` → 7.2.4).
    PackageVersions,
}

/// How the stock packages put their library directory on the loader path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoaderRegistration {
    /// Maintainer scripts write an `/etc/ld.so.conf.d/` entry and run ldconfig.
    LdSoConfEntry,
    /// No maintainer scripts; a `triggers` control file with `activate-noawait ldconfig`.
    LdconfigTrigger,
}

/// Where a runtime patched in place (patched library files copied over the dpkg-owned stock
/// ones) is looked for, and where the commit it was built from is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InPlaceSearch {
    /// The seed's Dockerfile block: `<prefix>/lib` of `/opt/rocm` resolved, the commit in the
    /// marker `<prefix>/.info/atom-rocm-runtime-commit` (and the `-sonames` sibling), which
    /// `rocm-pin adopt` takes over.
    RocmPathWithMarkers,
    /// Each library directory the installed stock packages' md5sums list runtime libraries in
    /// (`/usr/lib/<triplet>`); no marker: the commit is given (`rocm-pin adopt --commit`).
    StockPackageDirs,
}

/// One stock flavour, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockFlavourSpec {
    pub flavour: StockFlavour,
    /// For people: "AMD's packaging", "Debian's packaging".
    pub title: &'static str,
    pub naming: StockNaming,
    pub library_dir: RuntimeLibraryDir,
    pub release_source: ReleaseSource,
    pub loader: LoaderRegistration,
    /// The stock packages are `Multi-Arch: same` (a replacement must be too).
    pub multi_arch_same: bool,
    /// The stock packages carry `shlibs` and `symbols` control files naming themselves.
    pub shlibs_and_symbols: bool,
    /// The flavour has a `/opt/rocm-*` prefix with an `.info/` directory for our marker.
    pub opt_prefix: bool,
    /// Where `inplace::detect` looks for files patched in place, and where their commit is.
    pub in_place: InPlaceSearch,
    /// The release hold also holds the exact-`=` dependants themselves at their installed
    /// versions (Debian's `libamdhip64-dev`, `libhsa-runtime-dev`: a newer one needs a newer
    /// stock). AMD's metas stay unpinned so apt lists them as kept back.
    pub hold_exact_dependants: bool,
}

impl StockFlavourSpec {
    /// The ROCm release a stock package version of this flavour carries, read the way
    /// `release_source` says (`1.18.0.70204-93~24.04` → 7.2.4; `7.2.4-1~exp2` → 7.2.4).
    pub fn release_of_version(&self, version: &str) -> Option<String> {
        match self.release_source {
            ReleaseSource::VersionFile => release_of_stock_version(version),
            ReleaseSource::PackageVersions => release_of_package_version(version),
        }
    }
}

/// The flavours rocm-pin knows (docs/flavours.md has the measurements behind each value).
pub const STOCK_FLAVOURS: &[StockFlavourSpec] = &[
    StockFlavourSpec {
        flavour: StockFlavour::Amd,
        title: "AMD's packaging",
        naming: StockNaming::PerHalf {
            hsa: "hsa-rocr",
            hip: "hip-runtime-amd",
        },
        library_dir: RuntimeLibraryDir::VersionedPrefixLib,
        release_source: ReleaseSource::VersionFile,
        loader: LoaderRegistration::LdSoConfEntry,
        multi_arch_same: false,
        shlibs_and_symbols: false,
        opt_prefix: true,
        in_place: InPlaceSearch::RocmPathWithMarkers,
        hold_exact_dependants: false,
    },
    StockFlavourSpec {
        flavour: StockFlavour::Debian,
        title: "Debian's packaging",
        naming: StockNaming::PerLibrary,
        library_dir: RuntimeLibraryDir::Multiarch,
        release_source: ReleaseSource::PackageVersions,
        loader: LoaderRegistration::LdconfigTrigger,
        multi_arch_same: true,
        shlibs_and_symbols: true,
        opt_prefix: false,
        in_place: InPlaceSearch::StockPackageDirs,
        hold_exact_dependants: true,
    },
];

/// The data of `flavour`.
pub fn flavour_spec(flavour: StockFlavour) -> &'static StockFlavourSpec {
    STOCK_FLAVOURS
        .iter()
        .find(|s| s.flavour == flavour)
        .expect("every StockFlavour has an entry in STOCK_FLAVOURS")
}

/// What a stock runtime package's name says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockPackageName {
    pub flavour: StockFlavour,
    pub half: Half,
    /// The one library family a per-library package ships (None for a per-half package).
    pub family: Option<&'static LibraryFamily>,
}

/// The Debian Policy 8.1 package name of a shared library: `libamdhip64` + `7` →
/// `libamdhip64-7`, `libhiprtc` + `7` → `libhiprtc7`.
pub fn per_library_package_name(stem: &str, soname_major: &str) -> String {
    if stem.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{stem}-{soname_major}")
    } else {
        format!("{stem}{soname_major}")
    }
}

/// Is `name` a stock runtime package of some flavour, and of which half? Only the runtime
/// packages themselves: never `-dev`, `-asan`, `-tests` or our `-<flavor>` replacements.
pub fn stock_package_by_name(name: &str) -> Option<StockPackageName> {
    STOCK_FLAVOURS.iter().find_map(|spec| match spec.naming {
        StockNaming::PerHalf { hsa, hip } => [(Half::Hsa, hsa), (Half::Hip, hip)]
            .into_iter()
            .find(|(_, base)| {
                name.strip_prefix(base).is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_digit())
                }) && !name.contains("asan")
            })
            .map(|(half, _)| StockPackageName {
                flavour: spec.flavour,
                half,
                family: None,
            }),
        StockNaming::PerLibrary => FAMILIES
            .iter()
            .find(|f| {
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                name.strip_prefix(f.stem).is_some_and(|rest| {
                    let major = if f.stem.ends_with(|c: char| c.is_ascii_digit()) {
                        rest.strip_prefix('-')
                    } else {
                        Some(rest)
                    };
                    major.is_some_and(digits)
                })
            })
            .map(|f| StockPackageName {
                flavour: spec.flavour,
                half: f.half,
                family: Some(f),
            }),
    })
}

/// Is `dir` a multiarch library directory, `/usr/lib/<cpu>-linux-<abi>` (x86_64-linux-gnu,
/// aarch64-linux-gnu, arm-linux-gnueabihf)? `/usr/lib/x86_64` or `/usr/lib/foo/bar` are not.
pub fn is_multiarch_lib_dir(dir: &str) -> bool {
    dir.strip_prefix("/usr/lib/").is_some_and(|triplet| {
        let parts: Vec<&str> = triplet.split('-').collect();
        parts.len() >= 3
            && parts[1] == "linux"
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            })
    })
}

/// A runtime library path as discovery sees it: the flavour whose library directory it lies
/// directly in, its family and that directory. `/opt/rocm-7.2.4/lib/libamdhip64.so.7` → AMD,
/// `/opt/rocm-7.2.4/lib`; `/usr/lib/x86_64-linux-gnu/libhiprtc.so.7.2.53211` → Debian,
/// `/usr/lib/x86_64-linux-gnu`. None for any other path (`lib/asan/`, `/usr/lib/` itself, a
/// name outside the families).
pub fn runtime_library_location(
    path: &str,
) -> Option<(StockFlavour, &'static LibraryFamily, &str)> {
    let (dir, name) = path.rsplit_once('/')?;
    let family = family_of(name)?;
    let layout = if prefix_of_runtime_path(path).is_some() {
        RuntimeLibraryDir::VersionedPrefixLib
    } else if is_multiarch_lib_dir(dir) {
        RuntimeLibraryDir::Multiarch
    } else {
        return None;
    };
    STOCK_FLAVOURS
        .iter()
        .find(|s| s.library_dir == layout)
        .map(|s| (s.flavour, family, dir))
}

/// The ROCm release a Debian package version carries: its upstream part without epoch,
/// revision and repack/pre-release suffixes (`7.2.4+dfsg-1~exp1` → 7.2.4, `1:6.4.3-5` →
/// 6.4.3, `7.2.4~rc1-1` → 7.2.4). None when the upstream part does not start with
/// `<digits>.<digits>`.
pub fn release_of_package_version(version: &str) -> Option<String> {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
    // The leading run of digits and dots: `7.2.4` of `7.2.4+dfsg` or `7.2.4~rc1`.
    let release = upstream
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()?
        .trim_end_matches('.');
    let parts: Vec<&str> = release.split('.').collect();
    (parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.len() <= 5))
        .then(|| release.to_string())
}

// The gate's wording: what it found and what mode `require` adds. Here, with the rest of the
// gate's rules, so the gate (host) and the error it raises (error.rs) share it without either
// reaching into the other.

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

pub fn version_file(target_prefix: &str) -> String {
    format!(
        "{}/{}",
        target_prefix.trim_end_matches('/'),
        VERSION_RELPATH
    )
}

/// Where the stock runtime of one replacement set lives: its flavour, its prefix (the marker's
/// `prefix`: `/opt/rocm-7.2.4` for AMD's, `/usr` for Debian's) and its library directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeLayout {
    pub flavour: StockFlavour,
    pub prefix: String,
    pub lib_dir: String,
}

/// The prefix Debian's flavour reports: its libraries are in `/usr/lib/<triplet>`.
pub const MULTIARCH_PREFIX: &str = "/usr";

/// Where a flavour without an `/opt` prefix keeps our provenance marker (the state layout's).
pub const MARKER_STATE_DIR: &str = crate::host::layout::StateLayout::MARKER_DIR;

/// Is `path` (as dpkg lists it, or a data member `./…`) where a flavour puts our marker:
/// `<prefix>/.info/rocm-pin.json`, or `/var/lib/rocm-pin/marker/<arch>.json`?
pub fn is_marker_path(path: &str) -> bool {
    let path = path.trim_start_matches('.');
    path.ends_with(&format!("/{MARKER_RELPATH}"))
        || path
            .strip_prefix(MARKER_STATE_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|name| name.strip_suffix(".json"))
            .is_some_and(|arch| !arch.is_empty() && !arch.contains('/'))
}

impl RuntimeLayout {
    /// The marker of `family` installed in this layout for `architecture`: under the prefix's
    /// `.info/` where the flavour has an `/opt` prefix, else in rocm-pin's state directory.
    pub fn family_marker_path(&self, family: &PinnedFamily, architecture: &str) -> String {
        if self.spec().opt_prefix {
            format!("{}/.info/{}", self.prefix, family.marker_name)
        } else {
            format!(
                "{MARKER_STATE_DIR}/{}{architecture}.json",
                family.prefixless_marker_stem
            )
        }
    }

    /// AMD's layout: `<prefix>/lib`.
    pub fn versioned_prefix(prefix: &str) -> Self {
        let prefix = prefix.trim_end_matches('/').to_string();
        RuntimeLayout {
            flavour: StockFlavour::Amd,
            lib_dir: format!("{prefix}/lib"),
            prefix,
        }
    }

    /// Debian's layout: the multiarch directory `lib_dir`.
    pub fn multiarch(lib_dir: &str) -> Self {
        RuntimeLayout {
            flavour: StockFlavour::Debian,
            prefix: MULTIARCH_PREFIX.to_string(),
            lib_dir: lib_dir.trim_end_matches('/').to_string(),
        }
    }

    pub fn spec(&self) -> &'static StockFlavourSpec {
        flavour_spec(self.flavour)
    }

    /// The marker's installed path: `<prefix>/.info/rocm-pin.json` where the flavour has an
    /// `/opt` prefix, else `/var/lib/rocm-pin/marker/<architecture>.json`.
    pub fn marker_path(&self, architecture: &str) -> String {
        if self.spec().opt_prefix {
            format!("{}/{MARKER_RELPATH}", self.prefix)
        } else {
            crate::host::layout::StateLayout::prefixless_marker(architecture)
                .display()
                .to_string()
        }
    }

    /// The layout a library directory belongs to (from an installed marker's library path):
    /// a multiarch directory is Debian's, anything else `<prefix>/lib` of AMD's.
    pub fn of_library_dir(dir: &str) -> Self {
        let dir = dir.trim_end_matches('/');
        if is_multiarch_lib_dir(dir) {
            RuntimeLayout::multiarch(dir)
        } else {
            RuntimeLayout::versioned_prefix(dir.strip_suffix("/lib").unwrap_or(dir))
        }
    }

    /// Does rocm-pin write its own `/etc/ld.so.conf.d` entry for this layout? Not where the
    /// library directory is the loader's own (the ldconfig trigger refreshes the cache).
    pub fn needs_loader_entry(&self) -> bool {
        self.spec().loader == LoaderRegistration::LdSoConfEntry
    }

    /// Is the library directory one ldconfig manages the SONAME links of (the multiarch
    /// directory)? There, one file per SONAME: ours takes the stock file's name.
    pub fn one_file_per_soname(&self) -> bool {
        self.spec().library_dir == RuntimeLibraryDir::Multiarch
    }

    /// May a half have several stock packages (one per library, replaced together)?
    pub fn one_package_per_library(&self) -> bool {
        self.spec().naming == StockNaming::PerLibrary
    }

    /// The in-place method's marker files (commit, sonames) of this layout, None where the
    /// flavour keeps none ([`InPlaceSearch::StockPackageDirs`]).
    pub fn inplace_markers(&self) -> Option<[String; 2]> {
        (self.spec().in_place == InPlaceSearch::RocmPathWithMarkers).then(|| {
            [INPLACE_COMMIT_RELPATH, INPLACE_SONAMES_RELPATH]
                .map(|rel| format!("{}/{rel}", self.prefix))
        })
    }

    /// What `rocm-pin package --prefix` takes to read this layout back: the versioned prefix,
    /// or the multiarch library directory.
    pub fn package_prefix(&self) -> &str {
        match self.spec().library_dir {
            RuntimeLibraryDir::VersionedPrefixLib => &self.prefix,
            RuntimeLibraryDir::Multiarch => &self.lib_dir,
        }
    }
}

#[cfg(test)]
mod rocm_tests;
