//! The local repository (`--local-repo`) against the installed packages: it lists them, is
//! signed, and nothing in it is writable by group or others (walked inside the root, bounded).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::model::Checks;
use crate::host::layout::StateLayout;
use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};

/// The local repository (`--local-repo`): when present it must carry exactly the installed
/// versions of our packages, be signed and not be writable by group or others.
pub(super) fn check_local_repo(root: &Root, ours: &[&StatusEntry], c: &mut Checks) {
    let repo_in_root = StateLayout::local_repo();
    if !root.exists(&repo_in_root) {
        return;
    }
    let subject = repo_in_root.display().to_string();
    let mut problems = Vec::new();
    match root.read_to_string(repo_in_root.join("Packages"), FileKind::PackageIndex) {
        Err(e) => problems.push(format!("Packages unreadable: {e}")),
        Ok(text) => match status::parse_status(&text, &[]) {
            Err(e) => problems.push(format!("Packages is malformed: {e:#}")),
            Ok(listed) => {
                for e in ours {
                    if !listed
                        .iter()
                        .any(|p| p.package == e.package && p.version == e.version)
                    {
                        problems.push(format!("Packages lacks {} {}", e.package, e.version));
                    }
                }
            }
        },
    }
    match root.read_to_string(repo_in_root.join("Release"), FileKind::Config) {
        Err(e) => problems.push(format!("Release unreadable: {e}")),
        Ok(t) => {
            if !t.lines().any(|l| l.trim() == "Origin: rocm-pin") {
                problems.push("Release lacks Origin: rocm-pin".into());
            }
        }
    }
    if !root.exists(repo_in_root.join("InRelease"))
        && !root.exists(repo_in_root.join("Release.gpg"))
    {
        problems.push("not signed (no InRelease or Release.gpg)".into());
    }
    writable_entries(root, &repo_in_root, &mut problems);
    c.add(
        "local-repo",
        &subject,
        problems.is_empty(),
        if problems.is_empty() {
            "matches the installed packages, signed, not group/other-writable".to_string()
        } else {
            problems.join("; ")
        },
    );
}

/// The most entries the local repository's permission walk looks at: a repository rocm-pin
/// made holds a dozen; a root with more is refused by name, not walked for minutes.
const LOCAL_REPO_ENTRIES: usize = 10_000;
/// Its deepest directory (`pool/main/<letter>/<source>/` is 4).
const LOCAL_REPO_DEPTH: usize = 8;

/// Every entry of the local repository `dir` that is group/other-writable (whoever can write
/// there chooses what apt installs), walked inside the root: each directory is listed and
/// each entry `lstat`ed through the resolver, no link is followed, at most
/// [`LOCAL_REPO_ENTRIES`] entries and [`LOCAL_REPO_DEPTH`] levels.
fn writable_entries(root: &Root, dir: &Path, problems: &mut Vec<String>) {
    let mut left = LOCAL_REPO_ENTRIES;
    let mut pending = vec![(dir.to_path_buf(), 0)];
    while let Some((path, depth)) = pending.pop() {
        let Ok(m) = root.symlink_metadata(&path) else {
            continue;
        };
        if m.file_type().is_symlink() {
            continue;
        }
        if m.mode() & 0o022 != 0 {
            problems.push(format!(
                "{} is group/other-writable ({:o})",
                path.display(),
                m.mode() & 0o7777
            ));
        }
        if !m.is_dir() {
            continue;
        }
        if depth == LOCAL_REPO_DEPTH {
            problems.push(format!(
                "{} is nested deeper than {LOCAL_REPO_DEPTH} levels; not checked further",
                path.display()
            ));
            continue;
        }
        match root.read_dir_names(&path, left) {
            Ok(names) => {
                left -= names.len();
                pending.extend(names.into_iter().map(|n| (path.join(n), depth + 1)));
            }
            Err(e) => {
                problems.push(format!("cannot check its permissions: {e}"));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_local_repo_index_is_called_malformed_not_lacking() {
        let root = tempfile::tempdir().unwrap();
        let repo = Root::new(root.path()).host_path(StateLayout::local_repo());
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join("Packages"), " continuation without a paragraph\n").unwrap();
        std::fs::write(repo.join("Release"), "Origin: rocm-pin\n").unwrap();
        std::fs::write(repo.join("InRelease"), "signed\n").unwrap();
        let ours = StatusEntry {
            package: "hsa-rocr-pinned".into(),
            version: "1".into(),
            ..Default::default()
        };
        let mut c = Checks(Vec::new());
        check_local_repo(&Root::new(root.path()), &[&ours], &mut c);
        let detail = &c.0.iter().find(|k| !k.ok).expect("a failed check").detail;
        assert!(detail.contains("Packages is malformed"), "{detail}");
        assert!(!detail.contains("lacks"), "{detail}");
    }
}
