//! The files of our packages: each hashed once, against dpkg's md5sums and the marker's
//! sha256, read inside the root; a file absent by a dpkg `path-exclude` is counted, not failed.

use std::collections::BTreeMap;

use super::model::Checks;
use crate::host::excludes::PathFilters;
use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::ops::ourdebs;
use crate::rocm;

/// md5 (and sha256 when `want_sha` ) of a file, read once.
fn hash_file(f: std::fs::File, want_sha: bool) -> std::io::Result<(String, Option<String>, u64)> {
    let d = crate::digest::digests_reader(f, want_sha)?;
    Ok((d.md5, d.sha256, d.size))
}

pub(super) fn check_files(
    root: &Root,
    ours: &[&StatusEntry],
    marker: &rocm::Marker,
    marker_path: Option<&str>,
    c: &mut Checks,
) {
    let filters = match PathFilters::load(root) {
        Ok(f) => f,
        Err(e) => {
            c.add("files", "", false, format!("{e:#}"));
            return;
        }
    };
    let expected = expected_files(root, ours, marker, c);
    let mut checked = 0usize;
    let mut excluded = 0usize;
    let mut bytes = 0u64;
    let mut bad = 0usize;
    for (path, (md5, pkg)) in &expected {
        if Some(path.as_str()) == marker_path {
            continue;
        }
        let sha_expected = marker.files.get(path);
        match check_file(root, &filters, path, md5.as_deref(), pkg, sha_expected, c) {
            FileCheck::Excluded => excluded += 1,
            FileCheck::Unreadable => bad += 1,
            FileCheck::Hashed { size, matches } => {
                checked += 1;
                bytes += size;
                if !matches {
                    bad += 1;
                }
            }
        }
    }
    if bad == 0 {
        c.add(
            "files",
            "",
            true,
            format!(
                "{checked} files ({bytes} bytes) match dpkg's md5sums and the marker's sha256{}",
                if excluded > 0 {
                    format!("; {excluded} absent by dpkg path-exclude")
                } else {
                    String::new()
                }
            ),
        );
    }
}

/// Every file to check: path → (md5 from dpkg, owning package), then the marker's files.
fn expected_files(
    root: &Root,
    ours: &[&StatusEntry],
    marker: &rocm::Marker,
    c: &mut Checks,
) -> BTreeMap<String, (Option<String>, String)> {
    let mut expected: BTreeMap<String, (Option<String>, String)> = BTreeMap::new();
    for e in ours {
        match status::package_md5sums(root, &e.package, &e.architecture) {
            Ok(Some(sums)) => {
                for (p, m) in sums {
                    expected.insert(p, (Some(m), e.package.clone()));
                }
            }
            Ok(None) => c.add(
                "files",
                &e.package,
                false,
                format!(
                    "dpkg has no md5sums for {} (var/lib/dpkg/info/{}.md5sums)",
                    e.package, e.package
                ),
            ),
            Err(err) => c.add("files", &e.package, false, format!("{err:#}")),
        }
    }
    for p in marker.files.keys() {
        expected
            .entry(p.clone())
            .or_insert((None, String::from("marker")));
    }
    expected
}

/// What the check of one file found (a failure is added to the checks as it is found).
enum FileCheck {
    /// Absent by a dpkg `path-exclude`.
    Excluded,
    /// Missing, not a regular file, or unreadable.
    Unreadable,
    /// Hashed: its size, and whether both sums match.
    Hashed { size: u64, matches: bool },
}

/// One file against dpkg's md5 and the marker's sha256.
fn check_file(
    root: &Root,
    filters: &PathFilters,
    path: &str,
    md5: Option<&str>,
    pkg: &str,
    sha_expected: Option<&String>,
    c: &mut Checks,
) -> FileCheck {
    let meta = root.symlink_metadata(path);
    if filters.is_excluded(path) && meta.is_err() {
        return FileCheck::Excluded;
    }
    let fail = |c: &mut Checks, why: String| {
        c.add("files", path, false, format!("{why} (package {pkg})"));
    };
    match meta {
        Err(_) => {
            fail(
                c,
                format!(
                    "missing; reinstall ours: `{}`",
                    ourdebs::reinstall_command(root)
                ),
            );
            return FileCheck::Unreadable;
        }
        Ok(m) if !m.is_file() => {
            fail(c, "not a regular file".into());
            return FileCheck::Unreadable;
        }
        Ok(_) => {}
    }
    let hashed = root
        .open_regular(path, FileKind::PackagedFile)
        .map_err(|e| e.to_string())
        .and_then(|(f, _)| hash_file(f, sha_expected.is_some()).map_err(|e| e.to_string()));
    let (got_md5, got_sha, size) = match hashed {
        Err(e) => {
            fail(c, format!("cannot read: {e}"));
            return FileCheck::Unreadable;
        }
        Ok(hashed) => hashed,
    };
    if let Some(m) = md5 {
        if got_md5 != m {
            fail(c, format!("md5 {got_md5} differs from dpkg's {m}"));
            return FileCheck::Hashed {
                size,
                matches: false,
            };
        }
    }
    if let (Some(want), Some(got)) = (sha_expected, got_sha) {
        if !want.eq_ignore_ascii_case(&got) {
            fail(c, format!("sha256 {got} differs from the marker's {want}"));
            return FileCheck::Hashed {
                size,
                matches: false,
            };
        }
    }
    FileCheck::Hashed {
        size,
        matches: true,
    }
}
