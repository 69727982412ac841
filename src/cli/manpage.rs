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
    std::fs::write(&path, buf).with_context(|| format!("cannot write {}", path.display()))
}
