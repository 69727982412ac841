//! The one reader of the dpkg status database (`var/lib/dpkg/status`): a bounded read through
//! [`Root`], one deb822 parse, every package name checked — [`StatusSnapshot`]. Its views:
//! [`StatusEntry`], the handful of fields `verify`, `install` and `status` judge (Package,
//! Status, Version, Architecture, Protected, Provides, Conffiles, X-Rocm-Pin-Commit), and
//! `dpkgdb::DpkgDb`, the packaging side's whole-paragraph view with file lists and owners,
//! built from the same snapshot. Plus a package's `info/<pkg>.list` and `.md5sums`. Read-only.
//!
//! An operation reads the snapshot once and passes it down; it reads again only after apt or
//! dpkg changed the database. [`status_parses`] counts the parses (the read-once tests use it).

mod error;

pub use error::BadRootValue;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::deb::Paragraph;
use crate::host::dpkgfmt::parse_conffiles_field;
use crate::host::refused;
use crate::host::root::{FileKind, Root};

/// The status database, inside a root.
pub const STATUS_FILE: &str = "/var/lib/dpkg/status";

/// The status database under `root`, as a host path (for writers and tests; readers go through
/// [`Root::read_file`]).
pub fn status_path(root: &Root) -> PathBuf {
    root.host_path(STATUS_FILE)
}

/// Is `name` a dpkg package name (Debian policy §5.6.1: `[a-z0-9][a-z0-9+.-]+`), optionally
/// with an `:arch` qualifier? Anything else read from a root is never used in a path.
pub fn is_package_name(name: &str) -> bool {
    let (bare, arch) = match name.split_once(':') {
        Some((b, a)) => (b, Some(a)),
        None => (name, None),
    };
    let bare_ok = bare.len() >= 2
        && bare
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bare
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+.-".contains(&b));
    let arch_ok = arch.is_none_or(|a| {
        !a.is_empty()
            && a.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    bare_ok && arch_ok
}

/// `BadRootValue` for a package name that is not one (read from `file` in `root`).
pub fn bad_package_name(root: &Root, file: &str, name: &str) -> BadRootValue {
    BadRootValue {
        root: root.path().to_path_buf(),
        file: file.into(),
        value: name.to_string(),
        why: "not a dpkg package name ([a-z0-9][a-z0-9+.-]+)",
    }
}

/// One package paragraph of the status file, with the fields rocm-pin judges.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StatusEntry {
    pub package: String,
    pub version: String,
    pub architecture: String,
    /// The three words of `Status:`, e.g. `install ok installed`.
    pub status: String,
    pub protected: bool,
    pub provides: String,
    /// The fields named by [`read_status_with`]'s `extra` (rocm-pin's own, `rocm::PIN_FIELDS`),
    /// when present.
    pub extra: BTreeMap<String, String>,
    /// Conffiles: path → md5 (`newconffile` and obsolete markers kept as dpkg wrote them).
    pub conffiles: Vec<(String, String)>,
}

impl StatusEntry {
    /// Installed and configured: dpkg-query's `ii`.
    pub fn is_installed_ok(&self) -> bool {
        self.status == "install ok installed"
    }
    /// dpkg's current-state word (last of the three): `installed`, `config-files`, `not-installed`, …
    pub fn state(&self) -> &str {
        self.status.rsplit(' ').next().unwrap_or("")
    }
    /// Has files on disk in any state (everything except `not-installed` and `config-files`).
    pub fn has_files(&self) -> bool {
        !matches!(self.state(), "not-installed" | "config-files" | "")
    }
    /// dpkg-query's two-letter abbreviation (`ii`, `rc`, `iU`, …) for messages.
    pub fn abbrev(&self) -> String {
        let mut words = self.status.split(' ');
        let want = match words.next() {
            Some("install") => 'i',
            Some("hold") => 'h',
            Some("deinstall") => 'r',
            Some("purge") => 'p',
            _ => 'u',
        };
        let cur = match self.state() {
            "installed" => 'i',
            "config-files" => 'c',
            "unpacked" => 'U',
            "half-installed" => 'H',
            "half-configured" => 'F',
            "triggers-awaited" => 'W',
            "triggers-pending" => 't',
            _ => 'n',
        };
        format!("{want}{cur}")
    }
}

thread_local! {
    /// Status files read and parsed on this thread so far (per thread, so parallel tests do
    /// not count each other's reads).
    static STATUS_PARSES: Cell<usize> = const { Cell::new(0) };
}

/// How many times this thread has read and parsed a dpkg status file. The read-once unit tests
/// compare it around an operation; tests/install/read_once.rs counts the real binary's opens
/// with strace.
pub fn status_parses() -> usize {
    STATUS_PARSES.with(Cell::get)
}

/// The status file of a root as read at one moment: every paragraph, each with a Package field
/// that is a dpkg package name. Re-read only after apt or dpkg changed the database.
#[derive(Debug, Clone, Default)]
pub struct StatusSnapshot {
    paragraphs: Vec<Paragraph>,
}

impl StatusSnapshot {
    /// Read `/var/lib/dpkg/status` under `root`.
    pub fn read(root: &Root) -> anyhow::Result<Self> {
        Self::read_at(root, Path::new(STATUS_FILE))
    }

    /// Read the status file at `status_file` (inside the root: dpkg's `--admindir` + `status`).
    /// The read is bounded ([`FileKind::DpkgStatus`]) and stays inside the root.
    pub fn read_at(root: &Root, status_file: &Path) -> anyhow::Result<Self> {
        STATUS_PARSES.with(|n| n.set(n.get() + 1));
        let text = root
            .read_to_string(status_file, FileKind::DpkgStatus)
            .map_err(anyhow::Error::from)
            .with_context(|| {
                format!(
                    "cannot read the dpkg status file (is {} a Debian system root?)",
                    root.path().display()
                )
            })?;
        let in_file = || format!("in {}", root.host_path(status_file).display());
        let paragraphs =
            Paragraph::parse_many(&text).map_err(|e| refused(format!("{}: {e}", in_file())))?;
        for (i, p) in paragraphs.iter().enumerate() {
            let package = p.get("Package").filter(|v| !v.is_empty()).ok_or_else(|| {
                refused(format!(
                    "{}: paragraph {} has no Package field",
                    in_file(),
                    i + 1
                ))
            })?;
            if !is_package_name(package) {
                let file = status_file.display().to_string();
                return Err(bad_package_name(root, &file, package).into());
            }
        }
        Ok(StatusSnapshot { paragraphs })
    }

    /// Every paragraph as dpkg wrote it (any state, config-files and not-installed included).
    pub fn paragraphs(&self) -> &[Paragraph] {
        &self.paragraphs
    }

    pub fn into_paragraphs(self) -> Vec<Paragraph> {
        self.paragraphs
    }

    /// The narrow view: the standard fields of [`StatusEntry`] and any field named in `extra`
    /// (compared case-insensitively).
    pub fn entries(&self, extra: &[&str]) -> Vec<StatusEntry> {
        self.paragraphs
            .iter()
            .map(|p| status_entry(p, extra))
            .collect()
    }
}

/// Read every paragraph of the status file under `root`, keeping the standard fields above and
/// any field named in `extra` (compared case-insensitively).
pub fn read_status_with(root: &Root, extra: &[&str]) -> anyhow::Result<Vec<StatusEntry>> {
    Ok(StatusSnapshot::read(root)?.entries(extra))
}

/// Parse status-file text (deb822 paragraphs, read by the one deb822 parser in
/// `deb::control`). Only the fields rocm-pin needs are kept; Conffiles keeps one entry per
/// line, Provides is joined onto one line.
pub fn parse_status(text: &str, extra: &[&str]) -> anyhow::Result<Vec<StatusEntry>> {
    let paragraphs = Paragraph::parse_many(text).map_err(|e| refused(format!("{e}")))?;
    for (i, p) in paragraphs.iter().enumerate() {
        p.get("Package")
            .filter(|v| !v.is_empty())
            .ok_or_else(|| refused(format!("paragraph {} has no Package field", i + 1)))?;
    }
    Ok(paragraphs.iter().map(|p| status_entry(p, extra)).collect())
}

/// The [`StatusEntry`] view of one paragraph (its Package field checked by the reader).
fn status_entry(p: &Paragraph, extra: &[&str]) -> StatusEntry {
    let field = |name: &str| p.get(name).unwrap_or("").to_string();
    StatusEntry {
        package: field("Package"),
        version: field("Version"),
        architecture: field("Architecture"),
        status: field("Status")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        protected: p
            .get("Protected")
            .is_some_and(|v| v.eq_ignore_ascii_case("yes")),
        provides: field("Provides")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        extra: extra
            .iter()
            .filter_map(|x| p.get(x).map(|v| (x.to_string(), v.trim().to_string())))
            .collect(),
        conffiles: parse_conffiles_field(&field("Conffiles"))
            .into_iter()
            .map(|c| (c.path, c.md5))
            .collect(),
    }
}

/// `info/<pkg>.<suffix>` inside the root, honouring the `<pkg>:<arch>.<suffix>` naming of
/// `Multi-Arch: same` packages; `None` when neither exists.
fn info_file(
    root: &Root,
    package: &str,
    arch: &str,
    suffix: &str,
) -> anyhow::Result<Option<String>> {
    if !is_package_name(package) {
        return Err(bad_package_name(root, STATUS_FILE, package).into());
    }
    let plain = format!("/var/lib/dpkg/info/{package}.{suffix}");
    if root.exists(&plain) {
        return Ok(Some(plain));
    }
    let qualified = format!("/var/lib/dpkg/info/{package}:{arch}.{suffix}");
    Ok(
        (is_package_name(&format!("{package}:{arch}")) && root.exists(&qualified))
            .then_some(qualified),
    )
}

/// The paths dpkg lists for an installed package (`info/<pkg>.list`), directories included.
pub fn package_list(root: &Root, package: &str, arch: &str) -> anyhow::Result<Vec<String>> {
    let path = info_file(root, package, arch, "list")?.with_context(|| {
        format!(
            "dpkg has no file list for {package} (var/lib/dpkg/info/{package}.list under {})",
            root.path().display()
        )
    })?;
    read_file_list(root, Path::new(&path))
}

/// The one reader of a dpkg file list (`info/<pkg>.list` at `list`, wherever the database
/// is): its paths in dpkg's order, directories included, `/.` dropped. A path that is not a
/// clean absolute one refuses the whole list.
pub(crate) fn read_file_list(root: &Root, list: &Path) -> anyhow::Result<Vec<String>> {
    let text = root
        .read_to_string(list, FileKind::DpkgList)
        .map_err(anyhow::Error::from)?;
    let paths: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty() && *l != "/.")
        .map(str::to_string)
        .collect();
    check_listed_paths(root, &list.display().to_string(), &paths)?;
    Ok(paths)
}

/// Every path of a file list (`info/<pkg>.list` at `file`) is a clean absolute path, or the
/// list is refused naming the first that is not: such a path is never used.
fn check_listed_paths(root: &Root, file: &str, paths: &[String]) -> anyhow::Result<()> {
    match paths
        .iter()
        .find_map(|p| crate::host::root::unclean_in_root_path(p).map(|why| (p, why)))
    {
        None => Ok(()),
        Some((p, why)) => Err(BadRootValue {
            root: root.path().to_path_buf(),
            file: file.into(),
            value: p.clone(),
            why,
        }
        .into()),
    }
}

/// dpkg's md5sums for an installed package: absolute path → md5 hex. Absent file → empty
/// (dpkg writes one for every package it installs, so an absent file is reported by callers).
pub fn package_md5sums(
    root: &Root,
    package: &str,
    arch: &str,
) -> anyhow::Result<Option<Vec<(String, String)>>> {
    let Some(path) = info_file(root, package, arch, "md5sums")? else {
        return Ok(None);
    };
    let text = root
        .read_to_string(&path, FileKind::DpkgMd5sums)
        .map_err(anyhow::Error::from)?;
    let sums = crate::host::dpkgfmt::parse_md5sums(&text)
        .with_context(|| format!("{path} (in root {}): malformed", root.path().display()))?;
    Ok(Some(sums.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Package: hsa-rocr-pinned\nStatus: install ok installed\nProtected: yes\nArchitecture: amd64\nVersion: 1.18.0.70204-93~24.04+pin1.gb539bf7\nProvides: hsa-rocr (= 1.18.0.70204-93~24.04)\nConffiles:\n /etc/apt/preferences.d/hsa-rocr-pinned 0123456789abcdef0123456789abcdef\nDescription: x\n more\nX-Rocm-Pin-Commit: b539\n\nPackage: hsa-rocr\nStatus: deinstall ok config-files\nVersion: 1\nArchitecture: amd64\n";

    #[test]
    fn parses_the_fields_verify_needs() {
        let e = parse_status(STATUS, &["X-Rocm-Pin-Commit"]).unwrap();
        assert_eq!(e.len(), 2);
        assert!(e[0].is_installed_ok() && e[0].protected);
        assert_eq!(e[0].abbrev(), "ii");
        assert_eq!(e[0].extra.get("X-Rocm-Pin-Commit").unwrap(), "b539");
        assert_eq!(e[0].conffiles.len(), 1);
        assert_eq!(e[0].provides, "hsa-rocr (= 1.18.0.70204-93~24.04)");
        assert_eq!(e[1].abbrev(), "rc");
        assert!(!e[1].has_files());
    }

    #[test]
    fn refuses_garbage() {
        assert!(parse_status("no colon here\n", &[]).is_err());
        assert!(parse_status(" leading continuation\n", &[]).is_err());
        assert!(parse_status("Version: 1\n", &[]).is_err());
    }

    #[test]
    fn package_names_from_a_root_are_policy_names() {
        for good in [
            "libc6",
            "hsa-rocr-pinned",
            "g++",
            "libstdc++6:amd64",
            "x.y-z+1",
        ] {
            assert!(is_package_name(good), "{good}");
        }
        for bad in [
            "../../../etc/x",
            "a",
            "Libc6",
            "a/b",
            "-a",
            "libc6:",
            "a\0b",
            ".x",
        ] {
            assert!(!is_package_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_status_file_naming_a_path_as_a_package_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("var/lib/dpkg")).unwrap();
        std::fs::write(
            d.path().join("var/lib/dpkg/status"),
            "Package: ../../../etc/hostname\nStatus: install ok installed\nVersion: 1\n",
        )
        .unwrap();
        let e = read_status_with(&Root::new(d.path()), &[]).unwrap_err();
        assert!(
            matches!(
                crate::error::find(&e),
                Some(BadRootValue { value, .. }) if value == "../../../etc/hostname"
            ),
            "{e:#}"
        );
    }
}
