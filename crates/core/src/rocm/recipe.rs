//! The ROCm build recipe: which projects of rocm-systems are built, with which CMake options, and
//! what the tree needs on the build machine (Debian package names). Everything here is ROCm
//! knowledge (docs/design.md §6); the orchestration that runs it ([`crate::ops::build`]'s steps) is
//! generic.

use std::path::{Path, PathBuf};

use crate::toolchain::prereq::{Probe, Requirement};

/// ROCr, built first and installed into a private prefix.
pub(crate) const ROCR_PROJECT: &str = "projects/rocr-runtime";
/// CLR (HIP runtime), built against ROCr's private prefix.
pub(crate) const CLR_PROJECT: &str = "projects/clr";
/// HIP common sources (`VERSION`, headers), passed to CLR as `HIP_COMMON_DIR`.
pub(crate) const HIP_PROJECT: &str = "projects/hip";
/// Paths only CLR's build reads (with a trailing `/`): a patch confined to them leaves ROCr's
/// cached stage valid.
pub(crate) const CLR_ONLY_PATHS: &[&str] = &["projects/clr/", "projects/hip/"];
/// Present only in the real CLR: how the real tree is told from any other.
pub(crate) const REAL_TREE_MARKER: &str = "projects/clr/hipamd";

/// A kind of rocm-systems-shaped source tree: how the build recognises it, how messages name
/// it, and whether it is compiled with ROCm's toolchain. The build knows [`ROCM_SYSTEMS`]; a
/// caller adds other trees through [`crate::ops::build::BuildOptions::trees`] (the test kit's
/// stand-in does). Every kind goes through the same steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeKind {
    /// How messages name it ("the rocm-systems tree").
    pub description: &'static str,
    /// A directory only this kind of tree has; None: any tree with the projects the build needs.
    pub marker: Option<&'static str>,
    /// Compiled with ROCm's LLVM, comgr and hipamd's options, and checked against them. False:
    /// CMake and a C compiler are all it needs.
    pub rocm_toolchain: bool,
}

/// ROCm/rocm-systems itself (has `projects/clr/hipamd`).
pub const ROCM_SYSTEMS: TreeKind = TreeKind {
    description: "the rocm-systems tree",
    marker: Some(REAL_TREE_MARKER),
    rocm_toolchain: true,
};

impl TreeKind {
    pub fn describe(self) -> &'static str {
        self.description
    }

    fn recognises(self, source_dir: &Path) -> bool {
        self.marker.is_none_or(|m| source_dir.join(m).is_dir())
    }
}

/// The first of `trees` that `source_dir` is (tried in order), if any.
pub(crate) fn tree_kind(source_dir: &Path, trees: &[TreeKind]) -> Option<TreeKind> {
    trees.iter().copied().find(|t| t.recognises(source_dir))
}

/// Why `source_dir` is none of `trees`, for a refusal: the markers it lacks.
pub(crate) fn unknown_tree_reason(trees: &[TreeKind]) -> String {
    let markers: Vec<&str> = trees.iter().filter_map(|t| t.marker).collect();
    format!("lacks {}", markers.join(" and "))
}

/// Projects the build needs that are missing from `source_dir`.
pub(crate) fn missing_projects(source_dir: &Path) -> Vec<&'static str> {
    [ROCR_PROJECT, CLR_PROJECT, HIP_PROJECT]
        .into_iter()
        .filter(|p| !source_dir.join(p).is_dir())
        .collect()
}

fn program(what: &str, names: &[&str], package: &str) -> Requirement {
    Requirement::new(
        what,
        Probe::Program(names.iter().map(|s| s.to_string()).collect()),
        package,
    )
}

/// What every build needs: the checkout and the CMake toolchain.
pub(crate) fn base_requirements() -> Vec<Requirement> {
    vec![
        program("git", &["git"], "git"),
        program("CMake", &["cmake"], "cmake"),
        program("build tool", &["ninja", "make"], "ninja-build"),
        program("C compiler", &["cc", "gcc", "clang"], "gcc"),
    ]
}

/// The toolchain the real tree is compiled with: ROCm's (`<rocm>/llvm`, comgr and
/// rocprofiler-register under the ROCm path), or a distribution's (`--llvm-dir`, e.g. Debian's
/// `/usr/lib/llvm-22` with comgr's CMake package in the multiarch directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Toolchain<'a> {
    pub rocm: &'a Path,
    pub llvm_dir: Option<&'a Path>,
    /// CLR's extra configure arguments (a switched-off feature needs no prerequisite).
    pub clr_cmake_args: &'a [String],
    pub rocr_cmake_args: &'a [String],
}

impl<'a> Toolchain<'a> {
    /// ROCm's own toolchain under `rocm`, nothing switched off (what the tests compare with).
    #[cfg(test)]
    pub(crate) fn rocm_only(rocm: &'a Path) -> Self {
        Toolchain {
            rocm,
            llvm_dir: None,
            clr_cmake_args: &[],
            rocr_cmake_args: &[],
        }
    }

    /// The LLVM root: `--llvm-dir`, else `<rocm>/llvm`.
    pub(crate) fn llvm_root(&self) -> PathBuf {
        self.llvm_dir
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.rocm.join("llvm"))
    }

    pub(crate) fn clang(&self) -> PathBuf {
        self.llvm_root().join("bin/clang")
    }

    fn switched_off(args: &[String], option: &str) -> bool {
        args.iter().any(|a| {
            a.strip_prefix("-D")
                .and_then(|d| d.split_once('='))
                .is_some_and(|(k, v)| {
                    k.split(':').next() == Some(option)
                        && matches!(
                            v.to_ascii_uppercase().as_str(),
                            "OFF" | "0" | "FALSE" | "NO"
                        )
                })
        })
    }

    /// False when ROCr is configured with `-DIMAGE_SUPPORT=OFF`.
    pub(crate) fn image_support(&self) -> bool {
        !Self::switched_off(self.rocr_cmake_args, "IMAGE_SUPPORT")
    }

    fn rocprofiler_register(&self) -> bool {
        !Self::switched_off(self.clr_cmake_args, "HIP_ENABLE_ROCPROFILER_REGISTER")
    }

    /// Debian's package names for an `llvm-N` directory (`clang-22 lld-22 …`).
    fn llvm_packages(&self) -> String {
        let n = self
            .llvm_dir
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("llvm-"))
            .filter(|n| n.chars().all(|c| c.is_ascii_digit()));
        match n {
            Some(n) => format!("clang-{n} lld-{n} llvm-{n}-dev libclang-{n}-dev"),
            None => "rocm-llvm".to_string(),
        }
    }
}

/// What building `kind` needs (the base set included), with ROCm's own toolchain.
#[cfg(test)]
pub(crate) fn requirements(kind: TreeKind, rocm: &Path) -> Vec<Requirement> {
    requirements_for(kind, &Toolchain::rocm_only(rocm))
}

/// What building `kind` with `tc` needs (the base set included).
pub(crate) fn requirements_for(kind: TreeKind, tc: &Toolchain) -> Vec<Requirement> {
    let mut reqs = base_requirements();
    if !kind.rocm_toolchain {
        return reqs;
    }
    let rocm = tc.rocm;
    let debian = tc.llvm_dir.is_some();
    reqs.extend([
        program("C++ compiler", &["c++", "g++", "clang++"], "g++"),
        program("pkg-config", &["pkg-config", "pkgconf"], "pkg-config"),
        program("xxd (ROCr embeds its blit kernels)", &["xxd"], "xxd"),
        program("Python 3", &["python3"], "python3"),
        Requirement::new(
            "libelf headers",
            Probe::Header("libelf.h".into()),
            "libelf-dev",
        ),
        Requirement::new(
            "libdw headers",
            Probe::Header("elfutils/libdw.h".into()),
            "libdw-dev",
        ),
        Requirement::new(
            "libdrm headers",
            Probe::Header("libdrm/amdgpu.h".into()),
            "libdrm-dev",
        ),
        Requirement::new(
            "libnuma headers",
            Probe::Header("numa.h".into()),
            "libnuma-dev",
        ),
        Requirement::new(
            "OpenGL headers (rocclr's find_package(OpenGL REQUIRED))",
            Probe::Header("GL/gl.h".into()),
            if debian {
                "libgl-dev"
            } else {
                "libgl1-mesa-dev"
            },
        ),
        Requirement::new(
            "OpenGL library (rocclr's find_package(OpenGL REQUIRED))",
            Probe::Library("libGL.so".into()),
            if debian { "libgl-dev" } else { "libglvnd-dev" },
        ),
        if debian {
            Requirement::new(
                "Python module CppHeaderParser (hipamd's configure stops without it)",
                Probe::PythonModule("CppHeaderParser".into()),
                "python3-cppheaderparser",
            )
            .with_note("Debian trixie and later; elsewhere `pip3 install CppHeaderParser`")
        } else {
            Requirement::new(
                "Python module CppHeaderParser (hipamd's configure stops without it)",
                Probe::PythonModule("CppHeaderParser".into()),
                "python3-pip",
            )
            .with_note("no Debian package ships it: then run `pip3 install CppHeaderParser`")
        },
        Requirement::new(
            "Python module ply",
            Probe::PythonModule("ply".into()),
            "python3-ply",
        ),
        Requirement::new(
            if debian {
                "Clang of --llvm-dir"
            } else {
                "ROCm's LLVM (clang under the ROCm path)"
            },
            Probe::Path(tc.clang()),
            &tc.llvm_packages(),
        )
        .with_note(&if debian {
            format!("expected at {}", tc.clang().display())
        } else {
            format!(
                "from the ROCm apt repository; expected at {}",
                tc.clang().display()
            )
        }),
        Requirement::new(
            "comgr CMake package",
            Probe::AnyPath(super::real_tree::comgr_package_dirs(rocm, tc.llvm_dir)),
            if debian { "libamd-comgr-dev" } else { "comgr" },
        )
        .with_note(if debian {
            "Debian experimental (ROCm 7.2.4): apt-get install -t experimental"
        } else {
            "from the ROCm apt repository"
        }),
    ]);
    if tc.rocprofiler_register() {
        let mut dirs = vec![rocm.join("lib/cmake/rocprofiler-register")];
        if let Some(t) = crate::toolchain::prereq::multiarch() {
            dirs.push(PathBuf::from(format!(
                "/usr/lib/{t}/cmake/rocprofiler-register"
            )));
        }
        reqs.push(
            Requirement::new(
                "rocprofiler-register CMake package (hipamd requires it)",
                Probe::AnyPath(dirs),
                if debian {
                    "librocprofiler-register-dev"
                } else {
                    "rocprofiler-register"
                },
            )
            .with_note(
                "or configure CLR with --clr-cmake-arg=-DHIP_ENABLE_ROCPROFILER_REGISTER=OFF",
            ),
        );
    }
    reqs
}

/// Where CMake finds LLVM and Clang for the real tree. ROCm images ship `$ROCM/llvm` without
/// CMake config files, so when they are absent we write small shims pointing at `$ROCM/llvm/bin`
/// (the known recipes do the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LlvmWiring {
    pub llvm_dir: PathBuf,
    pub clang_dir: PathBuf,
    /// Files to write before configuring (empty when ROCm ships real config files).
    pub shims: Vec<(PathBuf, String)>,
}

/// `llvm` is the LLVM root: `<rocm>/llvm`, or `--llvm-dir` (whose CMake files Debian ships).
pub(crate) fn llvm_wiring(llvm: &Path, shim_root: &Path) -> LlvmWiring {
    let llvm = llvm.to_path_buf();
    let real_llvm = llvm.join("lib/cmake/llvm");
    let real_clang = llvm.join("lib/cmake/clang");
    if real_llvm.join("LLVMConfig.cmake").is_file()
        && real_clang.join("ClangConfig.cmake").is_file()
    {
        return LlvmWiring {
            llvm_dir: real_llvm,
            clang_dir: real_clang,
            shims: vec![],
        };
    }
    let llvm_dir = shim_root.join("lib/cmake/llvm");
    let clang_dir = shim_root.join("lib/cmake/clang");
    let llvm_root = llvm.display().to_string();
    let llvm_config = format!(
        "# Written by rocm-pin: ROCm ships {llvm_root} without CMake config files.\n\
         set(LLVM_FOUND TRUE)\n\
         set(LLVM_INSTALL_PREFIX \"{llvm_root}\")\n\
         set(LLVM_BINARY_DIR \"{llvm_root}\")\n\
         set(LLVM_TOOLS_BINARY_DIR \"{llvm_root}/bin\")\n\
         set(LLVM_INCLUDE_DIRS \"{llvm_root}/include\")\n\
         set(LLVM_LIBRARY_DIRS \"{llvm_root}/lib\")\n\
         set(LLVM_CMAKE_DIR \"${{CMAKE_CURRENT_LIST_DIR}}\")\n"
    );
    let clang_config = format!(
        "# Written by rocm-pin: ROCm ships {llvm_root} without CMake config files.\n\
         set(Clang_FOUND TRUE)\n\
         if(NOT TARGET clang)\n\
         \x20 add_executable(clang IMPORTED GLOBAL)\n\
         \x20 set_target_properties(clang PROPERTIES IMPORTED_LOCATION \"{llvm_root}/bin/clang\")\n\
         endif()\n"
    );
    LlvmWiring {
        shims: vec![
            (llvm_dir.join("LLVMConfig.cmake"), llvm_config),
            (clang_dir.join("ClangConfig.cmake"), clang_config),
        ],
        llvm_dir,
        clang_dir,
    }
}

/// Inputs of the two configure command lines.
#[derive(Debug, Clone)]
pub(crate) struct ConfigureInputs<'a> {
    pub kind: TreeKind,
    pub source_dir: &'a Path,
    pub rocm: &'a Path,
    pub rocr_prefix: &'a Path,
    pub staging: &'a Path,
    pub llvm: Option<&'a LlvmWiring>,
    /// `ROCM_PATCH_VERSION` (e.g. 70204): library file names then match stock ones.
    pub rocm_patch_version: Option<&'a str>,
    /// `--llvm-dir` (None: `<rocm>/llvm`).
    pub llvm_dir: Option<&'a Path>,
    /// `--compiler-launcher`, resolved.
    pub launcher: Option<&'a Path>,
}

/// `CMAKE_PREFIX_PATH`'s tail after the ROCm path: the LLVM directory when given.
fn prefix_path(head: &[&Path], i: &ConfigureInputs) -> String {
    let mut parts: Vec<String> = head.iter().map(|x| p(x)).collect();
    if let Some(l) = i.llvm_dir {
        parts.push(p(l));
    }
    parts.join(";")
}

fn launcher_defines(i: &ConfigureInputs) -> Vec<String> {
    i.launcher
        .map(crate::toolchain::launcher::Launcher::cmake_defines)
        .unwrap_or_default()
}

fn define(name: &str, value: impl AsRef<str>) -> String {
    format!("-D{name}={}", value.as_ref())
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// ROCr: Release, ROCm on CMAKE_PREFIX_PATH, installed into its private prefix.
pub(crate) fn rocr_defines(i: &ConfigureInputs) -> Vec<String> {
    let mut d = vec![
        define("CMAKE_BUILD_TYPE", "Release"),
        // Link once with the final RUNPATH: an install-time rewrite leaves the build tree's
        // path in .dynstr, so the bytes would depend on where the build ran.
        define("CMAKE_BUILD_WITH_INSTALL_RPATH", "ON"),
        define("CMAKE_PREFIX_PATH", prefix_path(&[i.rocm], i)),
        define("CMAKE_INSTALL_PREFIX", p(i.rocr_prefix)),
        define("CMAKE_INSTALL_LIBDIR", "lib"),
    ];
    if let Some(llvm) = i.llvm {
        d.push(define("LLVM_DIR", p(&llvm.llvm_dir)));
        d.push(define("Clang_DIR", p(&llvm.clang_dir)));
    }
    if let Some(v) = i.rocm_patch_version {
        d.push(define("ROCM_PATCH_VERSION", v));
    }
    d.extend(launcher_defines(i));
    d
}

/// CLR: HIP on, OpenCL off, HIP_COMMON_DIR = projects/hip, ROCr's prefix first on
/// CMAKE_PREFIX_PATH, installed into the staging directory.
pub(crate) fn clr_defines(i: &ConfigureInputs) -> Vec<String> {
    let mut d = vec![
        define("CMAKE_BUILD_TYPE", "Release"),
        define("CMAKE_BUILD_WITH_INSTALL_RPATH", "ON"),
        define("CLR_BUILD_HIP", "ON"),
        define("CLR_BUILD_OCL", "OFF"),
        define("HIP_COMMON_DIR", p(&i.source_dir.join(HIP_PROJECT))),
        define("ROCM_PATH", p(i.rocm)),
        define(
            "CMAKE_PREFIX_PATH",
            prefix_path(&[i.rocr_prefix, i.rocm], i),
        ),
        define("CMAKE_INSTALL_PREFIX", p(i.staging)),
        define("CMAKE_INSTALL_LIBDIR", "lib"),
    ];
    if i.kind.rocm_toolchain {
        // hipcc/hipconfig are not built here; without this hipamd asks $ROCM/bin/hipconfig.
        d.push(define("HIP_PLATFORM", "amd"));
        let llvm_root = i
            .llvm_dir
            .map(Path::to_path_buf)
            .unwrap_or_else(|| i.rocm.join("llvm"));
        d.push(define("HIP_LLVM_ROOT", p(&llvm_root)));
    }
    if let Some(llvm) = i.llvm {
        d.push(define("LLVM_DIR", p(&llvm.llvm_dir)));
        d.push(define("Clang_DIR", p(&llvm.clang_dir)));
    }
    if let Some(v) = i.rocm_patch_version {
        d.push(define("ROCM_PATCH_VERSION", v));
    }
    d.extend(launcher_defines(i));
    d
}

/// Directories to put first on PATH while building ROCr: its blit-kernel rules run a bare
/// `clang`, which must be ROCm's (it targets amdgcn), not a system clang.
/// `llvm` is the LLVM root (`<rocm>/llvm` or `--llvm-dir`).
pub(crate) fn rocr_path_prepend(kind: TreeKind, llvm: &Path) -> Vec<PathBuf> {
    if kind.rocm_toolchain {
        vec![llvm.join("bin")]
    } else {
        vec![]
    }
}

/// The ROCm release installed at `rocm` (first line of `.info/version`), if present.
pub(crate) fn rocm_version(rocm: &Path) -> Option<String> {
    let text = std::fs::read_to_string(rocm.join(crate::rocm::VERSION_RELPATH)).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_tree_needs_the_documented_packages() {
        let reqs = requirements(ROCM_SYSTEMS, Path::new("/opt/rocm-7.2.4"));
        let packages: Vec<&str> = reqs.iter().map(|r| r.package.as_str()).collect();
        for p in [
            "cmake",
            "ninja-build",
            "g++",
            "pkg-config",
            "libelf-dev",
            "libdrm-dev",
            "libnuma-dev",
            "libdw-dev",
            "xxd",
            "libgl1-mesa-dev",
            "libglvnd-dev",
            "python3-pip",
            "python3-ply",
            "rocm-llvm",
        ] {
            assert!(packages.contains(&p), "{p} missing from {packages:?}");
        }
        let plain = TreeKind {
            description: "a tree built with CMake and a C compiler only",
            marker: None,
            rocm_toolchain: false,
        };
        let plain = requirements(plain, Path::new("/opt/rocm"));
        assert!(plain.iter().all(|r| r.package != "libelf-dev"));
    }

    #[test]
    fn debian_toolchain_needs_debian_packages_and_switched_off_features_need_nothing() {
        let off = vec!["-DHIP_ENABLE_ROCPROFILER_REGISTER=OFF".to_string()];
        let image_off = vec!["-DIMAGE_SUPPORT:BOOL=off".to_string()];
        let tc = Toolchain {
            rocm: Path::new("/usr"),
            llvm_dir: Some(Path::new("/usr/lib/llvm-22")),
            clr_cmake_args: &off,
            rocr_cmake_args: &image_off,
        };
        assert_eq!(tc.clang(), Path::new("/usr/lib/llvm-22/bin/clang"));
        assert!(!tc.image_support());
        let reqs = requirements_for(ROCM_SYSTEMS, &tc);
        let packages: Vec<&str> = reqs.iter().map(|r| r.package.as_str()).collect();
        for p in [
            "clang-22 lld-22 llvm-22-dev libclang-22-dev",
            "libamd-comgr-dev",
            "python3-cppheaderparser",
            "libgl-dev",
        ] {
            assert!(packages.contains(&p), "{p} missing from {packages:?}");
        }
        assert!(reqs
            .iter()
            .all(|r| !r.what.contains("rocprofiler-register")));
        let rocm = requirements(ROCM_SYSTEMS, Path::new("/opt/rocm-7.2.4"));
        assert!(rocm.iter().any(|r| r.what.contains("rocprofiler-register")));
        assert!(Toolchain::rocm_only(Path::new("/opt/rocm")).image_support());
    }

    #[test]
    fn clr_gets_rocr_prefix_first() {
        let llvm = llvm_wiring(
            Path::new("/nonexistent-rocm/llvm"),
            Path::new("/w/llvm-shim"),
        );
        assert_eq!(llvm.shims.len(), 2);
        let i = ConfigureInputs {
            kind: ROCM_SYSTEMS,
            source_dir: Path::new("/src"),
            rocm: Path::new("/opt/rocm-7.2.4"),
            rocr_prefix: Path::new("/w/rocr-prefix"),
            staging: Path::new("/out"),
            llvm: Some(&llvm),
            rocm_patch_version: None,
            llvm_dir: None,
            launcher: None,
        };
        let d = clr_defines(&i);
        assert!(d.contains(&"-DCMAKE_PREFIX_PATH=/w/rocr-prefix;/opt/rocm-7.2.4".to_string()));
        assert!(d.contains(&"-DHIP_COMMON_DIR=/src/projects/hip".to_string()));
        assert!(d.contains(&"-DCLR_BUILD_OCL=OFF".to_string()));
        assert!(d.contains(&"-DHIP_LLVM_ROOT=/opt/rocm-7.2.4/llvm".to_string()));
        assert!(d.contains(&"-DLLVM_DIR=/w/llvm-shim/lib/cmake/llvm".to_string()));
    }
}
