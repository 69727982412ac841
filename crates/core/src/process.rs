//! Helpers for the programs rocm-pin runs (apt, dpkg, cmake, git, …): their output, and the
//! path of rocm-pin's own executable (which the guard's hooks and install's checks need).

use std::path::PathBuf;

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

/// This executable's absolute path: /proc/self/exe, else argv[0] (absolute, relative or found
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines() {
        assert_eq!(tail_lines(b"a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines(b"a\nb", 5), "a\nb");
        assert_eq!(tail_lines(b"", 2), "");
    }
}
