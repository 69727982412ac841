//! `rocm-pin adopt`.

use rocm_pin_core::outln;
use std::path::PathBuf;

use clap::Args;

use rocm_pin_core::ops::adopt::AdoptOptions;
use rocm_pin_core::ops::workflow::adopt;

/// Turn a host or image patched in place into the pinned, Protected packages: offline, without
/// a source build. Patched in place means patched libraries copied over the stock files dpkg
/// owns: on AMD's packaging the old `cp -P` + hard-link method under /opt/rocm-*/lib, with
/// /opt/rocm/.info/atom-rocm-runtime-commit; on Debian's packaging (libamdhip64-7,
/// libhsa-runtime64-1, ...) the files in /usr/lib/<triplet>/, which have no marker, so give the
/// commit with --commit. The live patched libraries are packaged exactly as `rocm-pin package`
/// does and installed exactly as `rocm-pin install` does, then verified.
///
/// Refuses (exit 2, nothing changed) on a host that is not patched in place, on an in-place
/// patch that is broken (empty or dangling files, a marker disagreeing with the libraries or
/// with --commit, no backport symbol, only half of the pair patched), on Debian's packaging
/// without --commit, and when no stock .deb can be had for rollback (unless --no-rollback). A
/// run killed part-way is completed by the next `rocm-pin adopt`.
///
/// Examples: `rocm-pin adopt && rocm-pin status`;
/// on Debian's packaging `rocm-pin adopt --commit <40-digit commit>`
#[derive(Args, Debug)]
pub struct AdoptArgs {
    /// Directory that receives the adopted .debs (default /var/lib/rocm-pin/adopted)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Adopt even when no stock .deb can be found (`rocm-pin rollback` will then need the
    /// stock packages from a repository)
    #[arg(long)]
    pub no_rollback: bool,
    /// Also install the guard hooks, as `rocm-pin install --guard` does (what the Dockerfile
    /// recipe's install-runtime.sh does by default): any later apt command, or dpkg run by hand,
    /// that breaks the runtime fails
    #[arg(long)]
    pub guard: bool,
    /// The full 40-digit commit the patched libraries were built from. Needed where there is no
    /// in-place marker (Debian's packaging; a HIP library file named
    /// libamdhip64.so.<version>-<short hash> carries its start); where there is one
    /// (.info/atom-rocm-runtime-commit) it must say the same
    #[arg(long, value_name = "COMMIT")]
    pub commit: Option<String>,
    /// Seconds to wait for another apt/dpkg holding the lock
    #[arg(long, default_value_t = 120)]
    pub lock_timeout: u32,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: AdoptArgs) -> anyhow::Result<()> {
    let listener = rocm_pin_core::progress::for_cli(args.json);
    let report = adopt(
        &rocm_pin_core::host::root::Root::system(),
        &AdoptOptions {
            out: args.out,
            no_rollback: args.no_rollback,
            lock_timeout: args.lock_timeout,
            guard: args.guard,
            commit: args.commit,
        },
        listener.as_ref(),
    )?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let report = &report.adopt;
    if report.resumed {
        outln!("completed an adoption that was interrupted earlier");
    }
    for s in &report.stock_debs {
        outln!("kept for rollback: {s}");
    }
    for a in &report.actions {
        outln!("{a}");
    }
    for w in &report.warnings {
        outln!("warning: {w}");
    }
    outln!(
        "rocm-pin adopt: commit {} is now installed as packages: {}",
        report.commit,
        report.debs.join(" ")
    );
    Ok(())
}
