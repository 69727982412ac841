//! Which stock ROCm runtime a root has, found by SONAME through the dpkg database: every
//! installed package whose file list holds a regular file, directly in a flavour's runtime
//! library directory, whose ELF SONAME names a runtime library family (`libamdhip64.so.7`,
//! `libhsa-runtime64.so.1`, …). The package names, directories and release sources of the
//! flavours are data in `rocm::STOCK_FLAVOURS`; nothing here knows a ROCm name. Read-only.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::rocm::{self, Half, ReleaseSource, StockFlavour};

/// One runtime library a stock package installs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StockLibrary {
    /// The real file as dpkg lists it, e.g. `/usr/lib/x86_64-linux-gnu/libamdhip64.so.7.2.53211`.
    pub path: String,
    /// Its ELF SONAME, e.g. `libamdhip64.so.7`.
    pub soname: String,
}

/// One stock runtime package.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StockRuntimePackage {
    pub package: String,
    pub version: String,
    pub architecture: String,
    pub half: Half,
    pub libraries: Vec<StockLibrary>,
}

/// The stock runtime packages of one flavour and ROCm release.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StockRuntime {
    pub flavour: StockFlavour,
    /// For people: "Debian's packaging".
    pub flavour_title: String,
    /// The ROCm release, None when neither its version file nor the package versions say.
    pub release: Option<String>,
    /// Where the release was read: `/opt/rocm-7.2.4/.info/version` or `package versions`.
    pub release_from: String,
    /// The library directories the packages install into.
    pub library_dirs: Vec<String>,
    pub packages: Vec<StockRuntimePackage>,
}

impl StockRuntime {
    /// One line for people: `Debian's packaging, ROCm 7.2.4 (from the package versions):
    /// libhsa-runtime64-1 7.2.4+dfsg-1~exp1, libamdhip64-7 7.2.4-1~exp2 in /usr/lib/x86_64-linux-gnu`.
    pub fn describe(&self) -> String {
        let packages: Vec<String> = self
            .packages
            .iter()
            .map(|p| format!("{} {}", p.package, p.version))
            .collect();
        format!(
            "{}, ROCm {} (from {}): {} in {}",
            self.flavour_title,
            self.release.as_deref().unwrap_or("unknown"),
            self.release_from,
            packages.join(", "),
            self.library_dirs.join(", ")
        )
    }

    /// True when both halves are present.
    pub fn is_complete(&self) -> bool {
        [Half::Hsa, Half::Hip]
            .iter()
            .all(|h| self.packages.iter().any(|p| p.half == *h))
    }
}

/// What discovery found: the stock runtimes by flavour and release, and runtime libraries
/// owned by packages no flavour names (reported, never replaced).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StockDiscovery {
    pub runtimes: Vec<StockRuntime>,
    pub unrecognised: Vec<String>,
}

/// The runtimes found whose release is their packages' versions (Debian's): `rocm-pin
/// install` judges them against the replacements' marker, so there is no `/opt` prefix to
/// preview and the replacements are made against this very stock (`package --stock-root`).
pub fn release_by_package_versions(found: &StockDiscovery) -> Vec<&StockRuntime> {
    found
        .runtimes
        .iter()
        .filter(|r| rocm::flavour_spec(r.flavour).release_source == ReleaseSource::PackageVersions)
        .collect()
}

/// How replacements for such a runtime are made and installed (one clause).
pub const PACKAGE_AGAINST_THIS_STOCK: &str = "`rocm-pin package --staging <build> --stock-root /` makes its replacements and `rocm-pin install <them>` installs them (docs/flavours.md)";

/// What a host without our packages should do, given its stock runtime.
pub fn what_to_do(found: &StockDiscovery) -> String {
    let here: Vec<String> = release_by_package_versions(found)
        .into_iter()
        .map(StockRuntime::describe)
        .collect();
    if here.is_empty() {
        return "run `rocm-pin install`".to_string();
    }
    format!(
        "the stock runtime here is {}; {PACKAGE_AGAINST_THIS_STOCK}",
        here.join("; and ")
    )
}

/// A runtime library found in one package's file list, before grouping.
struct Found {
    flavour_of_dir: StockFlavour,
    dir: String,
    library: StockLibrary,
    half: Half,
}

/// Find the stock runtime under `root` from its dpkg status `entries` (ours, which carry
/// [`rocm::COMMIT_FIELD`], are skipped). Unreadable file lists and files that are not ELF are
/// skipped: discovery reports what it can prove, a damaged database is verify's to judge.
pub fn discover(root: &Root, entries: &[StatusEntry]) -> StockDiscovery {
    let mut groups: BTreeMap<(StockFlavour, Option<String>), StockRuntime> = BTreeMap::new();
    let mut unrecognised = Vec::new();
    let lists = FileLists::of(root);
    for e in entries
        .iter()
        .filter(|e| e.has_files() && !e.extra.contains_key(rocm::COMMIT_FIELD))
        .filter(|e| lists.may_have(e))
    {
        let found = runtime_libraries_of(root, e);
        if found.is_empty() {
            continue;
        }
        let Some(name) = rocm::stock_package_by_name(&e.package) else {
            for f in &found {
                unrecognised.push(format!(
                    "{} (SONAME {}) belongs to {} {}, which no stock flavour names (docs/flavours.md); it is not a replacement target",
                    f.library.path, f.library.soname, e.package, e.version
                ));
            }
            continue;
        };
        let spec = rocm::flavour_spec(name.flavour);
        let (release, release_from) = release_of(root, spec.release_source, &e.version, &found);
        let half = name.family.map_or(name.half, |f| f.half);
        let group = groups
            .entry((name.flavour, release.clone()))
            .or_insert_with(|| StockRuntime {
                flavour: name.flavour,
                flavour_title: spec.title.to_string(),
                release,
                release_from,
                library_dirs: Vec::new(),
                packages: Vec::new(),
            });
        for f in &found {
            if !group.library_dirs.contains(&f.dir) {
                group.library_dirs.push(f.dir.clone());
            }
            if f.flavour_of_dir != name.flavour || f.half != half {
                unrecognised.push(format!(
                    "{} (SONAME {}) of {}: installed where {} puts its libraries, or of the other half; kept with {}",
                    f.library.path,
                    f.library.soname,
                    e.package,
                    rocm::flavour_spec(f.flavour_of_dir).title,
                    spec.title
                ));
            }
        }
        group.packages.push(StockRuntimePackage {
            package: e.package.clone(),
            version: e.version.clone(),
            architecture: e.architecture.clone(),
            half,
            libraries: found.into_iter().map(|f| f.library).collect(),
        });
    }
    let mut runtimes: Vec<StockRuntime> = groups.into_values().collect();
    for r in &mut runtimes {
        r.packages
            .sort_by(|a, b| (a.half, &a.package).cmp(&(b.half, &b.package)));
    }
    StockDiscovery {
        runtimes,
        unrecognised,
    }
}

/// The runtime libraries in one package's file list: regular files (not the SONAME or dev
/// links) directly in a flavour's library directory, named like a family, whose SONAME is
/// of that same family.
/// The names in dpkg's `info/` directory, listed once: a package without a `.list` there is
/// skipped without a lookup. Each lookup resolves every component inside the root (five
/// `lstat`s, two names per package), which made a status of 200 000 packages cost 24 s.
struct FileLists(Option<HashSet<String>>);

/// The most names read from `info/` (a host with 2 000 packages has about 12 000; the dpkg
/// status cap allows about 2 million packages).
const MAX_INFO_ENTRIES: usize = 16_000_000;

impl FileLists {
    fn of(root: &Root) -> FileLists {
        FileLists(
            root.read_dir_names("/var/lib/dpkg/info", MAX_INFO_ENTRIES)
                .ok()
                .map(|names| names.into_iter().filter(|n| n.ends_with(".list")).collect()),
        )
    }

    /// Whether `e` may have a file list (always, when `info/` could not be listed: the
    /// per-package read then says why).
    fn may_have(&self, e: &StatusEntry) -> bool {
        self.0.as_ref().is_none_or(|names| {
            names.contains(&format!("{}.list", e.package))
                || names.contains(&format!("{}:{}.list", e.package, e.architecture))
        })
    }
}

fn runtime_libraries_of(root: &Root, e: &StatusEntry) -> Vec<Found> {
    let Ok(list) = status::package_list(root, &e.package, &e.architecture) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|path| {
            let (flavour_of_dir, family, dir) = rocm::runtime_library_location(path)?;
            let soname = soname_in_root(root, path)?;
            (rocm::family_of(&soname).map(|f| f.stem) == Some(family.stem)).then(|| Found {
                flavour_of_dir,
                dir: dir.to_string(),
                library: StockLibrary {
                    path: path.clone(),
                    soname,
                },
                half: family.half,
            })
        })
        .collect()
}

/// The SONAME of the regular file at in-root `path`; None for a symlink, a non-ELF file or
/// one without a SONAME. The directory is resolved inside the root, so a link in a hostile
/// root cannot lead the read outside it.
fn soname_in_root(root: &Root, path: &str) -> Option<String> {
    // A symlink in the last component is a link, not the library: look at the entry itself.
    if !root.symlink_metadata(path).ok()?.file_type().is_file() {
        return None;
    }
    let (file, _) = root.open_regular(path, FileKind::PackagedFile).ok()?;
    crate::elf::read_elf_file(&file, Path::new(path))
        .ok()?
        .soname
}

/// The release of one stock package and where it was read, by its flavour's release source.
fn release_of(
    root: &Root,
    source: ReleaseSource,
    version: &str,
    found: &[Found],
) -> (Option<String>, String) {
    match source {
        ReleaseSource::PackageVersions => (
            rocm::release_of_package_version(version),
            "the package versions".to_string(),
        ),
        ReleaseSource::VersionFile => {
            let prefix = found
                .iter()
                .find_map(|f| rocm::prefix_of_runtime_path(&f.library.path));
            if let Some(prefix) = prefix {
                let file = format!("{prefix}/{}", rocm::VERSION_RELPATH);
                if let Some(v) = first_line_in_root(root, &file) {
                    return (Some(v), file);
                }
            }
            (
                rocm::release_of_stock_version(version),
                "the package versions".to_string(),
            )
        }
    }
}

/// The first line of a small file inside the root, None when absent or unreadable.
fn first_line_in_root(root: &Root, path: &str) -> Option<String> {
    let text = root.read_to_string(path, FileKind::VersionFile).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

#[cfg(test)]
#[path = "stock_runtime_tests.rs"]
mod tests;
