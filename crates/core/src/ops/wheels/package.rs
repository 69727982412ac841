//! `rocm-pin package --wheels --stock-venv DIR`: the replacement `rocm-sdk-core` wheel, made
//! from the stock one installed in DIR and the staging's libraries. Same layout and file names,
//! version `<stock>+pin.<commit12>`, METADATA recording the commit and patch series, a fresh
//! RECORD, reproducible bytes (every entry stamped `SOURCE_DATE_EPOCH`, else the commit time).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::host::root::Root;
use crate::ops::plan::staging::{self, CommitOverride, Staging};
use crate::rocm::wheels::{self, InstalledDist, CORE_DIST, CORE_LIB_DIR};
use crate::rocm::{self, patches_field};

use super::rebuild::{rebuild_wheel, BuiltWheel, Replacement};

/// What `package --wheels` needs.
pub struct WheelPackageRequest {
    pub staging: PathBuf,
    pub commit: CommitOverride,
    /// A venv with the stock ROCm wheels installed (the root of the in-root reads).
    pub stock_venv: PathBuf,
    pub out: PathBuf,
    pub source_date_epoch: Option<i64>,
}

/// One wheel written.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WrittenWheel {
    pub path: PathBuf,
    pub name: String,
    pub version: String,
    pub stock_version: String,
}

/// Make and write the replacement wheels; returns what was written.
pub fn package_wheels(req: &WheelPackageRequest) -> anyhow::Result<Vec<WrittenWheel>> {
    let staging = staging::load(&req.staging, &req.commit)?;
    let root = Root::new(&req.stock_venv);
    let found = wheels::discover_venv(&root, Path::new("/"))?;
    let core = found.core.as_ref().with_context(|| {
        format!("{} has no {CORE_DIST} installed; --stock-venv names a venv holding the stock ROCm wheels (pip install rocm-sdk-core==<version>)", req.stock_venv.display())
    })?;
    if core.is_ours() {
        bail!("{} holds our {CORE_DIST} {} already; make replacements from the stock one (`rocm-pin rollback --venv {}` first)", req.stock_venv.display(), core.version, req.stock_venv.display());
    }
    let epoch = req.source_date_epoch.unwrap_or(staging.commit_time);
    let built = replacement_core_wheel(&root, core, &staging, epoch)?;
    let path = write_wheel(&req.out, &built)?;
    Ok(vec![WrittenWheel {
        path,
        name: core.name.clone(),
        version: built.version,
        stock_version: core.version.clone(),
    }])
}

/// Our `rocm-sdk-core` wheel: the stock one with each runtime library of its platform
/// directory that the staging rebuilt replaced by ours (same SONAME file name).
pub fn replacement_core_wheel(
    root: &Root,
    core: &InstalledDist,
    staging: &Staging,
    epoch: i64,
) -> anyhow::Result<BuiltWheel> {
    let mut files = BTreeMap::new();
    let libraries = core.runtime_libraries(CORE_LIB_DIR);
    for family in rocm::FAMILIES {
        let listed: Vec<_> = libraries
            .iter()
            .filter(|(_, f)| f.stem == family.stem)
            .collect();
        let staged = staging.family(family.stem);
        match (listed.as_slice(), staged) {
            ([], _) if family.required => bail!(
                "{} {} lists no {}.so* in {CORE_LIB_DIR}; not the ROCm wheel layout this packages",
                core.name,
                core.version,
                family.stem
            ),
            ([], _) => {}
            (_, None) if family.required => bail!(
                "the staging {} has no {} library",
                staging.dir.display(),
                family.stem
            ),
            (_, None) => {} // a CLR library the build did not make stays stock
            ([(entry, _)], Some(lib)) => {
                let file_name = entry.path.rsplit('/').next().unwrap_or(&entry.path);
                if file_name != lib.soname() {
                    bail!("{} carries {file_name} but the staging's {} has SONAME {}: an ABI change, refused", core.name, lib.file_name, lib.soname());
                }
                files.insert(entry.path.clone(), read_staged(&lib.source)?);
            }
            (many, Some(_)) => bail!(
                "{} lists {} files of {} in {CORE_LIB_DIR} (SONAME files only expected)",
                core.name,
                many.len(),
                family.stem
            ),
        }
    }
    let mut fields = vec![(wheels::WHEEL_COMMIT_FIELD, staging.commit.clone())];
    if let Some(p) = patches_field(staging.patches()) {
        fields.push((wheels::WHEEL_PATCHES_FIELD, p));
    }
    let replacement = Replacement {
        version: wheels::pinned_wheel_version(&core.version, &staging.commit)?,
        files,
        fields,
    };
    rebuild_wheel(root, core, Some(&replacement), epoch)
}

/// A staged library's bytes (the staging is the caller's own build output).
fn read_staged(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Write `wheel` into `dir` (made if missing) through a temporary name; returns its path.
pub fn write_wheel(dir: &Path, wheel: &BuiltWheel) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(&wheel.file_name);
    let tmp = dir.join(format!(".{}.tmp", wheel.file_name));
    std::fs::write(&tmp, &wheel.bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
