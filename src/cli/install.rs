//! `rocm-pin install`.

use rocm_pin_core::{out, outln};
use std::path::PathBuf;

use clap::Args;

use rocm_pin_core::ops::install::{InstallOptions, Outcome};
use rocm_pin_core::ops::workflow::install;
use rocm_pin_core::rocm::MODE_ENV;

use super::gate_mode::ModeArg;

/// Gate on the ROCm version, install the replacement .debs through apt, pin, verify.
///
/// Refuses (exit 2, nothing changed) when the host's ROCm is not the target release (mode
/// require), when the installed stock packages are not exactly the versions the replacements
/// were built against, or when apt would remove anything but the stock pair. Idempotent.
///
/// Example: `rocm-pin install hsa-rocr-pinned_*.deb hip-runtime-amd-pinned_*.deb`; later,
/// `rocm-pin install` alone repairs the host with the .debs it kept.
#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The replacement .debs made by `rocm-pin package` (all of them). None: reinstall the
    /// ones an earlier install kept in /var/lib/rocm-pin/ours (the repair `verify` names)
    pub debs: Vec<PathBuf>,
    /// What to do on a host whose ROCm version does not match: require (refuse), auto (skip
    /// with exit 0 and a skip record), off (do nothing)
    #[arg(long, value_enum, env = MODE_ENV, default_value = "require")]
    pub mode: ModeArg,
    /// Seconds to wait for another apt/dpkg holding the lock
    #[arg(long, default_value_t = 120)]
    pub lock_timeout: u32,
    /// Also install an apt DPkg::Post-Invoke hook and a dpkg post-invoke hook running `rocm-pin
    /// verify --quiet`, so any later apt command, or dpkg run by hand (`dpkg -i --force-all` of a
    /// stock package), that breaks the runtime fails
    #[arg(long)]
    pub guard: bool,
    /// Also keep our .debs in a signed apt repository on this host (/var/lib/rocm-pin/repo),
    /// so `apt-get install --reinstall hip-runtime-amd` reinstalls ours instead of printing
    /// "cannot be downloaded". Off by default: the packages' own pins hold without it
    #[arg(long)]
    pub local_repo: bool,
    /// Accept packages built with --no-backport-check (recorded in them): the final verify and
    /// the --guard hook pass --accept-skipped-backport-check
    #[arg(long)]
    pub accept_skipped_backport_check: bool,
    /// Accept replacement .debs older than the installed ones: going back to a previous
    /// commit pin is explicit (refused without this)
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Do not keep the stock .debs for an offline `rocm-pin rollback` (image builds: the
    /// previous image is the rollback, and the .debs would only add bytes to the layer).
    /// `rocm-pin rollback` then refuses and says how to get the stock runtime back
    #[arg(long)]
    pub no_rollback: bool,
    /// Install the rocm-sdk-core wheel `rocm-pin package --wheels` made into this Python venv
    /// instead, offline, and pin it for pip and uv (docs/wheels.md)
    #[arg(long, value_name = "DIR")]
    pub venv: Option<PathBuf>,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: InstallArgs) -> anyhow::Result<()> {
    if let Some(venv) = &args.venv {
        return super::venv::install(venv, &args.debs, args.json);
    }
    let listener = rocm_pin_core::progress::for_cli(args.json);
    let opts = InstallOptions {
        debs: args.debs,
        mode: args.mode.into(),
        lock_timeout: args.lock_timeout,
        guard: args.guard,
        local_repo: args.local_repo,
        accept_skipped_backport_check: args.accept_skipped_backport_check,
        allow_downgrade: args.allow_downgrade,
        no_rollback: args.no_rollback,
    };
    let report = install(
        &rocm_pin_core::host::root::Root::system(),
        &opts,
        listener.as_ref(),
    )?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let (report, verified) = (&report.install, &report.verify);
    for a in &report.actions {
        outln!("{a}");
    }
    for k in &report.kept_stock {
        outln!("kept for rollback: {k}");
    }
    for w in &report.warnings {
        outln!("warning: {w}");
    }
    match report.outcome {
        Outcome::Off | Outcome::Skipped => outln!(
            "rocm-pin install: {}",
            report
                .gate
                .as_ref()
                .map(|g| g.reason.as_str())
                .unwrap_or("")
        ),
        _ => {
            if let Some(v) = verified {
                out!("{}", v.to_human());
            }
            outln!("rocm-pin install: {}", report.outcome.word());
        }
    }
    Ok(())
}
