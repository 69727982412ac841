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
mod csrc;
pub mod scenarios;
pub mod tree;

pub use csrc::{IDENTITY_FUNCTION, IDENTITY_PREFIX, PROBE_SOURCE};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use md5::Digest as _;
use serde::Serialize;

use csrc::LibraryBuild;
use rocm_pin::deb::{ControlFile, FileData, PackageContent, Paragraph, PayloadEntry};
use rocm_pin::progress::{self, Listener};

/// Maintainer of ROCm's CPack packages.
const MAINTAINER: &str = "ROCm Dev Support <rocm-dev.support@amd.com>";
const HOMEPAGE: &str = "https://github.com/ROCm/rocm-systems";
/// SOURCE_DATE_EPOCH used for every stand-in build unless the spec says otherwise.
pub const DEFAULT_SOURCE_DATE_EPOCH: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// One package of the stand-in set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StockRole {
    /// `rocm-core`: `.info/version` and the `/opt/rocm` alternatives chain.
    RocmCore,
    /// `hsa-rocr`: libhsa-runtime64 and the ld.so.conf.d entry scripts.
    HsaRocr,
    /// `hip-runtime-amd`: libamdhip64, libhiprtc, libhiprtc-builtins, .hipInfo.
    HipRuntime,
    /// `rocm-hip-runtime`: meta with exact `=` Depends on the three above.
    RocmHipRuntime,
    /// `hip-dev`: Depends `hip-runtime-amd (= …)`, ships a header.
    HipDev,
    /// `rccl`: librccl NEEDing libamdhip64.so.7; Depends `hip-runtime-amd (>= …)`.
    Rccl,
    /// `hipblas`: libhipblas NEEDing libamdhip64.so.7; Depends `hip-runtime-amd (>= …)`.
    Hipblas,
    /// `rocm-smi-lib`: librocm_smi64, no HIP dependency.
    RocmSmiLib,
    /// A custom `rccl` (`…+custom`) with exact `=` Depends on the stock pair and on
    /// `rocm-smi-lib`: the `dpkg -i --force-all custom-rccl.deb; apt --fix-broken install`
    /// scenario. Not published in the repository.
    CustomRccl,
    /// Decoy: Debian's own `libhsa-runtime64-1` owning `/usr/lib/<multiarch>/libhsa-runtime64.so.1`.
    DebianHsaDecoy,
    /// Decoy: `hsa-rocr-asan` owning `<prefix>/lib/asan/libhsa-runtime64.so.1…`.
    AsanHsaDecoy,
}

impl StockRole {
    /// The set `build_stock_set` makes by default: everything a ROCm runtime host has.
    pub const DEFAULT_SET: &'static [StockRole] = &[
        StockRole::RocmCore,
        StockRole::HsaRocr,
        StockRole::HipRuntime,
        StockRole::RocmHipRuntime,
        StockRole::HipDev,
        StockRole::Rccl,
        StockRole::Hipblas,
        StockRole::RocmSmiLib,
    ];

    /// Every role, defaults and opt-ins.
    pub const ALL: &'static [StockRole] = &[
        StockRole::RocmCore,
        StockRole::HsaRocr,
        StockRole::HipRuntime,
        StockRole::RocmHipRuntime,
        StockRole::HipDev,
        StockRole::Rccl,
        StockRole::Hipblas,
        StockRole::RocmSmiLib,
        StockRole::CustomRccl,
        StockRole::DebianHsaDecoy,
        StockRole::AsanHsaDecoy,
    ];

    /// Package name before the multi-version suffix.
    pub fn base_name(self) -> &'static str {
        match self {
            StockRole::RocmCore => "rocm-core",
            StockRole::HsaRocr => "hsa-rocr",
            StockRole::HipRuntime => "hip-runtime-amd",
            StockRole::RocmHipRuntime => "rocm-hip-runtime",
            StockRole::HipDev => "hip-dev",
            StockRole::Rccl | StockRole::CustomRccl => "rccl",
            StockRole::Hipblas => "hipblas",
            StockRole::RocmSmiLib => "rocm-smi-lib",
            StockRole::DebianHsaDecoy => "libhsa-runtime64-1",
            StockRole::AsanHsaDecoy => "hsa-rocr-asan",
        }
    }

    /// False for packages meant for `dpkg -i` only (the custom rccl would otherwise be an
    /// upgrade candidate for every host using the repository).
    pub fn in_repository(self) -> bool {
        !matches!(self, StockRole::CustomRccl)
    }
}

/// How ROCm names its packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Naming {
    /// `hip-runtime-amd`.
    Plain,
    /// Multi-version installs: `hip-runtime-amd7.2.4`.
    MultiVersion,
}

/// What `rocm-core` ships as `<prefix>/.info/version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionFile {
    /// `<rocm version>-<build number>`, e.g. `7.2.4-93`.
    Standard,
    /// Exactly this content (a newline is added when missing): for the gate tests
    /// (`7.2.40`, `7.2.3`, `10.0.0`, `7.2.4+123`).
    Content(String),
    /// No version file at all.
    Missing,
}

/// Everything that decides the stand-in set. Same spec → byte-identical .debs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StockSetSpec {
    /// ROCm release, e.g. `7.2.4`; also the prefix `/opt/rocm-7.2.4`.
    pub rocm_version: String,
    /// The 5-digit release number in versions and file names; None → derived from
    /// `rocm_version` (`7.2.4` → 70204). A "newer stock release" in the same prefix uses 70205.
    pub release_number: Option<u32>,
    /// Build number after the `-` (`93` in `…-93~24.04`).
    pub build_number: u32,
    /// Distribution suffix, e.g. `~24.04` or `~22.04`.
    pub distro_suffix: String,
    /// Debian architecture (from `dpkg --print-architecture`); the libraries are built by the
    /// host's gcc, so it must be the host's.
    pub architecture: String,
    pub naming: Naming,
    /// hsa-rocr's upstream version (`1.18.0` → `libhsa-runtime64.so.1.18.<release>`).
    pub hsa_version: String,
    /// HIP's build number inside hip-runtime-amd's version (`7.2.53211.70204`).
    pub hip_build: u32,
    /// Identity tag embedded in each library: `<family>-<tag>-<release>` (`hip-STOCK-70204`).
    pub identity_tag: String,
    pub version_file: VersionFile,
    /// The ld.so.conf.d entry hsa-rocr's scripts write and delete (`rocr-runtime.conf`, or
    /// `hsa-rocr.conf` in some releases).
    pub loader_entry_name: String,
    /// Which packages to build.
    pub roles: BTreeSet<StockRole>,
    /// mtime of every archive member.
    pub source_date_epoch: u64,
    /// Pad every library of hsa-rocr and hip-runtime-amd (the stock files rocm-pin's packages
    /// carry or replace) to the size of the real 7.2.4 file ([`REAL_LIBRARY_SIZES`]), with a
    /// non-loaded ELF section of seeded pseudo-random bytes: for benchmarks, where the tiny
    /// stand-ins would leave only fixed costs to measure.
    pub real_sizes: bool,
}

/// Sizes of the real ROCm 7.2.4 runtime libraries, by file name before the release
/// (`libamdhip64.so.7.2.` + release), as measured with `dpkg-deb -c` on Debian's 7.2.4
/// packages (docs/performance.md lists where each comes from).
pub const REAL_LIBRARY_SIZES: &[(&str, u64)] = &[
    ("libamdhip64.so.", 27_490_168),
    ("libhsa-runtime64.so.", 4_370_616),
    ("libhiprtc.so.", 869_672),
    ("libhiprtc-builtins.so.", 603_704),
];

/// The real size of the stock library `file_name` (`libhiprtc.so.7.2.70204`), if known.
pub fn real_library_size(file_name: &str) -> Option<u64> {
    REAL_LIBRARY_SIZES
        .iter()
        .find(|(stem, _)| file_name.starts_with(stem))
        .map(|&(_, size)| size)
}

impl StockSetSpec {
    /// The stock ROCm 7.2.4 set (`-93~24.04`, plain names, default roles) for `architecture`.
    pub fn new(architecture: &str) -> Self {
        StockSetSpec {
            rocm_version: rocm_pin::rocm::TARGET_ROCM_VERSION.to_string(),
            release_number: None,
            build_number: 93,
            distro_suffix: "~24.04".to_string(),
            architecture: architecture.to_string(),
            naming: Naming::Plain,
            hsa_version: "1.18.0".to_string(),
            hip_build: 53211,
            identity_tag: "STOCK".to_string(),
            version_file: VersionFile::Standard,
            loader_entry_name: "rocr-runtime.conf".to_string(),
            roles: StockRole::DEFAULT_SET.iter().copied().collect(),
            source_date_epoch: DEFAULT_SOURCE_DATE_EPOCH,
            real_sizes: false,
        }
    }

    /// The shape of AMD's ROCm 6.3.0 packages (`-39~24.04`: `hsa-rocr 1.14.0.60300`,
    /// `hip-runtime-amd 6.3.42131.60300`, `libamdhip64.so.6`, prefix `/opt/rocm-6.3.0`): a stock
    /// set whose SONAME majors match a HIP 6.3 tree built from source.
    pub fn rocm_6_3(architecture: &str) -> Self {
        StockSetSpec {
            rocm_version: "6.3.0".to_string(),
            build_number: 39,
            hsa_version: "1.14.0".to_string(),
            hip_build: 42131,
            ..Self::new(architecture)
        }
    }

    /// [`StockSetSpec::new`] for this host's architecture (`dpkg --print-architecture`).
    pub fn for_host() -> anyhow::Result<Self> {
        Ok(Self::new(&host_architecture()?))
    }

    /// "r2": a newer stock release of the pair in the same prefix (`70205`, build 1), new file
    /// names, soname links re-pointed. Only hsa-rocr and hip-runtime-amd.
    pub fn newer_release(&self) -> Self {
        let mut next = self.clone();
        next.release_number = Some(self.release() + 1);
        next.build_number = 1;
        next.roles = [StockRole::HsaRocr, StockRole::HipRuntime].into();
        next
    }

    /// "r3": [`Self::newer_release`] plus `rocm-core`, and the exact-`=` dependants
    /// `rocm-hip-runtime` and `hip-dev` at the new versions (what a point release publishes).
    pub fn newer_release_with_meta(&self) -> Self {
        let mut next = self.newer_release();
        next.roles.insert(StockRole::RocmCore);
        next.roles.insert(StockRole::RocmHipRuntime);
        next.roles.insert(StockRole::HipDev);
        next
    }

    /// The pair rebuilt with another build number (`-94`): same files, another exact version.
    pub fn rebuild(&self, build_number: u32) -> Self {
        let mut next = self.clone();
        next.build_number = build_number;
        next.roles = [StockRole::HsaRocr, StockRole::HipRuntime].into();
        next
    }

    /// Decoy: another ROCm release installed side by side in its own prefix
    /// (`/opt/rocm-7.1.0`), multi-version names (`hsa-rocr7.1.0`), its own loader entry
    /// (`rocr-runtime-7.1.0.conf`) and a lower alternatives priority, so `/opt/rocm` keeps
    /// pointing at the target. Discovery for the target prefix must not pick its packages.
    pub fn other_release(&self, rocm_version: &str) -> Self {
        let mut other = self.clone();
        other.rocm_version = rocm_version.to_string();
        other.release_number = None;
        other.naming = Naming::MultiVersion;
        other.version_file = VersionFile::Standard;
        other.loader_entry_name = format!("rocr-runtime-{rocm_version}.conf");
        other.roles = [
            StockRole::RocmCore,
            StockRole::HsaRocr,
            StockRole::HipRuntime,
        ]
        .into();
        other
    }

    /// Builder: this spec with the carried libraries at their real sizes (see `real_sizes`).
    pub fn at_real_sizes(mut self) -> Self {
        self.real_sizes = true;
        self
    }

    /// Builder: this spec with `roles` added.
    pub fn with_roles(mut self, roles: &[StockRole]) -> Self {
        self.roles.extend(roles.iter().copied());
        self
    }

    /// Builder: this spec with exactly `roles`.
    pub fn only(mut self, roles: &[StockRole]) -> Self {
        self.roles = roles.iter().copied().collect();
        self
    }

    /// The 5-digit release number (`70204`).
    pub fn release(&self) -> u32 {
        self.release_number.unwrap_or_else(|| {
            let parts = parse_three(&self.rocm_version).unwrap_or((0, 0, 0));
            parts.0 * 10000 + parts.1 * 100 + parts.2
        })
    }

    /// The real versioned prefix, `/opt/rocm-7.2.4`.
    pub fn prefix(&self) -> String {
        format!("/opt/rocm-{}", self.rocm_version)
    }

    /// Package name of `role` under this spec's naming (`hip-runtime-amd7.2.4`).
    pub fn package_name(&self, role: StockRole) -> String {
        let base = role.base_name();
        match (self.naming, role) {
            (_, StockRole::DebianHsaDecoy) | (Naming::Plain, _) => base.to_string(),
            (Naming::MultiVersion, _) => format!("{base}{}", self.rocm_version),
        }
    }

    /// Package version of `role` (`1.18.0.70204-93~24.04`).
    pub fn package_version(&self, role: StockRole) -> String {
        let rel = self.release();
        let tail = format!("{rel}-{}{}", self.build_number, self.distro_suffix);
        let (maj, min, _) = parse_three(&self.rocm_version).unwrap_or((0, 0, 0));
        match role {
            StockRole::RocmCore | StockRole::RocmHipRuntime => {
                format!("{}.{tail}", self.rocm_version)
            }
            StockRole::HsaRocr | StockRole::AsanHsaDecoy => format!("{}.{tail}", self.hsa_version),
            StockRole::HipRuntime | StockRole::HipDev => {
                format!("{maj}.{min}.{}.{tail}", self.hip_build)
            }
            StockRole::Rccl => format!("2.27.7.{tail}"),
            StockRole::CustomRccl => format!("2.27.7.{tail}+custom"),
            StockRole::Hipblas => format!("3.2.0.{tail}"),
            StockRole::RocmSmiLib => format!("7.8.0.{tail}"),
            StockRole::DebianHsaDecoy => "5.7.1-2".to_string(),
        }
    }

    /// The `.info/version` content rocm-core ships, None when it ships none.
    pub fn version_file_content(&self) -> Option<String> {
        match &self.version_file {
            VersionFile::Standard => Some(format!("{}-{}\n", self.rocm_version, self.build_number)),
            VersionFile::Content(c) if c.ends_with('\n') => Some(c.clone()),
            VersionFile::Content(c) => Some(format!("{c}\n")),
            VersionFile::Missing => None,
        }
    }

    /// `<family>-<tag>-<release>`, e.g. `hip-STOCK-70204`.
    pub fn identity(&self, family: &str) -> String {
        format!("{family}-{}-{}", self.identity_tag, self.release())
    }

    /// Refuse specs that would produce invalid package names, versions or paths.
    pub fn validate(&self) -> anyhow::Result<()> {
        if parse_three(&self.rocm_version).is_none() {
            bail!(
                "stand-in spec: ROCm version {:?} is not MAJOR.MINOR.PATCH digits",
                self.rocm_version
            );
        }
        let hsa = parse_three(&self.hsa_version).ok_or_else(|| {
            anyhow::anyhow!(
                "stand-in spec: hsa version {:?} is not MAJOR.MINOR.PATCH digits",
                self.hsa_version
            )
        })?;
        if hsa.0 == 0 && hsa.1 == 0 && hsa.2 == 0 {
            bail!("stand-in spec: hsa version must not be 0.0.0");
        }
        if self.release() == 0 {
            bail!("stand-in spec: release number must be positive");
        }
        if !self
            .distro_suffix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "~.+".contains(c))
        {
            bail!(
                "stand-in spec: distro suffix {:?} may only hold letters, digits, ~ . +",
                self.distro_suffix
            );
        }
        if self.architecture.is_empty()
            || !self
                .architecture
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            bail!(
                "stand-in spec: architecture {:?} is not a Debian architecture name",
                self.architecture
            );
        }
        if self.identity_tag.is_empty()
            || !self
                .identity_tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            bail!(
                "stand-in spec: identity tag {:?} must be letters, digits, _ or .",
                self.identity_tag
            );
        }
        if self.loader_entry_name.is_empty()
            || self.loader_entry_name.contains('/')
            || !self.loader_entry_name.ends_with(".conf")
        {
            bail!(
                "stand-in spec: loader entry {:?} must be a file name ending in .conf",
                self.loader_entry_name
            );
        }
        if let VersionFile::Content(c) = &self.version_file {
            if c.trim_end_matches('\n').contains('\n') {
                bail!("stand-in spec: version file content must be one line");
            }
        }
        if self.roles.is_empty() {
            bail!("stand-in spec: no packages selected");
        }
        Ok(())
    }
}

fn parse_three(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.split('.');
    let a = it.next()?.parse().ok()?;
    let b = it.next()?.parse().ok()?;
    let c = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    Some((a, b, c))
}

/// The Debian architecture of this host (`dpkg --print-architecture`).
pub fn host_architecture() -> anyhow::Result<String> {
    csrc::capture(
        Command::new("dpkg").arg("--print-architecture"),
        "reading the host architecture",
    )
}

/// The multiarch triplet of the host's gcc (`x86_64-linux-gnu`).
pub fn host_multiarch() -> anyhow::Result<String> {
    let triplet = csrc::capture(
        Command::new("gcc").arg("-print-multiarch"),
        "reading gcc's multiarch triplet",
    )?;
    if triplet.is_empty() {
        bail!("gcc -print-multiarch printed nothing: a Debian/Ubuntu gcc is required");
    }
    Ok(triplet)
}

/// One stand-in library as installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StockLibrary {
    /// Absolute installed path of the real file (`/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204`).
    pub path: String,
    pub soname: String,
    /// Absolute path of the soname symlink.
    pub soname_link: String,
    /// Absolute path of the development symlink, None when the package ships none.
    pub dev_link: Option<String>,
    /// What `rocm_pin_identity()` returns (`hip-STOCK-70204`).
    pub identity: String,
    pub sha256: String,
}

/// One built stand-in package and its facts (what the kit made; the product's model of a stock
/// package it replaces is `rocm_pin::ops::plan::stock::StockPackage`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StandinPackage {
    pub role: StockRole,
    pub name: String,
    pub version: String,
    pub architecture: String,
    pub deb: PathBuf,
    /// Control fields in the order written (Installed-Size included).
    pub control: Vec<(String, String)>,
    /// Absolute installed paths of every payload file and symlink (no directories), sorted.
    pub files: Vec<String>,
    /// Maintainer scripts shipped (name → content).
    pub scripts: Vec<(String, String)>,
    pub libraries: Vec<StockLibrary>,
    pub in_repository: bool,
}

impl StandinPackage {
    /// A control field's value.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.control
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `name=version`, as apt takes it.
    pub fn pinned_request(&self) -> String {
        format!("{}={}", self.name, self.version)
    }
}

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

/// A payload entry of a planned package.
#[derive(Debug, Clone)]
enum Payload {
    File {
        path: String,
        contents: Vec<u8>,
        mode: u32,
    },
    Symlink {
        path: String,
        target: String,
    },
}

impl Payload {
    fn path(&self) -> &str {
        match self {
            Payload::File { path, .. } | Payload::Symlink { path, .. } => path,
        }
    }
}

#[derive(Debug, Clone)]
struct PackagePlan {
    role: StockRole,
    name: String,
    version: String,
    /// Relationship and descriptive fields (everything but Package/Version/Architecture/
    /// Maintainer/Installed-Size, which are added when written).
    fields: Vec<(String, String)>,
    payload: Vec<Payload>,
    scripts: Vec<(String, String)>,
    triggers: Option<String>,
    libraries: Vec<StockLibrary>,
}

/// A compiled library and where it goes.
struct Compiled {
    build: LibraryBuild,
    built: PathBuf,
    install_dir: String,
    ship_dev_link: bool,
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

fn compile_all(spec: &StockSetSpec, work: &Path) -> anyhow::Result<Vec<(StockRole, Compiled)>> {
    let mut c = StockCompiler::new(spec, work);
    // The pair is always compiled: dependants link against it even when it is not packaged.
    let hsa = c.hsa_library();
    let hsa_dir = c.dir("hsa")?;
    c.compile(StockRole::HsaRocr, hsa.clone(), &hsa_dir, None)?;
    let hip_dir = c.dir("hip")?;
    for lib in c.hip_libraries(&hip_dir, &hsa_dir) {
        c.compile(StockRole::HipRuntime, lib, &hip_dir, None)?;
    }
    for d in DEPENDANTS.iter().filter(|d| spec.roles.contains(&d.role)) {
        let lib = c.dependant_library(d, &hip_dir, &hsa_dir);
        let dir = c.dir(d.sub)?;
        c.compile(d.role, lib, &dir, None)?;
    }
    if spec.roles.contains(&StockRole::DebianHsaDecoy) {
        let dir = c.dir("debian-hsa")?;
        let install_dir = format!("/usr/lib/{}", host_multiarch()?);
        c.compile(
            StockRole::DebianHsaDecoy,
            debian_hsa_decoy(),
            &dir,
            Some(install_dir),
        )?;
    }
    if spec.roles.contains(&StockRole::AsanHsaDecoy) {
        let dir = c.dir("asan-hsa")?;
        let mut lib = hsa;
        lib.identity = format!("hsa-ASAN-{}", c.rel);
        let install_dir = format!("{}/asan", c.lib_dir);
        c.compile(StockRole::AsanHsaDecoy, lib, &dir, Some(install_dir))?;
    }
    Ok(c.out)
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A library of the stock set that links against the runtime pair (or not), like the real
/// librccl, libhipblas and librocm_smi64.
struct Dependant {
    role: StockRole,
    /// Build subdirectory.
    sub: &'static str,
    stem: &'static str,
    soname_major: u32,
    /// The file name's version before the release (`1.0` in `librccl.so.1.0.<rel>`).
    file_version: &'static str,
    /// The identity's family (`rccl` in `rccl-STOCK-<rel>`).
    family: &'static str,
    version_node: &'static str,
    exports: &'static [&'static str],
    uses_hip: bool,
}

const RCCL: Dependant = Dependant {
    role: StockRole::Rccl,
    sub: "rccl",
    stem: "librccl",
    soname_major: 1,
    file_version: "1.0",
    family: "rccl",
    version_node: "RCCL_2",
    exports: &["ncclGetVersion", "ncclCommInitRank"],
    uses_hip: true,
};

const DEPENDANTS: &[Dependant] = &[
    RCCL,
    // A downstream rebuild of the same library (its identity says CUSTOM).
    Dependant {
        role: StockRole::CustomRccl,
        sub: "rccl-custom",
        ..RCCL
    },
    Dependant {
        role: StockRole::Hipblas,
        sub: "hipblas",
        stem: "libhipblas",
        soname_major: 3,
        file_version: "3.2",
        family: "hipblas",
        version_node: "HIPBLAS_3",
        exports: &["hipblasCreate", "hipblasDestroy"],
        uses_hip: true,
    },
    Dependant {
        role: StockRole::RocmSmiLib,
        sub: "smi",
        stem: "librocm_smi64",
        soname_major: 1,
        file_version: "1.0",
        family: "smi",
        version_node: "ROCM_SMI_1",
        exports: &["rsmi_init", "rsmi_shut_down"],
        uses_hip: false,
    },
];

/// Debian's own libhsa-runtime64.so.1 (ROCm 5.7.1) in the multiarch directory: the same
/// soname as the stock one, a different library.
fn debian_hsa_decoy() -> LibraryBuild {
    LibraryBuild {
        file_name: "libhsa-runtime64.so.1.11.0".into(),
        soname: "libhsa-runtime64.so.1".into(),
        dev_link: "libhsa-runtime64.so".into(),
        identity: "hsa-DEBIAN-50701".into(),
        version_node: "ROCR_1".into(),
        exports: names(&["hsa_init", "hsa_shut_down"]),
        calls: vec![],
        link_against: vec![],
    }
}

/// Compiles the libraries of one stock set under `work/libs/`, collecting them in `out`.
struct StockCompiler<'a> {
    spec: &'a StockSetSpec,
    work: &'a Path,
    /// `<prefix>/lib`, where the stock libraries are installed.
    lib_dir: String,
    /// The release number every file name ends with.
    rel: String,
    out: Vec<(StockRole, Compiled)>,
}

impl<'a> StockCompiler<'a> {
    fn new(spec: &'a StockSetSpec, work: &'a Path) -> Self {
        StockCompiler {
            spec,
            work,
            lib_dir: format!("{}/lib", spec.prefix()),
            rel: spec.release().to_string(),
            out: Vec::new(),
        }
    }

    fn dir(&self, sub: &str) -> anyhow::Result<PathBuf> {
        let d = self.work.join("libs").join(sub);
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        Ok(d)
    }

    /// Compile `lib` into `dir`; it installs into `install_dir` (default: the stock lib
    /// directory, with its dev link).
    fn compile(
        &mut self,
        role: StockRole,
        lib: LibraryBuild,
        dir: &Path,
        install_dir: Option<String>,
    ) -> anyhow::Result<()> {
        let built = csrc::compile_library(&lib, dir)?;
        let carried = matches!(role, StockRole::HsaRocr | StockRole::HipRuntime);
        if let Some(size) = real_library_size(&lib.file_name) {
            if self.spec.real_sizes && carried {
                csrc::pad_library(&built, size)?;
            }
        }
        // Only Debian's decoy lives outside the prefix, and it ships no dev link (Debian's
        // libhsa-runtime-dev is another package).
        let ship_dev_link = role != StockRole::DebianHsaDecoy;
        self.out.push((
            role,
            Compiled {
                build: lib,
                built,
                install_dir: install_dir.unwrap_or_else(|| self.lib_dir.clone()),
                ship_dev_link,
            },
        ));
        Ok(())
    }

    fn hsa_library(&self) -> LibraryBuild {
        let (hsa_maj, hsa_min, _) = parse_three(&self.spec.hsa_version).unwrap_or((1, 0, 0));
        LibraryBuild {
            file_name: format!("libhsa-runtime64.so.{hsa_maj}.{hsa_min}.{}", self.rel),
            soname: format!("libhsa-runtime64.so.{hsa_maj}"),
            dev_link: "libhsa-runtime64.so".into(),
            identity: self.spec.identity("hsa"),
            version_node: "ROCR_1".into(),
            // Deliberately without rocm_pin::rocm::BACKPORT_SYMBOL: stock 7.2.4 lacks it.
            exports: names(&[
                "hsa_init",
                "hsa_shut_down",
                "hsa_system_get_info",
                "hsa_signal_create",
                "hsa_amd_signal_create",
                "hsa_amd_agents_allow_access",
            ]),
            calls: vec![],
            link_against: vec![],
        }
    }

    /// hip-runtime-amd's libraries, in build order: hiprtc links the builtins, amdhip64 the HSA runtime.
    fn hip_libraries(&self, hip_dir: &Path, hsa_dir: &Path) -> [LibraryBuild; 3] {
        let (maj, min, _) = parse_three(&self.spec.rocm_version).unwrap_or((0, 0, 0));
        let hip_version = |stem: &str| format!("{stem}.so.{maj}.{min}.{}", self.rel);
        let builtins = LibraryBuild {
            file_name: hip_version("libhiprtc-builtins"),
            soname: format!("libhiprtc-builtins.so.{maj}"),
            dev_link: "libhiprtc-builtins.so".into(),
            identity: self.spec.identity("hiprtc-builtins"),
            version_node: "hiprtc_builtins".into(),
            exports: names(&["__hipGetPCH"]),
            calls: vec![],
            link_against: vec![],
        };
        let hiprtc = LibraryBuild {
            file_name: hip_version("libhiprtc"),
            soname: format!("libhiprtc.so.{maj}"),
            dev_link: "libhiprtc.so".into(),
            identity: self.spec.identity("hiprtc"),
            version_node: "hiprtc_4.0".into(),
            exports: names(&[
                "hiprtcCreateProgram",
                "hiprtcCompileProgram",
                "hiprtcVersion",
            ]),
            calls: names(&["__hipGetPCH"]),
            link_against: vec![(hip_dir.to_path_buf(), "libhiprtc-builtins.so".into())],
        };
        let amdhip = LibraryBuild {
            file_name: hip_version("libamdhip64"),
            soname: format!("libamdhip64.so.{maj}"),
            dev_link: "libamdhip64.so".into(),
            identity: self.spec.identity("hip"),
            version_node: "hip_4.2".into(),
            exports: names(&[
                "hipInit",
                "hipGetDeviceCount",
                "hipRuntimeGetVersion",
                "hipMalloc",
                "hipFree",
                "hipStreamCreate",
            ]),
            calls: names(&["hsa_init"]),
            link_against: vec![(hsa_dir.to_path_buf(), "libhsa-runtime64.so".into())],
        };
        [builtins, hiprtc, amdhip]
    }

    fn dependant_library(&self, d: &Dependant, hip_dir: &Path, hsa_dir: &Path) -> LibraryBuild {
        let mut link_against = Vec::new();
        if d.uses_hip {
            // Like the real librccl/libhipblas: NEEDED libamdhip64.so.7 (and, on toolchains
            // without --as-needed, libhsa-runtime64.so.1).
            link_against.push((hip_dir.to_path_buf(), "libamdhip64.so".to_string()));
            link_against.push((hsa_dir.to_path_buf(), "libhsa-runtime64.so".to_string()));
        }
        LibraryBuild {
            file_name: format!("{}.so.{}.{}", d.stem, d.file_version, self.rel),
            soname: format!("{}.so.{}", d.stem, d.soname_major),
            dev_link: format!("{}.so", d.stem),
            identity: if d.role == StockRole::CustomRccl {
                format!("{}-CUSTOM-{}", d.family, self.rel)
            } else {
                self.spec.identity(d.family)
            },
            version_node: d.version_node.into(),
            exports: names(d.exports),
            calls: if d.uses_hip {
                names(&["hipInit"])
            } else {
                vec![]
            },
            link_against,
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

fn library_payload(
    compiled: &Compiled,
    payload: &mut Vec<Payload>,
) -> anyhow::Result<StockLibrary> {
    let bytes = std::fs::read(&compiled.built)
        .with_context(|| format!("reading {}", compiled.built.display()))?;
    let dir = &compiled.install_dir;
    let b = &compiled.build;
    let path = format!("{dir}/{}", b.file_name);
    let soname_link = format!("{dir}/{}", b.soname);
    let dev_link = compiled
        .ship_dev_link
        .then(|| format!("{dir}/{}", b.dev_link));
    let lib = StockLibrary {
        path: path.clone(),
        soname: b.soname.clone(),
        soname_link: soname_link.clone(),
        dev_link: dev_link.clone(),
        identity: b.identity.clone(),
        sha256: sha256_hex(&bytes),
    };
    payload.push(Payload::File {
        path,
        contents: bytes,
        mode: 0o644,
    });
    payload.push(Payload::Symlink {
        path: soname_link,
        target: b.file_name.clone(),
    });
    if let Some(dev) = dev_link {
        payload.push(Payload::Symlink {
            path: dev,
            target: b.soname.clone(),
        });
    }
    Ok(lib)
}

fn license_text(component: &str) -> Vec<u8> {
    format!(
        "{component} (stand-in)\n\nCopyright (c) 2014-2026 Advanced Micro Devices, Inc. All rights reserved.\n\n\
         This file stands in for the license ROCm ships with {component}; the package it\n\
         belongs to was generated by rocm-pin for tests and the demo and holds no AMD code.\n"
    )
    .into_bytes()
}

fn plan_packages(
    spec: &StockSetSpec,
    libs: &[(StockRole, Compiled)],
) -> anyhow::Result<Vec<PackagePlan>> {
    let mut plans = Vec::new();
    for &role in StockRole::ALL {
        if spec.roles.contains(&role) {
            plans.push(plan_package(spec, role, libs)?);
        }
    }
    check_no_path_shipped_twice(&plans)?;
    Ok(plans)
}

fn plan_package(
    spec: &StockSetSpec,
    role: StockRole,
    libs: &[(StockRole, Compiled)],
) -> anyhow::Result<PackagePlan> {
    let mut payload = Vec::new();
    let mut libraries = Vec::new();
    for (r, c) in libs {
        if *r == role {
            libraries.push(library_payload(c, &mut payload)?);
        }
    }
    let RoleContents {
        mut fields,
        files,
        scripts,
        triggers,
        description,
    } = role_contents(spec, role);
    payload.extend(files);
    let decoy = role == StockRole::DebianHsaDecoy;
    let mut field = |k: &str, v: &str| fields.push((k.to_string(), v.to_string()));
    field("Section", if decoy { "libs" } else { "devel" });
    field("Priority", "optional");
    if !decoy {
        field("Homepage", HOMEPAGE);
    }
    field("Description", &description);
    Ok(PackagePlan {
        role,
        name: spec.package_name(role),
        version: spec.package_version(role),
        fields,
        payload,
        scripts,
        triggers,
        libraries,
    })
}

/// No path may be shipped twice inside the set's co-installable packages (a decoy shares
/// none either): catch plan mistakes here rather than as a dpkg error in a chroot.
fn check_no_path_shipped_twice(plans: &[PackagePlan]) -> anyhow::Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for plan in plans {
        if plan.role == StockRole::CustomRccl {
            continue; // replaces rccl, same files by design
        }
        for entry in &plan.payload {
            if let Some(other) = seen.insert(entry.path().to_string(), plan.name.clone()) {
                bail!(
                    "stand-in plan error: {} is shipped by both {other} and {}",
                    entry.path(),
                    plan.name
                );
            }
        }
    }
    Ok(())
}

/// What one role's package carries besides its libraries: the fields before Section, its own
/// files, maintainer scripts and triggers, and its description.
struct RoleContents {
    fields: Vec<(String, String)>,
    files: Vec<Payload>,
    scripts: Vec<(String, String)>,
    triggers: Option<String>,
    description: String,
}

impl RoleContents {
    fn new(description: &str) -> Self {
        RoleContents {
            fields: Vec::new(),
            files: Vec::new(),
            scripts: Vec::new(),
            triggers: None,
            description: description.to_string(),
        }
    }
    fn field(mut self, k: &str, v: impl Into<String>) -> Self {
        self.fields.push((k.to_string(), v.into()));
        self
    }
    fn file(mut self, path: impl Into<String>, contents: Vec<u8>) -> Self {
        self.files.push(Payload::File {
            path: path.into(),
            contents,
            mode: 0o644,
        });
        self
    }
    fn license(self, path: String, package: &str) -> Self {
        self.file(path, license_text(package))
    }
    fn script(mut self, name: &str, body: String) -> Self {
        self.scripts.push((name.to_string(), body));
        self
    }
}

/// The relation to another role of the set: `name`, `name (= version)` or
/// `name (>= upstream version)`.
struct Relations<'a>(&'a StockSetSpec);

impl Relations<'_> {
    fn name(&self, r: StockRole) -> String {
        self.0.package_name(r)
    }
    fn exact(&self, r: StockRole) -> String {
        format!("{} (= {})", self.name(r), self.0.package_version(r))
    }
    fn at_least(&self, r: StockRole) -> String {
        let v = self.0.package_version(r);
        format!("{} (>= {})", self.name(r), strip_revision(&v))
    }
}

fn role_contents(spec: &StockSetSpec, role: StockRole) -> RoleContents {
    let prefix = spec.prefix();
    let rel = Relations(spec);
    use StockRole::*;
    match role {
        RocmCore => rocm_core_contents(spec),
        HsaRocr => hsa_rocr_contents(spec),
        HipRuntime => hip_runtime_contents(spec),
        RocmHipRuntime => RoleContents::new(
            "Radeon Open Compute (ROCm) Runtime software stack\n Meta package with exact dependencies on the HIP runtime.",
        )
        .field(
            "Depends",
            format!(
                "{}, {}, {}",
                rel.exact(HipRuntime),
                rel.exact(HsaRocr),
                rel.exact(RocmCore)
            ),
        ),
        HipDev => RoleContents::new(
            "HIP:Heterogenous-computing Interface for Portability [DEVELOPMENT]\n Stand-in: headers, exact dependency on hip-runtime-amd.",
        )
        .field("Depends", rel.exact(HipRuntime))
        .file(
            format!("{prefix}/include/hip/hip_version.h"),
            format!(
                "#pragma once\n#define HIP_VERSION_MAJOR {}\n#define HIP_VERSION_PATCH {}\n",
                parse_three(&spec.rocm_version).map(|v| v.0).unwrap_or(0),
                spec.hip_build
            )
            .into_bytes(),
        ),
        Rccl | Hipblas => RoleContents::new(if role == Rccl {
            "ROCm Communication Collectives Library\n Stand-in: librccl, linked against libamdhip64."
        } else {
            "Radeon Open Compute BLAS marshalling library\n Stand-in: libhipblas, linked against libamdhip64."
        })
        .field(
            "Depends",
            format!("{}, {}", rel.at_least(HipRuntime), rel.name(RocmCore)),
        ),
        RocmSmiLib => RoleContents::new("AMD System Management libraries\n Stand-in: librocm_smi64.")
            .field("Depends", rel.name(RocmCore)),
        CustomRccl => RoleContents::new(
            "ROCm Communication Collectives Library (custom build)\n Stand-in of a downstream rebuild with exact dependencies on the stock\n runtime pair.",
        )
        .field(
            "Depends",
            format!(
                "{}, {}, {}",
                rel.exact(HipRuntime),
                rel.exact(HsaRocr),
                rel.name(RocmSmiLib)
            ),
        ),
        DebianHsaDecoy => {
            let mut c = RoleContents::new(
                "HSA Runtime API and runtime for ROCm\n Stand-in of Debian's own package (a decoy: not part of ROCm in /opt).",
            )
            .field("Depends", "libc6")
            .field("Multi-Arch", "same")
            .license(
                "/usr/share/doc/libhsa-runtime64-1/copyright".to_string(),
                "libhsa-runtime64-1",
            );
            c.triggers = Some("activate-noawait ldconfig\n".to_string());
            c
        }
        AsanHsaDecoy => RoleContents::new(
            "AMD Heterogeneous System Architecture HSA - Linux HSA Runtime (ASAN build)\n Stand-in: the address-sanitizer build under lib/asan (a decoy).",
        )
        .field("Depends", rel.name(RocmCore))
        .license(
            format!("{prefix}/share/doc/hsa-rocr-asan/LICENSE.md"),
            "hsa-rocr-asan",
        ),
    }
}

/// rocm-core: the version file, and the /opt/rocm alternatives link its scripts manage.
fn rocm_core_contents(spec: &StockSetSpec) -> RoleContents {
    let prefix = spec.prefix();
    let mut c = RoleContents::new("ROCm Runtime software stack\n Radeon Open Compute (ROCm) Runtime software stack: version information and\n the /opt/rocm alternatives link.");
    if let Some(content) = spec.version_file_content() {
        c = c.file(
            format!("{prefix}/{}", rocm_pin::rocm::VERSION_RELPATH),
            content.into_bytes(),
        );
    }
    let priority = spec.release();
    c.license(format!("{prefix}/share/doc/rocm-core/LICENSE.md"), "rocm-core")
        .script(
            "postinst",
            format!(
                "#!/bin/sh\nset -e\n# Like ROCm's rocm-core: /opt/rocm -> /etc/alternatives/rocm -> {prefix}\n\
                 case \"$1\" in\n  configure)\n    update-alternatives --install /opt/rocm rocm {prefix} {priority}\n    ;;\nesac\nexit 0\n"
            ),
        )
        .script(
            "prerm",
            format!(
                "#!/bin/sh\nset -e\ncase \"$1\" in\n  remove|deconfigure)\n    update-alternatives --remove rocm {prefix}\n    ;;\nesac\nexit 0\n"
            ),
        )
}

/// hsa-rocr: its scripts add `<prefix>/lib` to the loader, as ROCm's do.
fn hsa_rocr_contents(spec: &StockSetSpec) -> RoleContents {
    let prefix = spec.prefix();
    let entry = format!("/etc/ld.so.conf.d/{}", spec.loader_entry_name);
    RoleContents::new("AMD Heterogeneous System Architecture HSA - Linux HSA Runtime for Boltzmann (ROCm) platforms\n Stand-in: the HSA runtime library (libhsa-runtime64).")
        .field("Depends", format!("{}, libc6", spec.package_name(StockRole::RocmCore)))
        .license(format!("{prefix}/share/doc/hsa-rocr/LICENSE.md"), "hsa-rocr")
        .script(
            "postinst",
            format!(
                "#!/bin/sh\nset -e\n# Like ROCm's hsa-rocr: make {prefix}/lib visible to the loader.\n\
                 case \"$1\" in\n  configure)\n    echo \"{prefix}/lib\" > {entry}\n    ldconfig\n    ;;\nesac\nexit 0\n"
            ),
        )
        .script(
            "prerm",
            format!(
                "#!/bin/sh\nset -e\n# Like ROCm's hsa-rocr: the loader entry leaves before the files do.\n\
                 case \"$1\" in\n  remove|upgrade|deconfigure|failed-upgrade)\n    rm -f {entry}\n    ldconfig\n    ;;\nesac\nexit 0\n"
            ),
        )
}

/// hip-runtime-amd: exact dependency on hsa-rocr, and hip-rocclr provided and replaced.
fn hip_runtime_contents(spec: &StockSetSpec) -> RoleContents {
    let prefix = spec.prefix();
    let rel = Relations(spec);
    let rocclr = match spec.naming {
        Naming::Plain => "hip-rocclr".to_string(),
        Naming::MultiVersion => format!("hip-rocclr{}", spec.rocm_version),
    };
    RoleContents::new("HIP:Heterogenous-computing Interface for Portability [RUNTIME - AMD]\n Stand-in: libamdhip64, libhiprtc and libhiprtc-builtins.")
        .field(
            "Depends",
            format!(
                "{}, {}, libc6",
                rel.exact(StockRole::HsaRocr),
                rel.name(StockRole::RocmCore)
            ),
        )
        .field(
            "Provides",
            format!("{rocclr} (= {})", spec.package_version(StockRole::HipRuntime)),
        )
        .field("Replaces", rocclr)
        .file(
            format!("{prefix}/lib/.hipInfo"),
            b"HIP_PLATFORM=amd\nHIP_RUNTIME=rocclr\nHIP_COMPILER=clang\n".to_vec(),
        )
        .license(
            format!("{prefix}/share/doc/hip-runtime-amd/LICENSE.md"),
            "hip-runtime-amd",
        )
}

/// `7.2.53211.70204-93~24.04` → `7.2.53211.70204` (the upstream part, for `>=` deps).
fn strip_revision(v: &str) -> String {
    match v.rfind('-') {
        Some(i) => v[..i].to_string(),
        None => v.to_string(),
    }
}

fn write_package(
    spec: &StockSetSpec,
    plan: &PackagePlan,
    out_dir: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<StandinPackage> {
    let mut installed_kib: u64 = 0;
    let mut dirs = BTreeSet::new();
    let mut md5sums = String::new();
    let mut entries = vec![];
    let mut payload: Vec<&Payload> = plan.payload.iter().collect();
    payload.sort_by(|a, b| a.path().cmp(b.path()));
    for entry in &payload {
        let rel = entry.path().trim_start_matches('/');
        let mut parent = Path::new(rel).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            dirs.insert(p.to_path_buf());
            parent = p.parent();
        }
        match entry {
            Payload::File { contents, mode, .. } => {
                entries.push(PayloadEntry::file(
                    rel,
                    FileData::Bytes(contents.clone()),
                    *mode,
                ));
                installed_kib += (contents.len() as u64).div_ceil(1024);
                md5sums.push_str(&format!(
                    "{}  {rel}\n",
                    hex::encode(md5::Md5::digest(contents))
                ));
            }
            Payload::Symlink { target, .. } => {
                entries.push(PayloadEntry::symlink(rel, target.as_str()));
                installed_kib += 1;
            }
        }
    }
    installed_kib += dirs.len() as u64;

    let mut control: Vec<(String, String)> = vec![
        ("Package".into(), plan.name.clone()),
        ("Version".into(), plan.version.clone()),
        ("Architecture".into(), spec.architecture.clone()),
        ("Maintainer".into(), MAINTAINER.into()),
        ("Installed-Size".into(), installed_kib.max(1).to_string()),
    ];
    control.extend(plan.fields.iter().cloned());
    let mut text = String::new();
    for (k, v) in &control {
        text.push_str(&format!("{k}: {v}\n"));
    }
    let mut control_files = vec![];
    if !md5sums.is_empty() {
        control_files.push(control_file("md5sums", md5sums, 0o644));
    }
    for (name, body) in &plan.scripts {
        control_files.push(control_file(name, body.clone(), 0o755));
    }
    if let Some(t) = &plan.triggers {
        control_files.push(control_file("triggers", t.clone(), 0o644));
    }
    let content = PackageContent {
        control: Paragraph::parse(&text)
            .map_err(|e| anyhow::anyhow!("{}: control: {e}", plan.name))?,
        control_dir_mode: 0o755,
        control_files,
        conffiles: vec![],
        payload: entries,
    };

    let deb = out_dir.join(format!(
        "{}_{}_{}.deb",
        plan.name, plan.version, spec.architecture
    ));
    pack(&content, &deb, spec.source_date_epoch, listener)?;

    let mut files: Vec<String> = plan.payload.iter().map(|p| p.path().to_string()).collect();
    files.sort();
    Ok(StandinPackage {
        role: plan.role,
        name: plan.name.clone(),
        version: plan.version.clone(),
        architecture: spec.architecture.clone(),
        deb,
        control,
        files,
        scripts: plan.scripts.clone(),
        libraries: plan.libraries.clone(),
        in_repository: plan.role.in_repository(),
    })
}

fn control_file(name: &str, text: String, mode: u32) -> ControlFile {
    ControlFile {
        name: name.to_string(),
        data: FileData::Bytes(text.into_bytes()),
        mode,
        mtime: None,
    }
}

/// Stream a package's content into a .deb with the crate's own reproducible writer (every
/// mtime set to `epoch`, members sorted, owner root, directories 0755).
fn pack(
    content: &PackageContent,
    deb: &Path,
    epoch: u64,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    let opts = rocm_pin::deb::BuildOptions {
        compression: rocm_pin::deb::Compression::Xz,
        level: None,
        threads: Some(1),
        source_date_epoch: Some(epoch),
    };
    rocm_pin::deb::build_package(content, deb, &opts, listener)
        .with_context(|| format!("building {}", deb.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
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
