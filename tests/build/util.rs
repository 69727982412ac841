//! Shared by the tests in tests/build/: the stand-in monorepo turned into a real git repository,
//! a fake ROCm install with the /opt/rocm symlink chain, and the rocm-pin binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Fixed dates so commit ids and commit_time are the same on every run.
pub const COMMIT_DATE: &str = "2026-01-15T12:00:00+00:00";
pub const COMMIT_EPOCH: i64 = 1_768_478_400;

pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rocm-systems")
}

pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

pub fn git(dir: &Path, args: &[&str]) -> String {
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
        .env("GIT_AUTHOR_DATE", COMMIT_DATE)
        .env("GIT_COMMITTER_DATE", COMMIT_DATE)
        .output()
        .unwrap();
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

/// `<root>/opt/rocm -> <root>/etc/alternatives/rocm -> <root>/opt/rocm-7.2.4`, with a
/// `.info/version` and a STOCK `include/hsa/hsa.h` that must never be compiled against.
pub fn fake_rocm(root: &Path) -> PathBuf {
    let real = root.join("opt/rocm-7.2.4");
    std::fs::create_dir_all(real.join(".info")).unwrap();
    std::fs::create_dir_all(real.join("include/hsa")).unwrap();
    std::fs::write(real.join(".info/version"), "7.2.4-93\n").unwrap();
    std::fs::write(
        real.join("include/hsa/hsa.h"),
        "/* stock ROCm 7.2.4 hsa.h stand-in: no ordering-edge API */\n#define HSA_STOCK_HEADER 1\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("etc/alternatives")).unwrap();
    std::os::unix::fs::symlink(&real, root.join("etc/alternatives/rocm")).unwrap();
    std::os::unix::fs::symlink(root.join("etc/alternatives/rocm"), root.join("opt/rocm")).unwrap();
    root.join("opt/rocm")
}

pub fn rocm_pin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocm-pin"));
    cmd.env_remove("MAX_JOBS");
    cmd
}

/// `rocm-pin build --source <src> --commit <commit> --rocm-path <rocm> --out <out> <extra…>`
pub fn build_cmd(src: &Path, commit: &str, rocm: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut cmd = rocm_pin();
    cmd.arg("build")
        .arg("--source")
        .arg(src)
        .args(["--commit", commit])
        .arg("--rocm-path")
        .arg(rocm)
        .arg("--out")
        .arg(out)
        .args(extra);
    cmd
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(mut cmd: Command) -> Run {
    let out = cmd.output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    pub fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
    pub fn failed_with(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

pub fn manifest(out: &Path) -> rocm_pin::build::BuildManifest {
    let text = std::fs::read_to_string(out.join("rocm-pin-build.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A readelf/sha256sum/nm judge, independent of our ELF reader.
pub fn tool(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn readelf_soname(path: &Path) -> Option<String> {
    let text = tool("readelf", &["-d", path.to_str().unwrap()]);
    text.lines()
        .find(|l| l.contains("(SONAME)"))
        .and_then(|l| l.split('[').nth(1))
        .map(|s| s.trim_end_matches(']').to_string())
}
