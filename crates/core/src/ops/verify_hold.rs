//! verify's release-hold check (issue 32): the hold `install` writes covers every package
//! that needs it now. A -dev package with an exact `=` on the stock runtime installed after
//! `install` (Debian's `libhsa-runtime-dev`), or the hold file removed, leaves a newer stock
//! release free to be half-installed around ours; `status` said so, verify did not fail.

use crate::host::layout::StateLayout;
use crate::host::root::Root;
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

/// `(subject, ok, detail)` of the check; None when nothing on this host needs holding.
pub(crate) fn check_release_hold(
    root: &Root,
    entries: &[StatusEntry],
    marker: &rocm::Marker,
) -> Option<(String, bool, String)> {
    let path = StateLayout::release_hold().display().to_string();
    let held = crate::host::hold::read(root);
    let missing = missing(root, entries, marker);
    let named = |list: &[(String, String)]| {
        list.iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if missing.is_empty() {
        return (!held.is_empty()).then(|| {
            (
                path,
                true,
                format!("holds {} at the installed release", named(&held)),
            )
        });
    }
    Some((
        path,
        false,
        format!(
            "does not hold {} (installed after `rocm-pin install` wrote the hold, or the file was removed): a newer stock release could be half-installed around ours; fix: `{}` (writes the hold again)",
            named(&missing),
            super::ourdebs::reinstall_command(root)
        ),
    ))
}
