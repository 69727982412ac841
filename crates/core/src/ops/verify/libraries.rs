//! The libraries the marker names, as the loader sees them: the stock-name aliases are hard
//! links of ours, the soname link resolves to ours, the HSA half exports the backport symbol,
//! ld.so opens ours, every symlink we ship resolves, and the loader entry lists our directory.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::model::{Checks, VerifyOptions};
use crate::host::layout::StateLayout;
use crate::host::loader;
use crate::host::root::{unclean_in_root_path, FileKind, Root};
use crate::ops::ourdebs;
use crate::rocm;

fn identity(root: &Root, path: &str) -> Option<(u64, u64)> {
    root.metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// An ELF file inside the root, opened without leaving it.
fn read_elf_in_root(root: &Root, path: &str) -> anyhow::Result<crate::elf::ElfInfo> {
    let (file, _) = root.open_regular(path, FileKind::PackagedFile)?;
    crate::elf::read_elf_file(&file, Path::new(path))
}

/// The HSA library lacks the backport symbol: a failure, unless the build recorded
/// `--no-backport-check` and the caller accepted that.
pub(super) fn missing_backport_symbol(
    opts: &VerifyOptions,
    marker: &rocm::Marker,
) -> (bool, String) {
    let base = format!(
        "does not export {} (a stock or unpatched ROCr)",
        rocm::BACKPORT_SYMBOL
    );
    match (
        marker.backport_check_skipped,
        opts.accept_skipped_backport_check,
    ) {
        (true, true) => (
            true,
            format!(
                "{base}; the build skipped the backport check (--no-backport-check, recorded in \
                 the marker) and --accept-skipped-backport-check accepts that"
            ),
        ),
        (true, false) => (
            false,
            format!(
                "{base}; the build skipped the backport check (--no-backport-check, recorded in \
                 the marker): pass --accept-skipped-backport-check if that is intended"
            ),
        ),
        (false, _) => (false, base),
    }
}

/// Each library of the marker: its stock-name aliases, its soname link, the backport symbol
/// (HSA half), which file ld.so opens; then every symlink our packages ship.
pub(super) fn check_libraries(
    opts: &VerifyOptions,
    marker: &rocm::Marker,
    lists: &BTreeMap<String, Vec<String>>,
    cache: anyhow::Result<Vec<loader::CacheEntry>>,
    c: &mut Checks,
) {
    let root = &opts.root;
    if let Err(e) = &cache {
        c.add("loader", "", false, format!("{e:#}"));
    }
    for lib in &marker.libraries {
        let real = identity(root, &lib.path);
        check_aliases(root, lib, real, c);
        check_soname_link(root, lib, real, c);
        check_backport_symbol(opts, marker, lib, c);
        if let Ok(cache) = &cache {
            check_loader_opens(opts, lib, real, cache, c);
        }
    }
    check_symlinks_resolve(root, lists, c);
}

/// Aliases: the stock versioned names must be the same inode as our file (`real`).
fn check_aliases(root: &Root, lib: &rocm::MarkerLibrary, real: Option<(u64, u64)>, c: &mut Checks) {
    for a in &lib.aliases {
        let ok = real.is_some() && identity(root, a) == real;
        let same_path = root
            .symlink_metadata(a)
            .map(|m| !m.file_type().is_symlink())
            .unwrap_or(false);
        c.add(
            "aliases",
            a,
            ok && same_path,
            if ok && same_path {
                format!("hard link of {}", lib.path)
            } else if real.is_none() {
                format!("{} is missing", lib.path)
            } else {
                format!(
                    "not the same inode as {} (a copy or a stock file); reinstall {}",
                    lib.path, lib.package
                )
            },
        );
    }
}

/// Soname link resolves to our file, non-empty, with the right SONAME.
fn check_soname_link(
    root: &Root,
    lib: &rocm::MarkerLibrary,
    real: Option<(u64, u64)>,
    c: &mut Checks,
) {
    let dir = Path::new(&lib.path)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/".into());
    let link = format!("{dir}/{}", lib.soname);
    let target = match root.canonical(&link) {
        Err(e) => return c.add("sonames", &link, false, format!("{e:#}")),
        Ok(target) => target,
    };
    let meta = root.metadata(&target);
    let size = meta.as_ref().map(|m| m.len()).unwrap_or(0);
    let same = identity(root, &target) == real && real.is_some();
    let elf_soname = read_elf_in_root(root, &target)
        .map(|i| i.soname)
        .map_err(|e| format!("{e:#}"));
    let (ok, detail) = if size == 0 {
        (false, format!("resolves to {target}, which is empty"))
    } else if !same {
        (
            false,
            format!("resolves to {target}, not to our {}", lib.path),
        )
    } else {
        match elf_soname {
            Ok(Some(s)) if s == lib.soname => {
                (true, format!("→ {target} (SONAME {s}, {size} bytes)"))
            }
            Ok(other) => (
                false,
                format!(
                    "→ {target} whose SONAME is {}, expected {}",
                    other.as_deref().unwrap_or("(none)"),
                    lib.soname
                ),
            ),
            Err(e) => (false, format!("→ {target}: not a readable ELF: {e}")),
        }
    };
    c.add("sonames", &link, ok, detail);
}

/// The HSA half must export the backport symbol (other libraries: nothing to check).
fn check_backport_symbol(
    opts: &VerifyOptions,
    marker: &rocm::Marker,
    lib: &rocm::MarkerLibrary,
    c: &mut Checks,
) {
    let file_name = Path::new(&lib.path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    if rocm::family_of(&file_name).is_none_or(|f| f.half != rocm::Half::Hsa) {
        return;
    }
    let res = read_elf_in_root(&opts.root, &lib.path);
    let (ok, detail) = match res {
        Ok(info) => match info.export(rocm::BACKPORT_SYMBOL) {
            Some(s) => (
                true,
                format!(
                    "exports {}{}",
                    s.name,
                    s.version
                        .as_ref()
                        .map(|v| format!("@{}{v}", if s.default { "@" } else { "" }))
                        .unwrap_or_default()
                ),
            ),
            None => missing_backport_symbol(opts, marker),
        },
        Err(e) => (false, format!("not a readable ELF: {e:#}")),
    };
    c.add("backport-symbol", &lib.path, ok, detail);
}

/// Which file does ld.so open for this soname? It must be ours (`real`).
fn check_loader_opens(
    opts: &VerifyOptions,
    lib: &rocm::MarkerLibrary,
    real: Option<(u64, u64)>,
    cache: &[loader::CacheEntry],
    c: &mut Checks,
) {
    let root = &opts.root;
    let res = loader::resolve(root, &lib.soname, cache, opts.ld_library_path.as_deref());
    let (ok, detail) = match &res.winner {
        None => (
            false,
            format!(
                "ld.so finds no {} (not in the ld.so cache: is {} missing, or ldconfig not run?)",
                lib.soname,
                StateLayout::loader_entry(&lib.package).display()
            ),
        ),
        Some(w) => {
            let ours = identity(root, w) == real && real.is_some();
            let via = match res.via {
                Some(loader::Via::LdLibraryPath) => "LD_LIBRARY_PATH",
                Some(loader::Via::Cache) => "ld.so.cache",
                _ => "default directory",
            };
            let others = if res.others.is_empty() {
                String::new()
            } else {
                format!("; also found: {}", res.others.join(", "))
            };
            if ours {
                (true, format!("ld.so opens {w} (via {via}) = ours{others}"))
            } else {
                (
                    false,
                    format!(
                        "ld.so opens {w} (via {via}), NOT our {}{others}; remove that library or its ld.so.conf.d entry, then run ldconfig",
                        lib.path
                    ),
                )
            }
        }
    };
    c.add("loader", &lib.soname, ok, detail);
}

/// Every symlink our packages ship must resolve (none dangling).
fn check_symlinks_resolve(root: &Root, lists: &BTreeMap<String, Vec<String>>, c: &mut Checks) {
    let mut dangling = Vec::new();
    let mut links = 0;
    for list in lists.values() {
        for p in list {
            // The entry itself, its directories resolved inside the root: a link on the way
            // (`/hostlink -> /`) never makes this an lstat of a host path.
            if unclean_in_root_path(p).is_none()
                && root
                    .symlink_metadata(p)
                    .is_ok_and(|m| m.file_type().is_symlink())
            {
                links += 1;
                if let Err(e) = root.canonical(p) {
                    dangling.push(format!("{e:#}"));
                }
            }
        }
    }
    c.add(
        "symlinks",
        "",
        dangling.is_empty(),
        if dangling.is_empty() {
            format!("{links} symlinks of our packages resolve")
        } else {
            dangling.join("; ")
        },
    );
}

pub(super) fn check_loader_entry(root: &Root, marker: &rocm::Marker, c: &mut Checks) {
    // The family's first library (the pair's HSA one) names the entry.
    let Some(hsa) = crate::ops::install_family::loader_library(marker) else {
        c.add("loader-entry", "", false, "the marker names no HSA library");
        return;
    };
    let dir = Path::new(&hsa.path)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let layout = rocm::RuntimeLayout::of_library_dir(&dir);
    if layout.spec().loader == rocm::LoaderRegistration::LdconfigTrigger {
        // Debian's flavour: the multiarch directory is the loader's own; the `loader` checks
        // above show ld.so opening ours, and no package of ours ships an entry to check.
        c.add(
            "loader-entry",
            &dir,
            true,
            format!(
                "{dir} is on the loader's default path ({}: no ld.so.conf.d entry, the ldconfig trigger)",
                layout.spec().title
            ),
        );
        return;
    }
    let entry = StateLayout::loader_entry(&hsa.package);
    let (ok, detail) = match loader::loader_entry_lists(root, &entry, &dir) {
        Ok(true) => (true, format!("lists {dir}")),
        Ok(false) => (false, format!("does not list {dir}")),
        Err(e) => (
            false,
            format!(
                "{e:#}; run `{}` again (writes it and runs ldconfig)",
                ourdebs::reinstall_command(root)
            ),
        ),
    };
    c.add("loader-entry", &entry.display().to_string(), ok, detail);
}
