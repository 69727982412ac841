//! Rebuild an installed package's .deb from the dpkg database, like `dpkg-repack`, for offline
//! rollback when neither the apt cache nor the repositories have it. Only when every file still
//! matches dpkg's md5sums (honouring path-exclude): an image whose stock files were overwritten
//! in place (the seed's hard-link method) must get a clear refusal, not a "stock" package that
//! is not stock.

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::Context;

use super::excludes::PathFilters;
use super::root::Root;
use super::status::{self, StatusEntry};
use crate::deb::control::Paragraph;

/// Fields dpkg adds to the status database that are not part of a binary control file.
const STATUS_ONLY: &[&str] = &["Status", "Conffiles", "Config-Version", "Installed-Size"];
const INFO_FILES: &[&str] = &[
    "preinst",
    "postinst",
    "prerm",
    "postrm",
    "config",
    "templates",
    "triggers",
    "shlibs",
    "symbols",
];

/// Check every file of `pkg` against dpkg's md5sums. Err names the first file that differs.
pub fn check_unmodified(root: &Root, pkg: &StatusEntry) -> anyhow::Result<()> {
    let filters = PathFilters::load(root)?;
    let sums = status::package_md5sums(root, &pkg.package, &pkg.architecture)?
        .with_context(|| format!("dpkg has no md5sums for {}", pkg.package))?;
    for (path, want) in sums {
        let host = root.host_path(&path);
        if !host.exists() {
            if filters.is_excluded(&path) {
                continue;
            }
            anyhow::bail!("{path} of {} is missing", pkg.package);
        }
        let got = crate::digest::md5_file(&host)?;
        if got != want {
            anyhow::bail!(
                "{path} no longer matches dpkg's md5sum for {} ({got} ≠ {want}): the stock files were changed in place, so a rebuilt package would not be stock",
                pkg.package
            );
        }
    }
    Ok(())
}

pub fn repack(root: &Root, pkg: &StatusEntry, dest: &Path) -> anyhow::Result<()> {
    check_unmodified(root, pkg)?;
    let filters = PathFilters::load(root)?;
    let status_text = std::fs::read_to_string(status::status_path(root))?;
    let paras = Paragraph::parse_many(&status_text).context("parsing the dpkg status")?;
    let para = paras
        .into_iter()
        .find(|p| {
            p.get("Package") == Some(pkg.package.as_str())
                && p.get("Architecture") == Some(pkg.architecture.as_str())
        })
        .with_context(|| format!("{} is not in the dpkg status", pkg.package))?;
    let mut control = Paragraph::new();
    for (k, v) in para.fields() {
        if STATUS_ONLY.iter().any(|s| s.eq_ignore_ascii_case(k)) {
            continue;
        }
        // Stored values keep continuation lines as dpkg wrote them.
        control
            .set(k, v)
            .map_err(|e| anyhow::anyhow!("{}: field {k}: {e}", pkg.package))?;
    }
    let work = tempfile::tempdir().context("cannot create a temporary directory")?;
    let tree = work.path().join("tree");
    let debian = tree.join("DEBIAN");
    std::fs::create_dir_all(&debian)?;
    // dpkg-deb (and our deb build) refuse a control directory outside 0755..0775, which a
    // restrictive umask (077) would otherwise produce.
    std::fs::set_permissions(&debian, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot set the mode of {}", debian.display()))?;
    let mut inodes: HashMap<(u64, u64), std::path::PathBuf> = HashMap::new();
    for path in status::package_list(root, &pkg.package, &pkg.architecture)? {
        if path == "/." || path == "/" {
            continue;
        }
        let host = root.host_path(&path);
        let dst = tree.join(path.trim_start_matches('/'));
        let meta = match std::fs::symlink_metadata(&host) {
            Ok(m) => m,
            Err(_) if filters.is_excluded(&path) => continue,
            Err(e) => anyhow::bail!("{path} of {} is missing: {e}", pkg.package),
        };
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let ft = meta.file_type();
        if ft.is_dir() {
            std::fs::create_dir_all(&dst)?;
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&host)?, &dst)?;
        } else if ft.is_file() {
            let key = (meta.dev(), meta.ino());
            if let Some(first) = inodes.get(&key) {
                std::fs::hard_link(first, &dst)?;
            } else {
                std::fs::copy(&host, &dst)
                    .with_context(|| format!("cannot copy {}", host.display()))?;
                std::fs::set_permissions(
                    &dst,
                    std::fs::Permissions::from_mode(meta.mode() & 0o7777),
                )?;
                inodes.insert(key, dst.clone());
            }
        }
    }
    std::fs::write(debian.join("control"), format!("{control}\n"))?;
    let conffiles: Vec<&str> = pkg
        .conffiles
        .iter()
        .filter(|(_, m)| m != "newconffile")
        .map(|(p, _)| p.as_str())
        .collect();
    if !conffiles.is_empty() {
        std::fs::write(debian.join("conffiles"), conffiles.join("\n") + "\n")?;
    }
    let info = root.host_path("/var/lib/dpkg/info");
    for name in INFO_FILES {
        for candidate in [
            info.join(format!("{}.{name}", pkg.package)),
            info.join(format!("{}:{}.{name}", pkg.package, pkg.architecture)),
        ] {
            if candidate.exists() {
                let dst = debian.join(name);
                std::fs::copy(&candidate, &dst)?;
                let mode = if matches!(
                    *name,
                    "preinst" | "postinst" | "prerm" | "postrm" | "config"
                ) {
                    0o755
                } else {
                    0o644
                };
                std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode))?;
                break;
            }
        }
    }
    crate::deb::archive::build_from_dir(
        &tree,
        dest,
        &crate::deb::archive::BuildOptions::default(),
        &crate::progress::Silent,
    )
    .with_context(|| format!("rebuilding {} into {}", pkg.package, dest.display()))?;
    Ok(())
}
