//! Validation of an install, fail closed: every shared library in the staging tree is read from
//! its ELF (SONAME, NEEDED, exports) and hashed; a dangling library link, an empty or non-ELF
//! library, a missing required family, a family file whose SONAME link is absent, and an HSA
//! library without the backport symbol are refused with the file named. Runs after every build
//! and on every cache hit, so a tampered staging is never reused.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::Context;

use super::manifest::ManifestLibrary;
use crate::digest::sha256_file;
use crate::exit::Failure;
use crate::rocm::{self, Half};

/// What validation checks beyond the structural rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ValidateOptions {
    /// Refuse an HSA library that does not export [`rocm::BACKPORT_SYMBOL`].
    pub backport_check: bool,
}

/// The validated libraries (sorted by path) and warnings worth showing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Validated {
    pub libraries: Vec<ManifestLibrary>,
    pub warnings: Vec<String>,
}

/// `libfoo.so` or `libfoo.so.<anything>`.
pub(crate) fn is_library_name(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
}

/// Lexical normalisation of a path below `root` (no filesystem access); None when `..` climbs
/// out of the root.
fn normalize_within(rel: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn rel_string(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Follow a library link inside the staging. Ok(real file, relative) or Err(reason).
fn resolve_link(staging: &Path, link_rel: &Path) -> Result<PathBuf, String> {
    let mut current = link_rel.to_path_buf();
    for _ in 0..40 {
        let abs = staging.join(&current);
        let meta = match std::fs::symlink_metadata(&abs) {
            Ok(m) => m,
            Err(_) => {
                return Err(format!(
                    "points at {} which does not exist",
                    rel_string(&current)
                ))
            }
        };
        if !meta.file_type().is_symlink() {
            if meta.is_file() {
                return Ok(current);
            }
            return Err(format!(
                "points at {}, not a regular file",
                rel_string(&current)
            ));
        }
        let target = std::fs::read_link(&abs).map_err(|e| format!("unreadable link: {e}"))?;
        if target.is_absolute() {
            return Err(format!(
                "has an absolute target {} (links in the install must stay inside it)",
                target.display()
            ));
        }
        let parent = current.parent().unwrap_or(Path::new(""));
        current = normalize_within(&parent.join(&target))
            .ok_or_else(|| format!("target {} leaves the install directory", target.display()))?;
    }
    Err("too many levels of symbolic links".into())
}

/// Problems (each refusing the install) and warnings, in the order they were found.
#[derive(Debug, Default)]
struct Findings {
    problems: Vec<String>,
    warnings: Vec<String>,
}

/// The library entries of a staging tree: regular files (relative paths, sorted by name) and,
/// for each file that links resolve to, the links leading to it.
#[derive(Debug, Default)]
struct LibraryEntries {
    real_files: Vec<PathBuf>,
    links: BTreeMap<PathBuf, Vec<String>>,
}

/// Scan and validate the install under `staging`, skipping the top-level entries in `skip`
/// (logs, work directory, manifest). One error lists every problem found, each naming its file.
pub(crate) fn validate_install(
    staging: &Path,
    skip: &[&str],
    opts: ValidateOptions,
) -> anyhow::Result<Validated> {
    let mut findings = Findings::default();
    let entries = scan_library_entries(staging, skip, &mut findings)?;
    let mut libraries = read_libraries(staging, entries, &mut findings)?;
    for family in rocm::FAMILIES {
        check_family(staging, family, &libraries, opts, &mut findings);
    }
    if !findings.problems.is_empty() {
        return Err(validation_failure(staging, &findings.problems));
    }
    libraries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Validated {
        libraries,
        warnings: findings.warnings,
    })
}

/// Walk the staging (without following links) for library-named entries; a library link that
/// does not resolve inside the staging is a problem.
fn scan_library_entries(
    staging: &Path,
    skip: &[&str],
    findings: &mut Findings,
) -> anyhow::Result<LibraryEntries> {
    let mut entries = LibraryEntries::default();
    let walker = walkdir::WalkDir::new(staging)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() != 1
                || !skip
                    .iter()
                    .any(|s| e.file_name() == std::ffi::OsStr::new(s))
        });
    for entry in walker {
        let entry = entry.with_context(|| format!("scanning {}", staging.display()))?;
        let name = entry.file_name().to_string_lossy();
        if entry.depth() == 0 || !is_library_name(&name) {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(staging)
            .context("walked outside the staging directory")?
            .to_path_buf();
        let ft = entry.file_type();
        if ft.is_symlink() {
            match resolve_link(staging, &rel) {
                Ok(target) => entries
                    .links
                    .entry(target)
                    .or_default()
                    .push(rel_string(&rel)),
                Err(reason) => findings.problems.push(format!(
                    "{}: library symlink dangles — {reason}",
                    staging.join(&rel).display()
                )),
            }
        } else if ft.is_file() {
            entries.real_files.push(rel);
        }
    }
    Ok(entries)
}

/// Read every real library file (size, ELF, hash) into its manifest entry; an empty or non-ELF
/// file, or a family file that is not a shared object, is a problem.
fn read_libraries(
    staging: &Path,
    entries: LibraryEntries,
    findings: &mut Findings,
) -> anyhow::Result<Vec<ManifestLibrary>> {
    let LibraryEntries {
        real_files,
        mut links,
    } = entries;
    let mut libraries: Vec<ManifestLibrary> = vec![];
    for rel in &real_files {
        let abs = staging.join(rel);
        let size = std::fs::metadata(&abs)
            .with_context(|| format!("reading {}", abs.display()))?
            .len();
        if size == 0 {
            findings.problems.push(format!(
                "{}: empty library (0 bytes) — an install step created it instead of copying it",
                abs.display()
            ));
            continue;
        }
        let info = match crate::elf::read_elf(&abs) {
            Ok(info) => info,
            Err(e) => {
                findings.problems.push(format!(
                    "{}: not a readable ELF shared library: {e:#}",
                    abs.display()
                ));
                continue;
            }
        };
        let family = rel
            .file_name()
            .and_then(|n| rocm::family_of(&n.to_string_lossy()));
        let backport_symbol = match family {
            Some(f) if f.half == Half::Hsa => Some(info.export(rocm::BACKPORT_SYMBOL).is_some()),
            _ => None,
        };
        let mut lib_links = links.remove(rel).unwrap_or_default();
        lib_links.sort();
        libraries.push(ManifestLibrary {
            path: rel_string(rel),
            soname: info.soname.clone(),
            sha256: sha256_file(&abs)?,
            size,
            needed: info.needed.clone(),
            links: lib_links,
            backport_symbol,
        });
        if family.is_some() && !info.shared_object {
            findings
                .problems
                .push(format!("{}: not a shared object (ET_DYN)", abs.display()));
        }
    }
    Ok(libraries)
}

/// A family must have at most one file (and one when required), and each of its files passes
/// [`check_family_member`].
fn check_family(
    staging: &Path,
    family: &rocm::LibraryFamily,
    libraries: &[ManifestLibrary],
    opts: ValidateOptions,
    findings: &mut Findings,
) {
    let members: Vec<&ManifestLibrary> = libraries
        .iter()
        .filter(|l| {
            Path::new(&l.path)
                .file_name()
                .and_then(|n| rocm::family_of(&n.to_string_lossy()))
                .is_some_and(|f| f.stem == family.stem)
        })
        .collect();
    if members.is_empty() {
        if family.required {
            findings.problems.push(format!(
                "{}: no {} library in the install (a required library of the runtime pair)",
                staging.display(),
                family.stem
            ));
        }
        return;
    }
    if members.len() > 1 {
        findings.problems.push(format!(
            "{}: several {} files ({}): which one is the runtime is ambiguous",
            staging.display(),
            family.stem,
            members
                .iter()
                .map(|l| l.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for lib in &members {
        check_family_member(staging, family, lib, opts, findings);
    }
}

/// One family file: it has a SONAME of its family, the SONAME link leads to it, and (for HSA)
/// it exports the backport symbol — a problem, or only a warning without the backport check.
fn check_family_member(
    staging: &Path,
    family: &rocm::LibraryFamily,
    lib: &ManifestLibrary,
    opts: ValidateOptions,
    findings: &mut Findings,
) {
    let abs = staging.join(&lib.path);
    let Some(soname) = &lib.soname else {
        findings
            .problems
            .push(format!("{}: has no SONAME", abs.display()));
        return;
    };
    if rocm::family_of(soname).map(|f| f.stem) != Some(family.stem) {
        findings.problems.push(format!(
            "{}: SONAME {soname} does not belong to {}",
            abs.display(),
            family.stem
        ));
        return;
    }
    let dir = Path::new(&lib.path).parent().unwrap_or(Path::new(""));
    let soname_rel = rel_string(&dir.join(soname));
    if soname_rel != lib.path && !lib.links.contains(&soname_rel) {
        findings.problems.push(format!(
            "{}: the SONAME link {} is missing or does not lead to this file",
            abs.display(),
            staging.join(&soname_rel).display()
        ));
    }
    if lib.backport_symbol == Some(false) {
        let msg = format!(
            "{} does not export {} (the ordering-edge backport): this ROCr is not the \
             patched one",
            abs.display(),
            rocm::BACKPORT_SYMBOL
        );
        if opts.backport_check {
            findings.problems.push(format!(
                "{msg}; build the pinned commit, or pass --no-backport-check to accept it"
            ));
        } else {
            findings
                .warnings
                .push(format!("{msg} (accepted: --no-backport-check)"));
        }
    }
}

/// One check-failed error listing every problem.
fn validation_failure(staging: &Path, problems: &[String]) -> anyhow::Error {
    let mut msg = format!(
        "the install in {} failed validation ({} problem{}):",
        staging.display(),
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        msg.push_str("\n  - ");
        msg.push_str(p);
    }
    Failure::CheckFailed(msg).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names() {
        assert!(is_library_name("libamdhip64.so"));
        assert!(is_library_name("libamdhip64.so.7.2.53211-b539bf7"));
        assert!(!is_library_name("libamdhip64.a"));
        assert!(!is_library_name("hip_runtime_api.h"));
    }

    #[test]
    fn links_are_resolved_inside_the_staging_only() {
        let d = tempfile::tempdir().unwrap();
        let lib = d.path().join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libx.so.1.0"), b"x").unwrap();
        std::os::unix::fs::symlink("libx.so.1.0", lib.join("libx.so.1")).unwrap();
        std::os::unix::fs::symlink("libx.so.1", lib.join("libx.so")).unwrap();
        std::os::unix::fs::symlink("../../etc/passwd", lib.join("liby.so")).unwrap();
        std::os::unix::fs::symlink("/usr/lib/libz.so.1", lib.join("libz.so")).unwrap();
        std::os::unix::fs::symlink("libgone.so.1.0", lib.join("libgone.so.1")).unwrap();
        assert_eq!(
            resolve_link(d.path(), Path::new("lib/libx.so")).unwrap(),
            PathBuf::from("lib/libx.so.1.0")
        );
        assert!(resolve_link(d.path(), Path::new("lib/liby.so"))
            .unwrap_err()
            .contains("leaves"));
        assert!(resolve_link(d.path(), Path::new("lib/libz.so"))
            .unwrap_err()
            .contains("absolute"));
        assert!(resolve_link(d.path(), Path::new("lib/libgone.so.1"))
            .unwrap_err()
            .contains("does not exist"));
    }
}
