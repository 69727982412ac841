//! dpkg's path-exclude / path-include configuration (dpkg.cfg.d): excluded files are absent by design.
//!
//! dpkg reads `/etc/dpkg/dpkg.cfg` and every file in `/etc/dpkg/dpkg.cfg.d/` (in name order,
//! names made of `[A-Za-z0-9_-]` only, like run-parts), and applies the filters in the order it
//! read them: the last filter matching a path decides (`filter_should_skip()` in dpkg's
//! src/main/filters.c), with `fnmatch(pattern, path, 0)` — so `*` also matches `/`.

use crate::host::dpkgfmt::MAX_CONFIG_DIR_ENTRIES;
use crate::host::root::{FileKind, Root};
use anyhow::Context;
use std::ffi::CString;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Filter {
    pub include: bool,
    pub pattern: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct PathFilters {
    pub filters: Vec<Filter>,
}

impl PathFilters {
    /// Read the filters under `root` (missing files mean no filters).
    pub(crate) fn load(root: &Root) -> anyhow::Result<PathFilters> {
        let mut texts = Vec::new();
        if let Ok(t) = root.read_to_string("/etc/dpkg/dpkg.cfg", FileKind::Config) {
            texts.push(t);
        }
        let dir = "/etc/dpkg/dpkg.cfg.d";
        if let Ok(names) = root.read_dir_names(dir, MAX_CONFIG_DIR_ENTRIES) {
            let names: Vec<_> = names
                .into_iter()
                .filter(|n| {
                    !n.is_empty()
                        && n.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                })
                .collect();
            for n in names {
                // dpkg reads regular files only (run-parts names); anything else is skipped.
                let p = format!("{dir}/{n}");
                if root.metadata(&p).is_ok_and(|m| m.is_file()) {
                    let t = root
                        .read_to_string(&p, FileKind::Config)
                        .map_err(anyhow::Error::from)
                        .context("cannot read dpkg configuration")?;
                    texts.push(t);
                }
            }
        }
        let mut filters = Vec::new();
        for t in &texts {
            filters.extend(parse(t));
        }
        Ok(PathFilters { filters })
    }

    /// True when dpkg skips `path` (absolute, as in the package) while unpacking.
    pub(crate) fn is_excluded(&self, path: &str) -> bool {
        let mut skip = false;
        for f in &self.filters {
            if fnmatch(&f.pattern, path) {
                skip = !f.include;
            }
        }
        skip
    }
}

/// Parse one dpkg configuration file's `path-exclude` / `path-include` lines. dpkg accepts
/// `option=value` and `option value`, with `#` comments on their own lines.
pub(crate) fn parse(text: &str) -> Vec<Filter> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (opt, value) = match line.find(|c: char| c == '=' || c.is_whitespace()) {
            Some(i) => (&line[..i], line[i + 1..].trim()),
            None => (line, ""),
        };
        let opt = opt.trim_start_matches("--");
        let include = match opt {
            "path-exclude" => false,
            "path-include" => true,
            _ => continue,
        };
        if !value.is_empty() {
            out.push(Filter {
                include,
                pattern: value.to_string(),
            });
        }
    }
    out
}

/// libc `fnmatch(pattern, s, 0)`, exactly what dpkg calls (and glibc's ld.so.conf `include`
/// globbing, for a single file name).
pub(crate) fn fnmatch(pattern: &str, s: &str) -> bool {
    let (Ok(p), Ok(s)) = (CString::new(pattern), CString::new(s)) else {
        return false;
    };
    // SAFETY: both are valid NUL-terminated C strings that outlive the call.
    unsafe { libc::fnmatch(p.as_ptr(), s.as_ptr(), 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ubuntu's docker base image ships this file (/etc/dpkg/dpkg.cfg.d/excludes).
    const UBUNTU: &str = "# Drop all man pages\npath-exclude=/usr/share/man/*\n\n# Drop all documentation ...\npath-exclude=/usr/share/doc/*\n\n# ... except copyright files ...\npath-include=/usr/share/doc/*/copyright\n";

    #[test]
    fn last_matching_filter_wins_like_dpkg() {
        let f = PathFilters {
            filters: parse(UBUNTU),
        };
        assert!(f.is_excluded("/usr/share/doc/hsa-rocr-pinned/changelog.Debian.gz"));
        assert!(!f.is_excluded("/usr/share/doc/hsa-rocr-pinned/copyright"));
        assert!(f.is_excluded("/usr/share/man/man1/x.1.gz"));
        // fnmatch without FNM_PATHNAME: `*` crosses `/`.
        assert!(f.is_excluded("/usr/share/doc/a/b/c"));
        assert!(!f.is_excluded("/opt/rocm-7.2.4/lib/libamdhip64.so.7"));
    }

    #[test]
    fn loads_from_a_root_in_name_order() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("etc/dpkg/dpkg.cfg.d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("10excl"), "path-exclude /opt/x/*\n").unwrap();
        std::fs::write(d.join("20incl"), "path-include=/opt/x/keep\n").unwrap();
        // Not read by dpkg: a dot in the name.
        std::fs::write(d.join("30.dpkg-old"), "path-exclude=/opt/x/keep\n").unwrap();
        let f = PathFilters::load(&Root::new(root.path())).unwrap();
        assert_eq!(f.filters.len(), 2);
        assert!(f.is_excluded("/opt/x/drop"));
        assert!(!f.is_excluded("/opt/x/keep"));
    }
}
