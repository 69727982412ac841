//! Stock flavours (docs/flavours.md): who packaged the stock runtime. Everything the flavours
//! differ in is data in [`STOCK_FLAVOURS`]; discovery (`rocm::stock_runtime`) reads only this
//! table. Below the family data, which names a flavour; it imports only `release`.

use super::release::{release_of_package_version, release_of_stock_version};

/// Which packaging the stock ROCm runtime on a host comes from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StockFlavour {
    /// AMD's packages from repo.radeon.com: `hsa-rocr`, `hip-runtime-amd` under `/opt/rocm-*`.
    Amd,
    /// Debian's (and Ubuntu's) packages: `libhsa-runtime64-1`, `libamdhip64-<N>`, … under
    /// `/usr/lib/<triplet>/`.
    Debian,
}

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

#[cfg(test)]
#[path = "flavour_tests.rs"]
mod tests;
