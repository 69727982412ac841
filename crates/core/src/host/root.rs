//! The one model of a host root: `/` on a real host, a chroot or an unpacked image in tests and
//! `verify --image`. Paths *inside* the root are absolute (`/opt/rocm/lib`); `host_path` maps
//! them to where they are on this machine, and `resolve` follows symlinks the way the kernel
//! would inside a chroot of that root, so an absolute link target never escapes to the host.
//!
//! Before this module, four walkers did this with different rules (one followed only the last
//! component, two differed on whether a missing hop is an error, one stopped at 40 hops
//! silently). Why not `openat2(RESOLVE_IN_ROOT)`: it gives a file descriptor, while every
//! caller here needs the in-root path and the chain of hops to report.

use std::ffi::OsString;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Linux's own limit on symlinks followed in one lookup (`MAXSYMLINKS`).
const MAX_HOPS: usize = 40;

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

/// Why a path does not resolve inside a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// A component is missing (a dangling link, or a path that does not exist).
    Missing {
        asked: PathBuf,
        missing: PathBuf,
        hops: Vec<PathBuf>,
    },
    /// More than `MAX_HOPS` symlinks (a loop, as the kernel would report `ELOOP`).
    Loop { asked: PathBuf },
    /// The link or a directory on the way cannot be read.
    Unreadable { path: PathBuf, error: String },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Missing {
                asked,
                missing,
                hops,
            } => {
                write!(
                    f,
                    "{} does not resolve: {} does not exist (dangling)",
                    asked.display(),
                    missing.display()
                )?;
                if hops.len() > 1 {
                    write!(f, " (chain: {})", chain(hops))?;
                }
                Ok(())
            }
            ResolveError::Loop { asked } => write!(
                f,
                "{}: too many levels of symbolic links (more than {MAX_HOPS})",
                asked.display()
            ),
            ResolveError::Unreadable { path, error } => {
                write!(f, "cannot read {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// `a -> b -> c`
pub fn chain(hops: &[PathBuf]) -> String {
    hops.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

impl Root {
    pub fn new(path: impl Into<PathBuf>) -> Root {
        Root { path: path.into() }
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
}
