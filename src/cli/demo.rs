//! `rocm-pin demo`.

use clap::Args;

#[derive(Args, Debug)]
pub struct DemoArgs {}

pub fn run(_args: DemoArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin demo is not implemented yet")
}
