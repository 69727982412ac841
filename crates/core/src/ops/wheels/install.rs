//! `rocm-pin install --venv DIR WHEEL` and `rocm-pin rollback --venv DIR`: our `rocm-sdk-core`
//! installed offline with the venv's own pip, the pin written (pin.rs), the devel tree's hard
//! links re-made to the new files; and the way back, offline too.
//!
//! Gates, as on the .deb side: the version gate (the venv's `rocm-sdk-core` is the stock
//! version our wheel was made from) and the exact-stock gate (every file of the installed
//! stock distribution is what its RECORD says, checked while its wheel is rebuilt for
//! rollback). pip runs with `PIP_CONFIG_FILE=/dev/null`, so no earlier pin or user setting
//! decides what it installs; the pin is written only after pip succeeded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::host::root::Root;
use crate::rocm::wheels::{
    self, InstalledDist, WheelStock, CORE_DIST, CORE_LIB_DIR, DEVEL_LIB_DIR,
};
use crate::wheel::normalize_name;

use super::package::write_wheel;
use super::pin::{ensure_ours_or_absent, PinLayout};
use super::rebuild::{rebuild_wheel, wheel_identity};

/// How long one pip run may take.
const PIP_LIMIT: Duration = Duration::from_secs(600);

/// What install did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VenvInstall {
    pub installed: String,
    pub replaced: String,
    pub stock_wheel: PathBuf,
    pub relinked: Vec<String>,
}

/// Our wheel, read and judged.
struct OurWheel {
    path: PathBuf,
    file_name: String,
    version: String,
    stock_version: String,
}

fn read_our_wheel(path: &Path) -> anyhow::Result<OurWheel> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let (name, version, commit) =
        wheel_identity(&bytes).with_context(|| format!("{}", path.display()))?;
    if normalize_name(&name) != CORE_DIST {
        bail!("{} is {name}, not {CORE_DIST}: install --venv takes the wheel `rocm-pin package --wheels` made", path.display());
    }
    let Some((stock, c12)) = wheels::split_pinned_version(&version) else {
        bail!(
            "{} is {name} {version}, not one of ours (version <stock>+pin.<commit>)",
            path.display()
        );
    };
    if !commit.as_deref().is_some_and(|c| c.starts_with(c12)) {
        bail!(
            "{}: its METADATA commit field does not match its version {version}",
            path.display()
        );
    }
    Ok(OurWheel {
        path: path.to_path_buf(),
        file_name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        stock_version: stock.to_string(),
        version,
    })
}

/// The venv's own Python (`DIR/bin/python`), which must exist.
fn venv_python(venv: &Path) -> anyhow::Result<PathBuf> {
    let python = venv.join("bin/python");
    if !python.exists() {
        bail!(
            "{} has no bin/python: not a virtual environment",
            venv.display()
        );
    }
    Ok(python)
}

/// `python -m pip install --no-index --force-reinstall --no-deps WHEEL`, no pip configuration read.
fn pip_install_offline(python: &Path, wheel: &Path) -> anyhow::Result<()> {
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--no-index",
        "--force-reinstall",
        "--no-deps",
        "--disable-pip-version-check",
        "-q",
    ])
    .arg(wheel)
    .env("PIP_CONFIG_FILE", "/dev/null");
    let out = crate::process::run_bounded(&mut cmd, "pip install", PIP_LIMIT)?;
    if !out.status.success() {
        bail!(
            "`{} -m pip install {}` failed: {}",
            python.display(),
            wheel.display(),
            crate::process::output_tail(&out, 12)
        );
    }
    Ok(())
}

/// Install our `rocm-sdk-core` wheel into the venv `venv` and write the pin.
pub fn install_venv(venv: &Path, wheel: &Path) -> anyhow::Result<VenvInstall> {
    let venv = std::path::absolute(venv).with_context(|| format!("{}", venv.display()))?;
    let python = venv_python(&venv)?;
    let ours = read_our_wheel(wheel)?;
    let root = Root::new(&venv);
    let found = wheels::discover_venv(&root, Path::new("/"))?;
    let core = found.core.as_ref().with_context(|| {
        format!(
            "{} has no {CORE_DIST}: install the stock ROCm wheels first",
            venv.display()
        )
    })?;
    let layout = PinLayout { venv: venv.clone() };
    let installed_stock =
        wheels::split_pinned_version(&core.version).map_or(core.version.as_str(), |(s, _)| s);
    if installed_stock != ours.stock_version {
        bail!(
            "version gate: {} has {CORE_DIST} {} but {} was made from {}; make the replacement from this venv: rocm-pin package --wheels --staging <build> --stock-venv {} --out <dir>",
            venv.display(), core.version, ours.file_name, ours.stock_version, venv.display()
        );
    }
    for conf in ["pip.conf", "uv.toml"] {
        ensure_ours_or_absent(&root, conf)?;
    }
    // The exact-stock gate: the stock wheel is rebuilt from the installed files, each checked
    // against RECORD; kept for rollback. With ours installed already, the one kept earlier.
    make_state_dirs(&layout)?;
    let stock_wheel = if core.is_ours() {
        existing_stock_wheel(&layout, core)?
    } else {
        let rebuilt = rebuild_wheel(&root, core, None, 315_532_800).context("exact-stock gate")?;
        write_wheel(&layout.stock(), &rebuilt)?
    };
    let kept = layout.wheelhouse().join(&ours.file_name);
    if ours.path != kept {
        std::fs::copy(&ours.path, &kept)
            .with_context(|| format!("copying {} into {}", ours.path.display(), kept.display()))?;
    }
    pip_install_offline(&python, &kept)?;
    write_pin(&layout, &ours.version)?;
    let after = wheels::discover_venv(&root, Path::new("/"))?;
    let relinked = relink_devel(&root, &after)?;
    Ok(VenvInstall {
        installed: format!("{CORE_DIST} {}", ours.version),
        replaced: format!("{CORE_DIST} {}", core.version),
        stock_wheel,
        relinked,
    })
}

fn existing_stock_wheel(layout: &PinLayout, core: &InstalledDist) -> anyhow::Result<PathBuf> {
    let (stock, _) = wheels::split_pinned_version(&core.version).context("not ours")?;
    let name = crate::wheel::wheel_file_name(&core.name, stock, &core.wheel.tags)?;
    let path = layout.stock().join(&name);
    if !path.is_file() {
        bail!("{} holds our {CORE_DIST} {} but not the stock wheel {} rollback needs; reinstall stock (`pip install --force-reinstall --no-deps {CORE_DIST}=={stock}` with PIP_CONFIG_FILE=/dev/null), then install again", layout.venv.display(), core.version, path.display());
    }
    Ok(path)
}

/// Write the constraint, pip.conf and uv.toml for `pinned`, each through a new temporary
/// file renamed over the old (a symlink planted at the name is replaced, never followed).
fn write_pin(layout: &PinLayout, pinned: &str) -> anyhow::Result<()> {
    let write = |path: PathBuf, text: String| -> anyhow::Result<()> {
        use std::io::Write;
        let tmp = path.with_extension("rocm-pin-tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("writing {}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
    };
    write(layout.constraints(), PinLayout::constraints_text(pinned))?;
    write(layout.pip_conf(), layout.pip_conf_text())?;
    write(layout.uv_toml(), layout.uv_toml_text(pinned))
}

/// Make our state directory in the venv, refusing one that is a symlink (it would send our
/// files elsewhere).
fn make_state_dirs(layout: &PinLayout) -> anyhow::Result<()> {
    let share = layout.venv.join("share");
    for dir in [share, layout.state(), layout.wheelhouse(), layout.stock()] {
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("creating {}", dir.display()))
            }
            _ => {}
        }
        if !std::fs::symlink_metadata(&dir)?.is_dir() {
            bail!("{} is not a directory (a symlink?); rocm-pin keeps its wheels in a real directory of the venv: remove it, then run this again", dir.display());
        }
    }
    Ok(())
}

/// Make each runtime library of the devel tree a hard link of the core's file of its family
/// again (what `rocm-sdk init` makes on a fresh expansion); returns the paths re-linked.
fn relink_devel(root: &Root, found: &WheelStock) -> anyhow::Result<Vec<String>> {
    let (Some(core), Some(devel)) = (&found.core, &found.devel) else {
        return Ok(Vec::new());
    };
    let core_libs = core.runtime_libraries(CORE_LIB_DIR);
    let mut relinked = Vec::new();
    for (entry, family) in devel.runtime_libraries(DEVEL_LIB_DIR) {
        let Some((core_entry, _)) = core_libs.iter().find(|(_, f)| f.stem == family.stem) else {
            continue;
        };
        let target = root.host_path_of_entry(devel.path_of(&entry.path))?;
        let source = root.host_path_of_entry(core.path_of(&core_entry.path))?;
        if !target.exists() {
            continue; // not expanded yet: `rocm-sdk init` will link the new file
        }
        let tmp = target.with_extension("rocm-pin-tmp");
        let _ = std::fs::remove_file(&tmp);
        std::fs::hard_link(&source, &tmp)
            .with_context(|| format!("linking {} to {}", tmp.display(), source.display()))?;
        std::fs::rename(&tmp, &target)
            .with_context(|| format!("replacing {}", target.display()))?;
        relinked.push(entry.path.clone());
    }
    Ok(relinked)
}

/// Put the stock `rocm-sdk-core` back offline and remove the pin.
pub fn rollback_venv(venv: &Path) -> anyhow::Result<VenvInstall> {
    let venv = std::path::absolute(venv).with_context(|| format!("{}", venv.display()))?;
    let python = venv_python(&venv)?;
    let root = Root::new(&venv);
    let found = wheels::discover_venv(&root, Path::new("/"))?;
    let layout = PinLayout { venv: venv.clone() };
    let core = found
        .core
        .as_ref()
        .with_context(|| format!("{} has no {CORE_DIST}", venv.display()))?;
    let stock_wheel = if core.is_ours() {
        existing_stock_wheel(&layout, core)?
    } else {
        let names = std::fs::read_dir(layout.stock()).with_context(|| {
            format!(
                "{} holds no stock wheel kept by install --venv",
                layout.venv.display()
            )
        })?;
        names
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .context("no stock wheel kept")?
    };
    for conf in ["pip.conf", "uv.toml"] {
        ensure_ours_or_absent(&root, conf)?;
    }
    pip_install_offline(&python, &stock_wheel)?;
    for path in [layout.pip_conf(), layout.uv_toml(), layout.constraints()] {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", path.display()))
            }
            _ => {}
        }
    }
    let after = wheels::discover_venv(&root, Path::new("/"))?;
    let relinked = relink_devel(&root, &after)?;
    Ok(VenvInstall {
        installed: after
            .core
            .map(|c| format!("{} {}", c.name, c.version))
            .unwrap_or_default(),
        replaced: format!("{} {}", core.name, core.version),
        stock_wheel,
        relinked,
    })
}
