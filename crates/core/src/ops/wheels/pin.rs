//! The pin of a venv: what `install --venv` writes so that pip and uv keep our `rocm-sdk-core`,
//! and the check `verify --venv` runs that it is in force.
//!
//! - `DIR/share/rocm-pin/wheelhouse/`: our wheels (pip's and uv's `find-links`);
//! - `DIR/share/rocm-pin/stock/`: the stock wheels rebuilt from the venv (rollback's, offline;
//!   never on a find-links path);
//! - `DIR/share/rocm-pin/constraints.txt`: `rocm-sdk-core==<stock>+pin.<commit12>`;
//! - `DIR/pip.conf` (`[install]` `find-links`, `constraint`): pip reads `sys.prefix/pip.conf`,
//!   so every pip of this venv applies it;
//! - `DIR/uv.toml` (`find-links`, `constraint-dependencies`): uv reads it when it runs in DIR
//!   or is given it (`UV_CONFIG_FILE`, or copied to `/etc/uv/uv.toml` in an image); uv has no
//!   per-venv configuration.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::host::root::{FileKind, Root};
use crate::rocm::wheels::{self, WheelStock, CORE_DIST, CORE_LIB_DIR, DEVEL_LIB_DIR};
use crate::wheel::RecordEntry;

/// First line of every configuration file we write: ours to replace and remove.
pub const OURS_HEADER: &str =
    "# Written by rocm-pin (install --venv); `rocm-pin rollback --venv` removes it.";

/// The pin's paths for the venv whose absolute path (as its programs see it) is `venv`.
#[derive(Debug, Clone)]
pub struct PinLayout {
    pub venv: PathBuf,
}

impl PinLayout {
    pub fn state(&self) -> PathBuf {
        self.venv.join("share/rocm-pin")
    }
    pub fn wheelhouse(&self) -> PathBuf {
        self.state().join("wheelhouse")
    }
    pub fn stock(&self) -> PathBuf {
        self.state().join("stock")
    }
    pub fn constraints(&self) -> PathBuf {
        self.state().join("constraints.txt")
    }
    pub fn pip_conf(&self) -> PathBuf {
        self.venv.join("pip.conf")
    }
    pub fn uv_toml(&self) -> PathBuf {
        self.venv.join("uv.toml")
    }

    pub fn constraints_text(pinned: &str) -> String {
        format!("{OURS_HEADER}\n{CORE_DIST}=={pinned}\n")
    }

    pub fn pip_conf_text(&self) -> String {
        format!(
            "{OURS_HEADER}\n[install]\nfind-links = {}\nconstraint = {}\n",
            self.wheelhouse().display(),
            self.constraints().display()
        )
    }

    pub fn uv_toml_text(&self, pinned: &str) -> String {
        format!(
            "{OURS_HEADER}\nfind-links = [{:?}]\nconstraint-dependencies = [\"{CORE_DIST}=={pinned}\"]\n",
            self.wheelhouse().display().to_string()
        )
    }
}

/// One problem `verify` reports about a venv's pin: what, and the command that fixes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PinProblem {
    pub what: String,
    pub fix: String,
}

/// What `verify --venv` found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PinReport {
    pub venv: String,
    /// `name version` of every ROCm wheel distribution (and torch) installed.
    pub installed: Vec<String>,
    pub pinned_version: Option<String>,
    pub problems: Vec<PinProblem>,
}

/// Check that the pin is in force in the venv at `venv` (read through `root`, the venv at
/// in-root path `/` when `root` is the venv itself).
pub fn check_pin(
    root: &Root,
    venv_in_root: &Path,
    layout: &PinLayout,
) -> anyhow::Result<PinReport> {
    let found = wheels::discover_venv(root, venv_in_root)?;
    let mut report = PinReport {
        venv: layout.venv.display().to_string(),
        installed: installed_names(&found),
        pinned_version: None,
        problems: Vec::new(),
    };
    let reinstall = format!(
        "rocm-pin install --venv {} {}/rocm_sdk_core-*.whl",
        layout.venv.display(),
        layout.wheelhouse().display()
    );
    let Some(core) = &found.core else {
        report.problems.push(PinProblem {
            what: format!("no {CORE_DIST} is installed"),
            fix: reinstall,
        });
        return Ok(report);
    };
    if !core.is_ours() {
        report.problems.push(PinProblem {
            what: format!("{CORE_DIST} {} is the stock build, not ours (something reinstalled it past the pin, e.g. pip with PIP_CONFIG_FILE=/dev/null or uv without the venv's uv.toml)", core.version),
            fix: reinstall.clone(),
        });
    } else {
        report.pinned_version = Some(core.version.clone());
    }
    let in_root = |p: &Path| venv_in_root.join(p.strip_prefix(&layout.venv).unwrap_or(p));
    let expect = |path: PathBuf, want: String, report: &mut PinReport| match root
        .read_optional(in_root(&path), FileKind::Config)
    {
        Ok(Some(text)) if text == want => {}
        Ok(Some(_)) => report.problems.push(PinProblem {
            what: format!(
                "{} is not the pin rocm-pin wrote (changed by hand?)",
                path.display()
            ),
            fix: reinstall.clone(),
        }),
        Ok(None) => report.problems.push(PinProblem {
            what: format!("{} is missing: the pin is not in force", path.display()),
            fix: reinstall.clone(),
        }),
        Err(e) => report.problems.push(PinProblem {
            what: e.to_string(),
            fix: reinstall.clone(),
        }),
    };
    if core.is_ours() {
        expect(
            layout.constraints(),
            PinLayout::constraints_text(&core.version),
            &mut report,
        );
        expect(layout.pip_conf(), layout.pip_conf_text(), &mut report);
        expect(
            layout.uv_toml(),
            layout.uv_toml_text(&core.version),
            &mut report,
        );
        let name = crate::wheel::wheel_file_name(&core.name, &core.version, &core.wheel.tags)?;
        if !root.exists(in_root(&layout.wheelhouse().join(&name))) {
            report.problems.push(PinProblem {
                what: format!("the wheelhouse has no {name}: pip cannot reinstall ours offline"),
                fix: format!(
                    "rocm-pin install --venv {} <the wheel rocm-pin package made>",
                    layout.venv.display()
                ),
            });
        }
    }
    check_libraries(root, &found, &reinstall, &mut report);
    Ok(report)
}

fn installed_names(found: &WheelStock) -> Vec<String> {
    let mut names: Vec<String> = [&found.core, &found.devel]
        .into_iter()
        .flatten()
        .map(|d| format!("{} {}", d.name, d.version))
        .collect();
    names.extend(found.others.iter().cloned());
    names
}

/// The core's runtime libraries are what its RECORD says (nobody copied a file over them), and
/// the devel tree's copies are the same bytes.
fn check_libraries(root: &Root, found: &WheelStock, fix: &str, report: &mut PinReport) {
    let Some(core) = &found.core else { return };
    let mut core_hashes = Vec::new();
    for (entry, family) in core.runtime_libraries(CORE_LIB_DIR) {
        match root.read_file(core.path_of(&entry.path), FileKind::PackagedFile) {
            Ok(data) if entry.matches(&data) => {
                core_hashes.push((family.stem, RecordEntry::of("", &data).hash))
            }
            Ok(_) => report.problems.push(PinProblem {
                what: format!(
                    "{} was changed after {} {} installed it (its RECORD hash differs)",
                    entry.path, core.name, core.version
                ),
                fix: fix.to_string(),
            }),
            Err(e) => report.problems.push(PinProblem {
                what: e.to_string(),
                fix: fix.to_string(),
            }),
        }
    }
    let Some(devel) = &found.devel else { return };
    for (entry, family) in devel.runtime_libraries(DEVEL_LIB_DIR) {
        let Some((_, want)) = core_hashes.iter().find(|(s, _)| *s == family.stem) else {
            continue;
        };
        if let Ok(data) = root.read_file(devel.path_of(&entry.path), FileKind::PackagedFile) {
            if &RecordEntry::of("", &data).hash != want {
                report.problems.push(PinProblem {
                    what: format!("{} is not the {} of {CORE_LIB_DIR} (a stale hard link of an earlier rocm-sdk-core; programs under ROCM_PATH map it)", entry.path, family.stem),
                    fix: fix.to_string(),
                });
            }
        }
    }
}

/// Refuse to overwrite a configuration file someone else wrote (`name` in the venv that is
/// `root`).
pub fn ensure_ours_or_absent(root: &Root, name: &str) -> anyhow::Result<()> {
    match root.read_optional(format!("/{name}"), FileKind::Config)? {
        None => Ok(()),
        Some(text) if text.starts_with(OURS_HEADER) => Ok(()),
        Some(_) => bail!("{} exists and was not written by rocm-pin; move it aside (its settings would be lost), then run this again", root.host_path(name).display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_without_ours_fails_naming_the_stock_version_and_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let site = d.path().join("lib/python3.12/site-packages");
        crate::ops::fakehost::stock_core_dist_info(&site);
        let layout = PinLayout {
            venv: d.path().to_path_buf(),
        };
        let report = check_pin(&Root::new(d.path()), Path::new("/"), &layout).unwrap();
        assert_eq!(report.installed, ["rocm-sdk-core 10.0.0"]);
        assert_eq!(report.pinned_version, None);
        let [p] = report.problems.as_slice() else {
            panic!("{:?}", report.problems)
        };
        assert!(p.what.contains("10.0.0 is the stock build"), "{}", p.what);
        assert!(p.fix.starts_with("rocm-pin install --venv "), "{}", p.fix);
    }
}
