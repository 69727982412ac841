//! `rocm-pin rollback --family NAME` for a family other than the runtime pair (RCCL): the
//! stock packages its marker names put back and ours purged in one apt transaction, the same
//! transaction as the pair's (`super::rollback::swap_back`). The stock .debs are the ones
//! kept in /var/lib/rocm-pin/stock/ when there, else fetched with `apt-get download
//! <stock>=<version>` (an explicit version is fetched whatever the pin says). Nothing of the
//! pair is touched.

use std::path::PathBuf;

use anyhow::Context;

use super::install::deb_file_name;
use super::rollback::RollbackReport;
use crate::exit::usage;
use crate::host::layout::StateLayout;
use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::ops::verify::Check;
use crate::progress::{self, Listener};
use crate::rocm::{self, Marker, PinnedFamily};

/// Roll `family` back to its stock packages on the live system.
pub fn rollback_family(
    root: &Root,
    family: &'static PinnedFamily,
    lock_timeout: u32,
    listener: &dyn Listener,
) -> anyhow::Result<RollbackReport> {
    let command = format!("rocm-pin rollback --family {}", family.name);
    let entries = rocm::read_status(root)?;
    let ours: Vec<StatusEntry> = entries
        .iter()
        .filter(|e| rocm::is_ours_of(e, family) && e.has_files())
        .cloned()
        .collect();
    if ours.is_empty() {
        return Err(usage(format!(
            "no rocm-pin replacement of the {} family is installed: nothing to roll back",
            family.name
        )));
    }
    let marker = family_marker(root, family, &ours)?;
    super::install::live_system_only(root, &command)?;
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-rollback-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let mut debs: Vec<PathBuf> = vec![];
    for r in &marker.replaced {
        let kept = root.host_path(StateLayout::stock_dir()).join(deb_file_name(
            &r.stock_name,
            &r.stock_version,
            &r.architecture,
        ));
        if kept.exists() {
            debs.push(kept);
            continue;
        }
        debs.push(download(work.path(), r, listener)?);
    }
    let before: Vec<String> = installed_names(&entries);
    // The guard would judge the host between the swap and the hold rewrite: it leaves for the
    // apt run and comes back while a family of ours is left (it covers that one).
    let suspended = super::guard::Guard::suspend(root)?;
    if let Err(e) = super::rollback::swap_back(root, &ours, &debs, lock_timeout, listener) {
        if let Some(s) = suspended {
            let _ = s.restore(root);
        }
        return Err(e);
    }
    crate::host::loader::run_ldconfig(root)?;
    // The family's kept .debs leave with it; the hold keeps what the families left need.
    super::install_family::forget(root, family)?;
    let left = super::install_family::installed_families(&rocm::read_status(root)?);
    super::install_family::hold_for(root, &left, &marker)?;
    match suspended {
        Some(s) if !left.is_empty() => s.restore(root)?,
        Some(_) => {
            super::guard::Guard::disarm(root)?;
        }
        None => {}
    }
    let after_entries = rocm::read_status(root)?;
    let after = installed_names(&after_entries);
    let mut report = RollbackReport {
        stock_debs: debs.iter().map(|d| d.display().to_string()).collect(),
        purged: ours.iter().map(|e| e.package.clone()).collect(),
        removed: before.into_iter().filter(|n| !after.contains(n)).collect(),
        ..RollbackReport::default()
    };
    report.checks = checks(&marker, &ours, &report.removed, &after_entries);
    report.judged(&command)
}

/// `rocm-pin rollback` without `--family`: every family of ours installed, the pair first
/// (its rollback keeps the guard and the hold for the families left), then each other one.
/// The pair alone when nothing of ours is installed (its refusal says so).
pub fn rollback_all(
    root: &Root,
    lock_timeout: u32,
    listener: &dyn Listener,
) -> anyhow::Result<Vec<(&'static str, RollbackReport)>> {
    let families = super::install_family::installed_families(&rocm::read_status(root)?);
    let mut out = vec![];
    for family in families {
        let report = if family.name == rocm::families::RUNTIME.name {
            super::rollback::rollback(root, lock_timeout, listener)?
        } else {
            rollback_family(root, family, lock_timeout, listener)?
        };
        out.push((family.name, report));
    }
    if out.is_empty() {
        out.push((
            rocm::families::RUNTIME.name,
            super::rollback::rollback(root, lock_timeout, listener)?,
        ));
    }
    Ok(out)
}

fn installed_names(entries: &[StatusEntry]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e.has_files())
        .map(|e| e.package.clone())
        .collect()
}

/// The family's marker, found in our packages' file lists by its name.
fn family_marker(
    root: &Root,
    family: &'static PinnedFamily,
    ours: &[StatusEntry],
) -> anyhow::Result<Marker> {
    let is_marker = |p: &str| {
        p.ends_with(&format!("/.info/{}", family.marker_name))
            || p.strip_prefix(rocm::MARKER_STATE_DIR)
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|rest| rest.strip_prefix(family.prefixless_marker_stem))
                .is_some_and(|name| name.ends_with(".json") && !name.contains('/'))
    };
    for e in ours {
        let list = status::package_list(root, &e.package, &e.architecture)?;
        if let Some(p) = list.iter().find(|p| is_marker(p)) {
            let bytes = root.read_file(p, FileKind::Marker)?;
            return serde_json::from_slice(&bytes)
                .with_context(|| format!("{p} is not a rocm-pin marker"));
        }
    }
    Err(usage(format!(
        "the {} family's provenance marker is missing from {}, so the stock versions to restore are unknown; reinstall the replacement first",
        family.name,
        ours.iter()
            .map(|e| e.package.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// `apt-get download <stock>=<version>` into `dir`; the .deb's path.
fn download(
    dir: &std::path::Path,
    r: &rocm::ReplacedPackage,
    listener: &dyn Listener,
) -> anyhow::Result<PathBuf> {
    let request = format!("{}={}", r.stock_name, r.stock_version);
    let out = progress::step(listener, &format!("apt-get download {request}"), || {
        crate::host::apt::apt_command(&Root::system(), "apt-get")
            .args(["download", "-q", &request])
            .current_dir(dir)
            .output()
            .context("cannot run apt-get")
    })?;
    let want = deb_file_name(&r.stock_name, &r.stock_version, &r.architecture);
    let path = dir.join(&want);
    if !out.status.success() || !path.exists() {
        return Err(usage(format!(
            "the stock {request} is not kept in {} and `apt-get download {request}` did not fetch it ({}); configure apt with the repository that has it, or put {want} there, and run the rollback again. Nothing changed.",
            StateLayout::stock_dir().display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(path)
}

/// After the swap: each stock package back at the marker's version, none of ours left, and
/// nothing else removed.
fn checks(
    marker: &Marker,
    ours: &[StatusEntry],
    removed: &[String],
    after: &[StatusEntry],
) -> Vec<Check> {
    let mut out = vec![];
    for r in &marker.replaced {
        let now = after
            .iter()
            .find(|e| e.package == r.stock_name && e.is_installed_ok());
        out.push(Check {
            name: "stock-restored".into(),
            subject: r.stock_name.clone(),
            environment: false,
            ok: now.is_some_and(|e| e.version == r.stock_version),
            detail: format!(
                "{} {} (installed: {})",
                r.stock_name,
                r.stock_version,
                now.map_or("none", |e| e.version.as_str())
            ),
        });
    }
    let ours_names: Vec<&str> = ours.iter().map(|e| e.package.as_str()).collect();
    let others: Vec<&String> = removed
        .iter()
        .filter(|n| !ours_names.contains(&n.as_str()))
        .collect();
    out.push(Check {
        name: "dependants".into(),
        subject: String::new(),
        environment: false,
        ok: others.is_empty(),
        detail: if others.is_empty() {
            "nothing but ours removed".into()
        } else {
            format!(
                "also removed: {}",
                others
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    });
    out
}
