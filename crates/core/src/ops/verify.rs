//! Checks → `VerifyReport` (human + JSON). Read-only. (Issue 5.)
//!
//! verify never changes the host: it reads the dpkg database, the files, the marker, apt's
//! view (`apt-cache policy`) and the loader cache (`ldconfig -p`). It never trusts
//! `dpkg --verify`'s exit code (0 on mismatches): it hashes the files itself.

mod error;
pub use error::VerifyError;

use crate::exit::usage;
use crate::ops::gate::GateError;
use crate::ops::ourdebs;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::exit::ExitKind;
use crate::host::apt;
use crate::host::excludes::PathFilters;
use crate::host::layout::StateLayout;
use crate::host::loader;
use crate::host::root::{unclean_in_root_path, FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::output::{escaped_keeping_lines, shown};
use crate::rocm::{self, Half};

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

/// How to remove a stock package that sits next to ours, for the solver apt uses here
/// (measured in bookworm/trixie chroots: `apt-get remove` and `rocm-pin install` repair under
/// both solvers; `apt-get -f install` only under the classic one).
fn stock_repair_hint(root: &Root, stock: &str, solver: apt::Solver) -> String {
    let common = format!(
        "remove it: `apt-get remove -y {stock}` (ours provide it, nothing else goes), or `{}`",
        ourdebs::reinstall_command(root)
    );
    match solver {
        apt::Solver::Classic => format!("{common} (or `apt-get -f install`)"),
        apt::Solver::Solver3 => format!(
            "{common}; not `apt-get -f install`: apt's 3.0 solver, the one apt uses here, fails on it"
        ),
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
    fn add_environment_error(&mut self, name: &str, detail: impl Into<String>) {
        self.add(name, "", false, detail);
        if let Some(last) = self.0.last_mut() {
            last.environment = true;
        }
    }
}

/// Run every check. Errors only for an unreadable environment (exit 2): a missing or corrupt
/// dpkg database. Everything about the install itself is a failed check, not an error.
pub fn verify(opts: &VerifyOptions) -> anyhow::Result<VerifyReport> {
    let root = &opts.root;
    let mut report = VerifyReport {
        schema: SCHEMA_VERSION,
        root: root.path().display().to_string(),
        ok: false,
        skipped: None,
        checks: Vec::new(),
        missing_symbols: BTreeMap::new(),
        shadow: None,
    };
    // The skip record is read inside the root, a regular file under its cap, or it is an
    // environment error (exit 2): a hostile link must not turn into "skipped" (exit 3).
    if let Some(reason) = root
        .read_optional(StateLayout::skip_record(), FileKind::StateRecord)
        .map_err(anyhow::Error::from)?
    {
        report.skipped = Some(reason.trim().to_string());
        return Ok(report);
    }
    // Depends too: the ABI check finds the dependants through it.
    let entries = crate::rocm::read_status_with_depends(root)?;
    let mut c = Checks(Vec::new());
    if let Some(p) = crate::ops::inplace::detect(root, &entries) {
        c.add(
            "in-place-patch",
            p.layout().package_prefix(),
            false,
            p.summary(),
        );
    }
    (report.missing_symbols, report.shadow) =
        run_checks(opts, &rocm::families::RUNTIME, &entries, &mut c);
    // Every other family with a package of ours installed (RCCL): its own checks, after one
    // line naming it (ops::verify_family).
    for family in crate::ops::install_family::installed_families(&entries) {
        if family.name != rocm::families::RUNTIME.name {
            let mut fc = Checks::default();
            run_checks(opts, family, &entries, &mut fc);
            let seen: Vec<_> = fc.0.iter().map(|k| (&*k.name, &*k.subject, k.ok)).collect();
            let (subject, ok, detail) = crate::ops::verify_family::summary(root, family, &seen);
            c.add("family", &subject, ok, detail);
            for mut k in fc.0 {
                k.detail = crate::ops::verify_family::retarget_fix(root, family, k.detail);
                c.0.push(k);
            }
        }
    }
    report.ok = c.0.iter().all(|c| c.ok) && !c.0.is_empty();
    report.checks = c.0;
    Ok(report)
}

/// Every check; returns the marker's missing stock symbols (for the report's warning) and
/// the shadow copies found.
fn run_checks(
    opts: &VerifyOptions,
    family: &'static rocm::PinnedFamily,
    entries: &[StatusEntry],
    c: &mut Checks,
) -> (
    BTreeMap<String, Vec<String>>,
    Option<crate::ops::verify_shadow::ShadowReport>,
) {
    let root = &opts.root;
    let by_name: BTreeMap<&str, &StatusEntry> =
        entries.iter().map(|e| (e.package.as_str(), e)).collect();
    let ours: Vec<&StatusEntry> = entries
        .iter()
        .filter(|e| rocm::is_ours_of(e, family) && e.has_files())
        .collect();
    // Without the pair, a host with another family of ours is judged by that family's checks.
    if ours.is_empty() && !crate::ops::install_family::installed_families(entries).is_empty() {
        return (BTreeMap::new(), None);
    }
    if ours.is_empty() {
        // No .deb of ours: the runtime may come from Python wheels in a venv (docs/wheels.md).
        let cache = loader::read_cache(root).unwrap_or_default();
        let ld_library_path = opts.ld_library_path.as_deref();
        if let Some((checks, shadow)) =
            crate::ops::verify_wheels::check(root, &opts.consumers, ld_library_path, &cache)
        {
            for (name, subject, ok, detail) in checks {
                c.add(name, &subject, ok, detail);
            }
            return (BTreeMap::new(), Some(shadow));
        }
        check_nothing_installed(root, entries, &by_name, c);
        return (BTreeMap::new(), None);
    }
    let (lists, marker_path, marker) = read_marker(root, family, &ours, c);
    check_our_packages(root, &ours, marker.as_ref(), c);
    let Some(marker) = marker else {
        return (BTreeMap::new(), None);
    };
    check_marker_packages(root, &marker, &by_name, c);

    // The two external commands (apt-cache policy, ldconfig -p) run while the files are
    // hashed: verify costs about the slower of them, not their sum.
    let names: Vec<String> = marker
        .replaced
        .iter()
        .map(|r| r.stock_name.clone())
        .collect();
    let mut cache_entries = Vec::new();
    std::thread::scope(|s| {
        let policy = opts.ask_apt.then(|| s.spawn(|| apt::policy(root, &names)));
        let cache = s.spawn(|| loader::read_cache(root));
        check_files(root, &ours, &marker, marker_path.as_deref(), c);
        let policy = policy.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(usage("apt-cache policy thread panicked")))
        });
        let cache = cache
            .join()
            .unwrap_or_else(|_| Err(usage("ldconfig -p thread panicked")));
        check_pins(opts, &marker, &by_name, policy, c);
        cache_entries = cache.as_ref().map(Vec::clone).unwrap_or_default();
        check_libraries(opts, &marker, &lists, cache, c);
    });
    check_loader_entry(root, &marker, c);
    // The local repository and the shadow search hold and judge the pair's files only.
    let pair = family.name == rocm::families::RUNTIME.name;
    if pair {
        check_local_repo(root, &ours, c);
    }
    if let Some((subject, ok, detail)) =
        crate::ops::verify_hold::check_release_hold(root, entries, &marker)
    {
        c.add("release-hold", &subject, ok, detail);
    }
    for (subject, ok, detail) in
        crate::ops::verify_abi::check_consumers(root, &opts.consumers, &marker, entries, &lists)
    {
        c.add("abi", &subject, ok, detail);
    }
    if !pair {
        return (marker.missing_symbols, None);
    }
    let (checks, shadow) = crate::ops::verify_shadow::check(
        root,
        &opts.consumers,
        opts.ld_library_path.as_deref(),
        &cache_entries,
        &marker,
        &lists,
    );
    for (subject, ok, detail) in checks {
        c.add("shadow", &subject, ok, detail);
    }
    (marker.missing_symbols, Some(shadow))
}

/// Our packages' file lists, and the provenance marker our HSA package ships (found through
/// them): `(lists, marker path, marker)`.
fn read_marker(
    root: &Root,
    family: &rocm::PinnedFamily,
    ours: &[&StatusEntry],
    c: &mut Checks,
) -> (
    BTreeMap<String, Vec<String>>,
    Option<String>,
    Option<rocm::Marker>,
) {
    let mut lists: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in ours {
        match status::package_list(root, &e.package, &e.architecture) {
            Ok(l) => {
                lists.insert(e.package.clone(), l);
            }
            Err(err) => c.add("packages", &e.package, false, format!("{err:#}")),
        }
    }
    let marker_path = lists
        .values()
        .flatten()
        .find(|p| crate::ops::family_marker::is_marker_of(family, p))
        .cloned();
    let marker = match &marker_path {
        None => {
            c.add(
                "marker",
                "",
                false,
                format!(
                    "no installed package ships the provenance marker {}; reinstall ours: `{}`",
                    ourdebs::marker_path_shown(ours),
                    ourdebs::reinstall_command(root)
                ),
            );
            None
        }
        Some(p) => match root
            .read_file(p, FileKind::Marker)
            .map_err(anyhow::Error::from)
            .and_then(|b| serde_json::from_slice::<rocm::Marker>(&b).map_err(Into::into))
            .and_then(|m| unclean_marker_path(&m).map_or(Ok(m), Err))
        {
            Ok(m) => {
                c.add("marker", p, true, marker_summary(&m));
                Some(m)
            }
            Err(e) => {
                c.add(
                    "marker",
                    p,
                    false,
                    format!(
                        "missing or unreadable: {e}; reinstall ours: `{}`",
                        ourdebs::reinstall_command(root)
                    ),
                );
                None
            }
        },
    };
    (lists, marker_path, marker)
}

/// Each of ours installed (ii), Protected, at the marker's version, its commit and patch
/// fields agreeing with the marker.
fn check_our_packages(
    root: &Root,
    ours: &[&StatusEntry],
    marker: Option<&rocm::Marker>,
    c: &mut Checks,
) {
    for e in ours {
        let commit = e
            .extra
            .get(rocm::COMMIT_FIELD)
            .map(String::as_str)
            .unwrap_or("");
        let mut problems = Vec::new();
        if !e.is_installed_ok() {
            problems.push(format!("dpkg state {} ({}), not ii", e.abbrev(), e.status));
        }
        if !e.protected {
            problems.push("control lacks Protected: yes".to_string());
        }
        if let Some(m) = marker {
            match m.replaced.iter().find(|r| r.package == e.package) {
                Some(r) if r.version != e.version => problems.push(format!(
                    "version {} installed, marker expects {}",
                    e.version, r.version
                )),
                Some(_) => {}
                None => problems.push(format!(
                    "not named in the marker (a package of another pin? marker commit {})",
                    m.commit
                )),
            }
        }
        c.add(
            "packages",
            &e.package,
            problems.is_empty(),
            if problems.is_empty() {
                format!("ii {} Protected: yes", e.version)
            } else {
                format!(
                    "{}; reinstall ours: `{}`",
                    problems.join("; "),
                    ourdebs::reinstall_command(root)
                )
            },
        );
        if let Some(m) = marker {
            check_patches_field(e, m, c);
            let ok = commit == m.commit;
            c.add(
                "marker-commit",
                &e.package,
                ok,
                if ok {
                    format!("{} = marker commit", rocm::COMMIT_FIELD)
                } else {
                    format!(
                        "{} {commit} but the marker says {}",
                        rocm::COMMIT_FIELD,
                        m.commit
                    )
                },
            );
        }
    }
}

/// Every package the marker names is installed, and no stock package it replaces is.
fn check_marker_packages(
    root: &Root,
    marker: &rocm::Marker,
    by_name: &BTreeMap<&str, &StatusEntry>,
    c: &mut Checks,
) {
    for r in &marker.replaced {
        if !by_name.contains_key(r.package.as_str()) {
            c.add(
                "packages",
                &r.package,
                false,
                format!(
                    "named in the marker but not installed; install {}_{}",
                    r.package, r.version
                ),
            );
        }
    }

    // Stock real packages not installed.
    for r in &marker.replaced {
        match by_name.get(r.stock_name.as_str()) {
            Some(e) if e.has_files() => {
                let apt_version = by_name.get("apt").map(|a| a.version.as_str());
                c.add(
                    "stock-absent",
                    &r.stock_name,
                    false,
                    format!(
                        "stock {} {} is installed ({}) next to ours; {}",
                        e.package,
                        e.version,
                        e.abbrev(),
                        stock_repair_hint(root, &e.package, apt::solver(root, apt_version))
                    ),
                )
            }
            _ => c.add(
                "stock-absent",
                &r.stock_name,
                true,
                format!("not installed (provided by {})", r.package),
            ),
        }
    }
}

/// Nothing of ours is installed. Say first whether there is a ROCm to replace at all: on a host
/// without one, "run `rocm-pin install`" would only lead to install's own refusal.
fn check_nothing_installed(
    root: &Root,
    entries: &[StatusEntry],
    by_name: &BTreeMap<&str, &StatusEntry>,
    c: &mut Checks,
) {
    let found = crate::rocm::stock_runtime::discover(root, entries);
    let stock_installed: Vec<&str> = [Half::Hsa, Half::Hip]
        .into_iter()
        .map(rocm::stock_base_name)
        .filter(|name| by_name.get(name).is_some_and(|e| e.has_files()))
        .collect();
    let rocm_path = rocm::resolve_rocm_path(root, Path::new(rocm::DEFAULT_ROCM_PATH));
    if rocm_path.is_err() && stock_installed.is_empty() && found.runtimes.is_empty() {
        c.add(
            "rocm",
            "",
            false,
            format!(
                "no ROCm installation found: {} does not resolve under {} and neither {}, {} nor any other package shipping a ROCm runtime library (by SONAME) is installed \
                 (dpkg database). rocm-pin replaces the runtime of an installed ROCm {}: run this where ROCm \
                 is installed (the ROCm image, or `--root` pointing at its tree), or install ROCm first",
                rocm::DEFAULT_ROCM_PATH,
                root.path().display(),
                rocm::stock_base_name(Half::Hsa),
                rocm::stock_base_name(Half::Hip),
                rocm::TARGET_ROCM_VERSION,
            ),
        );
        return;
    }
    c.add(
        "packages",
        "",
        false,
        format!(
            "no rocm-pin replacement package is installed (no package with {} in dpkg status); {}",
            rocm::COMMIT_FIELD,
            crate::rocm::stock_runtime::what_to_do(&found)
        ),
    );
}

fn check_pins(
    opts: &VerifyOptions,
    marker: &rocm::Marker,
    by_name: &BTreeMap<&str, &StatusEntry>,
    policy: Option<anyhow::Result<Vec<apt::Policy>>>,
    c: &mut Checks,
) {
    check_pin_files(&opts.root, marker, by_name, c);
    if let Some(policy) = policy {
        check_pins_effective(marker, policy, c);
    }
}

/// Each pin file our packages ship pins its stock package below 0.
fn check_pin_files(
    root: &Root,
    marker: &rocm::Marker,
    by_name: &BTreeMap<&str, &StatusEntry>,
    c: &mut Checks,
) {
    for r in &marker.replaced {
        let pin = StateLayout::pin_file(&r.package);
        let res = root
            .read_to_string(&pin, FileKind::Config)
            .map_err(anyhow::Error::from)
            .and_then(|t| apt::parse_preferences(&t));
        match res {
            Ok(stanzas) => {
                let ok = stanzas.iter().any(|s| {
                    s.packages.iter().any(|p| p == &r.stock_name) && s.priority < 0
                });
                let owned = by_name
                    .get(r.package.as_str())
                    .is_some_and(|e| e.conffiles.iter().any(|(p, _)| Path::new(p) == pin));
                c.add(
                    "pin-file",
                    &pin.display().to_string(),
                    ok,
                    if ok {
                        format!(
                            "pins {} below 0{}",
                            r.stock_name,
                            if owned {
                                format!(" (conffile of {})", r.package)
                            } else {
                                String::new()
                            }
                        )
                    } else {
                        format!("does not pin {} to a negative priority", r.stock_name)
                    },
                );
            }
            Err(e) => c.add(
                "pin-file",
                &pin.display().to_string(),
                false,
                format!(
                    "missing or unreadable ({e}); restore it with `{}` (reinstalls {} with --force-confmiss)",
                    ourdebs::reinstall_command(root),
                    r.package
                ),
            ),
        }
    }
}

/// Effective: apt itself must see no candidate for the stock names.
fn check_pins_effective(
    marker: &rocm::Marker,
    policy: anyhow::Result<Vec<apt::Policy>>,
    c: &mut Checks,
) {
    let names: Vec<String> = marker
        .replaced
        .iter()
        .map(|r| r.stock_name.clone())
        .collect();
    match policy {
        Err(e) => c.add_environment_error("pin-effective", format!("{e:#}")),
        Ok(pols) => {
            for n in &names {
                match pols.iter().find(|p| &p.package == n) {
                    None => c.add(
                        "pin-effective",
                        n,
                        true,
                        "apt knows no version of it in any source",
                    ),
                    Some(p) if p.is_pinned_away() => c.add(
                        "pin-effective",
                        n,
                        true,
                        if p.versions.is_empty() {
                            "no candidate (no version in any configured source)".to_string()
                        } else {
                            format!(
                                "no candidate; {} version(s) at priority -1 in apt's view",
                                p.versions.len()
                            )
                        },
                    ),
                    Some(p) => c.add(
                        "pin-effective",
                        n,
                        false,
                        format!(
                            "apt would install {} (versions: {}); the pin in {} is not in effect",
                            p.candidate.as_deref().unwrap_or("(none)"),
                            p.versions
                                .iter()
                                .map(|(v, pr)| format!("{v} @{pr}"))
                                .collect::<Vec<_>>()
                                .join(", "),
                            StateLayout::pin_file(&format!("{n}-*")).display()
                        ),
                    ),
                }
            }
        }
    }
}

/// md5 (and sha256 when `want_sha` ) of a file, read once.
fn hash_file(f: std::fs::File, want_sha: bool) -> std::io::Result<(String, Option<String>, u64)> {
    let d = crate::digest::digests_reader(f, want_sha)?;
    Ok((d.md5, d.sha256, d.size))
}

fn check_files(
    root: &Root,
    ours: &[&StatusEntry],
    marker: &rocm::Marker,
    marker_path: Option<&str>,
    c: &mut Checks,
) {
    let filters = match PathFilters::load(root) {
        Ok(f) => f,
        Err(e) => {
            c.add("files", "", false, format!("{e:#}"));
            return;
        }
    };
    let expected = expected_files(root, ours, marker, c);
    let mut checked = 0usize;
    let mut excluded = 0usize;
    let mut bytes = 0u64;
    let mut bad = 0usize;
    for (path, (md5, pkg)) in &expected {
        if Some(path.as_str()) == marker_path {
            continue;
        }
        let sha_expected = marker.files.get(path);
        match check_file(root, &filters, path, md5.as_deref(), pkg, sha_expected, c) {
            FileCheck::Excluded => excluded += 1,
            FileCheck::Unreadable => bad += 1,
            FileCheck::Hashed { size, matches } => {
                checked += 1;
                bytes += size;
                if !matches {
                    bad += 1;
                }
            }
        }
    }
    if bad == 0 {
        c.add(
            "files",
            "",
            true,
            format!(
                "{checked} files ({bytes} bytes) match dpkg's md5sums and the marker's sha256{}",
                if excluded > 0 {
                    format!("; {excluded} absent by dpkg path-exclude")
                } else {
                    String::new()
                }
            ),
        );
    }
}

/// Every file to check: path → (md5 from dpkg, owning package), then the marker's files.
fn expected_files(
    root: &Root,
    ours: &[&StatusEntry],
    marker: &rocm::Marker,
    c: &mut Checks,
) -> BTreeMap<String, (Option<String>, String)> {
    let mut expected: BTreeMap<String, (Option<String>, String)> = BTreeMap::new();
    for e in ours {
        match status::package_md5sums(root, &e.package, &e.architecture) {
            Ok(Some(sums)) => {
                for (p, m) in sums {
                    expected.insert(p, (Some(m), e.package.clone()));
                }
            }
            Ok(None) => c.add(
                "files",
                &e.package,
                false,
                format!(
                    "dpkg has no md5sums for {} (var/lib/dpkg/info/{}.md5sums)",
                    e.package, e.package
                ),
            ),
            Err(err) => c.add("files", &e.package, false, format!("{err:#}")),
        }
    }
    for p in marker.files.keys() {
        expected
            .entry(p.clone())
            .or_insert((None, String::from("marker")));
    }
    expected
}

/// What the check of one file found (a failure is added to the checks as it is found).
enum FileCheck {
    /// Absent by a dpkg `path-exclude`.
    Excluded,
    /// Missing, not a regular file, or unreadable.
    Unreadable,
    /// Hashed: its size, and whether both sums match.
    Hashed { size: u64, matches: bool },
}

/// One file against dpkg's md5 and the marker's sha256.
fn check_file(
    root: &Root,
    filters: &PathFilters,
    path: &str,
    md5: Option<&str>,
    pkg: &str,
    sha_expected: Option<&String>,
    c: &mut Checks,
) -> FileCheck {
    let meta = root.symlink_metadata(path);
    if filters.is_excluded(path) && meta.is_err() {
        return FileCheck::Excluded;
    }
    let fail = |c: &mut Checks, why: String| {
        c.add("files", path, false, format!("{why} (package {pkg})"));
    };
    match meta {
        Err(_) => {
            fail(
                c,
                format!(
                    "missing; reinstall ours: `{}`",
                    ourdebs::reinstall_command(root)
                ),
            );
            return FileCheck::Unreadable;
        }
        Ok(m) if !m.is_file() => {
            fail(c, "not a regular file".into());
            return FileCheck::Unreadable;
        }
        Ok(_) => {}
    }
    let hashed = root
        .open_regular(path, FileKind::PackagedFile)
        .map_err(|e| e.to_string())
        .and_then(|(f, _)| hash_file(f, sha_expected.is_some()).map_err(|e| e.to_string()));
    let (got_md5, got_sha, size) = match hashed {
        Err(e) => {
            fail(c, format!("cannot read: {e}"));
            return FileCheck::Unreadable;
        }
        Ok(hashed) => hashed,
    };
    if let Some(m) = md5 {
        if got_md5 != m {
            fail(c, format!("md5 {got_md5} differs from dpkg's {m}"));
            return FileCheck::Hashed {
                size,
                matches: false,
            };
        }
    }
    if let (Some(want), Some(got)) = (sha_expected, got_sha) {
        if !want.eq_ignore_ascii_case(&got) {
            fail(c, format!("sha256 {got} differs from the marker's {want}"));
            return FileCheck::Hashed {
                size,
                matches: false,
            };
        }
    }
    FileCheck::Hashed {
        size,
        matches: true,
    }
}

fn identity(root: &Root, path: &str) -> Option<(u64, u64)> {
    root.metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// An ELF file inside the root, opened without leaving it.
fn read_elf_in_root(root: &Root, path: &str) -> anyhow::Result<crate::elf::ElfInfo> {
    let (file, _) = root.open_regular(path, FileKind::PackagedFile)?;
    crate::elf::read_elf_file(&file, Path::new(path))
}

/// The first path in the marker (a library, an alias, a `files` key) that is not a clean
/// absolute in-root path, as the error that fails the marker check.
fn unclean_marker_path(m: &rocm::Marker) -> Option<anyhow::Error> {
    let paths = m
        .libraries
        .iter()
        .flat_map(|l| std::iter::once(&l.path).chain(&l.aliases))
        .chain(m.files.keys());
    paths.into_iter().find_map(|p| {
        unclean_in_root_path(p).map(|why| {
            usage(format!(
                "{why}: {p:?} in the marker; refused (a hostile marker)"
            ))
        })
    })
}

/// The marker line of the report: commit, flavor, and the patch series when there is one.
fn marker_summary(m: &rocm::Marker) -> String {
    let mut text = format!("commit {} flavor {}", m.commit, m.flavor);
    if !m.patches.is_empty() {
        let names: Vec<String> = m
            .patches
            .iter()
            // By characters: the marker is the root's, its "sha256" any text (a cut by bytes
            // panicked inside a multi-byte character).
            .map(|p| {
                let short: String = p.sha256.chars().take(12).collect();
                format!("{} ({short})", p.name)
            })
            .collect();
        text.push_str(&format!(" + patches {}", names.join(", ")));
    }
    if m.backport_check_skipped {
        text.push_str("; built with --no-backport-check");
    }
    text
}

/// Each package's patch-series field must say what the marker says (both absent is fine).
fn check_patches_field(e: &StatusEntry, m: &rocm::Marker, c: &mut Checks) {
    let field = e.extra.get(rocm::PATCHES_FIELD).cloned();
    let want = rocm::patches_field(&m.patches);
    if field.is_none() && want.is_none() {
        return;
    }
    let ok = field == want;
    c.add(
        "patches",
        &e.package,
        ok,
        if ok {
            format!("{} = marker series", rocm::PATCHES_FIELD)
        } else {
            format!(
                "{} is {:?} but the marker says {:?}; reinstall both replacement packages",
                rocm::PATCHES_FIELD,
                field.unwrap_or_default(),
                want.unwrap_or_default()
            )
        },
    );
}

/// The HSA library lacks the backport symbol: a failure, unless the build recorded
/// `--no-backport-check` and the caller accepted that.
fn missing_backport_symbol(opts: &VerifyOptions, marker: &rocm::Marker) -> (bool, String) {
    let base = format!(
        "does not export {} (a stock or unpatched ROCr)",
        rocm::BACKPORT_SYMBOL
    );
    match (
        marker.backport_check_skipped,
        opts.accept_skipped_backport_check,
    ) {
        (true, true) => (
            true,
            format!(
                "{base}; the build skipped the backport check (--no-backport-check, recorded in \
                 the marker) and --accept-skipped-backport-check accepts that"
            ),
        ),
        (true, false) => (
            false,
            format!(
                "{base}; the build skipped the backport check (--no-backport-check, recorded in \
                 the marker): pass --accept-skipped-backport-check if that is intended"
            ),
        ),
        (false, _) => (false, base),
    }
}

/// Each library of the marker: its stock-name aliases, its soname link, the backport symbol
/// (HSA half), which file ld.so opens; then every symlink our packages ship.
fn check_libraries(
    opts: &VerifyOptions,
    marker: &rocm::Marker,
    lists: &BTreeMap<String, Vec<String>>,
    cache: anyhow::Result<Vec<loader::CacheEntry>>,
    c: &mut Checks,
) {
    let root = &opts.root;
    if let Err(e) = &cache {
        c.add("loader", "", false, format!("{e:#}"));
    }
    for lib in &marker.libraries {
        let real = identity(root, &lib.path);
        check_aliases(root, lib, real, c);
        check_soname_link(root, lib, real, c);
        check_backport_symbol(opts, marker, lib, c);
        if let Ok(cache) = &cache {
            check_loader_opens(opts, lib, real, cache, c);
        }
    }
    check_symlinks_resolve(root, lists, c);
}

/// Aliases: the stock versioned names must be the same inode as our file (`real`).
fn check_aliases(root: &Root, lib: &rocm::MarkerLibrary, real: Option<(u64, u64)>, c: &mut Checks) {
    for a in &lib.aliases {
        let ok = real.is_some() && identity(root, a) == real;
        let same_path = root
            .symlink_metadata(a)
            .map(|m| !m.file_type().is_symlink())
            .unwrap_or(false);
        c.add(
            "aliases",
            a,
            ok && same_path,
            if ok && same_path {
                format!("hard link of {}", lib.path)
            } else if real.is_none() {
                format!("{} is missing", lib.path)
            } else {
                format!(
                    "not the same inode as {} (a copy or a stock file); reinstall {}",
                    lib.path, lib.package
                )
            },
        );
    }
}

/// Soname link resolves to our file, non-empty, with the right SONAME.
fn check_soname_link(
    root: &Root,
    lib: &rocm::MarkerLibrary,
    real: Option<(u64, u64)>,
    c: &mut Checks,
) {
    let dir = Path::new(&lib.path)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/".into());
    let link = format!("{dir}/{}", lib.soname);
    let target = match root.canonical(&link) {
        Err(e) => return c.add("sonames", &link, false, format!("{e:#}")),
        Ok(target) => target,
    };
    let meta = root.metadata(&target);
    let size = meta.as_ref().map(|m| m.len()).unwrap_or(0);
    let same = identity(root, &target) == real && real.is_some();
    let elf_soname = read_elf_in_root(root, &target)
        .map(|i| i.soname)
        .map_err(|e| format!("{e:#}"));
    let (ok, detail) = if size == 0 {
        (false, format!("resolves to {target}, which is empty"))
    } else if !same {
        (
            false,
            format!("resolves to {target}, not to our {}", lib.path),
        )
    } else {
        match elf_soname {
            Ok(Some(s)) if s == lib.soname => {
                (true, format!("→ {target} (SONAME {s}, {size} bytes)"))
            }
            Ok(other) => (
                false,
                format!(
                    "→ {target} whose SONAME is {}, expected {}",
                    other.as_deref().unwrap_or("(none)"),
                    lib.soname
                ),
            ),
            Err(e) => (false, format!("→ {target}: not a readable ELF: {e}")),
        }
    };
    c.add("sonames", &link, ok, detail);
}

/// The HSA half must export the backport symbol (other libraries: nothing to check).
fn check_backport_symbol(
    opts: &VerifyOptions,
    marker: &rocm::Marker,
    lib: &rocm::MarkerLibrary,
    c: &mut Checks,
) {
    let file_name = Path::new(&lib.path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    if rocm::family_of(&file_name).is_none_or(|f| f.half != rocm::Half::Hsa) {
        return;
    }
    let res = read_elf_in_root(&opts.root, &lib.path);
    let (ok, detail) = match res {
        Ok(info) => match info.export(rocm::BACKPORT_SYMBOL) {
            Some(s) => (
                true,
                format!(
                    "exports {}{}",
                    s.name,
                    s.version
                        .as_ref()
                        .map(|v| format!("@{}{v}", if s.default { "@" } else { "" }))
                        .unwrap_or_default()
                ),
            ),
            None => missing_backport_symbol(opts, marker),
        },
        Err(e) => (false, format!("not a readable ELF: {e:#}")),
    };
    c.add("backport-symbol", &lib.path, ok, detail);
}

/// Which file does ld.so open for this soname? It must be ours (`real`).
fn check_loader_opens(
    opts: &VerifyOptions,
    lib: &rocm::MarkerLibrary,
    real: Option<(u64, u64)>,
    cache: &[loader::CacheEntry],
    c: &mut Checks,
) {
    let root = &opts.root;
    let res = loader::resolve(root, &lib.soname, cache, opts.ld_library_path.as_deref());
    let (ok, detail) = match &res.winner {
        None => (
            false,
            format!(
                "ld.so finds no {} (not in the ld.so cache: is {} missing, or ldconfig not run?)",
                lib.soname,
                StateLayout::loader_entry(&lib.package).display()
            ),
        ),
        Some(w) => {
            let ours = identity(root, w) == real && real.is_some();
            let via = match res.via {
                Some(loader::Via::LdLibraryPath) => "LD_LIBRARY_PATH",
                Some(loader::Via::Cache) => "ld.so.cache",
                _ => "default directory",
            };
            let others = if res.others.is_empty() {
                String::new()
            } else {
                format!("; also found: {}", res.others.join(", "))
            };
            if ours {
                (true, format!("ld.so opens {w} (via {via}) = ours{others}"))
            } else {
                (
                    false,
                    format!(
                        "ld.so opens {w} (via {via}), NOT our {}{others}; remove that library or its ld.so.conf.d entry, then run ldconfig",
                        lib.path
                    ),
                )
            }
        }
    };
    c.add("loader", &lib.soname, ok, detail);
}

/// Every symlink our packages ship must resolve (none dangling).
fn check_symlinks_resolve(root: &Root, lists: &BTreeMap<String, Vec<String>>, c: &mut Checks) {
    let mut dangling = Vec::new();
    let mut links = 0;
    for list in lists.values() {
        for p in list {
            // The entry itself, its directories resolved inside the root: a link on the way
            // (`/hostlink -> /`) never makes this an lstat of a host path.
            if unclean_in_root_path(p).is_none()
                && root
                    .symlink_metadata(p)
                    .is_ok_and(|m| m.file_type().is_symlink())
            {
                links += 1;
                if let Err(e) = root.canonical(p) {
                    dangling.push(format!("{e:#}"));
                }
            }
        }
    }
    c.add(
        "symlinks",
        "",
        dangling.is_empty(),
        if dangling.is_empty() {
            format!("{links} symlinks of our packages resolve")
        } else {
            dangling.join("; ")
        },
    );
}

fn check_loader_entry(root: &Root, marker: &rocm::Marker, c: &mut Checks) {
    // The family's first library (the pair's HSA one) names the entry.
    let Some(hsa) = crate::ops::install_family::loader_library(marker) else {
        c.add("loader-entry", "", false, "the marker names no HSA library");
        return;
    };
    let dir = Path::new(&hsa.path)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let layout = rocm::RuntimeLayout::of_library_dir(&dir);
    if layout.spec().loader == rocm::LoaderRegistration::LdconfigTrigger {
        // Debian's flavour: the multiarch directory is the loader's own; the `loader` checks
        // above show ld.so opening ours, and no package of ours ships an entry to check.
        c.add(
            "loader-entry",
            &dir,
            true,
            format!(
                "{dir} is on the loader's default path ({}: no ld.so.conf.d entry, the ldconfig trigger)",
                layout.spec().title
            ),
        );
        return;
    }
    let entry = StateLayout::loader_entry(&hsa.package);
    let (ok, detail) = match loader::loader_entry_lists(root, &entry, &dir) {
        Ok(true) => (true, format!("lists {dir}")),
        Ok(false) => (false, format!("does not list {dir}")),
        Err(e) => (
            false,
            format!(
                "{e:#}; run `{}` again (writes it and runs ldconfig)",
                ourdebs::reinstall_command(root)
            ),
        ),
    };
    c.add("loader-entry", &entry.display().to_string(), ok, detail);
}

/// The local repository (`--local-repo`): when present it must carry exactly the installed
/// versions of our packages, be signed and not be writable by group or others.
fn check_local_repo(root: &Root, ours: &[&StatusEntry], c: &mut Checks) {
    let repo_in_root = StateLayout::local_repo();
    if !root.exists(&repo_in_root) {
        return;
    }
    let subject = repo_in_root.display().to_string();
    let mut problems = Vec::new();
    match root.read_to_string(repo_in_root.join("Packages"), FileKind::PackageIndex) {
        Err(e) => problems.push(format!("Packages unreadable: {e}")),
        Ok(text) => match status::parse_status(&text, &[]) {
            Err(e) => problems.push(format!("Packages is malformed: {e:#}")),
            Ok(listed) => {
                for e in ours {
                    if !listed
                        .iter()
                        .any(|p| p.package == e.package && p.version == e.version)
                    {
                        problems.push(format!("Packages lacks {} {}", e.package, e.version));
                    }
                }
            }
        },
    }
    match root.read_to_string(repo_in_root.join("Release"), FileKind::Config) {
        Err(e) => problems.push(format!("Release unreadable: {e}")),
        Ok(t) => {
            if !t.lines().any(|l| l.trim() == "Origin: rocm-pin") {
                problems.push("Release lacks Origin: rocm-pin".into());
            }
        }
    }
    if !root.exists(repo_in_root.join("InRelease"))
        && !root.exists(repo_in_root.join("Release.gpg"))
    {
        problems.push("not signed (no InRelease or Release.gpg)".into());
    }
    writable_entries(root, &repo_in_root, &mut problems);
    c.add(
        "local-repo",
        &subject,
        problems.is_empty(),
        if problems.is_empty() {
            "matches the installed packages, signed, not group/other-writable".to_string()
        } else {
            problems.join("; ")
        },
    );
}

/// The most entries the local repository's permission walk looks at: a repository rocm-pin
/// made holds a dozen; a root with more is refused by name, not walked for minutes.
const LOCAL_REPO_ENTRIES: usize = 10_000;
/// Its deepest directory (`pool/main/<letter>/<source>/` is 4).
const LOCAL_REPO_DEPTH: usize = 8;

/// Every entry of the local repository `dir` that is group/other-writable (whoever can write
/// there chooses what apt installs), walked inside the root: each directory is listed and
/// each entry `lstat`ed through the resolver, no link is followed, at most
/// [`LOCAL_REPO_ENTRIES`] entries and [`LOCAL_REPO_DEPTH`] levels.
fn writable_entries(root: &Root, dir: &Path, problems: &mut Vec<String>) {
    let mut left = LOCAL_REPO_ENTRIES;
    let mut pending = vec![(dir.to_path_buf(), 0)];
    while let Some((path, depth)) = pending.pop() {
        let Ok(m) = root.symlink_metadata(&path) else {
            continue;
        };
        if m.file_type().is_symlink() {
            continue;
        }
        if m.mode() & 0o022 != 0 {
            problems.push(format!(
                "{} is group/other-writable ({:o})",
                path.display(),
                m.mode() & 0o7777
            ));
        }
        if !m.is_dir() {
            continue;
        }
        if depth == LOCAL_REPO_DEPTH {
            problems.push(format!(
                "{} is nested deeper than {LOCAL_REPO_DEPTH} levels; not checked further",
                path.display()
            ));
            continue;
        }
        match root.read_dir_names(&path, left) {
            Ok(names) => {
                left -= names.len();
                pending.extend(names.into_iter().map(|n| (path.join(n), depth + 1)));
            }
            Err(e) => {
                problems.push(format!("cannot check its permissions: {e}"));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stock_repair_hint_fits_the_solver() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let classic = stock_repair_hint(&root, "hsa-rocr", apt::Solver::Classic);
        let solver3 = stock_repair_hint(&root, "hsa-rocr", apt::Solver::Solver3);
        for h in [&classic, &solver3] {
            assert!(h.contains("`apt-get remove -y hsa-rocr`"), "{h}");
            // Nothing kept: the .debs must be given.
            assert!(h.contains("`rocm-pin install <our .debs"), "{h}");
        }
        assert!(classic.contains("(or `apt-get -f install`)"), "{classic}");
        assert!(solver3.contains("not `apt-get -f install`"), "{solver3}");
        // Kept by an earlier install: the repair runs as printed.
        let kept = root.host_path(StateLayout::ours_dir());
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join("hsa-rocr-pinned_1_amd64.deb"), b"").unwrap();
        let h = stock_repair_hint(&root, "hsa-rocr", apt::Solver::Classic);
        assert!(h.contains("or `rocm-pin install`"), "{h}");
    }

    #[test]
    fn a_malformed_local_repo_index_is_called_malformed_not_lacking() {
        let root = tempfile::tempdir().unwrap();
        let repo = Root::new(root.path()).host_path(StateLayout::local_repo());
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join("Packages"), " continuation without a paragraph\n").unwrap();
        std::fs::write(repo.join("Release"), "Origin: rocm-pin\n").unwrap();
        std::fs::write(repo.join("InRelease"), "signed\n").unwrap();
        let ours = StatusEntry {
            package: "hsa-rocr-pinned".into(),
            version: "1".into(),
            ..Default::default()
        };
        let mut c = Checks(Vec::new());
        check_local_repo(&Root::new(root.path()), &[&ours], &mut c);
        let detail = &c.0.iter().find(|k| !k.ok).expect("a failed check").detail;
        assert!(detail.contains("Packages is malformed"), "{detail}");
        assert!(!detail.contains("lacks"), "{detail}");
    }
}

#[cfg(test)]
#[path = "verify_provenance_tests.rs"]
mod provenance_tests;
