//! `rocm-pin build --patch/--patches` and the ROCr stage cache, on the stand-in tree (cmake and a
//! C compiler only, no root): the series is applied to the tool's own checkout and recorded; the
//! user's checkout stays untouched and its dirty-tree refusal stays; a patch that does not apply
//! names itself and the file; a CLR failure does not cost a ROCr rebuild.

use rocm_pin_testkit::assert_says;
use std::path::Path;

use crate::util::{build_cmd, git, manifest, run, standin_build};
use sha2::{Digest, Sha256};

/// A patch of the stand-in's HIP identity ("PATCHED" → "SERIES"), made with git diff.
fn identity_patch(src: &Path, dest: &Path) {
    let hip = src.join("projects/clr/src/hip.c");
    let original = std::fs::read_to_string(&hip).unwrap();
    std::fs::write(
        &hip,
        original.replace(
            "STANDIN_IDENTITY(\"hip\", \"PATCHED\")",
            "STANDIN_IDENTITY(\"hip\", \"SERIES\")",
        ),
    )
    .unwrap();
    let diff = git(src, &["diff"]);
    assert_says(&diff, &["SERIES"]);
    std::fs::write(dest, format!("{diff}\n")).unwrap();
    git(src, &["checkout", "--", "."]);
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_patch_series_is_applied_to_our_checkout_and_recorded() {
    let (tmp, src, commit, rocm, out) = standin_build();
    let patches = tmp.path().join("patches");
    std::fs::create_dir_all(&patches).unwrap();
    identity_patch(&src, &patches.join("0001-identity.patch"));
    let series = ["--patches", patches.to_str().unwrap()];

    let dry = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &[&series[..], &["--dry-run"]].concat(),
    ))
    .ok();
    assert_says(
        &dry.stdout,
        &[
            "git clone --quiet --shared --no-checkout",
            "apply --whitespace=nowarn",
        ],
    );
    assert!(!out.exists(), "a dry run writes nothing");

    let built = run(build_cmd(&src, &commit, &rocm, &out, &series)).ok();
    assert_says(&built.stdout, &["patch 0001-identity.patch"]);
    let m = manifest(&out);
    let bytes = std::fs::read(patches.join("0001-identity.patch")).unwrap();
    assert_eq!(m.patches.len(), 1);
    assert_eq!(m.patches[0].name, "0001-identity.patch");
    assert_eq!(m.patches[0].sha256, hex::encode(Sha256::digest(&bytes)));
    let hip = m
        .libraries
        .iter()
        .find(|l| l.path.contains("libamdhip64"))
        .unwrap();
    let lib = std::fs::read(out.join(&hip.path)).unwrap();
    assert!(contains(&lib, "SERIES"), "the patch was not compiled in");
    assert!(
        !contains(&lib, "hip-PATCHED"),
        "the unpatched source was compiled"
    );
    // The user's checkout is only read.
    assert_eq!(git(&src, &["status", "--porcelain"]), "");

    // Same series again: a cache hit. Another series: a miss naming it.
    let again = run(build_cmd(&src, &commit, &rocm, &out, &series)).ok();
    again.says(&["cache hit"]);
    let none = run(build_cmd(&src, &commit, &rocm, &out, &[])).ok();
    none.says(&["patch series"]);
    assert!(manifest(&out).patches.is_empty());

    // The dirty-tree refusal of the user's checkout stays with a series.
    std::fs::write(src.join("projects/clr/src/hip.c"), "dirty\n").unwrap();
    let dirty = run(build_cmd(&src, &commit, &rocm, &out, &series)).failed_with(2);
    dirty.says(&["uncommitted changes"]);
}

#[test]
fn a_patch_that_does_not_apply_names_the_patch_and_the_file() {
    let (tmp, src, commit, rocm, out) = standin_build();
    let good = tmp.path().join("0001-identity.patch");
    identity_patch(&src, &good);
    let bad = tmp.path().join("0002-stale.patch");
    std::fs::write(
        &bad,
        "--- a/projects/rocr-runtime/CMakeLists.txt\n+++ b/projects/rocr-runtime/CMakeLists.txt\n\
         @@ -1,1 +1,1 @@\n-this line is not in the tree\n+replacement\n",
    )
    .unwrap();
    let r = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &[
            "--patch",
            good.to_str().unwrap(),
            "--patch",
            bad.to_str().unwrap(),
        ],
    ))
    .failed_with(2);
    for want in [
        "patch 2 of 2 (0002-stale.patch",
        "does not apply",
        "projects/rocr-runtime/CMakeLists.txt",
        "nothing was built",
    ] {
        assert!(r.stderr.contains(want), "missing {want:?}: {}", r.stderr);
    }
    assert!(!out.join("logs/configure-rocr.log").exists());

    let missing = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--patch", tmp.path().join("nope.patch").to_str().unwrap()],
    ))
    .failed_with(2);
    missing.says(&["nope.patch"]);
}

#[test]
fn a_failed_clr_does_not_rebuild_rocr() {
    let (_tmp, src, commit, rocm, out) = standin_build();
    let failed = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--clr-cmake-arg=-DCMAKE_C_COMPILER=/nonexistent/cc"],
    ))
    .failed_with(2);
    failed.says(&["build-rocr: done", "configure-clr: FAILED"]);

    let fixed = run(build_cmd(&src, &commit, &rocm, &out, &[])).ok();
    fixed.says(&["ROCr's stage is cached"]);
    assert!(!fixed.stderr.contains("build-rocr"), "{}", fixed.stderr);
    assert!(out.join("lib/libhsa-runtime64.so.1").exists());

    // A change to ROCr's own inputs rebuilds it.
    let rocr_changed = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--rocr-cmake-arg=-DROCM_PIN_TEST_UNUSED=1"],
    ))
    .ok();
    rocr_changed.says(&["build-rocr: done"]);
}

#[test]
fn no_backport_check_is_recorded_in_the_manifest() {
    let (_tmp, src, commit, rocm, out) = standin_build();
    run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--no-backport-check"],
    ))
    .ok();
    assert!(manifest(&out).backport_check_skipped);
    run(build_cmd(&src, &commit, &rocm, &out, &[])).ok();
    assert!(!manifest(&out).backport_check_skipped);
}

#[test]
fn toolchain_and_launcher_options_are_checked_and_shown() {
    let (tmp, src, commit, rocm, out) = standin_build();
    let missing = tmp.path().join("no-such-llvm");
    let r = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--llvm-dir", missing.to_str().unwrap(), "--dry-run"],
    ))
    .failed_with(2);
    r.says(&[&format!("--llvm-dir {}", missing.display())]);
    let r = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--compiler-launcher", "distcc", "--dry-run"],
    ))
    .failed_with(2);
    r.says(&["choose ccache or sccache"]);

    let llvm = tmp.path().join("llvm-22");
    std::fs::create_dir_all(llvm.join("bin")).unwrap();
    let dry = run(build_cmd(
        &src,
        &commit,
        &rocm,
        &out,
        &["--llvm-dir", llvm.to_str().unwrap(), "--dry-run"],
    ))
    .ok();
    assert_says(
        &dry.stdout,
        &[&format!(
            "# toolchain: LLVM/Clang from --llvm-dir {}",
            llvm.display()
        )],
    );
    assert!(!out.exists(), "a dry run writes nothing");
}
