//! `rocm-pin package`.

use clap::Args;

#[derive(Args, Debug)]
pub struct PackageArgs {}

pub fn run(_args: PackageArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin package is not implemented yet")
}
