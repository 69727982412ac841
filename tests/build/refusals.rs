//! `rocm-pin build` refuses, before anything compiles, a checkout that is not exactly the commit
//! it would record, a dirty checkout, and a machine that lacks prerequisites — all of them named
//! in one error with their Debian packages. Nothing is built in any of these cases.

use std::path::{Path, PathBuf};

use crate::util::*;

fn nothing_built(out: &Path) {
    assert!(
        !out.join("lib").exists(),
        "a refused build must not compile anything"
    );
    assert!(!out.join("rocm-pin-build.json").exists());
}

#[test]
fn the_default_pin_does_not_match_a_test_checkout() {
    let (_tmp, src, commit, rocm, out) = standin_build();
    let mut cmd = rocm_pin();
    cmd.arg("build")
        .arg("--source")
        .arg(&src)
        .arg("--rocm-path")
        .arg(&rocm)
        .arg("--out")
        .arg(&out);
    let r = run(cmd).failed_with(2);
    r.says(&[&format!(
        "is at commit {commit}, not the requested {}",
        rocm_pin_core::rocm::PIN_COMMIT
    )]);
    nothing_built(&out);

    // An abbreviated commit is refused too: the manifest records full ids only.
    let r = run(build_cmd(&src, &commit[..7], &rocm, &out, &[])).failed_with(2);
    r.says(&["not a full commit id"]);
    nothing_built(&out);
}

#[test]
fn a_checkout_at_another_commit_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, first) = standin_repo(tmp.path(), |_| {});
    std::fs::write(src.join("shared/NOTES"), "later\n").unwrap();
    git(&src, &["add", "--all"]);
    git(&src, &["commit", "--quiet", "-m", "later"]);
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("staging");
    let r = run(build_cmd(&src, &first, &rocm, &out, &[])).failed_with(2);
    r.says(&[&format!("not the requested {first}")]);
    nothing_built(&out);
}

#[test]
fn a_modified_file_in_the_build_paths_is_refused() {
    let (_tmp, src, commit, rocm, out) = standin_build();
    let hip = src.join("projects/clr/src/hip.c");
    let text = std::fs::read_to_string(&hip).unwrap();
    std::fs::write(&hip, format!("{text}\n/* local change */\n")).unwrap();
    let r = run(build_cmd(&src, &commit, &rocm, &out, &[])).failed_with(2);
    r.says(&[
        "uncommitted changes or untracked files",
        "M projects/clr/src/hip.c",
    ]);
    nothing_built(&out);
}

#[test]
fn an_untracked_file_in_the_build_paths_is_refused() {
    let (_tmp, src, commit, rocm, out) = standin_build();
    std::fs::create_dir_all(src.join("projects/rocr-runtime/src/extra")).unwrap();
    std::fs::write(
        src.join("projects/rocr-runtime/src/extra/patch.c"),
        "int x;\n",
    )
    .unwrap();
    let r = run(build_cmd(&src, &commit, &rocm, &out, &[])).failed_with(2);
    r.says(&["?? projects/rocr-runtime/src/extra/patch.c"]);
    nothing_built(&out);
}

/// A directory holding links to the given tools only, to run with as PATH.
fn path_with(root: &Path, tools: &[&str]) -> PathBuf {
    let bin = root.join("limited-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for t in tools {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(t))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{t} is needed on this machine for the test"));
        std::os::unix::fs::symlink(found, bin.join(t)).unwrap();
    }
    bin
}

#[test]
fn missing_prerequisites_are_all_reported_with_their_packages() {
    let (tmp, src, commit, rocm, out) = standin_build();
    // git and a C compiler, but neither cmake nor ninja/make.
    let bin = path_with(tmp.path(), &["git", "cc"]);
    let mut cmd = build_cmd(&src, &commit, &rocm, &out, &[]);
    cmd.env("PATH", &bin);
    let r = run(cmd).failed_with(2);
    r.says(&[
        "missing build prerequisites",
        "2 items",
        "program `cmake` not found — Debian package `cmake`",
        "`ninja` or `make`",
        "apt-get install -y cmake ninja-build",
    ]);
    nothing_built(&out);
}

#[test]
fn the_real_tree_needs_its_full_prerequisite_set() {
    // A tree with projects/clr/hipamd is the real rocm-systems: ROCm's LLVM and CMake packages
    // under the ROCm path are checked (the fake ROCm has none of them), in one error.
    let tmp = tempfile::tempdir().unwrap();
    let (src, commit) = standin_repo(tmp.path(), |src| {
        std::fs::create_dir_all(src.join("projects/clr/hipamd")).unwrap();
        std::fs::write(
            src.join("projects/clr/hipamd/CMakeLists.txt"),
            "project(hip)\n",
        )
        .unwrap();
    });
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("staging");
    let r = run(build_cmd(&src, &commit, &rocm, &out, &[])).failed_with(2);
    r.says(&["the rocm-systems tree at", "Debian package `rocm-llvm`"]);
    assert!(
        r.stderr.contains(&format!(
            "{}/llvm/bin/clang",
            tmp.path().join("opt/rocm-7.2.4").display()
        )),
        "the ROCm path is resolved through its symlink chain: {}",
        r.stderr
    );
    r.says(&[
        "Debian package `rocprofiler-register`",
        "Debian package `comgr`",
        "nothing was built",
    ]);
    nothing_built(&out);
}

#[test]
fn a_foreign_non_empty_output_directory_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, commit) = standin_repo(tmp.path(), |_| {});
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("precious");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("thesis.tex"), "do not delete\n").unwrap();
    let r = run(build_cmd(&src, &commit, &rocm, &out, &[])).failed_with(2);
    r.says(&["is not a rocm-pin staging directory"]);
    assert_eq!(
        std::fs::read_to_string(out.join("thesis.tex")).unwrap(),
        "do not delete\n"
    );
}
