//! Inspecting a .deb: control, members and entries (from [`super::reader`]), every regular file
//! of data.tar checked against the package's own md5sums in one streaming pass, and each ELF
//! shared object described (SONAME, NEEDED, whether one named symbol is exported). The caller
//! names the symbol to look for.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use md5::{Digest, Md5};

use super::reader::{self, DebInfo, MemberInfo, ReadLimits};
use super::tar::{Entry, EntryKind};
use crate::deb::invalid;

/// What to inspect beyond the structure.
#[derive(Debug, Clone, Copy)]
pub struct InspectOptions<'a> {
    pub limits: ReadLimits,
    /// Largest ELF file buffered for parsing; bigger ones are reported as skipped.
    pub max_elf_bytes: u64,
    /// The dynamic symbol whose export each ELF shared object is checked for.
    pub symbol: &'a str,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SymbolReport {
    pub name: String,
    pub exported: bool,
    pub version: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ElfReport {
    pub path: String,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub symbol: SymbolReport,
}

#[derive(Debug, Clone, serde::Serialize, Default)]
pub struct Md5Report {
    /// False when the package has no md5sums file.
    pub present: bool,
    pub checked: usize,
    pub mismatches: Vec<String>,
    /// Listed in md5sums but not a regular file in data.tar.
    pub missing: Vec<String>,
    /// Regular files in data.tar without a line in md5sums (conffiles usually).
    pub unlisted: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct InspectReport {
    pub file: String,
    pub control: BTreeMap<String, String>,
    pub control_files: Vec<String>,
    pub members: Vec<MemberInfo>,
    pub entries: Vec<Entry>,
    pub md5sums: Md5Report,
    pub elf: Vec<ElfReport>,
    /// ELF files too large to buffer for parsing (see [`InspectOptions::max_elf_bytes`]).
    pub elf_skipped: Vec<String>,
}

impl InspectReport {
    /// Why the package fails its own md5sums (mismatched or missing files), None when it passes.
    pub fn md5sums_failure(&self) -> Option<String> {
        let m = &self.md5sums;
        if m.mismatches.len() + m.missing.len() == 0 {
            return None;
        }
        Some(format!(
            "{}: md5sums check failed: {} mismatched, {} missing ({})",
            self.file,
            m.mismatches.len(),
            m.missing.len(),
            m.mismatches
                .iter()
                .chain(&m.missing)
                .take(5)
                .map(|name| crate::text::escaped(name).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// The package as read (control fields in their order) and the report on it.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub info: DebInfo,
    pub report: InspectReport,
}

/// Read `path` and inspect it; md5sums mismatches are reported, not errors (see
/// [`InspectReport::md5sums_failure`]). A malformed md5sums file is an error.
pub fn inspect(path: &Path, opts: &InspectOptions<'_>) -> anyhow::Result<Inspection> {
    let origin = path.display().to_string();
    // One pass, so a package given as a pipe can be inspected: the data files are hashed as
    // they stream by and checked against md5sums (read earlier in the same pass) at the end.
    let mut hashed: Vec<HashedEntry> = Vec::new();
    let mut elf = ElfFindings::default();
    let info = reader::read_deb_visiting(path, &opts.limits, &mut |entry, content| {
        match &entry.kind {
            EntryKind::Hardlink(target) => hashed.push(HashedEntry::Hardlink {
                path: entry.path.clone(),
                target: target.clone(),
            }),
            EntryKind::File => {
                let sum = hash_and_describe(entry, content, opts, &mut elf)?;
                hashed.push(HashedEntry::File {
                    path: entry.path.clone(),
                    sum,
                });
            }
            _ => {}
        }
        Ok(())
    })?;
    let mut md5 = Md5Check::default();
    if let Some(text) = info.control_file("md5sums") {
        md5.report.present = true;
        md5.expected = parse_md5sums(text, &origin)?;
    }
    for hashed_entry in hashed {
        match hashed_entry {
            HashedEntry::File { path, sum } => md5.file(&path, sum),
            HashedEntry::Hardlink { path, target } => md5.hardlink(&path, &target),
        }
    }

    let report = InspectReport {
        file: origin,
        control: info
            .control
            .fields()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        control_files: info.control_files.iter().map(|(n, _)| n.clone()).collect(),
        members: info.members.clone(),
        entries: info.entries.clone(),
        md5sums: md5.finish(),
        elf: elf.shared,
        elf_skipped: elf.skipped,
    };
    Ok(Inspection { info, report })
}

/// A package's md5sums (`<md5> <path>`, the path with or without `./`, binary-mode `*`
/// accepted) as `./path` → lower-case md5. Every non-blank line must parse.
fn parse_md5sums(text: &[u8], origin: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let text = std::str::from_utf8(text)
        .map_err(|_| invalid(format!("{origin}: md5sums is not UTF-8 text")))?;
    let mut expected = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (sum, path) = line
            .split_once(' ')
            .map(|(s, p)| (s, p.trim_start_matches([' ', '*'])))
            .filter(|(s, _)| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| {
                invalid(format!(
                    "{origin}: md5sums line {}: malformed: {line:?}",
                    n + 1
                ))
            })?;
        expected.insert(
            format!("./{}", path.trim_start_matches("./")),
            sum.to_lowercase(),
        );
    }
    Ok(expected)
}

/// A data.tar regular file with its md5, or a hard link, in archive order.
enum HashedEntry {
    File { path: String, sum: String },
    Hardlink { path: String, target: String },
}

/// The md5sums check, fed the data.tar files in archive order.
#[derive(Default)]
struct Md5Check {
    expected: BTreeMap<String, String>,
    report: Md5Report,
    /// Regular files and hard links met so far.
    seen: BTreeSet<String>,
    /// A hard link has its target's contents: each file's sum, for the links after it.
    sums_by_path: BTreeMap<String, String>,
}

impl Md5Check {
    /// A regular file at `path` whose contents hash to `sum`.
    fn file(&mut self, path: &str, sum: String) {
        self.seen.insert(path.to_string());
        self.check(path, &sum);
        self.sums_by_path.insert(path.to_string(), sum);
    }

    /// A hard link at `path` to the earlier entry `target`.
    fn hardlink(&mut self, path: &str, target: &str) {
        self.seen.insert(path.to_string());
        if let Some(sum) = self.sums_by_path.get(target).cloned() {
            self.check(path, &sum);
        }
    }

    fn check(&mut self, path: &str, got: &str) {
        if let Some(want) = self.expected.get(path) {
            self.report.checked += 1;
            if got != want {
                self.report.mismatches.push(path.to_string());
            }
        } else if self.report.present {
            self.report.unlisted.push(path.to_string());
        }
    }

    /// The report, with every listed path that was not a file in data.tar as missing.
    fn finish(mut self) -> Md5Report {
        self.report.missing = self
            .expected
            .keys()
            .filter(|p| !self.seen.contains(*p))
            .cloned()
            .collect();
        self.report
    }
}

/// The ELF shared objects described so far, and those too large to parse.
#[derive(Default)]
struct ElfFindings {
    shared: Vec<ElfReport>,
    skipped: Vec<String>,
}

/// Hash a regular file's contents (returning the md5 hex) and, when it is an ELF file small
/// enough to buffer, describe it in `elf` if it is a shared object with a SONAME.
fn hash_and_describe(
    entry: &Entry,
    content: &mut dyn Read,
    opts: &InspectOptions<'_>,
    elf: &mut ElfFindings,
) -> anyhow::Result<String> {
    let mut hasher = Md5::new();
    let mut head = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = content.read(&mut head[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    hasher.update(&head[..got]);
    let is_elf = crate::elf::is_elf(&head[..got]);
    if is_elf && entry.size <= opts.max_elf_bytes {
        // Spooled to an unnamed temporary file and mapped for the ELF parser, never held in
        // memory: the parser touches headers and the dynamic section, not the whole file.
        let spooled = spool(&head[..got], content, &mut hasher)?;
        if let Some(report) =
            spooled.and_then(|map| describe_shared_object(&entry.path, &map, opts.symbol))
        {
            elf.shared.push(report);
        }
    } else {
        if is_elf {
            elf.skipped.push(entry.path.clone());
        }
        hash_rest(content, &mut hasher)?;
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Feed the rest of `content` to `hasher`, 256 KiB at a time.
fn hash_rest(content: &mut dyn Read, hasher: &mut Md5) -> anyhow::Result<()> {
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = content.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
    }
}

/// `head` and the rest of `content` hashed and written to an unnamed temporary file (gone
/// when the map is dropped, and on any signal: it has no name), mapped read-only.
fn spool(
    head: &[u8],
    content: &mut dyn Read,
    hasher: &mut Md5,
) -> anyhow::Result<Option<memmap2::Mmap>> {
    use std::io::Write;
    let mut file = tempfile::tempfile().map_err(|e| {
        invalid(format!(
            "cannot create a temporary file to parse an ELF file: {e}"
        ))
    })?;
    file.write_all(head)?;
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = content.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])?;
    }
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    // SAFETY: a private file of ours, no other writer; mapped read-only.
    let map = unsafe { memmap2::Mmap::map(&file) }?;
    Ok(Some(map))
}

/// SONAME, NEEDED and the export of `symbol` of an ELF shared object with a SONAME; None for
/// anything else (executables, plugins without a SONAME, unparsable files).
fn describe_shared_object(path: &str, bytes: &[u8], symbol: &str) -> Option<ElfReport> {
    let parsed = crate::elf::parse_elf(bytes).ok()?;
    if !(parsed.shared_object && parsed.soname.is_some()) {
        return None;
    }
    let sym = parsed.export(symbol);
    Some(ElfReport {
        path: path.to_string(),
        soname: parsed.soname.clone(),
        needed: parsed.needed.clone(),
        symbol: SymbolReport {
            name: symbol.to_string(),
            exported: sym.is_some(),
            version: sym.and_then(|s| s.version.clone()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5sums_lines_are_normalised_to_dot_slash_paths() {
        let sums = parse_md5sums(
            b"D41D8CD98F00B204E9800998ECF8427E  usr/a\n\n\
              d41d8cd98f00b204e9800998ecf8427e *./usr/b\n",
            "p.deb",
        )
        .unwrap();
        assert_eq!(
            sums.into_iter().collect::<Vec<_>>(),
            vec![
                (
                    "./usr/a".to_string(),
                    "d41d8cd98f00b204e9800998ecf8427e".to_string()
                ),
                (
                    "./usr/b".to_string(),
                    "d41d8cd98f00b204e9800998ecf8427e".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_malformed_md5sums_line_is_named() {
        let err = parse_md5sums(b"d41d8cd98f00b204e9800998ecf8427e  ok\nzz  bad\n", "p.deb")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "p.deb: md5sums line 2: malformed: \"zz  bad\"");
        assert_eq!(
            parse_md5sums(b"\xff", "p.deb").unwrap_err().to_string(),
            "p.deb: md5sums is not UTF-8 text"
        );
    }

    #[test]
    fn hard_links_take_their_target_sum_and_absent_files_are_missing() {
        let mut check = Md5Check {
            expected: [
                ("./a", "11"),
                ("./b", "11"),
                ("./c", "22"),
                ("./gone", "33"),
            ]
            .into_iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect(),
            ..Default::default()
        };
        check.report.present = true;
        for (path, sum) in [("./a", "11"), ("./c", "99"), ("./extra", "44")] {
            check.file(path, sum.to_string());
        }
        check.hardlink("./b", "./a");
        let report = check.finish();
        assert_eq!(report.checked, 3);
        assert_eq!(report.mismatches, vec!["./c"]);
        assert_eq!(report.unlisted, vec!["./extra"]);
        assert_eq!(report.missing, vec!["./gone"]);
    }
}
