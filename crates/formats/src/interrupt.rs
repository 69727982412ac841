//! What a run leaves behind when a signal ends it: nothing. Every catchable signal whose
//! default action ends the process is caught (unless the process was started with it ignored)
//! while the process holds a temporary directory or runs a program over a root; the watcher thread
//! then kills those programs (their whole process group), removes the directories, and ends the
//! process with 128+signal, the status a shell reports for a process a signal ended.
//!
//! The signals: HUP, INT, QUIT, TERM, USR1, USR2, ALRM, VTALRM, PROF, XCPU, XFSZ, IO (POLL),
//! PWR and STKFLT end a process by default (QUIT, XCPU and XFSZ with a core) and can be caught.
//! Not among them: KILL and STOP (cannot be caught); SEGV, BUS, ILL, FPE, TRAP, ABRT and SYS
//! (a fault in this process: its state cannot be trusted to clean up); PIPE (Rust's runtime
//! ignores it, a closed stdout is an EPIPE error that `main` turns into the SIGPIPE status);
//! CHLD, URG, WINCH, CONT (ignored or not ending by default).
//!
//! The image unpacker has its own guard ([`crate::image::limits::InterruptGuard`]: the main
//! thread writes into the unpacked root, so it stops first); while one lives, the watcher here
//! kills and removes what is registered with it but leaves ending the process to that guard.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use libc::{
    SIGALRM, SIGHUP, SIGINT, SIGIO, SIGPROF, SIGPWR, SIGQUIT, SIGSTKFLT, SIGTERM, SIGUSR1, SIGUSR2,
    SIGVTALRM, SIGXCPU, SIGXFSZ,
};

/// Every catchable signal whose default action ends the process (see the module comment).
pub const TERMINATING_SIGNALS: [i32; 14] = [
    SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU,
    SIGXFSZ, SIGIO, SIGPWR, SIGSTKFLT,
];

/// [`TERMINATING_SIGNALS`] less those this process was started with ignored (`nohup` ignores
/// HUP, a shell without job control INT and QUIT for a background job): an ignored signal
/// stays ignored, as the one who started the process asked. Read once, before any handler is set.
pub fn caught_signals() -> &'static [i32] {
    static CAUGHT: OnceLock<Vec<i32>> = OnceLock::new();
    CAUGHT.get_or_init(|| {
        TERMINATING_SIGNALS
            .into_iter()
            .filter(|&sig| {
                // SAFETY: sigaction with a null new action only reads the current one into
                // a zeroed struct we own.
                let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                let read = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
                read != 0 || old.sa_sigaction != libc::SIG_IGN
            })
            .collect()
    })
}

#[derive(Default)]
struct Registry {
    next: u64,
    dirs: Vec<(u64, PathBuf)>,
    groups: Vec<(u64, libc::pid_t)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    dirs: Vec::new(),
    groups: Vec::new(),
});
/// How many image guards live: while one does, it ends the process.
static DEFERRING: AtomicUsize = AtomicUsize::new(0);
/// The signal that is ending the run, 0 before one arrives.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signal ending the run, if one arrived.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Called by the thread whose program the watcher just killed: a signal is ending the run, so
/// wait here for the watcher (or the image guard) to end the process, instead of carrying on
/// to another exit status with the killed program's failure.
pub fn wait_if_ending() {
    if received().is_some() {
        loop {
            std::thread::park();
        }
    }
}

/// A registration; dropping it takes the directory or process group off the list (a normal
/// end removes the directory and reaps the program itself).
#[must_use = "the registration ends when this is dropped"]
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        let mut r = registry();
        r.dirs.retain(|(id, _)| *id != self.0);
        r.groups.retain(|(id, _)| *id != self.0);
    }
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove `dir` (a temporary directory or file of this run) should a signal end the run.
pub fn remove_on_signal(dir: &Path) -> Registered {
    watch();
    let mut r = registry();
    r.next += 1;
    let id = r.next;
    r.dirs.push((id, dir.to_path_buf()));
    Registered(id)
}

/// Kill the process group `pgid` (a program this process runs) should a signal end the run.
pub fn kill_on_signal(pgid: libc::pid_t) -> Registered {
    watch();
    let mut r = registry();
    r.next += 1;
    let id = r.next;
    r.groups.push((id, pgid));
    Registered(id)
}

/// An image guard lives: it, not the watcher here, ends the process on a signal.
pub(crate) struct Deferring;

impl Deferring {
    pub(crate) fn start() -> Deferring {
        DEFERRING.fetch_add(1, Ordering::SeqCst);
        Deferring
    }
}

impl Drop for Deferring {
    fn drop(&mut self) {
        DEFERRING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Kill every registered process group and remove every registered directory, now.
pub fn end_registered() {
    let (groups, dirs) = {
        let r = registry();
        (r.groups.clone(), r.dirs.clone())
    };
    for (_, pgid) in groups {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    for (_, dir) in dirs {
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            let _ = std::fs::remove_file(&dir);
            continue;
        }
        for _ in 0..5 {
            match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                _ => break,
            }
        }
    }
}

/// One line on stderr as `<program>: error: <message>`, the program being this process's own
/// name ([`crate::program::name`]). Errors are ignored: with stderr gone there is nowhere to
/// say anything, and the process is ending anyway.
pub(crate) fn say(message: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let program = crate::program::name();
    let _ = writeln!(std::io::stderr().lock(), "{program}: error: {message}");
}

/// Start the watcher thread, once per process.
fn watch() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new(caught_signals()) else {
            return; // no signal support: the default actions stay
        };
        std::thread::spawn(move || {
            for sig in signals.forever() {
                RECEIVED.store(sig, Ordering::SeqCst);
                end_registered();
                if DEFERRING.load(Ordering::SeqCst) > 0 {
                    continue; // the image guard ends the process
                }
                say(format_args!(
                    "interrupted by signal {sig}; its temporary files were removed"
                ));
                std::process::exit(128 + sig);
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_ends_when_dropped() {
        let d = tempfile::tempdir().unwrap();
        let held = remove_on_signal(d.path());
        assert!(registry().dirs.iter().any(|(_, p)| p == d.path()));
        drop(held);
        assert!(!registry().dirs.iter().any(|(_, p)| p == d.path()));
    }
}
