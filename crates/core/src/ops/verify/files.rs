//! The files of our packages: each hashed once, against dpkg's md5sums and the marker's
//! sha256, read inside the root; a file absent by a dpkg `path-exclude` is counted, not failed.
//!
//! "Once" is per file, not per path: our packages ship each library under its stock file name
//! and its own as hard links (one inode, two md5sums lines), so the digests of an inode already
//! read are reused for its other names, which halves the bytes verify hashes on a real 7.2.4 host
//! (2 x 33 MB -> 33 MB; `dpkg --verify` reads both names).

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt as _;

use super::model::Checks;
use crate::host::excludes::PathFilters;
use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::ops::ourdebs;
use crate::rocm;

/// The digests of the files read so far in one check, by (device, inode).
#[derive(Default)]
struct DigestsByInode(HashMap<(u64, u64), crate::digest::Digests>);

impl DigestsByInode {
    /// md5 (and sha256 when `want_sha`) of an opened file: from an earlier name of the same
    /// inode when that one has what is asked for, else read once now. The key comes from the
    /// opened descriptor (`fstat`), so a name swapped after the lookup cannot borrow another
    /// file's digests.
    fn hash(
        &mut self,
        f: std::fs::File,
        want_sha: bool,
    ) -> std::io::Result<(String, Option<String>, u64)> {
        let m = f.metadata()?;
        let key = (m.dev(), m.ino());
        let known = self
            .0
            .get(&key)
            .filter(|d| d.size == m.size() && (d.sha256.is_some() || !want_sha));
        let d = match known {
            Some(d) => d.clone(),
            None => {
                let d = crate::digest::digests_reader(f, want_sha)?;
                self.0.insert(key, d.clone());
                d
            }
        };
        Ok((d.md5, d.sha256, d.size))
    }
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
    let mut digests = DigestsByInode::default();
    for (path, (md5, pkg)) in &expected {
        if Some(path.as_str()) == marker_path {
            continue;
        }
        let sha_expected = marker.files.get(path);
        let want = FileWant {
            md5: md5.as_deref(),
            pkg,
            sha256: sha_expected,
        };
        match check_file(root, &filters, path, want, &mut digests, c) {
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

/// What one file must be: dpkg's md5, the marker's sha256, and the package that owns it.
struct FileWant<'a> {
    md5: Option<&'a str>,
    pkg: &'a str,
    sha256: Option<&'a String>,
}

/// One file against dpkg's md5 and the marker's sha256.
fn check_file(
    root: &Root,
    filters: &PathFilters,
    path: &str,
    want: FileWant<'_>,
    digests: &mut DigestsByInode,
    c: &mut Checks,
) -> FileCheck {
    let FileWant {
        md5,
        pkg,
        sha256: sha_expected,
    } = want;
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
        .and_then(|(f, _)| {
            digests
                .hash(f, sha_expected.is_some())
                .map_err(|e| e.to_string())
        });
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

#[cfg(test)]
mod tests {
    use super::DigestsByInode;

    /// Two names of one inode are read once (the second name gets the first read's digests even
    /// though the bytes changed in between: proof it was not read again); a name that wants the
    /// sha256 an earlier read did not compute is read; another inode is read on its own.
    #[test]
    fn hard_links_share_one_read_and_other_files_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        std::fs::write(&a, b"the library").unwrap();
        std::fs::hard_link(&a, &b).unwrap();
        std::fs::write(&c, b"the library").unwrap();
        let open = |p: &std::path::Path| std::fs::File::open(p).unwrap();
        let mut digests = DigestsByInode::default();
        let md5_only = digests.hash(open(&a), false).unwrap();
        assert_eq!(md5_only.1, None);
        let with_sha = digests.hash(open(&b), true).unwrap();
        assert_eq!(with_sha.0, md5_only.0);
        assert!(with_sha.1.is_some(), "a name that wants the sha256 gets it");
        std::fs::write(&a, b"THE LIBRARY").unwrap(); // same inode, same size, other bytes
        assert_eq!(
            digests.hash(open(&b), true).unwrap(),
            with_sha,
            "not read again"
        );
        assert_eq!(digests.0.len(), 1);
        let other = digests.hash(open(&c), true).unwrap();
        assert_eq!(other, with_sha, "same bytes, same digests");
        assert_eq!(digests.0.len(), 2, "another inode is read on its own");
    }
}
