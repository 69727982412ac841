//! Compiling the stand-in libraries with gcc: the runtime pair, their dependants and the
//! decoys, each with its soname, version node, exports and embedded identity.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::csrc::{self, LibraryBuild};
use super::spec::{host_multiarch, parse_three, real_library_size, StockRole, StockSetSpec};

/// A compiled library and where it goes.
pub(super) struct Compiled {
    pub(super) build: LibraryBuild,
    pub(super) built: PathBuf,
    pub(super) install_dir: String,
    pub(super) ship_dev_link: bool,
}

pub(super) fn compile_all(
    spec: &StockSetSpec,
    work: &Path,
) -> anyhow::Result<Vec<(StockRole, Compiled)>> {
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

pub(super) fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A library of the stock set that links against the runtime pair (or not), like the real
/// librccl, libhipblas and librocm_smi64.
pub(super) struct Dependant {
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

pub(super) const RCCL: Dependant = Dependant {
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

pub(super) const DEPENDANTS: &[Dependant] = &[
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
pub(super) fn debian_hsa_decoy() -> LibraryBuild {
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
pub(super) struct StockCompiler<'a> {
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
            // Deliberately without rocm_pin_core::rocm::BACKPORT_SYMBOL: stock 7.2.4 lacks it.
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
