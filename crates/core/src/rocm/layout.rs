//! Where a stock runtime lives ([`RuntimeLayout`]: AMD's versioned prefix or Debian's multiarch
//! directory) and where rocm-pin's marker and the in-place method's markers go in it.

use super::families::PinnedFamily;
use super::flavour::{
    flavour_spec, InPlaceSearch, LoaderRegistration, RuntimeLibraryDir, StockFlavour,
    StockFlavourSpec, StockNaming,
};
use super::library_paths::is_multiarch_lib_dir;

/// Provenance marker, relative to the prefix; shipped by the HSA replacement only.
pub const MARKER_RELPATH: &str = ".info/rocm-pin.json";

/// The in-place method's commit marker (relative to the prefix), written by the seed's
/// Dockerfile block next to the hard links it makes over the stock file names.
pub const INPLACE_COMMIT_RELPATH: &str = ".info/atom-rocm-runtime-commit";
/// The in-place method's soname list (relative to the prefix), one soname per line.
pub const INPLACE_SONAMES_RELPATH: &str = ".info/atom-rocm-runtime-sonames";

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
#[path = "layout_tests.rs"]
mod tests;
