//! After `install` replaced the runtime (a first install or an update): the processes that
//! still map the replaced, now deleted, library files keep running the old code until they
//! restart. `install` names them through the progress listener (the same scan `status` does,
//! [`super::stale_maps::scan`]), bounded, and says so when it could not look.

use super::stale_maps::ProcessScan;
use crate::host::root::Root;
use crate::progress::Listener;

/// At most this many processes are named; the rest are counted.
pub(crate) const NAMED: usize = 12;

/// The lines to say for `scan`: none when no process maps a deleted runtime library and every
/// process was looked at.
pub(crate) fn restart_lines(scan: &ProcessScan) -> Vec<String> {
    let mut procs: Vec<(u32, &str)> = Vec::new();
    for s in &scan.stale {
        if !procs.iter().any(|(p, _)| *p == s.pid) {
            procs.push((s.pid, s.command.as_str()));
        }
    }
    let mut lines = Vec::new();
    if !procs.is_empty() {
        let named: Vec<String> = procs
            .iter()
            .take(NAMED)
            .map(|(pid, cmd)| {
                if cmd.is_empty() {
                    format!("{pid} (name unreadable)")
                } else {
                    format!("{pid} {}", crate::output::escaped(cmd))
                }
            })
            .collect();
        let more = procs.len().saturating_sub(NAMED);
        lines.push(format!(
            "restart to load the patched runtime: {}{}",
            named.join(", "),
            if more > 0 {
                format!(" and {more} more (`rocm-pin status` lists them)")
            } else {
                String::new()
            }
        ));
    }
    if let Some(why) = &scan.unseen {
        lines.push(format!(
            "could not look for processes still running the replaced runtime ({why}); restart the programs that use ROCm to load the patched one"
        ));
    }
    lines
}

/// Look at the root's processes and say which to restart.
pub(crate) fn tell(root: &Root, listener: &dyn Listener) {
    for line in restart_lines(&super::stale_maps::scan(root)) {
        listener.warn(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::stale_maps::StaleMapping;

    fn mapping(pid: u32, command: &str, path: &str) -> StaleMapping {
        StaleMapping {
            pid,
            command: command.into(),
            path: path.into(),
        }
    }

    #[test]
    fn names_each_process_once_bounded_and_counts_the_rest() {
        let mut stale = vec![
            mapping(7, "trainer", "/usr/lib/x/libamdhip64.so.7"),
            mapping(7, "trainer", "/usr/lib/x/libhsa-runtime64.so.1"),
        ];
        stale.extend(
            (100..100 + NAMED as u32 + 3).map(|p| mapping(p, "py", "/l/libhsa-runtime64.so.1")),
        );
        let lines = restart_lines(&ProcessScan {
            stale,
            unseen: None,
        });
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("restart to load the patched runtime: 7 trainer, 100 py"));
        assert_eq!(lines[0].matches(", ").count(), NAMED - 1, "{}", lines[0]);
        assert!(lines[0].contains(" and 4 more"), "{}", lines[0]);
    }

    #[test]
    fn says_when_it_could_not_look_and_nothing_when_none_maps_it() {
        assert!(restart_lines(&ProcessScan::default()).is_empty());
        let lines = restart_lines(&ProcessScan {
            stale: Vec::new(),
            unseen: Some("no procfs".into()),
        });
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("could not look for processes") && lines[0].contains("no procfs")
        );
    }
}
