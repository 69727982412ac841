//! A closed stdout is normal in a shell pipeline (`rocm-pin status --json | head -1`). Every
//! subcommand that prints must end the way `cat` does there — killed by SIGPIPE, no panic, no
//! backtrace — and never exit 0 in its place (a closed pipe must not turn a failed verify into
//! a success under `set -o pipefail`).

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use crate::util::{bin, must};

/// A pipe as (read end, write end), with the smallest buffer the kernel allows (one page), so
/// any output longer than 4 KiB is still being written when the reader goes away.
fn pipe() -> (File, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both descriptors, which we own from here on.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    assert!(unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 4096) } >= 4096);
    unsafe { (File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Run `args` with stdout into a pipe whose reader takes `read_first` bytes and then closes.
/// Returns the exit status and stderr.
fn run_into_closing_reader(args: &[&str], read_first: usize) -> (ExitStatus, String) {
    let (reader, writer) = pipe();
    // A reader that takes nothing is gone before the first write: every write fails with EPIPE.
    let reader = (read_first > 0).then_some(reader);
    let child = Command::new(bin())
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("rocm-pin runs");
    if let Some(mut reader) = reader {
        let mut head = vec![0u8; read_first];
        reader
            .read_exact(&mut head)
            .expect("the first bytes arrive");
    }
    let out = child.wait_with_output().expect("rocm-pin ends");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_ended_by_sigpipe(args: &[&str], status: ExitStatus, stderr: &str) {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "rocm-pin {args:?} panicked on a closed stdout:\n{stderr}"
    );
    assert_eq!(
        status.signal(),
        Some(libc::SIGPIPE),
        "rocm-pin {args:?} should end by SIGPIPE like cat does, got {status}; stderr:\n{stderr}"
    );
}

fn sample_deb(dir: &Path) -> PathBuf {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample-pkg");
    let deb = dir.join("sample.deb");
    must(
        Command::new(bin())
            .args(["deb", "build", "-q", "-Z", "gzip"])
            .arg(&tree)
            .arg(&deb),
    );
    deb
}

#[test]
fn every_printing_subcommand_ends_by_sigpipe_when_stdout_is_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let deb = sample_deb(tmp.path());
    let deb = deb.to_str().unwrap();
    // A root with an empty dpkg database and no ROCm: status and verify have plenty to say
    // about it (and verify fails).
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("var/lib/dpkg")).unwrap();
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    let root = root.to_str().unwrap();
    let out_deb = tmp.path().join("again.deb");
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample-pkg");
    let cases: Vec<Vec<&str>> = vec![
        vec!["deb", "inspect", deb],
        vec!["deb", "inspect", "--json", deb],
        vec!["status", "--root", root],
        vec!["status", "--json", "--root", root],
        vec!["verify", "--root", root],
        vec!["verify", "--json", "--root", root],
        vec!["completions", "bash"],
        vec!["completions", "zsh"],
        vec![
            "deb",
            "build",
            "-q",
            "--json",
            tree.to_str().unwrap(),
            out_deb.to_str().unwrap(),
        ],
    ];
    for args in &cases {
        let (status, stderr) = run_into_closing_reader(args, 0);
        assert_ended_by_sigpipe(args, status, &stderr);
    }
}

/// The shape of `| head -c 10`: the reader takes a little, then goes away while rocm-pin is
/// still writing (the bash completion script, ~30 KiB, is larger than the 4 KiB pipe).
#[test]
fn a_reader_that_closes_mid_output_ends_the_writer_by_sigpipe() {
    for _ in 0..10 {
        let args = ["completions", "bash"];
        let (status, stderr) = run_into_closing_reader(&args, 10);
        assert_ended_by_sigpipe(&args, status, &stderr);
    }
}

/// `--help` is printed by clap itself: a closed pipe must not panic there either.
#[test]
fn help_on_a_closed_stdout_does_not_panic() {
    for args in [vec!["--help"], vec!["verify", "--help"]] {
        let (status, stderr) = run_into_closing_reader(&args, 0);
        assert!(
            !stderr.contains("panicked"),
            "rocm-pin {args:?} panicked:\n{stderr}"
        );
        assert!(status.code().is_some() || status.signal() == Some(libc::SIGPIPE));
    }
}
