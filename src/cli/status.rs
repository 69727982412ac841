//! `rocm-pin status`.

use rocm_pin_core::{out, outln};
use std::path::PathBuf;

use clap::Args;

use rocm_pin_core::exit::{ExitKind, Failure};
use rocm_pin_core::rocm::MODE_ENV;

use super::gate_mode::ModeArg;

/// The sysadmin's one screen: ROCm version and prefix chain, stock packages, ours (commit,
/// origin), pins and Protected, available upgrades of ours and of stock, guard hook, local
/// repository, an in-place patch, a quick verify, processes still mapping a deleted runtime.
///
/// Exit 0 healthy (ours installed, verify passes) or nothing installed yet (the gate line says
/// what `install` would decide), 1 broken (patched in place, or ours installed and verify
/// failing), 3 skipped by the version gate. JSON schema: docs/status-json.md.
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
    pub mode: ModeArg,
    /// Accept packages built with --no-backport-check (recorded in them) in the health verdict,
    /// as `verify --accept-skipped-backport-check` does
    #[arg(long)]
    pub accept_skipped_backport_check: bool,
}

pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let s = rocm_pin_core::ops::status_report::host_status_with(
        &rocm_pin_core::host::root::Root::new(&args.root),
        args.mode.into(),
        args.accept_skipped_backport_check,
    )?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        out!("{}", s.to_human());
    }
    match s.verdict {
        None => Ok(()),
        Some(ExitKind::Skipped) => Err(Failure::skipped(format!("status: {}", s.gate)).into()),
        Some(kind) => Err(Failure::new(
            kind,
            "status: the pinned runtime is not healthy (see above)",
        )
        .into()),
    }
}
