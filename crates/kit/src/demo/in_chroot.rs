//! The demo's steps inside the Debian chroot: shell runs logged per step, the stock host's
//! install, our signed repository added to apt, installs from it, the loader probe's check of
//! which runtime each library loads, and the downstream apt commands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{bail, Context};

use crate::sandbox::Sandbox;
use crate::standin::{self, scenarios, StockRole, StockSet};
use rocm_pin_core::ops::repo;
use rocm_pin_core::progress::Listener;

/// Inside the chroot.
pub(super) const REPO_CHROOT_DIR: &str = "/srv/rocm-pin-repo";
pub(super) const KEYRING_CHROOT_PATH: &str = "/usr/share/keyrings/rocm-pin-demo.gpg";
pub(super) const SOURCES_CHROOT_PATH: &str = "/etc/apt/sources.list.d/rocm-pin-demo.list";
/// Where `apt-get download` puts our packages: owned by `_apt`, so apt downloads sandboxed.
pub(super) const OURS_CHROOT_DIR: &str = "/var/tmp/rocm-pin-debs";
pub(super) const CUSTOM_CHROOT_DIR: &str = "/root/custom";

/// The stock host's packages installed before rocm-pin (hipblas is left for a downstream step).
pub(super) const STOCK_HOST_ROLES: &[StockRole] = &[
    StockRole::RocmHipRuntime,
    StockRole::HipDev,
    StockRole::Rccl,
    StockRole::RocmSmiLib,
];
/// Packages that depend on the runtime and must still be installed after every step.
pub(super) const DEPENDANT_ROLES: &[StockRole] = &[
    StockRole::RocmHipRuntime,
    StockRole::HipDev,
    StockRole::Rccl,
];

/// Everything made outside the chroot, in the work directory.
pub(super) struct Made {
    pub(super) commit: String,
    pub(super) sonames: Vec<String>,
    pub(super) stock: StockSet,
    pub(super) custom: StockSet,
    pub(super) newer: StockSet,
    pub(super) probe: PathBuf,
    /// Our package names (hsa-rocr-pinned, hip-runtime-amd-pinned).
    pub(super) ours: Vec<String>,
    pub(super) repo: PathBuf,
    pub(super) keyring: PathBuf,
}

/// Run a shell script in the chroot, appending the command and its output to `log`.
pub(super) fn chroot_sh(sb: &Sandbox, log: &Path, script: &str) -> anyhow::Result<Output> {
    let out = sb.sh(script)?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    writeln!(
        f,
        "$ {}\n{}{}[exit {}]\n",
        script.replace('\n', "\n$ "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        out.status.code().unwrap_or(-1)
    )
    .with_context(|| format!("writing {}", log.display()))?;
    Ok(out)
}

/// Like [`chroot_sh`], Err naming the command, its exit status, the log and its output's tail
/// unless it exits 0. Returns stdout.
pub(super) fn chroot_sh_ok(sb: &Sandbox, log: &Path, script: &str) -> anyhow::Result<String> {
    let out = chroot_sh(sb, log, script)?;
    if !out.status.success() {
        bail!(
            "`{}` failed in the chroot ({}); full output in {}:\n{}",
            script.replace('\n', "; "),
            out.status,
            log.display(),
            tail(&out, 25)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(super) fn tail(out: &Output, n: usize) -> String {
    rocm_pin_core::process::output_tail(out, n)
}

pub(super) fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .take(6)
        .collect::<Vec<_>>()
        .join("-")
}

/// After `rocm-pin install` and after every downstream command: `rocm-pin verify` inside the
/// chroot passes, the loader maps the patched library for every soname, the dependants are
/// still installed. Err names what does not hold.
pub(super) fn check_patched(
    sb: &Sandbox,
    made: &Made,
    log: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    let verify = chroot_sh(sb, log, "rocm-pin verify")?;
    if verify.status.success() {
        listener.info("rocm-pin verify (in the chroot): all checks pass");
    } else {
        problems.push(format!(
            "`rocm-pin verify` in the chroot failed ({}):\n{}",
            verify.status,
            tail(&verify, 30)
        ));
    }
    let names: Vec<&str> = made.sonames.iter().map(String::as_str).collect();
    let (lines, _) = standin::chroot::run_probe(sb, &names)?;
    for l in &lines {
        let identity = l.identity.as_deref().unwrap_or("NOT LOADED");
        listener.info(&format!(
            "loader: {} -> {} ({identity})",
            l.soname,
            l.real_path.as_deref().unwrap_or("-")
        ));
        if !identity.contains("-PATCHED-") {
            problems.push(format!(
                "the dynamic loader maps {} from {} ({identity}), not the patched library",
                l.soname,
                l.real_path.as_deref().unwrap_or("nowhere")
            ));
        }
    }
    let deps: Vec<String> = DEPENDANT_ROLES
        .iter()
        .filter_map(|r| made.stock.package(*r).map(|p| p.name.clone()))
        .collect();
    let states = chroot_sh_ok(
        sb,
        log,
        &format!(
            "dpkg-query -W -f '${{binary:Package}} ${{db:Status-Abbrev}}\\n' {}",
            deps.join(" ")
        ),
    )?;
    let broken: Vec<&str> = states
        .lines()
        .filter(|l| !l.trim_end().ends_with("ii"))
        .collect();
    if !broken.is_empty() {
        problems.push(format!(
            "dependants not installed any more: {}",
            broken.join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{} (log: {})", problems.join("\n"), log.display())
    }
}

/// The stock ROCm host: the stand-in stock set from its repository, and the loader mapping
/// the stock pair (the demo shows a change only if the stock library is what it starts from).
pub(super) fn install_stock_host(
    sb: &Sandbox,
    made: &Made,
    log: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    standin::chroot::publish(sb, "stock", &made.stock)?;
    let stock_names: Vec<String> = STOCK_HOST_ROLES
        .iter()
        .filter_map(|r| made.stock.package(*r).map(|p| p.name.clone()))
        .collect();
    chroot_sh_ok(
        sb,
        log,
        &format!("apt-get install -y -q {}", stock_names.join(" ")),
    )?;
    standin::chroot::install_probe(sb, &made.probe)?;
    let names: Vec<&str> = made.sonames.iter().map(String::as_str).collect();
    let (lines, _) = standin::chroot::run_probe(sb, &names)?;
    for l in &lines {
        let identity = l.identity.as_deref().unwrap_or("NOT LOADED");
        listener.info(&format!(
            "before: loader maps {} -> {} ({identity})",
            l.soname,
            l.real_path.as_deref().unwrap_or("-"),
        ));
        if !identity.contains("-STOCK-") {
            bail!(
                "the stock host's loader maps {} to {identity}, not the stand-in stock library",
                l.soname
            );
        }
    }
    Ok(())
}

/// Our signed repository, trusted only through its key (signed-by=), no trusted=yes.
pub(super) fn add_signed_repo(
    sb: &Sandbox,
    made: &Made,
    log: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    sb.copy_in(&made.repo, REPO_CHROOT_DIR)?;
    sb.copy_in(&made.keyring, KEYRING_CHROOT_PATH)?;
    sb.write(
        SOURCES_CHROOT_PATH,
        format!(
            "deb [signed-by={KEYRING_CHROOT_PATH}] file:{REPO_CHROOT_DIR} {} {}\n",
            repo::DEFAULT_SUITE,
            repo::DEFAULT_COMPONENT
        ),
    )?;
    let update = chroot_sh_ok(
        sb,
        log,
        &format!("chmod -R a+rX {REPO_CHROOT_DIR}\napt-get update"),
    )?;
    if update.contains("W:") || update.contains("E:") || update.contains("Err:") {
        bail!(
            "apt-get update did not accept the signed repository cleanly (log {}):\n{update}",
            log.display()
        );
    }
    listener.info(&format!(
        "signed repository {REPO_CHROOT_DIR} added with signed-by={KEYRING_CHROOT_PATH}"
    ));
    Ok(())
}

/// `rocm-pin install --mode require` of our packages, downloaded from the signed repository.
pub(super) fn install_from_repo(
    sb: &Sandbox,
    made: &Made,
    log: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    chroot_sh_ok(
        sb,
        log,
        &format!(
            "install -d -o _apt -m 0755 {OURS_CHROOT_DIR}\ncd {OURS_CHROOT_DIR}\n\
             apt-get download {}",
            made.ours.join(" ")
        ),
    )?;
    let out = chroot_sh_ok(
        sb,
        log,
        &format!("rocm-pin install --mode require {OURS_CHROOT_DIR}/*.deb"),
    )?;
    if let Some(last) = out.lines().last() {
        listener.info(last);
    }
    check_patched(sb, made, log, listener)
}

/// One downstream scenario in the chroot; the patched pair must still be what the loader maps.
pub(super) fn downstream_step(
    sb: &Sandbox,
    made: &Made,
    d: &scenarios::Scenario,
    log: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    if d.newer_stock {
        standin::chroot::publish(sb, "stock", &made.newer)?;
        listener.info(&format!(
            "published the newer stock release ({} {}) in the stock repository",
            made.newer.require(StockRole::HipRuntime)?.name,
            made.newer.require(StockRole::HipRuntime)?.version
        ));
    }
    let out = chroot_sh(sb, log, &d.script)?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}); log {}:\n{}",
            d.script.replace('\n', "; "),
            out.status,
            log.display(),
            tail(&out, 25)
        );
    }
    if let Some(show) = &d.show {
        let shown = chroot_sh_ok(sb, log, &show.command)?;
        listener.info(&format!("{}: {shown}", show.label));
    }
    check_patched(sb, made, log, listener)
}

/// Move a directory tree: rename when on the same filesystem, else `mv` (copies and removes).
pub(super) fn move_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    let out = Command::new("mv")
        .arg(from)
        .arg(to)
        .output()
        .context("running mv")?;
    if !out.status.success() {
        bail!(
            "mv {} {} failed: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
