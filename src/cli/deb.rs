//! `rocm-pin deb build|inspect`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use md5::{Digest, Md5};

use rocm_pin::deb::{self, BuildOptions, Compression, EntryKind, ReadLimits};
use rocm_pin::error::ExitError;

#[derive(Subcommand, Debug)]
pub enum DebCommand {
    /// Build a .deb from a package tree, like `dpkg-deb --root-owner-group --build DIR OUT`
    #[command(after_help = "\
DIR holds DEBIAN/control (plus maintainer scripts, conffiles, triggers, …); everything
else under DIR is the payload, owned by root:root in the package. DEBIAN/md5sums and
Installed-Size are generated when absent. With SOURCE_DATE_EPOCH set, the output is
byte-identical for identical trees, whatever the file mtimes or the number of threads.

Example:
  SOURCE_DATE_EPOCH=1700000000 rocm-pin deb build examples/sample-pkg sample.deb
  rocm-pin deb build -Z zstd -z 19 --threads 2 tree/ out.deb")]
    Build(BuildArgs),
    /// Show a .deb's control fields, members, entries, md5sums check and ELF libraries
    #[command(after_help = "\
Checks every file against DEBIAN/md5sums (exit 1 on any mismatch) and, for each ELF
shared object, reports SONAME, NEEDED and whether the HSA backport symbol is exported.

Example:
  rocm-pin deb inspect sample.deb
  rocm-pin deb inspect --json libhsa-runtime64-1_5.2.3-3_amd64.deb | jq .control")]
    Inspect(InspectArgs),
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Package tree (with DEBIAN/control)
    pub dir: PathBuf,
    /// Output .deb file
    pub out: PathBuf,
    /// Compression of the members: xz, gzip, zstd or none
    #[arg(short = 'Z', long = "compression", default_value = "xz", value_parser = parse_compression)]
    pub compression: Compression,
    /// Compression level (default: dpkg-deb's — xz 6, gzip 9, zstd 3)
    #[arg(short = 'z', long = "level")]
    pub level: Option<u32>,
    /// Compressor threads (default: all CPUs); the output does not depend on it
    #[arg(long)]
    pub threads: Option<u32>,
    /// Print the build summary as JSON
    #[arg(long)]
    pub json: bool,
    /// No progress output
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The .deb file
    pub file: PathBuf,
    /// Print one JSON document instead of text
    #[arg(long)]
    pub json: bool,
    /// Largest ELF file buffered for parsing, in MiB (bigger ones are reported as skipped)
    #[arg(long, default_value_t = 512)]
    pub max_elf_mib: u64,
}

fn parse_compression(s: &str) -> Result<Compression, <Compression as std::str::FromStr>::Err> {
    s.parse()
}

pub fn run(cmd: DebCommand) -> anyhow::Result<()> {
    match cmd {
        DebCommand::Build(a) => build(a),
        DebCommand::Inspect(a) => inspect(a),
    }
}

fn build(a: BuildArgs) -> anyhow::Result<()> {
    let opts = BuildOptions {
        compression: a.compression,
        level: a.level,
        threads: a.threads,
        source_date_epoch: deb::archive::source_date_epoch_from_env()?,
    };
    let listener = rocm_pin::progress::for_cli(a.quiet || a.json);
    let summary = deb::build_from_dir(&a.dir, &a.out, &opts, listener.as_ref())?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&summary)?);
    } else if !a.quiet {
        outln!(
            "built {} ({} {} {}, {} entries, Installed-Size {} KiB, {} bytes)",
            summary.output.display(),
            summary.package,
            summary.version,
            summary.architecture,
            summary.entries,
            summary.installed_size_kib,
            summary.size
        );
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct SymbolReport {
    name: String,
    exported: bool,
    version: Option<String>,
}

#[derive(serde::Serialize)]
struct ElfReport {
    path: String,
    soname: Option<String>,
    needed: Vec<String>,
    symbol: SymbolReport,
}

#[derive(serde::Serialize, Default)]
struct Md5Report {
    /// False when the package has no md5sums file.
    present: bool,
    checked: usize,
    mismatches: Vec<String>,
    /// Listed in md5sums but not a regular file in data.tar.
    missing: Vec<String>,
    /// Regular files in data.tar without a line in md5sums (conffiles usually).
    unlisted: Vec<String>,
}

#[derive(serde::Serialize)]
struct InspectReport {
    file: String,
    control: BTreeMap<String, String>,
    control_files: Vec<String>,
    members: Vec<deb::reader::MemberInfo>,
    entries: Vec<deb::Entry>,
    md5sums: Md5Report,
    elf: Vec<ElfReport>,
    /// ELF files too large to buffer for parsing (see --max-elf-mib).
    elf_skipped: Vec<String>,
}

fn inspect(a: InspectArgs) -> anyhow::Result<()> {
    let limits = ReadLimits::default();
    let info = deb::reader::read_deb(&a.file, &limits)?;
    let origin = a.file.display().to_string();

    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    let mut md5 = Md5Report::default();
    if let Some(text) = info.control_file("md5sums") {
        md5.present = true;
        let text = std::str::from_utf8(text)
            .map_err(|_| anyhow!("{origin}: md5sums is not UTF-8 text"))?;
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (sum, path) = line
                .split_once(' ')
                .map(|(s, p)| (s, p.trim_start_matches([' ', '*'])))
                .filter(|(s, _)| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or_else(|| anyhow!("{origin}: md5sums line {}: malformed: {line:?}", n + 1))?;
            expected.insert(
                format!("./{}", path.trim_start_matches("./")),
                sum.to_lowercase(),
            );
        }
    }

    let max_elf = a.max_elf_mib << 20;
    let mut elf = Vec::new();
    let mut elf_skipped = Vec::new();
    let mut seen_files = std::collections::BTreeSet::new();
    // A hard link has its target's contents: remember each file's sum for the links after it.
    let mut sums_by_path: BTreeMap<String, String> = BTreeMap::new();
    let check = |md5: &mut Md5Report, path: &str, got: &str| {
        if let Some(want) = expected.get(path) {
            md5.checked += 1;
            if got != want {
                md5.mismatches.push(path.to_string());
            }
        } else if md5.present {
            md5.unlisted.push(path.to_string());
        }
    };
    deb::reader::for_each_data_entry(&a.file, &limits, &mut |entry, content| {
        if let EntryKind::Hardlink(target) = &entry.kind {
            seen_files.insert(entry.path.clone());
            if let Some(sum) = sums_by_path.get(target) {
                check(&mut md5, &entry.path, sum);
            }
            return Ok(());
        }
        if entry.kind != EntryKind::File {
            return Ok(());
        }
        seen_files.insert(entry.path.clone());
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
        let is_elf = rocm_pin::elf::is_elf(&head[..got]);
        if is_elf && entry.size <= max_elf {
            // Libraries are buffered one at a time (bounded by --max-elf-mib) for the ELF parser.
            let mut bytes = head[..got].to_vec();
            content.read_to_end(&mut bytes)?;
            hasher.update(&bytes[got..]);
            if let Ok(parsed) = rocm_pin::elf::parse_elf(&bytes) {
                if parsed.shared_object && parsed.soname.is_some() {
                    let sym = parsed.export(rocm_pin::rocm::BACKPORT_SYMBOL);
                    elf.push(ElfReport {
                        path: entry.path.clone(),
                        soname: parsed.soname.clone(),
                        needed: parsed.needed.clone(),
                        symbol: SymbolReport {
                            name: rocm_pin::rocm::BACKPORT_SYMBOL.to_string(),
                            exported: sym.is_some(),
                            version: sym.and_then(|s| s.version.clone()),
                        },
                    });
                }
            }
        } else {
            if is_elf {
                elf_skipped.push(entry.path.clone());
            }
            let mut buf = vec![0u8; 256 << 10];
            loop {
                let n = content.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
        }
        let got = hex::encode(hasher.finalize());
        check(&mut md5, &entry.path, &got);
        sums_by_path.insert(entry.path.clone(), got);
        Ok(())
    })?;
    md5.missing = expected
        .keys()
        .filter(|p| !seen_files.contains(*p))
        .cloned()
        .collect();

    let report = InspectReport {
        file: origin.clone(),
        control: info
            .control
            .fields()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        control_files: info.control_files.iter().map(|(n, _)| n.clone()).collect(),
        members: info.members.clone(),
        entries: info.entries.clone(),
        md5sums: md5,
        elf,
        elf_skipped,
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report, &info)?;
    }
    let bad = report.md5sums.mismatches.len() + report.md5sums.missing.len();
    if bad > 0 {
        return Err(ExitError::check_failed(format!(
            "{origin}: md5sums check failed: {} mismatched, {} missing ({})",
            report.md5sums.mismatches.len(),
            report.md5sums.missing.len(),
            report
                .md5sums
                .mismatches
                .iter()
                .chain(&report.md5sums.missing)
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    Ok(())
}

fn mode_string(e: &deb::Entry) -> String {
    let t = match e.kind {
        EntryKind::File => '-',
        EntryKind::Dir => 'd',
        EntryKind::Symlink(_) => 'l',
        EntryKind::Hardlink(_) => 'h',
    };
    let m = e.mode;
    let bit = |mask: u32, c: char| if m & mask != 0 { c } else { '-' };
    let exec = |x: u32, special: u32, s: char, big: char| match (m & x != 0, m & special != 0) {
        (true, true) => s,
        (false, true) => big,
        (true, false) => 'x',
        (false, false) => '-',
    };
    format!(
        "{t}{}{}{}{}{}{}{}{}{}",
        bit(0o400, 'r'),
        bit(0o200, 'w'),
        exec(0o100, 0o4000, 's', 'S'),
        bit(0o040, 'r'),
        bit(0o020, 'w'),
        exec(0o010, 0o2000, 's', 'S'),
        bit(0o004, 'r'),
        bit(0o002, 'w'),
        exec(0o001, 0o1000, 't', 'T'),
    )
}

fn print_text(r: &InspectReport, info: &deb::DebInfo) -> anyhow::Result<()> {
    outln!("{}", r.file);
    outln!("control:");
    for (k, v) in info.control.fields() {
        outln!("  {k}: {v}");
    }
    outln!("control files: {}", r.control_files.join(", "));
    outln!("members:");
    for m in &r.members {
        let c = m.compression.map(|c| c.name()).unwrap_or("-");
        outln!("  {:<16} {:>12} bytes  compression {c}", m.name, m.size);
    }
    outln!("entries ({}):", r.entries.len());
    for e in &r.entries {
        let tail = match &e.kind {
            EntryKind::Symlink(t) => format!(" -> {t}"),
            EntryKind::Hardlink(t) => format!(" link to {t}"),
            _ => String::new(),
        };
        outln!("  {} {:>10} {}{tail}", mode_string(e), e.size, e.path);
    }
    let m = &r.md5sums;
    if m.present {
        outln!(
            "md5sums: {} checked, {} mismatched, {} missing, {} unlisted",
            m.checked,
            m.mismatches.len(),
            m.missing.len(),
            m.unlisted.len()
        );
        for p in &m.mismatches {
            outln!("  MISMATCH {p}");
        }
        for p in &m.missing {
            outln!("  MISSING  {p}");
        }
    } else {
        outln!("md5sums: none in the package");
    }
    outln!("ELF shared objects ({}):", r.elf.len());
    for e in &r.elf {
        outln!("  {}", e.path);
        outln!("    SONAME {}", e.soname.as_deref().unwrap_or("-"));
        outln!("    NEEDED {}", e.needed.join(", "));
        match (&e.symbol.exported, &e.symbol.version) {
            (true, Some(v)) => outln!("    exports {}@{v}", e.symbol.name),
            (true, None) => outln!("    exports {} (unversioned)", e.symbol.name),
            _ => outln!("    does not export {}", e.symbol.name),
        }
    }
    for p in &r.elf_skipped {
        outln!("  {p}: ELF larger than --max-elf-mib, not parsed");
    }
    Ok(())
}
