//! Scratch directories that outlive one test but not the test binary.
//!
//! The acceptance tests build their expensive inputs (stock sets, chroot snapshots) once per
//! test binary and keep them in a `static OnceLock`. Statics are never dropped, so a `TempDir`
//! held there was never removed: ~800 MB left in /tmp per run. A [`ScratchDir`] is removed when
//! the process exits (an `atexit` handler; libtest ends with `exit` on failure as on success),
//! and a binary that was killed before its handler ran has its directories swept by the next
//! run: the owner's pid is part of the name.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

/// Every scratch directory starts with this, then `<pid>-`.
const PREFIX: &str = "rocm-pin-test-";

static TO_REMOVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static REGISTER: Once = Once::new();

/// A directory under the system temp dir, removed at process exit.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Make `rocm-pin-test-<pid>-<label>-XXXXXX` and register it for removal at exit. Before the
    /// first one, directories of earlier test processes that no longer run are swept.
    pub fn new(label: &str) -> std::io::Result<ScratchDir> {
        REGISTER.call_once(|| {
            sweep_stale(&std::env::temp_dir());
            // SAFETY: registering a plain `extern "C"` function with no arguments.
            unsafe { libc::atexit(remove_registered) };
        });
        let path = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-{label}-", std::process::id()))
            .tempdir()?
            .keep();
        TO_REMOVE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.clone());
        Ok(ScratchDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    /// A scratch directory that is dropped normally (not held in a static) goes at once.
    fn drop(&mut self) {
        remove_unless_mounted(&self.path);
        TO_REMOVE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| p != &self.path);
    }
}

extern "C" fn remove_registered() {
    let paths = std::mem::take(&mut *TO_REMOVE.lock().unwrap_or_else(|e| e.into_inner()));
    for path in paths {
        remove_unless_mounted(&path);
    }
}

/// Remove `dir` unless something is still mounted below it: deleting through a mount point
/// could delete a host directory bind-mounted into a chroot.
pub fn remove_unless_mounted(dir: &Path) {
    if !rocm_pin_kit::sandbox::mounts_under(dir).is_empty() {
        eprintln!(
            "rocm-pin-testkit: {} still has mounts below it; left in place",
            dir.display()
        );
        return;
    }
    let _ = fs::remove_dir_all(dir);
}

/// Remove scratch directories whose owning process is gone (killed before its exit handler).
fn sweep_stale(tmp: &Path) {
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        if let Some(pid) = owner_pid(&entry.file_name()) {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                remove_unless_mounted(&entry.path());
            }
        }
    }
}

/// The pid in `rocm-pin-test-<pid>-…`, if the name has that shape.
fn owner_pid(name: &OsStr) -> Option<u32> {
    let rest = name.to_str()?.strip_prefix(PREFIX)?;
    rest.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_reads_only_our_names() {
        assert_eq!(
            owner_pid(OsStr::new("rocm-pin-test-123-install-abc")),
            Some(123)
        );
        assert_eq!(owner_pid(OsStr::new("rocm-pin-test-x-install")), None);
        assert_eq!(owner_pid(OsStr::new(".tmpabc")), None);
    }

    #[test]
    fn stale_directories_of_dead_processes_are_swept_and_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        // pid 0x7fffffff is above pid_max: no such process.
        let dead = tmp.path().join(format!("{PREFIX}2147483647-x-abc"));
        let live = tmp
            .path()
            .join(format!("{PREFIX}{}-x-abc", std::process::id()));
        let other = tmp.path().join("somebody-else");
        for d in [&dead, &live, &other] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("f"), "x").unwrap();
        }
        sweep_stale(tmp.path());
        assert!(!dead.exists());
        assert!(live.exists());
        assert!(other.exists());
    }

    #[test]
    fn a_dropped_scratch_dir_is_removed() {
        let d = ScratchDir::new("drop").unwrap();
        let p = d.path().to_path_buf();
        fs::write(p.join("f"), "x").unwrap();
        assert!(p.is_dir());
        drop(d);
        assert!(!p.exists());
    }
}
