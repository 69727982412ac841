//! verify on a root whose runtime comes from Python wheels (issue 33): no replacement .deb is
//! installed, but a virtual environment holds `rocm-sdk-core` (the layout of docs/wheels.md:
//! an SGLang- or vLLM-shaped image with `/opt/rocm -> site-packages/_rocm_sdk_devel`).
//!
//! - every environment with a `rocm-sdk-core` is judged: ours → its pin must be in force
//!   ([`crate::ops::wheels::check_pin`], the `verify --venv` checks, read inside the root);
//!   stock → a failure naming the `package --wheels` / `install --venv` commands;
//! - the shadow search ([`crate::host::shadow`]) then finds every copy of the pair in the root
//!   and who ld.so maps it for. The patched build is what our `rocm-sdk-core`'s RECORD hashes
//!   say; a copy a consumer maps that is not it fails, naming the consumer (torch's libraries
//!   map `_rocm_sdk_core` through their DT_RPATH, whatever `/opt/rocm` holds).

use std::collections::BTreeSet;

use crate::host::dirwalk::Budget;
use crate::host::loader::CacheEntry;
use crate::host::root::{FileKind, Root};
use crate::host::shadow::{self, Mapping, Scope, DEFAULT_SEARCH};
use crate::image::limits::ImageLimits;
use crate::ops::verify_shadow::{ShadowCopy, ShadowReport};
use crate::ops::wheels::{check_pin, PinLayout};
use crate::rocm::wheels::{discover_venv, InstalledDist, CORE_DIST, CORE_LIB_DIR};
use crate::wheel::RecordEntry;

/// One check: (name, subject, pass, detail).
pub type WheelCheck = (&'static str, String, bool, String);

/// None when no environment in the root holds `rocm-sdk-core` (the caller then reports that
/// nothing of ours is installed); otherwise the checks and the shadow report.
pub fn check(
    root: &Root,
    consumers: &[std::path::PathBuf],
    ld_library_path: Option<&str>,
    cache: &[CacheEntry],
) -> Option<(Vec<WheelCheck>, ShadowReport)> {
    let limit = ImageLimits::default().entries;
    let mut budget = Budget::new(limit);
    let mut checks = Vec::new();
    // The RECORD hashes of our cores' runtime libraries: what "the patched build" is.
    let mut ours: BTreeSet<String> = BTreeSet::new();
    // The SONAME files the cores hold (TheRock's runtime wheels ship nothing else).
    let mut sonames: BTreeSet<String> = BTreeSet::new();
    let mut any = false;
    for env in shadow::environments(root, &mut budget) {
        let Ok(found) = discover_venv(root, std::path::Path::new(&env)) else {
            continue;
        };
        let Some(core) = &found.core else { continue };
        any = true;
        sonames.extend(
            core.runtime_libraries(CORE_LIB_DIR)
                .into_iter()
                .filter_map(|(e, _)| e.path.rsplit_once('/').map(|(_, name)| name.to_string())),
        );
        if core.is_ours() {
            ours.extend(
                core.runtime_libraries(CORE_LIB_DIR)
                    .into_iter()
                    .map(|(e, _)| e.hash.clone()),
            );
            checks.extend(pin_checks(root, &env));
        } else {
            checks.push(("venv", env.clone(), false, stock_core(&env, core)));
        }
    }
    if !any {
        return None;
    }
    let (shadow_checks, report) =
        shadow_check(root, &sonames, consumers, ld_library_path, cache, &ours);
    checks.extend(shadow_checks);
    Some((checks, report))
}

/// The `verify --venv` checks of the environment at in-root path `env`.
fn pin_checks(root: &Root, env: &str) -> Vec<WheelCheck> {
    let layout = PinLayout { venv: env.into() };
    match check_pin(root, std::path::Path::new(env), &layout) {
        Err(e) => vec![("venv", env.to_string(), false, format!("{e:#}"))],
        Ok(r) if r.problems.is_empty() => vec![(
            "venv",
            env.to_string(),
            true,
            format!(
                "{CORE_DIST} {} is ours and its pin is in force for pip and uv ({})",
                r.pinned_version.unwrap_or_default(),
                r.installed.join(", ")
            ),
        )],
        Ok(r) => r
            .problems
            .into_iter()
            .map(|p| {
                let detail = format!("{} (fix: {})", p.what, p.fix);
                ("venv", env.to_string(), false, detail)
            })
            .collect(),
    }
}

fn stock_core(env: &str, core: &InstalledDist) -> String {
    format!(
        "{CORE_DIST} {} here is the stock build: torch's libraries map {}/{CORE_LIB_DIR} through \
         their DT_RPATH, whatever /opt/rocm or LD_LIBRARY_PATH hold; make our wheel from this venv \
         and install it: `rocm-pin package --wheels --stock-venv {env} --staging <build staging> \
         --out wheels/ && rocm-pin install --venv {env} wheels/rocm_sdk_core-*+pin.*.whl` \
         (docs/wheels.md)",
        core.version, core.site_packages
    )
}

/// Every copy of the pair in the root, judged against `ours` (RECORD hashes).
fn shadow_check(
    root: &Root,
    sonames: &BTreeSet<String>,
    consumers: &[std::path::PathBuf],
    ld_library_path: Option<&str>,
    cache: &[CacheEntry],
    ours: &BTreeSet<String>,
) -> (Vec<WheelCheck>, ShadowReport) {
    let name_matches = |n: &str| crate::rocm::family_of(n).is_some();
    let scope = Scope {
        sonames,
        name_matches: &name_matches,
        consumers,
        ld_library_path,
        cache,
        max_entries: ImageLimits::default().entries,
    };
    let found = shadow::find(root, &scope);
    let mut report = ShadowReport {
        consumers: found.consumers.clone(),
        skipped: found.skipped.clone(),
        entries_walked: found.entries_walked,
        ..ShadowReport::default()
    };
    let mut checks = Vec::new();
    for copy in &found.copies {
        let patched = root
            .read_file(&copy.file, FileKind::PackagedFile)
            .is_ok_and(|data| ours.contains(&RecordEntry::of("", &data).hash));
        let mapped: Vec<&Mapping> = copy
            .mapped_by
            .iter()
            .filter(|m| m.consumer != DEFAULT_SEARCH)
            .collect();
        if !patched && !mapped.is_empty() {
            checks.push(("shadow", copy.path.clone(), false, failure(copy, &mapped)));
        } else if !patched {
            report.warnings.push(format!(
                "{}: {} is not the patched build ({})",
                copy.path,
                copy.soname,
                if copy.mapped_by.is_empty() {
                    "a stale copy no consumer found maps".to_string()
                } else {
                    format!("what {DEFAULT_SEARCH} opens")
                }
            ));
        }
        report.copies.push(ShadowCopy::of(copy, patched));
    }
    if let Some(why) = &found.incomplete {
        checks.push((
            "shadow",
            String::new(),
            false,
            format!("the search for copies of the runtime stopped short ({why}); copies beyond it are not judged"),
        ));
    }
    if checks.is_empty() {
        let patched = report.copies.iter().filter(|c| c.patched).count();
        checks.push((
            "shadow",
            String::new(),
            true,
            format!(
                "{} copies of the pinned libraries found ({patched} the patched build), every one \
                 a consumer maps is ours; {} consumers resolved as ld.so does, {} entries searched",
                report.copies.len(),
                report.consumers.len(),
                report.entries_walked
            ),
        ));
    }
    (checks, report)
}

fn failure(copy: &shadow::Copy, mapped: &[&Mapping]) -> String {
    let named: Vec<String> = mapped
        .iter()
        .take(3)
        .map(|m| format!("{} (via {})", m.consumer, m.via.describe()))
        .collect();
    let more = mapped.len().saturating_sub(named.len());
    // The venv the copy is installed in (`<venv>/lib/python3.X/site-packages/…`).
    let venv = copy
        .path
        .split_once("/lib/python")
        .map_or("<venv>", |(venv, _)| venv);
    format!(
        "{} here is not the patched build, and {}{} map{} it: patching /opt/rocm (or the devel \
         tree) by hand leaves this copy stock; replace the venv's {CORE_DIST} with ours: \
         `rocm-pin install --venv {venv} <our rocm_sdk_core-*+pin.*.whl>` (docs/wheels.md)",
        copy.soname,
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
        if mapped.len() == 1 { "s" } else { "" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `root/opt/venv` holding a stock rocm-sdk-core 10.0.0 (its dist-info only).
    fn stock_venv(root: &std::path::Path) {
        let venv = root.join("opt/venv");
        std::fs::create_dir_all(&venv).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        crate::ops::fakehost::stock_core_dist_info(&venv.join("lib/python3.12/site-packages"));
    }

    #[test]
    fn a_root_without_a_venv_core_is_left_to_the_nothing_installed_check() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("opt/venv/lib/python3.12/site-packages")).unwrap();
        std::fs::write(d.path().join("opt/venv/pyvenv.cfg"), "").unwrap();
        assert!(check(&Root::new(d.path()), &[], None, &[]).is_none());
    }

    #[test]
    fn a_stock_core_in_a_venv_fails_with_the_package_and_install_commands() {
        let d = tempfile::tempdir().unwrap();
        stock_venv(d.path());
        let (checks, report) = check(&Root::new(d.path()), &[], None, &[]).unwrap();
        let venv: Vec<&WheelCheck> = checks.iter().filter(|c| c.0 == "venv").collect();
        let [(_, subject, ok, detail)] = venv.as_slice() else {
            panic!("{checks:?}")
        };
        assert_eq!((subject.as_str(), *ok), ("/opt/venv", false));
        assert!(
            detail.contains("10.0.0 here is the stock build")
                && detail.contains("_rocm_sdk_core/lib")
                && detail.contains("rocm-pin package --wheels --stock-venv /opt/venv")
                && detail.contains("rocm-pin install --venv /opt/venv"),
            "{detail}"
        );
        assert!(report.copies.is_empty(), "{report:?}");
    }
}
