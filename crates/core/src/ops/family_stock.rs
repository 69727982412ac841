//! What `rocm-pin package --family NAME` needs beyond the runtime pair's flow: where a
//! family's stock libraries are in a root or a set of stock .debs, and `--from-deb`, which turns
//! the .debs a library's own CPack build made (`rccl_<ver>_amd64.deb`, named like the stock
//! ones) into a staging, refusing with one line what it cannot prove (no library of the family,
//! the stock SONAMEs not covered, a foreign architecture).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::host::dpkgdb::DpkgDb;
use crate::host::root::Root;
use crate::ops::plan::refused;
use crate::ops::plan::staging::{self, CommitOverride, Staging};
use crate::ops::plan::stock::{self, StockFile, StockKind, StockPackage};
use crate::progress::Listener;
use crate::rocm::{self, Half, PinnedFamily, RuntimeLayout};

/// The layout a library file of `family` at `path` belongs to: AMD's `/opt/rocm-X/lib/`, or
/// Debian's multiarch directory. None for any other place or name.
pub(crate) fn layout_of_library_path(
    family: &'static PinnedFamily,
    path: &str,
) -> Option<RuntimeLayout> {
    let (dir, name) = path.rsplit_once('/')?;
    family.family_of(name)?;
    if rocm::is_multiarch_lib_dir(dir) {
        return Some(RuntimeLayout::multiarch(dir));
    }
    let prefix = dir.strip_suffix("/lib")?;
    let leaf = prefix.rsplit('/').next()?;
    (leaf.starts_with("rocm-") && prefix.starts_with("/opt/"))
        .then(|| RuntimeLayout::versioned_prefix(prefix))
}

/// Where `family`'s stock libraries are in `root`: `--prefix` (a versioned prefix or a
/// multiarch directory), else the one library directory installed packages own a library of
/// the family in (`/opt/rocm-7.2.4/lib` through AMD's `rccl`, the multiarch directory through
/// Debian's `librccl1`).
pub(crate) fn layout_in_root(
    root: &Root,
    db: &DpkgDb,
    asked: Option<&str>,
    family: &'static PinnedFamily,
) -> anyhow::Result<RuntimeLayout> {
    if let Some(p) = asked {
        let p = p.trim_end_matches('/');
        return Ok(if rocm::is_multiarch_lib_dir(p) {
            RuntimeLayout::multiarch(p)
        } else {
            RuntimeLayout::versioned_prefix(p)
        });
    }
    let mut found: Vec<RuntimeLayout> = vec![];
    for p in db
        .packages()
        .iter()
        .filter(|p| p.has_files() && p.is_installed())
    {
        for f in db.files(&p.name)? {
            if f.ends_with(".so") {
                continue;
            }
            if let Some(l) = layout_of_library_path(family, &f) {
                if !found.contains(&l) {
                    found.push(l);
                }
            }
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(refused(format!(
            "no stock {} found under {}: no installed package owns a {} library in /opt/rocm-*/lib or /usr/lib/<triplet>; \
             install the stock packages ({}), or give them with --stock-deb",
            family.name,
            root.display(),
            family.libraries.iter().map(|l| l.stem).collect::<Vec<_>>().join(", "),
            family
                .stock
                .iter()
                .map(|s| s.replaced.join(" "))
                .collect::<Vec<_>>()
                .join(" or ")
        ))),
        many => Err(refused(format!(
            "{} libraries are installed in several directories under {} ({}); give --prefix with the one to replace",
            family.name,
            root.display(),
            many.iter().map(|l| l.lib_dir.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The refusal when no stock .deb given holds a library of `family`.
pub(crate) fn none_in_stock_debs(family: &'static PinnedFamily) -> anyhow::Error {
    refused(format!(
        "no stock {} found: none of the stock .debs installs a {} library into /opt/rocm-*/lib or /usr/lib/<triplet>; \
         give the stock packages ({}) with --stock-deb",
        family.name,
        stems(family),
        family
            .stock
            .iter()
            .map(|s| s.replaced.join(" "))
            .collect::<Vec<_>>()
            .join(" or ")
    ))
}

fn stems(family: &'static PinnedFamily) -> String {
    family
        .libraries
        .iter()
        .map(|l| l.stem)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The staging of `--from-deb`: each .deb read and checked against its own md5sums
/// ([`stock::from_deb`]), the family's libraries and their links collected into
/// `<work>/lib/`. The commit facts are given (`--commit`, `--commit-time`): a CPack .deb does
/// not say which commit it was built from. The source (each .deb's name and sha256) goes into
/// the marker.
pub(crate) fn staging_from_debs(
    debs: &[PathBuf],
    commit: &CommitOverride,
    family: &'static PinnedFamily,
    work: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<Staging> {
    if debs.is_empty() {
        return Err(refused("--from-deb needs at least one .deb"));
    }
    if commit.commit.is_none() {
        return Err(refused(format!(
            "--from-deb needs --commit <full sha> of the {} build the .debs came from (a CPack .deb does not record it), and --commit-time or SOURCE_DATE_EPOCH",
            family.name
        )));
    }
    let work = work.join("from-deb");
    let staging_dir = work.join("staging");
    let lib = staging_dir.join("lib");
    std::fs::create_dir_all(&lib)?;
    let mut sources = vec![];
    let mut links = vec![];
    for (i, deb) in debs.iter().enumerate() {
        let dir = work.join("deb").join(i.to_string());
        std::fs::create_dir_all(&dir)?;
        let pkg = stock::from_deb(deb, &dir)?;
        let taken = collect_family_files(&pkg, deb, family, &lib, &mut links)?;
        let left = pkg
            .files
            .iter()
            .filter(|f| !matches!(f.kind, StockKind::Dir) && !taken.contains(&f.path))
            .count();
        if left > 0 {
            listener.info(&format!(
                "{}: {left} files besides the {} libraries are not packaged (headers and tools stay with the stock packages, which ours Provides keep installed)",
                deb.display(),
                family.name
            ));
        }
        sources.push(format!(
            "{} (sha256 {})",
            deb.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
            stock::sha256_file(deb)?
        ));
    }
    // Links last, and only to a library some .deb had (rccl-dev's `librccl.so` without the
    // runtime .deb would dangle).
    for (name, target) in links {
        if lib.join(&target).is_file() && !lib.join(&name).exists() {
            std::os::unix::fs::symlink(&target, lib.join(&name))?;
        }
    }
    let mut staging = staging::load(&staging_dir, commit)?;
    staging.origin = staging::Origin::FromDebs {
        source: format!("from .debs {}", sources.join(", ")),
    };
    Ok(staging)
}

/// Copy the family's real library files of one .deb into `lib` (one directory of the .deb
/// only), its links within that directory into `links` (name, target); the paths taken.
fn collect_family_files(
    pkg: &StockPackage,
    deb: &Path,
    family: &'static PinnedFamily,
    lib: &Path,
    links: &mut Vec<(String, String)>,
) -> anyhow::Result<BTreeSet<String>> {
    let of_family: Vec<&StockFile> = pkg
        .files
        .iter()
        .filter(|f| {
            f.path
                .rsplit_once('/')
                .is_some_and(|(_, n)| family.family_of(n).is_some())
        })
        .collect();
    let dirs: BTreeSet<&str> = of_family
        .iter()
        .filter_map(|f| f.path.rsplit_once('/').map(|(d, _)| d))
        .collect();
    if dirs.len() > 1 {
        return Err(refused(format!(
            "{}: {} libraries in several directories ({}); cannot tell which is the library",
            deb.display(),
            family.name,
            dirs.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    let mut taken = BTreeSet::new();
    for f in of_family {
        let name = f.path.rsplit('/').next().unwrap_or_default();
        let dest = lib.join(name);
        match &f.kind {
            StockKind::File { .. } => {
                std::fs::copy(&f.source, &dest).map_err(|e| {
                    refused(format!("{}: cannot copy {} ({e})", deb.display(), f.path))
                })?;
            }
            StockKind::Symlink(target) => {
                // Links inside the library directory only; anything else is not the library's.
                if target.contains('/') {
                    continue;
                }
                links.push((name.to_string(), target.clone()));
            }
            StockKind::Dir | StockKind::Excluded => continue,
        }
        taken.insert(f.path.clone());
    }
    Ok(taken)
}

/// What `--from-deb` must prove against the discovered stock set: the .debs are of the stock
/// packages' architecture, and their libraries carry every SONAME the stock ones do.
pub(crate) fn check_from_debs(
    debs: &[PathBuf],
    staging: &Staging,
    stock: &[(Half, StockPackage)],
    layout: &RuntimeLayout,
    family: &'static PinnedFamily,
) -> anyhow::Result<()> {
    let limits = crate::deb::reader::ReadLimits::default();
    for deb in debs {
        let control = crate::deb::reader::read_control(deb, &limits)?;
        let arch = control.0.get("Architecture").unwrap_or("").to_string();
        if let Some((_, s)) = stock.iter().find(|(_, s)| s.architecture != arch) {
            return Err(refused(format!(
                "{} is Architecture {arch:?}, but the stock {} {} it would replace is {}: a foreign-architecture build cannot replace it",
                deb.display(),
                s.name,
                s.version,
                s.architecture
            )));
        }
    }
    let staged: BTreeSet<String> = staging
        .for_family(family)?
        .libraries
        .iter()
        .filter(|l| l.family.is_some())
        .filter_map(|l| l.elf.soname.clone())
        .collect();
    let names = || {
        debs.iter()
            .filter_map(|d| d.file_name().and_then(|n| n.to_str()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if staged.is_empty() {
        return Err(refused(format!(
            "{} hold no {} shared library with a SONAME (no file named {}.so*); they cannot replace the stock {}",
            names(),
            family.name,
            family.libraries.iter().map(|l| l.stem).collect::<Vec<_>>().join(".so*, "),
            stock.iter().map(|(_, s)| s.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    for (_, s) in stock {
        for soname in stock_sonames(s, layout, family) {
            if !staged.contains(&soname) {
                return Err(refused(format!(
                    "{} do not cover the stock SONAMEs: stock {} ships {soname}, the .debs' libraries have {}",
                    names(),
                    s.name,
                    staged.iter().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// The SONAMEs of a stock package's family libraries: read from its real files.
fn stock_sonames(
    s: &StockPackage,
    layout: &RuntimeLayout,
    family: &'static PinnedFamily,
) -> BTreeSet<String> {
    s.files
        .iter()
        .filter(|f| matches!(f.kind, StockKind::File { .. }))
        .filter(|f| family.library_in(&layout.lib_dir, &f.path).is_some())
        .filter_map(|f| crate::elf::read_elf(&f.source).ok()?.soname)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rocm::families::{RCCL, RUNTIME};

    #[test]
    fn library_paths_name_their_layout_per_family() {
        let amd = layout_of_library_path(&RCCL, "/opt/rocm-7.2.4/lib/librccl.so.1.0.70204");
        assert_eq!(
            amd,
            Some(RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4"))
        );
        let deb = layout_of_library_path(&RCCL, "/usr/lib/x86_64-linux-gnu/librccl.so.1");
        assert_eq!(
            deb,
            Some(RuntimeLayout::multiarch("/usr/lib/x86_64-linux-gnu"))
        );
        for not in [
            "/opt/rocm-7.2.4/lib/libamdhip64.so.7",
            "/opt/rocm/lib/librccl.so.1",
            "/usr/lib/librccl.so.1",
            "/opt/rocm-7.2.4/lib/rccl/librccl.so.1",
        ] {
            assert_eq!(layout_of_library_path(&RCCL, not), None, "{not}");
        }
        assert!(layout_of_library_path(&RUNTIME, "/opt/rocm-7.2.4/lib/libamdhip64.so.7").is_some());
    }
}
