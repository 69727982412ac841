//! `rocm-pin rollback`.

use clap::Args;

#[derive(Args, Debug)]
pub struct RollbackArgs {}

pub fn run(_args: RollbackArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin rollback is not implemented yet")
}
