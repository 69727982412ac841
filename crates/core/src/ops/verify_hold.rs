//! verify's release-hold check (issue 32): the hold `install` writes covers every package
//! that needs it now. `install` holds what apt offers too (host/hold_offered.rs), so a -dev
//! package installed later is covered; one from a repository added after `install`, or the
//! hold file removed, leaves a newer stock release free to be half-installed around ours.
//!
//! "No hold file" is two states: ours installed by apt (no hold ever written) or the hold
//! removed. `install` leaves a trace either way: our kept .debs, or with `--no-rollback` its
//! record that the stock was not kept; with neither, it is apt's path.

use crate::host::layout::StateLayout;
use crate::host::root::{FileKind, Root};
use crate::host::status::StatusEntry;
use crate::rocm;

/// What the hold should hold on this host and does not: a -dev package with an exact `=` on
/// the stock installed after `install` wrote the hold, or the file removed. Judged on
/// `entries` (read with Depends) for the stock packages `marker` replaced; shared by `status`
/// and `verify`.
pub(crate) fn missing(
    root: &Root,
    entries: &[StatusEntry],
    marker: &rocm::Marker,
) -> Vec<(String, String)> {
    let held = crate::host::hold::read(root);
    let names: Vec<String> = marker
        .replaced
        .iter()
        .map(|r| r.stock_name.clone())
        .collect();
    crate::host::hold::held_packages(
        entries,
        &names,
        marker.layout().spec().hold_exact_dependants,
    )
    .into_iter()
    .filter(|h| !held.contains(h))
    .collect()
}

/// `(subject, ok, detail)` of the check; None when nothing on this host needs holding. It
/// fails for a missing sibling (`rocm-core`, what an exact-`=` dependant also needs with `=`:
/// without it bookworm's solver removes the meta to upgrade it alone, measured). A dependant
/// itself not held yet (Debian's -dev installed after install) is named, not failed: a newer
/// one needs a newer stock, which the pin keeps away, so apt keeps it back either way.
pub(crate) fn check_release_hold(
    root: &Root,
    entries: &[StatusEntry],
    marker: &rocm::Marker,
) -> Option<(String, bool, String)> {
    let path = StateLayout::release_hold().display().to_string();
    let held = crate::host::hold::read(root);
    let missing = missing(root, entries, marker);
    let names: Vec<String> = marker
        .replaced
        .iter()
        .map(|r| r.stock_name.clone())
        .collect();
    let siblings = crate::host::hold::held_packages(entries, &names, false);
    let (failing, noted): (Vec<_>, Vec<_>) =
        missing.into_iter().partition(|m| siblings.contains(m));
    let named = |list: &[(String, String)]| {
        list.iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let fix = super::ourdebs::reinstall_command(root);
    // Ours installed by apt (from a repository, `apt-get install ./….deb`) never had a hold:
    // only `rocm-pin install` writes one, and it keeps our .debs (or, with --no-rollback,
    // records that it kept no stock). No file and neither trace is that path, not a removed
    // hold: say how to add one, do not fail.
    let hold_absent = root
        .read_to_string(StateLayout::release_hold(), FileKind::Config)
        .is_err();
    let installed_by_rocm_pin =
        !super::ourdebs::kept(root).is_empty() || root.exists(StateLayout::stock_not_kept());
    if !failing.is_empty() && hold_absent && !installed_by_rocm_pin {
        return Some((
            path,
            true,
            format!(
                "no release hold: ours were installed by apt, not by `rocm-pin install` (which writes one for {}); `{fix}` adds it",
                named(&failing)
            ),
        ));
    }
    if !failing.is_empty() {
        return Some((
            path,
            false,
            format!(
                "does not hold {} (the file was removed, or an exact-`=` dependant needing it came after `rocm-pin install`): a newer stock release could be half-installed around ours; fix: `{fix}` (writes the hold again)",
                named(&failing)
            ),
        ));
    }
    if held.is_empty() && noted.is_empty() {
        return None;
    }
    let mut detail = if held.is_empty() {
        "holds nothing yet".to_string()
    } else {
        format!("holds {} at the installed release", named(&held))
    };
    if !noted.is_empty() {
        detail.push_str(&format!(
            "; not yet {} (installed after the hold was written; apt keeps a newer one back while the stock is pinned away): `{fix}` adds it",
            named(&noted)
        ));
    }
    Some((path, true, detail))
}

#[cfg(test)]
#[path = "verify_hold_tests.rs"]
mod tests;
