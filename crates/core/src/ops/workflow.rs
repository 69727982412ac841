//! The one place an install-like operation ends in verify: `install` and `adopt` change the
//! host, then verify judges it, and an installed-but-failing host is exit 1. The operations
//! themselves stay free of verify, so each can be tested on its own.

use crate::exit::Failure;
use crate::host::root::Root;
use crate::ops::adopt::{self, AdoptOptions, AdoptReport};
use crate::ops::install::{self, InstallOptions, InstallReport, Outcome};
use crate::ops::verify::{self, VerifyOptions, VerifyReport};
use crate::progress::{self, Listener};

/// An install and the verify that ended it (JSON: the install report's fields, then `verify`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct VerifiedInstall {
    #[serde(flatten)]
    pub install: InstallReport,
    /// None when the gate stopped the install (off, or skipped by auto).
    pub verify: Option<VerifyReport>,
}

/// `rocm-pin install`: the packages installed, then verify; installed but failing is exit 1.
pub fn install(
    root: &Root,
    opts: &InstallOptions,
    listener: &dyn Listener,
) -> anyhow::Result<VerifiedInstall> {
    let report = install::install(root, opts, listener)?;
    if matches!(report.outcome, Outcome::Off | Outcome::Skipped) {
        return Ok(VerifiedInstall {
            install: report,
            verify: None,
        });
    }
    let v = progress::step(listener, "verify", || {
        verify::verify(&VerifyOptions {
            root: root.clone(),
            accept_skipped_backport_check: opts.accept_skipped_backport_check,
            ..VerifyOptions::default()
        })
    })?;
    fail_unless_ok("installed", &v)?;
    Ok(VerifiedInstall {
        install: report,
        verify: Some(v),
    })
}

/// An adoption and the verify that ended it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VerifiedAdoption {
    #[serde(flatten)]
    pub adopt: AdoptReport,
    pub verify: VerifyReport,
}

/// `rocm-pin adopt`: the in-place patch turned into our packages, then verify.
pub fn adopt(
    root: &Root,
    opts: &AdoptOptions,
    listener: &dyn Listener,
) -> anyhow::Result<VerifiedAdoption> {
    let mut report = adopt::adopt(root, opts, listener)?;
    let v = progress::step(listener, "verify", || {
        verify::verify(&VerifyOptions {
            root: root.clone(),
            ..VerifyOptions::default()
        })
    })?;
    fail_unless_ok("adopted", &v)?;
    report
        .actions
        .push(format!("verify: all {} checks pass", v.checks.len()));
    Ok(VerifiedAdoption {
        adopt: report,
        verify: v,
    })
}

fn fail_unless_ok(done: &str, v: &VerifyReport) -> anyhow::Result<()> {
    if v.ok {
        return Ok(());
    }
    Err(Failure::CheckFailed(format!("{done}, but verify fails:\n{}", v.to_human())).into())
}
