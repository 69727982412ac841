//! `rocm-pin-guard`: the guard's own small binary — `guard on|off|status|hook` and `verify` of
//! a root, nothing else. The --guard hooks run it and images keep only it (docs/docker.md):
//! it links none of pgp, xz, zstd, the image unpacker or the sandbox kit, so it is a fraction
//! of the full `rocm-pin`. Its flags, output, JSON and exit codes are the full binary's, from
//! the same definitions (crate::cli_shared).
#![warn(clippy::too_many_lines)]
#![allow(rustdoc::invalid_html_tags)]

mod cli_shared;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use cli_shared::{guard, verify_root};
use std::ffi::OsString;

#[derive(Parser, Debug)]
#[command(
    name = "rocm-pin-guard",
    version,
    about = "The rocm-pin guard's own binary: guard on|off|status and verify of a root. Every other subcommand (install, verify --image, --venv, ...) is in the full rocm-pin",
    long_about = None,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check that the patched runtime under a root (/ by default) is installed, pinned and the
    /// one the loader uses. Read-only. Exit 0 when every check passes, 1 when any fails, 2 for
    /// usage or environment errors, 3 when the version gate skipped this host. --image,
    /// --image-archive and --venv are in the full rocm-pin
    Verify(verify_root::RootVerifyArgs),
    /// Arm, disarm or show the guard hooks that fail an apt/dpkg run breaking the runtime
    #[command(subcommand)]
    Guard(guard::GuardCommand),
    /// Any other subcommand: the full rocm-pin has it
    #[command(external_subcommand)]
    Other(Vec<OsString>),
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Verify(a) => verify_root::run(a),
        Command::Guard(c) => guard::run(c),
        Command::Other(words) => {
            let name = words
                .first()
                .map(|w| w.to_string_lossy().into_owned())
                .unwrap_or_default();
            Err(rocm_pin_core::error::usage(format!(
                "rocm-pin-guard has only `guard` and `verify` of a root; `{}` is in the full rocm-pin (`rocm-pin {}`, from rocm-pin's .deb or the runtime artifact's bin/rocm-pin)",
                rocm_pin_core::output::shown(&name),
                rocm_pin_core::output::shown(&name)
            )))
        }
    }
}

fn main() {
    let matches = cli_shared::with_exit_status(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli_shared::finish(run(cli));
}
