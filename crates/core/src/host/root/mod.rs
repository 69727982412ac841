//! The one model of a host root: `/` on a real host, a chroot or an unpacked image in tests and
//! `verify --image`. Paths *inside* the root are absolute (`/opt/rocm/lib`); `host_path` maps
//! them to where they are on this machine, and `resolve` follows symlinks the way the kernel
//! would inside a chroot of that root, so an absolute link target never escapes to the host.
//!
//! Before this module, four walkers did this with different rules (one followed only the last
//! component, two differed on whether a missing hop is an error, one stopped at 40 hops
//! silently). `resolve` walks by hand rather than with `openat2(RESOLVE_IN_ROOT)` because its
//! callers need the in-root path and the chain of hops to report.
//!
//! Reading a file under a root is different: a root is untrusted input (an image from a
//! registry, a `--root` someone else made), so every read goes through [`Root::read_file`] /
//! [`Root::open_regular`]. They open with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`
//! where the kernel has it (Linux 5.6+): the kernel itself clamps `..` at the root and re-roots
//! absolute symlink targets in the same lookup that opens the file, so nothing can swap a
//! component between a check and the open, and `/proc/self/fd/N`-style magic links are
//! refused rather than followed to the host's descriptors. Where `openat2` is missing (an old
//! kernel, a seccomp filter that answers ENOSYS/EPERM) the same rules come from `resolve`
//! followed by an `O_NOFOLLOW` open of the symlink-free result. Either way the file is first
//! opened `O_PATH` and `fstat`ed, so a FIFO, device, socket or directory is refused without
//! ever being opened for reading (opening some devices has side effects), and the read is
//! capped per kind of file ([`FileKind::cap`]): over the cap is an error, never a short read.

use std::ffi::{CStr, CString, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

mod error;
mod limits;

use error::root_problem;
pub use error::{chain, ReadProblem, ResolveError, RootReadError};
pub use limits::FileKind;
use limits::MAX_HOPS;

/// A directory that stands for `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    path: PathBuf,
}

/// What to do when a path component does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The path must resolve to something that exists.
    Fail,
    /// Keep the rest of the path as written (dpkg's view of a file it is about to create).
    Keep,
}

/// A path resolved inside a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The in-root path with no symlink left in it.
    pub path: PathBuf,
    /// The path as asked, then the whole path after each symlink followed: the chain a user
    /// reads in an error (`/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-7.2.4`).
    pub hops: Vec<PathBuf>,
}

impl Root {
    /// The root at `path`, made absolute once here (its own symlinks resolved where it
    /// exists): the path is handed to programs that run in another directory or join it to
    /// their own (apt's `Dir` prefixes a relative `Dir::State::status` with itself), so a
    /// relative `--root` must name the same directory to all of them.
    pub fn new(path: impl Into<PathBuf>) -> Root {
        let path = path.into();
        let path = std::fs::canonicalize(&path)
            .or_else(|_| std::path::absolute(&path))
            .unwrap_or(path);
        Root { path }
    }

    /// The live system.
    pub fn system() -> Root {
        Root::new("/")
    }

    /// Where the root is on this machine.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's host path, for messages.
    pub fn display(&self) -> std::path::Display<'_> {
        self.path.display()
    }

    pub fn is_system(&self) -> bool {
        self.path == Path::new("/")
    }

    /// The host path of an absolute in-root path, without resolving symlinks.
    pub fn host_path(&self, in_root: impl AsRef<Path>) -> PathBuf {
        let p = in_root.as_ref();
        self.path.join(p.strip_prefix("/").unwrap_or(p))
    }

    /// Follow every symlink in `path` (every component, not only the last) inside the root.
    /// `..` at the top stays at the top, like the kernel in a chroot.
    pub fn resolve(
        &self,
        path: impl AsRef<Path>,
        missing: Missing,
    ) -> Result<Resolved, ResolveError> {
        let asked = path.as_ref();
        let mut done = PathBuf::from("/");
        let mut pending = reversed_parts(asked);
        let mut hops = vec![asked.to_path_buf()];
        while let Some(part) = pending.pop() {
            if part == ".." {
                done.pop();
                continue;
            }
            let next = done.join(&part);
            let host = self.host_path(&next);
            let meta = match std::fs::symlink_metadata(&host) {
                Ok(meta) => meta,
                Err(_) if missing == Missing::Keep => {
                    done = next;
                    continue;
                }
                Err(_) => {
                    return Err(ResolveError::Missing {
                        asked: asked.to_path_buf(),
                        missing: next,
                        hops,
                    })
                }
            };
            if !meta.file_type().is_symlink() {
                done = next;
                continue;
            }
            if hops.len() > MAX_HOPS {
                return Err(ResolveError::Loop {
                    asked: asked.to_path_buf(),
                });
            }
            let target = std::fs::read_link(&host).map_err(|e| ResolveError::Unreadable {
                path: host.clone(),
                error: e.to_string(),
            })?;
            if target.is_absolute() {
                done = PathBuf::from("/");
            }
            pending.extend(reversed_parts(&target));
            hops.push(lexical(&done, &pending));
        }
        Ok(Resolved { path: done, hops })
    }

    /// The in-root path of what `path` names, which must exist (a dangling or looping link
    /// is an error naming the hop).
    pub fn canonical(&self, path: &str) -> Result<String, ResolveError> {
        self.resolve(path, Missing::Fail)
            .map(|r| r.path.to_string_lossy().into_owned())
    }
}

/// The file-type word for a mode, for "is a FIFO" messages.
fn file_type_name(mode: libc::mode_t) -> &'static str {
    crate::filetype::describe_mode(mode)
}

/// `openat2` said it cannot be used here (old kernel, seccomp): fall back to `resolve`.
fn openat2_unavailable(errno: i32) -> bool {
    matches!(errno, libc::ENOSYS | libc::EPERM | libc::E2BIG)
}

/// `openat2(dir, rel, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`, retried on EAGAIN (the
/// kernel's answer to a concurrent rename during a `..` walk).
fn openat2_in_root(dir: &File, rel: &CStr, flags: i32) -> Result<File, i32> {
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
    for _ in 0..16 {
        // SAFETY: `how` is a fully initialised open_how and its size is passed; `rel` is a
        // NUL-terminated string that outlives the call.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                rel.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel returned a new descriptor that nothing else owns.
            return Ok(unsafe { File::from_raw_fd(fd as i32) });
        }
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if errno != libc::EAGAIN {
            return Err(errno);
        }
    }
    Err(libc::EAGAIN)
}

/// `open(path, flags)` with `O_CLOEXEC`.
fn open_host(path: &Path, flags: i32) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

impl Root {
    fn read_error(&self, path: &Path, problem: ReadProblem) -> RootReadError {
        RootReadError {
            root: self.path.clone(),
            path: path.to_path_buf(),
            problem,
        }
    }

    /// Open the regular file `path` names inside the root, for reading, refusing anything
    /// else; returns the open file and its size (at most `kind`'s cap).
    pub fn open_regular(
        &self,
        path: impl AsRef<Path>,
        kind: FileKind,
    ) -> Result<(File, u64), RootReadError> {
        let asked = path.as_ref();
        // Classify with an O_PATH descriptor first: a device is never opened for reading.
        let probe = self.open_in_root(asked, libc::O_PATH)?;
        let before = self.regular_size(asked, &probe, kind)?;
        let file = self.open_in_root(asked, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY)?;
        let size = self.regular_size(asked, &file, kind)?;
        let (a, b) = (fstat(&probe), fstat(&file));
        if a.map(|m| (m.dev(), m.ino())).ok() != b.map(|m| (m.dev(), m.ino())).ok() {
            return Err(self.read_error(
                asked,
                ReadProblem::Io(format!(
                    "it changed while being opened (size {before}, then another file)"
                )),
            ));
        }
        Ok((file, size))
    }

    /// The whole regular file `path` names inside the root, at most `kind`'s cap.
    pub fn read_file(
        &self,
        path: impl AsRef<Path>,
        kind: FileKind,
    ) -> Result<Vec<u8>, RootReadError> {
        let asked = path.as_ref();
        let (file, size) = self.open_regular(asked, kind)?;
        let cap = kind.cap();
        let mut bytes = Vec::with_capacity(size.min(cap) as usize);
        // A regular file can still grow (or be a /proc file reporting size 0): read one byte
        // past the cap to tell "exactly the cap" from "over it".
        file.take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.read_error(asked, ReadProblem::Io(e.to_string())))?;
        if bytes.len() as u64 > cap {
            return Err(self.read_error(asked, ReadProblem::TooLarge { kind, cap }));
        }
        Ok(bytes)
    }

    /// [`Root::read_file`] as UTF-8 text.
    pub fn read_to_string(
        &self,
        path: impl AsRef<Path>,
        kind: FileKind,
    ) -> Result<String, RootReadError> {
        let asked = path.as_ref();
        let bytes = self.read_file(asked, kind)?;
        String::from_utf8(bytes)
            .map_err(|_| self.read_error(asked, ReadProblem::Io("not UTF-8 text".into())))
    }

    /// Like [`Root::read_to_string`], but a file that does not exist is `None`.
    pub fn read_optional(
        &self,
        path: impl AsRef<Path>,
        kind: FileKind,
    ) -> Result<Option<String>, RootReadError> {
        match self.read_to_string(path, kind) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.is_missing() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `path` resolves inside the root to something that exists (any type). A
    /// symlink out of the root is judged by what it names inside the root, never the host.
    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        self.resolve(path, Missing::Fail).is_ok()
    }

    /// The metadata (not following a last symlink) of what `path` names inside the root,
    /// every symlink on the way resolved inside it.
    pub fn metadata(&self, path: impl AsRef<Path>) -> Result<std::fs::Metadata, RootReadError> {
        let asked = path.as_ref();
        let resolved = self
            .resolve(asked, Missing::Fail)
            .map_err(|e| self.read_error(asked, ReadProblem::Resolve(e)))?;
        std::fs::symlink_metadata(self.host_path(&resolved.path))
            .map_err(|e| self.read_error(asked, ReadProblem::Io(e.to_string())))
    }

    /// Like [`Root::metadata`], but a symlink in the last component is not followed.
    pub fn symlink_metadata(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<std::fs::Metadata, RootReadError> {
        let asked = path.as_ref();
        let host = self.host_path_of_entry(asked)?;
        std::fs::symlink_metadata(host)
            .map_err(|e| self.read_error(asked, ReadProblem::Io(e.to_string())))
    }

    /// The host path of the directory entry `path` names: its directory resolved inside the
    /// root, its last component kept as it is (a symlink stays a symlink, to `lstat` or
    /// `readlink`; a `..` or `.` last component is resolved with the directory). For callers
    /// that must see the entry itself, as dpkg does.
    pub fn host_path_of_entry(&self, path: impl AsRef<Path>) -> Result<PathBuf, RootReadError> {
        let asked = path.as_ref();
        let name = match asked.components().next_back() {
            Some(Component::Normal(name)) => name,
            _ => {
                let resolved = self
                    .resolve(asked, Missing::Fail)
                    .map_err(|e| self.read_error(asked, ReadProblem::Resolve(e)))?;
                return Ok(self.host_path(resolved.path));
            }
        };
        let parent = asked.parent().unwrap_or(Path::new("/"));
        let resolved = self
            .resolve(parent, Missing::Fail)
            .map_err(|e| self.read_error(asked, ReadProblem::Resolve(e)))?;
        Ok(self.host_path(resolved.path.join(name)))
    }

    /// The names in the directory `path` names inside the root, sorted, at most `limit` of
    /// them (more is an error: a hostile root cannot make a listing unbounded).
    pub fn read_dir_names(
        &self,
        path: impl AsRef<Path>,
        limit: usize,
    ) -> Result<Vec<String>, RootReadError> {
        let asked = path.as_ref();
        let dir = self.open_in_root(asked, libc::O_RDONLY | libc::O_DIRECTORY)?;
        // Listing through the descriptor's /proc entry keeps the listing on the directory
        // that was opened inside the root; without /proc, the symlink-free resolved path.
        let via_fd = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        let listing = std::fs::read_dir(&via_fd).or_else(|_| {
            let resolved = self
                .resolve(asked, Missing::Fail)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            std::fs::read_dir(self.host_path(&resolved.path))
        });
        let listing =
            listing.map_err(|e| self.read_error(asked, ReadProblem::Io(e.to_string())))?;
        let mut names = Vec::new();
        for entry in listing {
            let entry =
                entry.map_err(|e| self.read_error(asked, ReadProblem::Io(e.to_string())))?;
            if names.len() == limit {
                return Err(self.read_error(
                    asked,
                    ReadProblem::Io(format!("more than {limit} entries; refused")),
                ));
            }
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Open the directory `path` names inside the root (for a walk that goes on with
    /// `openat(…, O_NOFOLLOW)` from it: `host::dirwalk`).
    pub fn open_dir(&self, path: impl AsRef<Path>) -> Result<File, RootReadError> {
        self.open_in_root(path.as_ref(), libc::O_RDONLY | libc::O_DIRECTORY)
    }

    /// Open `asked` inside the root with `flags` (plus `O_CLOEXEC`), never leaving it.
    fn open_in_root(&self, asked: &Path, flags: i32) -> Result<File, RootReadError> {
        let rel = asked.strip_prefix("/").unwrap_or(asked);
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        let c_rel = CString::new(rel.as_os_str().as_bytes())
            .map_err(|_| self.read_error(asked, ReadProblem::BadPath))?;
        let dir = open_host(
            &self.path,
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
        .map_err(|e| self.read_error(Path::new("/"), root_problem(&e)))?;
        let opened = if cfg!(test) && without_openat2::on() {
            Err(libc::ENOSYS)
        } else {
            openat2_in_root(&dir, &c_rel, flags)
        };
        match opened {
            Ok(f) => Ok(f),
            Err(errno) if openat2_unavailable(errno) => self.open_resolved(asked, flags),
            Err(libc::ENOENT) | Err(libc::ENOTDIR) => Err(self.read_error(
                asked,
                match self.resolve(asked, Missing::Fail) {
                    Err(e) => ReadProblem::Resolve(e),
                    Ok(_) => {
                        ReadProblem::Io(std::io::Error::from_raw_os_error(libc::ENOENT).to_string())
                    }
                },
            )),
            Err(libc::ELOOP) | Err(libc::EXDEV) => Err(self.read_error(
                asked,
                match self.resolve(asked, Missing::Fail) {
                    Err(e @ ResolveError::Loop { .. }) => ReadProblem::Resolve(e),
                    _ => ReadProblem::MagicLink,
                },
            )),
            Err(errno) => Err(self.read_error(
                asked,
                ReadProblem::Io(std::io::Error::from_raw_os_error(errno).to_string()),
            )),
        }
    }

    /// The fallback without `openat2`: resolve inside the root, then open the symlink-free
    /// result without following a link in its last component.
    fn open_resolved(&self, asked: &Path, flags: i32) -> Result<File, RootReadError> {
        let resolved = self
            .resolve(asked, Missing::Fail)
            .map_err(|e| self.read_error(asked, ReadProblem::Resolve(e)))?;
        open_host(&self.host_path(&resolved.path), flags | libc::O_NOFOLLOW)
            .map_err(|e| self.read_error(asked, ReadProblem::Io(e.to_string())))
    }

    /// The size of the regular file open as `file`, refusing any other type and any size
    /// over `kind`'s cap.
    fn regular_size(
        &self,
        asked: &Path,
        file: &File,
        kind: FileKind,
    ) -> Result<u64, RootReadError> {
        let meta =
            fstat(file).map_err(|e| self.read_error(asked, ReadProblem::Io(e.to_string())))?;
        if meta.mode() & libc::S_IFMT != libc::S_IFREG {
            return Err(self.read_error(
                asked,
                ReadProblem::NotRegular {
                    what: file_type_name(meta.mode()),
                },
            ));
        }
        if meta.len() > kind.cap() {
            return Err(self.read_error(
                asked,
                ReadProblem::TooLarge {
                    kind,
                    cap: kind.cap(),
                },
            ));
        }
        Ok(meta.len())
    }
}

/// Tests switch `openat2` off to run the same cases through the fallback.
mod without_openat2 {
    use std::cell::Cell;

    thread_local!(static ON: Cell<bool> = const { Cell::new(false) });

    pub(super) fn on() -> bool {
        ON.with(Cell::get)
    }

    #[cfg(test)]
    pub(super) fn set(on: bool) {
        ON.with(|c| c.set(on));
    }
}

/// `fstat` of an open file (works on `O_PATH` descriptors too).
fn fstat(file: &File) -> std::io::Result<std::fs::Metadata> {
    file.metadata()
}

/// Why a path read from inside a root (an md5sums line, a marker key, a list entry) is not a
/// clean absolute in-root path, or `None` when it is: absolute, no NUL or newline, no `.`,
/// `..` or empty component. Checked before such a path is used at all.
pub fn unclean_in_root_path(p: &str) -> Option<&'static str> {
    if !p.starts_with('/') {
        return Some("not an absolute path");
    }
    if p.contains(['\0', '\n']) {
        return Some("a NUL or newline in the path");
    }
    if p[1..]
        .split('/')
        .any(|c| c == "." || c == ".." || (c.is_empty() && p != "/"))
    {
        return Some("a `.`, `..` or empty component in the path");
    }
    None
}

/// Normal and `..` components of `p`, last first (a stack to pop from).
fn reversed_parts(p: &Path) -> Vec<OsString> {
    let mut parts: Vec<OsString> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    parts.reverse();
    parts
}

/// The whole path a walk stands at: what is done, then what is pending, `..` applied
/// lexically (for reporting hops only).
fn lexical(done: &Path, pending: &[OsString]) -> PathBuf {
    let mut out = done.to_path_buf();
    for part in pending.iter().rev() {
        if part == ".." {
            out.pop();
        } else {
            out.push(part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("opt/rocm-7.2.4/lib")).unwrap();
        std::fs::create_dir_all(r.join("etc/alternatives")).unwrap();
        std::fs::create_dir_all(r.join("usr/lib")).unwrap();
        std::fs::write(r.join("opt/rocm-7.2.4/lib/libx.so.1.2"), b"x").unwrap();
        symlink("libx.so.1.2", r.join("opt/rocm-7.2.4/lib/libx.so.1")).unwrap();
        symlink("/etc/alternatives/rocm", r.join("opt/rocm")).unwrap();
        symlink("/opt/rocm-7.2.4", r.join("etc/alternatives/rocm")).unwrap();
        symlink("usr/lib", r.join("lib")).unwrap();
        symlink("gone", r.join("opt/rocm-7.2.4/lib/libx.so")).unwrap();
        symlink("/loop", r.join("loop")).unwrap();
        // An absolute target that would leave the root on the host stays inside it.
        symlink("/../../../../etc", r.join("escape")).unwrap();
        let root = Root::new(r);
        (dir, root)
    }

    #[test]
    fn follows_every_component_and_reports_the_chain() {
        let (_d, root) = tree();
        let got = root
            .resolve("/opt/rocm/lib/libx.so.1", Missing::Fail)
            .unwrap();
        assert_eq!(got.path, Path::new("/opt/rocm-7.2.4/lib/libx.so.1.2"));
        assert_eq!(
            chain(&got.hops),
            "/opt/rocm/lib/libx.so.1 -> /etc/alternatives/rocm/lib/libx.so.1 -> \
             /opt/rocm-7.2.4/lib/libx.so.1 -> /opt/rocm-7.2.4/lib/libx.so.1.2"
        );
        assert_eq!(
            root.resolve("/lib", Missing::Fail).unwrap().path,
            Path::new("/usr/lib")
        );
        assert_eq!(
            root.resolve("/escape", Missing::Fail).unwrap().path,
            Path::new("/etc")
        );
    }

    #[test]
    fn a_dangling_link_fails_or_is_kept() {
        let (_d, root) = tree();
        let e = root
            .resolve("/opt/rocm/lib/libx.so", Missing::Fail)
            .unwrap_err();
        assert!(
            matches!(&e, ResolveError::Missing { missing, .. } if missing == Path::new("/opt/rocm-7.2.4/lib/gone")),
            "{e:?}"
        );
        assert!(e.to_string().contains("does not resolve"), "{e}");
        assert_eq!(
            root.resolve("/opt/rocm/lib/libx.so", Missing::Keep)
                .unwrap()
                .path,
            Path::new("/opt/rocm-7.2.4/lib/gone")
        );
        assert_eq!(
            root.resolve("/opt/rocm/new/dir/file", Missing::Keep)
                .unwrap()
                .path,
            Path::new("/opt/rocm-7.2.4/new/dir/file")
        );
    }

    #[test]
    fn a_loop_is_an_error_in_both_modes() {
        let (_d, root) = tree();
        for mode in [Missing::Fail, Missing::Keep] {
            assert!(matches!(
                root.resolve("/loop", mode),
                Err(ResolveError::Loop { .. })
            ));
        }
    }

    #[test]
    fn host_path_never_leaves_the_root_lexically_for_absolute_input() {
        let root = Root::new("/srv/chroot");
        assert_eq!(
            root.host_path("/opt/rocm"),
            Path::new("/srv/chroot/opt/rocm")
        );
        assert_eq!(
            root.host_path("opt/rocm"),
            Path::new("/srv/chroot/opt/rocm")
        );
        assert!(Root::system().is_system());
    }

    #[test]
    fn read_file_stays_in_the_root_and_refuses_what_is_not_a_regular_file() {
        let (d, root) = tree();
        let r = d.path();
        // A host file outside the root, named by an absolute link and by a `..` climb.
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, b"host secret").unwrap();
        symlink(&secret, r.join("to-host")).unwrap();
        let climb = format!("/../../../../../..{}", secret.display());
        for asked in ["/to-host", climb.as_str()] {
            let e = root.read_file(asked, FileKind::Config).unwrap_err();
            assert!(e.is_missing(), "{asked}: {e}");
            assert!(!e.to_string().contains("host secret"));
        }
        // Followed inside the root: /opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-7.2.4.
        assert_eq!(
            root.read_file("/opt/rocm/lib/libx.so.1", FileKind::Config)
                .unwrap(),
            b"x"
        );
        let c = std::ffi::CString::new(r.join("fifo").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = root.read_file("/fifo", FileKind::DpkgStatus).unwrap_err();
        assert_eq!(e.problem, ReadProblem::NotRegular { what: "a FIFO" });
        assert!(e.to_string().contains("/fifo (in root"), "{e}");
        let e = root.read_file("/etc", FileKind::Config).unwrap_err();
        assert_eq!(
            e.problem,
            ReadProblem::NotRegular {
                what: "a directory"
            }
        );
        assert!(root.read_file("/loop", FileKind::Config).is_err());
    }

    #[test]
    fn a_file_over_its_cap_is_an_error_not_a_short_read() {
        let (d, root) = tree();
        std::fs::write(d.path().join("version"), vec![b'7'; 64 * 1024 + 1]).unwrap();
        let e = root
            .read_file("/version", FileKind::VersionFile)
            .unwrap_err();
        assert_eq!(
            e.problem,
            ReadProblem::TooLarge {
                kind: FileKind::VersionFile,
                cap: 64 * 1024
            }
        );
        std::fs::write(d.path().join("version"), vec![b'7'; 64 * 1024]).unwrap();
        assert_eq!(
            root.read_file("/version", FileKind::VersionFile)
                .unwrap()
                .len(),
            64 * 1024
        );
    }

    #[test]
    fn devices_and_proc_magic_links_are_refused() {
        // On the live system /dev/zero is a device and /proc/self/fd/0 a magic link: neither
        // is ever read.
        let e = Root::system()
            .read_file("/dev/zero", FileKind::DpkgStatus)
            .unwrap_err();
        assert_eq!(
            e.problem,
            ReadProblem::NotRegular {
                what: "a character device"
            }
        );
        let e = Root::system()
            .read_file("/proc/self/fd/0", FileKind::DpkgStatus)
            .unwrap_err();
        assert!(
            matches!(
                e.problem,
                ReadProblem::MagicLink | ReadProblem::NotRegular { .. }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn read_dir_names_is_bounded() {
        let (_d, root) = tree();
        assert_eq!(
            root.read_dir_names("/opt/rocm/lib", 10).unwrap(),
            vec!["libx.so", "libx.so.1", "libx.so.1.2"]
        );
        assert!(root.read_dir_names("/opt/rocm/lib", 2).is_err());
    }

    #[test]
    fn unclean_in_root_paths() {
        assert_eq!(unclean_in_root_path("/opt/rocm/lib/libx.so"), None);
        for bad in ["opt/x", "/opt/../etc/x", "/./x", "/a//b", "/a/\0b", "/a/b/"] {
            assert!(unclean_in_root_path(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn the_fallback_without_openat2_keeps_the_same_rules() {
        without_openat2::set(true);
        read_file_stays_in_the_root_and_refuses_what_is_not_a_regular_file();
        a_file_over_its_cap_is_an_error_not_a_short_read();
        read_dir_names_is_bounded();
        let e = Root::system()
            .read_file("/dev/zero", FileKind::DpkgStatus)
            .unwrap_err();
        assert!(matches!(e.problem, ReadProblem::NotRegular { .. }), "{e:?}");
        without_openat2::set(false);
    }
}
