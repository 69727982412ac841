//! The dynamic loader: ld.so.conf.d entries, ldconfig, and which file a soname resolves to.
//!
//! Resolution follows ld.so's order for a library requested by soname from an executable
//! without RPATH/RUNPATH: the directories of `LD_LIBRARY_PATH`, then `/etc/ld.so.cache` (first
//! entry of the native ABI, the order `ldconfig -p` prints), then the default directories.
//! The cache file is read directly (`ldcache`), through `ldconfig -p` (read-only; `-C` names
//! the cache of another root) when it holds what that reader leaves to ldconfig.

use crate::host::refused;
use crate::host::root::{FileKind, Root};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

pub use super::ldcache::CacheEntry;

/// Parse `ldconfig -p` output.
pub fn parse_ldconfig_p(text: &str) -> Vec<CacheEntry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(line) = line.strip_prefix('\t') else {
            continue;
        };
        let Some((left, path)) = line.split_once(" => ") else {
            continue;
        };
        let left = left.trim();
        let (soname, flags) = match left.find(" (") {
            Some(i) => (&left[..i], left[i + 2..].trim_end_matches([')', ' '])),
            None => (left, ""),
        };
        // Newer glibc appends ", OS ABI: …" or "hwcap: …" inside the parentheses.
        out.push(CacheEntry {
            soname: soname.to_string(),
            flags: flags.to_string(),
            path: path.trim().to_string(),
        });
    }
    out
}

/// The cache-flags word of the running ABI (`ldconfig -p` prints e.g. `libc6,x86-64`).
pub(crate) fn native_abi_tag() -> Option<&'static str> {
    match std::env::consts::ARCH {
        "x86_64" => Some("x86-64"),
        "aarch64" => Some("AArch64"),
        "powerpc64" => Some("64bit"),
        "riscv64" => Some("riscv64"),
        _ => None,
    }
}

fn flags_are_native(flags: &str) -> bool {
    match native_abi_tag() {
        Some(tag) => flags.split(',').any(|f| f.trim() == tag),
        // Unknown arch: accept every entry (ld.so would filter; we cannot tell).
        None => true,
    }
}

/// The ld.so cache, inside a root.
pub const LD_SO_CACHE: &str = "/etc/ld.so.cache";

/// Read the ld.so cache of `root` (read-only): the file itself when `ldcache` understands
/// all of it, else `ldconfig -p` on those same bytes. The file is read inside the root (a
/// regular file under its cap, or an error naming it), and `ldconfig` is only ever given a
/// private copy of what was read: it follows symlinks on the host and would block on a FIFO,
/// and without `-C` it answers with the host's own cache.
pub fn read_cache(root: &Root) -> anyhow::Result<Vec<CacheEntry>> {
    let bytes = match root.read_file(LD_SO_CACHE, FileKind::LdCache) {
        Ok(bytes) => bytes,
        // No cache at all on the live system: ldconfig -p says what the loader will do.
        Err(e) if e.is_missing() && root.is_system() => return ldconfig_p(None),
        Err(e) => return Err(anyhow::Error::from(e)),
    };
    if let Some(entries) = super::ldcache::parse(&bytes) {
        return Ok(entries);
    }
    let copy = tempfile::NamedTempFile::new().context("cannot make a temporary file")?;
    let _removed_on_signal = crate::interrupt::remove_on_signal(copy.path());
    std::fs::write(copy.path(), &bytes)
        .with_context(|| format!("cannot write {}", copy.path().display()))?;
    ldconfig_p(Some(copy.path()))
}

/// `ldconfig -p`, of the cache file `cache` when given (never the host's cache for a root).
fn ldconfig_p(cache: Option<&Path>) -> anyhow::Result<Vec<CacheEntry>> {
    let mut cmd = Command::new(ldconfig_binary());
    if let Some(cache) = cache {
        cmd.arg("-C").arg(cache);
    }
    cmd.arg("-p");
    let out = match cache {
        // A root's cache (a vetted copy): under the time limit of programs over a root.
        Some(cache) => crate::process::run_bounded(
            &mut cmd,
            &format!("ldconfig -p -C {}", cache.display()),
            crate::process::OVER_ROOT_TIME_LIMIT,
        )?,
        None => cmd
            .output()
            .context("cannot run ldconfig -p (is libc-bin installed?)")?,
    };
    if !out.status.success() {
        return Err(refused(format!(
            "ldconfig -p failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(parse_ldconfig_p(&String::from_utf8_lossy(&out.stdout)))
}

fn ldconfig_binary() -> PathBuf {
    for p in ["/sbin/ldconfig", "/usr/sbin/ldconfig"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("ldconfig")
}

/// Where a soname was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    LdLibraryPath,
    Cache,
    DefaultDir,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resolution {
    pub soname: String,
    /// The path ld.so opens (in-root, absolute), None when it finds nothing.
    pub winner: Option<String>,
    pub via: Option<Via>,
    /// Other places holding the same soname that lose (cache entries after the winner, …).
    pub others: Vec<String>,
}

/// The default library directories ld.so searches after the cache (Debian multiarch layout).
pub fn default_dirs() -> Vec<String> {
    let triplet = match std::env::consts::ARCH {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        "powerpc64" => "powerpc64le-linux-gnu",
        "riscv64" => "riscv64-linux-gnu",
        _ => "",
    };
    let mut v = Vec::new();
    if !triplet.is_empty() {
        v.push(format!("/lib/{triplet}"));
        v.push(format!("/usr/lib/{triplet}"));
    }
    v.push("/lib".into());
    v.push("/usr/lib".into());
    v
}

/// Resolve `soname` as ld.so would for a program without RPATH/RUNPATH, inside `root`.
/// `ld_library_path` is the `LD_LIBRARY_PATH` value to honour (None = unset).
pub fn resolve(
    root: &Root,
    soname: &str,
    cache: &[CacheEntry],
    ld_library_path: Option<&str>,
) -> Resolution {
    let mut candidates: Vec<(String, Via)> = Vec::new();
    if let Some(lp) = ld_library_path {
        for dir in lp.split([':', ';']).filter(|d| !d.is_empty()) {
            let p = format!("{}/{soname}", dir.trim_end_matches('/'));
            if root.exists(&p) {
                candidates.push((p, Via::LdLibraryPath));
            }
        }
    }
    // ld.so takes the first native cache entry only; when that file cannot be opened it goes
    // on to the default directories, not to the next cache entry.
    let mut losing_cache_entries = Vec::new();
    for (i, e) in cache
        .iter()
        .filter(|e| e.soname == soname && flags_are_native(&e.flags))
        .enumerate()
    {
        if i == 0 {
            candidates.push((e.path.clone(), Via::Cache));
        } else {
            losing_cache_entries.push(e.path.clone());
        }
    }
    for dir in default_dirs() {
        let p = format!("{dir}/{soname}");
        if root.exists(&p) {
            candidates.push((p, Via::DefaultDir));
        }
    }
    // A candidate whose file is gone cannot be opened; the next one in order wins.
    let mut winner = None;
    let mut others = Vec::new();
    for (p, via) in candidates {
        if winner.is_none() && root.exists(&p) {
            winner = Some((p, via));
        } else if root.exists(&p)
            && winner.as_ref().is_none_or(|(w, _)| w != &p)
            && !others.contains(&p)
        {
            others.push(p);
        }
    }
    for p in losing_cache_entries {
        if root.exists(&p) && winner.as_ref().is_none_or(|(w, _)| w != &p) && !others.contains(&p) {
            others.push(p);
        }
    }
    Resolution {
        soname: soname.to_string(),
        via: winner.as_ref().map(|(_, v)| v.clone()),
        winner: winner.map(|(p, _)| p),
        others,
    }
}

/// The content rocm-pin (and our package's maintainer scripts) write to our loader entry.
pub fn loader_entry_content(lib_dir: &str) -> String {
    format!("{lib_dir}\n")
}

/// Does the loader entry at `entry` (in-root path) list `lib_dir`?
pub fn loader_entry_lists(root: &Root, entry: &Path, lib_dir: &str) -> anyhow::Result<bool> {
    let text = root
        .read_to_string(entry, FileKind::Config)
        .map_err(anyhow::Error::from)?;
    Ok(text
        .lines()
        .map(str::trim)
        .any(|l| l.trim_end_matches('/') == lib_dir.trim_end_matches('/')))
}

/// Write the loader entry (atomically) for `lib_dir`.
pub fn write_loader_entry(root: &Root, entry: &Path, lib_dir: &str) -> anyhow::Result<()> {
    let p = root.host_path(entry);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = p.with_extension("conf.rocm-pin-tmp");
    std::fs::write(&tmp, loader_entry_content(lib_dir))
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &p).with_context(|| format!("cannot write {}", p.display()))?;
    Ok(())
}

/// Run ldconfig (state-changing: install and rollback only, never verify).
pub fn run_ldconfig(root: &Root) -> anyhow::Result<()> {
    let mut cmd = Command::new(ldconfig_binary());
    let out = if root.is_system() {
        cmd.output().context("cannot run ldconfig")?
    } else {
        cmd.arg("-r").arg(root.path());
        crate::process::run_bounded(
            &mut cmd,
            &format!("ldconfig -r {}", root.display()),
            crate::process::OVER_ROOT_TIME_LIMIT,
        )?
    };
    if !out.status.success() {
        return Err(refused(format!(
            "ldconfig failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "3 libs found in cache `/etc/ld.so.cache'\n\tlibamdhip64.so.7 (libc6,x86-64) => /usr/local/lib/libamdhip64.so.7\n\tlibamdhip64.so.7 (libc6,x86-64) => /opt/rocm-7.2.4/lib/libamdhip64.so.7\n\tlibamdhip64.so.7 (libc6) => /usr/lib32/libamdhip64.so.7\n";

    #[test]
    fn parses_ldconfig_p() {
        let e = parse_ldconfig_p(P);
        assert_eq!(e.len(), 3);
        assert_eq!(e[1].path, "/opt/rocm-7.2.4/lib/libamdhip64.so.7");
        assert_eq!(e[1].flags, "libc6,x86-64");
    }

    #[test]
    fn first_existing_native_cache_entry_wins_and_ld_library_path_beats_it() {
        if std::env::consts::ARCH != "x86_64" {
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for d in [
            "usr/local/lib",
            "opt/rocm-7.2.4/lib",
            "usr/lib32",
            "elsewhere",
        ] {
            std::fs::create_dir_all(r.join(d)).unwrap();
            std::fs::write(r.join(d).join("libamdhip64.so.7"), b"x").unwrap();
        }
        let cache = parse_ldconfig_p(P);
        let res = resolve(&Root::new(r), "libamdhip64.so.7", &cache, None);
        assert_eq!(
            res.winner.as_deref(),
            Some("/usr/local/lib/libamdhip64.so.7")
        );
        assert_eq!(res.others, vec!["/opt/rocm-7.2.4/lib/libamdhip64.so.7"]);
        // A stale first cache entry sends ld.so to the default dirs, not to the next entry.
        std::fs::remove_file(r.join("usr/local/lib/libamdhip64.so.7")).unwrap();
        let res = resolve(&Root::new(r), "libamdhip64.so.7", &cache, None);
        assert_eq!(res.winner, None);
        assert_eq!(res.others, vec!["/opt/rocm-7.2.4/lib/libamdhip64.so.7"]);
        let res = resolve(
            &Root::new(r),
            "libamdhip64.so.7",
            &cache,
            Some("/nope:/elsewhere"),
        );
        assert_eq!(res.winner.as_deref(), Some("/elsewhere/libamdhip64.so.7"));
        assert_eq!(res.via, Some(Via::LdLibraryPath));
        let res = resolve(&Root::new(r), "libnothing.so.1", &cache, None);
        assert!(res.winner.is_none());
    }

    #[test]
    fn loader_entry_round_trip() {
        let root = tempfile::tempdir().unwrap();
        let entry = Path::new("/etc/ld.so.conf.d/hsa-rocr-pinned.conf");
        write_loader_entry(&Root::new(root.path()), entry, "/opt/rocm-7.2.4/lib").unwrap();
        assert!(loader_entry_lists(&Root::new(root.path()), entry, "/opt/rocm-7.2.4/lib").unwrap());
        assert!(
            !loader_entry_lists(&Root::new(root.path()), entry, "/opt/rocm-7.2.5/lib").unwrap()
        );
    }
}
