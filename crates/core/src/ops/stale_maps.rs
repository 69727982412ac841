//! Processes still mapping a deleted copy of a runtime library (`rocm-pin status`): read from
//! the root's own `/proc`, through the in-root resolver like every other file of a root.
//!
//! A root's `/proc` is root input like the rest: in a chroot it is a bind mount of the host's
//! procfs, in an image or a hand-made `--root` it is whatever files the maker put there. So
//! `/proc`, `/proc/<pid>/maps` and `comm` are opened with [`Root::read_dir_names`] and
//! [`Root::read_file`]: a link climbing out of the root stays inside it (`/proc/1 -> /proc/1`
//! is a loop there, not the host's PID 1), a FIFO or device is refused without being opened
//! for reading, each file is capped by its kind, and the number of entries listed is capped.
//! The parsing of a maps text is [`deleted_runtime_paths`], a pure function (fuzzed).

use std::path::Path;

use crate::host::root::{FileKind, Root};
use crate::rocm;

/// More entries than `/proc` lists on any real host: Linux's highest `pid_max` is 2^22, but
/// a host running a million processes at once does not exist; a listing past this is refused
/// (a hostile root cannot make the scan unbounded).
pub const MAX_PROC_ENTRIES: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StaleMapping {
    pub pid: u32,
    pub command: String,
    pub path: String,
}

/// What a look at the root's processes found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessScan {
    pub stale: Vec<StaleMapping>,
    /// Why some or all processes could not be looked at (no `/proc` in the root, a refused
    /// file, no permission); None when every listed process was read.
    pub unseen: Option<String>,
}

/// The root's processes that map a deleted runtime library, and why any could not be read.
pub fn scan(root: &Root) -> ProcessScan {
    let names = match root.read_dir_names("/proc", MAX_PROC_ENTRIES) {
        Ok(names) => names,
        Err(e) => {
            return ProcessScan {
                stale: Vec::new(),
                unseen: Some(format!("{e}")),
            }
        }
    };
    let pids: Vec<u32> = names.iter().filter_map(|n| pid_of(n)).collect();
    if pids.is_empty() {
        return ProcessScan {
            stale: Vec::new(),
            unseen: Some(format!(
                "/proc in {} lists no process (no procfs mounted there)",
                root.display()
            )),
        };
    }
    let mut out = ProcessScan::default();
    let mut unreadable = 0usize;
    for &pid in &pids {
        let maps = match root.read_file(format!("/proc/{pid}/maps"), FileKind::ProcMaps) {
            Ok(bytes) => bytes,
            // The process ended between the listing and the read (its directory went too);
            // a maps dangling in a directory that stays is a root's doing, said below.
            Err(e) if e.is_missing() && !root.exists(format!("/proc/{pid}")) => continue,
            Err(e) => {
                unreadable += 1;
                out.unseen.get_or_insert_with(|| e.to_string());
                continue;
            }
        };
        let text = String::from_utf8_lossy(&maps);
        let paths = deleted_runtime_paths(&text);
        if paths.is_empty() {
            continue;
        }
        let command = command_of(root, pid);
        out.stale.extend(paths.into_iter().map(|path| StaleMapping {
            pid,
            command: command.clone(),
            path: path.to_string(),
        }));
    }
    if let Some(first) = out.unseen.take() {
        out.unseen = Some(format!(
            "the maps of {unreadable} of {} processes could not be read (first: {first})",
            pids.len()
        ));
    }
    out.stale
        .sort_by(|a, b| (a.pid, &a.path).cmp(&(b.pid, &b.path)));
    out
}

/// A `/proc` entry that is a process: decimal digits only, no sign or leading zero, in range.
fn pid_of(name: &str) -> Option<u32> {
    let clean = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_digit())
        && (name == "0" || !name.starts_with('0'));
    clean.then(|| name.parse().ok()).flatten()
}

/// The first line of `/proc/<pid>/comm` (empty when it cannot be read inside the root).
fn command_of(root: &Root, pid: u32) -> String {
    root.read_file(format!("/proc/{pid}/comm"), FileKind::ProcComm)
        .map(|b| {
            String::from_utf8_lossy(&b)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// The paths of a `/proc/<pid>/maps` text that map a deleted file of a runtime library
/// family, each once, in the order they first appear.
pub fn deleted_runtime_paths(maps: &str) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for line in maps.lines() {
        let Some(mapped) = line.strip_suffix(" (deleted)") else {
            continue;
        };
        let Some(path) = maps_pathname(mapped) else {
            continue;
        };
        let is_runtime = Path::new(path)
            .file_name()
            .is_some_and(|n| rocm::family_of(&n.to_string_lossy()).is_some());
        if is_runtime && !seen.contains(&path) {
            seen.push(path);
        }
    }
    seen
}

/// The pathname column of a `/proc/<pid>/maps` line: everything after the five fixed
/// columns (address, perms, offset, dev, inode), so a path with spaces stays whole.
fn maps_pathname(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for _ in 0..5 {
        let end = rest.find(char::is_whitespace)?;
        rest = rest[end..].trim_start();
    }
    (!rest.is_empty()).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const MAPS: &str = "7f00-7f01 r-xp 00000000 08:01 123 /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204 (deleted)\n\
         7f01-7f02 r--p 00001000 08:01 123 /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204 (deleted)\n\
         7f02-7f03 r-xp 00000000 08:01 124 /usr/lib/libfoo.so.1 (deleted)\n\
         7f03-7f04 r-xp 00000000 08:01 125 /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0\n";

    #[test]
    fn maps_pathname_keeps_spaces_and_skips_anonymous_mappings() {
        assert_eq!(
            maps_pathname(
                "7f00-7f01 r-xp 00000000 08:01 123      /opt/my rocm/lib/libamdhip64.so.7"
            ),
            Some("/opt/my rocm/lib/libamdhip64.so.7")
        );
        assert_eq!(maps_pathname("7f00-7f01 rw-p 00000000 00:00 0 "), None);
        assert_eq!(
            deleted_runtime_paths(MAPS),
            vec!["/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"]
        );
    }

    #[test]
    fn finds_deleted_runtime_mappings_only() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("proc/4242");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("comm"), "python3\n").unwrap();
        std::fs::write(p.join("maps"), MAPS).unwrap();
        std::fs::create_dir_all(d.path().join("proc/self")).unwrap();
        let s = scan(&Root::new(d.path()));
        assert_eq!(s.unseen, None);
        assert_eq!(s.stale.len(), 1);
        assert_eq!(s.stale[0].pid, 4242);
        assert_eq!(s.stale[0].command, "python3");
        assert!(s.stale[0].path.ends_with("libamdhip64.so.7.2.70204"));
    }

    #[test]
    fn a_root_without_processes_says_it_could_not_look() {
        let d = tempfile::tempdir().unwrap();
        let s = scan(&Root::new(d.path()));
        assert!(s.unseen.as_deref().unwrap().contains("/proc"), "{s:?}");
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        let s = scan(&Root::new(d.path()));
        assert!(
            s.unseen.as_deref().unwrap().contains("lists no process"),
            "{s:?}"
        );
        // A link to the host's PID 1 is a loop inside the root: counted as not read.
        symlink("/proc/1", d.path().join("proc/1")).unwrap();
        let s = scan(&Root::new(d.path()));
        assert!(s.stale.is_empty());
        assert!(s.unseen.as_deref().unwrap().contains("1 of 1"), "{s:?}");
    }

    #[test]
    fn pids_are_plain_decimal_numbers() {
        assert_eq!(pid_of("4242"), Some(4242));
        for bad in ["", "self", "+1", "-1", "01", "99999999999", "1a"] {
            assert_eq!(pid_of(bad), None, "{bad}");
        }
    }

    /// On the live system the scan reads the real procfs through the resolver: a process of
    /// ours mapping a deleted runtime-named library is found.
    #[test]
    fn the_live_system_scan_finds_a_real_deleted_mapping() {
        let d = tempfile::tempdir().unwrap();
        let lib = d.path().join("libamdhip64.so.7.2.70204");
        std::fs::write(&lib, vec![0u8; 4096]).unwrap();
        let file = std::fs::File::open(&lib).unwrap();
        // SAFETY: a private read-only mapping of a file we own, unmapped below.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED);
        std::fs::remove_file(&lib).unwrap();
        let s = scan(&Root::system());
        // SAFETY: the mapping made above, 4096 bytes.
        unsafe { libc::munmap(at, 4096) };
        let me = std::process::id();
        assert!(
            s.stale
                .iter()
                .any(|m| m.pid == me && m.path == lib.to_str().unwrap()),
            "{s:?}"
        );
    }
}
