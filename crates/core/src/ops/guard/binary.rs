//! The binary the guard's hooks run, and its stable path.
//!
//! The hooks run the small guard binary `rocm-pin-guard` (only `guard …` and `verify` of a
//! root) when one sits beside the running rocm-pin — rocm-pin's .deb and the runtime artifact
//! ship both — else the full rocm-pin, as versions before the guard binary did. Either way the
//! path is stable: the .deb's own file in /usr/bin when dpkg owns it (its prerm/postrm remove
//! the hooks), else a private copy in /usr/lib/rocm-pin, never a build or temp path that may
//! vanish. Hook files written by older versions name /usr/lib/rocm-pin/rocm-pin: `guard off`
//! removes both private copies, and status reads the binary from the hook file itself.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::host::layout::StateLayout;
use crate::host::root::Root;
use crate::host::status;

/// The guard binary's file name (beside rocm-pin in a build directory, the .deb and the
/// runtime artifact).
pub const GUARD_BINARY_NAME: &str = "rocm-pin-guard";

/// The package that owns [`StateLayout::PACKAGED_BINARY`] and
/// [`StateLayout::PACKAGED_GUARD_BINARY`].
const SELF_PACKAGE: &str = "rocm-pin";

/// The private copies a guard may run: the guard binary's (this version) and the full
/// binary's (the fallback, and every hook file older versions wrote).
const PRIVATE_COPIES: [&str; 2] = [
    StateLayout::GUARD_PRIVATE_GUARD_COPY,
    StateLayout::GUARD_PRIVATE_COPY,
];

/// The guard binary for the running executable `exe`: `exe` itself when it is
/// `rocm-pin-guard`, else a `rocm-pin-guard` regular executable file in `exe`'s directory.
/// None: there is none, and the hooks run the full binary.
pub fn guard_binary_for(exe: &Path) -> Option<PathBuf> {
    if exe.file_name() == Some(GUARD_BINARY_NAME.as_ref()) {
        return Some(exe.to_path_buf());
    }
    let beside = exe.parent()?.join(GUARD_BINARY_NAME);
    let runnable = std::fs::metadata(&beside)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    runnable.then_some(beside)
}

/// The binary the hooks run (a path inside `root`), for the running executable `exe`: the
/// guard binary ([`guard_binary_for`]) when there is one, else `exe`. Its packaged path
/// (`/usr/bin/rocm-pin-guard`, `/usr/bin/rocm-pin`) when it is that file and dpkg owns it;
/// else its private copy in /usr/lib/rocm-pin, copied there (temp file + rename, mode 0755)
/// unless it already is that file.
pub fn stable_binary(root: &Root, exe: &Path) -> anyhow::Result<PathBuf> {
    let (run, packaged, private) = match guard_binary_for(exe) {
        Some(guard) => (
            guard,
            StateLayout::PACKAGED_GUARD_BINARY,
            StateLayout::GUARD_PRIVATE_GUARD_COPY,
        ),
        None => (
            exe.to_path_buf(),
            StateLayout::PACKAGED_BINARY,
            StateLayout::GUARD_PRIVATE_COPY,
        ),
    };
    let same_file = |in_root: &str| -> bool {
        match (
            std::fs::canonicalize(&run),
            std::fs::canonicalize(root.host_path(in_root)),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    };
    if same_file(packaged) && packaged_by_dpkg(root, packaged) {
        return Ok(PathBuf::from(packaged));
    }
    if !same_file(private) {
        copy_atomically(&run, &root.host_path(private))?;
    }
    Ok(PathBuf::from(private))
}

/// Remove the private copies other than `keep` (the binary the hooks run now; None: all),
/// and their directory when it is left empty. True when one was there.
pub(super) fn remove_private_copies(root: &Root, keep: Option<&Path>) -> anyhow::Result<bool> {
    let mut removed = false;
    for copy in PRIVATE_COPIES {
        if keep != Some(Path::new(copy)) {
            removed |= remove_if_present(&root.host_path(copy))?;
        }
    }
    if let Some(dir) = Path::new(StateLayout::GUARD_PRIVATE_COPY).parent() {
        // Only when empty: anything else there is not ours to remove.
        let _ = std::fs::remove_dir(root.host_path(dir));
    }
    Ok(removed)
}

pub(super) fn remove_if_present(p: &Path) -> anyhow::Result<bool> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", p.display())),
    }
}

/// True when dpkg's database in `root` has rocm-pin's own package installed with `packaged`
/// among its files.
fn packaged_by_dpkg(root: &Root, packaged: &str) -> bool {
    let Ok(entries) = crate::rocm::read_status(root) else {
        return false;
    };
    entries
        .iter()
        .filter(|e| e.package == SELF_PACKAGE && e.is_installed_ok())
        .any(|e| {
            status::package_list(root, &e.package, &e.architecture)
                .is_ok_and(|files| files.iter().any(|f| f == packaged))
        })
}

/// `from` copied to `to` through a temp file in `to`'s directory and a rename, so a hook never
/// runs a half-written binary. A root-owned 0755 file on the same filesystem is hard-linked
/// instead (an image keeping rocm-pin in /usr/local/bin pays no second 8 MB); anything another
/// user could write is copied, so root's hooks never run a file that user can change.
fn copy_atomically(from: &Path, to: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let dir = to.parent().context("the private copy has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(".rocm-pin.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let linkable = std::fs::metadata(from)
        .is_ok_and(|m| m.is_file() && m.uid() == 0 && m.mode() & 0o7777 == 0o755);
    let placed = if linkable && std::fs::hard_link(from, &tmp).is_ok() {
        Ok(())
    } else {
        std::fs::copy(from, &tmp)
            .and_then(|_| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)))
    };
    if let Err(e) = placed.and_then(|()| std::fs::rename(&tmp, to)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| {
            format!(
                "cannot copy {} to {} for the guard",
                from.display(),
                to.display()
            )
        });
    }
    // rename(2) does nothing when both names are links of one file (a second `guard on`).
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build directory holding `names`, each an executable file whose bytes are its name.
    fn build_dir(names: &[&str]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for name in names {
            let p = d.path().join(name);
            std::fs::write(&p, name).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        d
    }

    fn armed_with(exe: &Path) -> (PathBuf, String, tempfile::TempDir) {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let binary = stable_binary(&root, exe).unwrap();
        let bytes = std::fs::read_to_string(root.host_path(&binary)).unwrap();
        (binary, bytes, d)
    }

    #[test]
    fn the_guard_binary_beside_rocm_pin_is_the_one_copied() {
        let dir = build_dir(&["rocm-pin", GUARD_BINARY_NAME]);
        let (binary, bytes, _root) = armed_with(&dir.path().join("rocm-pin"));
        assert_eq!(binary, Path::new(StateLayout::GUARD_PRIVATE_GUARD_COPY));
        assert_eq!(bytes, GUARD_BINARY_NAME);
    }

    #[test]
    fn the_guard_binary_arming_itself_copies_itself() {
        let dir = build_dir(&[GUARD_BINARY_NAME]);
        let (binary, bytes, _root) = armed_with(&dir.path().join(GUARD_BINARY_NAME));
        assert_eq!(binary, Path::new(StateLayout::GUARD_PRIVATE_GUARD_COPY));
        assert_eq!(bytes, GUARD_BINARY_NAME);
    }

    #[test]
    fn without_a_guard_binary_beside_the_full_binary_is_copied_as_before() {
        for beside in [
            &[][..],
            // Not executable: not a binary the hooks could run.
            &["rocm-pin-guard-not-exec"][..],
        ] {
            let dir = build_dir(beside);
            if !beside.is_empty() {
                std::fs::write(dir.path().join(GUARD_BINARY_NAME), "x").unwrap();
            }
            std::fs::write(dir.path().join("rocm-pin"), "rocm-pin").unwrap();
            let (binary, bytes, _root) = armed_with(&dir.path().join("rocm-pin"));
            assert_eq!(binary, Path::new(StateLayout::GUARD_PRIVATE_COPY));
            assert_eq!(bytes, "rocm-pin");
        }
    }

    #[test]
    fn disarming_removes_the_older_full_copy_too() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        for copy in PRIVATE_COPIES {
            let p = root.host_path(copy);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let guard = Path::new(StateLayout::GUARD_PRIVATE_GUARD_COPY);
        assert!(remove_private_copies(&root, Some(guard)).unwrap());
        assert!(root.host_path(guard).exists());
        assert!(!root.host_path(StateLayout::GUARD_PRIVATE_COPY).exists());
        assert!(remove_private_copies(&root, None).unwrap());
        assert!(!root.host_path("/usr/lib/rocm-pin").exists());
    }

    /// A file another user owns or can write is copied (root's hooks must not run what that
    /// user can change); a root-owned 0755 file is hard-linked. Needs root for the chown.
    #[test]
    fn only_a_root_owned_binary_is_hard_linked() {
        use std::os::unix::fs::MetadataExt as _;
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root to chown");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let (src, dest) = (d.path().join("src"), d.path().join("lib/rocm-pin"));
        std::fs::write(&src, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o755)).unwrap();
        copy_atomically(&src, &dest).unwrap();
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(ino(&src), ino(&dest), "a root-owned 0755 binary is linked");
        std::os::unix::fs::chown(&src, Some(1000), Some(1000)).unwrap();
        copy_atomically(&src, &dest).unwrap();
        assert_ne!(ino(&src), ino(&dest), "another user's file must be copied");
        let m = std::fs::metadata(&dest).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o7777), (0, 0o755));
        assert_eq!(
            std::fs::read_dir(d.path().join("lib")).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
