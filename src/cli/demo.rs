//! `rocm-pin demo`.

use rocm_pin_core::{out, outln};
use std::path::PathBuf;

use clap::Args;

use rocm_pin_core::exit::{Failure, Interrupted, CTRL_C_SIGNAL};
use rocm_pin_kit::demo::{self, DemoOptions};

const DEMO_HELP: &str = "\
Builds the stand-in runtime (tiny C libraries with the real names, sonames and backport
symbol, embedded in rocm-pin), packages it against a stand-in stock ROCm 7.2.4 set, publishes
a signed apt repository, and in a throwaway chroot installs the stock set, runs `rocm-pin
install --mode require`, then the apt commands that used to put the stock runtime back (the
`apt --fix-broken install` scenario first), each followed by `rocm-pin verify` and a check of
what the dynamic loader maps. Prints a table: step, result, time. Exit 0 only when every step
is ok.

Needs root (the chroot). Installs nothing on this host; needs mmdebstrap the first time to make
the chroot image (`scripts/install-deps --demo` installs it), cached in --cache for the next run.

Examples:
  sudo scripts/demo
  sudo rocm-pin demo --suite trixie --keep /tmp/rocm-pin-demo";

#[derive(Args, Debug)]
#[command(after_help = DEMO_HELP)]
pub struct DemoArgs {
    /// Debian suite of the throwaway chroot
    #[arg(long, default_value = demo::DEFAULT_SUITE, value_parser = clap::builder::PossibleValuesParser::new(demo::SUITES))]
    pub suite: String,
    /// Cache directory for the chroot image (chroot/<suite>-apt.tar.zst) and its unpacked tree
    #[arg(long, value_name = "DIR", default_value = demo::DEFAULT_CACHE_DIR)]
    pub cache: PathBuf,
    /// Leave everything here for inspection (a new or empty directory): the chroot root,
    /// the stand-in source, staging, stock and replacement .debs, the repository, logs
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print the report as JSON on stdout (no progress output)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().map_err(|e| {
        rocm_pin_core::error::usage(format!("cannot find the running rocm-pin binary: {e}"))
    })?;
    let opts = DemoOptions {
        suite: args.suite,
        cache_dir: args.cache,
        keep: args.keep,
        rocm_pin: exe,
    };
    let listener = rocm_pin_core::progress::for_cli(args.json);
    let report = demo::run(&opts, listener.as_ref())?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        outln!();
        out!("{}", report.table());
        for s in report.failed() {
            outln!(
                "\nFAILED: {}\n{}",
                s.name,
                s.error.as_deref().unwrap_or("(no detail)")
            );
        }
        outln!("\n{}", demo::standin_notice(report.commit.as_deref()));
        outln!("\nThe same chain on a real ROCm 7.2.4 host (or in a Dockerfile on the ROCm 7.2.4 image):");
        for c in demo::real_host_commands() {
            outln!("  {c}");
        }
        match (&report.kept, &report.kept_chroot) {
            (Some(dir), Some(root)) => outln!(
                "\nKept for inspection in {}: chroot root {} (e.g. chroot {} rocm-pin verify), \
                 logs in {}/logs",
                dir.display(),
                root.display(),
                root.display(),
                dir.display()
            ),
            (Some(dir), None) => outln!(
                "\nKept for inspection in {} (logs in {}/logs)",
                dir.display(),
                dir.display()
            ),
            _ => outln!("\nEverything temporary was removed (--keep DIR keeps it); the chroot image stays cached in {}.", opts.cache_dir.display()),
        }
    }
    if report.interrupted {
        // Exits as the signal would have ended it (130 for Ctrl-C), not as a failed check.
        Err(Interrupted {
            signal: report.interrupt_signal.unwrap_or(CTRL_C_SIGNAL),
            message: "demo interrupted: the steps after the interruption were not run; \
                      everything temporary was cleaned up"
                .into(),
        }
        .into())
    } else if report.ok() {
        Ok(())
    } else {
        let names: Vec<&str> = report.failed().map(|s| s.name.as_str()).collect();
        Err(Failure::CheckFailed(format!(
            "demo failed: {} step(s) failed ({})",
            names.len(),
            names.join("; ")
        ))
        .into())
    }
}
