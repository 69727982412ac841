//! The command-line pieces both binaries carry: `rocm-pin` (every subcommand) and
//! `rocm-pin-guard` (only `guard …` and `verify` of a root, the small binary the --guard hooks
//! and images keep). One clap definition of each: `guard`'s subcommands and verify's root
//! flags are defined here once and used by both mains.
//!
//! Why a module both mains `mod` in rather than a library crate: it is a few hundred lines of
//! clap types over `rocm_pin_core`, and a crate of its own would only add a workspace member;
//! as a module it compiles into each binary, and the linker keeps only what that binary's main
//! reaches (the guard binary carries no pgp, xz, zstd or image unpacker: docs/docker.md).

pub mod guard;
pub mod verify_root;

use rocm_pin_core::output;

/// `cmd` with the exit statuses (the one table, `rocm_pin_core::exit`) at the end of every
/// command's and subcommand's `--help`, after its own text. `-h` stays short.
pub fn with_exit_status(cmd: clap::Command) -> clap::Command {
    with_exit_status_text(cmd, &rocm_pin_core::exit::exit_status_help())
}

fn with_exit_status_text(cmd: clap::Command, exit_status: &str) -> clap::Command {
    let long = match cmd.get_after_help() {
        Some(own) => format!("{own}\n\n{exit_status}"),
        None => exit_status.to_string(),
    };
    cmd.after_long_help(long)
        .mut_subcommands(|sub| with_exit_status_text(sub, exit_status))
}

/// The end of `main`: return on success, else the error's lines on stderr and its exit code.
/// The same in both binaries, so a hook's output and exit codes do not depend on which one
/// the hook runs.
pub fn finish(result: anyhow::Result<()>) {
    match result {
        Ok(()) => {}
        // The reader of our stdout went away (`| head`): end as any Unix filter does there.
        Err(err) if output::is_stdout_closed(&err) => output::exit_by_sigpipe(),
        Err(err) => {
            // One line per cause, outermost first: what failed, then why.
            let mut msg = format!("rocm-pin: error: {err}");
            for cause in err.chain().skip(1) {
                msg.push_str(&format!("\n  caused by: {cause}"));
            }
            // The safety net: a message quoting what a root, an image or a .deb said never
            // drives the terminal (the newlines that lay the message out are kept).
            let msg = output::escaped_keeping_lines(&msg);
            output::write_stderr(format_args!("{msg}\n"));
            std::process::exit(rocm_pin_core::error::exit_code_for(&err));
        }
    }
}
