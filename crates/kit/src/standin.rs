//! The stand-in stock ROCm package set: the real shapes of ROCm 7.2.4's runtime packages (names,
//! version strings, file names, sonames, maintainer scripts, exact `=` metas) around tiny
//! gcc-built libraries. The package and install acceptance tests and `rocm-pin demo` install it
//! where no real ROCm exists; it must behave like the stock set as far as dpkg, apt, ldconfig
//! and the dynamic loader can tell.
//!
//! Shapes (docs/design.md §4):
//! - `rocm-core` `7.2.4.70204-93~24.04` owns `<prefix>/.info/version` (`7.2.4-93`); its postinst
//!   makes `/opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-7.2.4`, its prerm takes it away.
//! - `hsa-rocr` `1.18.0.70204-93~24.04`: `libhsa-runtime64.so.1.18.70204` (SONAME
//!   `libhsa-runtime64.so.1`, symbols in `ROCR_1`, *no* `hsa_amd_signal_create_v2`) + links; its
//!   postinst writes `/etc/ld.so.conf.d/rocr-runtime.conf` and runs ldconfig, its prerm
//!   **deletes** that file and runs ldconfig (the trap the replacement must survive).
//! - `hip-runtime-amd` `7.2.53211.70204-93~24.04`: `libamdhip64`, `libhiprtc`,
//!   `libhiprtc-builtins` (`.so.7.2.70204` + links), `.hipInfo`; Depends `hsa-rocr (= …)`,
//!   Provides/Replaces `hip-rocclr`. libamdhip64 NEEDs libhsa-runtime64.so.1.
//! - `rocm-hip-runtime` (exact `=` on the three), `hip-dev` (`=`), `rccl`, `hipblas` (`>=`),
//!   `rocm-smi-lib`; opt-in: a custom `rccl` with exact deps, and decoys package discovery must
//!   not pick (Debian's `libhsa-runtime64-1` under `/usr/lib/<multiarch>`, `hsa-rocr-asan`
//!   under `<prefix>/lib/asan`).
//!
//! Every library embeds an identity (`hsa-STOCK-70204`) readable through the exported
//! `rocm_pin_identity()` and the data string `ROCM_PIN_IDENTITY=…`; [`build_loader_probe`]
//! builds the program that reports, per soname, which file the loader used and its identity.
//! Same spec → byte-identical .debs.

pub mod abi;
pub mod chroot;
mod compile;
mod csrc;
pub mod like;
mod package;
pub mod scenarios;
mod spec;
pub mod tree;

pub use csrc::{IDENTITY_FUNCTION, IDENTITY_PREFIX, PROBE_SOURCE};
pub use package::{StandinPackage, StockLibrary};
pub use spec::{
    host_architecture, host_multiarch, real_library_size, Naming, StockRole, StockSetSpec,
    VersionFile, DEFAULT_SOURCE_DATE_EPOCH, REAL_LIBRARY_SIZES,
};

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Serialize;

use compile::compile_all;
use package::{plan_packages, write_package};
use rocm_pin_core::progress::{self, Listener};

/// A built stand-in set.
#[derive(Debug, Clone, Serialize)]
pub struct StockSet {
    pub spec: StockSetSpec,
    /// `/opt/rocm-7.2.4`.
    pub prefix: String,
    /// Where the .debs are.
    pub out_dir: PathBuf,
    /// In build order (libraries before their dependants).
    pub packages: Vec<StandinPackage>,
}

impl StockSet {
    pub fn package(&self, role: StockRole) -> Option<&StandinPackage> {
        self.packages.iter().find(|p| p.role == role)
    }

    /// The package for `role`, or an error naming the role that this set does not hold.
    pub fn require(&self, role: StockRole) -> anyhow::Result<&StandinPackage> {
        self.package(role).ok_or_else(|| {
            anyhow::anyhow!(
                "the stand-in set in {} has no {} package (role {role:?})",
                self.out_dir.display(),
                role.base_name()
            )
        })
    }

    pub fn by_name(&self, name: &str) -> Option<&StandinPackage> {
        self.packages.iter().find(|p| p.name == name)
    }

    /// Every .deb.
    pub fn debs(&self) -> Vec<PathBuf> {
        self.packages.iter().map(|p| p.deb.clone()).collect()
    }

    /// The .debs to publish in an apt repository (all but `dpkg -i`-only packages).
    pub fn repository_debs(&self) -> Vec<PathBuf> {
        self.packages
            .iter()
            .filter(|p| p.in_repository)
            .map(|p| p.deb.clone())
            .collect()
    }

    /// Write the set's facts (spec, packages, files, libraries, identities) as JSON, for
    /// scripts and the demo's report.
    pub fn write_facts(&self, path: &Path) -> anyhow::Result<()> {
        let json = serde_json::to_vec_pretty(self).context("serialising the stand-in facts")?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
    }

    /// The library with this soname in any package of the set (first match in build order).
    pub fn library(&self, soname: &str) -> Option<&StockLibrary> {
        self.packages
            .iter()
            .flat_map(|p| p.libraries.iter())
            .find(|l| l.soname == soname)
    }
}

/// Build the stand-in set described by `spec` into `out_dir` (created if needed): one .deb per
/// selected role, named `<package>_<version>_<arch>.deb`. Needs gcc and dpkg-deb.
pub fn build_stock_set(
    spec: &StockSetSpec,
    out_dir: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<StockSet> {
    spec.validate()?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("creating the output directory {}", out_dir.display()))?;
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-standin-")
        .tempdir()
        .context("creating a temporary build directory")?;

    let libs = progress::step(listener, "compile stand-in libraries", || {
        compile_all(spec, work.path())
    })?;
    let plans = plan_packages(spec, &libs)?;

    let mut packages = Vec::new();
    for plan in plans {
        let name = format!("package {} {}", plan.name, plan.version);
        let pkg = progress::step(listener, &name, || {
            write_package(spec, &plan, out_dir, listener)
        })?;
        listener.info(&format!("{}", pkg.deb.display()));
        packages.push(pkg);
    }
    Ok(StockSet {
        spec: spec.clone(),
        prefix: spec.prefix(),
        out_dir: out_dir.to_path_buf(),
        packages,
    })
}

/// Build the loader probe (see [`PROBE_SOURCE`]) to `out`: `probe SONAME...` prints
/// `<soname>\t<path the loader used>\t<identity>\t<realpath>` per soname; exit 1 if any did
/// not load. Dynamically linked against this host's libc; run it inside chroots of the same
/// or a newer Debian.
pub fn build_loader_probe(out: &Path) -> anyhow::Result<PathBuf> {
    // The compiler runs in a temporary directory: a relative `out` would land there.
    let out = &std::path::absolute(out).with_context(|| format!("resolving {}", out.display()))?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    csrc::compile_probe(out)?;
    Ok(out.to_path_buf())
}

/// One line of the probe's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeLine {
    pub soname: String,
    /// The path the loader used (from its link map), None when the soname did not load.
    pub path: Option<String>,
    /// The embedded identity, None when not loaded or none found.
    pub identity: Option<String>,
    /// realpath of `path`.
    pub real_path: Option<String>,
}

/// Parse the probe's stdout. Lines that are not four tab-separated fields are an error.
pub fn parse_probe_output(stdout: &str) -> anyhow::Result<Vec<ProbeLine>> {
    let opt = |s: &str| (s != "-").then(|| s.to_string());
    stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 4 {
                bail!("loader probe: unexpected output line {line:?}");
            }
            let loaded = !matches!(f[2], "NOT-LOADED" | "NO-LINK-MAP");
            Ok(ProbeLine {
                soname: f[0].to_string(),
                path: if loaded { opt(f[1]) } else { None },
                identity: if loaded { opt(f[2]) } else { None },
                real_path: if loaded { opt(f[3]) } else { None },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::package::strip_revision;
    use super::*;

    #[test]
    fn default_versions_have_the_real_shapes() {
        let s = StockSetSpec::new("amd64");
        assert_eq!(s.release(), 70204);
        assert_eq!(s.prefix(), "/opt/rocm-7.2.4");
        assert_eq!(
            s.package_version(StockRole::RocmCore),
            "7.2.4.70204-93~24.04"
        );
        assert_eq!(
            s.package_version(StockRole::HsaRocr),
            "1.18.0.70204-93~24.04"
        );
        assert_eq!(
            s.package_version(StockRole::HipRuntime),
            "7.2.53211.70204-93~24.04"
        );
        assert_eq!(s.version_file_content().as_deref(), Some("7.2.4-93\n"));
        assert_eq!(s.identity("hip"), "hip-STOCK-70204");
        assert_eq!(s.package_name(StockRole::HipRuntime), "hip-runtime-amd");
    }

    #[test]
    fn multi_version_names_append_the_release_except_debian_decoy() {
        let mut s = StockSetSpec::new("amd64");
        s.naming = Naming::MultiVersion;
        assert_eq!(
            s.package_name(StockRole::HipRuntime),
            "hip-runtime-amd7.2.4"
        );
        assert_eq!(s.package_name(StockRole::HsaRocr), "hsa-rocr7.2.4");
        assert_eq!(
            s.package_name(StockRole::DebianHsaDecoy),
            "libhsa-runtime64-1"
        );
    }

    #[test]
    fn variants_change_what_they_say() {
        let s = StockSetSpec::new("amd64");
        let r2 = s.newer_release();
        assert_eq!(
            r2.package_version(StockRole::HipRuntime),
            "7.2.53211.70205-1~24.04"
        );
        assert_eq!(r2.prefix(), "/opt/rocm-7.2.4");
        assert!(!r2.roles.contains(&StockRole::RocmHipRuntime));
        assert!(s
            .newer_release_with_meta()
            .roles
            .contains(&StockRole::RocmHipRuntime));
        let old = s.other_release("7.1.0");
        assert_eq!(old.prefix(), "/opt/rocm-7.1.0");
        assert_eq!(old.package_name(StockRole::HsaRocr), "hsa-rocr7.1.0");
        assert_eq!(
            old.package_version(StockRole::HsaRocr),
            "1.18.0.70100-93~24.04"
        );
        assert_eq!(old.loader_entry_name, "rocr-runtime-7.1.0.conf");
        old.validate().unwrap();
        assert_eq!(
            s.rebuild(94).package_version(StockRole::HsaRocr),
            "1.18.0.70204-94~24.04"
        );
        let mut v = s.clone();
        v.version_file = VersionFile::Content("7.2.40".into());
        assert_eq!(v.version_file_content().as_deref(), Some("7.2.40\n"));
        v.version_file = VersionFile::Missing;
        assert_eq!(v.version_file_content(), None);
    }

    #[test]
    fn validation_refuses_bad_specs() {
        let good = StockSetSpec::new("amd64");
        good.validate().unwrap();
        let mut bad = good.clone();
        bad.rocm_version = "7.2".into();
        assert!(bad.validate().is_err());
        let mut bad = good.clone();
        bad.distro_suffix = "~24.04 x".into();
        assert!(bad.validate().is_err());
        let mut bad = good.clone();
        bad.loader_entry_name = "../x.conf".into();
        assert!(bad.validate().is_err());
        let mut bad = good.clone();
        bad.version_file = VersionFile::Content("7.2.4\n7.2.5".into());
        assert!(bad.validate().is_err());
        let mut bad = good.clone();
        bad.roles.clear();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn probe_output_parses_and_rejects_garbage() {
        let lines = parse_probe_output(
            "libamdhip64.so.7\t/opt/rocm-7.2.4/lib/libamdhip64.so.7\thip-STOCK-70204\t/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204\nlibx.so.1\t-\tNOT-LOADED\t-\n",
        )
        .unwrap();
        assert_eq!(lines[0].identity.as_deref(), Some("hip-STOCK-70204"));
        assert_eq!(lines[1].path, None);
        assert_eq!(lines[1].identity, None);
        assert!(parse_probe_output("just words\n").is_err());
    }

    #[test]
    fn strip_revision_keeps_upstream() {
        assert_eq!(
            strip_revision("7.2.53211.70204-93~24.04"),
            "7.2.53211.70204"
        );
        assert_eq!(strip_revision("1.0"), "1.0");
    }
}
