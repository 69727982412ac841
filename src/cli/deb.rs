//! `rocm-pin deb build|inspect`.

use rocm_pin_core::outln;
use rocm_pin_core::output::shown;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use rocm_pin_core::deb::inspect::{InspectOptions, InspectReport, Inspection};
use rocm_pin_core::deb::{self, BuildOptions, Compression, EntryKind, ReadLimits};
use rocm_pin_core::exit::Failure;

#[derive(Subcommand, Debug)]
pub enum DebCommand {
    /// Build a .deb from a package tree, like `dpkg-deb --root-owner-group --build DIR OUT`
    #[command(after_help = "\
DIR holds DEBIAN/control (plus maintainer scripts, conffiles, triggers, …); everything
else under DIR is the payload, owned by root:root in the package. DEBIAN/md5sums and
Installed-Size are generated when absent. With SOURCE_DATE_EPOCH set, the output is
byte-identical for identical trees, whatever the file mtimes or the number of threads.
With more than one thread, files are read and md5-hashed on a thread of their own, beside
the compressor (ROCM_PIN_READ_AHEAD=0 keeps them on the writer's thread, 1 forces it).

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
  curl -sSf https://example.org/pool/x.deb | rocm-pin deb inspect -
  rocm-pin deb inspect --json libhsa-runtime64-1_5.2.3-3_amd64.deb | jq .control")]
    Inspect(InspectArgs),
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Package tree (with DEBIAN/control)
    pub dir: PathBuf,
    /// Output .deb file: a regular file (replaced) or a new path; devices and FIFOs are refused
    pub out: PathBuf,
    /// Compression of the members: xz, gzip, zstd or none
    #[arg(short = 'Z', long = "compression", default_value = "xz", value_parser = parse_compression)]
    pub compression: Compression,
    /// Compression level (default: dpkg-deb's — xz 6, gzip 9, zstd 3)
    #[arg(short = 'z', long = "level")]
    pub level: Option<u32>,
    /// Compressor threads (default: the CPUs this process may use, per affinity and cgroup
    /// quota); the output does not depend on it
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
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
    /// The .deb file; - reads standard input (a pipe, FIFO or /dev/stdin is read as a stream)
    pub file: PathBuf,
    /// Print one JSON document instead of text
    #[arg(long)]
    pub json: bool,
    /// Largest ELF file parsed (spooled to an unnamed temporary file, not held in memory), in
    /// MiB; bigger ones are reported as skipped
    #[arg(long, default_value_t = 512)]
    pub max_elf_mib: u64,
    /// Raise (or lower) a limit on reading the package, repeatable: ratio=1000 (decompressed
    /// per compressed byte of one member, beyond 16 MiB), member-bytes=64G (one member
    /// decompressed, whatever its size). See docs/security.md
    #[arg(long, value_name = "KEY=VALUE")]
    pub deb_limit: Vec<String>,
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
        read_ahead: read_ahead_from_env()?,
    };
    let listener = rocm_pin_core::progress::for_cli(a.quiet || a.json);
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

fn inspect(a: InspectArgs) -> anyhow::Result<()> {
    let mut limits = ReadLimits::default();
    for spec in &a.deb_limit {
        limits.set(spec).map_err(rocm_pin_core::error::usage)?;
    }
    let opts = InspectOptions {
        limits,
        max_elf_bytes: a.max_elf_mib << 20,
        symbol: rocm_pin_core::rocm::BACKPORT_SYMBOL,
    };
    // `-` is standard input, as for most Unix tools; the reader streams it like any pipe.
    let file = if a.file.as_os_str() == "-" {
        PathBuf::from("/dev/stdin")
    } else {
        a.file
    };
    let Inspection { info, report } = deb::inspect::inspect(&file, &opts)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report, &info)?;
    }
    match report.md5sums_failure() {
        Some(failure) => Err(Failure::check_failed(failure).into()),
        None => Ok(()),
    }
}

fn mode_string(e: &deb::Entry) -> String {
    format!(
        "{}{}",
        e.kind.type_char(),
        deb::tar::permission_letters(e.mode)
    )
}

/// The report as text. Everything in it but the numbers and our own words comes from the
/// package (control fields, member and entry names, link targets, ELF names), so each is
/// shown escaped: a name cannot start a line of its own or drive the terminal.
fn print_text(r: &InspectReport, info: &deb::DebInfo) -> anyhow::Result<()> {
    outln!("{}", shown(&r.file));
    outln!("control:");
    for (k, v) in info.control.fields() {
        // A multi-line field (Description) keeps its lines, each escaped and indented
        // under its field: none can stand where a line of the report's own stands.
        let mut lines = v.split('\n');
        outln!(
            "  {}: {}",
            shown(k),
            shown(lines.next().unwrap_or_default())
        );
        for more in lines {
            outln!("   {}", shown(more));
        }
    }
    outln!("control files: {}", shown(&r.control_files.join(", ")));
    outln!("members:");
    for m in &r.members {
        let c = m.compression.map(|c| c.name()).unwrap_or("-");
        outln!(
            "  {:<16} {:>12} bytes  compression {c}",
            shown(&m.name),
            m.size
        );
    }
    outln!("entries ({}):", r.entries.len());
    for e in &r.entries {
        let tail = match &e.kind {
            EntryKind::Symlink(t) => format!(" -> {}", shown(t)),
            EntryKind::Hardlink(t) => format!(" link to {}", shown(t)),
            _ => String::new(),
        };
        outln!(
            "  {} {:>10} {}{tail}",
            mode_string(e),
            e.size,
            shown(&e.path)
        );
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
            outln!("  MISMATCH {}", shown(p));
        }
        for p in &m.missing {
            outln!("  MISSING  {}", shown(p));
        }
    } else {
        outln!("md5sums: none in the package");
    }
    outln!("ELF shared objects ({}):", r.elf.len());
    for e in &r.elf {
        outln!("  {}", shown(&e.path));
        outln!("    SONAME {}", shown(e.soname.as_deref().unwrap_or("-")));
        outln!("    NEEDED {}", shown(&e.needed.join(", ")));
        match (&e.symbol.exported, &e.symbol.version) {
            (true, Some(v)) => outln!("    exports {}@{}", e.symbol.name, shown(v)),
            (true, None) => outln!("    exports {} (unversioned)", e.symbol.name),
            _ => outln!("    does not export {}", e.symbol.name),
        }
    }
    for p in &r.elf_skipped {
        outln!("  {}: ELF larger than --max-elf-mib, not parsed", shown(p));
    }
    Ok(())
}

/// The read-ahead switch from the environment (`ROCM_PIN_READ_AHEAD`: `1` on, `0` off; unset or
/// empty: the format layer's default, on with more than one thread). It exists so a benchmark
/// can time both paths in one run.
fn read_ahead_from_env() -> anyhow::Result<Option<bool>> {
    match std::env::var("ROCM_PIN_READ_AHEAD") {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => match v.trim() {
            "1" => Ok(Some(true)),
            "0" => Ok(Some(false)),
            _ => anyhow::bail!(
                "ROCM_PIN_READ_AHEAD={v:?} must be 1 (read and hash files on a thread of their \
                 own) or 0 (on the tar writer's thread); unset it for the default"
            ),
        },
        Err(_) => Ok(None),
    }
}
