//! verify's shadow-runtime check (issue 33): a second copy of the runtime that a real consumer
//! maps before ours. `host::shadow` finds every file whose SONAME is one of the marker's
//! libraries outside our packages, and who ld.so would map it for; this judges each copy:
//!
//! - the patched build (the same file as ours: a hard link or a symlink to it, or a byte copy
//!   whose sha256 is the marker's) → listed, fine;
//! - not the patched build, mapped by a consumer → a failure naming the copy, the consumer and
//!   the fix (make the copy a link to ours);
//! - not the patched build, mapped by nothing → a warning (a stale copy);
//! - mapped only by ld.so's default search → the `loader` check judges it; listed here.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;

use crate::host::loader::CacheEntry;
use crate::host::root::{FileKind, Root};
use crate::host::shadow::{self, Mapping, Scope, DEFAULT_SEARCH};
use crate::image::limits::ImageLimits;
use crate::rocm;

/// One copy as the report carries it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShadowCopy {
    pub path: String,
    /// The file it is (the last symlink followed inside the root).
    pub file: String,
    pub soname: String,
    /// The patched build: the same file as ours, or a byte copy of it.
    pub patched: bool,
    /// Where the search found it.
    pub found_in: BTreeSet<String>,
    /// Who ld.so would map it for (empty: a stale copy).
    pub mapped_by: Vec<Mapping>,
}

impl ShadowCopy {
    /// The report's record of a copy the search found, judged `patched` or not.
    pub(crate) fn of(copy: &shadow::Copy, patched: bool) -> ShadowCopy {
        ShadowCopy {
            path: copy.path.clone(),
            file: copy.file.clone(),
            soname: copy.soname.clone(),
            patched,
            found_in: copy.found_in.clone(),
            mapped_by: copy.mapped_by.clone(),
        }
    }
}

/// What the shadow check found (verify's and status's JSON: `shadow`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ShadowReport {
    /// Every copy of one of our sonames outside our packages.
    pub copies: Vec<ShadowCopy>,
    /// The consumers resolved (ELF files under `site-packages/torch/lib`, `--consumer`).
    pub consumers: Vec<String>,
    /// Stale copies, unresolved NEEDED entries, copies only the default search maps.
    pub warnings: Vec<String>,
    /// Entries left out, with why (symlink loops, dangling links, unreadable consumers).
    pub skipped: Vec<String>,
    pub entries_walked: u64,
}

/// One `shadow` check: subject, pass/fail, detail.
pub type ShadowCheck = (String, bool, String);

/// Find and judge every copy. `lists`: our packages' file lists.
pub fn check(
    root: &Root,
    consumers: &[std::path::PathBuf],
    ld_library_path: Option<&str>,
    cache: &[CacheEntry],
    marker: &rocm::Marker,
    lists: &BTreeMap<String, Vec<String>>,
) -> (Vec<ShadowCheck>, ShadowReport) {
    let sonames: BTreeSet<String> = marker.libraries.iter().map(|l| l.soname.clone()).collect();
    let name_matches = |n: &str| rocm::family_of(n).is_some();
    let scope = Scope {
        sonames: &sonames,
        name_matches: &name_matches,
        consumers,
        ld_library_path,
        cache,
        max_entries: ImageLimits::default().entries,
    };
    let found = shadow::find(root, &scope);
    let ours: BTreeSet<&str> = lists.values().flatten().map(String::as_str).collect();
    let mut judge = Patched::new(root, marker);
    let mut checks = Vec::new();
    let mut report = ShadowReport {
        consumers: found.consumers.clone(),
        skipped: found.skipped.clone(),
        entries_walked: found.entries_walked,
        ..ShadowReport::default()
    };
    for u in &found.unresolved {
        report
            .warnings
            .push(format!("{u} (the program would not start)"));
    }
    for copy in found
        .copies
        .iter()
        .filter(|c| !ours.contains(c.path.as_str()))
    {
        let patched = judge.is_patched(&copy.soname, copy.identity, &copy.file);
        let consumers: Vec<&Mapping> = copy
            .mapped_by
            .iter()
            .filter(|m| m.consumer != DEFAULT_SEARCH)
            .collect();
        let fix = fix_command(root, marker, &copy.soname, &copy.path);
        if !patched && !consumers.is_empty() {
            checks.push((copy.path.clone(), false, failure(copy, &consumers, &fix)));
        } else if !patched && copy.mapped_by.is_empty() {
            report.warnings.push(format!(
                "{}: a stale copy of {} (not the patched build) that no consumer found maps; \
                 remove it, or make it a link to ours so nothing maps the stock one later: {fix}",
                copy.path, copy.soname
            ));
        } else if !patched {
            report.warnings.push(format!(
                "{}: {} (not the patched build) is what {DEFAULT_SEARCH} opens; the `loader` check judges it",
                copy.path, copy.soname
            ));
        }
        report.copies.push(ShadowCopy::of(copy, patched));
    }
    if let Some(why) = &found.incomplete {
        checks.push((
            String::new(),
            false,
            format!(
                "the search for other copies of the runtime stopped short ({why}); copies beyond \
                 it are not judged: the tree holds more entries than verify reads ({})",
                scope.max_entries
            ),
        ));
    }
    if checks.is_empty() {
        let patched = report.copies.iter().filter(|c| c.patched).count();
        checks.push((
            String::new(),
            true,
            format!(
                "{} other copies of the pinned libraries found ({patched} the patched build, {} \
                 stale), none mapped by a consumer; {} consumers resolved as ld.so does, {} \
                 entries searched",
                report.copies.len(),
                report.copies.len() - patched,
                report.consumers.len(),
                report.entries_walked
            ),
        ));
    }
    (checks, report)
}

/// The failure of a copy that consumers map.
fn failure(copy: &shadow::Copy, consumers: &[&Mapping], fix: &str) -> String {
    let named: Vec<String> = consumers
        .iter()
        .take(3)
        .map(|m| {
            let through = if m.needed_by == m.consumer {
                String::new()
            } else {
                format!(", for {}", m.needed_by)
            };
            format!("{} (via {}{through})", m.consumer, m.via.describe())
        })
        .collect();
    let more = consumers.len().saturating_sub(named.len());
    format!(
        "{} here is not the patched build, and {}{} map{} it before ours; make it a link to ours: \
         {fix} (a pip install that reinstalls the wheel puts the stock file back: run verify after one)",
        copy.soname,
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
        if consumers.len() == 1 { "s" } else { "" },
    )
}

/// The command that replaces `copy` with a link to our library of `soname`, as it runs on
/// the system that holds it (a root: inside it).
fn fix_command(root: &Root, marker: &rocm::Marker, soname: &str, copy: &str) -> String {
    let ours = marker
        .libraries
        .iter()
        .find(|l| l.soname == soname)
        .map(|l| match l.path.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{soname}"),
            None => l.path.clone(),
        })
        .unwrap_or_default();
    let command = format!("ln -sf {ours} {copy}");
    if root.is_system() {
        format!("`{command}`")
    } else {
        format!(
            "`chroot {} {command}` (in an image: a RUN step `{command}`)",
            root.display()
        )
    }
}

/// Whether a file is the patched build: the same inode as one of our libraries, or the same
/// bytes (sha256 = the marker's). Each inode is hashed once.
struct Patched<'a> {
    root: &'a Root,
    marker: &'a rocm::Marker,
    ours: BTreeSet<(u64, u64)>,
    hashed: BTreeMap<(u64, u64), Option<String>>,
}

impl<'a> Patched<'a> {
    fn new(root: &'a Root, marker: &'a rocm::Marker) -> Self {
        let ours = marker
            .libraries
            .iter()
            .flat_map(|l| std::iter::once(&l.path).chain(&l.aliases))
            .filter_map(|p| root.metadata(p).ok())
            .map(|m| (m.dev(), m.ino()))
            .collect();
        Patched {
            root,
            marker,
            ours,
            hashed: BTreeMap::new(),
        }
    }

    fn is_patched(&mut self, soname: &str, identity: (u64, u64), file: &str) -> bool {
        if self.ours.contains(&identity) {
            return true;
        }
        let root = self.root;
        let sha = self
            .hashed
            .entry(identity)
            .or_insert_with(|| {
                let (f, _) = root.open_regular(file, FileKind::PackagedFile).ok()?;
                crate::digest::digests_reader(f, true).ok()?.sha256
            })
            .clone();
        sha.is_some_and(|sha| {
            self.marker
                .libraries
                .iter()
                .any(|l| l.soname == soname && l.sha256.eq_ignore_ascii_case(&sha))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker() -> rocm::Marker {
        serde_json::from_value(serde_json::json!({
            "commit": "c", "commit_time": 0, "flavor": "pinned", "prefix": "/opt/rocm-7.2.4",
            "replaced": [], "files": {}, "tool_version": "t",
            "libraries": [{
                "path": "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.1", "soname": "libamdhip64.so.7",
                "sha256": "0", "aliases": [], "package": "hip-runtime-amd-pinned"
            }]
        }))
        .unwrap()
    }

    #[test]
    fn the_fix_links_the_copy_to_our_soname_link_where_the_copy_lives() {
        let copy = "/opt/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib/libamdhip64.so.7";
        let on_host = fix_command(&Root::system(), &marker(), "libamdhip64.so.7", copy);
        assert_eq!(
            on_host,
            format!("`ln -sf /opt/rocm-7.2.4/lib/libamdhip64.so.7 {copy}`")
        );
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let in_root = fix_command(&root, &marker(), "libamdhip64.so.7", copy);
        assert!(
            in_root.starts_with(&format!("`chroot {} ln -sf ", root.display())),
            "{in_root}"
        );
        assert!(in_root.contains("a RUN step `ln -sf "), "{in_root}");
    }
}
