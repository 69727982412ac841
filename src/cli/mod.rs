//! Command-line layer: one thin file per subcommand. Parsing, choosing a progress listener,
//! printing results; all work happens in library modules.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub mod adopt;
pub mod build;
pub mod completions;
pub mod deb;
pub mod demo;
pub mod gate_mode;
pub mod install;
pub mod manpage;
pub mod package;
pub mod repo;
pub mod rollback;
pub mod standin;
pub mod status;
pub mod venv;
pub mod verify;

// Shared with the guard binary (src/guard_main.rs): defined once in crate::cli_shared.
pub use crate::cli_shared::guard;

#[derive(Parser, Debug)]
#[command(
    name = "rocm-pin",
    version,
    about = "Build, package, pin and verify a patched ROCm HIP/HSA runtime pair as Debian packages",
    long_about = None,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build the patched ROCr + CLR pair from the pinned commit into a staging tree
    Build(build::BuildArgs),
    /// Wrap a staging tree as replacement .debs for the stock hsa-rocr / hip-runtime-amd
    Package(package::PackageArgs),
    /// Gate on the ROCm version, install the replacement .debs through apt, pin, verify
    Install(install::InstallArgs),
    /// Check that the patched runtime is installed, pinned and the one the loader uses
    Verify(verify::VerifyArgs),
    /// Report ROCm version, gate decision, installed package suffix/commit and verify summary
    Status(status::StatusArgs),
    /// Turn a host patched in place (cp -P + hard links; on Debian's packaging with --commit) into the pinned packages, offline
    Adopt(adopt::AdoptArgs),
    /// Put the stock runtime back (offline) and purge the replacement packages
    Rollback(rollback::RollbackArgs),
    /// Arm, disarm or show the guard hooks that fail an apt/dpkg run breaking the runtime
    #[command(subcommand)]
    Guard(guard::GuardCommand),
    /// Write a (signed) apt repository holding the replacement .debs
    Repo(repo::RepoArgs),
    /// Run the whole chain on the built-in stand-in runtime in a throwaway chroot
    Demo(demo::DemoArgs),
    /// Build or inspect .deb files (ROCm-agnostic, dpkg-deb compatible)
    #[command(subcommand)]
    Deb(deb::DebCommand),
    /// Print a shell completion script
    Completions(completions::CompletionsArgs),
    /// Write man pages (used to package rocm-pin itself)
    #[command(hide = true)]
    Manpage(manpage::ManpageArgs),
    /// Write the built-in stand-in runtime to disk: its source (shaped like a host's stock with
    /// --like) or a stock ROCm set. Try rocm-pin without a GPU: docs/try.md
    #[command(subcommand)]
    Standin(standin::StandinCommand),
}

/// The command line parsed with [`command`]'s help.
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The clap command with the exit statuses (the one table, `rocm_pin_core::exit`) at the end of
/// every command's and subcommand's `--help`, after its own text. `-h` stays short.
pub fn command() -> clap::Command {
    crate::cli_shared::with_exit_status(Cli::command())
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Build(a) => build::run(a),
        Command::Package(a) => package::run(a),
        Command::Install(a) => install::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Status(a) => status::run(a),
        Command::Rollback(a) => rollback::run(a),
        Command::Guard(c) => guard::run(c),
        Command::Adopt(a) => adopt::run(a),
        Command::Repo(a) => repo::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Deb(c) => deb::run(c),
        Command::Completions(a) => completions::run(a),
        Command::Manpage(a) => manpage::run(a),
        Command::Standin(c) => standin::run(c),
    }
}
