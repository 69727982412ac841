//! `rocm-pin deb build|inspect`.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum DebCommand {}

pub fn run(cmd: DebCommand) -> anyhow::Result<()> {
    match cmd {}
}
