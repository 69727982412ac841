//! A custom RCCL as its own build packages it: a small CMake project with RCCL's names
//! (`rccl`, `rccl-dev`), SONAME (`librccl.so.1`), the stand-in stock librccl's exports in its
//! version node and an identity marker, packaged by `cpack -G DEB`. The input of
//! `rocm-pin package --family rccl --from-deb`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::debs::debs_in;
use crate::must;

/// What the CPack-built custom RCCL looks like.
pub struct CpackRccl {
    /// SONAME major (`librccl.so.<major>`): 1 like the stock, 2 for the uncovered-SONAME case.
    pub soname_major: u32,
    /// `CPACK_DEBIAN_PACKAGE_ARCHITECTURE`; None = CPack's own (dpkg --print-architecture).
    pub architecture: Option<&'static str>,
    /// Embedded in the library as `ROCM_PIN_IDENTITY=<identity>` (the marker the tests read).
    pub identity: &'static str,
}

/// Build the CMake project in `dir` and package it with `cpack -G DEB`: the runtime .deb
/// (`rccl_…`) and the development .deb (`rccl-dev_…`), RCCL's own package names.
pub fn cpack_rccl(dir: &Path, spec: &CpackRccl) -> (PathBuf, PathBuf) {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    // The stand-in stock librccl's exports, in its version node, plus the identity function.
    std::fs::write(
        src.join("rccl.c"),
        format!(
            "#include <stdlib.h>\n\
             __attribute__((used)) static const char identity_string[] = \"ROCM_PIN_IDENTITY={id}\";\n\
             const char *rocm_pin_identity(void) {{ return identity_string + 18; }}\n\
             int ncclGetVersion(int *v) {{ *v = getenv(\"NCCL_DEBUG\") ? 1 : 22707; return 0; }}\n\
             int ncclCommInitRank(void *c, int n, int id, int r) {{ (void)c; (void)n; (void)id; (void)r; return 0; }}\n",
            id = spec.identity
        ),
    )
    .unwrap();
    std::fs::write(
        src.join("rccl.map"),
        "RCCL_2 {\n  global:\n    rocm_pin_identity;\n    ncclGetVersion;\n    ncclCommInitRank;\n  local: *;\n};\n",
    )
    .unwrap();
    std::fs::write(src.join("rccl.h"), "int ncclGetVersion(int *v);\n").unwrap();
    let arch = spec
        .architecture
        .map(|a| format!("set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE {a})\n"))
        .unwrap_or_default();
    std::fs::write(
        src.join("CMakeLists.txt"),
        format!(
            r#"cmake_minimum_required(VERSION 3.16)
project(rccl VERSION 2.27.7 LANGUAGES C)
add_library(rccl SHARED rccl.c)
set_target_properties(rccl PROPERTIES VERSION {major}.0 SOVERSION {major})
target_link_options(rccl PRIVATE "-Wl,--version-script=${{CMAKE_SOURCE_DIR}}/rccl.map")
install(TARGETS rccl LIBRARY DESTINATION lib COMPONENT runtime NAMELINK_COMPONENT devel)
install(FILES rccl.h DESTINATION include/rccl COMPONENT devel)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /opt/rocm)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime devel)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME rccl)
set(CPACK_DEBIAN_DEVEL_PACKAGE_NAME rccl-dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGE_CONTACT "RCCL builder <rccl@example.invalid>")
{arch}include(CPack)
"#,
            major = spec.soname_major
        ),
    )
    .unwrap();
    let build = dir.join("build");
    must(
        Command::new("cmake")
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(&build)
            .arg("-DCMAKE_BUILD_TYPE=Release"),
    );
    must(Command::new("cmake").arg("--build").arg(&build));
    must(
        Command::new("cpack")
            .args(["-G", "DEB"])
            .current_dir(&build),
    );
    let find = |prefix: &str| {
        debs_in(&build)
            .into_iter()
            .find(|d| {
                d.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .unwrap_or_else(|| panic!("cpack made no {prefix}*.deb in {}", build.display()))
    };
    (find("rccl_"), find("rccl-dev_"))
}

/// The custom RCCL as its CPack build makes it (`identity` embedded), turned into the pinned
/// replacement by `rocm-pin package --family rccl --from-deb` (`rocm_pin` is the binary)
/// against the stock installed under `stock_root`, in `work`: the replacement .deb.
pub fn package_cpack_rccl(
    rocm_pin: &Path,
    stock_root: &Path,
    work: &Path,
    identity: &'static str,
) -> PathBuf {
    let (custom, _) = cpack_rccl(
        &work.join("cpack"),
        &CpackRccl {
            soname_major: 1,
            architecture: None,
            identity,
        },
    );
    let out = work.join("out");
    must(
        Command::new(rocm_pin)
            .args(["package", "--family", "rccl", "--from-deb"])
            .arg(&custom)
            .arg("--stock-root")
            .arg(stock_root)
            .args(crate::staging::commit_args())
            .arg("--out")
            .arg(&out)
            .env_remove("SOURCE_DATE_EPOCH"),
    );
    debs_in(&out).remove(0)
}
