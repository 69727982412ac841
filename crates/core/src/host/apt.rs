//! Running apt-get / dpkg / dpkg-query, apt preferences and sources.
//!
//! Outcomes are read from dpkg's database (`dpkg-query`), not from apt's prose, which apt 3
//! changed. The few apt outputs parsed here are the stable machine-ish ones: `apt-cache policy`
//! in the C locale and the `Inst`/`Remv` lines of `apt-get -s`.

use crate::host::refused;
use crate::host::root::{FileKind, Missing, ReadProblem, ResolveError, Root, RootReadError};
use std::path::Path;
use std::process::Command;

use anyhow::Context;

/// One package's block of `apt-cache policy` output.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Policy {
    pub package: String,
    /// None for `(none)`.
    pub installed: Option<String>,
    /// None for `(none)`: apt will not pick any version of this package.
    pub candidate: Option<String>,
    /// Every version in the version table with its pin priority.
    pub versions: Vec<(String, i64)>,
}

impl Policy {
    /// Pinned away: no candidate and every known version at a negative priority.
    pub fn is_pinned_away(&self) -> bool {
        self.candidate.is_none() && self.versions.iter().all(|(_, p)| *p < 0)
    }
}

/// Parse `LC_ALL=C apt-cache policy NAME...` output. Blocks start with `<name>:` in column 0.
pub fn parse_policy(text: &str) -> Vec<Policy> {
    let mut out: Vec<Policy> = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            if let Some(name) = line.strip_suffix(':') {
                out.push(Policy {
                    package: name.to_string(),
                    ..Default::default()
                });
                in_table = false;
            }
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        let trimmed = line.trim();
        if let Some(v) = trimmed.strip_prefix("Installed:") {
            cur.installed = none_or(v);
        } else if let Some(v) = trimmed.strip_prefix("Candidate:") {
            cur.candidate = none_or(v);
        } else if trimmed.starts_with("Version table:") {
            in_table = true;
        } else if in_table {
            // Version lines: `     VER PRIO` or ` *** VER PRIO` (indent ≤ 5); source lines
            // below them are indented 8: `        500 file:/srv ./ Packages`.
            let indent = line.len() - line.trim_start().len();
            let body = trimmed
                .strip_prefix("***")
                .map(str::trim)
                .unwrap_or(trimmed);
            if trimmed.starts_with("***") || indent <= 5 {
                let mut toks = body.split_whitespace();
                if let (Some(ver), Some(prio)) = (toks.next(), toks.next()) {
                    if let Ok(p) = prio.parse::<i64>() {
                        cur.versions.push((ver.to_string(), p));
                    }
                }
            }
        }
    }
    out
}

fn none_or(v: &str) -> Option<String> {
    let v = v.trim();
    (v != "(none)" && !v.is_empty()).then(|| v.to_string())
}

/// Build an apt command for `root`: plain on `/`; for another root, apt's `Dir` points at it
/// (its preferences, lists and dpkg status are then read there).
pub fn apt_command(root: &Root, program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("LC_ALL", "C")
        .env("LANGUAGE", "")
        .env("DEBIAN_FRONTEND", "noninteractive");
    if !root.is_system() {
        cmd.arg("-o").arg(format!("Dir={}", root.path().display()));
        // The status file as a lookup inside the root finds it: `var/lib/dpkg` may be an
        // absolute link within the root, which apt's own lookup would follow on the host.
        let status = root
            .resolve("/var/lib/dpkg/status", Missing::Fail)
            .map_or_else(
                |_| root.host_path("var/lib/dpkg/status"),
                |r| root.host_path(&r.path),
            );
        cmd.arg("-o")
            .arg(format!("Dir::State::status={}", status.display()));
    }
    cmd
}

/// Ask apt (read-only) how it sees `names`.
pub fn policy(root: &Root, names: &[String]) -> anyhow::Result<Vec<Policy>> {
    let mut args = vec!["policy"];
    args.extend(names.iter().map(String::as_str));
    let out = apt_cache_read_only(root, &args)?;
    if !out.status.success() {
        return Err(refused(format!(
            "apt-cache policy {} failed ({}): {}",
            names.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(parse_policy(&String::from_utf8_lossy(&out.stdout)))
}

/// Run `apt-cache <args>` read-only over `root`; its output whatever its exit status.
pub(crate) fn apt_cache_read_only(
    root: &Root,
    args: &[&str],
) -> anyhow::Result<std::process::Output> {
    let mut cmd = apt_command(root, "apt-cache");
    // verify changes nothing (and adds no bytes to an image layer), so apt must not (re)write
    // /var/cache/apt/*.bin. Pointing pkgcache at nothing made apt rebuild its cache in memory
    // on every run, 4.7 ms of verify's 17 (scripts/bench-verify). The root's caches, linked
    // from a private directory, are read as they are when apt finds them current; a rebuilt
    // one goes to the private directory (see [`PrivateCache`]).
    // On a root that is not `/`, apt reads the root's preferences, sources and lists through
    // a view whose every entry was found inside the root (see [`AptView`]).
    let _view = if root.is_system() {
        None
    } else {
        let view = AptView::of(root)?;
        cmd.args(view.options());
        Some(view)
    };
    let cache = PrivateCache::of(root);
    cmd.args(cache.options());
    cmd.args(args);
    let what = args.first().copied().unwrap_or("");
    if root.is_system() {
        cmd.output()
            .with_context(|| format!("cannot run apt-cache {what} (is apt installed?)"))
    } else {
        crate::process::run_bounded(
            &mut cmd,
            &format!("apt-cache {what} over the root {}", root.display()),
            crate::process::OVER_ROOT_TIME_LIMIT,
        )
    }
}

/// apt reads these itself on a root (`-o Dir=<root>`), with the host's lookup: a link among
/// them would be followed on the host, a FIFO would block it. Each maps an in-root path to its
/// place in the view and the apt option that points there.
const APT_VIEW_FILES: &[(&str, &str, &str)] = &[
    (
        "/etc/apt/preferences",
        "etc/preferences",
        "Dir::Etc::preferences",
    ),
    (
        "/etc/apt/sources.list",
        "etc/sources.list",
        "Dir::Etc::sourcelist",
    ),
];
const APT_VIEW_DIRS: &[(&str, &str, &str)] = &[
    (
        "/etc/apt/preferences.d",
        "etc/preferences.d",
        "Dir::Etc::preferencesparts",
    ),
    (
        "/etc/apt/sources.list.d",
        "etc/sources.list.d",
        "Dir::Etc::sourceparts",
    ),
    ("/var/lib/apt/lists", "lists", "Dir::State::Lists"),
];
/// More entries than a real host has in any of those directories.
const APT_VIEW_DIR_LIMIT: usize = 100_000;

/// A private directory of symlinks, one for each of apt's inputs in a root, each pointing at
/// the file a lookup *inside* the root finds (so a `file:` repository's list, an absolute link
/// in an image, reaches the image's file, never the host's), and nothing that is not a regular
/// file: a FIFO or device is refused by name before apt runs. Removed on drop.
struct AptView {
    dir: tempfile::TempDir,
    _removed_on_signal: crate::interrupt::Registered,
}

/// Where apt looks for the machine id (phased updates) unless told: `Dir::Etc` + `../machine-id`,
/// a path in the root apt would open itself. The view holds a copy read inside the root.
const APT_VIEW_MACHINE_ID: (&str, &str, &str) =
    ("/etc/machine-id", "etc/machine-id", "Dir::Etc::machine-id");
/// A machine id is 32 hex digits and a newline; anything longer is not one.
const MACHINE_ID_MAX: usize = 64;

impl AptView {
    fn of(root: &Root) -> Result<AptView, RootReadError> {
        let io = |e: std::io::Error, p: &str| RootReadError {
            root: root.path().to_path_buf(),
            path: p.into(),
            problem: ReadProblem::Io(e.to_string()),
        };
        let dir = tempfile::Builder::new()
            .prefix("rocm-pin-apt-view-")
            .tempdir()
            .map_err(|e| io(e, "/etc/apt"))?;
        let removed_on_signal = crate::interrupt::remove_on_signal(dir.path());
        for (_, view, _) in APT_VIEW_DIRS {
            std::fs::create_dir_all(dir.path().join(view)).map_err(|e| io(e, "/etc/apt"))?;
        }
        copy_machine_id(root, &dir.path().join(APT_VIEW_MACHINE_ID.1))
            .map_err(|e| io(e, APT_VIEW_MACHINE_ID.0))?;
        for (in_root, view, _) in APT_VIEW_FILES {
            link_in_view(root, in_root, &dir.path().join(view))?;
        }
        for (in_root, view, _) in APT_VIEW_DIRS {
            let names = match root.read_dir_names(in_root, APT_VIEW_DIR_LIMIT) {
                Ok(names) => names,
                Err(e) if e.is_missing() => continue,
                Err(e) => return Err(e),
            };
            for name in names {
                let entry = format!("{in_root}/{name}");
                link_in_view(root, &entry, &dir.path().join(view).join(&name))?;
            }
        }
        Ok(AptView {
            dir,
            _removed_on_signal: removed_on_signal,
        })
    }

    /// The `-o` options that point apt at the view.
    fn options(&self) -> Vec<String> {
        let at = |view: &str| self.dir.path().join(view).display().to_string();
        let mut out = Vec::new();
        for (_, view, option) in APT_VIEW_FILES {
            out.extend(["-o".to_string(), format!("{option}={}", at(view))]);
        }
        for (_, view, option) in APT_VIEW_DIRS {
            out.extend(["-o".to_string(), format!("{option}={}/", at(view))]);
        }
        let (_, view, option) = APT_VIEW_MACHINE_ID;
        out.extend(["-o".to_string(), format!("{option}={}", at(view))]);
        out
    }
}

/// Copy the root's machine id into the view: read inside the root, capped, only a regular file
/// holding one line; anything else (missing, a FIFO, a link out of the root, too long) leaves
/// the view without one, as on a host that has none (apt then phases no update in).
fn copy_machine_id(root: &Root, to: &Path) -> std::io::Result<()> {
    let Ok(id) = root.read_file(APT_VIEW_MACHINE_ID.0, FileKind::Config) else {
        return Ok(());
    };
    if id.len() > MACHINE_ID_MAX || id.iter().filter(|&&b| b == b'\n').count() > 1 {
        return Ok(());
    }
    std::fs::create_dir_all(to.parent().unwrap_or(Path::new("/")))?;
    std::fs::write(to, id)
}

/// Link `view` to the regular file `in_root` names inside the root; nothing for a missing
/// path or a directory (apt's `partial/`); a FIFO, device or socket is refused.
fn link_in_view(root: &Root, in_root: &str, view: &Path) -> Result<(), RootReadError> {
    let refuse = |problem| RootReadError {
        root: root.path().to_path_buf(),
        path: in_root.into(),
        problem,
    };
    let resolved = match root.resolve(in_root, Missing::Fail) {
        Ok(r) => r,
        Err(ResolveError::Missing { .. }) => return Ok(()),
        Err(e) => return Err(refuse(ReadProblem::Resolve(e))),
    };
    let host = root.host_path(&resolved.path);
    // lstat of a path with no symlink left in it: never opens, so a FIFO cannot block it.
    let meta =
        std::fs::symlink_metadata(&host).map_err(|e| refuse(ReadProblem::Io(e.to_string())))?;
    let kind = meta.file_type();
    if kind.is_file() {
        return std::os::unix::fs::symlink(&host, view)
            .map_err(|e| refuse(ReadProblem::Io(e.to_string())));
    }
    if kind.is_dir() {
        return Ok(());
    }
    let what = crate::filetype::describe(&meta);
    Err(refuse(ReadProblem::NotRegular { what }))
}

/// Symlinks to the root's `pkgcache.bin` and `srcpkgcache.bin` (each a regular file found
/// inside the root) in a directory of our own, removed on drop. Links, not copies: apt only
/// maps a current cache read-only, and writes a rebuilt one to a temporary file that it
/// renames over the name it was given (`FileFd::WriteAtomic`), which replaces our link and
/// never touches the root's file; copying both (72 MB with full Debian lists) made verify
/// write that much on every run (its apt step 87 ms against 41 ms linked at load 8:
/// docs/performance.md). Both, because apt rebuilds a stale pkgcache.bin (the dpkg status
/// changed since it was written, as after any dpkg run) from srcpkgcache.bin in a few
/// milliseconds, but without one from every package list: 0.5 s of CPU with full Debian lists.
struct PrivateCache {
    dir: Option<tempfile::TempDir>,
    _removed_on_signal: Option<crate::interrupt::Registered>,
    /// Whether the root had a srcpkgcache.bin that was linked.
    has_src: bool,
}

impl PrivateCache {
    const FILE: &'static str = "pkgcache.bin";
    const SRC_FILE: &'static str = "srcpkgcache.bin";

    fn of(root: &Root) -> PrivateCache {
        let Some(dir) = private_dir(&[std::env::temp_dir(), Path::new("/tmp").to_path_buf()])
        else {
            // Nowhere to put the links: apt builds its cache in memory, from every list.
            return PrivateCache {
                dir: None,
                _removed_on_signal: None,
                has_src: false,
            };
        };
        let removed_on_signal = crate::interrupt::remove_on_signal(dir.path());
        let linked = |name: &str| link_apt_cache(root, name, &dir.path().join(name));
        let has_pkg = linked(Self::FILE);
        let has_src = linked(Self::SRC_FILE);
        PrivateCache {
            dir: (has_pkg || has_src).then_some(dir),
            _removed_on_signal: Some(removed_on_signal),
            has_src,
        }
    }

    /// The `-o` options for apt's two cache files: the links, or empty (built in memory).
    fn options(&self) -> [String; 4] {
        let at = |name: &str, present: bool| match &self.dir {
            Some(d) if present => d.path().join(name).display().to_string(),
            _ => String::new(),
        };
        [
            "-o".to_string(),
            format!("Dir::Cache::pkgcache={}", at(Self::FILE, true)),
            "-o".to_string(),
            format!(
                "Dir::Cache::srcpkgcache={}",
                at(Self::SRC_FILE, self.has_src)
            ),
        ]
    }
}

/// A new private directory in the first of `candidates` that takes one. `$TMPDIR` first, then
/// `/tmp`: a TMPDIR that does not exist where verify runs (a caller's, inherited into a chroot)
/// must not cost every run apt's build of its cache from every package list (0.4-0.5 s of CPU
/// with full Debian lists: the 3-4x of docs/performance.md).
fn private_dir(candidates: &[std::path::PathBuf]) -> Option<tempfile::TempDir> {
    candidates.iter().find_map(|d| {
        tempfile::Builder::new()
            .prefix("rocm-pin-apt-")
            .tempdir_in(d)
            .ok()
    })
}

/// Link `to` to `/var/cache/apt/<name>` of `root` as found inside the root, when that is a
/// regular file under its cap; whether it was linked. Anything else (missing, a FIFO or device
/// that would block or feed apt, a link out of the root, an oversized file) is not linked, and
/// apt builds that cache itself.
fn link_apt_cache(root: &Root, name: &str, to: &Path) -> bool {
    let Ok(resolved) = root.resolve(format!("/var/cache/apt/{name}"), Missing::Fail) else {
        return false;
    };
    let host = root.host_path(&resolved.path);
    // lstat of a path with no symlink left in it: never opens, so a FIFO cannot block it.
    match std::fs::symlink_metadata(&host) {
        Ok(m) if m.is_file() && m.len() <= FileKind::AptCache.cap() => {
            std::os::unix::fs::symlink(&host, to).is_ok()
        }
        _ => false,
    }
}

/// One pin stanza from an apt preferences file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinStanza {
    pub packages: Vec<String>,
    pub pin: String,
    pub priority: i64,
}

/// Parse an apt preferences file into stanzas (Explanation lines and comments ignored).
pub fn parse_preferences(text: &str) -> anyhow::Result<Vec<PinStanza>> {
    let mut out = Vec::new();
    for para in text.split("\n\n") {
        let mut packages = None;
        let mut pin = None;
        let mut prio = None;
        for line in para.lines() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once(':') else {
                return Err(refused(format!("not a field: {line:?}")));
            };
            match k.trim().to_ascii_lowercase().as_str() {
                "package" => {
                    packages = Some(v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
                }
                "pin" => pin = Some(v.trim().to_string()),
                "pin-priority" => {
                    prio = Some(
                        v.trim()
                            .parse::<i64>()
                            .with_context(|| format!("bad Pin-Priority {:?}", v.trim()))?,
                    )
                }
                _ => {}
            }
        }
        match (packages, pin, prio) {
            (Some(packages), Some(pin), Some(priority)) => out.push(PinStanza {
                packages,
                pin,
                priority,
            }),
            (None, None, None) => {}
            _ => {
                return Err(refused(
                    "incomplete stanza (needs Package, Pin and Pin-Priority)",
                ))
            }
        }
    }
    Ok(out)
}

/// Which dependency solver apt uses on a root: it decides whether `apt-get -f install` can
/// remove a stock package forced in next to ours (apt 3's solver fails on it, measured).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Solver {
    /// The classic solver (`APT::Solver "internal"`, apt's default up to 3.0).
    Classic,
    /// apt 3's solver (`APT::Solver "3.0"`).
    Solver3,
}

/// `APT::Solver` as apt on `root` reads it from `etc/apt/apt.conf` and `etc/apt/apt.conf.d/*`
/// (the last setting wins; None when unset). Read from the files, not `apt-config`, so it works
/// on any root (apt reads its configuration before `-o Dir=` takes effect).
pub fn configured_solver(root: &Root) -> Option<String> {
    let mut files = Vec::new();
    if let Ok(names) = root.read_dir_names(
        "/etc/apt/apt.conf.d",
        crate::host::dpkgdb::MAX_CONFIG_DIR_ENTRIES,
    ) {
        // apt's rule: only [A-Za-z0-9_.-], no extension or `.conf` (names come sorted).
        files.extend(
            names
                .into_iter()
                .filter(|n| {
                    n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
                        && (!n.contains('.') || n.ends_with(".conf"))
                })
                .map(|n| format!("/etc/apt/apt.conf.d/{n}")),
        );
    }
    files.push("/etc/apt/apt.conf".to_string());
    let mut solver = None;
    for f in files {
        // Read inside the root, regular files under the cap only; anything else sets nothing.
        if let Ok(text) = root.read_to_string(&f, FileKind::Config) {
            for (key, value) in parse_apt_conf(&text) {
                if key.eq_ignore_ascii_case("APT::Solver") {
                    solver = Some(value);
                }
            }
        }
    }
    solver
}

/// The solver apt uses on `root`: `APT::Solver` when set, else apt's default for the installed
/// apt version (assumed: the 3.0 solver from apt 3.1 on, the release that made it Ubuntu's
/// default; trixie's apt 3.0 still defaults to the classic one, measured).
pub fn solver(root: &Root, apt_version: Option<&str>) -> Solver {
    let is3 = |v: &str| v.trim().starts_with('3');
    match configured_solver(root) {
        Some(v) if is3(&v) => Solver::Solver3,
        Some(_) => Solver::Classic,
        None => {
            let default3 = apt_version
                .is_some_and(|v| crate::deb::version::compare(v, "3.1~").is_ok_and(|o| o.is_ge()));
            if default3 {
                Solver::Solver3
            } else {
                Solver::Classic
            }
        }
    }
}

/// `(full key, value)` of every assignment in an apt configuration text: `A::B "v";`, scopes
/// `A { B "v"; };`, comments (`//`, `#`, `/* */`). `#include`/`#clear` are ignored.
pub fn parse_apt_conf(text: &str) -> Vec<(String, String)> {
    let mut tokens: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, tokens: &mut Vec<String>| {
        if !word.is_empty() {
            tokens.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                flush(&mut word, &mut tokens);
                let mut v = String::from("\"");
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    v.push(c);
                }
                tokens.push(v);
            }
            '#' => {
                flush(&mut word, &mut tokens);
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                flush(&mut word, &mut tokens);
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                flush(&mut word, &mut tokens);
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '{' | '}' | ';' => {
                flush(&mut word, &mut tokens);
                tokens.push(c.to_string());
            }
            c if c.is_whitespace() => flush(&mut word, &mut tokens),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut tokens);
    let mut out = Vec::new();
    let mut scope: Vec<String> = Vec::new();
    let mut key: Option<String> = None;
    for t in tokens {
        match t.as_str() {
            "{" => scope.push(key.take().unwrap_or_default()),
            "}" => {
                scope.pop();
            }
            ";" => key = None,
            _ if t.starts_with('"') => {
                if let Some(k) = key.take() {
                    let full = scope
                        .iter()
                        .chain(std::iter::once(&k))
                        .filter(|s| !s.is_empty())
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("::");
                    out.push((full, t[1..].to_string()));
                }
            }
            _ => key = Some(t),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = "hsa-rocr:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n     1.18.0.70205-1~24.04 -1\n        500 file:/srv/repo ./ Packages\n     1.18.0.70204-93~24.04 -1\n        500 file:/srv/repo ./ Packages\nhip-runtime-amd:\n  Installed: (none)\n  Candidate: 7.2.70204-93~24.04\n  Version table:\n     7.2.70204-93~24.04 500\n        500 file:/srv/repo ./ Packages\nrocm-core:\n  Installed: 7.2.4.70204-93~24.04\n  Candidate: 7.2.4.70204-93~24.04\n  Version table:\n *** 7.2.4.70204-93~24.04 100\n        100 /var/lib/dpkg/status\nvirt:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n";

    /// On this machine's own apt: the answer is apt's, and /var/cache/apt is exactly as it was
    /// (a stale cache is rebuilt in the private directory, a current one read through the link).
    #[test]
    fn policy_reads_apt_and_leaves_its_cache_untouched() {
        let cache_dir = std::path::Path::new("/var/cache/apt");
        let snapshot = || -> Vec<(String, Vec<u8>, Option<std::time::SystemTime>)> {
            ["pkgcache.bin", "srcpkgcache.bin"]
                .iter()
                .filter_map(|f| {
                    let p = cache_dir.join(f);
                    let bytes = std::fs::read(&p).ok()?;
                    let mtime = std::fs::metadata(&p).and_then(|m| m.modified()).ok();
                    Some((f.to_string(), bytes, mtime))
                })
                .collect()
        };
        let before = snapshot();
        let got = policy(&Root::system(), &["dpkg".to_string()]).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].package, "dpkg");
        assert!(got[0].installed.is_some(), "{got:?}");
        assert!(
            snapshot() == before,
            "apt-cache policy changed {}",
            cache_dir.display()
        );
    }

    /// A root whose cache apt cannot use (here: not a cache at all): apt rebuilds it in our
    /// private directory (over the link), answers from the root's dpkg status, and the root's
    /// file stays as it was.
    #[test]
    fn an_unusable_cache_in_the_root_is_rebuilt_in_the_private_directory_only() {
        let host = crate::ops::fakehost::FakeHost::new("7.2.4");
        std::fs::create_dir_all(host.root.host_path("/var/lib/apt/lists")).unwrap();
        host.write("/var/cache/apt/pkgcache.bin", "not a cache\n");
        let got = policy(&host.root, &["hsa-rocr".to_string()]).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].installed.is_some(), "{got:?}");
        let after = std::fs::read(host.root.host_path("/var/cache/apt/pkgcache.bin")).unwrap();
        assert_eq!(after, b"not a cache\n");
        assert!(!host.exists("/var/cache/apt/srcpkgcache.bin"));
    }

    /// Both of apt's caches are linked, not copied (a stale pkgcache.bin is then brought up to
    /// date from srcpkgcache.bin, not rebuilt from every list; nothing is written for a current
    /// one), and an absent one stays apt's in-memory build.
    #[test]
    fn both_caches_are_linked_and_a_missing_one_is_built_in_memory() {
        let host = crate::ops::fakehost::FakeHost::new("7.2.4");
        host.write("/var/cache/apt/pkgcache.bin", "pkg\n");
        host.write("/var/cache/apt/srcpkgcache.bin", "src\n");
        let cache = PrivateCache::of(&host.root);
        let [_, pkg, _, src] = cache.options();
        let at = |opt: &str, key: &str| std::path::PathBuf::from(opt.strip_prefix(key).unwrap());
        let (pkg, src) = (
            at(&pkg, "Dir::Cache::pkgcache="),
            at(&src, "Dir::Cache::srcpkgcache="),
        );
        assert!(!pkg.starts_with(host.root.path()), "{}", pkg.display());
        for (link, name) in [(&pkg, "pkgcache.bin"), (&src, "srcpkgcache.bin")] {
            let target = std::fs::read_link(link).expect("a link, not a copy");
            let root_file = host.root.host_path(format!("/var/cache/apt/{name}"));
            assert_eq!(target, root_file);
        }
        assert_eq!(std::fs::read(&pkg).unwrap(), b"pkg\n");

        let host = crate::ops::fakehost::FakeHost::new("7.2.4");
        host.write("/var/cache/apt/pkgcache.bin", "pkg\n");
        // Held: the links live as long as the cache value.
        let cache = PrivateCache::of(&host.root);
        let [_, pkg, _, src] = cache.options();
        assert_eq!(
            std::fs::read(at(&pkg, "Dir::Cache::pkgcache=")).unwrap(),
            b"pkg\n"
        );
        assert_eq!(src, "Dir::Cache::srcpkgcache=");

        let host = crate::ops::fakehost::FakeHost::new("7.2.4");
        let options = PrivateCache::of(&host.root).options();
        assert_eq!(options[1], "Dir::Cache::pkgcache=");
        assert_eq!(options[3], "Dir::Cache::srcpkgcache=");
    }

    /// A cache that is a FIFO (apt would block opening it) or a link leading out of the root is
    /// not linked: apt builds that one itself.
    #[test]
    fn a_fifo_or_a_link_out_of_the_root_is_not_linked() {
        let host = crate::ops::fakehost::FakeHost::new("7.2.4");
        std::fs::create_dir_all(host.root.host_path("/var/cache/apt")).unwrap();
        let fifo = host.root.host_path("/var/cache/apt/pkgcache.bin");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo {}", fifo.display());
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("srcpkgcache.bin"), "host\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("srcpkgcache.bin"),
            host.root.host_path("/var/cache/apt/srcpkgcache.bin"),
        )
        .unwrap();
        let options = PrivateCache::of(&host.root).options();
        assert_eq!(options[1], "Dir::Cache::pkgcache=");
        assert_eq!(options[3], "Dir::Cache::srcpkgcache=");
    }

    /// A TMPDIR that does not exist (a caller's, inherited into a chroot) falls back to the
    /// next directory instead of leaving apt without its caches.
    #[test]
    fn a_missing_tmpdir_falls_back_to_the_next_directory() {
        let usable = tempfile::tempdir().unwrap();
        let missing = usable.path().join("not-there");
        let dir = private_dir(&[missing.clone(), usable.path().to_path_buf()]).unwrap();
        assert!(
            dir.path().starts_with(usable.path()),
            "{}",
            dir.path().display()
        );
        assert!(private_dir(&[missing]).is_none());
    }

    #[test]
    fn parses_policy_blocks() {
        let p = parse_policy(POLICY);
        assert_eq!(p.len(), 4);
        assert!(p[0].is_pinned_away());
        assert_eq!(p[0].versions.len(), 2);
        assert!(!p[1].is_pinned_away());
        assert_eq!(p[2].versions, vec![("7.2.4.70204-93~24.04".into(), 100)]);
        assert_eq!(p[2].installed.as_deref(), Some("7.2.4.70204-93~24.04"));
        assert!(p[3].is_pinned_away() && p[3].versions.is_empty());
    }

    #[test]
    fn parses_apt_conf_keys_scopes_and_comments() {
        let text = "// c\nAPT::Solver \"internal\";\n# x\nAPT {\n  Solver \"3.0\"; /* a \"b\" */\n  Get { Assume-Yes \"true\"; };\n};\nDpkg::Use-Pty \"0\";\n";
        let kv = parse_apt_conf(text);
        assert_eq!(
            kv,
            vec![
                ("APT::Solver".to_string(), "internal".to_string()),
                ("APT::Solver".to_string(), "3.0".to_string()),
                ("APT::Get::Assume-Yes".to_string(), "true".to_string()),
                ("Dpkg::Use-Pty".to_string(), "0".to_string()),
            ]
        );
    }

    #[test]
    fn the_last_solver_setting_wins_and_apt_3_1_defaults_to_solver3() {
        let d = tempfile::tempdir().unwrap();
        let conf = d.path().join("etc/apt/apt.conf.d");
        std::fs::create_dir_all(&conf).unwrap();
        assert_eq!(solver(&Root::new(d.path()), Some("3.0.3")), Solver::Classic);
        assert_eq!(solver(&Root::new(d.path()), Some("3.1.6")), Solver::Solver3);
        std::fs::write(conf.join("50a"), "APT::Solver \"3.0\";\n").unwrap();
        assert_eq!(solver(&Root::new(d.path()), Some("2.6.1")), Solver::Solver3);
        std::fs::write(conf.join("60b"), "APT { Solver \"internal\"; };\n").unwrap();
        // Not read by apt: an extension other than .conf.
        std::fs::write(conf.join("70c.disabled"), "APT::Solver \"3.0\";\n").unwrap();
        assert_eq!(
            configured_solver(&Root::new(d.path())).as_deref(),
            Some("internal")
        );
        assert_eq!(solver(&Root::new(d.path()), Some("3.1.6")), Solver::Classic);
    }

    #[test]
    fn parses_preferences() {
        let s = parse_preferences(
            "# rocm-pin\nExplanation: x\nPackage: hsa-rocr\nPin: version *\nPin-Priority: -1\n",
        )
        .unwrap();
        assert_eq!(s[0].packages, vec!["hsa-rocr"]);
        assert_eq!(s[0].priority, -1);
        assert!(parse_preferences("Package: a\nPin-Priority: x\nPin: version *\n").is_err());
        assert!(parse_preferences("Package: a\n").is_err());
    }
}
