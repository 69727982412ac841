//! `rocm-pin guard on|off|status`.

use clap::{Args, Subcommand};
use rocm_pin_core::outln;

use rocm_pin_core::exit::Failure;
use rocm_pin_core::host::root::Root;
use rocm_pin_core::ops::guard::{self, Guard, GuardFlags, APT_HOOK, DPKG_HOOK};

/// The guard: an apt `DPkg::Post-Invoke` hook and a dpkg `post-invoke` hook running `rocm-pin
/// verify --quiet`, so an apt command or a dpkg run by hand that leaves the patched runtime
/// broken fails at that command. The hooks never fail apt for anything but a broken runtime:
/// with the binary gone, an environment error (verify exit 2) or ROCM_PIN_NO_GUARD=1 they
/// say why and let the run through.
///
/// Example: `rocm-pin guard status --json`
#[derive(Subcommand, Debug)]
pub enum GuardCommand {
    /// Arm the guard (as `install --guard` does): both hooks, running /usr/bin/rocm-pin from
    /// rocm-pin's .deb, else a copy of this binary at /usr/lib/rocm-pin/rocm-pin. Refused
    /// (exit 2) while verify fails: the guard would then fail every apt run
    On(OnArgs),
    /// Remove both hooks and the private copy
    Off(JsonArg),
    /// Is the guard armed, which binary and flags; exit 0 on or off (the first line and
    /// --json's `armed` say which), 1 hooks present but not working (binary gone, one hook
    /// missing)
    Status(JsonArg),
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
        GuardCommand::Status(_) => {}
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
