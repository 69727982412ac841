//! `rocm-pin build`.

use rocm_pin_core::outln;
use std::path::PathBuf;

use clap::Args;

use rocm_pin_core::ops::build::{self, BuildOptions};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
  rocm-pin build --source https://github.com/ROCm/rocm-systems.git --rocm-path /opt/rocm --out /staging\n  \
  MAX_JOBS=8 rocm-pin build --source ~/src/rocm-systems --out /staging --dry-run")]
pub struct BuildArgs {
    /// Git URL (fetched sparse and blobless at the commit) or local checkout (must be at the commit, clean)
    #[arg(long)]
    pub source: String,
    /// Full commit to build
    #[arg(long, default_value = rocm_pin_core::rocm::PIN_COMMIT)]
    pub commit: String,
    /// The ROCm install the build uses (resolved through its symlink chain)
    #[arg(long, default_value = rocm_pin_core::rocm::DEFAULT_ROCM_PATH)]
    pub rocm_path: PathBuf,
    /// Parallel jobs [default: $MAX_JOBS, else the number of CPUs]
    #[arg(long)]
    pub jobs: Option<u32>,
    /// Staging directory: the install, logs/ and rocm-pin-build.json
    #[arg(long)]
    pub out: PathBuf,
    /// Print the exact commands that would run, in order, and exit
    #[arg(long)]
    pub dry_run: bool,
    /// Ignore a cached staging and build from clean
    #[arg(long)]
    pub rebuild: bool,
    /// Accept an HSA library without the backport symbol (warns instead of failing); recorded in
    /// the manifest, the packages and the marker, and `verify` fails unless told it is accepted
    #[arg(long)]
    pub no_backport_check: bool,
    /// LLVM/Clang (and its CMake files) outside <rocm path>/llvm, e.g. Debian's /usr/lib/llvm-22;
    /// recorded in the manifest
    #[arg(long, value_name = "DIR")]
    pub llvm_dir: Option<PathBuf>,
    /// A patch applied (git apply) on top of the commit before configuring (repeatable, in
    /// order, after --patches); name and sha256 recorded in the manifest, packages and marker
    #[arg(long = "patch", value_name = "FILE")]
    pub patches: Vec<PathBuf>,
    /// A directory of patches (*.patch, *.diff), applied in name order before any --patch
    #[arg(long = "patches", value_name = "DIR")]
    pub patches_dir: Option<PathBuf>,
    /// Run compiles through ccache or sccache (its cache, local or remote, configured its own
    /// way: ccache.conf / CCACHE_REMOTE_STORAGE, SCCACHE_*); recorded in the manifest
    #[arg(long, value_name = "ccache|sccache")]
    pub compiler_launcher: Option<String>,
    /// ROCM_PATCH_VERSION for ROCr and CLR (e.g. 70204, so library file names match stock ones)
    #[arg(long, value_name = "DIGITS")]
    pub rocm_patch_version: Option<String>,
    /// Extra argument for ROCr's cmake configure (repeatable), e.g. --rocr-cmake-arg=-DFOO=ON
    #[arg(
        long = "rocr-cmake-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub rocr_cmake_args: Vec<String>,
    /// Extra argument for CLR's cmake configure (repeatable)
    #[arg(long = "clr-cmake-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub clr_cmake_args: Vec<String>,
    /// No progress output
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: BuildArgs) -> anyhow::Result<()> {
    let opts = BuildOptions {
        source: args.source,
        commit: args.commit,
        rocm_path: args.rocm_path,
        jobs: args.jobs,
        out: args.out,
        rebuild: args.rebuild,
        backport_check: !args.no_backport_check,
        rocm_patch_version: args.rocm_patch_version,
        rocr_cmake_args: args.rocr_cmake_args,
        clr_cmake_args: args.clr_cmake_args,
        llvm_dir: args.llvm_dir,
        patches_dir: args.patches_dir,
        patches: args.patches,
        compiler_launcher: args.compiler_launcher,
        // The binary carries the test kit (for `rocm-pin demo`), so its build also takes the
        // stand-in tree, after the real one.
        trees: vec![build::ROCM_SYSTEMS, rocm_pin_kit::standin::tree::TREE],
    };
    if args.dry_run {
        for line in build::plan(&opts)? {
            outln!("{line}");
        }
        return Ok(());
    }
    let listener = rocm_pin_core::progress::for_cli(args.quiet);
    let outcome = build::build(&opts, listener.as_ref())?;
    let m = &outcome.manifest;
    outln!(
        "{} {} ({}) in {}",
        if outcome.cache_hit {
            "reused cached staging of"
        } else {
            "built"
        },
        m.commit,
        outcome.tree.describe(),
        outcome.staging.display()
    );
    for lib in &m.libraries {
        let mut facts = vec![format!(
            "soname {}",
            lib.soname.as_deref().unwrap_or("(none)")
        )];
        if let Some(b) = lib.backport_symbol {
            facts.push(format!(
                "{} {}",
                rocm_pin_core::rocm::BACKPORT_SYMBOL,
                if b { "exported" } else { "MISSING" }
            ));
        }
        outln!("  {}  [{}]", lib.path, facts.join(", "));
    }
    for patch in &m.patches {
        outln!("  patch {}  sha256 {}", patch.name, patch.sha256);
    }
    if m.backport_check_skipped {
        outln!(
            "  backport check SKIPPED (--no-backport-check): recorded; `rocm-pin verify` fails \
             unless given --accept-skipped-backport-check"
        );
    }
    outln!(
        "manifest: {}",
        outcome.staging.join(build::MANIFEST_FILE).display()
    );
    Ok(())
}
