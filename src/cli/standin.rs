//! `rocm-pin standin`: writes the built-in stand-in pieces to disk — the stand-in rocm-systems
//! checkout (`--like ROOT` shapes it like a host's stock runtime: how docs/try.md tries rocm-pin
//! on a real host without a GPU) and the stock ROCm .deb set with the loader probe (for scripts
//! that build images without Rust: scripts/images).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use rocm_pin_kit::standin::{build_loader_probe, build_stock_set, StockRole, StockSetSpec};

#[derive(Subcommand, Debug)]
pub enum StandinCommand {
    /// Build the stand-in stock ROCm set into OUT/debs (repository packages), OUT/extra
    /// (dpkg -i-only packages such as the custom rccl) and the loader probe OUT/rocm-pin-loader-probe
    Stock(StockArgs),
    /// Write the stand-in rocm-systems source as a git checkout into OUT; prints its commit.
    /// With --like ROOT it is shaped like ROOT's stock runtime (HIP major, every exported symbol)
    Source(SourceArgs),
}

#[derive(Args, Debug)]
pub struct StockArgs {
    /// ROCm release the set claims to be (its prefix /opt/rocm-<V> and .info/version)
    #[arg(long, default_value = rocm_pin_core::rocm::TARGET_ROCM_VERSION)]
    pub rocm_version: String,
    /// Pad hsa-rocr's and hip-runtime-amd's libraries to the real 7.2.4 files' sizes (for
    /// benchmarks; docs/performance.md)
    #[arg(long)]
    pub real_sizes: bool,
    /// A new or empty directory
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct SourceArgs {
    /// A new or empty directory
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Shape the stand-in like the stock ROCm runtime installed under ROOT (`/` for this host):
    /// its libamdhip64's SONAME major, and every dynamic symbol its stock runtime libraries
    /// export, so `rocm-pin package --stock-root ROOT` accepts the build (the ABI check)
    #[arg(long, value_name = "ROOT")]
    pub like: Option<PathBuf>,
}

pub fn run(cmd: StandinCommand) -> anyhow::Result<()> {
    match cmd {
        StandinCommand::Stock(a) => stock(a),
        StandinCommand::Source(a) => {
            let commit = match &a.like {
                Some(root) => {
                    rocm_pin_kit::standin::like::write_standin_checkout_like(&a.out, root)?
                }
                None => rocm_pin_kit::standin::tree::write_standin_checkout(&a.out)?,
            };
            println!("{commit}");
            Ok(())
        }
    }
}

fn stock(args: StockArgs) -> anyhow::Result<()> {
    let mut spec = StockSetSpec::for_host()?.with_roles(&[StockRole::CustomRccl]);
    spec.rocm_version = args.rocm_version;
    spec.real_sizes = args.real_sizes;
    let work = args.out.join(".work");
    let set = build_stock_set(&spec, &work, &rocm_pin_core::progress::Silent)?;
    for (dir, in_repo) in [("debs", true), ("extra", false)] {
        let dest = args.out.join(dir);
        std::fs::create_dir_all(&dest)?;
        for p in set.packages.iter().filter(|p| p.in_repository == in_repo) {
            let name = p.deb.file_name().expect("a .deb has a file name");
            std::fs::rename(&p.deb, dest.join(name))?;
        }
    }
    std::fs::remove_dir_all(&work)?;
    build_loader_probe(&args.out.join("rocm-pin-loader-probe"))?;
    println!("{}", args.out.display());
    Ok(())
}
