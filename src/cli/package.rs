//! `rocm-pin package`.

use rocm_pin_core::outln;
use std::path::PathBuf;

use clap::Args;

use rocm_pin_core::deb::Compression;
use rocm_pin_core::exit::usage;
use rocm_pin_core::host::root::Root;
use rocm_pin_core::ops::package::{self, PackageRequest, StagingInput, StockInput};
use rocm_pin_core::ops::plan::{self, CommitOverride, PlanOptions};

#[derive(Args, Debug)]
#[command(
    about = "Wrap a staging tree as replacement .debs for the stock hsa-rocr / hip-runtime-amd (or another family: --family rccl)",
    after_help = "Examples:\n  rocm-pin package --staging build/staging --out debs/\n  rocm-pin package --staging build/staging --stock-deb hsa-rocr_*.deb hip-runtime-amd_*.deb --out debs/\n  rocm-pin package --staging /tmp/install --commit <sha> --commit-time 1764720000 --stock-root /srv/chroot --out debs/\n  rocm-pin package --family rccl --from-deb rccl_2.27.7_amd64.deb --commit <sha> --commit-time 1764720000 --out debs/"
)]
pub struct PackageArgs {
    // Boxed so the subcommand enum stays small (clippy::large_enum_variant).
    #[command(flatten)]
    pub inner: Box<PackageOptions>,
}

#[derive(Args, Debug)]
pub struct PackageOptions {
    /// The output of `rocm-pin build`, or a `cmake --install` tree (lib/…)
    #[arg(long, value_name = "DIR", required_unless_present = "from_deb")]
    pub staging: Option<PathBuf>,
    /// The .debs a library's own CPack build made (e.g. rccl_<ver>_amd64.deb rccl-dev_….deb),
    /// instead of --staging; needs --commit
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "staging")]
    pub from_deb: Vec<PathBuf>,
    /// The family to pin: runtime (the HSA + HIP pair) or rccl
    #[arg(long, default_value = "runtime", value_parser = family_name)]
    pub family: &'static rocm_pin_core::rocm::PinnedFamily,
    /// Read stock facts from the dpkg database under ROOT (default /)
    #[arg(long, value_name = "ROOT", conflicts_with = "stock_deb")]
    pub stock_root: Option<PathBuf>,
    /// Read stock facts from these stock .debs instead of a dpkg database
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub stock_deb: Vec<PathBuf>,
    /// With --stock-deb: resolve NEEDED libraries against the dpkg database under ROOT (default /)
    #[arg(long, value_name = "ROOT")]
    pub target_root: Option<PathBuf>,
    /// The real versioned ROCm prefix (default: /opt/rocm resolved through its symlinks)
    #[arg(long, value_name = "PATH")]
    pub prefix: Option<String>,
    /// The package suffix: replacement packages are named <stock>-<SUFFIX>
    #[arg(long = "flavor", value_name = "SUFFIX", default_value = rocm_pin_core::rocm::DEFAULT_SUFFIX)]
    pub suffix: String,
    /// Full source commit (required when the staging has no rocm-pin-build.json)
    #[arg(long)]
    pub commit: Option<String>,
    /// Committer timestamp of --commit (default: SOURCE_DATE_EPOCH)
    #[arg(long, value_name = "SECONDS")]
    pub commit_time: Option<i64>,
    /// Directory that receives the .debs (written only when everything succeeded)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// data.tar compression
    #[arg(short = 'Z', long = "compression", value_enum, default_value = "xz")]
    pub compression: CompressionArg,
    /// Compressor threads (default: the CPUs this process may use, per affinity and cgroup
    /// quota); the output does not depend on it
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Keep debug information in the rebuilt libraries
    #[arg(long)]
    pub no_strip: bool,
    /// Accept a rebuilt library whose SONAME major differs from the stock one (an ABI change)
    #[arg(long)]
    pub allow_soname_change: bool,
    /// Package a rebuilt library that lacks symbols the stock one exports (recorded in the
    /// packages and the marker; verify names the programs that need them)
    #[arg(long)]
    pub allow_missing_symbols: bool,
    /// Maintainer field of the replacement packages
    #[arg(long, env = "ROCM_PIN_MAINTAINER", default_value = plan::templates::DEFAULT_MAINTAINER)]
    pub maintainer: String,
    /// Make the replacement rocm-sdk-core wheel instead of .debs, from the stock one installed
    /// in --stock-venv (docs/wheels.md)
    #[arg(long, requires = "stock_venv")]
    pub wheels: bool,
    /// With --wheels: a venv holding the stock ROCm wheels (rocm-sdk-core)
    #[arg(long, value_name = "DIR", requires = "wheels", conflicts_with_all = ["stock_root", "stock_deb", "target_root", "prefix"])]
    pub stock_venv: Option<PathBuf>,
    /// Say nothing but errors and the written .deb paths
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum CompressionArg {
    Xz,
    Gzip,
    Zstd,
    None,
}

impl From<CompressionArg> for Compression {
    fn from(c: CompressionArg) -> Self {
        match c {
            CompressionArg::Xz => Compression::Xz,
            CompressionArg::Gzip => Compression::Gzip,
            CompressionArg::Zstd => Compression::Zstd,
            CompressionArg::None => Compression::None,
        }
    }
}

pub(crate) fn family_name(
    name: &str,
) -> Result<&'static rocm_pin_core::rocm::PinnedFamily, String> {
    rocm_pin_core::rocm::PinnedFamily::by_name(name).ok_or_else(|| {
        format!(
            "unknown family {name:?}; known: {}",
            rocm_pin_core::rocm::PinnedFamily::names().join(", ")
        )
    })
}

fn source_date_epoch() -> anyhow::Result<Option<u64>> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| usage(format!("SOURCE_DATE_EPOCH={v:?} is not a Unix timestamp"))),
        _ => Ok(None),
    }
}

pub fn run(args: PackageArgs) -> anyhow::Result<()> {
    let args = *args.inner;
    let sde = source_date_epoch()?;
    if let Some(venv) = args.stock_venv {
        let commit = CommitOverride {
            commit: args.commit,
            commit_time: args.commit_time.or(sde.and_then(|s| i64::try_from(s).ok())),
        };
        let staging = args.staging.ok_or_else(|| {
            usage("package --stock-venv needs --staging DIR: the wheels are made from a build's staging, not from .debs")
        })?;
        return super::venv::package(staging, commit, venv, args.out, sde);
    }
    let stock = if args.stock_deb.is_empty() {
        StockInput::Root(args.stock_root.map_or_else(Root::system, Root::new))
    } else {
        StockInput::Debs {
            debs: args.stock_deb,
            target_root: args.target_root.map_or_else(Root::system, Root::new),
        }
    };
    let commit = CommitOverride {
        commit: args.commit,
        commit_time: args.commit_time.or(sde.and_then(|s| i64::try_from(s).ok())),
    };
    let staging = match args.staging {
        Some(dir) => StagingInput::Dir { dir, commit },
        None => StagingInput::FromDebs {
            debs: args.from_deb,
            commit,
        },
    };
    let req = PackageRequest {
        staging,
        stock,
        prefix: args.prefix,
        out: args.out,
        compression: args.compression.into(),
        threads: args.threads,
        source_date_epoch: sde,
        options: PlanOptions {
            suffix: args.suffix,
            strip: !args.no_strip,
            allow_soname_change: args.allow_soname_change,
            allow_missing_symbols: args.allow_missing_symbols,
            maintainer: args.maintainer,
            family: args.family,
        },
    };
    let listener = rocm_pin_core::progress::for_cli(args.quiet);
    let outcome = package::package(&req, listener.as_ref())?;
    for d in &outcome.debs {
        outln!("{}", d.output.display());
    }
    Ok(())
}
