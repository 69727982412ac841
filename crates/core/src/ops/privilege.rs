//! One "needs root" line before anything is touched (issue 32): run without root, install,
//! rollback, `guard on`/`off` and adopt failed part-way with a raw "Permission denied" or an
//! ldconfig error. On the live system they change packages and files only root may change;
//! on another root (a directory the user may own) the files' own permissions decide.

use crate::exit::usage;
use crate::host::root::Root;

/// Refuse `command` on the live system unless it runs as root; `does` says why it must.
pub(crate) fn needs_root(root: &Root, command: &str, does: &str) -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if !root.is_system() || unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    Err(usage(format!(
        "{command} needs root: it {does}; run it as root (sudo {command}); nothing changed"
    )))
}
