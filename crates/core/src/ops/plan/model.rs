//! The plan's vocabulary: the options a plan is made with, what each planned file is and why
//! it is there, one replacement's plan and the whole package run's. A leaf of `ops::plan`: the
//! planning steps in its children and in `plan/mod.rs` all speak it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::deb::version::Version;
use crate::deb::Paragraph;
use crate::host::dpkgdb::DpkgDb;
use crate::rocm::{self, Half};

/// The maintainer written into replacement packages unless `--maintainer` says otherwise.
pub const DEFAULT_MAINTAINER: &str = "rocm-pin packager <rocm-pin@example.com>";

#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub suffix: String,
    pub strip: bool,
    pub allow_soname_change: bool,
    /// Package a rebuilt library that lacks stock symbols (recorded; see `ops::plan::abi`).
    pub allow_missing_symbols: bool,
    pub maintainer: String,
    /// The family the replacements are made for (the runtime pair unless `--family` says).
    pub family: &'static rocm::PinnedFamily,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            suffix: rocm::DEFAULT_SUFFIX.to_string(),
            strip: true,
            allow_soname_change: false,
            allow_missing_symbols: false,
            maintainer: DEFAULT_MAINTAINER.to_string(),
            family: &rocm::families::RUNTIME,
        }
    }
}

/// Why a path is in a replacement package; printed per package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// A library from the staging (stripped unless --no-strip).
    Rebuilt,
    /// A stock versioned filename, hard-linked to the rebuilt file.
    Alias,
    /// A soname/dev symlink derived from the ELF SONAME.
    Link,
    /// A stock file shipped unchanged (md5 checked).
    Carried,
    /// A library from the staging that a rebuilt library needs.
    Vendored,
    /// Written by rocm-pin: pin file, marker, copyright, changelog, lintian overrides.
    Generated,
    Dir,
}

impl Role {
    pub fn word(self) -> &'static str {
        match self {
            Role::Rebuilt => "rebuilt",
            Role::Alias => "aliased",
            Role::Link => "linked",
            Role::Carried => "carried",
            Role::Vendored => "vendored",
            Role::Generated => "generated",
            Role::Dir => "dir",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Dir,
    /// Copy `source` (stripping debug info when `strip`).
    Copy {
        source: PathBuf,
        mode: u32,
        strip: bool,
    },
    /// A hard link to another planned path of the same package.
    HardLink(String),
    Symlink(String),
    /// Rendered later from the plan (marker) or now (pin file, docs).
    Bytes {
        data: Vec<u8>,
        mode: u32,
    },
    /// The provenance marker; its bytes need every other file's sha256, so it is rendered last.
    Marker,
}

#[derive(Debug, Clone)]
pub struct PlannedFile {
    pub path: String,
    pub role: Role,
    pub content: Content,
    /// For `Rebuilt`/`Alias`/`Vendored`/`Carried`: where it came from (for the report).
    pub from: Option<String>,
}

/// One rebuilt library in a replacement: what the marker records.
#[derive(Debug, Clone)]
pub struct PlannedLibrary {
    pub path: String,
    pub soname: String,
    pub aliases: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct ReplacementPlan {
    pub half: Half,
    pub stock_name: String,
    pub stock_version: Version,
    pub architecture: String,
    pub package: String,
    pub version: Version,
    pub control: Paragraph,
    pub files: Vec<PlannedFile>,
    pub conffiles: Vec<String>,
    /// DEBIAN/`<name>` → contents (maintainer scripts 0755; triggers, shlibs, symbols 0644).
    pub scripts: BTreeMap<String, String>,
    pub libraries: Vec<PlannedLibrary>,
    /// Stock maintainer scripts that are not carried (ours replace them), for the report.
    pub stock_scripts_dropped: Vec<String>,
}

impl ReplacementPlan {
    pub fn file(&self, path: &str) -> Option<&PlannedFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

#[derive(Debug, Clone)]
pub struct PackagePlan {
    pub prefix: String,
    /// The stock flavour and library directory the replacements install into.
    pub layout: rocm::RuntimeLayout,
    pub commit: String,
    pub commit_time: i64,
    pub suffix: String,
    /// The build's patch series (from its manifest), recorded in both controls and the marker.
    pub patches: Vec<crate::rocm::PatchRecord>,
    /// The build ran with `--no-backport-check` (from its manifest).
    pub backport_check_skipped: bool,
    /// Stock symbols a rebuilt library lacks, by SONAME (`name@VERSION`), let through by
    /// `--allow-missing-symbols`; empty otherwise (a refusal).
    pub missing_symbols: BTreeMap<String, Vec<String>>,
    /// HSA first, then HIP.
    pub packages: Vec<ReplacementPlan>,
    /// Things worth saying that do not stop the run.
    pub warnings: Vec<String>,
}

impl PackagePlan {
    pub fn marker_replaced(&self) -> Vec<rocm::ReplacedPackage> {
        self.packages
            .iter()
            .map(|p| rocm::ReplacedPackage {
                stock_name: p.stock_name.clone(),
                stock_version: p.stock_version.to_string(),
                architecture: p.architecture.clone(),
                package: p.package.clone(),
                version: p.version.to_string(),
            })
            .collect()
    }
}

/// Where NEEDED entries are resolved: the target's dpkg database and loader search path.
pub struct Target<'a> {
    pub db: Option<&'a DpkgDb>,
    /// Why `db` is absent (the open error), so a refusal that needs it can say so.
    pub db_error: Option<String>,
    /// The stock flavour, prefix and library directory the replacements install into.
    pub layout: rocm::RuntimeLayout,
}
