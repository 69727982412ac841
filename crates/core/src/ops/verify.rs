//! Checks → `VerifyReport` (human + JSON). Read-only. (Issue 5.)
//!
//! verify never changes the host: it reads the dpkg database, the files, the marker, apt's
//! view (`apt-cache policy`) and the loader cache (`ldconfig -p`). It never trusts
//! `dpkg --verify`'s exit code (0 on mismatches): it hashes the files itself.

mod error;
pub use error::VerifyError;
mod files;
mod libraries;
mod local_repo;
mod marker;
mod model;
mod packages;
mod pins;
pub(crate) use model::Checks;
pub use model::{Check, VerifyOptions, VerifyReport, SCHEMA_VERSION};

use std::collections::BTreeMap;

use crate::exit::usage;
use crate::host::apt;
use crate::host::layout::StateLayout;
use crate::host::loader;
use crate::host::root::FileKind;
use crate::host::status::StatusEntry;
use crate::rocm;

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
    if let Some(p) = crate::rocm::inplace::detect(root, &entries) {
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
        packages::check_nothing_installed(root, entries, &by_name, c);
        return (BTreeMap::new(), None);
    }
    let (lists, marker_path, marker) = marker::read_marker(root, family, &ours, c);
    packages::check_our_packages(root, &ours, marker.as_ref(), c);
    let Some(marker) = marker else {
        return (BTreeMap::new(), None);
    };
    packages::check_marker_packages(root, &marker, &by_name, c);

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
        files::check_files(root, &ours, &marker, marker_path.as_deref(), c);
        let policy = policy.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(usage("apt-cache policy thread panicked")))
        });
        let cache = cache
            .join()
            .unwrap_or_else(|_| Err(usage("ldconfig -p thread panicked")));
        pins::check_pins(opts, &marker, &by_name, policy, c);
        cache_entries = cache.as_ref().map(Vec::clone).unwrap_or_default();
        libraries::check_libraries(opts, &marker, &lists, cache, c);
    });
    libraries::check_loader_entry(root, &marker, c);
    // The local repository and the shadow search hold and judge the pair's files only.
    let pair = family.name == rocm::families::RUNTIME.name;
    if pair {
        local_repo::check_local_repo(root, &ours, c);
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

#[cfg(test)]
#[path = "verify_provenance_tests.rs"]
mod provenance_tests;
