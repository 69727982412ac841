//! The `--venv` forms of `install`, `rollback` and `verify`, and `package --wheels`: ROCm
//! installed as Python wheels (docs/wheels.md). Each subcommand's file hands over with one call.

use std::path::{Path, PathBuf};

use rocm_pin_core::exit::{usage, Failure};
use rocm_pin_core::host::root::Root;
use rocm_pin_core::ops::plan::CommitOverride;
use rocm_pin_core::ops::wheels::{self, PinLayout, WheelPackageRequest};
use rocm_pin_core::outln;

/// `rocm-pin package --wheels --stock-venv DIR --staging S --out O`.
pub fn package(
    staging: PathBuf,
    commit: CommitOverride,
    stock_venv: PathBuf,
    out: PathBuf,
    source_date_epoch: Option<u64>,
) -> anyhow::Result<()> {
    let req = WheelPackageRequest {
        staging,
        commit,
        stock_venv,
        out,
        source_date_epoch: source_date_epoch.and_then(|s| i64::try_from(s).ok()),
    };
    for w in wheels::package_wheels(&req)? {
        outln!("{}", w.path.display());
    }
    Ok(())
}

/// `rocm-pin install --venv DIR WHEEL`.
pub fn install(venv: &Path, wheels_given: &[PathBuf], json: bool) -> anyhow::Result<()> {
    let [wheel] = wheels_given else {
        return Err(usage(format!(
            "install --venv takes the one rocm-sdk-core wheel `rocm-pin package --wheels` made ({} given)",
            wheels_given.len()
        )));
    };
    let done = wheels::install_venv(venv, wheel)?;
    report(&done, json, "installed")?;
    let layout = PinLayout {
        venv: std::path::absolute(venv)?,
    };
    outln!(
        "rocm-pin install --venv: the pin is in {} and {}; uv reads the latter when run in {} or with UV_CONFIG_FILE={}",
        layout.pip_conf().display(),
        layout.uv_toml().display(),
        layout.venv.display(),
        layout.uv_toml().display()
    );
    Ok(())
}

/// `rocm-pin rollback --venv DIR`.
pub fn rollback(venv: &Path, json: bool) -> anyhow::Result<()> {
    let done = wheels::rollback_venv(venv)?;
    report(&done, json, "restored")
}

fn report(done: &wheels::VenvInstall, json: bool, verb: &str) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(done)?);
        return Ok(());
    }
    outln!("{verb}: {} (was {})", done.installed, done.replaced);
    outln!(
        "stock wheel kept for rollback: {}",
        done.stock_wheel.display()
    );
    for p in &done.relinked {
        outln!("re-linked: {p}");
    }
    Ok(())
}

/// `rocm-pin verify --venv DIR`: the pin is in force; which wheel versions are installed.
pub fn verify(venv: &Path, json: bool, quiet: bool) -> anyhow::Result<()> {
    let layout = PinLayout {
        venv: std::path::absolute(venv)?,
    };
    let report = wheels::check_pin(&Root::new(&layout.venv), Path::new("/"), &layout)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else if !quiet {
        outln!("venv {}: {}", report.venv, report.installed.join(", "));
        for p in &report.problems {
            outln!("FAIL {}\n     fix: {}", p.what, p.fix);
        }
        if report.problems.is_empty() {
            outln!(
                "ok   the pin is in force: {}",
                report.pinned_version.as_deref().unwrap_or("")
            );
        }
    }
    match report.problems.first() {
        None => Ok(()),
        Some(p) => Err(Failure::check_failed(format!(
            "rocm-pin verify --venv: {} problem(s); first: {} (fix: {})",
            report.problems.len(),
            p.what,
            p.fix
        ))
        .into()),
    }
}
