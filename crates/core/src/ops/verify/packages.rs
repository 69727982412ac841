//! Our packages against the dpkg database and the marker: each installed, Protected, at the
//! marker's version and commit; every package the marker names present and no stock package it
//! replaces beside them; and, when nothing of ours is installed, whether there is a ROCm at all.

use std::collections::BTreeMap;
use std::path::Path;

use super::marker::check_patches_field;
use super::model::Checks;
use crate::host::apt;
use crate::host::root::Root;
use crate::host::status::StatusEntry;
use crate::ops::ourdebs;
use crate::rocm::{self, Half};

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

/// Each of ours installed (ii), Protected, at the marker's version, its commit and patch
/// fields agreeing with the marker.
pub(super) fn check_our_packages(
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
pub(super) fn check_marker_packages(
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
pub(super) fn check_nothing_installed(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::layout::StateLayout;

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
}
