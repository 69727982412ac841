//! `verify` of a root: the flags and the run both binaries share (`rocm-pin verify` adds
//! --image, --image-archive, --image-limit and --venv on top, in src/cli/verify.rs).

use clap::Args;
use std::path::PathBuf;

use rocm_pin_core::ops::verify::{verify, VerifyOptions, VerifyReport};
use rocm_pin_core::output::shown;
use rocm_pin_core::{errln, out, outln};

/// verify's flags for an installation under a root directory.
#[derive(Args, Debug)]
pub struct RootVerifyArgs {
    /// Print the report as JSON on stdout (schema: docs/verify-json.md)
    #[arg(long)]
    pub json: bool,
    /// Print nothing when every check passes; only the failed checks otherwise (for hooks)
    #[arg(long, short)]
    pub quiet: bool,
    /// Check the installation under this root directory instead of / (a chroot or image tree)
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Accept packages built with --no-backport-check (recorded in them): their HSA library may
    /// lack the backport symbol; without this flag that is a failure
    #[arg(long)]
    pub accept_skipped_backport_check: bool,
    /// Also check that this installed program or library (a path inside the root or image)
    /// binds to our runtime pair: every symbol and version node it needs of the pair, read from
    /// its ELF file without running it, and resolve it as ld.so does for the shadow-runtime
    /// check. Repeatable; Debian's dependants, AMD's libraries and torch's libraries are found
    #[arg(long, value_name = "PATH")]
    pub consumer: Vec<PathBuf>,
}

/// Verify the root and print the report.
pub fn run(args: RootVerifyArgs) -> anyhow::Result<()> {
    let report = verify(&VerifyOptions {
        root: rocm_pin_core::host::root::Root::new(&args.root),
        accept_skipped_backport_check: args.accept_skipped_backport_check,
        consumers: args.consumer,
        ..VerifyOptions::default()
    })?;
    print(&report, args.json, args.quiet)
}

/// The report as --json, --quiet or the human text asked for; the error of a failed one.
pub fn print(report: &VerifyReport, json: bool, quiet: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(report)?);
    } else if quiet {
        for c in report.failed() {
            // The guard's apt output: what the root said is shown escaped.
            errln!(
                "rocm-pin verify: FAIL {} {}: {}",
                c.name,
                shown(&c.subject),
                shown(&c.detail)
            );
        }
    } else {
        out!("{}", report.to_human());
    }
    report.error().map_or(Ok(()), Err)
}
