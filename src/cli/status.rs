//! `rocm-pin status`.

use std::path::PathBuf;

use clap::Args;

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
}

pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let s = crate::host::hoststatus::host_status(&args.root)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        out!("{}", s.to_human());
    }
    Ok(())
}
