//! What a stand-in set is made of: the roles (packages), their names and versions as ROCm
//! 7.2.4 ships them, and the spec that selects and shapes a set.

use std::collections::BTreeSet;
use std::process::Command;

use anyhow::bail;
use serde::Serialize;

use super::csrc;

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
            rocm_version: rocm_pin_core::rocm::TARGET_ROCM_VERSION.to_string(),
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

pub(super) fn parse_three(v: &str) -> Option<(u32, u32, u32)> {
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
