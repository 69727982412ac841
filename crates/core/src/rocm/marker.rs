//! The provenance marker rocm-pin's packages install ([`Marker`]): what was built from which
//! commit and patches, what it replaces, and every file's sha256. Where it is installed is the
//! layout's ([`super::layout`]).

use super::layout::RuntimeLayout;

/// What provenance records for one patch of the series (the marker's, the manifest's and the
/// [`PATCHES_FIELD`](super::PATCHES_FIELD)'s item).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PatchRecord {
    /// File name of the patch (no directory), e.g. `0001-rocclr-accept-comgr-3.patch`.
    pub name: String,
    pub sha256: String,
}

/// The [`PATCHES_FIELD`](super::PATCHES_FIELD) value for a series (None when empty).
pub fn patches_field(patches: &[PatchRecord]) -> Option<String> {
    (!patches.is_empty()).then(|| {
        patches
            .iter()
            .map(|p| format!("{} {}", p.name, p.sha256))
            .collect::<Vec<_>>()
            .join(", ")
    })
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
    #[serde(rename = "flavor")]
    pub suffix: String,
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
