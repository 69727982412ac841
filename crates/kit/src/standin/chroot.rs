//! The stand-in set inside a [`Sandbox`]: publish it as a local apt repository, install it the
//! way a stock ROCm host has it, and run the loader probe there.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::{parse_probe_output, ProbeLine, StockRole, StockSet};
use crate::sandbox::{LocalRepo, Sandbox};

/// Where [`install_probe`] puts the loader probe inside a chroot.
pub const PROBE_CHROOT_PATH: &str = "/usr/local/bin/rocm-pin-loader-probe";

/// Publish the set's repository .debs (everything but `dpkg -i`-only packages such as the
/// custom rccl) as the trusted local repository `name` in `sandbox`, and `apt-get update`.
/// Publishing another set under the same name adds its packages (a newer stock release).
pub fn publish(sandbox: &Sandbox, name: &str, set: &StockSet) -> anyhow::Result<LocalRepo> {
    let staging = tempfile::Builder::new()
        .prefix("rocm-pin-standin-repo-")
        .tempdir()
        .context("creating a temporary directory for the repository .debs")?;
    let debs = set.repository_debs();
    if debs.is_empty() {
        bail!(
            "the stand-in set in {} has no packages to publish",
            set.out_dir.display()
        );
    }
    for deb in debs {
        let file_name = deb
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{} has no file name", deb.display()))?;
        std::fs::copy(&deb, staging.path().join(file_name))
            .with_context(|| format!("copying {}", deb.display()))?;
    }
    sandbox.add_local_repo(name, staging.path())
}

/// The packages a stock ROCm runtime host has installed on purpose: the meta and the
/// dependants (`rocm-hip-runtime hip-dev rccl hipblas` under the set's naming). apt pulls in
/// rocm-core, hsa-rocr and hip-runtime-amd.
pub fn stock_install_names(set: &StockSet) -> Vec<String> {
    [
        StockRole::RocmHipRuntime,
        StockRole::HipDev,
        StockRole::Rccl,
        StockRole::Hipblas,
    ]
    .into_iter()
    .filter_map(|r| set.package(r).map(|p| p.name.clone()))
    .collect()
}

/// `apt-get install -y` the stock host's packages ([`stock_install_names`]) from a repository
/// made by [`publish`]; Err with apt's output when it fails.
pub fn install_stock(sandbox: &Sandbox, set: &StockSet) -> anyhow::Result<()> {
    let names = stock_install_names(set);
    if names.is_empty() {
        bail!("the stand-in set has no meta or dependant packages to install");
    }
    let mut argv = vec!["apt-get", "install", "-y", "-q"];
    argv.extend(names.iter().map(String::as_str));
    sandbox
        .run_ok(&argv)
        .with_context(|| format!("installing the stand-in stock set: {}", names.join(" ")))?;
    Ok(())
}

/// Copy a probe built by [`super::build_loader_probe`] into the chroot at [`PROBE_CHROOT_PATH`].
pub fn install_probe(sandbox: &Sandbox, probe: &Path) -> anyhow::Result<PathBuf> {
    sandbox.copy_in(probe, PROBE_CHROOT_PATH)?;
    Ok(PathBuf::from(PROBE_CHROOT_PATH))
}

/// Run the probe inside the chroot for `sonames` (no LD_LIBRARY_PATH: the loader's own
/// configuration decides). Returns one line per soname and whether all of them loaded.
pub fn run_probe(sandbox: &Sandbox, sonames: &[&str]) -> anyhow::Result<(Vec<ProbeLine>, bool)> {
    let mut argv = vec![PROBE_CHROOT_PATH];
    argv.extend_from_slice(sonames);
    let out = sandbox.run(&argv)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines = parse_probe_output(&stdout).with_context(|| {
        format!(
            "loader probe in {} (stderr: {})",
            sandbox.root().display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    if lines.len() != sonames.len() {
        bail!(
            "loader probe printed {} lines for {} sonames (exit {}): {}",
            lines.len(),
            sonames.len(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok((lines, out.status.success()))
}

/// A sandbox made to look like a stock ROCm host in one call: the set published as the local
/// repository `stock`, the stock host's packages installed ([`install_stock`]) and the probe
/// copied in ([`install_probe`]).
pub fn prepare_stock_host(
    sandbox: &Sandbox,
    set: &StockSet,
    probe: &Path,
) -> anyhow::Result<LocalRepo> {
    let repo = publish(sandbox, "stock", set)?;
    install_stock(sandbox, set)?;
    install_probe(sandbox, probe)?;
    Ok(repo)
}
