//! Shared by the tests in tests/build/: the stand-in monorepo turned into a real git repository,
//! a fake ROCm install with the /opt/rocm symlink chain, and the rocm-pin binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use rocm_pin_kit::sandbox::Sandbox;

pub use rocm_pin_testkit::debs::{contents, deb_of, debs_in, field};
pub use rocm_pin_testkit::fixture::{git, standin_repo, COMMIT_EPOCH};
pub use rocm_pin_testkit::staging::{default_spec, stock_set};
pub use rocm_pin_testkit::{labeled, must, must_stdout};

/// The rocm-pin binary under test.
pub fn bin() -> PathBuf {
    rocm_pin_testkit::rocm_pin_bin!()
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

/// The setup most build tests share, under one temporary directory: (the directory, the
/// stand-in checkout, its commit, a fake ROCm beside it, the staging path).
pub fn standin_build() -> (tempfile::TempDir, PathBuf, String, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (src, commit) = standin_repo(tmp.path(), |_| {});
    let rocm = fake_rocm(tmp.path());
    let out = tmp.path().join("staging");
    (tmp, src, commit, rocm, out)
}

pub fn rocm_pin() -> Command {
    let mut cmd = Command::new(bin());
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
    /// Assert that stderr holds every one of `phrases` (the message shows all of stderr).
    #[track_caller]
    pub fn says(&self, phrases: &[&str]) -> &Run {
        for p in phrases {
            assert!(
                self.stderr.contains(p),
                "stderr lacks {p:?}:\n{}",
                self.stderr
            );
        }
        self
    }
}

pub fn manifest(out: &Path) -> rocm_pin_core::ops::build::BuildManifest {
    let text = std::fs::read_to_string(out.join("rocm-pin-build.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A readelf/sha256sum/nm judge, independent of our ELF reader.
pub fn tool(program: &str, args: &[&str]) -> String {
    must_stdout(Command::new(program).args(args))
}

pub fn readelf_soname(path: &Path) -> Option<String> {
    let text = tool("readelf", &["-d", path.to_str().unwrap()]);
    text.lines()
        .find(|l| l.contains("(SONAME)"))
        .and_then(|l| l.split('[').nth(1))
        .map(|s| s.trim_end_matches(']').to_string())
}

/// Shell runs in a chroot, each timed and logged on stderr under a module's name.
pub struct ChrootLog(pub &'static str);

impl ChrootLog {
    pub fn sh(&self, sb: &Sandbox, script: &str) -> Output {
        let t = Instant::now();
        let out = sb.sh(script).expect("run in the chroot");
        eprintln!(
            "{}: [{:.1}s, exit {:?}] {}",
            self.0,
            t.elapsed().as_secs_f64(),
            out.status.code(),
            script.lines().next().unwrap_or("")
        );
        out
    }

    /// [`Self::sh`] that must succeed; its stdout.
    #[track_caller]
    pub fn sh_ok(&self, sb: &Sandbox, script: &str) -> String {
        let out = self.sh(sb, script);
        assert!(out.status.success(), "{script}\n{}", labeled(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}
