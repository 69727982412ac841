//! `rocm-pin install` for any pinned family (issue 34): the .debs say which family they are
//! (`X-Rocm-Pin-Family` in their control, the runtime pair when absent) and ship that family's
//! provenance marker; the install's steps (exact-stock gate, stock .debs kept for an offline
//! rollback, hold, pin, marker, verify) are the pair's, and what differs per family lives here:
//! which marker is the family's, which library names the loader entry, where our .debs are
//! kept, and what the release hold must keep covering (every family installed, not only the
//! one being installed).

use std::path::PathBuf;

use anyhow::Context;

use super::ourdebs::DebFacts;
use crate::host::layout::StateLayout;
use crate::host::root::Root;
use crate::host::status::StatusEntry;
use crate::rocm::{self, families::RUNTIME, Marker, MarkerLibrary, PinnedFamily};

/// The family of `marker`: the one its first library belongs to (the pair when none does).
pub fn family_of_marker_record(marker: &Marker) -> &'static PinnedFamily {
    marker
        .libraries
        .iter()
        .filter_map(|l| l.path.rsplit('/').next())
        .find_map(|name| {
            rocm::families::PINNED_FAMILIES
                .iter()
                .copied()
                .find(|f| f.family_of(name).is_some())
        })
        .unwrap_or(&RUNTIME)
}

/// The library of the family's first part (the pair's HSA library, RCCL's `librccl`): its
/// directory is what the loader entry lists, its package owns the entry.
pub(crate) fn loader_library(marker: &Marker) -> Option<&MarkerLibrary> {
    let family = family_of_marker_record(marker);
    let first = family.first_half();
    marker.libraries.iter().find(|l| {
        l.path
            .rsplit('/')
            .next()
            .and_then(|n| family.family_of(n))
            .is_some_and(|lib| lib.half == first && lib.required)
    })
}

/// Where our .debs of `family` are kept: the pair's in [`StateLayout::ours_dir`] (what
/// `rocm-pin install` with no .deb reinstalls), another family's in a directory of its own in
/// there, so installing one family never drops the other's.
pub fn ours_dir(family: &PinnedFamily) -> PathBuf {
    if family.name == RUNTIME.name {
        StateLayout::ours_dir()
    } else {
        StateLayout::ours_dir().join(family.name)
    }
}

/// The .debs kept for `family` (sorted); empty when none.
pub(crate) fn kept(root: &Root, family: &PinnedFamily) -> Vec<PathBuf> {
    super::ourdebs::kept_in(root, &ours_dir(family))
}

/// The command that reinstalls `family`'s packages of ours: `rocm-pin install` alone for the
/// pair when its .debs are kept, the kept .debs named for another family, else the .debs to give.
pub fn reinstall_command(root: &Root, family: &PinnedFamily) -> String {
    if family.name == RUNTIME.name {
        return crate::ops::ourdebs::reinstall_command(root).to_string();
    }
    let kept = kept(root, family);
    if kept.is_empty() {
        return format!(
            "rocm-pin install <our {} .debs, as made by rocm-pin package --family {}>",
            family.name, family.name
        );
    }
    let dir = ours_dir(family);
    format!(
        "rocm-pin install {}",
        kept.iter()
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()))
            .map(|n| dir.join(n).display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Keep copies of `family`'s .debs just installed (another family than the pair: the pair's
/// go through `ourdebs::keep`), replacing what an earlier install of that family kept.
pub(crate) fn keep(
    root: &Root,
    family: &PinnedFamily,
    debs: &[PathBuf],
) -> anyhow::Result<Vec<PathBuf>> {
    super::ourdebs::keep_into(&root.host_path(ours_dir(family)), debs, kept(root, family))
}

/// The family of the .debs read (one family per install: `read_debs` refuses a mix).
pub(crate) fn family_of_facts(facts: &[DebFacts]) -> &'static PinnedFamily {
    facts
        .first()
        .and_then(|f| PinnedFamily::by_name(f.family))
        .unwrap_or(&RUNTIME)
}

/// What install does not do for a family other than the pair yet, refused before anything
/// changes: `--local-repo` (the local repository holds one set of .debs, the pair's).
pub(crate) fn refuse_unsupported(local_repo: bool, facts: &[DebFacts]) -> anyhow::Result<()> {
    let family = family_of_facts(facts);
    if local_repo && family.name != RUNTIME.name {
        return Err(crate::exit::usage(format!(
            "--local-repo keeps the runtime pair's .debs only; install the {} family without it (its .debs are kept in {} for a reinstall). Nothing changed.",
            family.name,
            ours_dir(family).display()
        )));
    }
    Ok(())
}

/// Install's last step for a family other than the pair: its .debs kept in their own
/// directory (the reinstall verify names), or, with `--no-rollback`, none kept. The action
/// said, if any.
pub(crate) fn keep_family(
    root: &Root,
    no_rollback: bool,
    family: &'static PinnedFamily,
    debs: &[PathBuf],
) -> anyhow::Result<Option<String>> {
    if no_rollback {
        forget(root, family)?;
        return Ok(None);
    }
    let kept = keep(root, family, debs)?;
    Ok(Some(format!(
        "kept {} of ours in {} (`{}` reinstalls them)",
        kept.len(),
        ours_dir(family).display(),
        reinstall_command(root, family)
    )))
}

/// Remove `family`'s kept .debs (its rollback). True when there were some.
pub(crate) fn forget(root: &Root, family: &PinnedFamily) -> anyhow::Result<bool> {
    let dir = root.host_path(ours_dir(family));
    if family.name == RUNTIME.name || !dir.exists() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    Ok(true)
}

/// The stock names the release hold is judged for: the ones this install replaces, and the
/// ones every other installed package of ours provides (another family's), so that installing
/// RCCL does not drop what the hold kept for the pair, nor the other way round.
pub(crate) fn hold_stock_names(this_install: &[String], after: &[StatusEntry]) -> Vec<String> {
    let mut names: Vec<String> = this_install.to_vec();
    for e in after
        .iter()
        .filter(|e| e.has_files() && e.extra.contains_key(rocm::COMMIT_FIELD))
    {
        for rel in e.provides.split(',') {
            let name = rel.split('(').next().unwrap_or("").trim();
            let name = name.split(':').next().unwrap_or("");
            if !name.is_empty() && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// After the pair's rollback: the other families of ours still installed.
pub(crate) fn others_left(root: &Root) -> anyhow::Result<Vec<&'static PinnedFamily>> {
    let entries = rocm::read_status(root)?;
    Ok(installed_families(&entries)
        .into_iter()
        .filter(|f| f.name != RUNTIME.name)
        .collect())
}

/// The release hold after a rollback: removed when no family of ours is left, else written
/// again for what those left still replace (`marker`: the rolled-back one's, for the flavour).
/// True when the file was removed.
pub(crate) fn hold_for(
    root: &Root,
    families_left: &[&'static PinnedFamily],
    marker: &Marker,
) -> anyhow::Result<bool> {
    if families_left.is_empty() {
        return crate::host::hold::remove(root);
    }
    let after = rocm::read_status_with_depends(root)?;
    let names = hold_stock_names(&[], &after);
    let held = crate::host::hold::write(
        root,
        &after,
        &names,
        marker.layout().spec().hold_exact_dependants,
    )?;
    Ok(held.is_empty())
}

/// The families with a package of ours installed (files on disk), the pair first.
pub fn installed_families(entries: &[StatusEntry]) -> Vec<&'static PinnedFamily> {
    rocm::families::PINNED_FAMILIES
        .iter()
        .copied()
        .filter(|f| {
            entries
                .iter()
                .any(|e| rocm::is_ours_of(e, f) && e.has_files())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_keeps_covering_every_installed_family() {
        let e = |package: &str, provides: &str, ours: bool| StatusEntry {
            package: package.into(),
            status: "install ok installed".into(),
            provides: provides.into(),
            extra: if ours {
                [(rocm::COMMIT_FIELD.to_string(), "c".to_string())]
                    .into_iter()
                    .collect()
            } else {
                Default::default()
            },
            ..StatusEntry::default()
        };
        let after = vec![
            e("hsa-rocr-pinned", "hsa-rocr (= 1)", true),
            e("hip-runtime-amd-pinned", "hip-runtime-amd (= 1)", true),
            e("rccl-pinned", "rccl (= 2)", true),
            e("other", "virtual-thing", false),
        ];
        let names = hold_stock_names(&["rccl".to_string()], &after);
        assert_eq!(names, ["rccl", "hsa-rocr", "hip-runtime-amd"]);
    }
}
