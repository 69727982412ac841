//! `rocm-pin status`.

use clap::Args;

#[derive(Args, Debug)]
pub struct StatusArgs {}

pub fn run(_args: StatusArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin status is not implemented yet")
}
