//! `rocm-pin verify`.

use clap::Args;

#[derive(Args, Debug)]
pub struct VerifyArgs {}

pub fn run(_args: VerifyArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin verify is not implemented yet")
}
