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
use super::root::{FileKind, Root};
use super::status::{self, StatusEntry, StatusSnapshot};
use crate::deb::control::Paragraph;
use crate::host::refused;

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
        let (file, _) = match root.open_regular(&path, FileKind::PackagedFile) {
            Err(e) if e.is_missing() && filters.is_excluded(&path) => continue,
            Err(e) if e.is_missing() => {
                return Err(refused(format!("{path} of {} is missing", pkg.package)))
            }
            Err(e) => return Err(anyhow::Error::from(e)),
            Ok(opened) => opened,
        };
        let got = crate::digest::md5_reader(file)?;
        if got != want {
            return Err(refused(format!("{path} no longer matches dpkg's md5sum for {} ({got} ≠ {want}): the stock files were changed in place, so a rebuilt package would not be stock", pkg.package)));
        }
    }
    Ok(())
}

/// An `info/` file's bytes, None when it does not exist.
fn read_info_file(root: &Root, path: &str) -> anyhow::Result<Option<Vec<u8>>> {
    match root.read_file(path, FileKind::DpkgInfo) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(anyhow::Error::from(e)),
    }
}

/// The package's control paragraph, rebuilt from every field of its dpkg status paragraph
/// except the status-only ones.
fn control_of(root: &Root, pkg: &StatusEntry) -> anyhow::Result<Paragraph> {
    // The whole paragraph, as dpkg stored it: the control file is rebuilt from every field.
    let para = StatusSnapshot::read(root)?
        .into_paragraphs()
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
            .map_err(|e| refused(format!("{}: field {k}: {e}", pkg.package)))?;
    }
    Ok(control)
}

pub fn repack(root: &Root, pkg: &StatusEntry, dest: &Path) -> anyhow::Result<()> {
    check_unmodified(root, pkg)?;
    let filters = PathFilters::load(root)?;
    let control = control_of(root, pkg)?;
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
        let host = root.host_path_of_entry(&path).map_err(anyhow::Error::from);
        let dst = tree.join(path.trim_start_matches('/'));
        let meta = match host.as_ref().map(std::fs::symlink_metadata) {
            Ok(Ok(m)) => m,
            Ok(Err(_)) | Err(_) if filters.is_excluded(&path) => continue,
            Err(e) => {
                return Err(refused(format!(
                    "{path} of {} is missing: {e}",
                    pkg.package
                )))
            }
            Ok(Err(e)) => {
                return Err(refused(format!(
                    "{path} of {} is missing: {e}",
                    pkg.package
                )))
            }
        };
        let host = host?;
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
    for name in INFO_FILES {
        for candidate in [
            format!("/var/lib/dpkg/info/{}.{name}", pkg.package),
            format!(
                "/var/lib/dpkg/info/{}:{}.{name}",
                pkg.package, pkg.architecture
            ),
        ] {
            // Read inside the root: a maintainer script linked to a host file is not copied
            // into the package.
            if let Some(bytes) = read_info_file(root, &candidate)? {
                let dst = debian.join(name);
                std::fs::write(&dst, bytes)?;
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
