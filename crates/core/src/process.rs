//! Helpers for the output of the programs rocm-pin runs (apt, dpkg, cmake, git, …).

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
