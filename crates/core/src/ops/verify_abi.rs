//! verify's ABI check (issue 32): every installed program or library that links the pair must
//! bind to OUR installed libraries, judged from the ELF files without running them. A
//! consumer's version needs (DT_VERNEED) naming one of our sonames must be nodes our
//! DT_VERDEF defines, and each of its undefined symbols versioned with such a node must be
//! exported by ours in that node; an unversioned one the marker records as missing (packaged
//! with `--allow-missing-symbols`) fails too. Otherwise ld.so stops the program with exit 127
//! ("undefined symbol: hsa_agent_iterate_isas, version ROCR_1") while every file checks out.
//!
//! The consumers: the files of the packages that Depend on the stock or our package names
//! (Debian's dependants), AMD's libraries and programs in `<prefix>/lib` and `<prefix>/bin`,
//! and those given with `--consumer`. Bounded: only regular ELF files, at most
//! [`MAX_CONSUMERS`] of them, each at most [`MAX_CONSUMER_BYTES`], all read inside the root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::deb::control::parse_relations;
use crate::elf::{ExportedSymbol, Linkage};
use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::rocm;

/// At most this many consumer files are read (the rest are counted, not checked).
pub const MAX_CONSUMERS: usize = 4096;
/// A consumer file larger than this is skipped (ld.so would map it; we only read tables).
pub const MAX_CONSUMER_BYTES: u64 = 4 << 30;
/// At most this many names listed in one directory of the prefix.
const MAX_DIR_ENTRIES: usize = 20_000;
/// How many missing symbols one line names before "and N more".
const NAMED: usize = 5;

/// `a, b, c, d, e and 12 more`.
pub fn first_few(names: &[String]) -> String {
    let shown = names.len().min(NAMED);
    let mut text = names[..shown].join(", ");
    if names.len() > shown {
        text.push_str(&format!(" and {} more", names.len() - shown));
    }
    text
}

/// One of our installed libraries: what it exports and the version nodes it defines.
struct Ours {
    exports: Vec<ExportedSymbol>,
    versions: BTreeSet<String>,
    /// Unversioned names the marker records as missing (packaged with --allow-missing-symbols).
    missing: BTreeSet<String>,
}

/// One `abi` check: its subject (a path, `""` for the summary), pass/fail, detail.
pub type AbiCheck = (String, bool, String);

/// Collects the `abi` checks in the order made.
struct Checks(Vec<AbiCheck>);
impl Checks {
    fn add(&mut self, _name: &str, subject: &str, ok: bool, detail: impl Into<String>) {
        self.0.push((subject.to_string(), ok, detail.into()));
    }
}

/// The `abi` checks: one for every consumer that would not bind to ours, and one summary.
/// `consumers`: the paths `verify --consumer` gave (inside the root). `lists`: our packages'
/// file lists.
pub fn check_consumers(
    root: &Root,
    consumers_given: &[std::path::PathBuf],
    marker: &rocm::Marker,
    entries: &[StatusEntry],
    lists: &BTreeMap<String, Vec<String>>,
) -> Vec<AbiCheck> {
    let mut c = Checks(Vec::new());
    let ours = our_libraries(root, marker);
    if ours.is_empty() {
        return c.0; // check_libraries already says why our libraries cannot be read
    }
    let (candidates, given) = consumers(root, consumers_given, marker, entries, lists);
    let skipped = candidates.len().saturating_sub(MAX_CONSUMERS);
    let mut linking = 0;
    let mut unreadable: Vec<String> = Vec::new();
    for (path, owner) in candidates.iter().take(MAX_CONSUMERS) {
        let was_given = given.contains(path);
        match judge(root, path, &ours) {
            Judgement::NotElf(why) if was_given => {
                c.add(
                    "abi",
                    path,
                    false,
                    format!("{why}; --consumer takes an installed ELF program or library"),
                );
            }
            Judgement::NotElf(_) => {}
            Judgement::Unreadable(why) if was_given => c.add("abi", path, false, why),
            Judgement::Unreadable(why) => unreadable.push(why),
            Judgement::Unlinked if was_given => c.add(
                "abi",
                path,
                true,
                "does not link the runtime pair (no DT_NEEDED on ours)",
            ),
            Judgement::Unlinked => {}
            Judgement::Binds => linking += 1,
            Judgement::Lacks(problems) => {
                linking += 1;
                c.add("abi", path, false, lacks_detail(owner, &problems));
            }
        }
    }
    let mut detail = format!(
        "{linking} installed program(s) and librar(ies) linking the pair bind to ours \
         (symbols and version nodes, read from the ELF files; nothing run)"
    );
    if let Some(first) = unreadable.first() {
        detail.push_str(&format!(
            "; {} ELF file(s) not judged, unreadable (first: {first})",
            unreadable.len()
        ));
    }
    if skipped > 0 {
        detail.push_str(&format!(
            "; {skipped} more candidate files not read (over {MAX_CONSUMERS})"
        ));
    }
    c.add("abi", "", true, detail);
    c.0
}

fn lacks_detail(owner: &str, problems: &[String]) -> String {
    let whose = if owner.is_empty() {
        String::new()
    } else {
        format!(" (package {owner})")
    };
    format!(
        "would not load{whose}: ours lack {} it needs: {}; ld.so stops it with exit 127 (\"undefined symbol\"). \
         Fix: install a build that exports them (`rocm-pin package` refuses one that does not, unless \
         --allow-missing-symbols), or go back to the stock runtime with `rocm-pin rollback`",
        problems.len(),
        first_few(problems)
    )
}

fn our_libraries(root: &Root, marker: &rocm::Marker) -> BTreeMap<String, Ours> {
    let mut out = BTreeMap::new();
    for lib in &marker.libraries {
        let Ok((file, _)) = root.open_regular(&lib.path, FileKind::PackagedFile) else {
            continue;
        };
        let Ok((info, linkage)) = crate::elf::read_elf_and_linkage(&file, Path::new(&lib.path))
        else {
            continue;
        };
        let missing = marker
            .missing_symbols
            .get(&lib.soname)
            .into_iter()
            .flatten()
            .filter_map(|s| s.strip_suffix("@Base").map(str::to_string))
            .collect();
        out.insert(
            lib.soname.clone(),
            Ours {
                exports: info.exports,
                versions: linkage.defined_versions.into_iter().collect(),
                missing,
            },
        );
    }
    out
}

/// Candidate consumer paths (inside the root) → the package owning them ("" when none is
/// known), and which of them were given with `--consumer`.
fn consumers(
    root: &Root,
    consumers_given: &[std::path::PathBuf],
    marker: &rocm::Marker,
    entries: &[StatusEntry],
    lists: &BTreeMap<String, Vec<String>>,
) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let ours: BTreeSet<&str> = marker
        .libraries
        .iter()
        .flat_map(|l| std::iter::once(l.path.as_str()).chain(l.aliases.iter().map(String::as_str)))
        .chain(lists.values().flatten().map(String::as_str))
        .collect();
    let pair: BTreeSet<&str> = marker
        .replaced
        .iter()
        .flat_map(|r| [r.stock_name.as_str(), r.package.as_str()])
        .collect();
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for e in entries {
        if pair.contains(e.package.as_str()) || !depends_on(e, &pair) {
            continue;
        }
        let Ok(list) = status::package_list(root, &e.package, &e.architecture) else {
            continue;
        };
        for path in list.into_iter().filter(|p| may_be_elf(p)) {
            out.entry(path).or_insert_with(|| e.package.clone());
        }
    }
    if marker.prefix != "/usr" {
        for sub in ["lib", "bin"] {
            let dir = format!("{}/{sub}", marker.prefix.trim_end_matches('/'));
            for name in root
                .read_dir_names(&dir, MAX_DIR_ENTRIES)
                .unwrap_or_default()
            {
                let path = format!("{dir}/{name}");
                if sub == "bin" || may_be_elf(&path) {
                    out.entry(path).or_default();
                }
            }
        }
    }
    out.retain(|p, _| !ours.contains(p.as_str()));
    let mut given = BTreeSet::new();
    for p in consumers_given {
        let p = p.display().to_string();
        out.entry(p.clone()).or_default();
        given.insert(p);
    }
    (out, given)
}

/// `e` Depends (or Pre-Depends) on one of `names`.
fn depends_on(e: &StatusEntry, names: &BTreeSet<&str>) -> bool {
    ["Depends", "Pre-Depends"].iter().any(|f| {
        e.extra
            .get(*f)
            .and_then(|v| parse_relations(v).ok())
            .is_some_and(|rels| {
                rels.iter().flatten().any(|r| {
                    let bare = r.name.split(':').next().unwrap_or(&r.name);
                    names.contains(bare)
                })
            })
    })
}

/// Where a dependant's ELF files live: shared objects anywhere, programs in a bin directory.
fn may_be_elf(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.contains(".so")
        || path.contains("/bin/")
        || path.contains("/sbin/")
        || path.contains("/libexec/")
}

enum Judgement {
    NotElf(String),
    /// An ELF file whose tables could not be read: counted, named in the summary.
    Unreadable(String),
    Unlinked,
    Binds,
    Lacks(Vec<String>),
}

fn judge(root: &Root, path: &str, ours: &BTreeMap<String, Ours>) -> Judgement {
    let (file, size) = match root.open_regular(path, FileKind::PackagedFile) {
        Ok(f) => f,
        Err(e) => return Judgement::NotElf(format!("{e}")),
    };
    if size > MAX_CONSUMER_BYTES {
        return Judgement::NotElf(format!("larger than {MAX_CONSUMER_BYTES} bytes; not read"));
    }
    let mut magic = [0u8; 4];
    if std::io::Read::read_exact(&mut &file, &mut magic).is_err() || !crate::elf::is_elf(&magic) {
        return Judgement::NotElf("not an ELF file".to_string());
    }
    let linkage = match crate::elf::read_linkage(&file, Path::new(path)) {
        Ok(l) => l,
        Err(e) => return Judgement::Unreadable(format!("{e:#}")),
    };
    if !linkage.needed.iter().any(|n| ours.contains_key(n)) {
        return Judgement::Unlinked;
    }
    let problems = unresolved(&linkage, ours);
    if problems.is_empty() {
        Judgement::Binds
    } else {
        Judgement::Lacks(problems)
    }
}

/// What `linkage` needs of our libraries that they do not define: `name@VERSION (soname)`,
/// and `version NODE (soname)` for a needed node ours does not define at all.
fn unresolved(linkage: &Linkage, ours: &BTreeMap<String, Ours>) -> Vec<String> {
    let mut problems = Vec::new();
    for (file, versions) in &linkage.version_needs {
        let Some(lib) = ours.get(file) else { continue };
        for v in versions.iter().filter(|v| !lib.versions.contains(*v)) {
            problems.push(format!("version {v} ({file})"));
        }
    }
    let linked: Vec<(&String, &Ours)> = ours
        .iter()
        .filter(|(so, _)| linkage.needed.contains(so))
        .collect();
    for sym in linkage.undefined.iter().filter(|s| !s.weak) {
        match &sym.version {
            Some((file, v)) => {
                let Some(lib) = ours.get(file) else { continue };
                let found = lib
                    .exports
                    .iter()
                    .any(|e| e.name == sym.name && e.version.as_deref() == Some(v.as_str()));
                if !found {
                    problems.push(format!("{}@{v} ({file})", sym.name));
                }
            }
            None => {
                let defined = linked
                    .iter()
                    .any(|(_, l)| l.exports.iter().any(|e| e.name == sym.name));
                if let Some((so, _)) = linked
                    .iter()
                    .find(|(_, l)| !defined && l.missing.contains(&sym.name))
                {
                    problems.push(format!("{} ({so})", sym.name));
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::UndefinedSymbol;

    fn ours() -> BTreeMap<String, Ours> {
        BTreeMap::from([(
            "libhsa-runtime64.so.1".to_string(),
            Ours {
                exports: vec![ExportedSymbol {
                    name: "hsa_init".into(),
                    version: Some("ROCR_1".into()),
                    default: true,
                    function: true,
                    size: 0,
                }],
                versions: BTreeSet::from(["ROCR_1".to_string()]),
                missing: BTreeSet::from(["plain_gone".to_string()]),
            },
        )])
    }

    fn undefined(name: &str, version: Option<&str>) -> UndefinedSymbol {
        UndefinedSymbol {
            name: name.into(),
            weak: false,
            version: version.map(|v| ("libhsa-runtime64.so.1".to_string(), v.to_string())),
        }
    }

    #[test]
    fn a_consumer_needing_what_ours_lack_is_named_with_the_symbol() {
        let linkage = Linkage {
            needed: vec!["libhsa-runtime64.so.1".into(), "libc.so.6".into()],
            defined_versions: vec![],
            version_needs: vec![(
                "libhsa-runtime64.so.1".into(),
                vec!["ROCR_1".into(), "ROCR_2".into()],
            )],
            undefined: vec![
                undefined("hsa_init", Some("ROCR_1")),
                undefined("hsa_agent_iterate_isas", Some("ROCR_1")),
                undefined("printf", None),
                undefined("plain_gone", None),
                UndefinedSymbol {
                    weak: true,
                    ..undefined("optional_hook", Some("ROCR_1"))
                },
            ],
        };
        assert_eq!(
            unresolved(&linkage, &ours()),
            [
                "version ROCR_2 (libhsa-runtime64.so.1)",
                "hsa_agent_iterate_isas@ROCR_1 (libhsa-runtime64.so.1)",
                "plain_gone (libhsa-runtime64.so.1)",
            ]
        );
    }

    #[test]
    fn a_consumer_ours_satisfy_binds() {
        let linkage = Linkage {
            needed: vec!["libhsa-runtime64.so.1".into()],
            defined_versions: vec![],
            version_needs: vec![("libhsa-runtime64.so.1".into(), vec!["ROCR_1".into()])],
            undefined: vec![undefined("hsa_init", Some("ROCR_1"))],
        };
        assert!(unresolved(&linkage, &ours()).is_empty());
    }
}
