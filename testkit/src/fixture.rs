//! The stand-in rocm-systems tree (tests/fixtures/rocm-systems) as a real git repository, with
//! fixed dates so commit ids and commit times are the same on every run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::must;

/// The date of every commit the tests make (unless they say otherwise).
pub const COMMIT_DATE: &str = "2026-01-15T12:00:00+00:00";
/// [`COMMIT_DATE`] as seconds since the epoch.
pub const COMMIT_EPOCH: i64 = 1_768_478_400;

/// tests/fixtures/rocm-systems in this checkout.
pub fn fixture_dir() -> PathBuf {
    crate::workspace_dir().join("tests/fixtures/rocm-systems")
}

/// `cp -a from to`.
pub fn copy_tree(from: &Path, to: &Path) {
    must(Command::new("cp").arg("-a").arg(from).arg(to));
}

/// `git -C dir args…` as the tests' committer, dated [`COMMIT_DATE`]; its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_at(dir, args, COMMIT_DATE)
}

/// `git -C dir args…` as the tests' committer, dated `date`; its trimmed stdout.
pub fn git_at(dir: &Path, args: &[&str], date: &str) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=rocm-pin tests",
            "-c",
            "user.email=tests@rocm-pin.invalid",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Copy the stand-in to `<root>/src`, let `edit` change it, commit it. Returns (dir, commit).
pub fn standin_repo(root: &Path, edit: impl FnOnce(&Path)) -> (PathBuf, String) {
    let src = root.join("src");
    copy_tree(&fixture_dir(), &src);
    edit(&src);
    git(&src, &["init", "--quiet"]);
    git(&src, &["add", "--all"]);
    git(&src, &["commit", "--quiet", "-m", "stand-in rocm-systems"]);
    let commit = git(&src, &["rev-parse", "HEAD"]);
    (src, commit)
}
