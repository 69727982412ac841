//! Checks of the real rocm-systems tree against the toolchain, run on the (patched) checkout
//! after the prerequisite list and before anything compiles — the failures that otherwise show
//! up minutes into a build: CLR's `find_package(amd_comgr <version>)` against the comgr found
//! (decided by comgr's own CMake version file, evaluated with `cmake -P`), and the offload
//! targets ROCr's hard-coded lists assemble for against what the compiler supports. ROCm recipe
//! knowledge, like [`super::recipe`].

mod error;

pub use error::RealTreeError;
pub(crate) use error::{TargetGap, COMGR_REQUEST_FILE};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::exit::usage;

/// ROCr's hard-coded offload target lists (file, variable).
pub(crate) const TARGET_LISTS: &[(&str, &str)] = &[
    (
        "projects/rocr-runtime/runtime/hsa-runtime/core/runtime/trap_handler/CMakeLists.txt",
        "TARGET_DEVS",
    ),
    (
        "projects/rocr-runtime/runtime/hsa-runtime/core/runtime/blit_shaders/CMakeLists.txt",
        "TARGET_DEVS",
    ),
    (
        "projects/rocr-runtime/runtime/hsa-runtime/image/blit_src/CMakeLists.txt",
        "TARGET_DEVICES",
    ),
];
/// The list only built with image support (`-DIMAGE_SUPPORT=OFF` skips it).
const IMAGE_LIST: &str = "projects/rocr-runtime/runtime/hsa-runtime/image/blit_src/CMakeLists.txt";

fn refused(message: impl Into<String>) -> anyhow::Error {
    RealTreeError::Refused(message.into()).into()
}

/// `find_package(amd_comgr 2.8 …)` → `("2.8", line)`; None when the tree asks no version.
pub(crate) fn comgr_request(text: &str) -> Option<(String, usize)> {
    for (n, line) in text.lines().enumerate() {
        let compact: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
        let Some(rest) = compact
            .strip_prefix("find_package(amd_comgr ")
            .or_else(|| compact.strip_prefix("find_package( amd_comgr "))
        else {
            continue;
        };
        let word = rest.split([' ', ')']).next().unwrap_or("");
        if word.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            return Some((word.to_string(), n + 1));
        }
        return None;
    }
    None
}

/// Where comgr's CMake package may be: under the ROCm path, Debian's multiarch directory, the
/// LLVM directory. The first holding a version file wins (CMake's own search order differs in
/// detail; the build log shows what CMake took).
pub(crate) fn comgr_package_dirs(rocm: &Path, llvm_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![rocm.join("lib/cmake/amd_comgr")];
    if let Some(t) = crate::toolchain::prereq::multiarch() {
        dirs.push(rocm.join(format!("lib/{t}/cmake/amd_comgr")));
        dirs.push(PathBuf::from(format!("/usr/lib/{t}/cmake/amd_comgr")));
    }
    if let Some(l) = llvm_dir {
        dirs.push(l.join("lib/cmake/amd_comgr"));
    }
    dirs
}

/// The first comgr package found and its version (`set(PACKAGE_VERSION "3.0.0")`), for the
/// manifest's tool list.
pub(crate) fn comgr_version(dirs: &[PathBuf]) -> Option<(PathBuf, String)> {
    dirs.iter().find_map(|d| {
        let text = std::fs::read_to_string(version_file(d)?).ok()?;
        let version = text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("set(PACKAGE_VERSION ")?;
            Some(rest.trim_end_matches(')').trim_matches('"').to_string())
        })?;
        Some((d.clone(), version))
    })
}

fn version_file(dir: &Path) -> Option<PathBuf> {
    [
        "amd_comgr-config-version.cmake",
        "amd_comgrConfigVersion.cmake",
    ]
    .iter()
    .map(|n| dir.join(n))
    .find(|p| p.is_file())
}

/// What comgr's version file says about a request: (its version, compatible).
fn evaluate_version_file(
    file: &Path,
    requested: &str,
    scratch: &Path,
) -> anyhow::Result<(String, bool)> {
    let parts: Vec<&str> = requested.split('.').collect();
    let part = |i: usize| parts.get(i).copied().unwrap_or("0");
    let script = format!(
        "set(PACKAGE_FIND_NAME amd_comgr)\n\
         set(PACKAGE_FIND_VERSION \"{requested}\")\n\
         set(PACKAGE_FIND_VERSION_MAJOR {})\nset(PACKAGE_FIND_VERSION_MINOR {})\n\
         set(PACKAGE_FIND_VERSION_PATCH {})\nset(PACKAGE_FIND_VERSION_TWEAK 0)\n\
         set(PACKAGE_FIND_VERSION_COUNT {})\n\
         include(\"{}\")\n\
         message(\"rocm-pin:${{PACKAGE_VERSION}}:${{PACKAGE_VERSION_COMPATIBLE}}:${{PACKAGE_VERSION_UNSUITABLE}}\")\n",
        part(0),
        part(1),
        part(2),
        parts.len(),
        file.display()
    );
    std::fs::create_dir_all(scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let path = scratch.join("comgr-version-check.cmake");
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    let out = Command::new("cmake")
        .arg("-P")
        .arg(&path)
        .stdin(Stdio::null())
        .output()
        .context("running cmake -P for the comgr version check")?;
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("rocm-pin:"))
        .ok_or_else(|| {
            refused(format!(
                "cmake -P {} printed no result: {text}",
                path.display()
            ))
        })?;
    let mut f = line.split(':');
    let version = f.next().unwrap_or("").to_string();
    let compatible = matches!(f.next(), Some("TRUE" | "1" | "ON" | "YES"));
    let unsuitable = matches!(f.next(), Some("TRUE" | "1" | "ON" | "YES"));
    Ok((version, compatible && !unsuitable))
}

/// comgr found vs what the tree asks. Ok(Some(version)) when a comgr package was found.
pub(crate) fn check_comgr(
    tree: &Path,
    dirs: &[PathBuf],
    scratch: &Path,
) -> anyhow::Result<Option<String>> {
    let Some((dir, file)) = dirs
        .iter()
        .find_map(|d| version_file(d).map(|f| (d.clone(), f)))
    else {
        return Ok(None);
    };
    let request_file = tree.join(COMGR_REQUEST_FILE);
    let text = std::fs::read_to_string(&request_file).unwrap_or_default();
    let Some((requested, line)) = comgr_request(&text) else {
        let (version, _) = evaluate_version_file(&file, "0", scratch)?;
        return Ok(Some(version));
    };
    let (found, compatible) = evaluate_version_file(&file, &requested, scratch)?;
    if !compatible {
        return Err(RealTreeError::ComgrIncompatible {
            found,
            found_in: dir,
            requested,
            request_line: line,
            version_file: file,
        }
        .into());
    }
    Ok(Some(found))
}

/// The `gfx…` names in `set(<var> …)` of a CMake file.
pub(crate) fn target_list(text: &str, var: &str) -> Vec<String> {
    let mut out = vec![];
    let mut inside = false;
    for line in text.lines() {
        let t = line.trim_start();
        if !inside {
            let compact = t.replace(' ', "");
            if compact.starts_with(&format!("set({var}")) {
                inside = true;
            } else {
                continue;
            }
        }
        for word in line.split(|c: char| !c.is_ascii_alphanumeric()) {
            if word.starts_with("gfx") && word.len() > 3 && !out.iter().any(|w| w == word) {
                out.push(word.to_string());
            }
        }
        if line.contains(')') {
            break;
        }
    }
    out
}

/// The AMDGPU processors `clang` accepts.
pub(crate) fn supported_targets(clang: &Path) -> anyhow::Result<Vec<String>> {
    let out = Command::new(clang)
        .args(["--target=amdgcn-amd-amdhsa", "--print-supported-cpus"])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {} --print-supported-cpus", clang.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(text
        .split_whitespace()
        .filter(|w| w.starts_with("gfx"))
        .map(str::to_string)
        .collect())
}

/// Every target of ROCr's hard-coded lists must be supported by `clang`; the error names the
/// targets, the list file and the variable.
pub(crate) fn check_offload_targets(
    tree: &Path,
    clang: &Path,
    image_support: bool,
) -> anyhow::Result<()> {
    let supported = supported_targets(clang)?;
    if supported.is_empty() {
        return Err(usage(format!(
            "{} lists no AMDGPU processors (--target=amdgcn-amd-amdhsa --print-supported-cpus): \
             it cannot build ROCr's device code; use an LLVM with the AMDGPU backend",
            clang.display()
        )));
    }
    let mut gaps = vec![];
    for (file, var) in TARGET_LISTS {
        if !image_support && *file == IMAGE_LIST {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(tree.join(file)) else {
            continue;
        };
        let missing: Vec<String> = target_list(&text, var)
            .into_iter()
            .filter(|t| !supported.contains(t))
            .collect();
        if !missing.is_empty() {
            gaps.push(TargetGap {
                file,
                var,
                targets: missing,
            });
        }
    }
    if gaps.is_empty() {
        return Ok(());
    }
    Err(RealTreeError::UnsupportedOffloadTargets {
        clang: clang.to_path_buf(),
        gaps,
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_comgr_request_and_target_lists() {
        let cmake = "# x\nfind_package(amd_comgr 2.8 REQUIRED CONFIG\n  PATHS /opt/rocm)\n";
        assert_eq!(comgr_request(cmake), Some(("2.8".into(), 2)));
        assert_eq!(
            comgr_request("find_package(amd_comgr REQUIRED CONFIG)\n"),
            None
        );
        let list =
            "set (TARGET_DEVICES \"gfx700;gfx701\"\n   \"gfx950\"\n   \"gfx1201\")\nset(X gfx9)\n";
        assert_eq!(
            target_list(list, "TARGET_DEVICES"),
            ["gfx700", "gfx701", "gfx950", "gfx1201"]
        );
        assert!(target_list(list, "TARGET_DEVS").is_empty());
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_comgr_the_tree_does_not_accept_is_refused_with_both_versions() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("tree");
        let comgr = d.path().join("comgr");
        write(
            &tree.join(COMGR_REQUEST_FILE),
            "# CLR\nfind_package(amd_comgr 2.8 REQUIRED CONFIG)\n",
        );
        // The shape of comgr's own version file: same major version only.
        write(
            &comgr.join("amd_comgr-config-version.cmake"),
            "set(PACKAGE_VERSION \"3.0.0\")\n\
             if(PACKAGE_FIND_VERSION_MAJOR STREQUAL \"3\")\n\
               set(PACKAGE_VERSION_COMPATIBLE TRUE)\n\
             else()\n  set(PACKAGE_VERSION_COMPATIBLE FALSE)\nendif()\n",
        );
        let scratch = d.path().join("checks");
        let err = check_comgr(&tree, std::slice::from_ref(&comgr), &scratch).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<RealTreeError>(),
                Some(RealTreeError::ComgrIncompatible { found, found_in, requested, request_line: 2, .. })
                    if found == "3.0.0" && *found_in == comgr && requested == "2.8"),
            "{err:?}"
        );
        assert_eq!(crate::error::exit_code_for(&err), 2);
        write(
            &tree.join(COMGR_REQUEST_FILE),
            "find_package(amd_comgr 3.0 REQUIRED CONFIG)\n",
        );
        assert_eq!(
            check_comgr(&tree, &[comgr], &scratch).unwrap().as_deref(),
            Some("3.0.0")
        );
    }

    #[test]
    fn offload_targets_the_compiler_lacks_are_refused_per_list() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let clang = d.path().join("clang");
        write(
            &clang,
            "#!/bin/sh\necho 'Available CPUs: gfx900 gfx906 gfx950'\n",
        );
        std::fs::set_permissions(&clang, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A thread of this test binary forking while the script was open for writing keeps it
        // busy (ETXTBSY) until that child execs; wait until it can run.
        for _ in 0..100 {
            match Command::new(&clang).output() {
                Err(e) if e.raw_os_error() == Some(26) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => break,
            }
        }
        let tree = d.path().join("tree");
        let (trap, var) = TARGET_LISTS[0];
        write(
            &tree.join(trap),
            "set(TARGET_DEVS \"gfx900;gfx1201;gfx1250\")\n",
        );
        write(&tree.join(IMAGE_LIST), "set(TARGET_DEVICES \"gfx1300\")\n");
        let err = check_offload_targets(&tree, &clang, false).unwrap_err();
        match err.downcast_ref::<RealTreeError>() {
            Some(RealTreeError::UnsupportedOffloadTargets { clang: c, gaps }) => {
                assert_eq!(c, &clang);
                assert_eq!(
                    gaps,
                    &[TargetGap {
                        file: trap,
                        var,
                        targets: vec!["gfx1201".into(), "gfx1250".into()]
                    }]
                );
            }
            other => panic!("not UnsupportedOffloadTargets: {other:?} ({err})"),
        }
        assert!(
            err.to_string()
                .contains(&format!("\n  - gfx1201, gfx1250 in {trap} ({var})\n")),
            "{err}"
        );
        // With image support the image list counts too.
        let err = check_offload_targets(&tree, &clang, true).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<RealTreeError>(),
                Some(RealTreeError::UnsupportedOffloadTargets { gaps, .. }) if gaps.len() == 2),
            "{err:?}"
        );
    }
}
