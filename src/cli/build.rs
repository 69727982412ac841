//! `rocm-pin build`.

use clap::Args;

#[derive(Args, Debug)]
pub struct BuildArgs {}

pub fn run(_args: BuildArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin build is not implemented yet")
}
