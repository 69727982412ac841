//! `rocm-pin install`.

use clap::Args;

#[derive(Args, Debug)]
pub struct InstallArgs {}

pub fn run(_args: InstallArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin install is not implemented yet")
}
