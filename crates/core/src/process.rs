//! Helpers for the programs rocm-pin runs (apt, dpkg, cmake, git, …): their output, and the
//! path of rocm-pin's own executable (which the guard's hooks and install's checks need).

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::exit::usage;

/// The last `n` lines of a program's output, for error messages that quote what it said last.
pub fn tail_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// [`tail_lines`] of stdout followed by stderr.
pub fn output_tail(out: &std::process::Output, n: usize) -> String {
    tail_lines(&[out.stdout.as_slice(), &out.stderr].concat(), n)
}

/// This executable's absolute path: /proc/self/exe, else `argv[0]` (absolute, relative or found
/// on PATH) — chroots and minimal containers often have no /proc.
pub fn self_path() -> anyhow::Result<PathBuf> {
    if let Ok(p) = std::env::current_exe() {
        return Ok(p);
    }
    let argv0 = std::env::args_os()
        .next()
        .context("cannot find the rocm-pin executable (no argv[0])")?;
    let argv0 = PathBuf::from(argv0);
    if argv0.components().count() > 1 {
        return std::fs::canonicalize(&argv0)
            .with_context(|| format!("cannot resolve {}", argv0.display()));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(&argv0);
        if candidate.is_file() {
            return std::fs::canonicalize(&candidate)
                .with_context(|| format!("cannot resolve {}", candidate.display()));
        }
    }
    Err(usage(format!(
        "cannot find the rocm-pin executable ({} is not on PATH and /proc is not mounted)",
        argv0.display()
    )))
}

/// How long a program rocm-pin runs over a root may take: `apt-cache policy` takes well under
/// a second (0.5 s of CPU building its cache from full Debian lists), `ldconfig -r` and
/// `dpkg-query` as little; at a load of 20 on 2 CPUs that is still under 10 s. Past this the
/// program is blocked (a FIFO or a device among what it opens), not slow.
pub const OVER_ROOT_TIME_LIMIT: Duration = Duration::from_secs(120);

/// The most output kept from such a program, per stream (apt-cache policy prints a few lines a
/// package).
const OVER_ROOT_OUTPUT_CAP: u64 = 64 << 20;

/// Run `cmd` (a program over a root: apt-cache, dpkg-query, ldconfig) to its end, capturing its
/// output, within `limit`: in its own process group, killed with that group when the limit
/// passes, when a signal ends rocm-pin ([`crate::interrupt`]) or when rocm-pin dies
/// (`PR_SET_PDEATHSIG`). `what` names it in the one-line error.
pub fn run_bounded(cmd: &mut Command, what: &str, limit: Duration) -> anyhow::Result<Output> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    let mut child = cmd.spawn().with_context(|| format!("cannot run {what}"))?;
    let pgid = child.id() as libc::pid_t;
    let _killed_with_us = crate::interrupt::kill_on_signal(pgid);
    let read = |stream: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(s) = stream {
                let _ = s.take(OVER_ROOT_OUTPUT_CAP).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() >= limit {
            // SAFETY: kill(2) on the child's own process group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = child.wait();
            crate::interrupt::wait_if_ending();
            return Err(usage(format!(
                "{what} did not finish within {} s and was killed (a FIFO or device among the \
                 files it reads?)",
                limit.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Killed by the signal watcher: the run is ending with that signal, not this failure.
    crate::interrupt::wait_if_ending();
    // Whatever the program left running in its group (a helper holding the pipes) goes too.
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_past_its_time_limit_is_killed_with_its_group() {
        let start = Instant::now();
        let e = run_bounded(
            Command::new("sh").args(["-c", "sleep 30 & sleep 30"]),
            "sh sleeping",
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10));
        let msg = format!("{e:#}");
        assert!(
            msg.contains("sh sleeping did not finish within 0.3 s"),
            "{msg}"
        );
        assert_eq!(msg.lines().count(), 1, "{msg}");
        let out = run_bounded(
            Command::new("sh").args(["-c", "echo out; echo err >&2"]),
            "sh",
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(out.status.success());
        assert_eq!(
            (out.stdout.as_slice(), out.stderr.as_slice()),
            (&b"out\n"[..], &b"err\n"[..])
        );
    }

    #[test]
    fn keeps_the_last_lines() {
        assert_eq!(tail_lines(b"a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines(b"a\nb", 5), "a\nb");
        assert_eq!(tail_lines(b"", 2), "");
    }
}
