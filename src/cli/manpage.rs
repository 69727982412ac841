//! `rocm-pin manpage --out DIR`: roff man pages for the tool and every subcommand (clap_mangen),
//! used by `scripts/package-self` to ship man pages in the tool's own .deb.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, CommandFactory};

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  rocm-pin manpage --out target/man && man -l target/man/rocm-pin.1"
)]
pub struct ManpageArgs {
    /// Directory to write rocm-pin.1 and rocm-pin-<subcommand>.1 into
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: ManpageArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let cmd = super::Cli::command();
    write_page(&args.out, "rocm-pin", cmd.clone())?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("rocm-pin-{}", sub.get_name());
        let sub = sub.clone().name(name.clone());
        write_page(&args.out, &name, sub)?;
    }
    Ok(())
}

fn write_page(dir: &std::path::Path, name: &str, cmd: clap::Command) -> anyhow::Result<()> {
    let path = dir.join(format!("{name}.1"));
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut buf)
        .with_context(|| format!("rendering man page {name}"))?;
    let page = with_exit_status(&String::from_utf8_lossy(&buf));
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))
}

/// `page` with its EXIT STATUS section, before VERSION and AUTHORS where man-pages(7) puts it.
fn with_exit_status(page: &str) -> String {
    let section = exit_status_section();
    match [".SH VERSION", ".SH AUTHORS"]
        .iter()
        .filter_map(|h| page.find(&format!("\n{h}")))
        .min()
    {
        Some(at) => format!("{}\n{section}{}", &page[..at], &page[at + 1..]),
        None => format!("{page}{section}"),
    }
}

/// The EXIT STATUS section (man-pages(7)) from the one table of exit codes, one tagged
/// paragraph per code.
fn exit_status_section() -> String {
    use clap_mangen::roff::{roman, Roff};
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in rocm_pin_core::exit::exit_status_rows() {
        roff.control("TP", [] as [&str; 0]);
        roff.text([roman(code)]);
        roff.text([roman(meaning)]);
    }
    // to_roff: no second apostrophe preamble (the page has one at its top).
    roff.to_roff()
}
