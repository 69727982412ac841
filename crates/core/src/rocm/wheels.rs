//! ROCm as Python wheels (TheRock's packaging): which distributions carry the runtime pair,
//! where, and which stock set a virtual environment holds, read from its `.dist-info`
//! directories (name, version, RECORD) through the in-root model, the way `stock_runtime`
//! reads the dpkg database. Read-only.
//!
//! The layout, from ROCm/TheRock:
//! - `build_tools/_therock_utils/py_packaging.py`: runtime wheels hold no symlinks, only the
//!   SONAME file of each shared library (`_rocm_sdk_core/lib/libamdhip64.so.7`,
//!   `libhsa-runtime64.so.1`); the platform directory is `_` + the distribution name with `_`
//!   for `-` (`_dist_info.py` `get_py_package_name`); consumers get `--add-rpath
//!   $ORIGIN/…/_rocm_sdk_core/lib` (`_extend_rpath`).
//! - `docs/packaging/python_packaging.md` and `rocm_sdk/_devel.py`: `rocm-sdk-devel` ships a
//!   `_devel.tar(.xz)` expanded on first use into `_rocm_sdk_devel/`, where every file a runtime
//!   wheel already holds is a hard link to the runtime wheel's file (the full name set of a
//!   library: `.so`, `.so.<major>`, the real name), and the expanded paths are appended to
//!   rocm-sdk-devel's RECORD with no hash.
//!
//! So the bytes of the pair live in one distribution, `rocm-sdk-core`: its replacement wheel
//! carries ours, and the devel tree's hard links are re-made to point at it.

use std::path::Path;

use anyhow::{bail, Context};

use crate::host::root::{FileKind, Root};
use crate::rocm::{family_of, LibraryFamily};
use crate::wheel::{normalize_name, CoreMetadata, Record, RecordEntry, WheelFile};

/// The distribution whose wheel holds the pair's bytes.
pub const CORE_DIST: &str = "rocm-sdk-core";
/// Its platform directory in `site-packages`, holding SONAME files only.
pub const CORE_LIB_DIR: &str = "_rocm_sdk_core/lib";
/// The distribution whose expanded tree holds hard links of the full name set.
pub const DEVEL_DIST: &str = "rocm-sdk-devel";
/// Its expanded platform directory.
pub const DEVEL_LIB_DIR: &str = "_rocm_sdk_devel/lib";
/// The PEP 440 local label of our versions: `<stock>+pin.<commit12>`.
pub const PIN_LOCAL_PREFIX: &str = "pin.";
/// METADATA fields our wheels add (the .deb side's names: `X-Rocm-Pin-Commit`, …).
pub const WHEEL_COMMIT_FIELD: &str = crate::rocm::COMMIT_FIELD;
pub const WHEEL_PATCHES_FIELD: &str = crate::rocm::PATCHES_FIELD;
/// The most `.dist-info` directories a site-packages may list.
const MAX_SITE_ENTRIES: usize = 100_000;

/// Our version of a stock wheel version: `10.0.0` and commit `b539bf7e…` give
/// `10.0.0+pin.b539bf7eebfd`. A stock version that already has a local label is refused.
pub fn pinned_wheel_version(stock: &str, commit: &str) -> anyhow::Result<String> {
    if stock.contains('+') {
        bail!("stock version {stock} already has a local label; refusing to stack ours on it");
    }
    if commit.len() < 12 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("commit {commit:?} is not a hexadecimal commit id");
    }
    Ok(format!(
        "{stock}+{PIN_LOCAL_PREFIX}{}",
        &commit[..12].to_ascii_lowercase()
    ))
}

/// The stock version and commit prefix of one of our versions, None for any other.
pub fn split_pinned_version(version: &str) -> Option<(&str, &str)> {
    let (stock, local) = version.split_once('+')?;
    let commit = local.strip_prefix(PIN_LOCAL_PREFIX)?;
    (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())).then_some((stock, commit))
}

/// One installed distribution, read from its `.dist-info`.
#[derive(Debug, Clone)]
pub struct InstalledDist {
    /// As METADATA spells it (`rocm-sdk-core`).
    pub name: String,
    pub version: String,
    /// The in-root path of the site-packages it is installed in.
    pub site_packages: String,
    /// The `.dist-info` directory name.
    pub dist_info: String,
    pub metadata_text: String,
    pub wheel: WheelFile,
    pub record: Record,
}

impl InstalledDist {
    /// The in-root path of a RECORD path.
    pub fn path_of(&self, record_path: &str) -> String {
        format!("{}/{record_path}", self.site_packages)
    }

    /// The RECORD rows of runtime libraries in `lib_dir` (`_rocm_sdk_core/lib`), with their
    /// family.
    pub fn runtime_libraries(&self, lib_dir: &str) -> Vec<(&RecordEntry, &'static LibraryFamily)> {
        self.record
            .entries
            .iter()
            .filter_map(|e| {
                let name = e.path.strip_prefix(lib_dir)?.strip_prefix('/')?;
                (!name.contains('/')).then_some(())?;
                Some((e, family_of(name)?))
            })
            .collect()
    }

    /// Whether this is one of our replacement wheels.
    pub fn is_ours(&self) -> bool {
        split_pinned_version(&self.version).is_some()
    }
}

/// The ROCm wheel distributions of one virtual environment.
#[derive(Debug, Clone)]
pub struct WheelStock {
    pub site_packages: String,
    pub core: Option<InstalledDist>,
    pub devel: Option<InstalledDist>,
    /// Every `rocm-sdk-*` / `rocm` / `torch` distribution found, `name version`, for reports.
    pub others: Vec<String>,
}

/// The site-packages directories of the venv at in-root path `venv` (`lib/python3.*/site-packages`).
pub fn site_packages_of(root: &Root, venv: &Path) -> anyhow::Result<Vec<String>> {
    if !root.host_path(venv).is_dir() {
        bail!(
            "{} is not a directory (give the virtual environment's directory, e.g. /opt/venv)",
            root.host_path(venv).display()
        );
    }
    let lib = venv.join("lib");
    let names = root.read_dir_names(&lib, 1_000).with_context(|| {
        format!(
            "{} is not a Python virtual environment (no lib/)",
            root.host_path(&lib).display()
        )
    })?;
    Ok(names
        .into_iter()
        .filter(|n| n.starts_with("python3"))
        .map(|n| format!("{}/{n}/site-packages", lib.display()))
        .filter(|sp| root.metadata(sp).is_ok_and(|m| m.is_dir()))
        .collect())
}

/// Find the ROCm wheel distributions installed in the venv at in-root path `venv`.
pub fn discover_venv(root: &Root, venv: &Path) -> anyhow::Result<WheelStock> {
    let sites = site_packages_of(root, venv)?;
    let site = match sites.as_slice() {
        [one] => one.clone(),
        [] => bail!(
            "{} has no lib/python3.*/site-packages",
            root.host_path(venv).display()
        ),
        many => bail!(
            "{} has several site-packages ({}); name one venv per Python",
            root.host_path(venv).display(),
            many.join(", ")
        ),
    };
    let mut found = WheelStock {
        site_packages: site.clone(),
        core: None,
        devel: None,
        others: Vec::new(),
    };
    for entry in root.read_dir_names(&site, MAX_SITE_ENTRIES)? {
        let Some(stem) = entry.strip_suffix(".dist-info") else {
            continue;
        };
        let name_part = stem.split('-').next().unwrap_or(stem);
        let normalized = normalize_name(name_part);
        let wanted = [CORE_DIST, DEVEL_DIST].contains(&normalized.as_str());
        if !wanted {
            if normalized.starts_with("rocm") || normalized == "torch" {
                found.others.push(stem.to_string());
            }
            continue;
        }
        let dist = read_dist(root, &site, &entry)?;
        let slot = if normalized == CORE_DIST {
            &mut found.core
        } else {
            &mut found.devel
        };
        if let Some(first) = slot {
            bail!("{site} holds two installs of {} ({} and {}); repair the venv first (pip uninstall, then install one)", dist.name, first.dist_info, dist.dist_info);
        }
        *slot = Some(dist);
    }
    Ok(found)
}

/// Read one `.dist-info` directory: METADATA, WHEEL, RECORD.
pub fn read_dist(root: &Root, site: &str, dist_info: &str) -> anyhow::Result<InstalledDist> {
    let read = |file: &str| {
        let path = format!("{site}/{dist_info}/{file}");
        root.read_to_string(&path, FileKind::DistInfo)
            .with_context(|| format!("reading {}", root.host_path(&path).display()))
    };
    let metadata_text = read("METADATA")?;
    let metadata =
        CoreMetadata::parse(&metadata_text).with_context(|| format!("{dist_info}/METADATA"))?;
    let wheel = WheelFile::parse(&read("WHEEL")?).with_context(|| format!("{dist_info}/WHEEL"))?;
    let record = Record::parse(&read("RECORD")?).with_context(|| format!("{dist_info}/RECORD"))?;
    Ok(InstalledDist {
        name: metadata.name()?.to_string(),
        version: metadata.version()?.to_string(),
        site_packages: site.to_string(),
        dist_info: dist_info.to_string(),
        metadata_text,
        wheel,
        record,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_versions_round_trip_and_refuse_stacking() {
        let v = pinned_wheel_version("10.0.0", "B539BF7EEBFD99AD0A69668CAA1F4037034D501F").unwrap();
        assert_eq!(v, "10.0.0+pin.b539bf7eebfd");
        assert_eq!(split_pinned_version(&v), Some(("10.0.0", "b539bf7eebfd")));
        assert_eq!(split_pinned_version("2.9.0+rocm10.0.0"), None);
        assert_eq!(split_pinned_version("10.0.0"), None);
        assert!(pinned_wheel_version(&v, "b539bf7eebfd99ad").is_err());
        assert!(pinned_wheel_version("10.0.0", "b539bf").is_err());
    }
}
