//! `rocm-pin rollback`.

use clap::Args;
use rocm_pin_core::outln;

/// Put the stock runtime back, offline, and purge the replacement packages, in one apt
/// transaction with the stock .debs kept by `rocm-pin install` (/var/lib/rocm-pin/stock/).
/// Then checks that the loader resolves the stock libraries and that every dependant is still
/// installed; exit 1 if not.
///
/// Without --family, every pinned family installed is rolled back (the pair first).
///
/// Example: `rocm-pin rollback`, `rocm-pin rollback --family rccl`
#[derive(Args, Debug)]
pub struct RollbackArgs {
    /// Seconds to wait for another apt/dpkg holding the lock
    #[arg(long, default_value_t = 120)]
    pub lock_timeout: u32,
    /// Put the stock rocm-sdk-core back in this Python venv instead, offline, and remove the pin
    #[arg(long, value_name = "DIR")]
    pub venv: Option<std::path::PathBuf>,
    /// Print the result as JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Roll back one pinned family: runtime (the HSA + HIP pair) or rccl; without it, every
    /// family installed (the pair first)
    #[arg(long, value_name = "NAME", value_parser = super::package::family_name)]
    pub family: Option<&'static rocm_pin_core::rocm::PinnedFamily>,
}

pub fn run(args: RollbackArgs) -> anyhow::Result<()> {
    if let Some(venv) = &args.venv {
        return super::venv::rollback(venv, args.json);
    }
    let listener = rocm_pin_core::progress::for_cli(args.json);
    let root = rocm_pin_core::host::root::Root::system();
    let reports = match args.family {
        Some(f) if f.name != rocm_pin_core::rocm::families::RUNTIME.name => vec![(
            f.name,
            rocm_pin_core::ops::family_rollback::rollback_family(
                &root,
                f,
                args.lock_timeout,
                listener.as_ref(),
            )?,
        )],
        Some(f) => vec![(
            f.name,
            rocm_pin_core::ops::rollback::rollback(&root, args.lock_timeout, listener.as_ref())?,
        )],
        None => rocm_pin_core::ops::family_rollback::rollback_all(
            &root,
            args.lock_timeout,
            listener.as_ref(),
        )?,
    };
    if args.json {
        // One family: its report, as before families; several: one report per family name.
        let text = match reports.as_slice() {
            [(_, r)] => serde_json::to_string_pretty(r)?,
            many => serde_json::to_string_pretty(
                &many
                    .iter()
                    .map(|(n, r)| (*n, r))
                    .collect::<std::collections::BTreeMap<_, _>>(),
            )?,
        };
        outln!("{text}");
        return Ok(());
    }
    for (family, r) in &reports {
        outln!("installed: {}", r.stock_debs.join(" "));
        outln!("purged:    {}", r.purged.join(" "));
        for c in &r.checks {
            outln!(
                "{} {:<16} {}",
                if c.ok { "ok  " } else { "FAIL" },
                c.name,
                rocm_pin_core::output::shown(&c.detail)
            );
        }
        outln!("rocm-pin rollback: the stock {family} is back");
    }
    Ok(())
}
