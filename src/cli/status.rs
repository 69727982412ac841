//! `rocm-pin status`.

use std::path::PathBuf;

use clap::Args;

use crate::rocm::{GateMode, MODE_ENV};

/// Report ROCm version and prefix, gate decision, installed flavor/commit, verify summary and
/// the processes that still map a deleted copy of the old runtime. Always exits 0.
///
/// Example: `rocm-pin status --json`
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Print the report as JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Report on the installation under this root instead of /
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// The gate mode to report the decision for when nothing is installed yet (as `install`
    /// would take it)
    #[arg(long, value_enum, env = MODE_ENV, default_value = "require")]
    pub mode: GateMode,
}

pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let s = crate::host::hoststatus::host_status(&args.root, args.mode)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        out!("{}", s.to_human());
    }
    Ok(())
}
