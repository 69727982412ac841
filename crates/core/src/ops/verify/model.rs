//! What verify reports: one [`Check`] per thing checked, the checks of one run ([`Checks`]),
//! the [`VerifyReport`] they make (human + JSON) and the [`VerifyOptions`] a run takes. A leaf
//! of `verify`: every check module adds to [`Checks`] without importing its parent.

use std::collections::{BTreeMap, BTreeSet};

use super::error::VerifyError;
use crate::exit::ExitKind;
use crate::host::root::Root;
use crate::output::{escaped_keeping_lines, shown};
use crate::rocm::gate::GateError;

/// JSON schema version of [`VerifyReport`] (docs/verify-json.md).
pub const SCHEMA_VERSION: u32 = 1;

/// One check: a stable `name` (the kind of check), what it was about, pass/fail, why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    pub name: String,
    /// The package, file or soname the check is about ("" when it is about the whole install).
    pub subject: String,
    pub ok: bool,
    pub detail: String,
    /// The check could not be made (an external tool failed: `apt-cache policy`), so it fails
    /// without judging the runtime; when every failed check is one of these, exit 2.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub environment: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    pub schema: u32,
    /// The root checked (`/` on a host).
    pub root: String,
    /// True when every check passed and the gate did not skip the host.
    pub ok: bool,
    /// The skip record's reason when the version gate skipped this host (exit 3).
    pub skipped: Option<String>,
    pub checks: Vec<Check>,
    /// Stock symbols the installed libraries lack (`name@VERSION`, by SONAME): the marker says
    /// they were packaged with `--allow-missing-symbols`. A warning; the `abi` checks fail for
    /// each installed program that needs one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub missing_symbols: BTreeMap<String, Vec<String>>,
    /// Every other copy of our libraries found, who maps it, and the warnings (stale copies);
    /// None when there is nothing of ours to compare with (`ops::verify_shadow`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<crate::ops::verify_shadow::ShadowReport>,
}

impl VerifyReport {
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.ok)
    }
    /// How the run ends: None when every check passed; a check failed; only checks that
    /// could not be made (environment errors) failed (usage); the gate's skip record.
    pub fn exit_kind(&self) -> Option<ExitKind> {
        if self.skipped.is_some() {
            Some(ExitKind::Skipped)
        } else if self.ok {
            None
        } else if self.failed().all(|c| c.environment) {
            Some(ExitKind::Usage)
        } else {
            Some(ExitKind::CheckFailed)
        }
    }

    /// The process exit code of [`Self::exit_kind`].
    pub fn exit_code(&self) -> i32 {
        ExitKind::code_of(self.exit_kind())
    }

    /// The error the run ends with, None when every check passed.
    pub fn error(&self) -> Option<anyhow::Error> {
        let names = || {
            let names: BTreeSet<String> = self.failed().map(|c| c.name.clone()).collect();
            names.into_iter().collect()
        };
        Some(match self.exit_kind()? {
            ExitKind::Skipped => GateError::GateSkipped {
                reason: self.skipped.clone().unwrap_or_default(),
            }
            .into(),
            ExitKind::Usage => VerifyError::VerifyEnvironment { names: names() }.into(),
            ExitKind::CheckFailed => VerifyError::VerifyFailed {
                failed: self.failed().count(),
                names: names(),
            }
            .into(),
        })
    }
    /// Human-readable lines: one per check, then a summary. Subjects and details quote what
    /// was read from the root (marker fields, dpkg fields, file names, link targets), so each
    /// is shown escaped ([`shown`]), and the whole text goes through the safety net.
    pub fn to_human(&self) -> String {
        let mut s = String::new();
        if let Some(reason) = &self.skipped {
            s.push_str(&format!(
                "SKIPPED  the version gate skipped this host: {}\n",
                shown(reason)
            ));
            return escaped_keeping_lines(&s).into_owned();
        }
        for c in &self.checks {
            let word = if c.ok { "ok  " } else { "FAIL" };
            s.push_str(&format!("{word} {}\n", c.line()));
        }
        for w in self
            .shadow
            .iter()
            .flat_map(|r| r.warnings.iter().chain(&r.skipped))
        {
            s.push_str(&format!("warn {:<16} {}\n", "shadow", shown(w)));
        }
        for (soname, missing) in &self.missing_symbols {
            s.push_str(&format!(
                "warn {:<16} {soname}: lacks {} stock symbols (packaged with --allow-missing-symbols): {}\n",
                "missing-symbols",
                missing.len(),
                crate::ops::verify_abi::first_few(missing)
            ));
        }
        let failed = self.failed().count();
        if failed == 0 {
            s.push_str(&format!(
                "verify: all {} checks passed\n",
                self.checks.len()
            ));
        } else {
            let names: BTreeSet<&str> = self.failed().map(|c| c.name.as_str()).collect();
            s.push_str(&format!(
                "verify: {failed} of {} checks FAILED ({})\n",
                self.checks.len(),
                names.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        escaped_keeping_lines(&s).into_owned()
    }
}

impl Check {
    /// `name subject: detail` on one line, the subject and detail escaped ([`shown`]): what
    /// the text report and `verify --quiet` (the guard's apt output) print after ok/FAIL.
    pub fn line(&self) -> String {
        if self.subject.is_empty() {
            format!("{:<16} {}", self.name, shown(&self.detail))
        } else {
            format!(
                "{:<16} {}: {}",
                self.name,
                shown(&self.subject),
                shown(&self.detail)
            )
        }
    }
}

#[derive(Debug, Clone)]
pub struct VerifyOptions {
    pub root: Root,
    /// `LD_LIBRARY_PATH` to honour when resolving sonames (None = unset).
    pub ld_library_path: Option<String>,
    /// Ask apt whether the pins are effective (off only for unit tests on trees without apt).
    pub ask_apt: bool,
    /// The packages were built with `--no-backport-check` (the marker says so) and that is
    /// accepted: the backport-symbol check then passes without the symbol, saying why.
    pub accept_skipped_backport_check: bool,
    /// Programs or libraries (paths inside the root) the ABI check judges besides the ones it
    /// finds (`verify --consumer`).
    pub consumers: Vec<std::path::PathBuf>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            root: Root::system(),
            ld_library_path: std::env::var("LD_LIBRARY_PATH")
                .ok()
                .filter(|s| !s.is_empty()),
            ask_apt: true,
            accept_skipped_backport_check: false,
            consumers: Vec::new(),
        }
    }
}

/// The checks of one report, in the order made (verify's, and rollback's after its swap).
#[derive(Default)]
pub(crate) struct Checks(pub(crate) Vec<Check>);
impl Checks {
    pub(crate) fn add(&mut self, name: &str, subject: &str, ok: bool, detail: impl Into<String>) {
        self.0.push(Check {
            name: name.into(),
            subject: subject.into(),
            ok,
            detail: detail.into(),
            environment: false,
        });
    }

    /// A check that could not be made: failed, not judging the runtime ([`Check::environment`]).
    pub(super) fn add_environment_error(&mut self, name: &str, detail: impl Into<String>) {
        self.add(name, "", false, detail);
        if let Some(last) = self.0.last_mut() {
            last.environment = true;
        }
    }
}
