//! A command measured by `/usr/bin/time`: its peak RSS and CPU time (user + system; CPU, not
//! wall time, because the machine may be busy with other work), and its stderr without the
//! lines `time` adds. Shared by the hostile-input tests (.debs, image archives).

use std::process::{Command, Output};
use std::time::Duration;

/// `/usr/bin/time -f FORMAT` followed by `program`: run it, then read the measure with
/// [`measure`].
pub fn under_time(program: &std::path::Path) -> Command {
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "maxrss=%M cpu=%U+%S"]).arg(program);
    cmd
}

/// The (peak RSS in KiB, CPU time) `/usr/bin/time` printed in `stderr`; panics when it did not.
pub fn measure(stderr: &str) -> (u64, Duration) {
    stderr
        .lines()
        .find_map(|l| {
            let (rss, cpu) = l.strip_prefix("maxrss=")?.split_once(" cpu=")?;
            let (user, system) = cpu.split_once('+')?;
            let secs = user.parse::<f64>().ok()? + system.parse::<f64>().ok()?;
            Some((rss.parse().ok()?, Duration::from_secs_f64(secs)))
        })
        .unwrap_or_else(|| panic!("no maxrss from /usr/bin/time: {stderr}"))
}

/// The command's stderr less `/usr/bin/time`'s lines.
pub fn stderr_without_time(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("maxrss=") && !l.starts_with("Command exited"))
        .collect::<Vec<_>>()
        .join("\n")
}
