//! The stand-in rocm-systems tree (tests/fixtures/rocm-systems) embedded in the binary, so
//! `rocm-pin demo` and tests can build it anywhere: [`write_standin_checkout`] writes it out and
//! commits it with a fixed identity and date, so its commit id is the same on every machine.
//! Goes through exactly the same build code path as the real tree (see the fixture's README):
//! the build learns of it only through [`TREE`], which callers add to
//! [`rocm_pin_core::ops::build::BuildOptions::trees`].

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use rocm_pin_core::ops::build::{BuildError, BuildOptions, TreeKind};

/// The stand-in as a kind of tree for the build: any rocm-systems-shaped tree without
/// `projects/clr/hipamd` (so it goes after the real tree in a list), built with CMake and a C
/// compiler only.
pub const TREE: TreeKind = TreeKind {
    description: "the stand-in rocm-systems tree (no projects/clr/hipamd)",
    marker: None,
    rocm_toolchain: false,
};

/// `opts` accepting the stand-in besides the real tree.
pub fn accepting_standin(mut opts: BuildOptions) -> BuildOptions {
    if !opts.trees.contains(&TREE) {
        opts.trees.push(TREE);
    }
    opts
}

/// A refusal of the stand-in checkout, typed like the build's own (exit 2).
fn refused(message: String) -> anyhow::Error {
    BuildError::Refused(message).into()
}

/// Committer/author date of the stand-in commit (fixed: the commit id must not depend on when
/// or where it was made).
pub const STANDIN_COMMIT_DATE: &str = "2026-01-15T12:00:00+00:00";

/// Every file of the fixture, relative path → content.
pub const STANDIN_FILES: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../../../tests/fixtures/rocm-systems/README.md"),
    ),
    (
        "cmake/abi/libamdhip64.abi",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/abi/libamdhip64.abi"),
    ),
    (
        "cmake/abi/libhiprtc-builtins.abi",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/abi/libhiprtc-builtins.abi"),
    ),
    (
        "cmake/abi/libhiprtc.abi",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/abi/libhiprtc.abi"),
    ),
    (
        "cmake/abi/libhsa-runtime64.abi",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/abi/libhsa-runtime64.abi"),
    ),
    (
        "cmake/standin.cmake",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/standin.cmake"),
    ),
    (
        "cmake/standin_abi.cmake",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/standin_abi.cmake"),
    ),
    (
        "cmake/standin_payload.c",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/standin_payload.c"),
    ),
    (
        "cmake/standin_payload_gen.c",
        include_str!("../../../../tests/fixtures/rocm-systems/cmake/standin_payload_gen.c"),
    ),
    (
        "projects/clr/CMakeLists.txt",
        include_str!("../../../../tests/fixtures/rocm-systems/projects/clr/CMakeLists.txt"),
    ),
    (
        "projects/clr/src/hip.c",
        include_str!("../../../../tests/fixtures/rocm-systems/projects/clr/src/hip.c"),
    ),
    (
        "projects/clr/src/hiprtc.c",
        include_str!("../../../../tests/fixtures/rocm-systems/projects/clr/src/hiprtc.c"),
    ),
    (
        "projects/clr/src/hiprtc_builtins.c",
        include_str!("../../../../tests/fixtures/rocm-systems/projects/clr/src/hiprtc_builtins.c"),
    ),
    (
        "projects/hip/VERSION",
        include_str!("../../../../tests/fixtures/rocm-systems/projects/hip/VERSION"),
    ),
    (
        "projects/hip/include/hip/hip_runtime_api.h",
        include_str!(
            "../../../../tests/fixtures/rocm-systems/projects/hip/include/hip/hip_runtime_api.h"
        ),
    ),
    (
        "projects/rocr-runtime/CMakeLists.txt",
        include_str!(
            "../../../../tests/fixtures/rocm-systems/projects/rocr-runtime/CMakeLists.txt"
        ),
    ),
    (
        "projects/rocr-runtime/inc/hsa/hsa.h",
        include_str!("../../../../tests/fixtures/rocm-systems/projects/rocr-runtime/inc/hsa/hsa.h"),
    ),
    (
        "projects/rocr-runtime/src/hsa.c",
        include_str!("../../../../tests/fixtures/rocm-systems/projects/rocr-runtime/src/hsa.c"),
    ),
    (
        "projects/rocr-runtime/src/vendored.c",
        include_str!(
            "../../../../tests/fixtures/rocm-systems/projects/rocr-runtime/src/vendored.c"
        ),
    ),
    (
        "shared/standin_identity.h",
        include_str!("../../../../tests/fixtures/rocm-systems/shared/standin_identity.h"),
    ),
];

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=rocm-pin stand-in",
            "-c",
            "user.email=standin@rocm-pin.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        // The user's and the system's git configuration must not change the commit (hooks,
        // templates, signing): the commit id is part of what the demo shows.
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", STANDIN_COMMIT_DATE)
        .env("GIT_COMMITTER_DATE", STANDIN_COMMIT_DATE)
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("running git {} in {}", args.join(" "), dir.display()))?;
    if !out.status.success() {
        return Err(refused(format!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Write the stand-in tree into `dest` (created; must be absent or empty), make it a git
/// repository with one commit, and return that commit's full id.
pub fn write_standin_checkout(dest: &Path) -> anyhow::Result<String> {
    write_checkout(dest, &[])
}

/// Write the stand-in tree with `overrides` (relative path, text) in place of the embedded files.
pub(crate) fn write_checkout(
    dest: &Path,
    overrides: &[(String, String)],
) -> anyhow::Result<String> {
    if dest.exists()
        && std::fs::read_dir(dest)
            .with_context(|| format!("reading {}", dest.display()))?
            .next()
            .is_some()
    {
        return Err(refused(format!(
            "{} is not empty; the stand-in checkout needs a new directory",
            dest.display()
        )));
    }
    for (rel, text) in STANDIN_FILES {
        let text = overrides
            .iter()
            .find(|(o, _)| o == rel)
            .map_or(*text, |(_, t)| t.as_str());
        let path = dest.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    git(dest, &["init", "--quiet"])?;
    git(dest, &["add", "--all"])?;
    git(
        dest,
        &[
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            "stand-in rocm-systems tree",
        ],
    )?;
    git(dest, &["rev-parse", "HEAD"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeds_exactly_the_fixture() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/rocm-systems");
        let mut on_disk: Vec<String> = walkdir::WalkDir::new(&root)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                e.path()
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = STANDIN_FILES.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(
            embedded, on_disk,
            "update STANDIN_FILES when the fixture changes"
        );
    }

    #[test]
    fn the_commit_is_the_same_every_time() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let ca = write_standin_checkout(&a.path().join("src")).unwrap();
        let cb = write_standin_checkout(&b.path().join("src")).unwrap();
        assert_eq!(ca, cb);
        assert_eq!(ca.len(), 40);
        assert!(write_standin_checkout(&a.path().join("src")).is_err());
        let status = git(&a.path().join("src"), &["status", "--porcelain"]).unwrap();
        assert_eq!(status, "", "the checkout is clean");
        let head = git(&a.path().join("src"), &["rev-parse", "HEAD"]).unwrap();
        assert_eq!(head, ca);
    }
}
