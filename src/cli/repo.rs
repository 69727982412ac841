//! `rocm-pin repo`.

use clap::Args;

#[derive(Args, Debug)]
pub struct RepoArgs {}

pub fn run(_args: RepoArgs) -> anyhow::Result<()> {
    anyhow::bail!("rocm-pin repo is not implemented yet")
}
