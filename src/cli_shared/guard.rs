//! `rocm-pin guard on|off|status|hook` (also `rocm-pin-guard guard …`).

use clap::{Args, Subcommand};
use rocm_pin_core::outln;

use rocm_pin_core::errln;
use rocm_pin_core::exit::Failure;
use rocm_pin_core::host::root::Root;
use rocm_pin_core::ops::guard::{
    self, Guard, GuardFlags, HookStart, HookTool, APT_HOOK, DPKG_HOOK,
};

/// The guard: an apt `DPkg::Post-Invoke` hook and a dpkg `post-invoke` hook running `rocm-pin
/// verify --quiet`, so an apt command or a dpkg run by hand that leaves the patched runtime
/// broken fails at that command. The hooks never fail apt for anything but a broken runtime:
/// with the binary gone, an environment error (verify exit 2) or ROCM_PIN_NO_GUARD=1 they
/// say why and let the run through.
///
/// Example: `rocm-pin guard status --json`
#[derive(Subcommand, Debug)]
pub enum GuardCommand {
    /// Arm the guard (as `install --guard` does): both hooks, running the small guard binary
    /// rocm-pin-guard when it sits beside this one (else this binary): /usr/bin's from
    /// rocm-pin's .deb, else a copy at /usr/lib/rocm-pin/rocm-pin-guard (rocm-pin). Refused
    /// (exit 2) while verify fails: the guard would then fail every apt run
    On(OnArgs),
    /// Remove both hooks and the private copy
    Off(JsonArg),
    /// Is the guard armed, which binary and flags; exit 0 on or off (the first line and
    /// --json's `armed` say which), 1 hooks present but not working (binary gone, one hook
    /// missing)
    Status(JsonArg),
    /// What the hooks run (`[ -x B ] && exec B guard hook apt`): verify --quiet, failing the
    /// apt or dpkg run only for a broken runtime (exit 1); ROCM_PIN_NO_GUARD=1 skips it
    #[command(hide = true)]
    Hook(HookArgs),
}

#[derive(Args, Debug)]
pub struct HookArgs {
    /// Which tool's hook runs: apt (DPkg::Post-Invoke) or dpkg (post-invoke)
    #[arg(value_enum)]
    pub tool: HookToolArg,
    /// Passed on to verify
    #[arg(long)]
    pub accept_skipped_backport_check: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum HookToolArg {
    Apt,
    Dpkg,
}

#[derive(Args, Debug)]
pub struct OnArgs {
    /// Accept packages built with --no-backport-check (recorded in them): the hooks run
    /// verify --accept-skipped-backport-check
    #[arg(long)]
    pub accept_skipped_backport_check: bool,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct JsonArg {
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: GuardCommand) -> anyhow::Result<()> {
    let root = Root::system();
    let (json, is_status) = match &cmd {
        GuardCommand::On(a) => (a.json, false),
        GuardCommand::Off(a) => (a.json, false),
        GuardCommand::Status(a) => (a.json, true),
        GuardCommand::Hook(a) => hook(a),
    };
    match cmd {
        GuardCommand::On(a) => {
            guard::guard_on(
                &root,
                GuardFlags {
                    accept_skipped_backport_check: a.accept_skipped_backport_check,
                },
            )?;
        }
        GuardCommand::Off(_) => {
            Guard::disarm(&root)?;
        }
        GuardCommand::Status(_) | GuardCommand::Hook(_) => {}
    }
    let s = guard::guard_status(&root)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        outln!("guard: {}", s.summary);
        outln!(
            "hooks: apt {APT_HOOK} {}, dpkg {DPKG_HOOK} {}",
            if s.apt_hook.is_some() {
                "present"
            } else {
                "absent"
            },
            if s.dpkg_hook.is_some() {
                "present"
            } else {
                "absent"
            }
        );
        if let Some(b) = &s.binary {
            outln!(
                "binary: {b} ({}), flags: {}",
                if s.binary_present {
                    "present"
                } else {
                    "MISSING"
                },
                if s.flags.is_empty() {
                    "none".to_string()
                } else {
                    s.flags.join(" ")
                }
            );
        }
    }
    // on and off succeeded when they got here; only status ends with the guard's state.
    match if is_status { s.exit_kind() } else { None } {
        None => Ok(()),
        Some(kind) => Err(Failure::new(kind, format!("guard: {}", s.summary)).into()),
    }
}

/// The hook: decide from the environment, run `verify --quiet` (this binary, as the hook line
/// named it), print the guard's line and end with the hook's exit code. It never returns: its
/// exit code is the verdict dpkg and apt act on, and its lines are the guard's own (no
/// `rocm-pin: error:` prefix).
fn hook(a: &HookArgs) -> ! {
    let tool = match a.tool {
        HookToolArg::Apt => HookTool::Apt,
        HookToolArg::Dpkg => HookTool::Dpkg,
    };
    let var = |k: &str| std::env::var(k).ok();
    let no_guard = var(guard::NO_GUARD_ENV);
    let locked = var("DPKG_FRONTEND_LOCKED");
    if let HookStart::Skip(line) = guard::hook_start(tool, no_guard.as_deref(), locked.as_deref()) {
        if let Some(line) = line {
            errln!("{line}");
        }
        std::process::exit(0);
    }
    // The path the hook line exec'd: the guard's own binary, absolute.
    let me = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::current_exe().ok());
    let flags = GuardFlags {
        accept_skipped_backport_check: a.accept_skipped_backport_check,
    };
    let code = me.and_then(|me| {
        std::process::Command::new(me)
            .arg("verify")
            .arg("--quiet")
            .args(flags.names())
            .status()
            .ok()
    });
    // A signal ends verify with 128+N, as the shell reported it.
    let code = code.and_then(|s| {
        use std::os::unix::process::ExitStatusExt as _;
        s.code().or_else(|| s.signal().map(|n| 128 + n))
    });
    let (exit, line) = guard::hook_end(tool, code);
    if let Some(line) = line {
        errln!("{line}");
    }
    std::process::exit(exit)
}
