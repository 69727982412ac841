//! The guard (`install --guard`, `rocm-pin guard on|off|status`): an apt `DPkg::Post-Invoke`
//! hook and a dpkg `post-invoke` hook that run `rocm-pin verify --quiet` after every apt
//! transaction and every dpkg run made by hand, so a command that leaves the patched runtime
//! broken fails at that command.
//!
//! A hook in every later apt and dpkg run must never make apt unusable for something that is
//! not the runtime's fault. Both hooks are one short `sh -c` line ([`hook_script`]: dpkg and
//! apt print it whole when it fails) running `rocm-pin guard hook apt|dpkg`, which decides:
//! - `ROCM_PIN_NO_GUARD=1` skips the check, with a line saying so;
//! - the binary gone or not executable disarms it, with a line saying why (exit 0);
//! - verify's exit 1 (the runtime is broken) fails the run; any other failure of verify (exit
//!   2, an environment error such as `apt-cache policy` failing; a crash) is reported as
//!   "could not check" and does not fail it: the runtime was not judged, and a hook in every
//!   apt run must not take apt down for what is not the runtime's fault.
//!
//! The hooks run the small guard binary `rocm-pin-guard` when one sits beside the running
//! rocm-pin (else the full binary), at a stable path: the .deb's own file in /usr/bin when dpkg
//! owns it (its prerm/postrm remove the hooks), else a private copy in /usr/lib/rocm-pin,
//! never a build or temp path that may vanish ([`binary`]).
//! The flags the guard was armed with are recorded in the hook files' first line, so a
//! rollback that has to put the guard back puts it back as it was ([`Guard::suspend`]).

mod binary;
use binary::remove_if_present;
mod error;

pub use binary::{guard_binary_for, stable_binary, GUARD_BINARY_NAME};
pub use error::GuardError;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::exit::{ExitKind, HostChange};
use crate::host::root::{FileKind, Root};

// The guard's paths, from the one state layout (short names for the hook texts below).
pub use crate::host::layout::StateLayout;
pub const APT_HOOK: &str = StateLayout::GUARD_APT_HOOK;
pub const DPKG_HOOK: &str = StateLayout::GUARD_DPKG_HOOK;
pub const PACKAGED_BINARY: &str = StateLayout::PACKAGED_BINARY;
pub const PRIVATE_COPY: &str = StateLayout::GUARD_PRIVATE_COPY;
pub const PACKAGED_GUARD_BINARY: &str = StateLayout::PACKAGED_GUARD_BINARY;
pub const PRIVATE_GUARD_COPY: &str = StateLayout::GUARD_PRIVATE_GUARD_COPY;

/// Set (non-empty, not `0`) in the environment of an apt or dpkg run that must not be checked:
/// rocm-pin's own `dpkg --configure -a` (it verifies at its end), or an admin's deliberate repair.
pub const NO_GUARD_ENV: &str = "ROCM_PIN_NO_GUARD";

/// The first line of both hook files: what the guard runs, machine-readable.
const HEADER: &str = "rocm-pin guard:";
/// Hook files are a few hundred bytes; anything bigger is not ours.
const HOOK_FILE_LIMIT: u64 = 64 * 1024;

/// The verify flags the guard was armed with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct GuardFlags {
    /// Packages built with `--no-backport-check` are accepted (verify's flag of that name).
    pub accept_skipped_backport_check: bool,
}

impl GuardFlags {
    /// The verify arguments, each with a leading space (empty when none).
    pub fn verify_args(self) -> String {
        if self.accept_skipped_backport_check {
            " --accept-skipped-backport-check".to_string()
        } else {
            String::new()
        }
    }

    /// The flags as a list (for `guard status`).
    pub fn names(self) -> Vec<String> {
        self.verify_args()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    fn parse(args: &str) -> GuardFlags {
        GuardFlags {
            accept_skipped_backport_check: args.contains("--accept-skipped-backport-check"),
        }
    }
}

/// Which tool runs the hook (the words of its messages, and dpkg's skip of apt's own runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookTool {
    Apt,
    Dpkg,
}

impl HookTool {
    /// The file that holds this tool's hook line.
    pub fn hook_file(self) -> &'static str {
        match self {
            HookTool::Apt => APT_HOOK,
            HookTool::Dpkg => DPKG_HOOK,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            HookTool::Apt => "apt",
            HookTool::Dpkg => "dpkg",
        }
    }
}

/// An armed guard: the binary its hooks run (a path inside the root) and its verify flags.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Guard {
    pub binary: PathBuf,
    pub flags: GuardFlags,
}

/// The hook files taken away for the time of a rollback, kept byte for byte to be put back.
#[derive(Debug)]
pub struct Suspended {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Suspended {
    /// Put the hook files back exactly as they were (same binary, same flags).
    pub fn restore(self, root: &Root) -> anyhow::Result<()> {
        for (path, bytes) in self.files {
            write_atomically(&root.host_path(&path), &bytes)?;
        }
        Ok(())
    }
}

/// The shell line both hooks run (apt and dpkg run it with `sh -c`, and print it whole when it
/// fails, so it stays one short line): `rocm-pin guard hook <tool>` does the judging
/// ([`hook_start`], then verify, then [`hook_end`]); the shell only lets a run through, saying
/// why, when the binary is gone. No double quote and no backslash in it: it sits inside an apt
/// configuration string. `binary` is a path of `safe_path` characters, so it needs no quoting.
///
/// The line is silent when its own hook file is gone too: apt reads its configuration once, so
/// the `apt-get remove rocm-pin` whose prerm takes the hooks away (or a run that began before
/// `rocm-pin guard off`) still runs the line after — the guard was taken away on purpose, and
/// telling the user to remove hook files that are already gone would be wrong.
pub fn hook_script(tool: HookTool, binary: &str, flags: GuardFlags) -> String {
    hook_script_in(tool, binary, tool.hook_file(), flags)
}

/// [`hook_script`] for a hook file at `hook_file` (tests put it in a temporary directory).
fn hook_script_in(tool: HookTool, binary: &str, hook_file: &str, flags: GuardFlags) -> String {
    let t = tool.word();
    format!(
        "[ -x {binary} ] && exec {binary} guard hook {t}{args}; [ ! -e {hook_file} ] || \
echo 'rocm-pin --guard: off: {binary} is gone or not executable, so this {t} run was not checked' >&2",
        args = flags.verify_args(),
    )
}

/// What a hook does before judging the runtime: let the run through (with the line to print,
/// if any), or check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookStart {
    Skip(Option<String>),
    Check,
}

/// The hook's first decision, from its environment: `no_guard` is [`NO_GUARD_ENV`]'s value,
/// `frontend_locked` dpkg's `DPKG_FRONTEND_LOCKED`.
pub fn hook_start(
    tool: HookTool,
    no_guard: Option<&str>,
    frontend_locked: Option<&str>,
) -> HookStart {
    // apt sets DPKG_FRONTEND_LOCKED for the dpkg runs of its transaction: those are its steps
    // (verify would see the middle of it), and apt's own hook checks the end.
    if tool == HookTool::Dpkg && frontend_locked.is_some_and(|v| !v.is_empty()) {
        return HookStart::Skip(None);
    }
    match no_guard {
        None | Some("") | Some("0") => HookStart::Check,
        Some(_) => HookStart::Skip(Some(format!(
            "rocm-pin --guard: {NO_GUARD_ENV} is set: this {} run was not checked",
            tool.word()
        ))),
    }
}

/// The hook's end from verify's exit code (None: it did not run or a signal ended it): the
/// hook's own exit code and the line it prints. Only a broken runtime (verify's 1) fails the
/// run; anything else was not judged and must not take apt down.
pub fn hook_end(tool: HookTool, verify_code: Option<i32>) -> (i32, Option<String>) {
    let t = tool.word();
    match verify_code {
        Some(0) => (0, None),
        Some(1) => (
            1,
            Some(format!(
                "rocm-pin --guard: this {t} run left the patched ROCm runtime broken (the line above says how to repair it); {NO_GUARD_ENV}=1 skips this check"
            )),
        ),
        other => (
            0,
            Some(format!(
                "rocm-pin --guard: could not check (environment error, verify exit {}; the line above says what): the runtime was not judged, this {t} run does not fail for it",
                other.map_or("none".to_string(), |c| c.to_string())
            )),
        ),
    }
}

/// The apt hook file.
pub fn apt_hook_text(binary: &str, flags: GuardFlags) -> String {
    format!(
        "// {HEADER} binary={binary} flags={}\n// Any apt run that leaves the patched ROCm runtime broken fails here; `rocm-pin guard off` removes this.\nDPkg::Post-Invoke {{ \"{}\"; }};\n",
        flags.verify_args().trim_start(),
        hook_script(HookTool::Apt, binary, flags)
    )
}

/// The dpkg hook file.
pub fn dpkg_hook_text(binary: &str, flags: GuardFlags) -> String {
    format!(
        "# {HEADER} binary={binary} flags={}\n# A dpkg run by hand (dpkg -i, even with --force-all) that leaves the patched ROCm runtime\n# broken fails; `rocm-pin guard off` removes this.\npost-invoke={}\n",
        flags.verify_args().trim_start(),
        hook_script(HookTool::Dpkg, binary, flags)
    )
}

/// Only characters a shell takes literally: the hooks name the binary without quotes.
fn safe_path(p: &str) -> bool {
    p.starts_with('/')
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._+-".contains(&b))
}

/// A hook file's bytes: a regular file of at most [`HOOK_FILE_LIMIT`] bytes, or None.
fn read_hook_file(root: &Root, path: &str) -> anyhow::Result<Option<Vec<u8>>> {
    // Through the root's bounded reader: a hook path whose directory links out of a `--root`
    // is judged inside it, and a FIFO or device there is an error, never a hang.
    match root.read_file(path, FileKind::Config) {
        Ok(bytes) => Ok(Some(
            bytes.into_iter().take(HOOK_FILE_LIMIT as usize).collect(),
        )),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(anyhow::Error::new(e)
            .context("remove it (`rocm-pin guard off`) and arm the guard again".to_string())),
    }
}

/// The guard a hook file describes: its header line, else (a hook written before the header
/// existed) the quoted binary of its verify command.
fn parse_hook(text: &str) -> Option<Guard> {
    if let Some(rest) = text
        .lines()
        .next()
        .and_then(|l| l.split_once(HEADER))
        .map(|(_, rest)| rest.trim())
    {
        let binary = rest.strip_prefix("binary=")?.split_whitespace().next()?;
        let flags = rest.split_once("flags=").map_or("", |(_, f)| f);
        return Some(Guard {
            binary: PathBuf::from(binary),
            flags: GuardFlags::parse(flags),
        });
    }
    let line = text.lines().find(|l| l.contains("' verify --quiet"))?;
    let (before, after) = line.split_once("' verify --quiet")?;
    let binary = before.rsplit('\'').next()?;
    Some(Guard {
        binary: PathBuf::from(binary),
        flags: GuardFlags::parse(after),
    })
}

impl Guard {
    /// The guard armed in `root`, read from its apt hook (else its dpkg hook); None when off.
    pub fn read(root: &Root) -> anyhow::Result<Option<Guard>> {
        for path in [APT_HOOK, DPKG_HOOK] {
            if let Some(bytes) = read_hook_file(root, path)? {
                return Ok(parse_hook(&String::from_utf8_lossy(&bytes)));
            }
        }
        Ok(None)
    }

    /// Arm the guard in `root` with `flags`: choose the stable binary ([`stable_binary`]: the
    /// guard binary beside this executable, else this one; copied to its private path when it
    /// is not rocm-pin's .deb), then write both hooks.
    pub fn arm(root: &Root, flags: GuardFlags) -> anyhow::Result<Guard> {
        let exe = crate::process::self_path()?;
        let binary = stable_binary(root, &exe)?;
        let shown = binary.display().to_string();
        debug_assert!(safe_path(&shown), "{shown}");
        // A private copy the hooks no longer run (the .deb's binary now, or the guard binary
        // where an older guard ran the full one) is not left behind.
        binary::remove_private_copies(root, Some(&binary))?;
        let apt = root.host_path(APT_HOOK);
        let dpkg = root.host_path(DPKG_HOOK);
        for p in [&apt, &dpkg] {
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
        }
        write_atomically(&apt, apt_hook_text(&shown, flags).as_bytes())?;
        write_atomically(&dpkg, dpkg_hook_text(&shown, flags).as_bytes())?;
        Ok(Guard { binary, flags })
    }

    /// Turn the guard off: both hooks and the private copies (the guard binary's, and the full
    /// binary's that older versions ran) removed. True when there was one.
    /// An error counts as a changed host: a hook may be gone already.
    pub fn disarm(root: &Root) -> anyhow::Result<bool> {
        super::privilege::needs_root(root, "rocm-pin guard off", GUARD_WRITES)
            .map_err(|e| HostChange::Unchanged.attach(e))?;
        let remove_all = || -> anyhow::Result<bool> {
            let mut removed = false;
            for path in [APT_HOOK, DPKG_HOOK] {
                removed |= remove_if_present(&root.host_path(path))?;
            }
            removed |= binary::remove_private_copies(root, None)?;
            Ok(removed)
        };
        remove_all().map_err(|e| HostChange::Changed.attach(e))
    }

    /// Take both hooks away for the time of an operation the guard would fail half-way (a
    /// rollback), keeping their bytes; the private copy stays. None when the guard was off.
    pub fn suspend(root: &Root) -> anyhow::Result<Option<Suspended>> {
        let mut files = Vec::new();
        for path in [APT_HOOK, DPKG_HOOK] {
            if let Some(bytes) = read_hook_file(root, path)? {
                files.push((PathBuf::from(path), bytes));
            }
        }
        for (path, _) in &files {
            remove_if_present(&root.host_path(path))?;
        }
        Ok((!files.is_empty()).then_some(Suspended { files }))
    }
}

/// Why `guard on` and `guard off` need root.
const GUARD_WRITES: &str = "writes apt's and dpkg's hook files under /etc";

/// `rocm-pin guard on`: verify first, and arm only when the runtime passes (or only checks that
/// could not be made fail, exit 2). A guard armed over a failing runtime would fail every later
/// apt and dpkg run, the repair included; over a host the gate skipped it would guard nothing.
/// An error carries whether the host had changed ([`HostChange`]): only arming changes it.
pub fn guard_on(root: &Root, flags: GuardFlags) -> anyhow::Result<Guard> {
    super::privilege::needs_root(root, "rocm-pin guard on", GUARD_WRITES)
        .map_err(|e| HostChange::Unchanged.attach(e))?;
    let report = crate::ops::verify::verify(&crate::ops::verify::VerifyOptions {
        root: root.clone(),
        accept_skipped_backport_check: flags.accept_skipped_backport_check,
        ..crate::ops::verify::VerifyOptions::default()
    })
    .map_err(|e| HostChange::Unchanged.attach(e))?;
    if matches!(
        report.exit_kind(),
        Some(ExitKind::CheckFailed | ExitKind::Skipped)
    ) {
        let mut failed: Vec<String> = report.failed().map(|c| c.name.clone()).collect();
        failed.dedup();
        return Err(HostChange::Unchanged.attach(
            GuardError::GuardRefused {
                failed,
                skipped: report.skipped.clone(),
            }
            .into(),
        ));
    }
    Guard::arm(root, flags).map_err(|e| HostChange::Changed.attach(e))
}

/// A hook file written whole or not at all (apt and dpkg must never read half of one).
fn write_atomically(p: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = p.with_extension(format!("rocm-pin-tmp.{}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, p))
        .with_context(|| format!("cannot write {}", p.display()))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// `rocm-pin guard status` (and `status`'s guard line): is it armed, what does it run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct GuardStatus {
    /// Both hooks in place and their binary executable: apt and dpkg runs are checked.
    pub armed: bool,
    pub apt_hook: Option<String>,
    pub dpkg_hook: Option<String>,
    /// The binary the hooks run (inside the root), when they are there.
    pub binary: Option<String>,
    /// That binary exists and is executable.
    pub binary_present: bool,
    /// The verify flags the guard runs with.
    pub flags: Vec<String>,
    /// One line for the sysadmin.
    pub summary: String,
}

impl GuardStatus {
    /// None when armed or off: both are normal states, told apart by the summary and `armed`
    /// (exit 3 means "skipped by the version gate" everywhere else, and an `error:` line for
    /// a guard nobody armed misled). A failed check only when hooks are present but not
    /// working (binary gone, one hook missing, unreadable).
    pub fn exit_kind(&self) -> Option<ExitKind> {
        let hooks = self.apt_hook.is_some() || self.dpkg_hook.is_some();
        (!self.armed && hooks).then_some(ExitKind::CheckFailed)
    }
}

/// The guard of `root` as it stands.
pub fn guard_status(root: &Root) -> anyhow::Result<GuardStatus> {
    let present = |p: &str| root.symlink_metadata(p).is_ok().then(|| p.to_string());
    let mut s = GuardStatus {
        apt_hook: present(APT_HOOK),
        dpkg_hook: present(DPKG_HOOK),
        ..GuardStatus::default()
    };
    if s.apt_hook.is_none() && s.dpkg_hook.is_none() {
        s.summary = "off: no hook (`rocm-pin guard on` arms it)".into();
        return Ok(s);
    }
    let Some(g) = Guard::read(root)? else {
        s.summary = format!("broken: the hooks ({APT_HOOK}, {DPKG_HOOK}) name no rocm-pin binary; run `rocm-pin guard on` again");
        return Ok(s);
    };
    s.binary_present = root
        .metadata(&g.binary)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    s.binary = Some(g.binary.display().to_string());
    s.flags = g.flags.names();
    s.armed = s.binary_present && s.apt_hook.is_some() && s.dpkg_hook.is_some();
    s.summary = if s.armed {
        format!(
            "on: apt and dpkg runs are checked by {}",
            g.binary.display()
        )
    } else if !s.binary_present {
        format!(
            "off: {} is gone or not executable, so the hooks let every apt and dpkg run through unchecked; `rocm-pin guard on` arms it again, `rocm-pin guard off` removes the hooks",
            g.binary.display()
        )
    } else {
        format!(
            "half: only {} is in place; `rocm-pin guard on` writes both hooks",
            s.apt_hook
                .as_deref()
                .or(s.dpkg_hook.as_deref())
                .unwrap_or("")
        )
    };
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hooks_hold_no_double_quote_or_backslash_and_name_the_flags() {
        let flags = GuardFlags {
            accept_skipped_backport_check: true,
        };
        for (tool, binary) in [
            (HookTool::Apt, PRIVATE_COPY),
            (HookTool::Dpkg, PRIVATE_COPY),
            (HookTool::Apt, PRIVATE_GUARD_COPY),
            (HookTool::Dpkg, PACKAGED_GUARD_BINARY),
        ] {
            let s = hook_script(tool, binary, flags);
            assert!(!s.contains('"') && !s.contains('\\'), "{s}");
            assert!(s.contains(&format!(
                "guard hook {} --accept-skipped-backport-check",
                tool.word()
            )));
            // What dpkg and apt print when the hook fails: one line, a few words, not a script
            // (the longest: the guard binary's private copy, named twice, with the flag).
            assert!(!s.contains('\n') && s.len() < 320, "{} bytes: {s}", s.len());
        }
    }

    /// dpkg reads its configuration files in lines of at most 1024 bytes (MAX_CONFIG_LINE in
    /// dpkg's src/common/options.c): a longer `post-invoke=` line is cut and dpkg refuses to
    /// start ("unknown option"), which would brick dpkg and apt.
    #[test]
    fn the_dpkg_hook_line_fits_dpkg_s_line_limit() {
        let flags = GuardFlags {
            accept_skipped_backport_check: true,
        };
        for binary in [
            PRIVATE_COPY,
            PACKAGED_BINARY,
            PRIVATE_GUARD_COPY,
            PACKAGED_GUARD_BINARY,
        ] {
            assert!(safe_path(binary), "{binary}");
            for line in dpkg_hook_text(binary, flags).lines() {
                assert!(line.len() < 1000, "{} bytes: {line}", line.len());
            }
        }
    }

    #[test]
    fn a_hook_file_is_read_back_as_the_guard_it_was_written_with() {
        for accept in [true, false] {
            let flags = GuardFlags {
                accept_skipped_backport_check: accept,
            };
            for text in [
                apt_hook_text(PACKAGED_BINARY, flags),
                dpkg_hook_text(PACKAGED_BINARY, flags),
            ] {
                assert_eq!(
                    parse_hook(&text),
                    Some(Guard {
                        binary: PACKAGED_BINARY.into(),
                        flags
                    })
                );
            }
        }
    }

    #[test]
    fn a_hook_written_before_the_header_is_read_too() {
        let old = "// rocm-pin --guard: x\nDPkg::Post-Invoke { \"'/root/target/release/rocm-pin' verify --quiet --accept-skipped-backport-check\"; };\n";
        assert_eq!(
            parse_hook(old),
            Some(Guard {
                binary: "/root/target/release/rocm-pin".into(),
                flags: GuardFlags {
                    accept_skipped_backport_check: true
                }
            })
        );
    }

    #[test]
    fn arm_copies_the_binary_and_disarm_takes_everything_away() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let g = Guard::arm(&root, GuardFlags::default()).unwrap();
        assert_eq!(g.binary, Path::new(PRIVATE_COPY));
        let copy = root.host_path(PRIVATE_COPY);
        assert_eq!(
            std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(Guard::read(&root).unwrap(), Some(g));
        assert_eq!(guard_status(&root).unwrap().exit_kind(), None);
        std::fs::remove_file(&copy).unwrap();
        let s = guard_status(&root).unwrap();
        assert_eq!(s.exit_kind(), Some(ExitKind::CheckFailed), "{s:?}");
        assert!(s.summary.contains("is gone"), "{s:?}");
        assert!(Guard::disarm(&root).unwrap());
        let off = guard_status(&root).unwrap();
        assert!(!off.armed, "{off:?}");
        assert_eq!(off.exit_kind(), None, "off is a normal state: {off:?}");
        assert!(!root.host_path("/usr/lib/rocm-pin").exists());
    }

    #[test]
    fn a_suspended_guard_comes_back_with_its_flags() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let flags = GuardFlags {
            accept_skipped_backport_check: true,
        };
        Guard::arm(&root, flags).unwrap();
        let s = Guard::suspend(&root).unwrap().unwrap();
        assert_eq!(Guard::read(&root).unwrap(), None);
        s.restore(&root).unwrap();
        assert_eq!(Guard::read(&root).unwrap().unwrap().flags, flags);
    }

    /// The hook line as `sh -c` runs it, with a stand-in binary that prints its arguments and
    /// exits `code` (None: no binary), its hook file present.
    fn run_hook_line(tool: HookTool, code: Option<i32>) -> (i32, String) {
        run_hook_line_with(tool, code, true)
    }

    fn run_hook_line_with(tool: HookTool, code: Option<i32>, hook_file: bool) -> (i32, String) {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("hook");
        if hook_file {
            std::fs::write(&file, "the hook\n").unwrap();
        }
        let bin = d.path().join("rocm-pin");
        if let Some(code) = code {
            std::fs::write(
                &bin,
                format!("#!/bin/sh\necho \"ran $*\" >&2\nexit {code}\n"),
            )
            .unwrap();
            std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let line = hook_script_in(
            tool,
            &bin.display().to_string(),
            &file.display().to_string(),
            GuardFlags::default(),
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(line)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn the_hook_line_runs_guard_hook_and_lets_a_run_through_when_the_binary_is_gone() {
        for tool in [HookTool::Apt, HookTool::Dpkg] {
            let t = tool.word();
            // The binary's exit is the hook's: `guard hook` decides.
            assert_eq!(
                run_hook_line(tool, Some(0)),
                (0, format!("ran guard hook {t}\n"))
            );
            assert_eq!(run_hook_line(tool, Some(1)).0, 1);
            let (rc, said) = run_hook_line(tool, None);
            assert!(
                rc == 0
                    && said.contains("rocm-pin --guard: off: ")
                    && said.contains("is gone or not executable")
                    && said.contains(&format!("this {t} run was not checked")),
                "{said}"
            );
            // Its hook file gone as well (apt still runs the line it read before a prerm or
            // `guard off` took the hooks away): the guard is off on purpose, nothing to say.
            assert_eq!(run_hook_line_with(tool, None, false), (0, String::new()));
            // The binary there: it judges, whatever happened to the file.
            assert_eq!(run_hook_line_with(tool, Some(1), false).0, 1);
        }
    }

    #[test]
    fn the_hook_fails_only_a_broken_runtime_and_says_why_it_let_a_run_through() {
        for tool in [HookTool::Apt, HookTool::Dpkg] {
            let t = tool.word();
            for unset in [None, Some(""), Some("0")] {
                assert_eq!(hook_start(tool, unset, None), HookStart::Check);
            }
            match hook_start(tool, Some("1"), None) {
                HookStart::Skip(Some(l)) => assert!(
                    l.contains("ROCM_PIN_NO_GUARD is set") && l.contains(t),
                    "{l}"
                ),
                other => panic!("{other:?}"),
            }
            assert_eq!(hook_end(tool, Some(0)), (0, None));
            let (rc, said) = hook_end(tool, Some(1));
            let said = said.unwrap();
            assert!(
                rc == 1
                    && said.contains(&format!(
                        "this {t} run left the patched ROCm runtime broken"
                    )),
                "{said}"
            );
            for other in [Some(2), Some(143), None] {
                let (rc, said) = hook_end(tool, other);
                let said = said.unwrap();
                assert!(
                    rc == 0
                        && said.contains("could not check (environment error")
                        && said.contains("the runtime was not judged")
                        && !said.contains("broken"),
                    "{said}"
                );
            }
        }
        // apt's own dpkg runs are steps of its transaction: the dpkg hook leaves them to apt's,
        // silently; apt's hook ignores the variable.
        assert_eq!(
            hook_start(HookTool::Dpkg, None, Some("1")),
            HookStart::Skip(None)
        );
        assert_eq!(hook_start(HookTool::Apt, None, Some("1")), HookStart::Check);
    }
}
