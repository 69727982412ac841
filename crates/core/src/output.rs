//! Writing results to stdout and stderr without panicking.
//!
//! `println!` panics when stdout is a pipe whose reader has gone (`rocm-pin status --json | head`):
//! Rust ignores SIGPIPE, so the write fails with EPIPE and the macro unwraps it. A closed pipe
//! is normal in a shell, so every subcommand prints through `outln!`/`out!`, which return
//! [`StdoutClosed`] instead; `main` then ends the process the way `cat` or `grep` end in the
//! same place: killed by SIGPIPE. That, not exit 0 (ripgrep's choice), because a closed pipe
//! must never turn a failed `verify` into a success under `set -o pipefail`.

use std::fmt;
use std::io::{self, Write};

/// Stdout was closed by its reader (EPIPE). Carried up to `main`, which exits by SIGPIPE.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct StdoutClosed;

/// Write formatted text to stdout. EPIPE becomes [`StdoutClosed`]; other write errors (a full
/// disk behind a redirect) are reported as errors.
pub fn write_stdout(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.flush())
        .map_err(stdout_error)
}

/// Write raw bytes to stdout, with the same error mapping as [`write_stdout`].
pub fn write_stdout_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(stdout_error)
}

fn stdout_error(e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        StdoutClosed.into()
    } else {
        anyhow::Error::new(e).context("cannot write to stdout")
    }
}

/// A line on stderr. Errors are ignored: when stderr itself is gone there is nowhere left to
/// say anything, and a diagnostic must never be the reason the process panics.
pub fn write_stderr(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

/// True when `err` (or any of its causes) is a closed stdout.
pub fn is_stdout_closed(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| cause.is::<StdoutClosed>())
}

/// End the process as a SIGPIPE would have, had Rust not ignored it: the shell sees 128+13.
pub fn exit_by_sigpipe() -> ! {
    // SAFETY: restoring the default disposition and raising a signal at ourselves; nothing
    // runs after the signal is delivered.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Only reached if the signal is blocked by our parent's mask: exit with the same status.
    std::process::exit(128 + libc::SIGPIPE)
}

/// `print!` that returns `Err(StdoutClosed)` from the enclosing function instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))?
    };
}

/// `println!` that returns `Err(StdoutClosed)` from the enclosing function instead of panicking.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `eprintln!` that never panics (see [`write_stderr`]).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

// Escaping untrusted text lives with the formats that read it; reports here use it as before.
pub use pkgformats::text::{escaped, escaped_keeping_lines, shown, Untrusted};
