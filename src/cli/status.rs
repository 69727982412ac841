//! `rocm-pin status`.

use std::path::PathBuf;

use clap::Args;

/// The sysadmin's one screen: ROCm version and prefix chain, stock packages, ours (commit,
/// origin), pins and Protected, available upgrades of ours and of stock, guard hook, local
/// repository, an in-place patch, a quick verify, processes still mapping a deleted runtime.
///
/// Exit 0 healthy (ours installed, verify passes), 1 broken (not installed, patched in place,
/// or verify failing), 3 skipped by the version gate. JSON schema: docs/status-json.md.
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
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", s.to_human());
    }
    match s.exit_code {
        0 => Ok(()),
        3 => Err(crate::error::ExitError::skipped(format!("status: {}", s.gate)).into()),
        _ => Err(crate::error::ExitError::check_failed(
            "status: the pinned runtime is not healthy (see above)",
        )
        .into()),
    }
}
