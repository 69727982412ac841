//! A bounded walk of a directory tree inside a root that never follows a symlink.
//!
//! The start directory is opened inside the root ([`Root::open_dir`]: the kernel keeps the
//! lookup in the root); every directory below it is opened from its parent's descriptor with
//! `openat(…, O_NOFOLLOW | O_DIRECTORY)`, so a directory swapped for a link to `/` or to
//! the host is refused, never entered. Entries are typed from `readdir` (`d_type`, an
//! `fstatat(AT_SYMLINK_NOFOLLOW)` where the filesystem leaves it unknown): a symlink is
//! reported as one, for the caller to resolve inside the root if it cares. The walk stops at
//! a depth and at a number of entries, and says so.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;

use crate::host::root::{Missing, Root};

/// What a directory entry is (its own type: a symlink is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Symlink,
    Dir,
    /// A FIFO, socket or device: never opened.
    Other,
}

/// What a walk may still cost, shared by every walk of one run.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Entries still to be looked at.
    pub entries_left: u64,
    /// Entries looked at so far.
    pub entries_seen: u64,
    /// Why a walk stopped short (the first time the budget ran out), None while it lasts.
    pub exhausted: Option<String>,
}

impl Budget {
    pub fn new(entries: u64) -> Self {
        Budget {
            entries_left: entries,
            entries_seen: 0,
            exhausted: None,
        }
    }
}

/// Walk the tree at `start` (an in-root path; its own symlinks are resolved inside the root,
/// none below it is followed) down to `max_depth` levels below it. `visit(in_root_path, name,
/// kind, depth)` sees every entry; for a directory it returns whether to descend. A start that
/// does not exist is an empty walk; one that cannot be opened is an error naming it.
pub fn walk(
    root: &Root,
    start: &str,
    max_depth: usize,
    budget: &mut Budget,
    visit: &mut dyn FnMut(&str, &str, EntryKind, usize) -> bool,
) -> Result<(), String> {
    let resolved = match root.resolve(start, Missing::Fail) {
        Ok(r) => r.path.to_string_lossy().into_owned(),
        Err(crate::host::root::ResolveError::Missing { .. }) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    let dir = match root.open_dir(&resolved) {
        Ok(d) => d,
        Err(e) if e.is_missing() => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    walk_dir(&dir, &resolved, 0, max_depth, budget, visit);
    Ok(())
}

fn walk_dir(
    dir: &File,
    path: &str,
    depth: usize,
    max_depth: usize,
    budget: &mut Budget,
    visit: &mut dyn FnMut(&str, &str, EntryKind, usize) -> bool,
) {
    if budget.exhausted.is_some() {
        return;
    }
    // A directory that cannot be listed (permissions) is left out: nothing in it is readable
    // by the loader either when it is the loader's user that cannot list it.
    let Ok(entries) = list(dir) else {
        return;
    };
    for (name, kind) in entries {
        if budget.entries_left == 0 {
            budget.exhausted = Some(format!(
                "stopped at {path}: more than {} entries walked",
                budget.entries_seen
            ));
            return;
        }
        budget.entries_left -= 1;
        budget.entries_seen += 1;
        let Some(name_text) = name.to_str() else {
            continue;
        };
        let child = if path == "/" {
            format!("/{name_text}")
        } else {
            format!("{path}/{name_text}")
        };
        let descend = visit(&child, name_text, kind, depth + 1);
        if kind == EntryKind::Dir && descend && depth + 1 < max_depth {
            if let Some(sub) = open_child_dir(dir, &name) {
                walk_dir(&sub, &child, depth + 1, max_depth, budget, visit);
            }
        }
    }
}

/// `openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)`: None for a symlink (ELOOP) or
/// anything else that is not a directory any more.
fn open_child_dir(dir: &File, name: &OsStr) -> Option<File> {
    let c_name = CString::new(name.as_bytes()).ok()?;
    // SAFETY: a valid descriptor and a NUL-terminated name; the result is owned below.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c_name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a new descriptor nothing else owns.
    (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
}

/// The entries of the open directory `dir` (not `.`, `..`), with their own types.
fn list(dir: &File) -> std::io::Result<Vec<(std::ffi::OsString, EntryKind)>> {
    // fdopendir takes the descriptor it is given: hand it a duplicate.
    // SAFETY: plain descriptor calls; every pointer is checked before use.
    let fd = unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let dirp = unsafe { libc::fdopendir(fd) };
    if dirp.is_null() {
        let e = std::io::Error::last_os_error();
        unsafe { libc::close(fd) };
        return Err(e);
    }
    unsafe { libc::rewinddir(dirp) };
    let mut out = Vec::new();
    loop {
        // SAFETY: dirp is open; the entry is read before the next readdir call.
        let ent = unsafe { libc::readdir64(dirp) };
        if ent.is_null() {
            break;
        }
        let (name, d_type) = unsafe {
            (
                CStr::from_ptr((*ent).d_name.as_ptr()).to_bytes().to_vec(),
                (*ent).d_type,
            )
        };
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match d_type {
            libc::DT_REG => EntryKind::File,
            libc::DT_LNK => EntryKind::Symlink,
            libc::DT_DIR => EntryKind::Dir,
            libc::DT_UNKNOWN => kind_by_stat(fd, &name),
            _ => EntryKind::Other,
        };
        out.push((OsStr::from_bytes(&name).to_os_string(), kind));
    }
    unsafe { libc::closedir(dirp) };
    Ok(out)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)` for a filesystem that leaves `d_type` unknown.
fn kind_by_stat(dir_fd: i32, name: &[u8]) -> EntryKind {
    let Ok(c_name) = CString::new(name) else {
        return EntryKind::Other;
    };
    // SAFETY: a zeroed stat buffer filled by the kernel; a valid descriptor and name.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatat(dir_fd, c_name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return EntryKind::Other;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => EntryKind::File,
        libc::S_IFLNK => EntryKind::Symlink,
        libc::S_IFDIR => EntryKind::Dir,
        _ => EntryKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn the_walk_never_follows_a_link_and_stops_at_its_bounds() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("host-file"), b"x").unwrap();
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("venv/a/b/c")).unwrap();
        std::fs::write(r.join("venv/a/b/c/deep"), b"x").unwrap();
        std::fs::write(r.join("venv/a/file"), b"x").unwrap();
        symlink(outside.path(), r.join("venv/a/to-host")).unwrap();
        symlink("/", r.join("venv/a/to-root")).unwrap();
        symlink("loop", r.join("venv/loop")).unwrap();
        let root = Root::new(r);
        let mut seen = Vec::new();
        let mut budget = Budget::new(1000);
        walk(&root, "/venv", 10, &mut budget, &mut |p, _, k, _| {
            seen.push((p.to_string(), k));
            true
        })
        .unwrap();
        assert!(seen.contains(&("/venv/a/b/c/deep".into(), EntryKind::File)));
        assert!(seen.contains(&("/venv/a/to-host".into(), EntryKind::Symlink)));
        assert!(seen.contains(&("/venv/loop".into(), EntryKind::Symlink)));
        assert!(
            !seen.iter().any(|(p, _)| p.contains("host-file")),
            "{seen:?}"
        );
        assert!(budget.exhausted.is_none());
        // Depth: two levels below /venv, no deeper.
        let mut seen = Vec::new();
        walk(
            &root,
            "/venv",
            2,
            &mut Budget::new(1000),
            &mut |p, _, _, _| {
                seen.push(p.to_string());
                true
            },
        )
        .unwrap();
        assert!(seen.contains(&"/venv/a/b".to_string()), "{seen:?}");
        assert!(!seen.contains(&"/venv/a/b/c".to_string()), "{seen:?}");
        // Entries: the budget runs out and says where.
        let mut budget = Budget::new(3);
        walk(&root, "/venv", 10, &mut budget, &mut |_, _, _, _| true).unwrap();
        assert!(budget.exhausted.is_some());
        // A missing start is an empty walk.
        walk(
            &root,
            "/nothing",
            10,
            &mut Budget::new(5),
            &mut |_, _, _, _| panic!("nothing to see"),
        )
        .unwrap();
    }
}
