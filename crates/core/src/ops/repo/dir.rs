//! The repository directory `repo --out DIR` reads and writes, opened without following
//! symlinks: the one place `rocm-pin repo` touches files inside DIR.
//!
//! An existing repository directory is input someone else may control (a CI cache, the previous
//! publisher), while rocm-pin often runs as root. So it is trusted only for its regular files
//! and directories: their contents are read back (the index, capped) and republished, but no
//! symlink, FIFO, device or socket inside it is ever followed, opened or written through.
//! Every directory is opened one component at a time relative to its parent's descriptor with
//! `O_DIRECTORY | O_NOFOLLOW` (plain `openat`, so there is no fallback path for kernels without
//! `openat2`), files are created `O_CREAT | O_EXCL | O_NOFOLLOW` under a temporary name and
//! `renameat`-ed into place (an atomic replace that never writes through what was there), and
//! files are read only after `fstat` says they are regular and within their cap. DIR itself is
//! the caller's own path and is opened as given.

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;

use super::refused;
use crate::host::root::FileKind;

/// Most entries read from one repository directory (`dists/<suite>/<component>` lists one
/// `binary-<arch>` per architecture; Debian has about twenty).
pub(super) const MAX_DIR_ENTRIES: usize = 4096;

/// An open directory inside the repository (or the repository itself), with its host path for
/// messages.
#[derive(Debug)]
pub(super) struct RepoDir {
    fd: File,
    path: PathBuf,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn os_error(errno: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(errno)
}

/// The refusal of a symlink inside the repository.
fn symlink_refused(path: &Path) -> anyhow::Error {
    refused(format!(
        "{} is a symlink; refused: an existing repository directory is trusted only for its \
         regular files and directories",
        path.display()
    ))
}

/// The refusal of something that is not of the expected type (`wanted`: "a directory").
fn type_refused(path: &Path, mode: u32, wanted: &str) -> anyhow::Error {
    if mode & libc::S_IFMT == libc::S_IFLNK {
        return symlink_refused(path);
    }
    refused(format!(
        "{} is {}, not {wanted}; refused: an existing repository directory is trusted only for \
         its regular files and directories",
        path.display(),
        crate::filetype::describe_mode(mode)
    ))
}

/// A name that is one plain path component.
fn component(name: &str, within: &Path) -> anyhow::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(refused(format!(
            "{name:?} is not a plain file name inside {}",
            within.display()
        )));
    }
    CString::new(name).map_err(|_| refused(format!("{name:?} contains a NUL byte")))
}

/// The `/`-separated parts of a relative path inside the repository.
fn parts(rel: &str) -> impl Iterator<Item = &str> {
    rel.split('/').filter(|p| !p.is_empty())
}

/// A unique temporary name beside `name` (dot-prefixed, so apt and web servers skip it).
fn temp_name(name: &str, attempt: u32) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.{}.{n}.{attempt}.tmp", std::process::id())
}

impl RepoDir {
    /// The repository directory `path` (the caller's own path: a symlink there is followed).
    pub(super) fn open(path: &Path) -> anyhow::Result<RepoDir> {
        let fd = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)
            .with_context(|| format!("opening the repository directory {}", path.display()))?;
        Ok(RepoDir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The descriptor, for `flock`.
    pub(super) fn file(&self) -> &File {
        &self.fd
    }

    /// Host path of this directory, for messages.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Host path of `name` in this directory, for messages.
    pub(super) fn path_of(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// `fstatat(name, AT_SYMLINK_NOFOLLOW)`: the entry itself, `None` when absent.
    fn lstat(&self, name: &str) -> anyhow::Result<Option<libc::stat>> {
        let c = component(name, &self.path)?;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is NUL-terminated, `st` is a valid out-pointer for the call.
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc == 0 {
            return Ok(Some(st));
        }
        match errno() {
            libc::ENOENT => Ok(None),
            e => Err(os_error(e))
                .with_context(|| format!("examining {}", self.path_of(name).display())),
        }
    }

    /// The subdirectory `name`, never through a symlink; `None` when absent (created first
    /// when `create`).
    fn child(&self, name: &str, create: bool) -> anyhow::Result<Option<RepoDir>> {
        let c = component(name, &self.path)?;
        let path = self.path_of(name);
        for _ in 0..4 {
            // SAFETY: `c` is NUL-terminated; the descriptor returned is owned below.
            let fd = unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            if fd >= 0 {
                // SAFETY: a new descriptor nothing else owns.
                let fd = unsafe { File::from_raw_fd(fd) };
                return Ok(Some(RepoDir { fd, path }));
            }
            match errno() {
                libc::ENOENT if create => {
                    // SAFETY: as above; mkdirat never follows a symlink in its last component.
                    let rc = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) };
                    if rc != 0 && errno() != libc::EEXIST {
                        return Err(os_error(errno()))
                            .with_context(|| format!("creating {}", path.display()));
                    }
                }
                libc::ENOENT => return Ok(None),
                libc::ELOOP | libc::ENOTDIR => {
                    let mode = self.lstat(name)?.map_or(libc::S_IFLNK, |st| st.st_mode);
                    return Err(type_refused(&path, mode, "a directory"));
                }
                e => {
                    return Err(os_error(e)).with_context(|| format!("opening {}", path.display()))
                }
            }
        }
        Err(refused(format!(
            "{} keeps changing while it is being created; run again",
            path.display()
        )))
    }

    /// The directory `rel` (`a/b/c`) below this one, each component opened without following
    /// a symlink; `None` when a component does not exist.
    pub(super) fn dir(&self, rel: &str) -> anyhow::Result<Option<RepoDir>> {
        self.walk(rel, false)
    }

    /// [`RepoDir::dir`], creating what is missing.
    pub(super) fn create_dir_all(&self, rel: &str) -> anyhow::Result<RepoDir> {
        Ok(self.walk(rel, true)?.expect("a created directory exists"))
    }

    fn walk(&self, rel: &str, create: bool) -> anyhow::Result<Option<RepoDir>> {
        let mut at: Option<RepoDir> = None;
        for part in parts(rel) {
            let parent = at.as_ref().unwrap_or(self);
            match parent.child(part, create)? {
                Some(next) => at = Some(next),
                None => return Ok(None),
            }
        }
        match at {
            Some(dir) => Ok(Some(dir)),
            None => Ok(Some(RepoDir {
                fd: self.fd.try_clone().context("duplicating a descriptor")?,
                path: self.path.clone(),
            })),
        }
    }

    /// Before anything is written: refuse when a directory on the way to `rel` or one of
    /// `names` in it is a symlink or of the wrong type. What does not exist yet is fine.
    pub(super) fn check_writable(&self, rel: &str, names: &[&str]) -> anyhow::Result<()> {
        let Some(dir) = self.dir(rel)? else {
            return Ok(());
        };
        for name in names {
            if let Some(st) = dir.lstat(name)? {
                if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                    return Err(type_refused(
                        &dir.path_of(name),
                        st.st_mode,
                        "a regular file",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The size of the regular file `name`, `None` when absent; anything else is refused.
    pub(super) fn regular_size(&self, name: &str) -> anyhow::Result<Option<u64>> {
        match self.lstat(name)? {
            None => Ok(None),
            Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => Ok(Some(st.st_size as u64)),
            Some(st) => Err(type_refused(
                &self.path_of(name),
                st.st_mode,
                "a regular file",
            )),
        }
    }

    /// Open the regular file `name` for reading, at most `kind`'s cap; `None` when absent.
    /// Classified through an `O_PATH` descriptor first, so a FIFO or device is never opened
    /// for reading; the file read is the one classified.
    pub(super) fn open_regular(
        &self,
        name: &str,
        kind: FileKind,
    ) -> anyhow::Result<Option<(File, u64)>> {
        let path = self.path_of(name);
        let Some(probe) = self.open_flags(name, libc::O_PATH)? else {
            return Ok(None);
        };
        let before = self.checked_regular(&path, &probe, kind)?;
        let Some(file) =
            self.open_flags(name, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY)?
        else {
            return Err(refused(format!(
                "{} vanished while being opened; run again",
                path.display()
            )));
        };
        let size = self.checked_regular(&path, &file, kind)?;
        if (before.dev(), before.ino()) != (size.dev(), size.ino()) {
            return Err(refused(format!(
                "{} changed while being opened; run again",
                path.display()
            )));
        }
        Ok(Some((file, size.len())))
    }

    /// The whole regular file `name`, at most `kind`'s cap (over it is an error, never a short
    /// read); `None` when absent.
    pub(super) fn read_capped(
        &self,
        name: &str,
        kind: FileKind,
    ) -> anyhow::Result<Option<Vec<u8>>> {
        let Some((file, size)) = self.open_regular(name, kind)? else {
            return Ok(None);
        };
        let cap = kind.cap();
        let mut bytes = Vec::with_capacity(size.min(cap) as usize);
        file.take(cap + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {}", self.path_of(name).display()))?;
        if bytes.len() as u64 > cap {
            return Err(too_large(&self.path_of(name), kind));
        }
        Ok(Some(bytes))
    }

    fn open_flags(&self, name: &str, flags: i32) -> anyhow::Result<Option<File>> {
        let c = component(name, &self.path)?;
        // SAFETY: `c` is NUL-terminated; the descriptor returned is owned below.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd >= 0 {
            // SAFETY: a new descriptor nothing else owns.
            return Ok(Some(unsafe { File::from_raw_fd(fd) }));
        }
        match errno() {
            libc::ENOENT => Ok(None),
            libc::ELOOP => Err(symlink_refused(&self.path_of(name))),
            e => Err(os_error(e))
                .with_context(|| format!("opening {}", self.path_of(name).display())),
        }
    }

    fn checked_regular(
        &self,
        path: &Path,
        file: &File,
        kind: FileKind,
    ) -> anyhow::Result<std::fs::Metadata> {
        let meta = file
            .metadata()
            .with_context(|| format!("examining {}", path.display()))?;
        if meta.mode() & libc::S_IFMT != libc::S_IFREG {
            return Err(type_refused(path, meta.mode(), "a regular file"));
        }
        if meta.len() > kind.cap() {
            return Err(too_large(path, kind));
        }
        Ok(meta)
    }

    /// A new file that becomes `name` (mode 0644) on [`NewFile::persist`], removed if dropped
    /// before. Created `O_EXCL | O_NOFOLLOW` under a temporary name: nothing that is there is
    /// opened or written through.
    pub(super) fn new_file(&self, name: &str) -> anyhow::Result<NewFile<'_>> {
        component(name, &self.path)?;
        for attempt in 0..16 {
            let temp = temp_name(name, attempt);
            let c = component(&temp, &self.path)?;
            // SAFETY: `c` is NUL-terminated; the descriptor returned is owned below.
            let fd = unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o600 as libc::c_uint,
                )
            };
            if fd >= 0 {
                // SAFETY: a new descriptor nothing else owns.
                let file = unsafe { File::from_raw_fd(fd) };
                return Ok(NewFile {
                    dir: self,
                    file,
                    temp,
                    name: name.to_string(),
                    persisted: false,
                });
            }
            if errno() != libc::EEXIST {
                return Err(os_error(errno())).with_context(|| {
                    format!("creating a temporary file in {}", self.path.display())
                });
            }
        }
        Err(refused(format!(
            "cannot create a temporary file in {}: every name tried exists",
            self.path.display()
        )))
    }

    /// Write `bytes` as `name`, atomically.
    pub(super) fn write_atomic(&self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let mut new = self.new_file(name)?;
        new.file
            .write_all(bytes)
            .with_context(|| format!("writing {}", self.path_of(name).display()))?;
        new.persist()
    }

    /// Remove the file (or symlink: never followed) `name`; absent is fine.
    pub(super) fn remove_file(&self, name: &str) -> anyhow::Result<()> {
        self.unlink(name, 0)
            .with_context(|| format!("removing {}", self.path_of(name).display()))
    }

    /// Remove the directory `name` if it is empty; anything else is left alone.
    pub(super) fn remove_empty_dir(&self, name: &str) {
        let _ = self.unlink(name, libc::AT_REMOVEDIR);
    }

    fn unlink(&self, name: &str, flags: i32) -> anyhow::Result<()> {
        let c = component(name, &self.path)?;
        // SAFETY: `c` is NUL-terminated.
        let rc = unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), flags) };
        if rc != 0 && errno() != libc::ENOENT {
            return Err(os_error(errno()).into());
        }
        Ok(())
    }

    /// The names in this directory, sorted, at most `limit` (more is an error).
    pub(super) fn names(&self, limit: usize) -> anyhow::Result<Vec<String>> {
        let fd = self.fd.try_clone().context("duplicating a descriptor")?;
        let raw = std::os::fd::IntoRawFd::into_raw_fd(fd);
        // SAFETY: `raw` is a descriptor we own; fdopendir takes it over (closedir closes it).
        let dir = unsafe { libc::fdopendir(raw) };
        if dir.is_null() {
            let e = errno();
            // SAFETY: fdopendir failed, so `raw` is still ours to close.
            unsafe { libc::close(raw) };
            return Err(os_error(e)).with_context(|| format!("listing {}", self.path.display()));
        }
        // SAFETY: `dir` is a valid DIR* until closedir; readdir's entry is read before the
        // next call.
        let listed = unsafe { read_names(dir, limit) };
        unsafe { libc::closedir(dir) };
        let mut names =
            listed.map_err(|why| refused(format!("{}: {why}; refused", self.path.display())))?;
        names.sort();
        Ok(names)
    }
}

/// The entries of `dir` other than `.` and `..` (names that are not UTF-8 are skipped: rocm-pin
/// writes none).
unsafe fn read_names(dir: *mut libc::DIR, limit: usize) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    loop {
        let entry = libc::readdir(dir);
        if entry.is_null() {
            return Ok(names);
        }
        let name = std::ffi::CStr::from_ptr((*entry).d_name.as_ptr());
        let Ok(name) = name.to_str() else { continue };
        if name == "." || name == ".." {
            continue;
        }
        if names.len() == limit {
            return Err(format!("more than {limit} entries"));
        }
        names.push(name.to_string());
    }
}

fn too_large(path: &Path, kind: FileKind) -> anyhow::Error {
    refused(format!(
        "{} is larger than the {}-byte limit for a {}; refused, not truncated",
        path.display(),
        kind.cap(),
        kind.describe()
    ))
}

/// A file being written into a [`RepoDir`] under a temporary name.
pub(super) struct NewFile<'a> {
    dir: &'a RepoDir,
    pub(super) file: File,
    temp: String,
    name: String,
    persisted: bool,
}

impl NewFile<'_> {
    /// Mode 0644, synced, renamed over `name` (replacing the entry there, never writing
    /// through it).
    pub(super) fn persist(mut self) -> anyhow::Result<()> {
        let target = self.dir.path_of(&self.name);
        self.file
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .with_context(|| format!("setting the mode of {}", target.display()))?;
        self.file.sync_all().ok();
        let from = component(&self.temp, &self.dir.path)?;
        let to = component(&self.name, &self.dir.path)?;
        let fd = self.dir.fd.as_raw_fd();
        // SAFETY: both names are NUL-terminated; both are relative to the same descriptor.
        let rc = unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) };
        if rc != 0 {
            return Err(os_error(errno()))
                .with_context(|| format!("renaming into {}", target.display()));
        }
        self.persisted = true;
        Ok(())
    }
}

impl Drop for NewFile<'_> {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = self.dir.unlink(&self.temp, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn repo() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("repo");
        std::fs::create_dir_all(top.join("dists/stable/main/binary-amd64")).unwrap();
        std::fs::create_dir_all(top.join("pool")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("Release"), b"host file\n").unwrap();
        (d, top, outside)
    }

    fn message(e: &anyhow::Error) -> String {
        format!("{e:#}")
    }

    #[test]
    fn a_symlinked_directory_is_refused_and_nothing_is_written_through_it() {
        let (_d, top, outside) = repo();
        symlink(outside.path(), top.join("pool/main")).unwrap();
        let r = RepoDir::open(&top).unwrap();
        for rel in ["pool/main", "pool/main/a/b"] {
            let e = r.create_dir_all(rel).unwrap_err();
            assert_eq!(
                message(&e),
                format!(
                    "{} is a symlink; refused: an existing repository directory is trusted only \
                     for its regular files and directories",
                    top.join("pool/main").display()
                )
            );
            assert!(r.dir(rel).is_err());
            assert!(r.check_writable(rel, &["x"]).is_err());
        }
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            1,
            "something was created beside the repository"
        );
    }

    #[test]
    fn files_are_replaced_never_written_through() {
        let (_d, top, outside) = repo();
        let dir = RepoDir::open(&top)
            .unwrap()
            .create_dir_all("dists/stable")
            .unwrap();
        symlink(
            outside.path().join("Release"),
            top.join("dists/stable/Release"),
        )
        .unwrap();
        let e = RepoDir::open(&top)
            .unwrap()
            .check_writable("dists/stable", &["InRelease", "Release"])
            .unwrap_err();
        assert!(
            message(&e).contains("Release is a symlink; refused"),
            "{e:#}"
        );
        // Even unchecked, a write replaces the link and leaves its target alone.
        dir.write_atomic("Release", b"ours\n").unwrap();
        assert_eq!(
            std::fs::read(top.join("dists/stable/Release")).unwrap(),
            b"ours\n"
        );
        let meta = std::fs::symlink_metadata(top.join("dists/stable/Release")).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o644);
        assert_eq!(
            std::fs::read(outside.path().join("Release")).unwrap(),
            b"host file\n"
        );
        assert_eq!(
            dir.names(10).unwrap(),
            vec!["Release".to_string(), "main".to_string()],
            "a temporary file is left"
        );
    }

    #[test]
    fn reads_are_regular_files_under_their_cap() {
        let (_d, top, outside) = repo();
        let dir = RepoDir::open(&top)
            .unwrap()
            .create_dir_all("dists/stable/main/binary-amd64")
            .unwrap();
        symlink(
            outside.path().join("Release"),
            top.join("dists/stable/main/binary-amd64/Packages"),
        )
        .unwrap();
        let e = dir
            .read_capped("Packages", FileKind::PackageIndex)
            .unwrap_err();
        assert!(
            message(&e).contains("Packages is a symlink; refused"),
            "{e:#}"
        );
        assert!(!message(&e).contains("host file"));
        std::fs::remove_file(top.join("dists/stable/main/binary-amd64/Packages")).unwrap();
        let fifo = CString::new(
            top.join("dists/stable/main/binary-amd64/Packages")
                .to_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let e = dir
            .read_capped("Packages", FileKind::PackageIndex)
            .unwrap_err();
        assert!(
            message(&e).contains("Packages is a FIFO, not a regular file; refused"),
            "{e:#}"
        );
        assert!(dir.regular_size("Packages").is_err());
        std::fs::remove_file(top.join("dists/stable/main/binary-amd64/Packages")).unwrap();
        assert!(dir
            .read_capped("Packages", FileKind::PackageIndex)
            .unwrap()
            .is_none());
        std::fs::write(
            top.join("dists/stable/main/binary-amd64/v"),
            vec![b'7'; 64 * 1024 + 1],
        )
        .unwrap();
        let e = dir.read_capped("v", FileKind::VersionFile).unwrap_err();
        assert!(message(&e).contains("refused, not truncated"), "{e:#}");
        std::fs::write(
            top.join("dists/stable/main/binary-amd64/v"),
            vec![b'7'; 64 * 1024],
        )
        .unwrap();
        assert_eq!(
            dir.read_capped("v", FileKind::VersionFile)
                .unwrap()
                .unwrap()
                .len(),
            64 * 1024
        );
        assert_eq!(dir.regular_size("v").unwrap(), Some(64 * 1024));
    }

    #[test]
    fn a_dropped_new_file_leaves_nothing() {
        let (_d, top, _outside) = repo();
        let dir = RepoDir::open(&top)
            .unwrap()
            .create_dir_all("pool/main/t/tool")
            .unwrap();
        let mut new = dir.new_file("tool.deb").unwrap();
        new.file.write_all(b"half").unwrap();
        drop(new);
        assert!(dir.names(10).unwrap().is_empty());
        assert!(dir.new_file("../x").is_err());
    }
}
