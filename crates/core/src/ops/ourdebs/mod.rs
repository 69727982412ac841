//! Our replacement .debs as given on the command line: their control facts and the
//! provenance marker one of them ships, read with our own streaming .deb reader. Shared by
//! install and the local repository (which would otherwise reach into each other).

pub(crate) mod error;

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::deb::{EntryKind, ReadLimits};
use crate::host::layout::StateLayout;
use crate::host::root::Root;
use crate::host::status;
use crate::ops::ourdebs::error::DebSetProblem;
use crate::ops::ourdebs::error::InstallError;
use crate::rocm::{self, Marker};

/// Facts of one replacement .deb given on the command line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DebFacts {
    pub path: PathBuf,
    pub package: String,
    pub version: String,
    pub architecture: String,
    pub commit: String,
    pub protected: bool,
    /// The stock package it replaces and the exact version its Provides carries.
    pub stock_name: String,
    pub stock_version: String,
    /// The pinned family (`runtime`, `rccl`): `X-Rocm-Pin-Family`, the pair when absent.
    pub family: &'static str,
}

/// The provenance marker inside one of our .debs, if it ships one (`(member, bytes)`), read
/// with our own streaming reader: no `dpkg-deb -c` listing to split into columns (a name with
/// a space in it broke that), no tar process.
fn marker_member(deb: &Path) -> anyhow::Result<Option<(String, Vec<u8>)>> {
    let mut found = None;
    crate::deb::reader::for_each_data_entry(deb, &ReadLimits::default(), &mut |entry, body| {
        if found.is_none()
            && entry.kind == EntryKind::File
            && super::family_marker::family_of_marker(&entry.path).is_some()
        {
            let mut bytes = Vec::new();
            body.read_to_end(&mut bytes)?;
            found = Some((entry.path.clone(), bytes));
        }
        Ok(())
    })?;
    Ok(found)
}

/// Read our .debs: control fields, and the marker from the one that ships it.
pub(crate) fn read_debs(debs: &[PathBuf]) -> anyhow::Result<(Vec<DebFacts>, Marker)> {
    let mut facts = Vec::new();
    let mut marker: Option<Marker> = None;
    for deb in debs {
        let abs = std::fs::canonicalize(deb)
            .with_context(|| format!("{}: no such .deb", deb.display()))?;
        let (_, control_files) = crate::deb::reader::read_control(&abs, &ReadLimits::default())
            .with_context(|| format!("{} is not a readable .deb", deb.display()))?;
        let ctl = control_files
            .iter()
            .find(|(name, _)| name == "control")
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .with_context(|| format!("{}: no control file", deb.display()))?;
        let e = status::parse_status(&ctl, &[rocm::COMMIT_FIELD, rocm::FAMILY_FIELD])
            .with_context(|| format!("{}: bad control file", deb.display()))?;
        let e = e
            .into_iter()
            .next()
            .with_context(|| format!("{}: empty control file", deb.display()))?;
        let Some(commit) = e.extra.get(rocm::COMMIT_FIELD).cloned() else {
            return Err(InstallError::DebSet(DebSetProblem::NotOurs {
                deb: deb.clone(),
                package: e.package,
            })
            .into());
        };
        let family = super::family_marker::family_of_control(deb, &e)?;
        if let Some(first) = facts
            .first()
            .filter(|f: &&DebFacts| f.family != family.name)
        {
            return Err(crate::exit::usage(format!(
                "{} is of the {} family, {} of the {} family: install one family at a time (rocm-pin install <the {} .debs>, then rocm-pin install <the {} .debs>)",
                deb.display(),
                family.name,
                first.path.display(),
                first.family,
                first.family,
                family.name
            )));
        }
        if let Some((member, bytes)) = marker_member(&abs)? {
            let m: Marker = serde_json::from_slice(&bytes)
                .with_context(|| format!("{}: bad marker {member}", deb.display()))?;
            marker = Some(m);
        }
        facts.push(DebFacts {
            path: abs,
            package: e.package.clone(),
            version: e.version.clone(),
            architecture: e.architecture.clone(),
            commit,
            protected: e.protected,
            stock_name: String::new(),
            stock_version: String::new(),
            family: family.name,
        });
    }
    let marker = marker.ok_or(InstallError::DebSet(DebSetProblem::NoMarker))?;
    for f in &mut facts {
        let Some(r) = marker.replaced.iter().find(|r| r.package == f.package) else {
            return Err(InstallError::DebSet(DebSetProblem::NotInMarker {
                deb: f.path.clone(),
                package: f.package.clone(),
                marker_commit: marker.commit.clone(),
            })
            .into());
        };
        if r.version != f.version || f.commit != marker.commit {
            return Err(InstallError::DebSet(DebSetProblem::DisagreesWithMarker {
                deb: f.path.clone(),
                version: f.version.clone(),
                commit: f.commit.clone(),
                marker_version: r.version.clone(),
                marker_commit: marker.commit.clone(),
            })
            .into());
        }
        f.stock_name = r.stock_name.clone();
        f.stock_version = r.stock_version.clone();
    }
    for r in &marker.replaced {
        if !facts.iter().any(|f| f.package == r.package) {
            return Err(InstallError::DebSet(DebSetProblem::NotGiven {
                package: r.package.clone(),
                version: r.version.clone(),
            })
            .into());
        }
    }
    Ok((facts, marker))
}

/// The .debs an earlier install kept in [`StateLayout::ours_dir`] under `root`, sorted; empty
/// when none are kept (never installed, `--no-rollback`, rolled back).
pub(crate) fn kept(root: &Root) -> Vec<PathBuf> {
    kept_in(root, &StateLayout::ours_dir())
}

/// The .debs kept in `dir` (a path inside `root`: the pair's kept directory or another
/// family's), sorted; empty when none. Read through the root, bounded.
pub(crate) fn kept_in(root: &Root, dir: &Path) -> Vec<PathBuf> {
    let Ok(names) = root.read_dir_names(dir, MAX_KEPT_ENTRIES) else {
        return Vec::new();
    };
    names
        .into_iter()
        .filter(|n| n.ends_with(".deb"))
        .map(|n| root.host_path(dir.join(n)))
        .collect()
}

/// Where the marker of `ours` (installed packages of ours, the marker gone) belongs, in the
/// flavour's words: `*/.info/rocm-pin.json` under AMD's prefix, the state directory on
/// Debian's packaging (which has no `.info/`). The flavour is told by the stock names ours
/// replace (`hsa-rocr-pinned` is AMD's naming).
pub(crate) fn marker_path_shown(ours: &[&status::StatusEntry]) -> String {
    let amd = match rocm::flavour_spec(rocm::StockFlavour::Amd).naming {
        rocm::StockNaming::PerHalf { hsa, hip } => ours.iter().any(|e| {
            let stock = e.package.strip_suffix("-pinned").unwrap_or(&e.package);
            stock.starts_with(hsa) || stock.starts_with(hip)
        }),
        rocm::StockNaming::PerLibrary => false,
    };
    if amd {
        format!("*/{}", rocm::MARKER_RELPATH)
    } else {
        format!("{}/<architecture>.json", StateLayout::MARKER_DIR)
    }
}

/// The one line for replacements whose stock is not installed (sid's `apt install
/// libamdhip64-6` does not pull `libhiprtc6`): the exact `apt-get install` of the stock
/// versions they provide, which makes the host pinnable.
pub(crate) fn absent_stock_refusal(absent: &[&DebFacts]) -> String {
    let exact: Vec<String> = absent
        .iter()
        .map(|f| format!("{}={}", f.stock_name, f.stock_version))
        .collect();
    let ours: Vec<&str> = absent.iter().map(|f| f.package.as_str()).collect();
    format!(
        "stock {} not installed: nothing for {} to replace (each provides exactly that version); install the stock first: `apt-get install {}`, then run rocm-pin install again",
        exact.join(", "),
        ours.join(", "),
        exact.join(" ")
    )
}

/// The most entries [`kept`] reads from the directory (it holds one .deb per package of ours).
const MAX_KEPT_ENTRIES: usize = 64;

/// The repair command for a host whose packages of ours are damaged or gone: `rocm-pin
/// install` alone when an earlier install kept our .debs (it reinstalls them), else with the
/// .debs to give.
pub(crate) fn reinstall_command(root: &Root) -> &'static str {
    if kept(root).is_empty() {
        "rocm-pin install <our .debs, as made by rocm-pin package>"
    } else {
        "rocm-pin install"
    }
}

/// Keep copies of our .debs (`debs`, just installed) in [`StateLayout::ours_dir`], replacing
/// what an earlier install kept. The copies are written beside and renamed into place, so an
/// interrupted keep leaves the previous set or the new one, never a half-written .deb.
pub(crate) fn keep(root: &Root, debs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    keep_into(&root.host_path(StateLayout::ours_dir()), debs, kept(root))
}

/// Copy `debs` into `dir` (a host path of our state directory), each written beside and
/// renamed into place, and remove what was kept there before (`before`) and is not among
/// them: the pair's kept .debs and each other family's.
pub(crate) fn keep_into(
    dir: &Path,
    debs: &[PathBuf],
    before: Vec<PathBuf>,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut kept_now = Vec::new();
    for deb in debs {
        let name = deb
            .file_name()
            .with_context(|| format!("{} has no file name", deb.display()))?;
        let dest = dir.join(name);
        if std::fs::canonicalize(deb).ok() != std::fs::canonicalize(&dest).ok() {
            let tmp = dir.join(format!(".{}.part", name.to_string_lossy()));
            std::fs::copy(deb, &tmp)
                .with_context(|| format!("cannot copy {} to {}", deb.display(), tmp.display()))?;
            std::fs::rename(&tmp, &dest).with_context(|| {
                format!("cannot rename {} to {}", tmp.display(), dest.display())
            })?;
        }
        kept_now.push(dest);
    }
    for old in before {
        if !kept_now.contains(&old) {
            std::fs::remove_file(&old)
                .with_context(|| format!("cannot remove {}", old.display()))?;
        }
    }
    Ok(kept_now)
}

/// Remove the kept .debs (rollback: ours leave the host). True when there were some.
pub(crate) fn forget(root: &Root) -> anyhow::Result<bool> {
    // The pair's .debs only: another family's are kept in a directory of their own in there
    // (`install_family::ours_dir`) and leave with that family.
    let debs = kept(root);
    for deb in &debs {
        std::fs::remove_file(deb).with_context(|| format!("cannot remove {}", deb.display()))?;
    }
    let _ = std::fs::remove_dir(root.host_path(StateLayout::ours_dir()));
    Ok(!debs.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rocm::ReplacedPackage;

    const PREFIX: &str = "/opt/rocm-7.2.4";

    fn marker(commit: &str) -> Marker {
        let replaced = |stock: &str, package: &str| ReplacedPackage {
            stock_name: stock.into(),
            stock_version: "1.0".into(),
            architecture: "amd64".into(),
            package: package.into(),
            version: "1.0+pin1".into(),
        };
        Marker {
            commit: commit.into(),
            commit_time: 0,
            suffix: "test".into(),
            prefix: PREFIX.into(),
            replaced: vec![
                replaced("hsa-rocr", "hsa-rocr-pinned"),
                replaced("hip-runtime-amd", "hip-runtime-amd-pinned"),
            ],
            libraries: vec![],
            files: Default::default(),
            tool_version: "0".into(),
            patches: vec![],
            backport_check_skipped: false,
            missing_symbols: Default::default(),
            source: None,
        }
    }

    /// One of our .debs: `package` at `version`, with our commit field when `commit` is given
    /// and the marker when `marker` is.
    fn deb(
        dir: &Path,
        package: &str,
        version: &str,
        commit: Option<&str>,
        marker: Option<&Marker>,
    ) -> PathBuf {
        let extra = commit
            .map(|c| format!("{}: {c}\n", rocm::COMMIT_FIELD))
            .unwrap_or_default();
        let marker_path = format!("{}/{}", &PREFIX[1..], rocm::MARKER_RELPATH);
        let marker_bytes = marker.map(|m| serde_json::to_vec(m).unwrap());
        let mut files: Vec<(&str, &[u8])> = vec![("opt/rocm-7.2.4/.info/README", b"x\n")];
        if let Some(bytes) = &marker_bytes {
            files.push((&marker_path, bytes));
        }
        crate::ops::repo::tests::small_deb(dir, package, version, &extra, &files)
    }

    fn problem(debs: &[PathBuf]) -> DebSetProblem {
        let err = read_debs(debs).unwrap_err();
        assert_eq!(crate::error::exit_code_for(&err), 2, "{err}");
        match err.downcast_ref::<InstallError>() {
            Some(InstallError::DebSet(p)) => p.clone(),
            other => panic!("not DebSet: {other:?} ({err})"),
        }
    }

    #[test]
    fn only_one_matching_pair_from_one_package_run_is_accepted() {
        let d = tempfile::tempdir().unwrap();
        let m = marker("c1");
        let hsa = deb(
            d.path(),
            "hsa-rocr-pinned",
            "1.0+pin1",
            Some("c1"),
            Some(&m),
        );
        let hip = deb(
            d.path(),
            "hip-runtime-amd-pinned",
            "1.0+pin1",
            Some("c1"),
            None,
        );
        let (facts, got) = read_debs(&[hsa.clone(), hip.clone()]).unwrap();
        assert_eq!((facts.len(), got.commit.as_str()), (2, "c1"));
        assert_eq!(facts[1].stock_name, "hip-runtime-amd");

        let stock = deb(d.path(), "hsa-rocr", "1.0", None, None);
        assert!(matches!(
            problem(std::slice::from_ref(&stock)),
            DebSetProblem::NotOurs { deb, package } if deb == stock && package == "hsa-rocr"
        ));
        assert_eq!(problem(std::slice::from_ref(&hip)), DebSetProblem::NoMarker);
        assert_eq!(
            problem(std::slice::from_ref(&hsa)),
            DebSetProblem::NotGiven {
                package: "hip-runtime-amd-pinned".into(),
                version: "1.0+pin1".into()
            }
        );
        let other = deb(d.path(), "other-pinned", "1.0+pin1", Some("c1"), None);
        assert!(matches!(
            problem(&[hsa.clone(), other]),
            DebSetProblem::NotInMarker { package, marker_commit, .. }
                if package == "other-pinned" && marker_commit == "c1"
        ));
        let newer = deb(
            d.path(),
            "hip-runtime-amd-pinned",
            "1.0+pin2",
            Some("c2"),
            None,
        );
        assert!(matches!(
            problem(&[hsa, newer]),
            DebSetProblem::DisagreesWithMarker { version, commit, marker_version, marker_commit, .. }
                if version == "1.0+pin2" && commit == "c2" && marker_version == "1.0+pin1"
                    && marker_commit == "c1"
        ));
    }
}
